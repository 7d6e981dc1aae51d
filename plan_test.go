package agentrt_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/model/scripted"
	"github.com/agentrt/agentrt/session"
	"github.com/agentrt/agentrt/session/memstore"
	"github.com/agentrt/agentrt/session/storetest"
)

func planAgent(t *testing.T, m model.Model, p agentrt.PlanExecute) *agentrt.Agent {
	a := calcAgent(m, registry(t))
	a.Policy = p
	return a
}

const twoSums = "Here is my plan:\n```json\n" + `{"goal":"sums","steps":[` +
	`{"kind":"tool","tool":"calculator","arguments":{"expression":"2+2"}},` +
	`{"kind":"tool","tool":"calculator","arguments":{"expression":"3*3"}}]}` + "\n```\nI will run it now."

func stepsOf(log []*session.Event) []string {
	var out []string
	for _, e := range log {
		if d, ok := e.Data.(*session.PlanStepFinished); ok {
			o := d.Observation
			out = append(out, fmt.Sprintf("%d %s %s%s", d.Index, d.Status, o.Result, o.Error))
		}
	}
	return out
}

// The model plans (a fenced JSON plan with prose around it), the steps
// run as tool calls, and the answer is a summary of the observations.
func TestPlanExecuteModelPlans(t *testing.T) {
	m := scripted.New("m", scripted.Reply{Text: twoSums}, scripted.Reply{Text: "2+2 is 4 and 3*3 is 9."}).Record()
	a := planAgent(t, m, agentrt.PlanExecute{})
	var hooked []int
	a.Hooks.OnPlanStepComplete(0, func(_ context.Context, _ agentrt.HookInfo, s *session.PlanStepFinished) {
		hooked = append(hooked, s.Index)
	})
	e := newEnv(t, nil, agentrt.Config{}, a)
	id := e.session(t, "calc")
	res := e.run(t, id, "what are 2+2 and 3*3?")
	if res.Status != session.StatusDone || res.Text != "2+2 is 4 and 3*3 is 9." {
		t.Fatalf("run: %s %q", res.Status, res.Text)
	}
	log := storedLog(t, e.store, id)
	if n := len(eventsOf[session.PlanCreated](log)); n != 1 {
		t.Errorf("%d plan_created", n)
	}
	want := []string{`0 completed {"expression":"2+2","result":4}`, `1 completed {"expression":"3*3","result":9}`}
	if got := stepsOf(log); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("steps %q, want %q", got, want)
	}
	if fmt.Sprint(hooked) != "[0 1]" {
		t.Errorf("OnPlanStepComplete saw %v", hooked)
	}
	// The planner was told the tools and the question.
	if p := m.Requests()[0].Messages[0].Text(); !strings.Contains(p, "- calculator: ") || !strings.Contains(p, "Question: what are 2+2 and 3*3?") {
		t.Errorf("planner prompt:\n%s", p)
	}
}

// A reply step is the answer (no summary); a tool step whose arguments
// the schema refuses fails without a call; max_steps caps the plan.
func TestPlanExecuteReplyStepAndBadArgs(t *testing.T) {
	plan := `{"steps":[{"kind":"tool","tool":"calculator","arguments":{"expr":"1"}},` +
		`{"kind":"tool","tool":"calculator","arguments":{"expression":"1+1"}},` +
		`{"kind":"reply","text":"It is 2."},{"kind":"tool","tool":"calculator","arguments":{"expression":"9"}}]}`
	e := newEnv(t, nil, agentrt.Config{}, planAgent(t, scripted.New("m", scripted.Reply{Text: plan}), agentrt.PlanExecute{MaxSteps: 3}))
	id := e.session(t, "calc")
	res := e.run(t, id, "1+1?")
	if res.Status != session.StatusDone || res.Text != "It is 2." {
		t.Fatalf("run: %s %q", res.Status, res.Text)
	}
	got := stepsOf(storedLog(t, e.store, id))
	if len(got) != 3 || !strings.HasPrefix(got[0], "0 failed not called: ") || !strings.HasPrefix(got[1], "1 completed") || got[2] != `2 completed "It is 2."` {
		t.Fatalf("steps %q", got)
	}
	if n := len(toolResults(res.Events)); n != 1 {
		t.Errorf("%d tool calls, want 1 (the bad step is not called, the fourth is past max_steps)", n)
	}
}

