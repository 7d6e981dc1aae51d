package temporal

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/session"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
)

// errPermanent is the type of an activity error not worth trying again
// (the session is gone).
const errPermanent = "agentrt.permanent"

// errNotHeld is the type of a tool activity's error for a call its
// worker does not hold (given up, or run already).
const errNotHeld = "agentrt.not_held"

// Activities step sessions through a runner whose store is the one every
// process of the deployment shares. The runner has no engine: its steps
// run here.
type Activities struct {
	Runner  *agentrt.Runner
	Options Options // Options.Queue: see there
}

// Step steps the session once (a model call; a batch of tool calls,
// decided here and left to run one ActivityTool each when the workflow
// asks so; a batch with a sub-agent's run inside it), fenced by the
// session's lease. A step that left tool calls keeps the session here —
// its lease and state, StepResult.Queue naming this worker's queue, where
// the calls must run; any other lets go of it: the next step may run on
// any worker. It heartbeats while
// the step runs; a step whose worker dies is tried again elsewhere, which
// takes the session over once the dead worker's lease lapses, and goes on
// from the log (a tool call that finished is not run again; one in flight
// follows the tool's idempotency: see the agentrt docs). A session whose
// run does not run any more (stopped by a person, or waiting for one) is
// no error: its status says so.
//
// The step does not end with the activity's context: a worker that stops
// (its Stop, a rolling restart) or a heartbeat Temporal missed cancels
// the activity, not the run — the step finishes here and commits, fenced
// by its lease, and a retry elsewhere goes on from the log once the lease
// is free. People stop a run with a control request (Runner.Cancel,
// Runner.Interrupt), which reaches the step through the store.
func (a *Activities) Step(ctx context.Context, in StepInput) (StepResult, error) {
	ctx = session.WithTenant(ctx, in.Tenant)
	sctx := context.WithoutCancel(ctx)
	stop := a.heartbeat(ctx)
	var (
		events []*session.Event
		calls  []agentrt.DeferredCall
		err    error
	)
	own := in.Calls && a.Options.Queue != ""
	if own {
		events, calls, err = a.Runner.StepSessionCalls(sctx, in.SessionID)
	} else {
		events, err = a.Runner.StepSession(sctx, in.SessionID)
	}
	// Held here only while its tool calls wait to run (they must run
	// here); else let go of, so that any worker takes its next step — a
	// session kept on its worker between all its steps was measured
	// slower under load (its steps could not go to an idle worker), and
	// no faster alone.
	held := own && len(calls) > 0
	if !held {
		a.Runner.LetGo(sctx, in.SessionID)
	}
	stop()
	if err != nil {
		return a.stepError(sctx, in, err)
	}
	res, err := a.result(sctx, in, events)
	if err == nil && held && res.Status == session.StatusRunning {
		res.Calls, res.Queue = calls, a.Options.Queue
	}
	return res, err
}

// Tool runs one tool call a step of this worker left (see
// agentrt.Runner.RunCall): announced, run with the call's idempotency
// key, its result committed. It heartbeats while the tool runs; the tool
// is canceled with the run (a person's cancellation), not with the
// activity — a stopping worker lets it finish. A call this worker does
// not hold is an error of type agentrt.not_held, not tried again: the
// session's next step runs it if it has to.
func (a *Activities) Tool(ctx context.Context, in CallInput) (agentrt.CallOutcome, error) {
	ctx = session.WithTenant(ctx, in.Tenant)
	stop := a.heartbeat(ctx)
	out, err := a.Runner.RunCall(context.WithoutCancel(ctx), in.SessionID, in.CallID)
	stop()
	if err != nil && agentrt.AsError(err).ErrorCode() == agentrt.CodeNotHeld {
		return out, temporal.NewApplicationErrorWithOptions(err.Error(), errNotHeld, temporal.ApplicationErrorOptions{NonRetryable: true})
	}
	return out, err
}

