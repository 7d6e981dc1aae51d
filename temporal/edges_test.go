package temporal_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/model/scripted"
	"github.com/agentrt/agentrt/session"
	"github.com/agentrt/agentrt/session/memstore"
	"github.com/agentrt/agentrt/temporal"
	"github.com/agentrt/agentrt/tool"
	temporalsdk "go.temporal.io/sdk/temporal"
)

// A waiting run canceled by a person stays canceled when its request's
// deadline timer fires (it was resumed, as a retry).
func TestCanceledWhileWaitingStaysCanceled(t *testing.T) {
	g := newRig(t, time.Hour,
		scripted.Reply{ToolCalls: []scripted.Call{scripted.ToolCall("deploy", `{"env":"prod"}`)}},
		scripted.Reply{Text: "revived after the cancel"})
	d := g.start(t, "deploy")
	g.env.RegisterDelayedCallback(func() {
		if _, err := g.serve.Cancel(context.Background(), "s1", "the person left"); err != nil {
			t.Error(err)
		}
	}, 10*time.Minute)
	g.env.ExecuteWorkflow(temporal.WorkflowName, temporal.SessionInput{Tenant: d.Tenant, SessionID: d.SessionID, Next: &d})
	continuedAsNew(t, g.env)
	st, _ := g.worker.Load(context.Background(), "s1")
	t.Logf("log: %v", g.events(t, "s1"))
	if st.Status != session.StatusCanceled {
		t.Errorf("the canceled run ended %s (final %q): the expiry timer resumed it", st.Status, st.Final)
	}
}

// Activities.Resume on a session already running (answered and continued
// meanwhile) records nothing (it recorded a resumption "recovered").
func TestResumeOnARunningRun(t *testing.T) {
	g := newRig(t, 0, scripted.Reply{Text: "hi"})
	d := g.start(t, "hello")
	a := &temporal.Activities{Runner: g.worker}
	res, err := a.Resume(context.Background(), temporal.StepInput{Tenant: d.Tenant, SessionID: d.SessionID, RunID: d.RunID})
	t.Logf("resume: %+v %v; log %v", res, err, g.events(t, "s1"))
	for _, ty := range g.events(t, "s1") {
		if ty == session.TypeRunResumed {
			t.Errorf("Resume of a running session recorded run_resumed")
		}
	}
}

// A step whose activity is canceled (a worker's Stop, a missed
// heartbeat) finishes: the run is not canceled with it.
func TestStepOutlivesItsActivity(t *testing.T) {
	g := newRig(t, 0, scripted.Reply{Text: "slow", Delay: 5 * time.Second})
	d := g.start(t, "hello")
	a := &temporal.Activities{Runner: g.worker}
	ctx, cancel := context.WithCancelCause(context.Background())
	time.AfterFunc(200*time.Millisecond, func() { cancel(errors.New("worker is now shutdown")) })
	res, err := a.Step(ctx, temporal.StepInput{Tenant: d.Tenant, SessionID: d.SessionID, RunID: d.RunID})
	t.Logf("step: %+v %v; log %v", res, err, g.events(t, "s1"))
	st, _ := g.worker.Load(context.Background(), "s1")
	if st.Status != session.StatusRunning {
		t.Errorf("a worker's stop ended the run %s (%+v), not left running for a retry elsewhere", st.Status, st.LastError)
	}
}

// A Step that lands on a waiting session whose request just expired (its
// default decision recorded as the step loads it) goes on with the run,
// rather than leaving it waiting on nothing.
func TestStepOnExpiredRequests(t *testing.T) {
	store := memstore.New()
	deploy := tool.WithMeta(tool.Must(tool.New("deploy", "deploys", func(_ context.Context, in struct {
		Env string `json:"env"`
	}) (string, error) {
		return "deployed", nil
	})), tool.Meta{Approval: tool.ApprovalAsk})
	reg, _ := tool.NewRegistry(deploy)
	a := &agentrt.Agent{Name: "assistant", Tools: reg, Approval: agentrt.ApprovalPolicy{Expires: time.Hour}, Model: scripted.New("m",
		scripted.Reply{ToolCalls: []scripted.Call{scripted.ToolCall("deploy", `{"env":"prod"}`)}}, scripted.Reply{Text: "after"})}
	var mu sync.Mutex
	clock := time.Now()
	now := func() time.Time { mu.Lock(); defer mu.Unlock(); return clock }
	dr := make(drives, 4)
	worker, _ := agentrt.NewRunner(agentrt.Config{Store: store, Agents: []*agentrt.Agent{a}, Owner: "worker", Now: now})
	serve, _ := agentrt.NewRunner(agentrt.Config{Store: store, Agents: []*agentrt.Agent{a}, Owner: "serve", Engine: dr, Now: now})
	defer serve.Close(context.Background())
	defer worker.Close(context.Background())
	if _, err := serve.Start(context.Background(), "s1", agentrt.Input{Agent: "assistant", Text: "deploy"}); err != nil {
		t.Fatal(err)
	}
	d := dr.next(t)
	acts := &temporal.Activities{Runner: worker}
	in := temporal.StepInput{Tenant: d.Tenant, SessionID: d.SessionID, RunID: d.RunID}
	var res temporal.StepResult
	var err error
	for i := 0; i < 5; i++ {
		res, err = acts.Step(context.Background(), in)
		t.Logf("step: %+v %v", res, err)
		if res.Status == session.StatusWaiting {
			break
		}
	}
	mu.Lock()
	clock = clock.Add(2 * time.Hour)
	mu.Unlock()
	res, err = acts.Step(context.Background(), in) // e.g. a stale drive handled just after the deadline
	t.Logf("step 2: %+v %v", res, err)
	st, _ := worker.Load(context.Background(), "s1")
	t.Logf("session: %s, %d requests; log %v", st.Status, len(st.Requests), func() []session.Type {
		var out []session.Type
		for e, _ := range store.Events(session.WithTenant(context.Background(), session.DefaultTenant), "s1", 0) {
			out = append(out, e.Type)
		}
		return out
	}())
	if st.Status == session.StatusWaiting && len(st.Requests) == 0 && res.Deadline == nil {
		t.Errorf("stranded: waiting with no request, and the workflow is told no deadline")
	}
}

