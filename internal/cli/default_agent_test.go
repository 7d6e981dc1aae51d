package cli_test

import (
	"strings"
	"testing"

	"github.com/agentrt/agentrt/internal/cli"
)

// default_agent names the agent agentrt run uses without --agent; with
// several agents and none of assistant or default_agent, run asks for one.
func TestDefaultAgentFromConfig(t *testing.T) {
	e := newEnv(t, `
default_agent: desk
models:
  d: {provider: demo}
agents:
  desk: {model: d, tools: [calculator]}
  other: {model: d, tools: [calculator]}
`, nil)
	r := e.must(cli.ExitOK, "run", "--json", "--session", "s1", "what is 2+3")
	evs := parseEvents(t, r.out)
	if len(evs) == 0 || evs[0].Agent != "desk" {
		t.Fatalf("the run's agent: %v", evs)
	}
	n := newEnv(t, `
models:
  d: {provider: demo}
agents:
  desk: {model: d}
  other: {model: d}
`, nil)
	r = n.must(cli.ExitUsage, "run", "what is 2+3")
	if !strings.Contains(r.err, "desk, other") {
		t.Fatalf("without a default agent: %s", r.err)
	}
}
