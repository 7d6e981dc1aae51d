package agentrt

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agentrt/agentrt/session"
)

// DefaultLeaseTTL is how long a session's lease lasts without renewal
// when Config.LeaseTTL is zero. A runner renews its leases every third of
// it, so a process that dies holds its sessions for at most this long
// (less when another process on the same machine sees that it died).
const DefaultLeaseTTL = 30 * time.Second

// DefaultMaxRecoveries is Config.MaxRecoveries when it is zero.
const DefaultMaxRecoveries = 3

// ownerID names this process's runner in leases: host, process id and a
// random part, so that two runners of one process differ and a process on
// the same host can tell whether the owner is still alive.
func ownerID() string {
	host, _ := os.Hostname()
	if host == "" {
		host = "unknown"
	}
	var b [4]byte
	_, _ = rand.Read(b[:])
	return host + ":" + strconv.Itoa(os.Getpid()) + ":" + hex.EncodeToString(b[:])
}

// ownerDead reports whether owner is a runner of a process on this host
// that no longer exists. It never says so of an owner it cannot judge.
func ownerDead(owner string) bool {
	parts := strings.Split(owner, ":")
	if len(parts) != 3 {
		return false
	}
	host, _ := os.Hostname()
	if host == "" || parts[0] != host {
		return false
	}
	pid, err := strconv.Atoi(parts[1])
	if err != nil || pid <= 0 || pid == os.Getpid() {
		return false
	}
	return processGone(pid)
}

// Orphaned reports whether session s is marked running but no process
// runs it, as far as a process on this host can tell at now: it has no
// lease, its lease expired, or its lease is held by a process of this
// host that no longer exists. Its run stopped with that process (a crash,
// a kill); a resume in any process, or Recover, goes on with it.
func Orphaned(s *session.Session, now time.Time) bool {
	if s.Status != session.StatusRunning {
		return false
	}
	l := s.Lease
	return l == nil || l.Owner == "" || !now.Before(l.Expires) || ownerDead(l.Owner)
}

// leaseKeeper holds a run's lease on its session: it renews it every
// third of its TTL on a timer (time.AfterFunc: no goroutine between
// renewals) and, when a renewal finds the lease taken over, cancels the
// run. stop joins any renewal in flight.
//
// A nil *leaseKeeper (a store without leases) is valid and does nothing.
type leaseKeeper struct {
	leaser session.Leaser
	tenant string // the session's: renewals and the release run on contexts of their own
	ttl    time.Duration
	cancel context.CancelCauseFunc // the run's; set by watch

	mu      sync.Mutex
	lease   session.Lease // guarded by mu
	renewed time.Time     // monotonic time of the last grant; guarded by mu
	lost    error         // guarded by mu
	stopped bool          // guarded by mu
	freed   bool          // released by the run's last commit; guarded by mu
	timer   *time.Timer   // guarded by mu
	wg      sync.WaitGroup
}

