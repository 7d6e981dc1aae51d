package agentrt_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/model/scripted"
	"github.com/agentrt/agentrt/session"
	"github.com/agentrt/agentrt/session/memstore"
	"github.com/agentrt/agentrt/tool"
	"github.com/agentrt/agentrt/tool/builtin"
)

// Several runners (processes) answer a session's requests at once with
// ResolveAndContinue: each answer is recorded once, the run continues
// exactly once — in the runner that recorded the last answer — and an
// answer to a request answered first says so.
func TestResolveAndContinueExactlyOnce(t *testing.T) {
	for trial := range 20 {
		t.Run(fmt.Sprint(trial), func(t *testing.T) {
			store := memstore.New()
			mkAgent := func() *agentrt.Agent {
				a := calcAgent(scripted.New("m",
					scripted.Reply{ToolCalls: []scripted.Call{
						{ID: "c1", Name: "calculator", Arguments: `{"expression":"1+1"}`},
						{ID: "c2", Name: "calculator", Arguments: `{"expression":"2+2"}`},
					}},
					scripted.Reply{Text: "done"}).ByConversation(), nil)
				reg, err := tool.NewRegistry(tool.WithMeta(builtin.Calculator(), tool.Meta{Approval: tool.ApprovalAsk}))
				if err != nil {
					t.Fatal(err)
				}
				a.Tools = reg
				return a
			}
			var runners []*agentrt.Runner
			for i := range 3 {
				r, err := agentrt.NewRunner(agentrt.Config{Store: store, Agents: []*agentrt.Agent{mkAgent()}, Owner: fmt.Sprintf("host-%d:%d:x", i, i)})
				if err != nil {
					t.Fatal(err)
				}
				runners = append(runners, r)
			}
			ctx := context.Background()
			res, _ := runners[0].Send(ctx, "s1", agentrt.Input{Text: "go", Agent: "calc"})
			if res == nil || res.Status != session.StatusWaiting {
				t.Fatalf("first turn: %+v", res)
			}
			st, err := runners[0].Load(ctx, "s1")
			if err != nil || len(st.Requests) != 2 {
				t.Fatalf("requests: %+v %v", st, err)
			}
			// The first request from two runners, the second from a third.
			reqs := []string{st.Requests[0].ID, st.Requests[0].ID, st.Requests[1].ID}
			outs := make([]*agentrt.Resolved, 3)
			errs := make([]error, 3)
			var wg sync.WaitGroup
			for i, r := range runners {
				wg.Go(func() {
					outs[i], errs[i] = r.ResolveAndContinue(ctx, "s1", reqs[i], agentrt.Resolution{Decision: session.DecisionApprove, By: fmt.Sprint("p", i)})
				})
			}
			wg.Wait()
			if (errs[0] == nil) == (errs[1] == nil) {
				t.Fatalf("the same request twice: %v and %v, want one answer recorded", errs[0], errs[1])
			}
			for i, err := range errs[:2] {
				if err != nil && errCode(err) != agentrt.CodeAlreadyResolved {
					t.Fatalf("runner %d: %v, want already_resolved", i, err)
				}
			}
			if errs[2] != nil {
				t.Fatalf("the other request: %v", errs[2])
			}
			var continued []*agentrt.Run
			for _, o := range outs {
				if o != nil && o.Run != nil {
					continued = append(continued, o.Run)
				}
			}
			if len(continued) != 1 {
				t.Fatalf("%d runs continued, want 1", len(continued))
			}
			if res, err := continued[0].Wait(ctx); err != nil || res.Status != session.StatusDone {
				t.Fatalf("the run: %+v %v", res, err)
			}
			log := storedLog(t, store, "s1")
			if n := len(eventsOf[session.RunResumed](log)); n != 1 {
				t.Errorf("%d run_resumed", n)
			}
			if n := len(eventsOf[session.InputResolved](log)); n != 2 {
				t.Errorf("%d input_resolved", n)
			}
		})
	}
}
