package agentrt_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/model/scripted"
	"github.com/agentrt/agentrt/session"
	"github.com/agentrt/agentrt/session/memstore"
)

// calcCalls returns n replies that each call the calculator (with
// different expressions, so that no loop guard fires), each reporting
// usage u, then an answer.
func calcCalls(n int, u model.Usage) []scripted.Reply {
	var rs []scripted.Reply
	for i := range n {
		rs = append(rs, scripted.Reply{Usage: &u, ToolCalls: []scripted.Call{
			scripted.ToolCall("calculator", `{"expression":"`+strings.Repeat("1+", i)+`1"}`)}})
	}
	return append(rs, scripted.Reply{Text: "done", Usage: &u})
}

func budgetEnv(t *testing.T, store session.Store, l agentrt.Limits, replies []scripted.Reply) *env {
	a := calcAgent(scripted.New("m", replies...), registry(t))
	l.MaxRounds = 50
	a.Limits = l
	return newEnv(t, store, agentrt.Config{}, a)
}

// pausedFor checks that res paused for code, with an error event saying
// msg.
func pausedFor(t *testing.T, res *agentrt.Result, code, msg string) {
	t.Helper()
	if res.Status != session.StatusPaused || res.Reason != code {
		t.Fatalf("run: %s %s, want paused %s", res.Status, res.Reason, code)
	}
	if res.Err == nil || res.Err.Code != code || !res.Err.Recoverable || res.Err.Message != msg {
		t.Fatalf("error event %+v,\nwant %s: %q", res.Err, code, msg)
	}
}

// limits.max_steps: the batch that would go past it waits; a resume
// allows as many again.
func TestBudgetMaxSteps(t *testing.T) {
	store := memstore.New()
	e := budgetEnv(t, store, agentrt.Limits{MaxSteps: 2}, calcCalls(5, model.Usage{}))
	id := e.session(t, "calc")
	res := e.run(t, id, "go")
	pausedFor(t, res, "max_steps", "the turn has run 2 tool calls and the model asks for 1 more; limits.max_steps is 2. Resume the session to allow 2 more, or raise the limit")
	if n := len(toolResults(storedLog(t, store, id))); n != 2 {
		t.Fatalf("%d calls ran, want 2", n)
	}
	res = e.resume(t, id)
	pausedFor(t, res, "max_steps", "the turn has run 2 tool calls and the model asks for 1 more; limits.max_steps is 2. Resume the session to allow 2 more, or raise the limit")
	res = e.resume(t, id)
	if res.Status != session.StatusDone || len(toolResults(storedLog(t, store, id))) != 5 {
		t.Fatalf("last resume: %s, %d calls", res.Status, len(toolResults(storedLog(t, store, id))))
	}
}

// limits.max_tokens: checked before each model call with the request's
// estimated size; the first call of a turn always goes.
func TestBudgetMaxTokens(t *testing.T) {
	e := budgetEnv(t, nil, agentrt.Limits{MaxTokens: 400}, calcCalls(5, model.Usage{InputTokens: 100, OutputTokens: 50}))
	id := e.session(t, "calc")
	res := e.run(t, id, "go")
	// 2 calls used 300 tokens; the third request is ~40 tokens: it goes
	// (340 < 400) and brings the turn to 450.
	if !strings.HasPrefix(res.Err.Message, "the turn has used 450 tokens and the next request is about ") ||
		!strings.HasSuffix(res.Err.Message, " more; limits.max_tokens is 400. Resume the session to allow 400 more, or raise the limit") {
		t.Fatalf("message %q", res.Err.Message)
	}
	if res.Status != session.StatusPaused || res.Reason != "max_tokens" || res.Usage.InputTokens != 300 {
		t.Fatalf("run: %s %s, usage %+v", res.Status, res.Reason, res.Usage)
	}
}

// The estimate stops a call that would cross the limit before it is made.
func TestBudgetMaxTokensEstimate(t *testing.T) {
	long := strings.Repeat("a long question ", 100) // ~400 tokens
	rs := []scripted.Reply{
		{Usage: &model.Usage{InputTokens: 10, OutputTokens: 10}, ToolCalls: []scripted.Call{scripted.ToolCall("calculator", `{"expression":"1+1"}`)}},
		{Text: "2"},
	}
	e := budgetEnv(t, nil, agentrt.Limits{MaxTokens: 300}, rs)
	id := e.session(t, "calc")
	res := e.run(t, id, long)
	if res.Reason != "max_tokens" || !strings.HasPrefix(res.Err.Message, "the turn has used 20 tokens and the next request is about 4") {
		t.Fatalf("run: %s %s %+v", res.Status, res.Reason, res.Err)
	}
}

