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

// A reply step ends a model's plan: the steps after it are not run, each
// is reported skipped, and the reply is the answer, with no summary call.
func TestPlanExecuteReplyEndsPlan(t *testing.T) {
	plan := `{"steps":[{"kind":"tool","tool":"calculator","arguments":{"expression":"2+2"}},` +
		`{"kind":"reply","text":"It is 4."},` +
		`{"kind":"tool","tool":"calculator","arguments":{"expression":"9*9"}},` +
		`{"kind":"task","task":"check it"}]}`
	m := scripted.New("m", scripted.Reply{Text: plan}).Record()
	var hooked []string
	a := planAgent(t, m, agentrt.PlanExecute{})
	a.Hooks.OnPlanStepComplete(0, func(_ context.Context, _ agentrt.HookInfo, s *session.PlanStepFinished) {
		hooked = append(hooked, s.Status)
	})
	e := newEnv(t, nil, agentrt.Config{}, a)
	id := e.session(t, "calc")
	res := e.run(t, id, "2+2?")
	if res.Status != session.StatusDone || res.Text != "It is 4." {
		t.Fatalf("run: %s %q %+v", res.Status, res.Text, res.Err)
	}
	log := storedLog(t, e.store, id)
	want := []string{`0 completed {"expression":"2+2","result":4}`, `1 completed "It is 4."`,
		"2 skipped not run: step 2 is the answer", "3 skipped not run: step 2 is the answer"}
	if diff := cmp.Diff(want, stepsOf(log)); diff != "" {
		t.Errorf("steps (-want +got):\n%s", diff)
	}
	if n := len(toolResults(log)); n != 1 {
		t.Errorf("%d tool calls, want 1: a step after the reply ran", n)
	}
	if n := len(eventsOf[session.PlanStepStarted](log)); n != 2 {
		t.Errorf("%d steps started, want 2", n)
	}
	if n := len(m.Requests()); n != 1 {
		t.Errorf("%d model calls, want only the plan's", n)
	}
	if diff := cmp.Diff([]string{"completed", "completed", "skipped", "skipped"}, hooked); diff != "" {
		t.Errorf("OnPlanStepComplete (-want +got):\n%s", diff)
	}
}

// A caller's plan ends at its reply step too; the outcome reports the
// steps after it skipped.
func TestTaskAgentReplyEndsPlan(t *testing.T) {
	m := scripted.New("m").Record()
	e := newEnv(t, nil, agentrt.Config{}, planAgent(t, m, agentrt.PlanExecute{}))
	plan := &agentrt.Plan{Steps: []agentrt.PlanStep{
		{Kind: agentrt.StepReply, Text: "Nothing to compute."},
		{Kind: agentrt.StepTool, Tool: "calculator", Arguments: json.RawMessage(`{"expression":"1+1"}`)}}}
	res, out, err := agentrt.TaskAgent{Runner: e.r, Agent: "calc"}.ExecutePlan(context.Background(), "s1", plan)
	if err != nil || res.Status != session.StatusDone || res.Text != "Nothing to compute." {
		t.Fatalf("run: %v %+v", err, res)
	}
	if len(out.Steps) != 2 || out.Steps[0].Status != agentrt.StepCompleted || out.Steps[1] == nil || out.Steps[1].Status != agentrt.StepSkipped {
		t.Fatalf("outcome %+v", out.Steps)
	}
	if n := len(toolResults(res.Events)); n != 0 || len(m.Requests()) != 0 {
		t.Errorf("%d tool calls and %d model calls, want none", n, len(m.Requests()))
	}
}

// The summary call is told to answer in the profile's language: the
// agent's, or the run's override.
func TestPlanSummaryLanguage(t *testing.T) {
	one := scripted.Reply{Text: `{"steps":[{"kind":"tool","tool":"calculator","arguments":{"expression":"2+2"}}]}`}
	for _, tc := range []struct {
		name      string
		profile   agentrt.Profile
		overrides *agentrt.Overrides
		want      string // "" : no language line
	}{
		{name: "none", profile: agentrt.Profile{Name: "Ada"}},
		{name: "the agent's", profile: agentrt.Profile{Language: "zh"}, want: " Answer in Chinese."},
		{name: "the run's", profile: agentrt.Profile{Language: "zh"}, overrides: &agentrt.Overrides{Profile: agentrt.Profile{Language: "de"}}, want: " Answer in German."},
		{name: "a name it does not know", profile: agentrt.Profile{Language: "Esperanto"}, want: " Answer in Esperanto."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := scripted.New("m", one, scripted.Reply{Text: "4"}).Record()
			a, err := agentrt.NewAgent("calc").Profile(tc.profile).Model(m).Registry(registry(t)).Policy(agentrt.PlanExecute{}).Build()
			if err != nil {
				t.Fatal(err)
			}
			e := newEnv(t, nil, agentrt.Config{}, a)
			id := e.session(t, "calc")
			res, err := agentrt.Collect(e.r.Run(context.Background(), id, agentrt.Input{Text: "2+2?", Overrides: tc.overrides}))
			if err != nil || res.Text != "4" {
				t.Fatalf("run: %v %+v", err, res)
			}
			sys := m.Requests()[1].System
			if !strings.HasPrefix(sys, "You answer the user's question from the results") {
				t.Fatalf("the second call is not the summary: %q", sys)
			}
			if got, _ := strings.CutPrefix(sys[strings.Index(sys, "do not mention the steps."):], "do not mention the steps."); got != tc.want {
				t.Errorf("summary prompt ends %q, want %q", got, tc.want)
			}
		})
	}
}

// With SummaryTemplate the answer lists each step's observation, and no
// model call writes it.
func TestPlanSummaryTemplate(t *testing.T) {
	plan := `{"steps":[{"kind":"tool","tool":"calculator","arguments":{"expression":"2+2"}},` +
		`{"kind":"tool","tool":"calculator","arguments":{"expression":"1/0"}},` +
		`{"kind":"task","task":"say hello"}]}`
	m := scripted.New("m", scripted.Reply{Text: plan}, scripted.Reply{Text: "hello"}).Record()
	e := newEnv(t, nil, agentrt.Config{}, planAgent(t, m, agentrt.PlanExecute{SummaryTemplate: true}))
	id := e.session(t, "calc")
	res := e.run(t, id, "sums?")
	if res.Status != session.StatusDone {
		t.Fatalf("run: %s %+v", res.Status, res.Err)
	}
	lines := strings.Split(res.Text, "\n")
	if len(lines) != 3 || lines[0] != `#1 tool calculator succeeded: {"expression":"2+2","result":4}` ||
		!strings.HasPrefix(lines[1], "#2 tool calculator failed: ") || lines[2] != `#3 task "say hello" succeeded: hello` {
		t.Errorf("answer:\n%s", res.Text)
	}
	if n := len(m.Requests()); n != 2 {
		t.Errorf("%d model calls, want 2 (the plan and the task step's), no summary", n)
	}
}
