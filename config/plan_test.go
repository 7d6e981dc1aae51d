package config

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// plan.summarizer is model (the agent's), template (no model call) or a
// name from models; anything else is an error at its place in the file.
func TestPlanSummarizer(t *testing.T) {
	t.Parallel()
	base := "models:\n  m: {provider: demo}\n  small: {provider: demo}\nagents:\n"
	for _, tc := range []struct{ value, want string }{
		{"model", "model"},
		{"template", "template"},
		{"small", "small"},
		{"demo", "demo"},
	} {
		c, err := Parse("agentrt.yaml", []byte(base+"  b: {model: m, strategy: plan_execute, plan: {summarizer: "+tc.value+"}}\n"), envOf(nil))
		if err != nil {
			t.Fatalf("summarizer %s: %v", tc.value, err)
		}
		if diff := cmp.Diff(PlanConfig{Summarizer: tc.want}, c.Agents["b"].Plan); diff != "" {
			t.Errorf("summarizer %s (-want +got):\n%s", tc.value, diff)
		}
	}
	for _, tc := range []struct{ src, want string }{
		{base + "  b: {model: m, plan: {summarizer: templat}}\n",
			`agentrt.yaml:5:36: agents.b.plan.summarizer: unknown summarizer "templat"; did you mean template? ` +
				`(want model: the agent's model, template: the steps' observations listed with no model call, or a name from models: m, small)`},
		{base + "  b: {model: m, plan: {summarizer: big}}\n",
			`agentrt.yaml:5:36: agents.b.plan.summarizer: unknown summarizer "big" ` +
				`(want model: the agent's model, template: the steps' observations listed with no model call, or a name from models: m, small)`},
		{"agents:\n  b: {model: auto, plan: {summarizer: big}}\n",
			`agentrt.yaml:2:39: agents.b.plan.summarizer: unknown summarizer "big" ` +
				`(want model: the agent's model, template: the steps' observations listed with no model call, or a name from models: auto)`},
	} {
		if got := parseErr(t, tc.src, nil); got != tc.want {
			t.Errorf("error:\n got: %s\nwant: %s", got, tc.want)
		}
	}
}