// A plan that does not parse is reported to the model once; a second one
// fails the run clearly.
func TestPlanExecuteBadPlans(t *testing.T) {
	t.Run("corrected", func(t *testing.T) {
		m := scripted.New("m", scripted.Reply{Text: "I would add them."}, scripted.Reply{Text: twoSums}, scripted.Reply{Text: "4 and 9"}).Record()
		e := newEnv(t, nil, agentrt.Config{}, planAgent(t, m, agentrt.PlanExecute{}))
		id := e.session(t, "calc")
		if res := e.run(t, id, "sums?"); res.Status != session.StatusDone || res.Text != "4 and 9" {
			t.Fatalf("run: %s %q", res.Status, res.Text)
		}
		if p := m.Requests()[1].Messages[0].Text(); !strings.Contains(p, "Your previous plan was refused: the reply holds no JSON plan.") {
			t.Errorf("second planner prompt:\n%s", p)
		}
	})
	t.Run("twice", func(t *testing.T) {
		bad := scripted.Reply{Text: `{"steps":[{"kind":"tool","tool":"rm","arguments":{}}]}`}
		e := newEnv(t, nil, agentrt.Config{}, planAgent(t, scripted.New("m", bad, bad), agentrt.PlanExecute{}))
		id := e.session(t, "calc")
		res, _ := agentrt.Collect(e.r.Run(context.Background(), id, agentrt.Input{Text: "?"}))
		if res.Status != session.StatusFailed || res.Err == nil || res.Err.Code != "bad_plan" ||
			!strings.Contains(res.Err.Message, `the model wrote no usable plan in 2 attempts; the last: step 1: unknown tool "rm"`) {
			t.Fatalf("run: %s %+v", res.Status, res.Err)
		}
	})
}

// When the summary cannot be written, the template lists the observations.
func TestPlanExecuteTemplate(t *testing.T) {
	m := scripted.New("m", scripted.Reply{Text: twoSums}, scripted.Reply{Error: "down", ErrorCode: model.CodeAuth})
	e := newEnv(t, nil, agentrt.Config{}, planAgent(t, m, agentrt.PlanExecute{}))
	id := e.session(t, "calc")
	res := e.run(t, id, "sums?")
	want := "#1 tool calculator succeeded: {\"expression\":\"2+2\",\"result\":4}\n#2 tool calculator succeeded: {\"expression\":\"3*3\",\"result\":9}"
	if res.Status != session.StatusDone || res.Text != want {
		t.Fatalf("run: %s %q", res.Status, res.Text)
	}
}

// The caller's plan, checked before anything runs; approvals work inside
// a plan; TaskAgent returns the plan with each step's outcome.
func TestTaskAgentExecutePlan(t *testing.T) {
	a := planAgent(t, scripted.New("m", scripted.Reply{Text: "4, then 9"}), agentrt.PlanExecute{})
	a.Approval = agentrt.ApprovalPolicy{Ask: []string{"calculator"}}
	e := newEnv(t, nil, agentrt.Config{}, a)
	ta := agentrt.TaskAgent{Runner: e.r, Agent: "calc"}
	ctx := context.Background()
	for _, bad := range []struct {
		plan *agentrt.Plan
		want string
	}{
		{&agentrt.Plan{}, "the plan has no steps"},
		{&agentrt.Plan{Steps: []agentrt.PlanStep{{Kind: "tool", Tool: "nope"}}}, `step 1: unknown tool "nope" (the agent has calculator)`},
		{&agentrt.Plan{Steps: []agentrt.PlanStep{{Kind: "tool", Tool: "calculator", Arguments: json.RawMessage(`{"expression":7}`)}}}, "step 1: "},
		{&agentrt.Plan{Steps: []agentrt.PlanStep{{Kind: "dance"}}}, `step 1: unknown kind "dance" (want tool, task or reply)`},
	} {
		if _, _, err := ta.ExecutePlan(ctx, "p0", bad.plan); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%+v: %v, want %q", bad.plan, err, bad.want)
		}
	}
	plan := &agentrt.Plan{Goal: "sums", Steps: []agentrt.PlanStep{
		{Kind: "tool", Tool: "calculator", Arguments: json.RawMessage(`{"expression":"2+2"}`)},
		{Kind: "tool", Tool: "calculator", Arguments: json.RawMessage(`{"expression":"3*3"}`)}}}
	if _, err := e.r.CreateSession(ctx, "calc", "p1", nil); err != nil {
		t.Fatal(err)
	}
	res, _, err := ta.ExecutePlan(ctx, "p1", plan)
	var re *agentrt.RunError
	if !errors.As(err, &re) || res.Status != session.StatusWaiting || len(re.Requests) != 1 {
		t.Fatalf("first step: %v %+v", err, res)
	}
	for range 2 {
		st, _ := e.r.Load(ctx, "p1")
		if _, err := e.r.Resolve(ctx, "p1", st.Requests[0].ID, agentrt.Resolution{Decision: "approve"}); err != nil {
			t.Fatal(err)
		}
		res = e.resume(t, "p1")
	}
	if res.Status != session.StatusDone || res.Text != "4, then 9" {
		t.Fatalf("after approvals: %s %q", res.Status, res.Text)
	}
	if got := stepsOf(storedLog(t, e.store, "p1")); len(got) != 2 || !strings.Contains(got[1], `"result":9`) {
		t.Errorf("steps %q", got)
	}
}