// A tool call's activity for a call its worker does not hold — an unknown
// session, an unknown call, a call run already — fails at once with an
// error of type agentrt.not_held that Temporal does not try again.
func TestToolActivityNotHeld(t *testing.T) {
	g := newRig(t, 0,
		scripted.Reply{ToolCalls: []scripted.Call{scripted.ToolCall("lookup", `{"order":"42"}`)}},
		scripted.Reply{Text: "done"})
	d := g.start(t, "where is 42?")
	a := &temporal.Activities{Runner: g.worker, Options: temporal.Options{Queue: "worker-1"}}
	ctx := context.Background()
	in := temporal.StepInput{Tenant: d.Tenant, SessionID: d.SessionID, RunID: d.RunID, Calls: true}
	if _, err := a.Step(ctx, in); err != nil { // the model call
		t.Fatal(err)
	}
	res, err := a.Step(ctx, in) // the batch, left to run
	if err != nil || len(res.Calls) != 1 || res.Queue != "worker-1" {
		t.Fatalf("the batch's step: %+v %v", res, err)
	}
	call := temporal.CallInput{Tenant: d.Tenant, SessionID: d.SessionID, RunID: d.RunID, CallID: res.Calls[0].ID, Name: "lookup"}
	for _, bad := range []temporal.CallInput{
		{Tenant: d.Tenant, SessionID: "nope", CallID: res.Calls[0].ID, Name: "lookup"},
		{Tenant: d.Tenant, SessionID: d.SessionID, CallID: "call_nope", Name: "lookup"},
		{Tenant: "other", SessionID: d.SessionID, CallID: res.Calls[0].ID, Name: "lookup"},
	} {
		_, err := a.Tool(ctx, bad)
		var ae *temporalsdk.ApplicationError
		if !errors.As(err, &ae) || ae.Type() != "agentrt.not_held" || !ae.NonRetryable() {
			t.Errorf("Tool(%+v): %v, want a non-retryable agentrt.not_held", bad, err)
		}
	}
	if out, err := a.Tool(ctx, call); err != nil || !out.Ran || !out.OK {
		t.Fatalf("the call: %+v %v", out, err)
	}
	if _, err := a.Tool(ctx, call); err == nil {
		t.Error("the call ran twice")
	}
}

// A run waiting for a person with no deadline, canceled by a person: the
// runner that recorded the cancellation tells the engine (a drive, why
// cancel), and the workflow's turn ends — it does not wait for the
// session's next turn.
func TestCanceledWhileWaitingEndsTheTurn(t *testing.T) {
	g := newRig(t, 0,
		scripted.Reply{ToolCalls: []scripted.Call{scripted.ToolCall("deploy", `{"env":"prod"}`)}},
		scripted.Reply{Text: "never"})
	d := g.start(t, "deploy")
	g.env.RegisterDelayedCallback(func() {
		if _, err := g.serve.Cancel(context.Background(), "s1", "the person left"); err != nil {
			t.Error(err)
			return
		}
		dc := g.drives.next(t)
		if dc.Why != "cancel" || dc.RunID != d.RunID {
			t.Errorf("the engine was handed %+v", dc)
		}
		g.env.SignalWorkflow(temporal.SignalDrive, dc)
	}, time.Hour)
	g.env.ExecuteWorkflow(temporal.WorkflowName, temporal.SessionInput{Tenant: d.Tenant, SessionID: d.SessionID, Next: &d})
	if in := continuedAsNew(t, g.env); in.Next != nil {
		t.Errorf("the next workflow run was handed %+v", in.Next)
	}
	if st, _ := g.worker.Load(context.Background(), "s1"); st.Status != session.StatusCanceled {
		t.Errorf("the run ended %s", st.Status)
	}
}
