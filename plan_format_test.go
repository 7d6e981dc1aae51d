package agentrt_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/model/scripted"
	"github.com/agentrt/agentrt/session"
)

// Steps may be written with kind and tool, or with type and name (as
// planners of the other common format write them), or a mix; both
// spellings with one value are fine, with two values an error.
func TestJSONPlanParserStepSpellings(t *testing.T) {
	calc := json.RawMessage(`{"expression":"2+2"}`)
	for _, tc := range []struct {
		name, reply string
		want        []agentrt.PlanStep
		wantErr     string
	}{
		{name: "kind and tool",
			reply: `{"steps":[{"kind":"tool","tool":"calculator","arguments":{"expression":"2+2"}},{"kind":"reply","text":"4"}]}`,
			want:  []agentrt.PlanStep{{Kind: agentrt.StepTool, Tool: "calculator", Arguments: calc}, {Kind: agentrt.StepReply, Text: "4"}}},
		{name: "type and name, a bare array",
			reply: `[{"type":"tool","name":"calculator","arguments":{"expression":"2+2"}},{"type":"reply","text":"4"}]`,
			want:  []agentrt.PlanStep{{Kind: agentrt.StepTool, Tool: "calculator", Arguments: calc}, {Kind: agentrt.StepReply, Text: "4"}}},
		{name: "mixed, both spellings agreeing",
			reply: `{"steps":[{"type":"tool","tool":"calculator","name":"calculator","kind":"tool","arguments":{"expression":"2+2"}},{"type":"task","name":"look","task":"look it up"}]}`,
			want:  []agentrt.PlanStep{{Kind: agentrt.StepTool, Tool: "calculator", Arguments: calc}, {Kind: agentrt.StepTask, Task: "look it up"}}},
		{name: "null arguments are none",
			reply: `{"steps":[{"type":"tool","name":"clock","arguments":null}]}`,
			want:  []agentrt.PlanStep{{Kind: agentrt.StepTool, Tool: "clock"}}},
		{name: "kinds disagree",
			reply:   `{"steps":[{"kind":"tool","tool":"calculator"},{"kind":"tool","type":"reply","text":"4"}]}`,
			wantErr: `step 2: "kind" is "tool" and "type" is "reply": give one`},
		{name: "tools disagree",
			reply:   `[{"type":"tool","tool":"calculator","name":"clock"}]`,
			wantErr: `step 1: "tool" is "calculator" and "name" is "clock": give one`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := agentrt.JSONPlanParser{}.Parse("Here it is:\n```json\n" + tc.reply + "\n```")
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, p.Steps); diff != "" {
				t.Errorf("steps (-want +got):\n%s", diff)
			}
		})
	}
}

// A model that writes its plan as {"type": "tool", "name": …} has it run
// like any other; the plan is recorded in agentrt's own spelling.
func TestPlanExecuteTypeNamePlan(t *testing.T) {
	plan := `{"steps":[{"type":"tool","name":"calculator","arguments":{"expression":"2+2"}}]}`
	m := scripted.New("m", scripted.Reply{Text: plan}, scripted.Reply{Text: "4"})
	e := newEnv(t, nil, agentrt.Config{}, planAgent(t, m, agentrt.PlanExecute{}))
	id := e.session(t, "calc")
	res := e.run(t, id, "2+2?")
	if res.Status != session.StatusDone || res.Text != "4" {
		t.Fatalf("run: %s %q %+v", res.Status, res.Text, res.Err)
	}
	log := storedLog(t, e.store, id)
	if got := stepsOf(log); len(got) != 1 || got[0] != `0 completed {"expression":"2+2","result":4}` {
		t.Errorf("steps %q", got)
	}
	pc := eventsOf[session.PlanCreated](log)
	if len(pc) != 1 || !strings.Contains(string(pc[0].Plan), `{"kind":"tool","tool":"calculator"`) {
		t.Errorf("plan_created %+v", pc)
	}
}

// DecodePlan reads a caller's plan strictly: either spelling, a key no
// step has is an error naming the step, and so is anything after the
// plan.
func TestDecodePlan(t *testing.T) {
	p, err := agentrt.DecodePlan([]byte(`{"goal":"g","steps":[{"type":"tool","name":"calculator","arguments":{"expression":"1+1"}},{"kind":"reply","text":"2"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	want := &agentrt.Plan{Goal: "g", Steps: []agentrt.PlanStep{
		{Kind: agentrt.StepTool, Tool: "calculator", Arguments: json.RawMessage(`{"expression":"1+1"}`)},
		{Kind: agentrt.StepReply, Text: "2"}}}
	if diff := cmp.Diff(want, p); diff != "" {
		t.Errorf("plan (-want +got):\n%s", diff)
	}
	if p, err := agentrt.DecodePlan([]byte(` [{"type":"reply","text":"hi"}] `)); err != nil || len(p.Steps) != 1 || p.Steps[0].Text != "hi" {
		t.Errorf("a bare array: %+v %v", p, err)
	}
	for _, bad := range []struct{ plan, want string }{
		{`{"goal":"x","stepz":[]}`, `json: unknown field "stepz"`},
		{`{"steps":[{"kind":"reply","text":"a"},{"type":"tool","name":"calculator","argumnts":{}}]}`, `step 2: json: unknown field "argumnts"`},
		{`{"steps":[{"kind":"task","type":"reply","text":"a"}]}`, `step 1: "kind" is "task" and "type" is "reply": give one`},
		{`{"steps":[{"kind":"reply","text":"a"}]} {"steps":[]}`, "more JSON after the plan"},
		{`{"steps":[`, "unexpected EOF"},
	} {
		if _, err := agentrt.DecodePlan([]byte(bad.plan)); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%s: %v, want %q", bad.plan, err, bad.want)
		}
	}
}

// A caller's plan in the type/name spelling, read by json.Unmarshal as
// any Go program would, runs like one in agentrt's.
func TestTaskAgentExecuteTypeNamePlan(t *testing.T) {
	var plan agentrt.Plan
	if err := json.Unmarshal([]byte(`{"steps":[{"type":"tool","name":"calculator","arguments":{"expression":"3*3"}},{"type":"reply","text":"9"}]}`), &plan); err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, nil, agentrt.Config{}, planAgent(t, scripted.New("m"), agentrt.PlanExecute{}))
	res, out, err := agentrt.TaskAgent{Runner: e.r, Agent: "calc"}.ExecutePlan(context.Background(), "s1", &plan)
	if err != nil || res.Status != session.StatusDone || res.Text != "9" {
		t.Fatalf("run: %v %+v", err, res)
	}
	if len(out.Steps) != 2 || out.Steps[0].Status != agentrt.StepCompleted || !strings.Contains(string(out.Steps[0].Observation.Result), `"result":9`) {
		t.Errorf("outcome %+v", out.Steps)
	}
	var missing agentrt.Plan
	if err := json.Unmarshal([]byte(`{"steps":[{"name":"calculator"}]}`), &missing); err != nil {
		t.Fatal(err)
	}
	if _, _, err := (agentrt.TaskAgent{Runner: e.r, Agent: "calc"}).ExecutePlan(context.Background(), "s2", &missing); err == nil ||
		!strings.Contains(err.Error(), `step 1 has no kind (want "kind" or "type": tool, task or reply)`) {
		t.Errorf("a step without a kind: %v", err)
	}
}