// A crash mid-plan resumes at the step that had not finished: completed
// steps are not run again.
func TestPlanExecuteDurable(t *testing.T) {
	// Fail each commit in turn until one fails with exactly the first
	// step's result stored: the process "dies" between the steps.
	for failAt := 1; failAt < 30; failAt++ {
		var faults storetest.Faults
		mem := memstore.New()
		e := newEnv(t, storetest.Faulty(mem, &faults), agentrt.Config{}, planAgent(t, scripted.New("m", scripted.Reply{Text: twoSums}, scripted.Reply{Text: "x"}), agentrt.PlanExecute{}))
		id := e.session(t, "calc")
		faults.FailCommit(failAt, false)
		if _, err := agentrt.Collect(e.r.Run(context.Background(), id, agentrt.Input{Text: "sums?"})); !errors.Is(err, storetest.ErrInjected) {
			t.Fatalf("fail at %d: run: %v", failAt, err)
		}
		if len(toolResults(storedLog(t, mem, id))) != 1 {
			continue
		}
		e2 := newEnv(t, mem, agentrt.Config{}, planAgent(t, scripted.New("m", scripted.Reply{Text: "4 and 9"}), agentrt.PlanExecute{}))
		res := e2.resume(t, id)
		if res.Status != session.StatusDone || res.Text != "4 and 9" {
			t.Fatalf("resume: %s %q %+v", res.Status, res.Text, res.Err)
		}
		log := storedLog(t, mem, id)
		if n := len(toolResults(log)); n != 2 {
			t.Errorf("%d results in all, want 2: a completed step ran again", n)
		}
		if n := len(eventsOf[session.PlanCreated](log)); n != 1 {
			t.Errorf("%d plans: the resume planned again", n)
		}
		return
	}
	t.Fatal("no commit failure left exactly one step done")
}

// With Replan, a failed step has the model plan the rest again from the
// observations so far; the finished steps stay.
func TestPlanExecuteReplan(t *testing.T) {
	first := `{"steps":[{"kind":"tool","tool":"calculator","arguments":{"expression":"2+2"}},` +
		`{"kind":"tool","tool":"calculator","arguments":{"expression":"1/0"}},` +
		`{"kind":"tool","tool":"calculator","arguments":{"expression":"7*7"}}]}`
	second := `{"steps":[{"kind":"tool","tool":"calculator","arguments":{"expression":"1/1"}}]}`
	m := scripted.New("m", scripted.Reply{Text: first}, scripted.Reply{Text: second}, scripted.Reply{Text: "4, and 1 instead"}).Record()
	e := newEnv(t, nil, agentrt.Config{}, planAgent(t, m, agentrt.PlanExecute{Replan: true}))
	id := e.session(t, "calc")
	res := e.run(t, id, "sums?")
	if res.Status != session.StatusDone || res.Text != "4, and 1 instead" {
		t.Fatalf("run: %s %q %+v", res.Status, res.Text, res.Err)
	}
	log := storedLog(t, e.store, id)
	plans := eventsOf[session.PlanCreated](log)
	if len(plans) != 2 || plans[1].Source != "replan" {
		t.Fatalf("plans %+v", plans)
	}
	got := stepsOf(log)
	if len(got) != 3 || !strings.HasPrefix(got[0], "0 completed") || !strings.HasPrefix(got[1], "1 failed") || !strings.HasPrefix(got[2], `2 completed {"expression":"1/1"`) {
		t.Fatalf("steps %q: the 7*7 step should have been replaced", got)
	}
	if p := m.Requests()[1].Messages[0].Text(); !strings.Contains(p, "A step failed. The steps run so far") || !strings.Contains(p, "2. calculator {\"expression\":\"1/0\"}: failed: ") {
		t.Errorf("replanning prompt:\n%s", p)
	}
}

