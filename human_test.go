package agentrt_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/model/scripted"
	"github.com/agentrt/agentrt/session"
	"github.com/agentrt/agentrt/session/memstore"
	"github.com/agentrt/agentrt/tool"
	"github.com/agentrt/agentrt/tool/builtin"
)

// Prompt and select requests a policy asks: validated answers, recorded
// for the policy to fold.
func TestPromptAndSelect(t *testing.T) {
	var asked atomic.Int32
	a := calcAgent(scripted.New("m"), nil)
	a.Policy = agentrt.PolicyFunc(func(_ context.Context, _ *agentrt.Agent, s *agentrt.State) (agentrt.Instruction, error) {
		switch {
		case len(s.Requests) > 0:
			return agentrt.Instruction{Kind: agentrt.KindWait}, nil
		case asked.Load() == 0:
			asked.Add(1)
			return agentrt.Instruction{Kind: agentrt.KindAskHuman, Ask: &agentrt.Ask{Kind: session.RequestSelect, Question: "Which region?", Options: []string{"eu", "us"}}}, nil
		case asked.Load() == 1:
			asked.Add(1)
			return agentrt.Instruction{Kind: agentrt.KindAskHuman, Ask: &agentrt.Ask{Kind: session.RequestPrompt, Question: "Why?"}}, nil
		}
		return agentrt.Instruction{Kind: agentrt.KindFinish, Text: "thanks"}, nil
	})
	e := newEnv(t, nil, agentrt.Config{}, a)
	id := e.session(t, "calc")
	res := e.run(t, id, "go")
	if res.Status != session.StatusWaiting {
		t.Fatalf("run: %+v", res)
	}
	st, _ := e.r.Load(context.Background(), id)
	q := st.Requests[0]
	before := storedLog(t, e.store, id)
	for _, tc := range []struct {
		res  agentrt.Resolution
		code string
	}{
		{agentrt.Resolution{Selected: []string{"asia"}}, "bad_answer"},
		{agentrt.Resolution{Selected: []string{"eu", "us"}}, "bad_answer"},
		{agentrt.Resolution{}, "empty_answer"},
		{agentrt.Resolution{Decision: "approve"}, "bad_decision"},
	} {
		if _, err := e.r.Resolve(context.Background(), id, q.ID, tc.res); errCode(err) != tc.code {
			t.Errorf("%+v: %v, want %s", tc.res, err, tc.code)
		}
	}
	if diff := cmp.Diff(before, storedLog(t, e.store, id)); diff != "" {
		t.Errorf("bad answers changed the log:\n%s", diff)
	}
	ev, err := e.r.Resolve(context.Background(), id, q.ID, agentrt.Resolution{Selected: []string{"us"}, By: "ana"})
	if err != nil {
		t.Fatal(err)
	}
	if d := ev.Data.(*session.InputResolved); d.Decision != "answer" || !cmp.Equal(d.Selected, []string{"us"}) || d.By != "ana" {
		t.Errorf("input_resolved %+v", d)
	}
	res = e.resume(t, id)
	st, _ = e.r.Load(context.Background(), id)
	if res.Status != session.StatusWaiting || st.Requests[0].Kind != session.RequestPrompt {
		t.Fatalf("second question: %+v", res)
	}
	if _, err := e.r.Resolve(context.Background(), id, st.Requests[0].ID, agentrt.Resolution{Text: "latency"}); err != nil {
		t.Fatal(err)
	}
	if res := e.resume(t, id); res.Status != session.StatusDone {
		t.Fatalf("done: %+v", res)
	}
	_, err = e.r.Resolve(context.Background(), id, q.ID, agentrt.Resolution{Selected: []string{"eu"}})
	if errCode(err) != "already_resolved" || !strings.Contains(err.Error(), "already resolved by ana at") {
		t.Errorf("resolving again: %v", err)
	}
}

