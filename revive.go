package agentrt

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cenkalti/backoff/v5"

	"github.com/agentrt/agentrt/session"
)

// When the store refuses a write (a full disk, a database that went away
// or became read-only), the run whose commit failed stops where its last
// commit left it: the store still says running. What happens then, in
// this file:
//
//   - Every stream that follows the run in this process ends with an
//     error saying so (code end_not_stored, recoverable): the run's own
//     (Run.Events) and the watchers of its session (Runner.Watch, and
//     what a server builds on it), which would otherwise wait for a
//     run_finished that never comes.
//   - The run's lease is given up (released, or left to expire when the
//     store refuses that write too), not kept: a run that stopped runs
//     nowhere, and a lease kept for it would stop a replica that can
//     write (another process on Postgres) from resuming it. The lease
//     decides who resumes, as after any crash: this process or another,
//     exactly once.
//   - A run that went on in the background (Start, StartResume, Recover,
//     ResolveAndContinue) is resumed by this process once the store
//     accepts writes again (run_resumed, reason store): it tries with an
//     exponential backoff, at once when another write succeeds. The tool
//     results the run had in hand and could not store are recorded by
//     the resumption instead of running their calls again; a call whose
//     result is lost (the resumption happens in another process) runs
//     again as its next attempt, with the same idempotency key, or asks a
//     person when its tool is at most once. A run on the caller's
//     goroutine (Run, Resume) is the caller's to resume.
//   - Runner.WriteFailure says the store refuses writes from a write it
//     refused until one it accepts (a server's readiness): while it does,
//     the runner tries a write now and then — the resumptions above, or a
//     claim taken and released — so that it finds out.

// Timings of the revival's backoff: the first try, and the longest wait
// between two.
const (
	reviveFirst = 100 * time.Millisecond
	reviveMost  = 5 * time.Second
)

// probeClaim is the claim the runner takes and releases to find out
// whether the store accepts writes again, when it has no run to resume.
const probeClaim = "agentrt.write-probe"

// reviver resumes the runs of this runner that stopped because the store
// refused a write, and keeps what the runner knows of the store's writes.
//
// Lifecycle: its goroutine starts with the first refused write (or
// stalled run), is counted as a use of the runner's registry (Close waits
// for it), and ends when no run is left to resume and the last write
// succeeded, or when the runner closes.
type reviver struct {
	r *Runner
	// failing is the store's last refusal of a write; nil once a write
	// succeeded. Read on every commit without the lock.
	failing atomic.Pointer[writeFailure]
	wake    chan struct{} // one value: try now (a write succeeded)
	stop    chan struct{} // closed by close
	// ctx bounds the tries: close cancels it, so that Close does not
	// wait for a store that hangs.
	ctx    context.Context
	cancel context.CancelFunc

	mu      sync.Mutex
	stalled map[skey]*stalledRun // guarded by mu
	running bool                 // the goroutine is at work; guarded by mu
	closed  bool                 // guarded by mu
}

// writeFailure is a write the store refused.
type writeFailure struct {
	err   error
	since time.Time // the first refusal since the last write it accepted
	last  time.Time
}

// stalledRun is a run that stopped because the store refused a write.
type stalledRun struct {
	runID string
	// results are the tool results the run had in hand and could not
	// store, each with the attempt of its call that gave it.
	results []heldResult
}

// heldResult is a tool result a run had and could not store.
type heldResult struct {
	res     session.ToolResult
	attempt int
}

// callAttempt is the attempt of a call whose result a run holds, not yet
// committed.
type callAttempt struct {
	id      string
	attempt int
}

func newReviver(r *Runner) *reviver {
	ctx, cancel := context.WithCancel(context.Background())
	return &reviver{r: r, wake: make(chan struct{}, 1), stop: make(chan struct{}), ctx: ctx, cancel: cancel,
		stalled: make(map[skey]*stalledRun)}
}

