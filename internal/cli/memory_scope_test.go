package cli_test

import (
	"strings"
	"testing"

	"github.com/agentrt/agentrt/internal/cli"
)

// What is remembered is for an agent that exists, and a session of that
// agent; an item is deleted from the memory it is named in.
func TestMemoryScopeChecked(t *testing.T) {
	t.Parallel()
	e := newEnv(t, demoConfig+"agents:\n  assistant: {model: demo, memory: {enabled: true}}\n  other: {model: demo}\n", nil)
	e.must(cli.ExitOK, "run", "--agent", "other", "--session", "o1", "hello")
	id := strings.TrimSpace(e.must(cli.ExitOK, "memory", "add", "--agent", "assistant", "deploys happen on Tuesdays").out)
	for _, bad := range []struct {
		args []string
		want string
	}{
		{[]string{"memory", "add", "--agent", "asistant", "x"}, `unknown agent "asistant" (configured: assistant, other)`},
		{[]string{"memory", "add", "--agent", "assistant", "--session", "nope", "x"}, `session "nope" not found`},
		{[]string{"memory", "add", "--agent", "assistant", "--session", "o1", "x"}, `session "o1" belongs to agent "other", not "assistant"`},
		{[]string{"memory", "delete", id}, "name the agent with --agent"},
		{[]string{"memory", "delete", "--agent", "other", id}, "agent other's memory has no item " + id + " (agentrt memory list --agent other lists them)"},
		{[]string{"memory", "delete", "--agent", "assistant", "--session", "o1", id}, "the memory of agent assistant in session o1 has no item " + id},
	} {
		if r := e.run(bad.args...); r.code != cli.ExitUsage || !strings.Contains(r.err, bad.want) {
			t.Errorf("%v: %v\nwant exit 2 and %q", bad.args, r, bad.want)
		}
	}
	if r := e.must(cli.ExitOK, "memory", "list", "--agent", "assistant"); !strings.Contains(r.out, id) {
		t.Fatalf("the item is gone after refused deletions:\n%s", r.out)
	}
	e.must(cli.ExitOK, "memory", "delete", "--agent", "assistant", id)
	if r := e.must(cli.ExitOK, "memory", "list", "--agent", "assistant"); strings.Contains(r.out, id) {
		t.Errorf("deleted, still listed:\n%s", r.out)
	}
}
