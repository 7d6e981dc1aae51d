package agentrt

import (
	"context"
	"errors"
	"iter"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/session"
)

// Run is a run in progress in this process: a turn started by Start, a
// resumption started by StartResume, a session driven with Begin and
// Step, or the run under Runner.Run and Runner.Resume. A run is separate
// from whoever watches it: it goes on while its events are read by any
// number of watchers (Events, Runner.Watch), or by none.
//
// A Run owns its whole life: it is counted by its Runner from the moment
// it claims its session to the moment it lets go of it (Runner.Close
// waits for it), every stream it gives out ends when it ends, and Wait
// reports what the store holds, not what the run hoped to write.
//
// Its methods are safe for concurrent use.
type Run struct {
	r         *Runner
	tenant    string
	sessionID string
	cancel    context.CancelCauseFunc
	parent    *Run // the run this one works for, when it is a sub-agent's

	// lease and topic are the run's lease keeper and, when no watcher
	// came first, its session's topic (see hub), kept here to spare two
	// allocations per run.
	lease leaseKeeper
	topic topic

	interrupt atomic.Pointer[string] // the reason given to Interrupt
	inModel   atomic.Bool            // a model call is in progress
	// control is the control request (Runner.Cancel, Runner.Interrupt)
	// the run acts on, recorded in its log as it stops.
	control atomic.Pointer[session.Control]
	// onControl, for a session driven step by step, stops it at once when
	// it is canceled or interrupted between its steps (set by keep, while
	// the handle may already be found by others).
	onControl atomic.Pointer[func()]
	// remote: the run was handed to the runner's engine (engine.go), and
	// the handle follows it; remoteControl: a control request was made
	// for it.
	remote, remoteControl, remoteCancel atomic.Bool

	mu sync.Mutex
	// id and after are the run's id and the session's last seq before
	// its first event, set once the session is loaded (the handle may be
	// found earlier, through Active); guarded by mu.
	id       string
	after    int64
	turn     string                 // the turn the run belongs to (RunStarted.TurnID), once known; guarded by mu
	children []*Run                 // sub-agents' runs in progress; guarded by mu
	steer    []session.InputSteered // input for the model's next call; guarded by mu
	// A run handed to the engine (remote): remoteSteer is the input
	// steered into it not yet sent to its owner, steering says a
	// goroutine sends it (steer.go), steerUntil ends that goroutine's
	// wait when input comes. steered are the ids of the steering
	// requests' input this run took (Control.Steer). All guarded by mu.
	remoteSteer []session.Steered
	steering    bool
	steerUntil  chan struct{}
	steered     []string
	// interruptBy are the inbox inputs that interrupted the run (see
	// InterruptFor); guarded by mu.
	interruptBy []string
	done        chan struct{} // made by the first Done or Wait; guarded by mu
	ending      bool          // the run has stopped and is letting go of its session (Runner.finish); guarded by mu
	finished    bool          // guarded by mu
	res         Result        // guarded by mu; final once finished
	err         error         // guarded by mu
}

// parentRunKey carries the handle of the run a sub-agent's run works for.
type parentRunKey struct{}

// newRun returns the handle of a run of session id and its context:
// canceled by ctx unless detached, and by the handle's Cancel, a lost
// lease and a control request. A run begun on the behalf of another
// (ctx carries its handle: a sub-agent's) is that run's child: an
// interruption flows down to it.
func (r *Runner) newRun(ctx context.Context, id string, detached bool) (context.Context, *Run) {
	base := ctx
	if detached {
		base = context.WithoutCancel(ctx)
	}
	rctx, cancel := context.WithCancelCause(base)
	h := &Run{r: r, sessionID: id, cancel: cancel, tenant: session.TenantOf(ctx)}
	if p, _ := ctx.Value(parentRunKey{}).(*Run); p != nil {
		h.parent = p
		p.adopt(h)
	}
	return rctx, h
}

// ID returns the run's id (the run_id of its events).
func (h *Run) ID() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.id
}

// begins records the run's id, the turn it belongs to and the seq its
// events come after.
func (h *Run) begins(id, turn string, after int64) {
	h.mu.Lock()
	h.id, h.turn, h.after = id, turn, after
	h.mu.Unlock()
}

// TurnID returns the id of the turn the run belongs to (the gateway's,
// see session.RunStarted.TurnID; a run the gateway did not start is a
// turn of its own): empty until the run has loaded its session.
func (h *Run) TurnID() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.turn
}