// WriteFailure reports whether the store refuses this runner's writes, as
// far as the runner knows: nil until the store refuses a write (a commit,
// or the renewals of a run's lease for a whole lease TTL), then an *Error
// of code store_unavailable, saying since when, until the store accepts
// one again. Meanwhile the runner tries writes by itself, with a backoff:
// it resumes the runs the refusal stopped, or takes and releases a claim
// (with a store that has leases; with another, the next commit tells). A
// server reports itself not ready while it is not nil.
func (r *Runner) WriteFailure() error {
	f := r.revive.failing.Load()
	if f == nil {
		return nil
	}
	return &Error{Kind: FailStore, Code: CodeStoreUnavailable, Err: f.err, Msg: fmt.Sprintf(
		"the store has refused writes since %s (the last at %s); the runs it stopped are resumed in this process once it accepts them again",
		f.since.UTC().Format(time.RFC3339), f.last.UTC().Format(time.RFC3339))}
}

// refused records that the store refused a write with err, and has the
// goroutine find out when it accepts writes again.
func (v *reviver) refused(err error) {
	now := time.Now()
	v.mu.Lock()
	defer v.mu.Unlock()
	f := &writeFailure{err: err, since: now, last: now}
	if cur := v.failing.Load(); cur != nil {
		f.since = cur.since
	}
	v.failing.Store(f)
	v.startLocked()
}

// wrote records that the store accepted a write: the runs it stopped are
// tried now.
func (v *reviver) wrote() {
	if v.failing.Load() == nil {
		return
	}
	v.failing.Store(nil)
	select {
	case v.wake <- struct{}{}:
	default:
	}
}

// stall records the run of session k (its id runID) as stopped by the
// store's refusal of a write, with the tool results it had in hand, for
// this process to resume. It reports false when the runner is closed.
func (v *reviver) stall(k skey, runID string, results []heldResult, cause error) bool {
	v.refused(cause)
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.closed {
		return false
	}
	s := v.stalled[k]
	if s == nil || s.runID != runID {
		s = &stalledRun{runID: runID}
		v.stalled[k] = s
	}
	s.results = append(s.results, results...)
	v.startLocked()
	return true
}

// holds reports whether session k has a run this process resumes once the
// store accepts writes (Recover leaves it alone: this process has its
// results in hand).
func (v *reviver) holds(k skey) bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.stalled[k] != nil
}

// forget drops s, session k's stalled run: it was resumed, or is no
// longer this process's to resume.
func (v *reviver) forget(k skey, s *stalledRun) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.stalled[k] == s {
		delete(v.stalled, k)
	}
}

// startLocked starts the goroutine, unless it runs or the runner is
// closed. v.mu is held.
func (v *reviver) startLocked() {
	if v.running || v.closed || !v.r.reg.enter() {
		return
	}
	v.running = true
	go v.loop()
}

// close stops the revivals: the goroutine ends (Close waits for it) and
// the runs it did not resume stay running in the store, for Recover. It
// is idempotent.
func (v *reviver) close() {
	v.mu.Lock()
	defer v.mu.Unlock()
	if !v.closed {
		v.closed = true
		close(v.stop)
		v.cancel()
		clear(v.stalled)
	}
}

// loop tries, with a backoff, to resume the stalled runs, or to write,
// until nothing is left to try or the runner closes.
func (v *reviver) loop() {
	defer v.r.reg.done()
	b := &backoff.ExponentialBackOff{InitialInterval: reviveFirst, RandomizationFactor: 0.2, Multiplier: 2, MaxInterval: reviveMost}
	b.Reset()
	t := time.NewTimer(b.NextBackOff())
	defer t.Stop()
	for {
		select {
		case <-v.stop:
			return
		case <-v.wake:
		case <-t.C:
		}
		if v.round() {
			b.Reset()
		}
		v.mu.Lock()
		if v.closed || len(v.stalled) == 0 && v.failing.Load() == nil {
			v.running = false
			v.mu.Unlock()
			return
		}
		v.mu.Unlock()
		t.Reset(b.NextBackOff())
	}
}

