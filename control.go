package agentrt

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentrt/agentrt/session"
)

// The control plane: stopping a session's run from any process. A run in
// this process is stopped through its handle; one in another process
// through a control request kept in the store for the owner of the
// session's lease, which looks for the requests made to it every
// Config.ControlPoll and acts on them; a run whose process is gone, or a
// run waiting for a person, is stopped by the requester itself. Whoever
// acts records the request (a control event: who, why, when) in the
// session's log before the run stops.

// DefaultControlPoll is Config.ControlPoll when it is zero: a control
// request made from another process reaches a run within about this long
// (docs/architecture.md has the figures).
const DefaultControlPoll = 500 * time.Millisecond

// actorKey carries who acts, for the log.
type actorKey struct{}

// WithActor returns ctx naming who acts in the calls made with it: the
// control requests (Runner.Cancel, Runner.Interrupt) record it as their
// author. A server sets it from the request's credentials.
func WithActor(ctx context.Context, who string) context.Context {
	return context.WithValue(ctx, actorKey{}, who)
}

// ActorOf returns who acts in ctx (see WithActor), or "".
func ActorOf(ctx context.Context) string {
	who, _ := ctx.Value(actorKey{}).(string)
	return who
}

// ControlOutcome says what a control request did.
type ControlOutcome struct {
	// Control is the request, as recorded.
	Control session.Control `json:"control"`
	// Status is the session's status once the request was dealt with.
	Status session.Status `json:"status"`
	// Acted reports that the request stopped the run; false when the run
	// had stopped on its own first (Status says how).
	Acted bool `json:"acted"`
}

// Cancel stops the run of session id (of ctx's tenant) wherever it runs,
// and records who asked (WithActor) and why: work in flight is canceled,
// results in hand are stored, and the run ends canceled (resumable; a
// waiting run's requests are withdrawn). A run of this process stops at
// once; one of another process within Config.ControlPoll of that
// process, plus the time its work in flight takes to notice; one whose
// process is gone, or that waits for a person, is stopped here.
//
// It returns once the run has stopped, or when ctx ends (the request
// stays recorded, and takes effect all the same). A session with no run
// in progress is an error (code not_running).
func (r *Runner) Cancel(ctx context.Context, id, reason string) (*ControlOutcome, error) {
	return r.requestControl(ctx, id, "", session.ControlCancel, reason)
}

// CancelRun cancels run runID of session id, as Cancel does, only if it
// is the session's run in progress: wherever it runs, the process
// running the session acts only if the run it runs is runID (the control
// request names it, across processes). A run that has ended, or any
// other run of the session — its next turn, which began after the
// caller read that runID was running — is an error of code not_running
// saying so, and nothing is stopped: what the caller read as running
// decides what is canceled, not what runs when the request lands. A run
// resumed (after a pause, an answer, a crash) keeps its id.
func (r *Runner) CancelRun(ctx context.Context, id, runID, reason string) (*ControlOutcome, error) {
	if runID == "" {
		return nil, &Error{Kind: FailInput, Msg: "CancelRun needs the id of the run to cancel (Cancel cancels whatever runs)"}
	}
	return r.requestControl(ctx, id, runID, session.ControlCancel, reason)
}

// Interrupt stops the run of session id at its next safe point, wherever
// it runs, as Run.Interrupt does, and records who asked and why; it
// returns as Cancel does. The turn ends interrupted, its history coherent
// for the next turn (a waiting run's requests are withdrawn).
func (r *Runner) Interrupt(ctx context.Context, id, reason string) (*ControlOutcome, error) {
	return r.requestControl(ctx, id, "", session.ControlInterrupt, reason)
}

// notThisRun is CancelRun's error when run runID is not the run of
// session id in progress; current is the one that is ("" when none is,
// status the session's).
func notThisRun(id, runID, current string, status session.Status) error {
	msg := fmt.Sprintf("run %s of session %s is not in progress", runID, id)
	if current != "" {
		msg += fmt.Sprintf(" (run %s is): nothing of it to cancel", current)
	} else {
		msg += fmt.Sprintf(" (the session is %s): nothing to cancel", status)
	}
	return &Error{Kind: FailState, Code: CodeNotRunning, Msg: msg}
}