// SessionID returns the session the run belongs to.
func (h *Run) SessionID() string { return h.sessionID }

// Tenant returns the tenant of the run's session.
func (h *Run) Tenant() string { return h.tenant }

// Done returns a channel closed when the run has stopped and everything
// it wrote is committed.
func (h *Run) Done() <-chan struct{} {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.done == nil {
		h.done = make(chan struct{})
		if h.finished {
			close(h.done)
		}
	}
	return h.done
}

// Wait waits for the run to stop and returns its outcome, as stored: the
// Result's Status is the session's status in the store. The error is
// ctx's when ctx ends first, or the error that kept the run from storing
// how it ended (the store then still says running, and the run is
// resumable; the Result's Err has code end_not_stored: a run of Start or
// StartResume that stopped so because the store refused a write is
// resumed by this runner once the store accepts writes again, as a run
// of its own). A run that failed as such (a model that failed for good,
// say) has a Result with status failed and a nil error.
func (h *Run) Wait(ctx context.Context) (*Result, error) {
	select {
	case <-h.Done():
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	res := h.res
	return &res, h.err
}

// Cancel stops the run: the work in flight is canceled, the results in
// hand are stored, and the run ends with status canceled (resumable).
// It returns at once; Wait or Done tell when the run has stopped.
// Runner.Cancel does the same from any process, and records who and why.
func (h *Run) Cancel() {
	h.cancel(&Error{Kind: FailCanceled, Code: CodeCanceled, Msg: "the run was canceled"})
	h.stopHeld()
}

// CancelCause is Cancel with the cause the run records: an *Error's code
// becomes its error event's code and run_finished's reason (a program
// stopping a run because a person pressed Ctrl-C gives
// ErrSignalInterrupt). A nil cause is Cancel.
func (h *Run) CancelCause(cause error) {
	if cause == nil {
		h.Cancel()
		return
	}
	h.cancel(cause)
	h.stopHeld()
}

// stopHeld ends the run now if it is a session held between its steps
// (its canceled context or its interruption would otherwise wait for a
// next step that may never come).
func (h *Run) stopHeld() {
	if f := h.onControl.Load(); f != nil {
		(*f)()
	}
}

// Interrupt stops the run at its next safe point and records why: a
// model call in flight is abandoned (it has no side effects), tool calls
// in flight finish and their results are stored, calls the model asked for
// that have not started are answered "not run", and the run ends with an
// interrupted event and status interrupted, its history coherent for the
// next turn. A sub-agent working for the run is interrupted too. The
// gateway uses it to restart a turn with newer input; Runner.Interrupt
// does the same from any process.
func (h *Run) Interrupt(reason string) { h.InterruptFor(reason, nil) }

// InterruptFor is Interrupt by newer input: inputs (inbox inputs, see
// Input.Inputs), recorded in the run's interrupted event as the inputs
// its restart merges. Inputs given after the run is interrupted, while it
// has not yet reached its safe point, are recorded too.
func (h *Run) InterruptFor(reason string, inputs []string) {
	if len(inputs) > 0 {
		h.mu.Lock()
		h.interruptBy = append(h.interruptBy, inputs...)
		h.mu.Unlock()
	}
	h.interruptRun(reason)
}

func (h *Run) interruptRun(reason string) {
	if reason == "" {
		reason = "interrupted"
	}
	if !h.interrupt.CompareAndSwap(nil, &reason) {
		return
	}
	// A model call in flight is abandoned by canceling the run's context:
	// no tool runs during a model call, and the run stops next anyway.
	// (The flag was set first: a call that starts now sees it.)
	if h.inModel.Load() {
		h.cancel(errInterrupted)
	}
	h.mu.Lock()
	children := slices.Clone(h.children)
	h.mu.Unlock()
	for _, c := range children {
		c.Interrupt(reason)
	}
	h.stopHeld()
}

// Steer gives text to the model at its next call in this run, as a user
// message after the current tool batch, without stopping the run:
// recorded as an input_steered event, whose commit marks inputs (inbox
// inputs, see Input.Inputs) answered. Input steered into a run that
// makes no more model calls is not delivered: Steer reports whether the
// run could still take it, and the caller keeps what was not taken
// (the gateway leaves it pending for the next turn).
//
// A run handed to the runner's engine is steered through the process
// that steps it (see steer.go), at its next model call there.
func (h *Run) Steer(text string, inputs []string) bool {
	h.mu.Lock()
	if h.finished {
		h.mu.Unlock()
		return false
	}
	if !h.remote.Load() {
		h.steer = append(h.steer, session.InputSteered{Text: text, Inputs: inputs})
		h.mu.Unlock()
		return true
	}
	h.remoteSteer = append(h.remoteSteer, session.Steered{Text: text, Inputs: inputs})
	start := !h.steering
	h.steering = true
	if h.steerUntil != nil {
		close(h.steerUntil)
		h.steerUntil = nil
	}
	h.mu.Unlock()
	if start {
		h.r.steerRemote(h)
	}
	return true
}

// goRemote marks h handed to the engine: input steered into it from now
// on goes to the process that steps it, and so does what was steered
// before.
func (h *Run) goRemote() {
	h.mu.Lock()
	h.remote.Store(true)
	for _, s := range h.steer {
		h.remoteSteer = append(h.remoteSteer, session.Steered{Text: s.Text, Inputs: s.Inputs})
	}
	h.steer = nil
	start := len(h.remoteSteer) > 0 && !h.steering
	h.steering = h.steering || start
	h.mu.Unlock()
	if start {
		h.r.steerRemote(h)
	}
}

// takeSteer returns the input steered since the last call, and forgets it.
func (h *Run) takeSteer() []session.InputSteered {
	if h == nil {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	s := h.steer
	h.steer = nil
	return s
}

// adopt records c as a sub-agent's run working for h; a run interrupted
// already interrupts it at once.
func (h *Run) adopt(c *Run) {
	h.mu.Lock()
	h.children = append(h.children, c)
	h.mu.Unlock()
	if reason := h.interrupted(); reason != "" {
		c.Interrupt(reason)
	}
}

// disown forgets c, which stopped.
func (h *Run) disown(c *Run) {
	h.mu.Lock()
	h.children = slices.DeleteFunc(h.children, func(x *Run) bool { return x == c })
	h.mu.Unlock()
}

// errInterrupted is the cause of a model call abandoned by Interrupt.
var errInterrupted = errors.New("the run was interrupted")

// interrupted returns the reason given to Interrupt, or "".
func (h *Run) interrupted() string {
	if h == nil {
		return ""
	}
	if p := h.interrupt.Load(); p != nil {
		return *p
	}
	return ""
}

// interruptedFor is interrupted, unless the run's context ctx was canceled
// since for another reason: a cancellation wins over an interruption
// still on its way to a safe point.
func (h *Run) interruptedFor(ctx context.Context) string {
	reason := h.interrupted()
	if reason != "" && ctx.Err() != nil && !errors.Is(context.Cause(ctx), errInterrupted) {
		return ""
	}
	return reason
}

// enterModel marks a model call in progress, and fails if the run was
// interrupted; leaveModel ends it.
func (h *Run) enterModel() error {
	if h == nil {
		return nil
	}
	h.inModel.Store(true)
	if h.interrupted() != "" {
		return &Error{Kind: FailCanceled, Code: CodeInterrupted, Msg: "the run was interrupted", Err: errInterrupted}
	}
	return nil
}

func (h *Run) leaveModel() {
	if h != nil {
		h.inModel.Store(false)
	}
}

// failure returns the error the run ended with, if any.
func (h *Run) failure() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.err
}

func (h *Run) setErr(err error) {
	if h == nil {
		return
	}
	h.mu.Lock()
	if h.err == nil {
		h.err = err
	}
	h.mu.Unlock()
}

// giveUp ends h, whose run never began (its session could not be leased
// or loaded, or the use that claimed it ended without a run): whoever
// found h while the session was claimed (Active, a control request, a
// delegation waiting for the run) stops waiting for it. Wait returns err.
// h must not be used for a run afterwards.
func (h *Run) giveUp(err error) {
	if h == nil {
		return
	}
	h.mu.Lock()
	if !h.finished {
		if h.err == nil {
			h.err = err
		}
		h.res.SessionID = h.sessionID
		h.finished = true
		if h.done != nil {
			close(h.done)
		}
	}
	h.mu.Unlock()
}

// settle records the run's outcome, as the store holds it, from x's
// state, which the caller still owns (before it goes to the cache).
func (h *Run) settle(x *Exec) {
	if h == nil {
		return
	}
	st := x.st
	h.mu.Lock()
	defer h.mu.Unlock()
	h.res = Result{SessionID: st.SessionID, RunID: st.RunID, Status: x.stored, Reason: x.storedReason, Usage: st.RunUsage}
	if x.stored == session.StatusDone {
		h.res.Text = st.Final
	}
	if x.stored != session.StatusDone && x.stored == st.Status {
		h.res.Err = st.LastError
	}
	if x.stored != st.Status || x.dirty {
		// The run could not store how it ended: as far as the store is
		// concerned it is where its last commit left it (running), and
		// resumable.
		why := h.err
		if why == nil {
			why = errors.New("its last commit failed")
		}
		h.res.Err = &session.Error{Code: CodeEndNotStored, Message: "the run stopped without storing how it ended: " + why.Error(), Recoverable: true}
		if h.err == nil {
			h.err = &Error{Kind: FailStore, Code: CodeEndNotStored, Msg: "the run stopped without storing how it ended", Err: why}
		}
	}
}

// finish ends h, whose result settle recorded: it wakes Wait and the
// run's streams.
// letGo marks the run as letting go of its session: it has stopped, and
// what remains (observers, the cache, the lease, the registry) takes
// moments. A deletion waits for such a run rather than refuse.
func (h *Run) letGo() {
	if h == nil {
		return
	}
	h.mu.Lock()
	h.ending = true
	h.mu.Unlock()
}

// letting reports whether the run is letting go of its session (letGo).
func (h *Run) letting() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.ending
}