// round tries once to resume each stalled run, or, with none, to write:
// it reports whether the store accepted a write.
func (v *reviver) round() bool {
	v.mu.Lock()
	keys := slices.Collect(maps.Keys(v.stalled))
	v.mu.Unlock()
	if len(keys) == 0 {
		return v.probe()
	}
	wrote := false
	for _, k := range keys {
		v.mu.Lock()
		s, closed := v.stalled[k], v.closed
		v.mu.Unlock()
		if closed {
			return wrote
		}
		if s == nil {
			continue
		}
		err := v.r.resumeStalled(k, s)
		var e *Error
		switch {
		case err == nil:
			wrote = true
		case errors.As(err, &e) && (e.Code == CodeBusy || e.Kind == FailStore && e.Code != CodeConflict):
			// Used by another of this runner's runs for now (a
			// resolution, a person's resume, which then carries it on),
			// or the store still refuses: next round.
		default:
			// Taken over by another process, finished, canceled,
			// deleted, or the runner closed: no longer this
			// process's to resume.
			v.forget(k, s)
		}
	}
	return wrote
}

// probe takes and releases a claim: a write that tells whether the store
// accepts writes again. A store without leases has no claims to write:
// there, only a commit tells.
func (v *reviver) probe() bool {
	f := v.failing.Load()
	if f == nil {
		return true
	}
	if v.r.leaser == nil {
		return false
	}
	ctx, cancel := context.WithTimeout(v.ctx, commitTimeout)
	defer cancel()
	_, release, err := v.r.Claim(ctx, probeClaim)
	if err != nil {
		return false
	}
	release()
	v.failing.CompareAndSwap(f, nil)
	return true
}

// resumeStalled resumes s, the stalled run of session k, in the
// background: as StartResume, but only that run, still running (not one a
// person canceled meanwhile, or another process finished), and recording
// first the tool results s had in hand. s is forgotten once the
// resumption is stored.
func (r *Runner) resumeStalled(k skey, s *stalledRun) error {
	ctx, cancel := context.WithTimeout(session.WithTenant(r.revive.ctx, k.tenant), commitTimeout)
	defer cancel()
	x, rctx, err := r.startResume(ctx, k.id, true, resumeOf{stalled: s})
	if err != nil {
		return err
	}
	if err := x.Commit(rctx); err != nil {
		r.finish(x)
		return err
	}
	r.revive.forget(k, s)
	r.background(rctx, x)
	return nil
}

// refusedByStore returns the error that stopped x's run when it is the
// store's refusal of a write — a commit, or the lease's renewals for a
// whole TTL — with the session left running in the store (a run that
// could still be resumed); else nil.
func (x *Exec) refusedByStore() error {
	h := x.handle
	if h == nil || x.stored != session.StatusRunning {
		return nil
	}
	err := h.failure()
	var e *Error
	switch {
	case !errors.As(err, &e):
		return nil
	case e.Code == CodeLeaseExpired:
		return err
	case x.dirty && storeRefusal(err):
		return err
	}
	return nil
}

// storeRefusal reports whether err, a commit's, is the store's refusal of
// the write: not a lost lease, another writer's conflict or a canceled
// context.
func storeRefusal(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Kind == FailStore && e.Code != CodeConflict && !errors.Is(err, context.Canceled)
}

// stalledError is the error the watchers of x's session in this process
// end with when its run stopped because the store refused a write
// (cause); revived says this process resumes it.
func stalledError(x *Exec, cause error, revived bool) error {
	then := "it stays running in the store, for a resume to continue once the store accepts writes again"
	if revived {
		then = "this process resumes it once the store accepts writes again"
	}
	return &Error{Kind: FailStore, Code: CodeEndNotStored, Err: cause, Msg: fmt.Sprintf(
		"the run of session %s stopped without storing how it ended: the store refused a write (its last stored event is %d); %s: watch the session again from the last event you have",
		x.st.SessionID, x.committed, then)}
}