// currentRun is the id of the run of session sess whose event is the
// session's last: the run in progress, while sess is running or waiting.
func (r *Runner) currentRun(ctx context.Context, sess *session.Session) (string, error) {
	for e, err := range r.store.Events(ctx, sess.ID, max(sess.LastSeq-1, 0)) {
		if err != nil {
			return "", &Error{Kind: FailStore, Msg: "read events of session " + sess.ID, Err: err}
		}
		return e.RunID, nil
	}
	return "", nil
}

func (r *Runner) requestControl(ctx context.Context, id, runID string, kind session.ControlKind, reason string, inputs ...string) (*ControlOutcome, error) {
	c := session.Control{ID: "ctl_" + r.newID(), Kind: kind, Reason: reason, By: ActorOf(ctx), At: r.now().UTC(), RunID: runID, Inputs: inputs}
	k := keyOf(ctx, id)
	var (
		asked bool  // c was handed to a run, here or elsewhere
		from  int64 // the session's last seq before that
		delay = 5 * time.Millisecond
	)
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if asked {
			// The request was handed to a run, which has ended: done, unless
			// that use of the session ended without it (a resolution that
			// left the run waiting, a run that stopped at a safe point first),
			// and the run it was for still goes on — not a newer one.
			out, newTurn, err := r.controlOutcome(ctx, id, c, from)
			if err != nil || out.Acted || newTurn || out.Status != session.StatusRunning && out.Status != session.StatusWaiting {
				return out, err
			}
		}
		if h := r.reg.run(k); h != nil {
			// A run of this process: through its handle.
			sess, err := r.store.GetSession(ctx, id)
			if err != nil {
				return nil, notFound(id, err)
			}
			if runID != "" {
				switch cur := h.ID(); {
				case cur == "":
					// A run just beginning here: its id is known in a
					// moment.
					if err := sleepCtx(ctx, &delay); err != nil {
						return nil, err
					}
					continue
				case cur != runID && asked:
					out, _, err := r.controlOutcome(ctx, id, c, from)
					return out, err
				case cur != runID:
					return nil, notThisRun(id, runID, cur, sess.Status)
				}
			}
			if !asked {
				asked, from = true, sess.LastSeq
			}
			h.applyControl(c)
			if _, err := h.Wait(ctx); err != nil && ctx.Err() != nil {
				return nil, err
			}
			continue
		}
		sess, err := r.store.GetSession(ctx, id)
		if err != nil {
			return nil, notFound(id, err)
		}
		if sess.Status != session.StatusRunning && sess.Status != session.StatusWaiting {
			if runID != "" {
				return nil, notThisRun(id, runID, "", sess.Status)
			}
			return nil, &Error{Kind: FailState, Code: CodeNotRunning,
				Msg: fmt.Sprintf("session %s has no run in progress (status %s): nothing to %s", id, sess.Status, kind)}
		}
		if runID != "" && !asked {
			// The run in progress, as the log has it: the one the request
			// names, or the caller's run has ended.
			cur, err := r.currentRun(ctx, sess)
			if err != nil {
				return nil, err
			}
			if cur != runID {
				return nil, notThisRun(id, runID, cur, sess.Status)
			}
		}
		if !asked {
			from = sess.LastSeq
		}
		x, err := r.begin(ctx, id, nil, false, "")
		var held *session.LeaseHeldError
		switch {
		case err == nil:
			// Nobody runs it: its process is gone, or it waits for a person.
			return r.controlHere(ctx, x, c, from)
		case errors.As(err, &held) && sess.Status == session.StatusRunning:
			if r.control.ctrl == nil {
				return nil, &Error{Kind: FailConfig, Code: CodeNoControl, Msg: fmt.Sprintf(
					"session %s runs in another process (%s), and the store cannot carry control requests to it", id, held.Lease.Owner)}
			}
			switch err := r.control.ctrl.RequestControl(ctx, id, held.Lease, c); {
			case errors.Is(err, session.ErrFenced):
				continue // it let go of the session, or another took it over
			case err != nil:
				return nil, &Error{Kind: FailStore, Msg: "record the control request for session " + id, Err: err}
			}
			asked = true
			if err := r.awaitOwner(ctx, id, from, held.Lease); err != nil {
				return nil, err
			}
			continue
		case errors.As(err, &held), AsError(err).Code == CodeBusy:
			// A short hold (a resolution), or a run just beginning here:
			// look again in a moment.
			if err := sleepCtx(ctx, &delay); err != nil {
				return nil, err
			}
		default:
			return nil, err
		}
	}
}

