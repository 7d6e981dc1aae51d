package agentrt

import (
	"cmp"
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/agentrt/agentrt/session"
)

// Driving a session step by step (Begin, Step, StepSession): the caller,
// or an engine of its own, decides when each step runs. Between its steps
// the session stays this runner's as it would during a run — claimed
// here, its lease renewed, so that Recover elsewhere leaves it alone —
// for as long as steps keep coming: a session that gets no step for a
// lease TTL is let go of (its lease released, resumable, and taken by the
// next step or by Recover). Its run ends, and the session is let go of,
// when a step stops it (done, waiting, paused, failed, ...); a control
// request (Runner.Cancel, Runner.Interrupt) between steps stops it at
// once.

// stepping holds the sessions driven step by step, between their steps.
type stepping struct {
	mu    sync.Mutex
	holds map[skey]*hold // guarded by mu
}

// hold is a session driven step by step: what a run's Exec holds, kept
// between steps.
type hold struct {
	key   skey
	h     *Run
	ctx   context.Context // the handle's: canceled by a control request, a lost lease, Close
	lease *leaseKeeper
	topic *topic
	st    *State
	busy  bool        // a step is in progress; guarded by stepping.mu
	idle  *time.Timer // lets go of the session when no step comes; guarded by stepping.mu
	// deferCalls: the step under way leaves its tool calls to RunCall
	// (StepSessionCalls); batch, the calls it left (guarded by
	// stepping.mu), while they run — the hold busy meanwhile.
	deferCalls bool
	batch      *callBatch
}

// Begin commits the start of a turn (run_started) and returns the state
// without running it, for callers that drive the run with Step. The
// session stays this runner's between steps (see Step).
func (r *Runner) Begin(ctx context.Context, sessionID string, in Input) (*State, error) {
	x, rctx, err := r.startTurn(ctx, sessionID, in, true)
	if err != nil {
		return nil, err
	}
	if err := x.Commit(ctx); err != nil {
		r.finish(x)
		return nil, err
	}
	st := x.st
	r.keep(x, rctx)
	return st, nil
}

// Step decides and executes one instruction on st, a state returned by
// Begin or Load whose status is running, and returns the events it
// committed; live events are not returned. A failure of the run is
// recorded, as in Run, and ends the run; the error is non-nil when the
// step's events could not be stored, or the session is busy, leased
// elsewhere or was advanced by another writer: st is then not the
// store's, and the caller reloads the session.
//
// The session stays this runner's between steps, its lease renewed, as
// long as steps come within a lease TTL of each other; its run ends when
// a step stops it.
func (r *Runner) Step(ctx context.Context, st *State) ([]*session.Event, error) {
	if st.Status != session.StatusRunning {
		return nil, &Error{Kind: FailState, Code: CodeNotRunning, Msg: fmt.Sprintf("session %q is %s, not running", st.SessionID, st.Status)}
	}
	hd, err := r.holdFor(ctx, st.SessionID, st)
	if err != nil {
		return nil, err
	}
	return r.stepHeld(ctx, hd)
}

// StepSession loads session id (of ctx's tenant), runs one step of its
// run and commits it, as Step does: for an engine that drives sessions by
// id, one step at a time, from any process (the session must be running:
// a turn begun with Begin, or a run that stopped with its process). A
// session stepped elsewhere a moment ago is leased there until that
// runner lets go of it: lease_held says until when.
func (r *Runner) StepSession(ctx context.Context, id string) ([]*session.Event, error) {
	hd, err := r.holdFor(ctx, id, nil)
	if err != nil {
		return nil, err
	}
	return r.stepHeld(ctx, hd)
}

// LetGo lets go of session id (of ctx's tenant) if this runner holds it
// between steps (Begin, BeginResume, Step, StepSession): its lease
// released now rather than after a lease TTL without steps, and its run
// left running in the store for the next step, from any process. An
// engine's worker steps a session, then lets go of it: the next step may
// run anywhere.
func (r *Runner) LetGo(ctx context.Context, id string) {
	k := keyOf(ctx, id)
	r.stepping.mu.Lock()
	hd := r.stepping.holds[k]
	r.stepping.mu.Unlock()
	if hd != nil {
		r.stepping.letGo(r, hd, false)
	}
}

// BeginResume commits the resumption of session id's stopped run
// (run_resumed; the default decisions of its requests that expired) and
// returns the state without running it, as Begin does for a turn, for
// callers that drive the run with Step or StepSession: an engine whose
// timer says a request's deadline passed. Only a waiting run is resumed:
// one that still waits for a person (a request not expired) is an error
// of code waiting; any other — running, or stopped by a person meanwhile
// — is nothing_to_resume, and is left as it is.
func (r *Runner) BeginResume(ctx context.Context, id string) (*State, error) {
	x, rctx, err := r.startResume(ctx, id, true, resumeOf{waiting: true})
	if err != nil {
		return nil, err
	}
	if err := x.Commit(ctx); err != nil {
		r.finish(x)
		return nil, err
	}
	if x.st.Status != session.StatusRunning {
		st := x.st // ended as it resumed (a crash loop)
		r.finish(x)
		return st, nil
	}
	st := x.st
	r.keep(x, rctx)
	return st, nil
}