// limits.session_max_cost_usd counts every turn, and a resume does not
// renew it.
func TestBudgetSessionCost(t *testing.T) {
	u := model.Usage{InputTokens: 10, CostUSD: 0.4}
	rs := []scripted.Reply{{Text: "one", Usage: &u}, {Text: "two", Usage: &u}, {Text: "three", Usage: &u}}
	e := budgetEnv(t, nil, agentrt.Limits{SessionMaxCostUSD: 0.5}, rs)
	id := e.session(t, "calc")
	// The model is not priced: its cost is known once it answered, so the
	// second turn goes (0.4 < 0.5) and the third waits.
	for _, text := range []string{"first", "second"} {
		if res := e.run(t, id, text); res.Status != session.StatusDone {
			t.Fatalf("%s turn: %s", text, res.Status)
		}
	}
	res := e.run(t, id, "third")
	pausedFor(t, res, "session_max_cost_usd", "the session has cost $0.8000; limits.session_max_cost_usd is $0.5000. Raise the limit, then resume the session")
	if res := e.resume(t, id); res.Reason != "session_max_cost_usd" {
		t.Fatalf("resume without raising it: %s %s", res.Status, res.Reason)
	}
}

// limits.max_turn_duration, on the runner's clock (a test clock that moves
// 1 ms a reading).
func TestBudgetTurnDuration(t *testing.T) {
	a := calcAgent(scripted.New("m", calcCalls(20, model.Usage{})...), registry(t))
	a.Limits = agentrt.Limits{MaxRounds: 50, MaxTurnDuration: 20 * time.Millisecond}
	e := newEnv(t, nil, agentrt.Config{}, a)
	id := e.session(t, "calc")
	res := e.run(t, id, "go")
	if res.Status != session.StatusPaused || res.Reason != "max_turn_duration" ||
		!strings.Contains(res.Err.Message, "; limits.max_turn_duration is 20ms. Resume the session to give it another 20ms, or raise the limit") {
		t.Fatalf("run: %s %s %+v", res.Status, res.Reason, res.Err)
	}
	if res := e.resume(t, id); res.Reason != "max_turn_duration" || len(toolResults(res.Events)) == 0 {
		t.Fatalf("resume: %s %s, %d calls: a resume gives the turn its time again", res.Status, res.Reason, len(toolResults(res.Events)))
	}
}

// A negative limit is refused when the runner is made.
func TestBudgetBadLimits(t *testing.T) {
	for l, want := range map[agentrt.Limits]string{
		{MaxTokens: -1}:                 `agent "calc": limits: max_tokens is negative (-1)`,
		{SessionMaxCostUSD: -0.5}:       `agent "calc": limits: session_max_cost_usd is negative (-0.5)`,
		{MaxTurnDuration: -time.Second}: `agent "calc": limits: max_turn_duration is negative (-1s)`,
		{MaxSteps: -3}:                  `agent "calc": limits: max_steps is negative (-3)`,
	} {
		a := calcAgent(scripted.New("m"), registry(t))
		a.Limits = l
		_, err := agentrt.NewRunner(agentrt.Config{Store: memstore.New(), Agents: []*agentrt.Agent{a}})
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%+v: %v, want %q", l, err, want)
		}
	}
	_ = context.Background
}

// With a priced model, the request's estimated cost counts before the
// call is made.
func TestBudgetMaxCostEstimate(t *testing.T) {
	rs := []scripted.Reply{
		{Usage: &model.Usage{InputTokens: 100}, ToolCalls: []scripted.Call{scripted.ToolCall("calculator", `{"expression":"1+1"}`)}},
		{Text: "2"},
	}
	a := calcAgent(model.Priced(scripted.New("m", rs...), model.Price{Input: 1000, Output: 1000}), registry(t)) // $1 per 1,000 tokens
	a.Limits = agentrt.Limits{MaxCostUSD: 0.5}
	e := newEnv(t, nil, agentrt.Config{}, a)
	id := e.session(t, "calc")
	res := e.run(t, id, strings.Repeat("a long question ", 150)) // ~600 tokens
	if res.Reason != "max_cost_usd" || !strings.HasPrefix(res.Err.Message, "the turn has cost $0.1000 and the next request about $0.6") {
		t.Fatalf("run: %s %s %+v", res.Status, res.Reason, res.Err)
	}
}