// sleepCtx waits *delay, or until ctx ends, and doubles *delay up to
// 200ms: the backoff of a request that looks again.
func sleepCtx(ctx context.Context, delay *time.Duration) error {
	t := time.NewTimer(*delay)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
	}
	*delay = min(2**delay, 200*time.Millisecond)
	return nil
}

// awaitOwner waits until the run of session id that held lease l stops
// (a run_finished after seq from), or l is no longer the session's (the
// owner let go of it, or died and its lease expired): the caller then
// looks again.
func (r *Runner) awaitOwner(ctx context.Context, id string, from int64, l session.Lease) error {
	for {
		wctx, cancel := context.WithTimeout(ctx, max(r.leaseTTL/3, r.control.poll))
		for e, err := range r.Watch(wctx, id, from) {
			if err != nil {
				cancel()
				return err
			}
			if e.Type == session.TypeRunFinished {
				cancel()
				return nil
			}
		}
		cancel()
		if err := ctx.Err(); err != nil {
			return err
		}
		sess, err := r.store.GetSession(ctx, id)
		if err != nil {
			return notFound(id, err)
		}
		// (Leases expire by the store's clock, which is the wall clock.)
		if cur := sess.Lease; cur == nil || cur.Owner != l.Owner || cur.Token != l.Token || !time.Now().Before(cur.Expires) || ownerDead(cur.Owner) {
			return nil
		}
	}
}

// controlOutcome reads what became of control request c of session id,
// from the events after seq from; newTurn says that a turn began since.
func (r *Runner) controlOutcome(ctx context.Context, id string, c session.Control, from int64) (out *ControlOutcome, newTurn bool, err error) {
	out = &ControlOutcome{Control: c}
	for e, err := range r.store.Events(ctx, id, from) {
		if err != nil {
			return nil, false, &Error{Kind: FailStore, Msg: "read events of session " + id, Err: err}
		}
		switch d := e.Data.(type) {
		case *session.Control:
			out.Acted = out.Acted || d.ID == c.ID
		case *session.RunStarted:
			newTurn = true
		}
	}
	sess, err := r.store.GetSession(ctx, id)
	if err != nil {
		return nil, false, notFound(id, err)
	}
	out.Status = sess.Status
	return out, newTurn, nil
}