// holdFor returns the hold of session id, taken for a step (busy): the
// one kept since its last step, else a new one — the session claimed,
// leased and loaded (st, when not nil, is the caller's state of it, which
// must be the store's).
func (r *Runner) holdFor(ctx context.Context, id string, st *State) (*hold, error) {
	k := keyOf(ctx, id)
	if hd, err := r.stepping.take(k, st); hd != nil || err != nil {
		return hd, err
	}
	rctx, h := r.newRun(ctx, id, true)
	x, err := r.begin(ctx, id, h, false, "")
	if err != nil {
		h.cancel(nil)
		h.giveUp(err)
		return nil, err
	}
	giveUp := func(err error) (*hold, error) {
		x.handle = nil
		r.finish(x)
		h.cancel(nil)
		h.giveUp(err)
		return nil, err
	}
	switch {
	case x.st.Status != session.StatusRunning:
		return giveUp(&Error{Kind: FailState, Code: CodeNotRunning, Msg: fmt.Sprintf("session %q is %s, not running", id, x.st.Status)})
	case st != nil && st.Seq != x.st.Seq:
		return giveUp(&Error{Kind: FailStore, Code: CodeConflict,
			Msg: fmt.Sprintf("session %s is at event %d in the store, the state given at %d: load it again", id, x.st.Seq, st.Seq)})
	case st != nil:
		r.cache.take(k)
		st.agentRules, st.rulesFrom, st.rulesCtx = nil, r, ctx
		if st.policy == nil {
			if err := st.AttachPolicy(r.policyOf(st.Agent)); err != nil {
				return giveUp(&Error{Kind: FailPolicy, Msg: "session " + id, Err: err})
			}
		}
		x.st = st
	}
	h.begins(x.st.RunID, cmp.Or(x.st.TurnID, x.st.RunID), x.st.Seq)
	x.lease.watch(h.cancel)
	hd := r.keep(x, rctx)
	hd2, err := r.stepping.take(k, nil)
	if hd2 != hd {
		if err == nil {
			// Let go of meanwhile (a control request, LetGoAll, Close).
			err = &Error{Kind: FailState, Code: CodeNotRunning, Msg: fmt.Sprintf("session %s was stopped or let go of as its step began", id)}
		}
		return nil, err
	}
	return hd, nil
}

// keep turns the run of x, which goes on, into a hold between steps, and
// puts x back in the pool.
func (r *Runner) keep(x *Exec, ctx context.Context) *hold {
	hd := &hold{key: x.key, h: x.handle, ctx: ctx, lease: x.lease, topic: x.topic, st: x.st}
	stop := func() { r.stepping.stopIdle(r, hd) }
	hd.h.onControl.Store(&stop)
	r.stepping.put(r, hd)
	r.putExec(x)
	return hd
}

// take marks the hold of k busy and returns it, or nil if there is none.
// st, when not nil, is the caller's state, which replaces the hold's if
// it is at the same seq (a conflict otherwise).
func (s *stepping) take(k skey, st *State) (*hold, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	hd := s.holds[k]
	if hd == nil {
		return nil, nil
	}
	if hd.busy {
		return nil, &Error{Kind: FailState, Code: CodeBusy, Msg: fmt.Sprintf("session %q is being stepped in this process", k.id)}
	}
	if st != nil && st != hd.st {
		if st.Seq != hd.st.Seq {
			return nil, &Error{Kind: FailStore, Code: CodeConflict,
				Msg: fmt.Sprintf("session %s is at event %d, the state given at %d: load it again", k.id, hd.st.Seq, st.Seq)}
		}
		st.policy, st.agentRules, st.rulesFrom, st.rulesCtx = hd.st.policy, hd.st.agentRules, hd.st.rulesFrom, hd.st.rulesCtx
		hd.st = st
	}
	hd.busy = true
	hd.idle.Stop()
	return hd, nil
}

// put keeps hd between steps, and arms the timer that lets go of it.
func (s *stepping) put(r *Runner, hd *hold) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.holds == nil {
		s.holds = make(map[skey]*hold)
	}
	s.holds[hd.key] = hd
	hd.busy = false
	hd.idle = time.AfterFunc(r.leaseTTL, func() { s.letGo(r, hd, false) })
	if hd.ctx.Err() != nil || hd.h.interrupted() != "" {
		// Stopped while its step ran (or before it was held), and the
		// step did not see it.
		go s.stopIdle(r, hd)
	}
}

// stopIdle ends the run of hd now, if no step is in progress: a control
// request came (or the runner closes) between steps.
func (s *stepping) stopIdle(r *Runner, hd *hold) {
	s.mu.Lock()
	b := hd.batch
	s.mu.Unlock()
	if b != nil {
		b.stopChildren(r) // the engine runs its sub-agents' turns
		if hd.h.interrupted() != "" {
			// Calls not begun are not begun now: the interruption answers
			// them "not run" once the calls in flight end.
			b.giveUpWaiting(false)
		}
	}
	s.letGo(r, hd, true)
}

