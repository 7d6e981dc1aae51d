package agentrt

import (
	"context"
	"errors"
	"slices"
	"sync"

	"github.com/agentrt/agentrt/session"
)

// An Engine runs the runs of a Runner's sessions elsewhere: a workflow
// engine (the temporal module's) whose workers step each run
// (Runner.StepSession, then Runner.LetGo) until it stops. A Runner with
// an Engine (Config.Engine) commits what starts or continues a run —
// run_started with its input, run_resumed after an answer — then lets go
// of the session and hands the run to the engine; its handle (Run) follows
// the run through the store: Wait, Done and Events as for a run here,
// Cancel and Interrupt through the store's control requests
// (Runner.Cancel, Runner.Interrupt), which the process stepping the run
// acts on. The log stays the record: the engine carries the session's id
// and a position, never the conversation.
type Engine interface {
	// Drive hands the run of d.SessionID to the engine, committed up to
	// d.Seq. It returns once the engine has it (durably: a workflow
	// signalled); the run goes on there. Driving a run the engine already
	// drives is no error.
	Drive(ctx context.Context, d Drive) error
}

// Drive is a run an Engine is handed.
type Drive struct {
	Tenant    string `json:"tenant"`
	SessionID string `json:"session_id"`
	Agent     string `json:"agent,omitempty"`
	RunID     string `json:"run_id"`
	// Seq is the session's last event when the run was handed over.
	Seq int64 `json:"seq"`
	// Why is what the run does: "start" (a turn), run_resumed's reason
	// (ResumeApproval, ResumePause, ...), or, for a run that waited for a
	// person and was stopped meanwhile, "cancel" or "interrupt": the
	// engine's wait for its answer is over.
	Why string `json:"why"`
}

// remotes are the runs of this runner handed to its engine, which their
// handles follow through the store until they end.
type remotes struct {
	ctx    context.Context // ended by Close: the follows stop, the runs go on
	cancel context.CancelFunc
	mu     sync.Mutex
	closed bool // guarded by mu: no goroutine starts once Close waits for them
	wg     sync.WaitGroup
}

// close stops the follows and refuses new ones; wg.Wait then waits for
// those in progress.
func (rm *remotes) close() {
	rm.mu.Lock()
	rm.closed = true
	rm.mu.Unlock()
	rm.cancel()
}

// handOff hands x's run to the engine: its pending events (run_started,
// run_resumed) committed, the session let go of here, and the run's
// handle following it through the store until it ends (yielding its
// events, for Runner.Run and Runner.Resume).
func (r *Runner) handOff(ctx context.Context, x *Exec) {
	h := x.handle
	yield := x.yield
	why := "start"
	if x.last != nil {
		if rr, ok := x.last.Data.(*session.RunResumed); ok {
			why = rr.Reason // committed already (ResolveAndContinue)
		}
	}
	for _, e := range x.pending {
		if rr, ok := e.Data.(*session.RunResumed); ok {
			why = rr.Reason
		}
	}
	d := Drive{Tenant: x.key.tenant, SessionID: x.st.SessionID, Agent: x.st.Agent, RunID: x.st.RunID, Why: why}
	err := x.Commit(ctx) // which yields its events to a caller that reads them
	if err == nil && x.stopped && x.st.Status == session.StatusRunning {
		// The caller stopped reading at the first events: the run ends
		// here, canceled, as leaving Runner.Run's loop ends a run here.
		x.fail(ctx, &Error{Kind: FailCanceled, Code: CodeCanceled, Msg: "the caller stopped reading events"})
		r.finish(x)
		return
	}
	d.Seq = x.st.Seq
	after := d.Seq
	r.letGoOf(x)
	if err == nil {
		err = r.engine.Drive(context.WithoutCancel(ctx), d)
		if err != nil {
			err = &Error{Kind: FailState, Code: CodeEngine, Msg: "the engine did not take the run (it stays running in the store: Recover hands it over again)", Err: err}
		}
	}
	if err != nil {
		h.giveUp(err)
		if yield != nil {
			yield(nil, err)
		}
		return
	}
	stop := func() { r.controlRemote(h) }
	h.onControl.Store(&stop)
	h.goRemote()
	if h.interrupted() != "" || ctx.Err() != nil && !errors.Is(context.Cause(ctx), errHandedOver) {
		r.controlRemote(h) // asked before the hand-over (not Shutdown's: the run goes on in the engine)
	}
	if yield != nil {
		r.followRemote(ctx, h, d, after, yield)
		return
	}
	if !r.remote.enter() {
		h.giveUp(&Error{Kind: FailState, Code: CodeClosed, Msg: "the runner is closed: the run goes on in the engine"})
		return
	}
	go func() {
		defer r.remote.wg.Done()
		r.followRemote(r.remote.ctx, h, d, after, nil)
	}()
}

