package agentrt

import (
	"context"
	"errors"
	"iter"
	"sync"
	"sync/atomic"

	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/session"
)

// Run is a run in progress in this process: a turn started by Start, a
// resumption started by StartResume, or the run under Runner.Run and
// Runner.Resume. A run is separate from whoever watches it: it goes on
// while its events are read by any number of watchers (Events,
// Runner.Watch), or by none.
//
// Its methods are safe for concurrent use.
type Run struct {
	r         *Runner
	id        string
	tenant    string
	sessionID string
	after     int64 // the session's last seq before the run's first event
	cancel    context.CancelCauseFunc

	// lease and topic are the run's lease keeper and, when no watcher
	// came first, its session's topic (see hub), kept here to spare two
	// allocations per run.
	lease leaseKeeper
	topic topic

	interrupt atomic.Pointer[string] // the reason given to Interrupt
	inModel   atomic.Bool            // a model call is in progress

	mu       sync.Mutex
	done     chan struct{} // made by the first Done or Wait; guarded by mu
	finished bool          // guarded by mu
	res      Result        // guarded by mu; final once finished
	err      error         // guarded by mu
}

func newRun(r *Runner, sessionID string, after int64, cancel context.CancelCauseFunc) *Run {
	return &Run{r: r, sessionID: sessionID, after: after, cancel: cancel}
}

// ID returns the run's id (the run_id of its events).
func (h *Run) ID() string { return h.id }

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

// Wait waits for the run to stop and returns its outcome. The error is
// ctx's when ctx ends first, or the error that stopped the run from
// storing its events (the stored run is then resumable); a run that failed
// as such (a model that failed for good, say) has a Result with status
// failed and a nil error.
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
func (h *Run) Cancel() {
	h.cancel(&Error{Kind: FailCanceled, Code: "canceled", Msg: "the run was canceled"})
}

// Interrupt stops the run at its next safe point and records why: a
// model call in flight is abandoned (it has no side effects), tool calls
// in flight finish and their results are stored, calls the model asked for
// that have not started are answered "not run", and the run ends with an
// interrupted event and status interrupted, its history coherent for the
// next turn. The gateway uses it to restart a turn with newer input.
func (h *Run) Interrupt(reason string) {
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

// enterModel marks a model call in progress, and fails if the run was
// interrupted; leaveModel ends it.
func (h *Run) enterModel() error {
	if h == nil {
		return nil
	}
	h.inModel.Store(true)
	if h.interrupted() != "" {
		return &Error{Kind: FailCanceled, Code: "interrupted", Msg: "the run was interrupted", Err: errInterrupted}
	}
	return nil
}

func (h *Run) leaveModel() {
	if h != nil {
		h.inModel.Store(false)
	}
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

// finish records the run's outcome from its state and wakes Wait.
func (h *Run) finish(st *State) {
	if h == nil {
		return
	}
	h.mu.Lock()
	h.res = Result{SessionID: st.SessionID, RunID: st.RunID, Status: st.Status, Text: st.Final, Usage: st.RunUsage}
	if st.Status != session.StatusDone {
		h.res.Err = st.LastError
	}
	if h.err != nil && h.res.Status == session.StatusRunning {
		// The run could not store how it ended: as far as the store is
		// concerned it is still running, and resumable.
		h.res.Err = &session.Error{Code: AsError(h.err).ErrorCode(), Message: h.err.Error(), Recoverable: true}
	}
	h.finished = true
	if h.done != nil {
		close(h.done)
	}
	h.mu.Unlock()
}

// Events yields the run's events: those committed since it started, read
// from the store, then each new one as it commits, with live token events
// while it streams, until its run_finished. Reading them does not hold up
// the run, and leaving the loop does not stop it. The error is ctx's, or
// the store's.
func (h *Run) Events(ctx context.Context) iter.Seq2[*session.Event, error] {
	return func(yield func(*session.Event, error) bool) {
		wctx, cancel := context.WithCancel(session.WithTenant(ctx, h.tenant))
		defer cancel()
		for e, err := range h.r.Watch(wctx, h.sessionID, h.after) {
			if err != nil {
				yield(nil, err)
				return
			}
			if !yield(e, nil) {
				return
			}
			if e.Type == session.TypeRunFinished && (h.id == "" || e.RunID == h.id) {
				return
			}
		}
		if err := ctx.Err(); err != nil {
			yield(nil, err)
		}
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