// controlHere stops the run of x's session, which this runner holds with
// nobody running it: a run whose process stopped, or one waiting for a
// person (its sub-agents' waiting runs are stopped first).
func (r *Runner) controlHere(ctx context.Context, x *Exec, c session.Control, from int64) (*ControlOutcome, error) {
	id := x.st.SessionID
	switch x.st.Status {
	case session.StatusRunning, session.StatusWaiting:
	default:
		r.finish(x)
		out, _, err := r.controlOutcome(ctx, id, c, from)
		return out, err
	}
	if c.RunID != "" && x.st.RunID != c.RunID {
		cur, status := x.st.RunID, x.st.Status
		r.finish(x)
		return nil, notThisRun(id, c.RunID, cur, status)
	}
	for _, q := range x.st.Requests {
		if q.Child == nil {
			continue
		}
		if _, err := r.requestControl(ctx, q.Child.SessionID, "", c.Kind, c.Reason); err != nil &&
			AsError(err).Code != CodeNotRunning && AsError(err).Code != CodeNotFound {
			r.finish(x)
			return nil, err
		}
	}
	waiting := x.st.Status == session.StatusWaiting
	emit(x, c)
	why := string(c.Kind)
	if c.By != "" {
		why += " by " + c.By
	}
	if c.Reason != "" {
		why += ": " + c.Reason
	}
	if c.Kind == session.ControlInterrupt {
		x.endInterruptedBy(cmpOr(c.Reason, "interrupted"), c.Inputs)
	} else {
		x.withdrawRequests("the run was canceled (" + why + ")")
		e := &Error{Kind: FailCanceled, Code: CodeCanceled, Msg: "the run was canceled (" + why + ")"}
		emit(x, session.Error{Code: e.ErrorCode(), Message: e.Error(), Recoverable: true})
		x.End(session.StatusCanceled, CodeCanceled)
	}
	err := x.Commit(ctx)
	var d *Drive
	if err == nil && waiting && r.engine != nil && x.st.Engine == r.engineName {
		// The engine waits for the run's answer (a workflow waiting on
		// a signal): it is told the run stopped, and its turn ends.
		d = &Drive{Tenant: x.key.tenant, SessionID: id, Agent: x.st.Agent, RunID: x.st.RunID, Seq: x.st.Seq, Why: string(c.Kind)}
	}
	r.finish(x)
	if err != nil {
		return nil, err
	}
	if d != nil {
		_ = r.engine.Drive(context.WithoutCancel(ctx), *d) // unreachable: it wakes at its deadline or the next turn
	}
	out, _, err := r.controlOutcome(ctx, id, c, from)
	return out, err
}

// applyControl makes the run act on control request c: a cancellation
// or an interruption, recorded in its log as it stops. A run acts on one
// request; later ones find it stopping already — except a cancellation
// after an interruption, which waits for the tool calls in flight: the
// cancellation stops them, and is the request the log records.
func (h *Run) applyControl(c session.Control) {
	if c.Kind == session.ControlSteer {
		h.steerFrom(c)
		return
	}
	for {
		cur := h.control.Load()
		if cur != nil && (cur.Kind == session.ControlCancel || c.Kind != session.ControlCancel) {
			return
		}
		if h.control.CompareAndSwap(cur, &c) {
			break
		}
	}
	if c.Kind == session.ControlInterrupt {
		h.InterruptFor(cmpOr(c.Reason, "interrupted"), c.Inputs) // a held session stops too
		return
	}
	msg := "the run was canceled"
	if c.By != "" {
		msg += " by " + c.By
	}
	if c.Reason != "" {
		msg += ": " + c.Reason
	}
	h.cancel(&Error{Kind: FailCanceled, Code: CodeCanceled, Msg: msg})
	h.stopHeld()
}

// recordControl emits the control request the run acts on, once.
func (x *Exec) recordControl() {
	if x.controlled || x.handle == nil {
		return
	}
	if c := x.handle.control.Load(); c != nil {
		x.controlled = true
		emit(x, *c)
	}
}

// withdrawRequests withdraws the session's pending requests (their calls
// are not run): the run they belonged to stops.
func (x *Exec) withdrawRequests(why string) {
	for len(x.st.Requests) > 0 {
		q := x.st.Requests[0]
		emit(x, session.InputResolved{RequestID: q.ID, Kind: q.Kind, Decision: session.DecisionWithdrawn, By: "system", Reason: why})
	}
}

// endInterrupted ends the turn interrupted, at a point where nothing runs:
// pending requests are withdrawn, the calls of the batch without a result
// are answered (not run, or, for one its stopped process was running, of
// unknown outcome), then an interrupted event and run_finished.
func (x *Exec) endInterrupted(reason string) { x.endInterruptedBy(reason, nil) }

// endInterruptedBy is endInterrupted by newer input: inputs, besides those
// the run's handle was given (Run.InterruptFor).
func (x *Exec) endInterruptedBy(reason string, inputs []string) {
	x.withdrawRequests("the turn was interrupted (" + reason + ")")
	// (Over a copy: the batch's last result clears the state's calls.)
	for _, c := range slices.Clone(x.st.Calls) {
		if c.Done {
			continue
		}
		msg := "not run: the turn was interrupted (" + reason + ")"
		if c.Started {
			msg = "the turn was interrupted (" + reason + ") while this call ran in a process that stopped: whether it took effect is unknown"
		}
		emit(x, session.ToolResult{CallID: c.Call.ID, Name: c.Call.Name, Error: msg})
	}
	by := slices.Clone(inputs)
	if h := x.handle; h != nil {
		h.mu.Lock()
		for _, in := range h.interruptBy {
			if !slices.Contains(by, in) {
				by = append(by, in)
			}
		}
		h.mu.Unlock()
	}
	ev := session.Interrupted{Reason: reason, Inputs: by, MergedInputs: len(by)}
	if len(by) > 0 {
		ev.Source = x.st.Source
	}
	emit(x, ev)
	x.End(session.StatusInterrupted, reason)
}

