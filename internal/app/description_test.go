package app

import (
	"context"
	"testing"

	"github.com/agentrt/agentrt/config"
)

// An agent's description is the agent's, and what an agent that has it
// among its tools sees of it; an agent without one is a tool with the
// generic description.
func TestAgentDescription(t *testing.T) {
	cfg, err := config.Parse("agentrt.yaml", []byte(`
models: {d: {provider: demo}}
agents:
  lead: {model: d, tools: [researcher, helper]}
  researcher: {model: d, description: "Finds and summarises sources on a topic."}
  helper: {model: d}
`), func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	a, err := Build(context.Background(), cfg, Options{StoreDSN: "memory:", Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	r, _ := a.Runner.Agent("researcher")
	if r == nil || r.Description != "Finds and summarises sources on a topic." {
		t.Fatalf("researcher's description: %+v", r)
	}
	lead, _ := a.Runner.Agent("lead")
	got := map[string]string{}
	for _, s := range lead.ToolSpecs() {
		got[s.Name] = s.Description
	}
	if got["researcher"] != "Finds and summarises sources on a topic." {
		t.Errorf("the lead sees researcher as %q: want its description", got["researcher"])
	}
	if got["helper"] != "Delegate a task to the agent helper: it works on it with its own tools and answers." {
		t.Errorf("the lead sees helper as %q: want the generic description", got["helper"])
	}
}
