package agentrt_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/model/scripted"
	"github.com/agentrt/agentrt/session"
	"github.com/agentrt/agentrt/session/storetest"
)

// A request with a deadline gets its default decision once it passes,
// from the next process that touches the session, or from Recover.
func TestRequestExpiry(t *testing.T) {
	for _, via := range []string{"resume", "recover"} {
		t.Run(via, func(t *testing.T) {
			var runs atomic.Int32
			clock := storetest.NewClock(time.Date(2026, 5, 1, 9, 0, 0, 0, time.UTC))
			m := scripted.New("m",
				scripted.Reply{ToolCalls: []scripted.Call{scripted.ToolCall("deploy", `{"env":"prod"}`)}},
				scripted.Reply{Text: "not deployed", Expect: &scripted.Expect{LastToolResultContains: "rejected this call: expired"}},
			)
			a := calcAgent(m, registry(t, askTool(t, &runs)))
			a.Approval = agentrt.ApprovalPolicy{ExpiresFor: map[string]time.Duration{"dep*": time.Hour}}
			e := newEnv(t, nil, agentrt.Config{Now: clock.Now}, a)
			id := e.session(t, "calc")
			res := e.run(t, id, "deploy")
			req := res.Events[len(res.Events)-2].Data.(*session.InputRequired)
			if req.Expires == nil || !req.Expires.Equal(clock.Now().Add(time.Hour)) {
				t.Fatalf("request expires %v", req.Expires)
			}
			// Before the deadline nothing happens.
			if _, err := agentrt.Collect(e.r.Resume(context.Background(), id)); errCode(err) != "waiting" {
				t.Fatalf("resume before the deadline: %v", err)
			}
			clock.Advance(time.Hour)
			switch via {
			case "resume":
				res = e.resume(t, id)
			case "recover":
				runs, err := e.r.Recover(context.Background())
				if err != nil || len(runs) != 1 {
					t.Fatalf("recover: %d runs, %v", len(runs), err)
				}
				r, err := runs[0].Wait(context.Background())
				if err != nil {
					t.Fatal(err)
				}
				res = r
			}
			if res.Status != session.StatusDone || res.Text != "not deployed" || runs.Load() != 0 {
				t.Fatalf("after the deadline: %+v (deploy ran %d)", res, runs.Load())
			}
			var d *session.InputResolved
			for _, ev := range storedLog(t, e.store, id) {
				if x, ok := ev.Data.(*session.InputResolved); ok {
					d = x
				}
			}
			if d == nil || d.By != "system" || d.Reason != "expired" || d.Decision != "reject" {
				t.Errorf("resolution %+v", d)
			}
		})
	}
}

// Standing decisions: "always" answers stand for later calls, in the
// session or for the agent, are recorded, listed and revocable.
func TestStandingDecisions(t *testing.T) {
	var runs atomic.Int32
	deployCall := func(env string) scripted.Reply {
		return scripted.Reply{ToolCalls: []scripted.Call{scripted.ToolCall("deploy", fmt.Sprintf(`{"env":%q}`, env))}}
	}
	ok := scripted.Reply{Text: "ok"}
	m := scripted.New("m",
		deployCall("prod"), ok, // asks; approved always (session, tool)
		deployCall("staging"), ok, // no question: the rule stands
		deployCall("prod"), ok, // new session: asks; approved always for the agent, these arguments
		deployCall("prod"), ok, // third session: the agent rule stands
		deployCall("dev"), ok, // other arguments: asks
	)
	e := newEnv(t, nil, agentrt.Config{}, calcAgent(m, registry(t, askTool(t, &runs))))
	ctx := context.Background()
	approveAlways := func(id string, a agentrt.Always) {
		t.Helper()
		st, err := e.r.Load(ctx, id)
		if err != nil || len(st.Requests) != 1 {
			t.Fatalf("%s: requests %+v %v", id, st, err)
		}
		if _, err := e.r.Resolve(ctx, id, st.Requests[0].ID, agentrt.Resolution{Decision: "approve", By: "ana", Always: &a}); err != nil {
			t.Fatal(err)
		}
		if res := e.resume(t, id); res.Status != session.StatusDone {
			t.Fatalf("%s: %+v", id, res)
		}
	}
	s1 := e.session(t, "calc")
	if res := e.run(t, s1, "deploy prod"); res.Status != session.StatusWaiting {
		t.Fatalf("%+v", res)
	}
	approveAlways(s1, agentrt.Always{})
	res := e.run(t, s1, "deploy staging")
	if res.Status != session.StatusDone || runs.Load() != 2 {
		t.Fatalf("the session rule did not stand: %+v (runs %d)", res, runs.Load())
	}
	var ruled string
	for _, ev := range res.Events {
		if d, ok := ev.Data.(*session.ToolCall); ok {
			ruled = d.Rule
		}
	}
	if ruled == "" {
		t.Error("the tool_call does not name the rule that approved it")
	}

	s2 := e.session(t, "calc")
	if res := e.run(t, s2, "deploy prod"); res.Status != session.StatusWaiting {
		t.Fatalf("a new session asks again: %+v", res)
	}
	approveAlways(s2, agentrt.Always{Scope: "agent", Match: "arguments"})
	s3 := e.session(t, "calc")
	if res := e.run(t, s3, "deploy prod"); res.Status != session.StatusDone {
		t.Fatalf("the agent rule did not stand in another session: %+v", res)
	}
	if res := e.run(t, s3, "deploy dev"); res.Status != session.StatusWaiting {
		t.Fatalf("other arguments should ask: %+v", res)
	}
	rules, err := e.r.Rules(ctx, s3)
	if err != nil || len(rules) != 1 || rules[0].Scope != "agent" || string(rules[0].Arguments) != `{"env":"prod"}` || rules[0].By != "ana" {
		t.Fatalf("rules of s3: %+v %v", rules, err)
	}
	// Revoked: it no longer stands.
	if err := e.r.RevokeRule(ctx, s3, rules[0].ID, "bob", "too broad"); err != nil {
		t.Fatal(err)
	}
	if rules, _ := e.r.AgentRules(ctx, "calc"); len(rules) != 0 {
		t.Errorf("agent rules after revocation: %+v", rules)
	}
	s1rules, _ := e.r.Rules(ctx, s1)
	if len(s1rules) != 1 || s1rules[0].Scope != "session" {
		t.Fatalf("s1 rules: %+v", s1rules)
	}
	if err := e.r.RevokeRule(ctx, s1, s1rules[0].ID, "bob", ""); err != nil {
		t.Fatal(err)
	}
	if rules, _ := e.r.Rules(ctx, s1); len(rules) != 0 {
		t.Errorf("s1 rules after revocation: %+v", rules)
	}
	if err := e.r.RevokeRule(ctx, s1, "rule_nope", "bob", ""); errCode(err) != "unknown_rule" {
		t.Errorf("revoking an unknown rule: %v", err)
	}
	// Bad "always": on an edit, with an unknown scope.
	st, _ := e.r.Load(ctx, s3)
	for _, tc := range []agentrt.Resolution{
		{Decision: "edit", Arguments: json.RawMessage(`{"env":"dev"}`), Always: &agentrt.Always{}},
		{Decision: "approve", Always: &agentrt.Always{Scope: "planet"}},
		{Decision: "approve", Always: &agentrt.Always{Match: "vibes"}},
	} {
		if _, err := e.r.Resolve(ctx, s3, st.Requests[0].ID, tc); errCode(err) != "bad_rule" {
			t.Errorf("%+v: %v", tc.Always, err)
		}
	}
}