// controlPlane polls the store for the control requests other processes
// make to this runner, while it has sessions in use, and hands each to the
// run it is for. It polls on a timer (time.AfterFunc: no goroutine between
// polls), armed when a run claims a session and the timer is not armed,
// and not armed again by a poll that finds the runner idle: a runner
// running one session after another costs an atomic load per run, and an
// idle one nothing after its last poll.
type controlPlane struct {
	ctrl  session.Controller // nil if the store cannot carry them
	owner string
	poll  time.Duration
	reg   *registry
	armed atomic.Bool // the timer will fire; set under mu

	mu     sync.Mutex
	timer  *time.Timer // made on first use; guarded by mu
	closed bool        // guarded by mu
	wg     sync.WaitGroup
}

// watch arms the timer, if it is not: a run just claimed a session.
func (c *controlPlane) watch() {
	if c.ctrl == nil || c.armed.Load() {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.armed.Load() || c.closed {
		return
	}
	c.armed.Store(true)
	if c.timer == nil {
		c.timer = time.AfterFunc(c.poll, c.fire)
	} else {
		c.timer.Reset(c.poll)
	}
}

// fire looks for control requests and hands each to the run it is for,
// then re-arms the timer while the runner has sessions in use.
func (c *controlPlane) fire() {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	c.wg.Add(1)
	c.mu.Unlock()
	defer c.wg.Done()
	ctx, cancel := context.WithTimeout(context.Background(), max(c.poll, time.Second))
	reqs, err := c.ctrl.Controls(ctx, c.owner)
	cancel()
	if err == nil { // a store that hiccupped is asked again at the next poll
		for _, q := range reqs {
			// A request naming a run is for that run only (CancelRun): the
			// session's next run does not act on it.
			if h := c.reg.run(skey{q.Tenant, q.SessionID}); h != nil && (q.Control.RunID == "" || q.Control.RunID == h.ID()) {
				h.applyControl(q.Control)
			}
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	// Disarmed before the registry is looked at: a run that claims a
	// session from now on arms the timer itself (watch waits for mu).
	c.armed.Store(false)
	if c.closed || c.reg.idle() {
		return
	}
	c.armed.Store(true)
	c.timer.Reset(c.poll)
}

// close stops the timer and waits for a poll under way.
func (c *controlPlane) close() {
	c.mu.Lock()
	c.closed = true
	if c.timer != nil {
		c.timer.Stop()
	}
	c.armed.Store(false)
	c.mu.Unlock()
	c.wg.Wait()
}

// Close stops the runs in progress in this runner — they are canceled,
// store what they have in hand and release their sessions — and waits
// for every use of a session to end (runs started by Start, StartResume
// and Recover, runs on callers' goroutines, resolutions, stepped
// sessions), until ctx ends. Later uses are refused; runs the store's
// refusal of a write stopped are no longer resumed here (they stay
// running, for Recover). Close is idempotent.
func (r *Runner) Close(ctx context.Context) error {
	for _, h := range r.reg.close() {
		h.Cancel()
	}
	r.revive.close()
	if r.gaveUp.Load() {
		return &Error{Kind: FailState, Code: CodeClosed, Msg: "runs that ignored their cancellation were left behind at shutdown"}
	}
	r.stepping.closeAll()
	r.remote.close() // the runs handed to the engine go on there
	done := make(chan struct{})
	go func() {
		r.reg.uses.Wait()
		r.remote.wg.Wait()
		r.control.close()
		r.hub.relay.close()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