// enter counts a goroutine of the follows, unless they are closed.
func (rm *remotes) enter() bool {
	rm.mu.Lock()
	defer rm.mu.Unlock()
	if rm.closed {
		return false
	}
	rm.wg.Add(1)
	return true
}

// letGoOf lets go of x's session in this process, its handle left open:
// the lease released, the state cached, the claim ended.
func (r *Runner) letGoOf(x *Exec) {
	x.handle.letGo()
	if len(x.pending) == 0 && !x.dirty {
		r.cache.put(x.key, x.st)
	}
	x.lease.stop()
	r.hub.release(x.topic)
	r.reg.unclaim(x.key)
	x.handle = nil
	r.putExec(x)
	r.reg.done()
}

// followRemote follows h's run, handed to the engine at seq d.Seq, from
// its event after: it yields its events (when yield is set) and ends h
// with the run's run_finished. A follow stopped by ctx (the caller's, or
// Close) leaves the run going on in the engine; h's Wait then returns the
// cause.
func (r *Runner) followRemote(ctx context.Context, h *Run, d Drive, after int64, yield func(*session.Event, error) bool) {
	ctx = session.WithTenant(ctx, d.Tenant)
	res := Result{SessionID: d.SessionID, RunID: d.RunID}
	for e, err := range r.watch(ctx, d.SessionID, after, nil) {
		if err != nil {
			h.giveUp(err)
			if yield != nil {
				yield(nil, err)
			}
			return
		}
		mine := e.RunID == d.RunID
		if yield != nil && (mine || e.Seq == 0) && !yield(e, nil) {
			// The caller stopped reading: the run is canceled, as
			// leaving Runner.Run's loop cancels a run here.
			h.CancelCause(&Error{Kind: FailCanceled, Code: CodeCanceled, Msg: "the caller stopped reading events"})
			h.giveUp(&Error{Kind: FailCanceled, Code: CodeCanceled, Msg: "the caller stopped reading events"})
			return
		}
		if !mine {
			continue
		}
		switch v := e.Data.(type) {
		case *session.Final:
			res.Text = v.Text
		case *session.Error:
			res.Err = v
		case *session.RunFinished:
			res.Status, res.Reason, res.Usage = v.Status, v.Reason, v.Usage
			if v.Status == session.StatusDone {
				res.Err = nil
			}
			h.mu.Lock()
			h.res = res
			h.mu.Unlock()
			h.finish()
			h.cancel(nil)
			return
		}
	}
	cause := context.Cause(ctx)
	if cause == nil {
		cause = context.Canceled
	}
	h.giveUp(&Error{Kind: FailCanceled, Code: CodeCanceled, Msg: "stopped following the run (it goes on in the engine)", Err: cause})
}

// controlRemote acts on a Cancel or an Interrupt of h, a run handed to
// the engine: as a control request for h's run through the store, which
// the process stepping it acts on (or this one, between its steps). One
// interruption and one cancellation at most (a cancellation after an
// interruption is the request that wins, as for a run here); none once h
// has ended — a late one must not stop the session's next run.
func (r *Runner) controlRemote(h *Run) {
	h.mu.Lock()
	done := h.finished
	inputs := slices.Clone(h.interruptBy)
	h.mu.Unlock()
	reason := h.interrupted()
	kind, flag := session.ControlCancel, &h.remoteCancel
	if reason != "" && !h.remoteControl.Load() {
		kind, flag = session.ControlInterrupt, &h.remoteControl
	}
	if done || flag.Swap(true) {
		return
	}
	// Close ends the wait for the run to stop (the request, once made,
	// stays recorded and takes effect all the same).
	ctx := session.WithTenant(r.remote.ctx, h.tenant)
	if !r.remote.enter() {
		return // closing: the request is not made
	}
	go func() {
		defer r.remote.wg.Done()
		if kind == session.ControlCancel {
			reason = "the run was canceled"
			inputs = nil
		}
		_, err := r.requestControl(ctx, h.sessionID, h.ID(), kind, reason, inputs...)
		if err != nil && AsError(err).ErrorCode() != CodeNotRunning && ctx.Err() == nil {
			h.setErr(err)
		}
	}()
}
