package agentrt_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/model/scripted"
	"github.com/agentrt/agentrt/session"
	"github.com/agentrt/agentrt/session/memstore"
	"github.com/agentrt/agentrt/session/storetest"
	"github.com/agentrt/agentrt/tool"
)

func delegate(task string) scripted.Reply {
	return scripted.Reply{ToolCalls: []scripted.Call{scripted.ToolCall("calc", `{"task":"`+task+`"}`)}}
}

// boss delegates to calc, which uses the calculator.
func delegation(t *testing.T, boss, calc *scripted.Model, calcTools ...tool.Tool) (*agentrt.Agent, *agentrt.Agent) {
	reg, err := tool.NewRegistry(agentrt.SubAgent("calc", ""))
	if err != nil {
		t.Fatal(err)
	}
	b := &agentrt.Agent{Name: "boss", Model: boss, Tools: reg}
	c := calcAgent(calc, registry(t, calcTools...))
	return b, c
}

func eventsOf[T any](events []*session.Event) []*T {
	var out []*T
	for _, e := range events {
		if d, ok := any(e.Data).(*T); ok {
			out = append(out, d)
		}
	}
	return out
}

// An agent uses another as a tool: the child works in its own session,
// linked to the parent's call; the parent's log shows the delegation; the
// result is the child's answer; the child's usage counts in the parent's.
func TestSubagentDelegates(t *testing.T) {
	u := model.Usage{InputTokens: 10, OutputTokens: 5}
	d := delegate("compute 6*7")
	d.Usage = &model.Usage{}
	boss := scripted.New("boss", d, scripted.Reply{Text: "It is 42.", Usage: &u})
	calc := scripted.New("calc-model", scripted.Reply{Usage: &u, ToolCalls: []scripted.Call{scripted.ToolCall("calculator", `{"expression":"6*7"}`)}},
		scripted.Reply{Text: "42", Usage: &u})
	b, c := delegation(t, boss, calc)
	store := memstore.New()
	e := newEnv(t, store, agentrt.Config{}, b, c)
	id := e.session(t, "boss")
	res := e.run(t, id, "what is 6*7?")
	if res.Status != session.StatusDone || res.Text != "It is 42." {
		t.Fatalf("run: %s %q", res.Status, res.Text)
	}
	log := storedLog(t, store, id)
	started, finished := eventsOf[session.SubagentStarted](log), eventsOf[session.SubagentFinished](log)
	if len(started) != 1 || started[0].Agent != "calc" || started[0].Task != "compute 6*7" ||
		len(finished) != 1 || finished[0].Answer != "42" || finished[0].Usage.InputTokens != 20 {
		t.Fatalf("started %+v, finished %+v", started, finished)
	}
	if n := len(eventsOf[session.SubagentProgress](log)); n == 0 {
		t.Error("no subagent_progress")
	}
	child := started[0].ChildSession
	clog := storedLog(t, store, child)
	rs := eventsOf[session.RunStarted](clog)
	if len(rs) != 1 || rs[0].Parent == nil || rs[0].Parent.SessionID != id || rs[0].Parent.CallID != started[0].CallID {
		t.Fatalf("child run_started %+v", rs)
	}
	results := toolResults(log)
	if len(results) != 1 || !results[0].OK || !strings.Contains(string(results[0].Result), `"answer":"42"`) {
		t.Fatalf("parent's result %+v", results)
	}
	s, err := store.GetSession(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if s.Usage.InputTokens != 10+20 {
		t.Errorf("parent usage %+v: the child's did not roll up", s.Usage)
	}
}

// A call the child's policy asks a person about waits in the parent: the
// request is the parent's, answered there, and the parent's resume
// resumes the child.
func TestSubagentApprovalSurfacesInParent(t *testing.T) {
	boss := scripted.New("boss", delegate("compute 6*7"), scripted.Reply{Text: "It is 42."})
	calc := scripted.New("calc-model", scripted.Reply{ToolCalls: []scripted.Call{scripted.ToolCall("calculator", `{"expression":"6*7"}`)}},
		scripted.Reply{Text: "42"})
	b, c := delegation(t, boss, calc)
	c.Approval = agentrt.ApprovalPolicy{Ask: []string{"calculator"}}
	store := memstore.New()
	e := newEnv(t, store, agentrt.Config{}, b, c)
	id := e.session(t, "boss")
	res := e.run(t, id, "what is 6*7?")
	if res.Status != session.StatusWaiting {
		t.Fatalf("run: %s %s", res.Status, res.Reason)
	}
	st, err := e.r.Load(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Requests) != 1 || st.Requests[0].Child == nil || !strings.HasPrefix(st.Requests[0].Question, "[calc] ") {
		t.Fatalf("parent's requests %+v", st.Requests)
	}
	// A bad answer is refused by the child, and nothing is recorded.
	if _, err := e.r.Resolve(context.Background(), id, st.Requests[0].ID, agentrt.Resolution{Decision: "edit", Arguments: []byte(`{"expression":7}`)}); err == nil {
		t.Fatal("an edit the child's tool schema refuses was accepted")
	}
	if _, err := e.r.Resolve(context.Background(), id, st.Requests[0].ID, agentrt.Resolution{Decision: "approve", By: "ana"}); err != nil {
		t.Fatal(err)
	}
	res = e.resume(t, id)
	if res.Status != session.StatusDone || res.Text != "It is 42." {
		t.Fatalf("resume: %s %q", res.Status, res.Text)
	}
	child := st.Requests[0].Child.SessionID
	if rs := toolResults(storedLog(t, store, child)); len(rs) != 1 || !rs[0].OK {
		t.Fatalf("child's results %+v", rs)
	}
}

// The child's store fails mid-run, as a crash would stop both: resumed,
// the parent resumes the child where it was, and no tool of the child
// runs twice.
func TestSubagentDurable(t *testing.T) {
	var faults storetest.Faults
	mem := memstore.New()
	var runs int
	counter := tool.Must(tool.New("count", "counts", func(context.Context, struct{}) (int, error) { runs++; return runs, nil }))
	calcReplies := func() *scripted.Model {
		return scripted.New("calc-model",
			scripted.Reply{ToolCalls: []scripted.Call{scripted.ToolCall("count", `{}`)}},
			scripted.Reply{ToolCalls: []scripted.Call{scripted.ToolCall("count", `{}`)}},
			scripted.Reply{Text: "counted"})
	}
	b, c := delegation(t, scripted.New("boss", delegate("count twice"), scripted.Reply{Text: "done"}), calcReplies(), counter)
	e := newEnv(t, storetest.Faulty(mem, &faults), agentrt.Config{}, b, c)
	id := e.session(t, "boss")
	// Parent: 1 [run_started…], 2 [model_finished tool_call], 3
	// [subagent_started]; child: 4 [run_started…], 5 [… tool_call], 6
	// [tool_result …], 7 (progress, parent), 8 [… tool_call]: fail the
	// child's second result (9).
	faults.FailCommit(9, false)
	_, err := agentrt.Collect(e.r.Run(context.Background(), id, agentrt.Input{Text: "go"}))
	if !errors.Is(err, storetest.ErrInjected) {
		t.Fatalf("run: %v", err)
	}
	before := runs
	// A new process: the scripted child answers its remaining rounds.
	b2, c2 := delegation(t, scripted.New("boss", scripted.Reply{Text: "done"}), scripted.New("calc-model", scripted.Reply{Text: "counted"}), counter)
	e2 := newEnv(t, mem, agentrt.Config{}, b2, c2)
	res := e2.resume(t, id)
	if res.Status != session.StatusDone {
		t.Fatalf("resume: %s %s %+v", res.Status, res.Reason, res.Err)
	}
	started := eventsOf[session.SubagentStarted](storedLog(t, mem, id))
	if len(started) != 2 || !started[1].Resumed {
		t.Fatalf("subagent_started %+v: the child was not resumed", started)
	}
	clog := storedLog(t, mem, started[0].ChildSession)
	if got := len(eventsOf[session.RunResumed](clog)); got != 1 {
		t.Errorf("%d run_resumed in the child", got)
	}
	// The first call's result was stored: it does not run again; the
	// second's was not: it runs again, once.
	if got := len(toolResults(clog)); got != 2 || before != 2 || runs != 3 {
		t.Errorf("child results %d; the tool ran %d times before the failure, %d in all (want 2 and 3)", got, before, runs)
	}
}

// Delegation is bounded in depth, and a delegation cycle or an unknown
// sub-agent is refused when the runner is made.
func TestSubagentLimitsAndConfig(t *testing.T) {
	regOf := func(t *testing.T, tools ...tool.Tool) *tool.Registry {
		r, err := tool.NewRegistry(tools...)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	a := &agentrt.Agent{Name: "a", Model: scripted.New("m"), Tools: regOf(t, agentrt.SubAgent("b", ""))}
	b := &agentrt.Agent{Name: "b", Model: scripted.New("m"), Tools: regOf(t, agentrt.SubAgent("a", ""))}
	_, err := agentrt.NewRunner(agentrt.Config{Store: memstore.New(), Agents: []*agentrt.Agent{a, b}})
	if err == nil || err.Error() != "agentrt: agents delegate to each other in a cycle: a → b → a" {
		t.Errorf("cycle: %v", err)
	}
	x := &agentrt.Agent{Name: "x", Model: scripted.New("m"), Tools: regOf(t, agentrt.SubAgent("nobody", ""))}
	_, err = agentrt.NewRunner(agentrt.Config{Store: memstore.New(), Agents: []*agentrt.Agent{x}})
	if err == nil || err.Error() != `agentrt: agent "x": sub-agent "nobody" is not an agent of this runner` {
		t.Errorf("unknown: %v", err)
	}

	// Depth: top → mid → leaf with a limit of 1: mid cannot delegate.
	top := &agentrt.Agent{Name: "top", Model: scripted.New("m1", scripted.Reply{ToolCalls: []scripted.Call{scripted.ToolCall("mid", `{"task":"go"}`)}}, scripted.Reply{Text: "ok"}),
		Tools: regOf(t, agentrt.SubAgent("mid", ""))}
	mid := &agentrt.Agent{Name: "mid", Model: scripted.New("m2", scripted.Reply{ToolCalls: []scripted.Call{scripted.ToolCall("leaf", `{"task":"go"}`)}}, scripted.Reply{Text: "mid done"}),
		Tools: regOf(t, agentrt.SubAgent("leaf", ""))}
	leaf := &agentrt.Agent{Name: "leaf", Model: scripted.New("m3", scripted.Reply{Text: "leaf"})}
	e := newEnv(t, nil, agentrt.Config{MaxSubagentDepth: 1}, top, mid, leaf)
	id := e.session(t, "top")
	if res := e.run(t, id, "go"); res.Status != session.StatusDone {
		t.Fatalf("run: %s", res.Status)
	}
	started := eventsOf[session.SubagentStarted](storedLog(t, e.store, id))
	mlog := storedLog(t, e.store, started[0].ChildSession)
	rs := toolResults(mlog)
	if len(rs) != 1 || rs[0].OK || rs[0].Error != "not delegated: leaf is 2 delegations deep, and the limit is 1" {
		t.Fatalf("mid's result %+v", rs)
	}
}

// A child that stops at its round limit gives a result saying so, and the
// parent continues it with continue_session.
func TestSubagentPausedAndContinued(t *testing.T) {
	var child string
	boss := scripted.New("boss", delegate("count"))
	calc := scripted.New("calc-model",
		scripted.Reply{ToolCalls: []scripted.Call{scripted.ToolCall("calculator", `{"expression":"1+1"}`)}},
		scripted.Reply{Text: "2"})
	b, c := delegation(t, boss, calc)
	c.Limits.MaxRounds = 1
	store := memstore.New()
	e := newEnv(t, store, agentrt.Config{}, b, c)
	id := e.session(t, "boss")
	// The boss's second reply continues the child it is told about.
	res, _ := agentrt.Collect(e.r.Run(context.Background(), id, agentrt.Input{Text: "go"}))
	log := storedLog(t, store, id)
	paused := eventsOf[session.SubagentPaused](log)
	if len(paused) != 1 || paused[0].Reason != "max_rounds" {
		t.Fatalf("paused %+v (run %s)", paused, res.Status)
	}
	child = paused[0].ChildSession
	rs := toolResults(log)
	if len(rs) != 1 || rs[0].OK || !strings.Contains(rs[0].Error, `"continue_session": "`+child+`"`) {
		t.Fatalf("result %+v", rs)
	}
	// Continue it, from a new run of the boss.
	boss2 := scripted.New("boss", scripted.Reply{ToolCalls: []scripted.Call{scripted.ToolCall("calc", `{"task":"count","continue_session":"`+child+`"}`)}},
		scripted.Reply{Text: "it said 2"})
	b2, c2 := delegation(t, boss2, scripted.New("calc-model", scripted.Reply{Text: "2"}))
	c2.Limits.MaxRounds = 1
	e2 := newEnv(t, store, agentrt.Config{}, b2, c2)
	res = e2.run(t, id, "go on")
	finished := eventsOf[session.SubagentFinished](storedLog(t, store, id))
	if res.Text != "it said 2" || len(finished) != 1 || finished[0].ChildSession != child || finished[0].Answer != "2" {
		t.Fatalf("continued: %q, finished %+v", res.Text, finished)
	}
}

// With approval.auto_when_delegated, a sub-agent's ask calls run without
// a person when it works for another agent (and still ask when it runs on
// its own).
func TestSubagentAutoApproveWhenDelegated(t *testing.T) {
	boss := scripted.New("boss", delegate("compute 6*7"), scripted.Reply{Text: "It is 42."})
	calc := scripted.New("calc-model", scripted.Reply{ToolCalls: []scripted.Call{scripted.ToolCall("calculator", `{"expression":"6*7"}`)}},
		scripted.Reply{Text: "42"}, scripted.Reply{ToolCalls: []scripted.Call{scripted.ToolCall("calculator", `{"expression":"1+1"}`)}})
	b, c := delegation(t, boss, calc)
	c.Approval = agentrt.ApprovalPolicy{Ask: []string{"calculator"}, AutoWhenDelegated: true}
	e := newEnv(t, nil, agentrt.Config{}, b, c)
	id := e.session(t, "boss")
	if res := e.run(t, id, "6*7?"); res.Status != session.StatusDone || res.Text != "It is 42." {
		t.Fatalf("delegated: %s %q", res.Status, res.Text)
	}
	own := e.session(t, "calc")
	if res := e.run(t, own, "1+1?"); res.Status != session.StatusWaiting {
		t.Fatalf("on its own: %s, want waiting for approval", res.Status)
	}
}

// Canceling the parent's run cancels the child's, with the tool it was
// running; resuming the parent resumes the child.
func TestSubagentCancellationFlowsDown(t *testing.T) {
	g := newGate()
	boss := scripted.New("boss", delegate("wait"), scripted.Reply{Text: "done"})
	calc := scripted.New("calc-model", gateCall(), scripted.Reply{Text: "waited"})
	b, c := delegation(t, boss, calc, g.tool())
	store := memstore.New()
	e := newEnv(t, store, agentrt.Config{}, b, c)
	id := e.session(t, "boss")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan *agentrt.Result)
	go func() {
		res, _ := agentrt.Collect(e.r.Run(ctx, id, agentrt.Input{Text: "go"}))
		done <- res
	}()
	<-g.started
	cancel()
	res := <-done
	if res.Status != session.StatusCanceled {
		t.Fatalf("parent: %s", res.Status)
	}
	started := eventsOf[session.SubagentStarted](storedLog(t, store, id))
	child, err := store.GetSession(context.Background(), started[0].ChildSession)
	if err != nil || child.Status != session.StatusCanceled {
		t.Fatalf("child: %+v %v", child, err)
	}
}

// A model may use the same call id in two turns: each delegation still
// gets a child session of its own, and the second turn's answer is the
// second child's, not the first's read back.
func TestSubagentChildPerTurn(t *testing.T) {
	store := memstore.New()
	var id string
	for i, answer := range []string{"42", "9"} {
		boss := scripted.New("boss", delegate("compute"), scripted.Reply{Text: "done"})
		b, c := delegation(t, boss, scripted.New("calc-model", scripted.Reply{Text: answer}))
		e := newEnv(t, store, agentrt.Config{}, b, c)
		if i == 0 {
			id = e.session(t, "boss")
		}
		e.run(t, id, "compute")
	}
	finished := eventsOf[session.SubagentFinished](storedLog(t, store, id))
	if len(finished) != 2 || finished[0].ChildSession == finished[1].ChildSession || finished[1].Answer != "9" {
		t.Fatalf("finished %+v", finished)
	}
}

// continue_session names a child of this session's, of the same agent;
// anything else is the model's mistake, told to it.
func TestSubagentContinueChecked(t *testing.T) {
	other := "elsewhere"
	for _, tc := range []struct{ target, want string }{
		{"nothing-here", `there is no delegation "nothing-here" to continue`},
		{other, `"elsewhere" is not a delegation of this session to calc`},
	} {
		boss := scripted.New("boss", scripted.Reply{ToolCalls: []scripted.Call{scripted.ToolCall("calc", `{"task":"x","continue_session":"`+tc.target+`"}`)}},
			scripted.Reply{Text: "ok"})
		b, c := delegation(t, boss, scripted.New("calc-model"))
		store := memstore.New()
		e := newEnv(t, store, agentrt.Config{}, b, c)
		if tc.target == other {
			if _, err := e.r.CreateSession(context.Background(), "calc", other, nil); err != nil {
				t.Fatal(err)
			}
		}
		id := e.session(t, "boss")
		e.run(t, id, "go")
		rs := toolResults(storedLog(t, store, id))
		if len(rs) != 1 || rs[0].OK || !strings.Contains(rs[0].Error, tc.want) {
			t.Errorf("continue %q: result %+v", tc.target, rs)
		}
	}
}

// A child's request answered in the child's own session is recorded in
// the parent's when the parent's copy is answered: the parent does not
// wait for ever.
func TestSubagentRequestAnsweredInChild(t *testing.T) {
	boss := scripted.New("boss", delegate("compute 6*7"), scripted.Reply{Text: "It is 42."})
	calc := scripted.New("calc-model", scripted.Reply{ToolCalls: []scripted.Call{scripted.ToolCall("calculator", `{"expression":"6*7"}`)}},
		scripted.Reply{Text: "42"})
	b, c := delegation(t, boss, calc)
	c.Approval = agentrt.ApprovalPolicy{Ask: []string{"calculator"}}
	e := newEnv(t, nil, agentrt.Config{}, b, c)
	id := e.session(t, "boss")
	if res := e.run(t, id, "what is 6*7?"); res.Status != session.StatusWaiting {
		t.Fatalf("run: %s", res.Status)
	}
	st, err := e.r.Load(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	q := st.Requests[0]
	if _, err := e.r.Resolve(context.Background(), q.Child.SessionID, q.Child.RequestID, agentrt.Resolution{Decision: "approve", By: "bo"}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.r.Resolve(context.Background(), id, q.ID, agentrt.Resolution{Decision: "approve", By: "ana"}); err != nil {
		t.Fatalf("parent's copy: %v", err)
	}
	if res := e.resume(t, id); res.Status != session.StatusDone || res.Text != "It is 42." {
		t.Fatalf("resume: %s %q", res.Status, res.Text)
	}
}

// A child that paused at a limit while the parent's record of it was lost
// (a crash) is reported as paused when the parent resumes: it is not
// resumed, which would grant it its limits again.
func TestSubagentPausedBeforeParentRecorded(t *testing.T) {
	for failAt := 1; failAt < 20; failAt++ {
		var faults storetest.Faults
		mem := memstore.New()
		calc := scripted.New("calc-model", scripted.Reply{ToolCalls: []scripted.Call{scripted.ToolCall("calculator", `{"expression":"1+1"}`)}})
		b, c := delegation(t, scripted.New("boss", delegate("count")), calc)
		c.Limits.MaxRounds = 1
		e := newEnv(t, storetest.Faulty(mem, &faults), agentrt.Config{}, b, c)
		id := e.session(t, "boss")
		faults.FailCommit(failAt, false)
		if _, err := agentrt.Collect(e.r.Run(context.Background(), id, agentrt.Input{Text: "go"})); !errors.Is(err, storetest.ErrInjected) {
			continue
		}
		started := eventsOf[session.SubagentStarted](storedLog(t, mem, id))
		if len(started) != 1 {
			continue
		}
		child := started[0].ChildSession
		if s, err := mem.GetSession(context.Background(), child); err != nil || s.Status != session.StatusPaused {
			continue
		}
		// A new process; the child's model has nothing more to say.
		b2, c2 := delegation(t, scripted.New("boss", scripted.Reply{Text: "it paused"}), scripted.New("calc-model"))
		c2.Limits.MaxRounds = 1
		res := newEnv(t, mem, agentrt.Config{}, b2, c2).resume(t, id)
		if res.Status != session.StatusDone || res.Text != "it paused" {
			t.Fatalf("resume: %s %q %+v", res.Status, res.Text, res.Err)
		}
		log := storedLog(t, mem, id)
		paused := eventsOf[session.SubagentPaused](log)
		rs := toolResults(log)
		if len(paused) != 1 || paused[0].Reason != "max_rounds" || len(rs) != 1 || !strings.Contains(rs[0].Error, `"continue_session": "`+child+`"`) {
			t.Fatalf("paused %+v, results %+v", paused, rs)
		}
		if n := len(eventsOf[session.RunResumed](storedLog(t, mem, child))); n != 0 {
			t.Errorf("the paused child was resumed %d times", n)
		}
		return
	}
	t.Fatal("no commit failure left the child paused and the parent unaware")
}