func (h *Run) finish() {
	if h == nil {
		return
	}
	h.mu.Lock()
	h.finished = true
	if h.done != nil {
		close(h.done)
	}
	h.mu.Unlock()
	if h.parent != nil {
		h.parent.disown(h)
	}
}

// Events yields the run's events: those committed since it started, read
// from the store, then each new one as it commits, with live token events
// while it streams, until its run_finished. Reading them does not hold up
// the run, and leaving the loop does not stop it. The stream ends when the
// run does: a run that stopped without storing how it ended yields, last,
// the error Wait returns. Other errors are ctx's, or the store's.
func (h *Run) Events(ctx context.Context) iter.Seq2[*session.Event, error] {
	return func(yield func(*session.Event, error) bool) {
		wctx, cancel := context.WithCancel(session.WithTenant(ctx, h.tenant))
		defer cancel()
		h.mu.Lock()
		id, after := h.id, h.after
		h.mu.Unlock()
		for e, err := range h.r.watch(wctx, h.sessionID, after, h.Done()) {
			if err != nil {
				yield(nil, err)
				return
			}
			if !yield(e, nil) {
				return
			}
			if e.Type == session.TypeRunFinished && (id == "" || e.RunID == id) {
				return
			}
		}
		if err := ctx.Err(); err != nil {
			yield(nil, err)
			return
		}
		// The run stopped, and its end is not in the log.
		_, err := h.Wait(ctx)
		if err == nil {
			err = &Error{Kind: FailStore, Code: CodeEndNotStored, Msg: "the run stopped without storing how it ended"}
		}
		yield(nil, err)
	}
}

// Result summarises a run that stopped.
type Result struct {
	SessionID string
	RunID     string
	Status    session.Status
	// Reason is run_finished's reason, when the run stopped early (a
	// limit's name, an error code).
	Reason string
	Text   string
	Usage  model.Usage
	// Events are the run's committed events (Collect fills them in).
	Events []*session.Event
	// Err is the run's error event, when it failed.
	Err *session.Error
}

// Collect drains a Run or Resume sequence into a Result, keeping the
// committed events.
func Collect(seq iter.Seq2[*session.Event, error]) (*Result, error) {
	res := &Result{}
	for e, err := range seq {
		if err != nil {
			return res, err
		}
		if e.Seq == 0 {
			continue
		}
		res.SessionID, res.RunID = e.SessionID, e.RunID
		res.Events = append(res.Events, e)
		switch d := e.Data.(type) {
		case *session.Final:
			res.Text = d.Text
		case *session.Error:
			res.Err = d
		case *session.RunFinished:
			res.Status = d.Status
			res.Usage = d.Usage
			res.Reason = d.Reason
		}
	}
	return res, nil
}
