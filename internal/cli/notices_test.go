package cli_test

import (
	"strings"
	"testing"

	"github.com/agentrt/agentrt/internal/cli"
)

// The automatic choice's notice ("no model found; using the offline demo
// model") is said by a run whose agent uses auto, or delegates to one
// that does, and by no other run; each notice once.
func TestNoticeOnlyForTheAgentThatRuns(t *testing.T) {
	t.Parallel()
	e := newEnv(t, `
models:
  d: {provider: scripted, script: desk.yaml}
  b: {provider: scripted, script: boss.yaml}
  auto: {provider: auto}
agents:
  desk: {model: d, tools: [calculator]}
  boss: {model: b, tools: [researcher]}
  researcher: {model: auto, tools: [clock]}
  helper: {model: auto}
`, map[string]string{
		"desk.yaml": "replies:\n  - text: done\n",
		"boss.yaml": "replies:\n  - tool_calls: [{name: researcher, arguments: {task: what day is it}}]\n  - text: asked\n",
	})
	e.opts.Getenv = func(string) string { return "" } // no provider's key
	e.opts.OllamaURL = "http://127.0.0.1:1"           // and no Ollama
	const notice = "agentrt: no model found; using the offline demo model"
	for _, tc := range []struct {
		agent string
		said  bool
	}{
		{"desk", false},      // its own model only
		{"researcher", true}, // auto
		{"boss", true},       // delegates to researcher
	} {
		r := e.must(cli.ExitOK, "run", "--agent", tc.agent, "hi")
		if n := strings.Count(r.err, notice); n != map[bool]int{false: 0, true: 1}[tc.said] {
			t.Errorf("run --agent %s says the notice %d times:\n%s", tc.agent, n, r.err)
		}
	}
}
