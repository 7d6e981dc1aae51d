package gateway_test

import (
	"context"
	"strings"
	"testing"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/gateway"
	"github.com/agentrt/agentrt/model/scripted"
	"github.com/agentrt/agentrt/session"
	"github.com/agentrt/agentrt/session/memstore"
	"github.com/agentrt/agentrt/tool"
	"github.com/agentrt/agentrt/tool/builtin"
)

// promptEnv is a gateway whose agent asks the user "Which order?" with
// ask_user, then says replies.
func promptEnv(t *testing.T, cfg gateway.Config, replies ...scripted.Reply) (*memstore.Store, *agentrt.Runner, *gateway.Gateway) {
	t.Helper()
	store := memstore.New()
	reg, err := tool.NewRegistry(builtin.AskUser())
	if err != nil {
		t.Fatal(err)
	}
	ask := scripted.Reply{ToolCalls: []scripted.Call{scripted.ToolCall("ask_user", `{"question":"Which order?"}`)}}
	r, err := agentrt.NewRunner(agentrt.Config{Store: store, Agents: []*agentrt.Agent{{Name: "assistant",
		Model: scripted.New("m", append([]scripted.Reply{ask}, replies...)...), Tools: reg}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close(context.Background()) })
	cfg.Runner = r
	g, err := gateway.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return store, r, g
}

// answer submits text from source chat and runs its turn here.
func answer(t *testing.T, g *gateway.Gateway, text, key string, meta map[string]string) *gateway.Submitted {
	t.Helper()
	ctx := context.Background()
	sub, err := g.Submit(ctx, gateway.Input{Source: "chat", Text: text, Key: key, Metadata: meta})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Answer(ctx, sub, nil); err != nil {
		t.Fatal(err)
	}
	return sub
}

// Under prompts: answer, input to a session that waits on a question in
// words answers it: the run goes on with it as the call's result, the
// input is marked answered by that run in the answer's commit, and the
// same input again (its key) is a duplicate, answering nothing twice.
// Under the default (policy), the same input interrupts the waiting run
// and starts a turn of its own.
func TestPromptsAnswer(t *testing.T) {
	ctx := session.WithTenant(context.Background(), session.DefaultTenant)
	t.Run("answer", func(t *testing.T) {
		store, r, g := promptEnv(t, gateway.Config{Prefixes: map[string]gateway.SourceConfig{"ch": {Prompts: gateway.PromptsAnswer}}},
			scripted.Reply{Text: "Refunding 43.", Expect: &scripted.Expect{LastToolResultContains: "order 43"}})
		answer(t, g, "I need a refund", "m1", nil)
		if reqs, _ := r.PendingRequests(ctx, session.RequestListOptions{SessionID: "chat"}); len(reqs) != 1 {
			t.Fatalf("%d requests pending, want the question", len(reqs))
		}
		sub := answer(t, g, "order 43", "m2", map[string]string{gateway.MetaSenderName: "Ana"})
		st, err := r.Load(ctx, "chat")
		if err != nil {
			t.Fatal(err)
		}
		if st.Status == session.StatusWaiting || len(st.Requests) != 0 || st.Messages[len(st.Messages)-1].Text() != "Refunding 43." {
			t.Fatalf("the session is %s with %d requests, want answered", st.Status, len(st.Requests))
		}
		ins, _ := store.Inputs(ctx, "chat", 0, 0)
		if len(ins) != 2 || ins[1].State != session.InputAnswered || ins[1].RunID != ins[0].RunID {
			t.Fatalf("the inputs: %+v", ins)
		}
		var res *session.InputResolved
		runs := 0
		for ev, err := range store.Events(ctx, "chat", 0) {
			if err != nil {
				t.Fatal(err)
			}
			switch d := ev.Data.(type) {
			case *session.InputResolved:
				res = d
			case *session.RunStarted:
				runs++
			}
		}
		if res == nil || res.Text != "order 43" || res.By != "Ana (chat)" || len(res.Inputs) != 1 || res.Inputs[0] != sub.ID || runs != 1 {
			t.Errorf("the answer %+v, %d runs", res, runs)
		}
		again, err := g.Submit(ctx, gateway.Input{Source: "chat", Text: "order 43", Key: "m2", Metadata: map[string]string{gateway.MetaSenderName: "Ana"}})
		if err != nil || !again.Duplicate {
			t.Errorf("the same input again: %+v %v", again, err)
		}
	})
	t.Run("policy", func(t *testing.T) {
		_, r, g := promptEnv(t, gateway.Config{}, scripted.Reply{Text: "Hello again.", Expect: &scripted.Expect{LastUserContains: "order 43"}})
		answer(t, g, "I need a refund", "m1", nil)
		answer(t, g, "order 43", "m2", nil)
		st, err := r.Load(ctx, "chat")
		if err != nil {
			t.Fatal(err)
		}
		if len(st.Requests) != 0 || !strings.Contains(st.Messages[len(st.Messages)-1].Text(), "Hello again.") {
			t.Errorf("the session: %s, %d requests, last %q", st.Status, len(st.Requests), st.Messages[len(st.Messages)-1].Text())
		}
	})
	t.Run("bad", func(t *testing.T) {
		_, r, _ := promptEnv(t, gateway.Config{})
		for _, cfg := range []gateway.Config{{Runner: r, Prompts: "always"}, {Runner: r, Prefixes: map[string]gateway.SourceConfig{"tg:": {Prompts: "yes"}}}} {
			if _, err := gateway.New(cfg); err == nil || !strings.Contains(err.Error(), "is not answer or policy") {
				t.Errorf("prompts %+v: %v", cfg, err)
			}
		}
	})
}
