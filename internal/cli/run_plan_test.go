package cli_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/internal/cli"
)

// agentrt run --plan takes steps written {"type": …, "name": …} as well
// as {"kind": …, "tool": …}; a step whose two spellings disagree, or a
// key no step has, is a usage error naming the step. A reply step ends
// the plan: the step after it is reported skipped.
func TestRunPlanTypeName(t *testing.T) {
	t.Parallel()
	e := newEnv(t, `
models:
  s: {provider: demo}
agents:
  planner: {model: s, strategy: plan_execute, tools: [calculator]}
`, map[string]string{
		"plan.json": `[{"type":"tool","name":"calculator","arguments":{"expression":"6*7"}},` +
			`{"type":"reply","text":"6*7 is 42."},{"type":"tool","name":"calculator","arguments":{"expression":"1/0"}}]`,
		"disagree.json": `{"steps":[{"kind":"tool","type":"reply","name":"calculator"}]}`,
		"typo.json":     `{"steps":[{"type":"tool","name":"calculator","args":{"expression":"1"}}]}`,
	})
	r := e.must(cli.ExitOK, "run", "--agent", "planner", "--plan", filepath.Join(e.dir, "plan.json"), "go")
	for _, want := range []string{"[plan] 3 step(s) (caller)", `[plan] step 1 completed: {"expression":"6*7","result":42}`,
		"[plan] step 3 skipped", "6*7 is 42."} {
		if !strings.Contains(r.out, want) {
			t.Errorf("stdout lacks %q:\n%s", want, r.out)
		}
	}
	if strings.Contains(r.out, "1/0") {
		t.Errorf("the step after the reply ran:\n%s", r.out)
	}
	for file, want := range map[string]string{
		"disagree.json": `step 1: "kind" is "tool" and "type" is "reply": give one`,
		"typo.json":     `step 1: json: unknown field "args"`,
	} {
		if r := e.run("run", "--agent", "planner", "--plan", filepath.Join(e.dir, file), "go"); r.code != cli.ExitUsage || !strings.Contains(r.err, want) {
			t.Errorf("%s: exit %d, stderr %q, want %q", file, r.code, r.err, want)
		}
	}
}
