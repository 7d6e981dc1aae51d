package cli_test

import (
	"testing"

	"github.com/agentrt/agentrt/internal/cli"
)

// An input that would create its session needs an agent: without
// --agent and without a default agent, send refuses it at once (exit 2,
// nothing stored) rather than let the gateway refuse it later. An input
// for a session that exists, or with --agent, is stored.
func TestSendNeedsAnAgentForANewSession(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "models:\n  d: {provider: demo}\nagents:\n  a1: {model: d}\n  a2: {model: d}\ngateway:\n  sources:\n    desk: {session: s1}\n", nil)
	for _, args := range [][]string{{"--source", "chat", "hi"}, {"--source", "chat", "--session", "new", "hi"}} {
		r := e.must(cli.ExitUsage, append([]string{"send"}, args...)...)
		if r.out != "" || r.err != "agentrt: choose an agent with --agent (configured: a1, a2)\n" {
			t.Errorf("send %q: %v", args, r)
		}
	}
	if s := e.sources(); len(s) != 0 {
		t.Errorf("refused inputs were stored: %+v", s)
	}
	e.sent("--source", "chat", "--agent", "a2", "hi")
	e.must(cli.ExitOK, "run", "--agent", "a1", "--session", "s1", "what is 1+1")
	e.sent("--source", "x", "--session", "s1", "hi")
	e.sent("--source", "desk", "hi") // gateway.sources.desk.session is s1
	if s := e.sources(); len(s) != 3 {
		t.Errorf("pending sources %+v, want chat, x and desk", s)
	}
}