// letGo lets go of hd, if it is held and not busy: with stop, its run is
// ended (canceled or interrupted, as its handle says) first; else it
// stays running in the store, resumable.
func (s *stepping) letGo(r *Runner, hd *hold, stop bool) {
	s.mu.Lock()
	if s.holds[hd.key] != hd || hd.busy {
		s.mu.Unlock()
		return
	}
	delete(s.holds, hd.key)
	hd.idle.Stop()
	s.mu.Unlock()
	x := r.execOf(hd)
	if stop {
		ctx, cancel := afterEnd(hd.ctx)
		if reason := hd.h.interruptedFor(hd.ctx); reason != "" {
			x.interrupt(ctx, reason)
		} else {
			x.fail(hd.ctx, context.Cause(hd.ctx))
		}
		cancel()
	}
	r.finish(x)
}

// closeAll ends the runs of the sessions held between steps (Close).
func (s *stepping) closeAll() {
	s.mu.Lock()
	var hs []*hold
	for _, hd := range s.holds {
		hs = append(hs, hd)
	}
	s.mu.Unlock()
	for _, hd := range hs {
		hd.h.Cancel() // which stops a run held between steps
	}
}

// execOf returns an Exec for the held run of hd.
func (r *Runner) execOf(hd *hold) *Exec {
	a, _ := r.agent(hd.st.Agent) // the hold was made from a run of a known agent
	x := r.newExec(a, hd.st)
	x.lease, x.handle, x.topic, x.key = hd.lease, hd.h, hd.topic, hd.key
	x.fence = hd.lease.token()
	x.stored = session.StatusRunning
	x.held = true
	return x
}

// stepHeld runs one step of the held run hd, then keeps it for the next
// step, or ends it if it stopped.
func (r *Runner) stepHeld(ctx context.Context, hd *hold) ([]*session.Event, error) {
	x := r.execOf(hd)
	x.deferCalls, hd.deferCalls = hd.deferCalls, false
	var out []*session.Event
	x.yield = func(e *session.Event, err error) bool {
		if e != nil && e.Seq != 0 {
			out = append(out, e)
		}
		return true
	}
	// The step ends with the caller's ctx, or the hold's.
	sctx, cancel := context.WithCancelCause(ctx)
	stop := context.AfterFunc(hd.ctx, func() { cancel(context.Cause(hd.ctx)) })
	if reason := hd.h.interruptedFor(hd.ctx); reason != "" {
		x.interrupt(sctx, reason)
	} else if err := r.stepChecked(sctx, x); err != nil {
		r.stepFailed(sctx, x, err)
	}
	stop()
	cancel(nil)
	hd.h.mu.Lock()
	failed := hd.h.err != nil
	hd.h.mu.Unlock()
	if b := x.deferred; b != nil && x.st.Status == session.StatusRunning && !x.dirty && !failed {
		// Its tool calls are left to RunCall: the session stays busy
		// until they end (callBatch.end ends the step).
		x.deferred, x.yield = nil, nil
		r.holdBatch(hd, x, b)
		return out, nil
	}
	x.deferred = nil
	return out, r.endStep(hd, x)
}

// endStep ends a step of the held run hd: it keeps the run for the next
// step, or ends it if it stopped (or its step failed, which it returns).
func (r *Runner) endStep(hd *hold, x *Exec) error {
	hd.h.mu.Lock()
	err := hd.h.err
	hd.h.mu.Unlock()
	if re := AsError(err); err != nil && re.Kind != FailStore && re.Code != CodeLeaseLost {
		err = nil // recorded as the run's failure
	}
	if x.st.Status != session.StatusRunning || x.dirty || err != nil {
		r.stepping.drop(hd)
		r.finish(x)
		return err
	}
	hd.st = x.st
	x.handle, x.lease, x.topic = nil, nil, nil
	r.putExec(x)
	r.stepping.put(r, hd)
	return nil
}

// drop forgets hd, whose run ends.
func (s *stepping) drop(hd *hold) {
	s.mu.Lock()
	if s.holds[hd.key] == hd {
		delete(s.holds, hd.key)
	}
	s.mu.Unlock()
}

// LetGoAll lets go of every session this runner holds between steps, as
// LetGo does, the tool calls of a batch that no RunCall claimed given up
// first: a worker that stops taking work (its engine's worker stopped)
// leaves its sessions to the next step, anywhere, at once. A session
// whose step or tool call is in progress is left to it.
func (r *Runner) LetGoAll() {
	r.stepping.mu.Lock()
	hs := make([]*hold, 0, len(r.stepping.holds))
	for _, hd := range r.stepping.holds {
		hs = append(hs, hd)
	}
	r.stepping.mu.Unlock()
	for _, hd := range hs {
		r.stepping.mu.Lock()
		b := hd.batch
		r.stepping.mu.Unlock()
		if b != nil {
			b.giveUp()
		}
		r.stepping.letGo(r, hd, false)
	}
}
