package temporal_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/model/scripted"
	"github.com/agentrt/agentrt/session"
	"github.com/agentrt/agentrt/session/memstore"
	"github.com/agentrt/agentrt/temporal"
	"github.com/agentrt/agentrt/tool"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"
)

// A parent canceled while its sub-agent's turn runs as a child workflow
// (the child's tool waiting, for ever unless canceled): the cancellation
// reaches the child's run and its tool, the child workflow ends, and so
// does the parent's turn — canceled, both.
func TestReviewParentCanceledWhileChildWorkflowRuns(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	s.SetLogger(log.NewStructuredLogger(slog.New(slog.DiscardHandler)))
	env := s.NewTestWorkflowEnvironment()
	env.SetTestTimeout(20 * time.Second)
	store := memstore.New()
	tctx := session.WithTenant(context.Background(), session.DefaultTenant)
	started := make(chan struct{}, 1)
	wait := tool.Must(tool.New("wait", "waits", func(ctx context.Context, _ struct{}) (string, error) {
		started <- struct{}{}
		<-ctx.Done() // only a cancellation ends it
		return "", ctx.Err()
	}))
	calcTools, err := tool.NewRegistry(wait)
	if err != nil {
		t.Fatal(err)
	}
	reg, err := tool.NewRegistry(agentrt.SubAgent("calc", "computes"))
	if err != nil {
		t.Fatal(err)
	}
	boss := &agentrt.Agent{Name: "boss", Tools: reg, Model: scripted.New("boss",
		scripted.Reply{ToolCalls: []scripted.Call{scripted.ToolCall("calc", `{"task":"compute 6*7"}`)}},
		scripted.Reply{Text: "never said"})}
	calc := &agentrt.Agent{Name: "calc", Tools: calcTools, Model: scripted.New("calc",
		scripted.Reply{ToolCalls: []scripted.Call{scripted.ToolCall("wait", `{}`)}},
		scripted.Reply{Text: "never said either"})}
	agents := []*agentrt.Agent{boss, calc}
	serve, dr := engineRunners(t, env, store, agents, agentrt.Config{ControlPoll: 5 * time.Millisecond})
	var child string
	canceled := make(chan error, 1)
	env.SetOnChildWorkflowStartedListener(func(info *workflow.Info, _ workflow.Context, args converter.EncodedValues) {
		var in temporal.SessionInput
		_ = args.Get(&in)
		child = in.SessionID
		go func() {
			<-started // the child's tool runs
			_, err := serve.Cancel(context.Background(), "p1", "never mind")
			canceled <- err
		}()
	})
	h, err := serve.Start(context.Background(), "p1", agentrt.Input{Agent: "boss", Text: "what is 6*7?"})
	if err != nil {
		t.Fatal(err)
	}
	d := dr.next(t)
	env.ExecuteWorkflow(temporal.WorkflowName, temporal.SessionInput{Tenant: d.Tenant, SessionID: d.SessionID, Next: &d})
	continuedAsNew(t, env)
	if err := <-canceled; err != nil {
		t.Fatal(err)
	}
	res, err := h.Wait(context.Background())
	if err != nil || res.Status != session.StatusCanceled {
		t.Fatalf("the parent's run: %+v %v", res, err)
	}
	if !strings.HasPrefix(child, "p1.") {
		t.Fatalf("no child workflow: %q", child)
	}
	cs, err := store.GetSession(tctx, child)
	if err != nil || cs.Status != session.StatusCanceled {
		t.Fatalf("the child's session: %+v %v", cs, err)
	}
}

// A step that left a delegation whose answer the workflow never got (its
// activity timed out as the worker answered; the workflow steps the
// session again, on the shared queue, elsewhere) does not keep the
// session held for ever: the child's turn nobody starts is given up, and
// the retried step goes through within a few lease TTLs. Otherwise the
// workflow retries its step for ever (lease_held).
func TestReviewLostDelegationDoesNotHoldTheSession(t *testing.T) {
	store := memstore.New()
	agents := bossAndCalc(t)
	const ttl = 100 * time.Millisecond
	dr := make(drives, 4)
	mk := func(owner string) *agentrt.Runner {
		r, err := agentrt.NewRunner(agentrt.Config{Store: store, Agents: agents, Owner: owner, Engine: dr, EngineName: temporal.EngineName, LeaseTTL: ttl})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = r.Close(context.Background()) })
		return r
	}
	serve, w1, w2 := mk("serve"), mk("worker-1"), mk("worker-2")
	if _, err := serve.Start(context.Background(), "p1", agentrt.Input{Agent: "boss", Text: "what is 6*7?"}); err != nil {
		t.Fatal(err)
	}
	d := dr.next(t)
	a1 := &temporal.Activities{Runner: w1, Options: temporal.Options{Queue: "worker-1"}}
	a2 := &temporal.Activities{Runner: w2, Options: temporal.Options{Queue: "worker-2"}}
	in := temporal.StepInput{Tenant: d.Tenant, SessionID: d.SessionID, RunID: d.RunID, Calls: true}
	ctx := context.Background()
	if _, err := a1.Step(ctx, in); err != nil { // the model call
		t.Fatal(err)
	}
	res, err := a1.Step(ctx, in) // the delegation: its child's turn begun
	if err != nil || len(res.Calls) != 1 || res.Calls[0].Child == nil {
		t.Fatalf("the step: %+v %v", res, err)
	}
	// The workflow never got res: it would step the session again,
	// elsewhere — which worker-1 must let it do, giving the batch up
	// (worker-2's step then follows the child's turn inside it, which
	// the engine runs: not here).
	_ = a2
	deadline := time.Now().Add(20 * ttl)
	for {
		s, err := store.GetSession(session.WithTenant(ctx, d.Tenant), "p1")
		if err != nil {
			t.Fatal(err)
		}
		if s.Lease == nil || s.Lease.Owner != "worker-1" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("worker-1 holds the session after 20 lease TTLs (the workflow would retry its step for ever): %+v", s.Lease)
		}
		time.Sleep(ttl / 4) // polled: the store has no notification of it
	}
}
