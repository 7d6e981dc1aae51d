package agentrt

import (
	"context"
	"errors"

	"github.com/agentrt/agentrt/session"
)

// Observer watches every run of a Runner from outside, without changing
// it: the events of each commit once they are stored, and the end of each
// run. It is how metrics and traces attach (package telemetry). Unlike
// hooks, which belong to an agent and see one kind of call each, an
// observer sees the log itself, so it sees every agent's runs alike —
// turns, resumptions after a crash or a person's answer, sub-agents' runs,
// and the failed model attempts that no hook sees.
//
// Its methods are called on the goroutine of the run they are about:
// concurrently for different sessions, in order for one session. They
// must be safe for concurrent use and quick, since the run waits for them.
// A panic in them is recovered and dropped: the commit it follows is
// already stored.
type Observer interface {
	// Committed is called after each commit, with the events it stored in
	// the order of their seq, before the run's caller and its watchers
	// see them. Commits made outside a run (a person's answer recorded by
	// Resolve, a rule added) are observed too; info's RunID is then the
	// session's last run's, or empty. events is reused once Committed
	// returns; the events themselves do not change afterwards and may be
	// kept.
	Committed(ctx context.Context, info HookInfo, events []*session.Event)
	// RunEnded is called once for each run begun in this Runner (a turn, a
	// resumption, a sub-agent's run, a session driven with Begin and
	// Step), when it has stopped, before Run.Wait returns and while the
	// session is still this run's. err is nil when the run's end is
	// stored (its run_finished went to Committed) or the run never began;
	// otherwise it says why the run stopped without storing how it ended
	// — its session's lease was lost (code lease_lost or lease_expired) or
	// a commit failed — and the store still says running.
	RunEnded(info HookInfo, err error)
}

// observeCommit hands a commit's events to the observer (set).
func (x *Exec) observeCommit(ctx context.Context) {
	o := x.r.observer
	info := x.info()
	if info.Tenant == "" {
		// A write that is no run's (an agent's rule log) has no session
		// key; its context has the tenant.
		info.Tenant = session.TenantOf(ctx)
	}
	_ = guard("an observer", func() { o.Committed(ctx, info, x.pending) })
}

// observeEnd tells the observer, if any, that x's run stopped. It runs
// first in Runner.finish, while the session is still claimed: no other run
// of this runner can commit to the session before the observer has seen
// this one end.
func (r *Runner) observeEnd(x *Exec) {
	h := x.handle
	if r.observer == nil || h == nil {
		return
	}
	var err error
	// The run did not store how it ended when the store's status is not
	// the state's (the condition Run.finish reports as end_not_stored).
	if x.stored != x.st.Status || x.dirty {
		h.mu.Lock()
		err = h.err
		h.mu.Unlock()
		if err == nil {
			err = &Error{Kind: FailStore, Code: CodeEndNotStored, Msg: "the run stopped without storing how it ended",
				Err: errors.New("its last commit failed")}
		}
	}
	info := x.info()
	_ = guard("an observer", func() { r.observer.RunEnded(info, err) })
}