// A task step is carried out by the think-act loop with the agent's
// tools: the model is given the task, calls what it needs, and its answer
// is the step's observation; the plan goes on after it.
func TestPlanExecuteTaskStep(t *testing.T) {
	plan := `{"steps":[{"kind":"task","task":"find 6*7 with the calculator"},` +
		`{"kind":"tool","tool":"calculator","arguments":{"expression":"1+1"}}]}`
	m := scripted.New("m", scripted.Reply{Text: plan},
		scripted.Reply{ToolCalls: []scripted.Call{scripted.ToolCall("calculator", `{"expression":"6*7"}`)}},
		scripted.Reply{Text: "6*7 is 42"},
		scripted.Reply{Text: "42, and 1+1 is 2."}).Record()
	e := newEnv(t, nil, agentrt.Config{}, planAgent(t, m, agentrt.PlanExecute{}))
	id := e.session(t, "calc")
	res := e.run(t, id, "compute")
	if res.Status != session.StatusDone || res.Text != "42, and 1+1 is 2." {
		t.Fatalf("run: %s %q %+v", res.Status, res.Text, res.Err)
	}
	got := stepsOf(storedLog(t, e.store, id))
	if len(got) != 2 || got[0] != `0 completed "6*7 is 42"` || !strings.HasPrefix(got[1], `1 completed {"expression":"1+1"`) {
		t.Fatalf("steps %q", got)
	}
	// The model was given the task.
	if last := m.Requests()[1].Messages; !strings.Contains(last[len(last)-1].Text(), "Step 1 of the plan: find 6*7 with the calculator") {
		t.Errorf("the task request ends with %q", last[len(last)-1].Text())
	}
}

// With StructuredOutput the planner's request carries the plan's schema
// as response_format.
func TestPlanExecuteStructuredOutput(t *testing.T) {
	m := scripted.New("m", scripted.Reply{Text: `{"steps":[{"kind":"reply","text":"hi"}]}`}).Record()
	e := newEnv(t, nil, agentrt.Config{}, planAgent(t, m, agentrt.PlanExecute{StructuredOutput: true}))
	if res := e.run(t, e.session(t, "calc"), "hello"); res.Text != "hi" {
		t.Fatalf("run: %q", res.Text)
	}
	rf := m.Requests()[0].ResponseFormat
	if rf == nil || rf.Type != "json_schema" || rf.Name != "plan" || !json.Valid(rf.Schema) || string(rf.Schema) != agentrt.PlanSchema {
		t.Fatalf("response_format %+v", rf)
	}
}

// Overrides change the agent for one run only:
// profile fields in the system prompt, a plan's step cap; recorded in
// run_started; gone on the next run.
func TestRunOverrides(t *testing.T) {
	m := scripted.New("m",
		scripted.Reply{Text: `{"steps":[{"kind":"tool","tool":"calculator","arguments":{"expression":"1+1"}},` +
			`{"kind":"tool","tool":"calculator","arguments":{"expression":"2+2"}}]}`},
		scripted.Reply{Text: "2"},
		scripted.Reply{Text: `{"steps":[{"kind":"reply","text":"ok"}]}`}).Record()
	a, err := agentrt.NewAgent("calc").Profile(agentrt.Profile{Name: "Ada", Tone: "formal"}).Instructions("Compute.").
		Model(m).Registry(registry(t)).Policy(agentrt.PlanExecute{}).Build()
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, nil, agentrt.Config{}, a)
	id := e.session(t, "calc")
	ctx := context.Background()
	res, err := agentrt.Collect(e.r.Run(ctx, id, agentrt.Input{Text: "sums", Overrides: &agentrt.Overrides{MaxSteps: 1, Profile: agentrt.Profile{Tone: "casual"}}}))
	if err != nil || res.Status != session.StatusDone {
		t.Fatalf("run: %v %+v", err, res)
	}
	if sys := m.Requests()[0].System; !strings.Contains(sys, "Tone: casual.") || strings.Contains(sys, "formal") || !strings.Contains(sys, "You are Ada.") || !strings.Contains(sys, "Compute.") {
		t.Errorf("system prompt with overrides:\n%s", sys)
	}
	if n := len(toolResults(res.Events)); n != 1 {
		t.Errorf("%d steps ran, want 1 (max_steps overridden)", n)
	}
	if rs := eventsOf[session.RunStarted](res.Events); len(rs) != 1 || rs[0].Overrides == nil || rs[0].Overrides.MaxSteps != 1 {
		t.Errorf("run_started %+v", rs)
	}
	e.run(t, id, "again")
	if sys := m.Requests()[2].System; !strings.Contains(sys, "Tone: formal.") {
		t.Errorf("the next run kept the override:\n%s", sys)
	}
	if _, err := agentrt.Collect(e.r.Run(ctx, id, agentrt.Input{Text: "x", Overrides: &agentrt.Overrides{MaxSteps: -1}})); err == nil || !strings.Contains(err.Error(), "overrides: max_steps -1 is negative") {
		t.Errorf("negative max_steps: %v", err)
	}
}