// Resume continues a run whose requests' deadline passed (their default
// decisions recorded), for the next steps; a run still waiting (answered
// meanwhile, or not yet expired) says so.
func (a *Activities) Resume(ctx context.Context, in StepInput) (StepResult, error) {
	ctx = session.WithTenant(context.WithoutCancel(ctx), in.Tenant)
	_, err := a.Runner.BeginResume(ctx, in.SessionID)
	a.Runner.LetGo(ctx, in.SessionID)
	if err != nil {
		return a.stepError(ctx, in, err)
	}
	return a.result(ctx, in, nil)
}

// stepError is the activity's answer to a step the runner did not take.
func (a *Activities) stepError(ctx context.Context, in StepInput, err error) (StepResult, error) {
	switch agentrt.AsError(err).ErrorCode() {
	case agentrt.CodeNotRunning, agentrt.CodeWaiting, agentrt.CodeNothingToResume:
		return a.result(ctx, in, nil) // where the session stands now
	case agentrt.CodeNotFound:
		return StepResult{}, temporal.NewApplicationErrorWithOptions(err.Error(), errPermanent, temporal.ApplicationErrorOptions{NonRetryable: true})
	}
	// Leased by another worker (a dead one's lease lapses), busy, the
	// store unreachable: tried again.
	return StepResult{}, err
}

// result says where session in stands: from the events a step committed
// when they tell (its status, what comes next), else from the session.
func (a *Activities) result(ctx context.Context, in StepInput, events []*session.Event) (StepResult, error) {
	res := StepResult{Status: session.StatusRunning, RunID: in.RunID, Next: "model call"}
	ended := false
	for _, e := range events {
		res.Seq, res.RunID = e.Seq, e.RunID
		switch d := e.Data.(type) {
		case *session.RunFinished:
			res.Status, ended = d.Status, true
		case *session.ModelFinished:
			res.Next = "model call"
			if len(d.ToolCalls) > 0 {
				names := make([]string, len(d.ToolCalls))
				for i, c := range d.ToolCalls {
					names[i] = c.Name
				}
				res.Next = "tools: " + strings.Join(names, ", ")
			}
		case *session.ToolResult:
			res.Next = "model call"
		}
	}
	if len(events) > 0 && (!ended || res.Status != session.StatusWaiting) {
		// Running on, or ended (not to wait for people): as the step
		// says — not as the session stands by now, which may be its
		// next turn's, begun the moment this run ended.
		return res, nil
	}
	st, err := a.Runner.Load(ctx, in.SessionID)
	if err != nil {
		if agentrt.AsError(err).ErrorCode() == agentrt.CodeNotFound {
			return StepResult{}, temporal.NewApplicationErrorWithOptions(err.Error(), errPermanent, temporal.ApplicationErrorOptions{NonRetryable: true})
		}
		return StepResult{}, err
	}
	res.Status, res.Seq, res.RunID = st.Status, st.Seq, st.RunID
	if st.Status == session.StatusWaiting && len(st.Requests) == 0 {
		// Its requests expired as the step loaded it (their default
		// decisions recorded): the run goes on.
		if _, err := a.Runner.BeginResume(ctx, in.SessionID); err != nil {
			a.Runner.LetGo(ctx, in.SessionID)
			if c := agentrt.AsError(err).ErrorCode(); c != agentrt.CodeNothingToResume && c != agentrt.CodeWaiting {
				return StepResult{}, err
			}
			return a.result(ctx, in, nil)
		}
		a.Runner.LetGo(ctx, in.SessionID)
		res.Status, res.Next = session.StatusRunning, "model call"
		return res, nil
	}
	for _, q := range st.Requests {
		if q.Expires != nil && (res.Deadline == nil || q.Expires.Before(*res.Deadline)) {
			t := *q.Expires
			res.Deadline = &t
		}
	}
	return res, nil
}

// heartbeat tells Temporal the step's worker lives, every
// Options.Heartbeat, until stop.
func (a *Activities) heartbeat(ctx context.Context) (stop func()) {
	if !activity.IsActivity(ctx) {
		return func() {}
	}
	every := a.Options.Heartbeat
	if every <= 0 {
		every = 2 * time.Second
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
				activity.RecordHeartbeat(ctx)
			}
		}
	})
	return func() {
		close(done)
		wg.Wait()
	}
}

// errNoRunner is a worker made without a runner.
var errNoRunner = errors.New("temporal: the worker needs a runner")