// Two resolutions of one request at the same moment: exactly one wins.
func TestResolveConcurrently(t *testing.T) {
	var runs atomic.Int32
	m := scripted.New("m", scripted.Reply{ToolCalls: []scripted.Call{scripted.ToolCall("deploy", `{"env":"prod"}`)}})
	store := memstore.New()
	e := newEnv(t, store, agentrt.Config{}, calcAgent(m, registry(t, askTool(t, &runs))))
	id := e.session(t, "calc")
	res := e.run(t, id, "deploy")
	rid := res.Events[len(res.Events)-2].Data.(*session.InputRequired).RequestID
	var runners []*env
	for range 4 {
		runners = append(runners, newEnv(t, store, agentrt.Config{}, calcAgent(scripted.New("m"), registry(t, askTool(t, &runs)))))
	}
	var wins, already atomic.Int32
	var wg sync.WaitGroup
	for _, r := range runners {
		wg.Go(func() {
			_, err := r.r.Resolve(context.Background(), id, rid, agentrt.Resolution{Decision: "approve"})
			switch errCode(err) {
			case "":
				wins.Add(1)
			case "already_resolved":
				already.Add(1)
			default:
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if wins.Load() != 1 || already.Load() != 3 {
		t.Errorf("%d won, %d already resolved; want 1 and 3", wins.Load(), already.Load())
	}
	var resolved int
	for _, ev := range storedLog(t, store, id) {
		if ev.Type == session.TypeInputResolved {
			resolved++
		}
	}
	if resolved != 1 {
		t.Errorf("%d input_resolved events", resolved)
	}
}

// The model asks the user with the ask_user tool: the call becomes a
// prompt (or a select, with options), and the answer is its result.
func TestAskUserTool(t *testing.T) {
	m := scripted.New("m",
		scripted.Reply{ToolCalls: []scripted.Call{scripted.ToolCall("ask_user", `{"question":"Which region?","options":["eu","us"]}`)}},
		scripted.Reply{ToolCalls: []scripted.Call{scripted.ToolCall("ask_user", `{"question":"Why?"}`)}, Expect: &scripted.Expect{LastToolResultContains: `{"selected":["eu"]}`}},
		scripted.Reply{Text: "eu, for latency", Expect: &scripted.Expect{LastToolResultContains: `{"answer":"latency"}`}},
	)
	reg, err := tool.NewRegistry(builtin.AskUser())
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, nil, agentrt.Config{}, calcAgent(m, reg))
	ctx := context.Background()
	id := e.session(t, "calc")
	res := e.run(t, id, "deploy somewhere")
	st, _ := e.r.Load(ctx, id)
	if res.Status != session.StatusWaiting || len(st.Requests) != 1 || st.Requests[0].Kind != session.RequestSelect || st.Requests[0].Question != "Which region?" {
		t.Fatalf("first question: %+v %+v", res, st.Requests)
	}
	if _, err := e.r.Resolve(ctx, id, st.Requests[0].ID, agentrt.Resolution{Selected: []string{"eu"}}); err != nil {
		t.Fatal(err)
	}
	res = e.resume(t, id)
	st, _ = e.r.Load(ctx, id)
	if res.Status != session.StatusWaiting || st.Requests[0].Kind != session.RequestPrompt {
		t.Fatalf("second question: %+v %+v", res, st.Requests)
	}
	if _, err := e.r.Resolve(ctx, id, st.Requests[0].ID, agentrt.Resolution{Text: "latency"}); err != nil {
		t.Fatal(err)
	}
	if res := e.resume(t, id); res.Status != session.StatusDone || res.Text != "eu, for latency" {
		t.Fatalf("done: %+v", res)
	}
}

// TestHookAsksAPerson: a BeforeTool hook asks a person before a call runs
// (a select or a prompt, as well as an approval): the call waits, the
// answer goes back to the hook, and the model never sees the question.
// A rejected approval blocks the call; an unanswered question
// expires into a blocked call; a malformed question fails the run.
func TestHookAsksAPerson(t *testing.T) {
	ctx := context.Background()
	deploy := func(env string) scripted.Reply {
		return scripted.Reply{ToolCalls: []scripted.Call{scripted.ToolCall("deploy", fmt.Sprintf(`{"env":%q}`, env))}}
	}
	newAgent := func(m model.Model, runs *atomic.Int32, ask *agentrt.Ask, seen *[]*session.InputResolved) *agentrt.Agent {
		tools := registry(t, tool.Must(tool.New("deploy", "deploys", func(_ context.Context, in struct {
			Env string `json:"env"`
		}) (string, error) {
			runs.Add(1)
			return "deployed to " + in.Env, nil
		})))
		a := calcAgent(m, tools)
		a.Approval.ExpiresFor = map[string]time.Duration{"deploy": time.Hour}
		a.Hooks.BeforeTool(0, func(_ context.Context, info agentrt.HookInfo, call model.ToolCall) agentrt.ToolDecision {
			if info.Answer == nil {
				return agentrt.ToolDecision{Ask: ask}
			}
			*seen = append(*seen, info.Answer)
			if len(info.Answer.Selected) == 1 {
				return agentrt.ToolDecision{Arguments: json.RawMessage(fmt.Sprintf(`{"env":%q}`, info.Answer.Selected[0]))}
			}
			return agentrt.ToolDecision{}
		})
		return a
	}
	pending := func(e *env, id string) agentrt.HumanRequest {
		t.Helper()
		st, err := e.r.Load(ctx, id)
		if err != nil || len(st.Requests) != 1 {
			t.Fatalf("want one pending request: %+v %v", st, err)
		}
		return st.Requests[0]
	}

	t.Run("select", func(t *testing.T) {
		var runs atomic.Int32
		var seen []*session.InputResolved
		m := scripted.New("m", deploy("prod"), scripted.Reply{Text: "done", Expect: &scripted.Expect{LastToolResultContains: "deployed to staging"}})
		ask := &agentrt.Ask{Kind: session.RequestSelect, Question: "which environment?", Options: []string{"staging", "prod"}}
		e := newEnv(t, nil, agentrt.Config{}, newAgent(m, &runs, ask, &seen))
		id := e.session(t, "calc")
		res := e.run(t, id, "deploy")
		if res.Status != session.StatusWaiting || runs.Load() != 0 {
			t.Fatalf("the call did not wait: %+v (runs %d)", res, runs.Load())
		}
		q := pending(e, id)
		if q.Kind != session.RequestSelect || !q.Hook || q.Question != "which environment?" || q.CallID == "" || q.Expires == nil || q.Asked.IsZero() {
			t.Fatalf("request %+v", q)
		}

		if _, err := e.r.Resolve(ctx, id, q.ID, agentrt.Resolution{Selected: []string{"qa"}}); err == nil {
			t.Fatal("an answer outside the options was accepted")
		}
		if _, err := e.r.Resolve(ctx, id, q.ID, agentrt.Resolution{Selected: []string{"staging"}, By: "ana"}); err != nil {
			t.Fatal(err)
		}
		if res := e.resume(t, id); res.Status != session.StatusDone || res.Text != "done" {
			t.Fatalf("%+v", res)
		}
		if runs.Load() != 1 || len(seen) != 1 || seen[0].By != "ana" {
			t.Fatalf("runs %d, the hook saw %+v", runs.Load(), seen)
		}
		// The log: the question is not a tool result; the call ran once,
		// with the arguments the hook made from the answer.
		var results, calls []string
		for ev, err := range e.store.Events(ctx, id, 0) {
			if err != nil {
				t.Fatal(err)
			}
			switch d := ev.Data.(type) {
			case *session.ToolResult:
				results = append(results, string(d.Result))
			case *session.ToolCall:
				calls = append(calls, string(d.Arguments))
			}
		}
		if diff := cmp.Diff([]string{`{"env":"staging"}`}, calls); diff != "" {
			t.Errorf("tool calls (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff([]string{`"deployed to staging"`}, results); diff != "" {
			t.Errorf("tool results (-want +got):\n%s", diff)
		}
	})

	t.Run("approval rejected", func(t *testing.T) {
		var runs atomic.Int32
		var seen []*session.InputResolved
		m := scripted.New("m", deploy("prod"), scripted.Reply{Text: "not deployed", Expect: &scripted.Expect{LastToolResultContains: "rejected this call: friday"}})
		e := newEnv(t, nil, agentrt.Config{}, newAgent(m, &runs, &agentrt.Ask{Kind: session.RequestApproval}, &seen))
		id := e.session(t, "calc")
		e.run(t, id, "deploy")
		q := pending(e, id)
		if q.Kind != session.RequestApproval || !strings.Contains(q.Question, "Allow deploy") {
			t.Fatalf("request %+v", q)
		}
		// A rule decides the approval policy's question, not a hook's.
		if _, err := e.r.Resolve(ctx, id, q.ID, agentrt.Resolution{Decision: "approve", Always: &agentrt.Always{}}); err == nil ||
			!strings.Contains(err.Error(), "a hook's question cannot stand for later calls") {
			t.Fatalf("always on a hook's approval: %v", err)
		}
		if _, err := e.r.Resolve(ctx, id, q.ID, agentrt.Resolution{Decision: "reject", Reason: "friday"}); err != nil {
			t.Fatal(err)
		}
		if res := e.resume(t, id); res.Status != session.StatusDone || runs.Load() != 0 || len(seen) != 0 {
			t.Fatalf("%+v (runs %d, seen %v)", res, runs.Load(), seen)
		}
	})

	t.Run("prompt expires", func(t *testing.T) {
		var runs atomic.Int32
		var seen []*session.InputResolved
		now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		m := scripted.New("m", deploy("prod"), scripted.Reply{Text: "nobody answered", Expect: &scripted.Expect{LastToolResultContains: "expired"}})
		e := newEnv(t, nil, agentrt.Config{Now: func() time.Time { return now }},
			newAgent(m, &runs, &agentrt.Ask{Kind: session.RequestPrompt, Question: "ticket number?"}, &seen))
		id := e.session(t, "calc")
		e.run(t, id, "deploy")
		if q := pending(e, id); q.Kind != session.RequestPrompt || !q.Hook {
			t.Fatalf("request %+v", q)
		}
		now = now.Add(2 * time.Hour)
		if res := e.resume(t, id); res.Status != session.StatusDone || runs.Load() != 0 {
			t.Fatalf("%+v (runs %d)", res, runs.Load())
		}
	})

	t.Run("two hooks, each its own answer", func(t *testing.T) {
		var runs atomic.Int32
		var seen []*session.InputResolved
		m := scripted.New("m", deploy("prod"), scripted.Reply{Text: "done", Expect: &scripted.Expect{LastToolResultContains: "deployed to staging"}})
		a := newAgent(m, &runs, &agentrt.Ask{Kind: session.RequestPrompt, Question: "ticket?"}, &seen)
		var second []*session.InputResolved
		a.Hooks.BeforeTool(-1, func(_ context.Context, info agentrt.HookInfo, call model.ToolCall) agentrt.ToolDecision {
			if info.Answer == nil {
				return agentrt.ToolDecision{Ask: &agentrt.Ask{Kind: session.RequestSelect, Question: "where?", Options: []string{"staging"}}}
			}
			second = append(second, info.Answer)
			return agentrt.ToolDecision{Arguments: json.RawMessage(`{"env":"staging"}`)}
		})
		e := newEnv(t, nil, agentrt.Config{}, a)
		id := e.session(t, "calc")
		e.run(t, id, "deploy")
		q := pending(e, id)
		if q.Kind != session.RequestPrompt || q.HookIndex != 0 {
			t.Fatalf("first question %+v", q)
		}
		if _, err := e.r.Resolve(ctx, id, q.ID, agentrt.Resolution{Text: "T-1"}); err != nil {
			t.Fatal(err)
		}
		if res := e.resume(t, id); res.Status != session.StatusWaiting {
			t.Fatalf("the second hook did not ask: %+v", res)
		}
		q = pending(e, id)
		if q.Kind != session.RequestSelect || q.HookIndex != 1 {
			t.Fatalf("second question %+v", q)
		}
		if _, err := e.r.Resolve(ctx, id, q.ID, agentrt.Resolution{Selected: []string{"staging"}}); err != nil {
			t.Fatal(err)
		}
		if res := e.resume(t, id); res.Status != session.StatusDone || runs.Load() != 1 {
			t.Fatalf("%+v (runs %d)", res, runs.Load())
		}
		if len(seen) == 0 || seen[len(seen)-1].Text != "T-1" || len(second) != 1 || second[0].Selected[0] != "staging" {
			t.Fatalf("first hook saw %+v, second %+v", seen, second)
		}
	})

	t.Run("a malformed question announces no call", func(t *testing.T) {
		var runs atomic.Int32
		var seen []*session.InputResolved
		both := scripted.Reply{ToolCalls: []scripted.Call{scripted.ToolCall("deploy", `{"env":"dev"}`), scripted.ToolCall("deploy", `{"env":"prod"}`)}}
		m := scripted.New("m", both)
		a := newAgent(m, &runs, nil, &seen)
		a.Hooks = agentrt.Hooks{}
		a.Hooks.BeforeTool(0, func(_ context.Context, _ agentrt.HookInfo, call model.ToolCall) agentrt.ToolDecision {
			if strings.Contains(string(call.Arguments), "prod") {
				return agentrt.ToolDecision{Ask: &agentrt.Ask{Kind: session.RequestSelect, Question: "sure?"}}
			}
			return agentrt.ToolDecision{}
		})
		e := newEnv(t, nil, agentrt.Config{}, a)
		id := e.session(t, "calc")
		if res := e.run(t, id, "deploy"); res.Status != session.StatusFailed || runs.Load() != 0 {
			t.Fatalf("%+v (runs %d)", res, runs.Load())
		}
		for ev, err := range e.store.Events(ctx, id, 0) {
			if err != nil {
				t.Fatal(err)
			}
			if ev.Type == session.TypeToolCall {
				t.Errorf("a tool_call was committed for a call that never ran: %+v", ev.Data)
			}
		}
	})

	t.Run("a select without options fails the run", func(t *testing.T) {
		var runs atomic.Int32
		var seen []*session.InputResolved
		m := scripted.New("m", deploy("prod"))
		e := newEnv(t, nil, agentrt.Config{}, newAgent(m, &runs, &agentrt.Ask{Kind: session.RequestSelect, Question: "which?"}, &seen))
		id := e.session(t, "calc")
		res := e.run(t, id, "deploy")
		if res.Status != session.StatusFailed || res.Err == nil || res.Err.Code != "bad_instruction" || !strings.Contains(res.Err.Message, "a select without options") || runs.Load() != 0 {
			t.Fatalf("%+v (runs %d)", res, runs.Load())
		}
	})
}