// TaskAgent streams a turn's events as Runner.Run does; a plan that does
// not check is the stream's only error.
func TestTaskAgentEvents(t *testing.T) {
	e := newEnv(t, nil, agentrt.Config{}, planAgent(t, scripted.New("m", scripted.Reply{Text: "4"}), agentrt.PlanExecute{}))
	ta := agentrt.TaskAgent{Runner: e.r, Agent: "calc"}
	ctx := context.Background()
	var types []session.Type
	plan := &agentrt.Plan{Steps: []agentrt.PlanStep{{Kind: "tool", Tool: "calculator", Arguments: json.RawMessage(`{"expression":"2+2"}`)}}}
	for ev, err := range ta.ExecutePlanEvents(ctx, "s1", plan) {
		if err != nil {
			t.Fatal(err)
		}
		if ev.Seq != 0 {
			types = append(types, ev.Type)
		}
	}
	got := fmt.Sprint(types)
	for _, want := range []string{"plan_created", "plan_step_started", "tool_result", "plan_step_finished", "final"} {
		if !strings.Contains(got, want) {
			t.Errorf("events %s lack %s", got, want)
		}
	}
	n := 0
	for _, err := range ta.ExecutePlanEvents(ctx, "s2", &agentrt.Plan{}) {
		n++
		if err == nil || !strings.Contains(err.Error(), "the plan has no steps") {
			t.Errorf("an empty plan: %v", err)
		}
	}
	if n != 1 {
		t.Errorf("%d items for a refused plan, want 1", n)
	}
}

// Every turn plans again from step 1, yet each step's call has an id of
// its own in the session: a tool's idempotency key is the session's and
// the call's, so a repeated id would have the second turn's charge taken
// for the first's.
func TestPlanExecuteCallIDsPerTurn(t *testing.T) {
	one := `{"steps":[{"kind":"tool","tool":"calculator","arguments":{"expression":"2+2"}}]}`
	m := scripted.New("m", scripted.Reply{Text: one}, scripted.Reply{Text: "4"}, scripted.Reply{Text: one}, scripted.Reply{Text: "4 again"})
	e := newEnv(t, nil, agentrt.Config{}, planAgent(t, m, agentrt.PlanExecute{}))
	id := e.session(t, "calc")
	for _, want := range []string{"4", "4 again"} {
		if res := e.run(t, id, "2+2?"); res.Status != session.StatusDone || res.Text != want {
			t.Fatalf("run: %s %q %+v", res.Status, res.Text, res.Err)
		}
	}
	results := toolResults(storedLog(t, e.store, id))
	if len(results) != 2 || results[0].CallID == results[1].CallID || !results[0].OK || !results[1].OK {
		t.Fatalf("results %+v: each turn's step needs a call id of its own", results)
	}
}

// A step that fails when the plan has used every step it may is not
// planned again: the run answers from what it observed.
func TestPlanExecuteReplanAtStepCap(t *testing.T) {
	plan := `{"steps":[{"kind":"tool","tool":"calculator","arguments":{"expression":"2+2"}},` +
		`{"kind":"tool","tool":"calculator","arguments":{"expression":"1/0"}}]}`
	m := scripted.New("m", scripted.Reply{Text: plan}, scripted.Reply{Text: "4; the division failed"}).Record()
	e := newEnv(t, nil, agentrt.Config{}, planAgent(t, m, agentrt.PlanExecute{Replan: true, MaxSteps: 2}))
	id := e.session(t, "calc")
	res := e.run(t, id, "sums?")
	if res.Status != session.StatusDone || res.Text != "4; the division failed" {
		t.Fatalf("run: %s %q %+v", res.Status, res.Text, res.Err)
	}
	log := storedLog(t, e.store, id)
	if n := len(eventsOf[session.PlanCreated](log)); n != 1 {
		t.Errorf("%d plans: no step was left to plan", n)
	}
	if got := stepsOf(log); len(got) != 2 || !strings.HasPrefix(got[1], "1 failed") {
		t.Errorf("steps %q", got)
	}
	if n := len(m.Requests()); n != 2 {
		t.Errorf("%d model calls, want the plan and the summary", n)
	}
}
