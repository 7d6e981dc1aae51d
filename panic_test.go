package agentrt_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/model/scripted"
	"github.com/agentrt/agentrt/session"
)

// A policy or an executor of the caller's that panics fails the step — an
// error event with code panic and the stack, the run failed — and the
// process and every other session live on; what the step applied before
// it panicked is not stored.
func TestPanicsFailTheStep(t *testing.T) {
	for _, where := range []string{"executor", "policy"} {
		t.Run(where, func(t *testing.T) {
			a := calcAgent(scripted.New("m"), nil)
			a.Policy = agentrt.PolicyFunc(func(ctx context.Context, a *agentrt.Agent, s *agentrt.State) (agentrt.Instruction, error) {
				if where == "policy" {
					panic(errors.New("the policy gave up"))
				}
				return agentrt.Instruction{Kind: "boom"}, nil
			})
			a.Executors = map[agentrt.Kind]agentrt.Executor{"boom": func(ctx context.Context, x *agentrt.Exec, ins agentrt.Instruction) error {
				x.Emit(&session.Final{Text: "half done"})
				panic("the executor gave up")
			}}
			ok := calcAgent(scripted.New("m2", scripted.Reply{Text: "fine"}), nil)
			ok.Name = "ok"
			e := newEnv(t, nil, agentrt.Config{}, a, ok)
			res, err := e.r.Send(context.Background(), "s1", agentrt.Input{Text: "go", Agent: "calc"})
			if res == nil || res.Status != session.StatusFailed {
				t.Fatalf("run: %+v %v", res, err)
			}
			if res.Err == nil || res.Err.Code != agentrt.CodePanic || !strings.Contains(res.Err.Stack, "panic_test.go") {
				t.Fatalf("error event %+v, want code panic with the stack", res.Err)
			}
			want := "the boom executor panicked: the executor gave up"
			if where == "policy" {
				want = "the policy panicked: the policy gave up"
			}
			if res.Err.Message != want {
				t.Errorf("message %q, want %q", res.Err.Message, want)
			}
			for _, ev := range storedLog(t, e.store, "s1") {
				if ev.Type == session.TypeFinal {
					t.Errorf("the panicking step's event was stored: %+v", ev.Data)
				}
			}
			// Another session runs on.
			if res, err := e.r.Send(context.Background(), "s2", agentrt.Input{Text: "go", Agent: "ok"}); err != nil || res.Text != "fine" {
				t.Fatalf("another session: %+v %v", res, err)
			}
		})
	}
}

// A prompt or a selection carries what its asker attached for whoever
// answers, through the log and the state.
func TestRequestMetadata(t *testing.T) {
	meta := map[string]any{"placeholder": "order number", "ticket": float64(42)}
	a := calcAgent(scripted.New("m"), nil)
	a.Policy = agentrt.PolicyFunc(func(ctx context.Context, a *agentrt.Agent, s *agentrt.State) (agentrt.Instruction, error) {
		if len(s.Requests) > 0 {
			return agentrt.Instruction{Kind: agentrt.KindWait}, nil
		}
		return agentrt.Instruction{Kind: agentrt.KindAskHuman, Ask: &agentrt.Ask{Kind: session.RequestPrompt, Question: "which order?", Metadata: meta}}, nil
	})
	e := newEnv(t, nil, agentrt.Config{}, a)
	res, _ := e.r.Send(context.Background(), "s1", agentrt.Input{Text: "go", Agent: "calc"})
	if res == nil || res.Status != session.StatusWaiting {
		t.Fatalf("run: %+v", res)
	}
	st, err := e.r.Load(context.Background(), "s1")
	if err != nil || len(st.Requests) != 1 {
		t.Fatalf("state: %+v %v", st, err)
	}
	if diff := cmp.Diff(meta, st.Requests[0].Metadata); diff != "" {
		t.Errorf("request metadata (-want +got):\n%s", diff)
	}
	for _, ev := range storedLog(t, e.store, "s1") {
		if ev.Type != session.TypeInputRequired {
			continue
		}
		b, err := json.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		var back session.Event
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(meta, back.Data.(*session.InputRequired).Metadata); diff != "" {
			t.Errorf("metadata through JSON (-want +got):\n%s", diff)
		}
	}
}