// token returns the fencing token commits carry.
func (k *leaseKeeper) token() int64 {
	if k == nil {
		return 0
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.lease.Token
}

// watch starts renewing the lease; a loss cancels the run with cancel.
func (k *leaseKeeper) watch(cancel context.CancelCauseFunc) {
	if k == nil {
		return
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	k.cancel = cancel
	k.timer = time.AfterFunc(k.ttl/3, k.renew)
}

func (k *leaseKeeper) renew() {
	k.mu.Lock()
	if k.stopped {
		k.mu.Unlock()
		return
	}
	k.wg.Add(1)
	l := k.lease
	k.mu.Unlock()
	defer k.wg.Done()

	ctx, cancel := context.WithTimeout(session.WithTenant(context.Background(), k.tenant), k.ttl/3)
	nl, err := k.leaser.Renew(ctx, l, k.ttl)
	cancel()

	k.mu.Lock()
	defer k.mu.Unlock()
	switch {
	case err == nil:
		k.lease, k.renewed = nl, time.Now()
	case errors.Is(err, session.ErrFenced) || errors.Is(err, session.ErrNotFound):
		k.lost = &Error{Kind: FailState, Code: CodeLeaseLost, Msg: "session " + l.SessionID + " was taken over by another runner", Err: err}
		if k.cancel != nil {
			k.cancel(k.lost)
		}
		return
	}
	// A failed renewal is tried again at the next tick; check stops side
	// effects once the lease may have expired.
	if !k.stopped {
		k.timer.Reset(k.ttl / 3)
	}
}

// check reports whether the run may still act for the session: its lease
// was not lost and has not expired as far as this process can tell. An
// old lease is renewed first.
func (k *leaseKeeper) check(ctx context.Context) error {
	if k == nil {
		return nil
	}
	k.mu.Lock()
	lost, l, age := k.lost, k.lease, time.Since(k.renewed)
	k.mu.Unlock()
	if lost != nil {
		return lost
	}
	if age < k.ttl/2 {
		return nil
	}
	nl, err := k.leaser.Renew(ctx, l, k.ttl)
	k.mu.Lock()
	defer k.mu.Unlock()
	if err == nil {
		k.lease, k.renewed = nl, time.Now()
		return nil
	}
	if errors.Is(err, session.ErrFenced) {
		k.lost = &Error{Kind: FailState, Code: CodeLeaseLost, Msg: "session " + l.SessionID + " was taken over by another runner", Err: err}
		return k.lost
	}
	if time.Since(k.renewed) >= k.ttl {
		return &Error{Kind: FailState, Code: CodeLeaseExpired,
			Msg: fmt.Sprintf("the lease on session %s expired and could not be renewed", l.SessionID), Err: err}
	}
	return nil // the store hiccupped, but the lease is still ours for a while
}

// halt stops the renewals and waits for one in flight. It reports
// whether the lease is still held, as far as this process knows: the
// run's last commit then releases it (session.Commit.Release).
func (k *leaseKeeper) halt() bool {
	if k == nil {
		return false
	}
	k.mu.Lock()
	k.stopped = true
	if k.timer != nil {
		k.timer.Stop()
	}
	k.mu.Unlock()
	k.wg.Wait()
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.lost == nil && !k.freed
}

// released records that a commit released the lease.
func (k *leaseKeeper) released() {
	k.mu.Lock()
	k.freed = true
	k.mu.Unlock()
}

// stop stops the renewals, waits for one in flight, and releases the
// lease unless it was lost or a commit released it.
func (k *leaseKeeper) stop() {
	if !k.halt() {
		return
	}
	k.mu.Lock()
	l := k.lease
	k.mu.Unlock()
	// Not ctx, which may be canceled: the release must happen. A store
	// bounds its own waits; if it fails, the lease expires.
	_ = k.leaser.Release(session.WithTenant(context.Background(), k.tenant), l)
}

// keepLease returns the keeper of l, a lease this runner holds: into,
// when not nil (a Run's own), else a new one.
func (r *Runner) keepLease(ctx context.Context, l session.Lease, into *leaseKeeper) *leaseKeeper {
	k := into
	if k == nil {
		k = new(leaseKeeper)
	}
	k.leaser, k.tenant, k.ttl, k.lease, k.renewed = r.leaser, session.TenantOf(ctx), r.leaseTTL, l, time.Now()
	return k
}

// acquireLease takes session id's lease for this runner. A lease held by a
// dead process of this host is taken over at once; one held by a live
// owner is an error saying who holds it and until when, unless wait is
// set: then it polls until the lease is free or ctx ends.
//
// The keeper is into, when not nil (a Run's own), else a new one.
func (r *Runner) acquireLease(ctx context.Context, id string, wait bool, into *leaseKeeper) (*leaseKeeper, error) {
	if r.leaser == nil {
		return nil, nil
	}
	delay := 10 * time.Millisecond
	for {
		l, err := r.leaser.Acquire(ctx, id, r.owner, r.leaseTTL)
		if err == nil {
			return r.keepLease(ctx, l, into), nil
		}
		var held *session.LeaseHeldError
		switch {
		case errors.Is(err, session.ErrNotFound):
			return nil, notFound(id, err)
		case !errors.As(err, &held):
			return nil, &Error{Kind: FailStore, Msg: "acquire the lease of session " + id, Err: err}
		case ownerDead(held.Lease.Owner):
			// Its process is gone: nothing can renew it. Whether this
			// release or another process's wins, the next Acquire decides.
			if rerr := r.leaser.Release(ctx, held.Lease); rerr != nil && !errors.Is(rerr, session.ErrFenced) {
				return nil, &Error{Kind: FailStore, Msg: "release the dead owner's lease of session " + id, Err: rerr}
			}
			continue
		case !wait:
			return nil, leaseHeld(id, held.Lease)
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, leaseHeld(id, held.Lease)
		case <-t.C:
		}
		delay = min(2*delay, 200*time.Millisecond)
	}
}

// leaseHeld is the lease_held error of session id, whose lease l another
// process holds. It says so once: the store's LeaseHeldError, which
// errors.As still finds, is its cause, not a second sentence.
func leaseHeld(id string, l session.Lease) error {
	return &Error{Kind: FailState, Code: CodeLeaseHeld, Err: &leaseHeldError{id: id, held: &session.LeaseHeldError{Lease: l}}}
}

// leaseHeldError says who runs a session and until when, for people; it
// wraps the store's LeaseHeldError.
type leaseHeldError struct {
	id   string
	held *session.LeaseHeldError
}

func (e *leaseHeldError) Error() string {
	return fmt.Sprintf("session %s is being run by %s (its lease lasts until %s, and is renewed while it runs)",
		e.id, e.held.Lease.Owner, e.held.Lease.Expires.UTC().Format("2006-01-02 15:04:05Z"))
}

func (e *leaseHeldError) Unwrap() error { return e.held }

// Recover resumes, in this runner, the sessions of every tenant whose run
// can go on without a person: waiting sessions whose requests all expired
// (they get their default decisions), and those whose run stopped because
// their process did: status running, and a lease that expired, or that
// belonged to a process of this host that no longer exists. Each such
// session is claimed by taking its lease, so across any number of
// processes calling Recover at once each session is resumed exactly once.
// A session that crashed its process MaxRecoveries times without progress
// is not resumed again: it ends failed with reason crash_loop. A
// sub-agent's session is left to its parent: the parent's run, resumed,
// resumes it and takes its answer, exactly once.
//
// A store with the indexes (session.LeaseIndex, session.RequestIndex) is
// asked for those sessions only; of another, Recover lists every running
// and waiting session.
//
// It returns the runs it started, in the background, as Start does;
// sessions another process claimed first are skipped. Call it at start-up
// and then periodically (every lease TTL, say), or let Sweep do so.
func (r *Runner) Recover(ctx context.Context) ([]*Run, error) {
	if r.leaser == nil {
		return nil, &Error{Kind: FailConfig, Code: CodeNoLeases, Msg: "Recover needs a store with leases (session.Leaser): without them a crashed run cannot be told from one running elsewhere"}
	}
	var (
		runs []*Run
		err  error
	)
	tried := make(map[skey]bool)
	if li, ok := r.store.(session.LeaseIndex); ok {
		runs, err = r.recoverLeases(ctx, li, tried, runs)
	} else {
		runs, err = r.recoverStatus(ctx, session.StatusRunning, runs)
	}
	if err != nil {
		return runs, err
	}
	if ri, ok := r.store.(session.RequestIndex); ok {
		return r.recoverRequests(ctx, ri, tried, runs)
	}
	return r.recoverStatus(ctx, session.StatusWaiting, runs)
}

// recoverStatus resumes the sessions of one status that Recover takes,
// listing every session of that status: running ones whose process
// stopped, and waiting ones whose requests have all expired (begin gives
// them their default decisions). It appends their runs to runs.
func (r *Runner) recoverStatus(ctx context.Context, status session.Status, runs []*Run) ([]*Run, error) {
	opt := session.ListOptions{Status: status, Limit: recoverPage, AllTenants: true}
	for {
		page, err := r.store.ListSessions(ctx, opt)
		if err != nil {
			return runs, &Error{Kind: FailStore, Msg: "list " + string(status) + " sessions", Err: err}
		}
		for _, s := range page {
			if runs, err = r.recoverSession(ctx, s, runs); err != nil {
				return runs, err
			}
		}
		if len(page) < opt.Limit {
			return runs, nil
		}
		// By its time too: a session deleted meanwhile still marks the
		// place.
		last := page[len(page)-1]
		opt.After, opt.AfterTenant, opt.AfterCreated = last.ID, last.Tenant, last.CreatedAt
	}
}

// recoverable reports whether s may be abandoned: not used by this
// runner, nor left to its revival of a run the store stopped (which holds
// the results the run had in hand), of an agent it knows. Whether its
// lease is free is for Acquire, by the store's clock, to decide
// (StartResume). A lease that names this runner is no sign of a run: a
// run's release that the store refused leaves one behind, as does a
// process restarted under the same owner name (Config.Owner).
func (r *Runner) recoverable(ctx context.Context, s *session.Session) bool {
	if _, ok := r.agents[s.Agent]; !ok {
		return false
	}
	if r.revive.holds(keyOf(ctx, s.ID)) {
		return false
	}
	_, active := r.Active(ctx, s.ID)
	return !active
}
