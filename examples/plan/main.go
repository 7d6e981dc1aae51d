// Command plan shows plan-and-execute: an agent with the PlanExecute
// policy (strategy: plan_execute in agentrt.yaml) first lets its model
// write a plan of tool steps, runs them, and answers from what they
// observed; then a caller's own plan runs through agentrt.TaskAgent.
//
// The model is scripted, so the program needs no network.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/model/scripted"
	"github.com/agentrt/agentrt/session/memstore"
	"github.com/agentrt/agentrt/tool/builtin"
)

func main() {
	if err := run(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, "plan:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context) error {
	// The model's side: a plan (in a fence, with prose around it, as
	// models write them), then the summary of what the steps observed.
	m := scripted.New("planner-model",
		scripted.Reply{Text: "Plan:\n```json\n" + `{"goal":"the trip's total","steps":[` +
			`{"kind":"tool","tool":"calculator","arguments":{"expression":"3*89"}},` +
			`{"kind":"tool","tool":"calculator","arguments":{"expression":"2*45"}}]}` + "\n```"},
		scripted.Reply{Text: "Three nights cost 267 and two dinners 90: 357 in all."},
		scripted.Reply{Text: "Checked: 357."})
	a, err := agentrt.NewAgent("planner").
		Instructions("You plan, then compute.").
		Model(m).
		Tools(builtin.Calculator()).
		Policy(agentrt.PlanExecute{MaxSteps: 5}).
		Build()
	if err != nil {
		return err
	}
	r, err := agentrt.NewRunner(agentrt.Config{Store: memstore.New(), Agents: []*agentrt.Agent{a}})
	if err != nil {
		return err
	}
	defer r.Close(ctx)
	ta := agentrt.TaskAgent{Runner: r, Agent: "planner"}

	fmt.Println("== the model plans")
	res, out, err := ta.Run(ctx, "trip", "Three nights at 89 and two dinners at 45: what is the total?")
	if err != nil {
		return err
	}
	show(out)
	fmt.Println("answer:", res.Text)

	fmt.Println("== the caller's plan")
	plan := &agentrt.Plan{Goal: "check the total", Steps: []agentrt.PlanStep{
		{Kind: agentrt.StepTool, Tool: "calculator", Arguments: json.RawMessage(`{"expression":"267+90"}`)},
	}}
	res, out, err = ta.ExecutePlan(ctx, "check", plan)
	if err != nil {
		return err
	}
	show(out)
	fmt.Println("answer:", res.Text)

	fmt.Println("== a caller's plan that cannot run")
	_, _, err = ta.ExecutePlan(ctx, "bad", &agentrt.Plan{Steps: []agentrt.PlanStep{{Kind: agentrt.StepTool, Tool: "weather"}}})
	fmt.Println("refused:", err)
	return nil
}

func show(out *agentrt.PlanOutcome) {
	for i, st := range out.Plan.Steps {
		f := out.Steps[i]
		fmt.Printf("step %d: %s %s -> %s %s\n", i+1, st.Tool, st.Arguments, f.Status, f.Observation.Result)
	}
}
