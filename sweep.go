package agentrt

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"time"

	"github.com/agentrt/agentrt/session"
)

// recoverPage is how many sessions (or requests) Recover reads from the
// store at a time.
const recoverPage = 200

// recoverSession resumes s in the background, appending its run to runs,
// if this runner may (see recoverable) and no one else got there first.
// A session another process (or this one) took first, one that still
// waits for a person, one gone meanwhile, and a sub-agent's (its
// parent's run resumes it) are skipped.
func (r *Runner) recoverSession(ctx context.Context, s *session.Session, runs []*Run) ([]*Run, error) {
	sctx := session.WithTenant(ctx, s.Tenant)
	if !r.recoverable(sctx, s) {
		return runs, nil
	}
	if st, err := r.Load(sctx, s.ID); err == nil && st.Engine != r.engineName {
		// A run of another engine (one started before the deployment's
		// engine changed) is not continued here behind anyone's back:
		// Resume continues it here, and records so (run_resumed.engine).
		return runs, nil
	}
	if r.engine != nil && s.Status == session.StatusRunning {
		// The engine steps it, and retries a step whose process
		// stopped: it is handed the run again in case it never got it
		// (its process stopped between the commit and the hand-over),
		// once the session has been still for a lease TTL — not between
		// two of its steps.
		if r.now().Sub(s.UpdatedAt) < r.leaseTTL || s.Lease != nil && s.Lease.Expires.After(r.now()) {
			return runs, nil
		}
		d := Drive{Tenant: s.Tenant, SessionID: s.ID, Agent: s.Agent, Seq: s.LastSeq, Why: ResumeRecovered}
		if id, err := r.currentRun(sctx, s); err == nil {
			d.RunID = id
		}
		if err := r.engine.Drive(sctx, d); err != nil {
			return runs, &Error{Kind: FailState, Code: CodeEngine, Msg: "hand session " + s.ID + " to the engine", Err: err}
		}
		return runs, nil
	}
	h, err := r.startResumeBackground(sctx, s.ID, true)
	var re *Error
	switch {
	case err == nil:
		return append(runs, h), nil
	case errors.As(err, &re) && (re.Code == CodeLeaseHeld || re.Code == CodeBusy || re.Code == CodeNothingToResume ||
		re.Code == CodeNotFound || re.Code == CodeWaiting):
		return runs, nil
	}
	return runs, err
}

// recoverLeases resumes the running sessions whose run stopped with its
// process, found through the store's LeaseIndex: those whose lease
// expired (or that have none), then those whose lease a process of this
// host holds that no longer exists — it cannot renew it, and waiting for
// its expiry would only delay the run. The live processes' sessions are
// not read: only the owners of this host's leases are. tried gets the
// sessions it tried.
func (r *Runner) recoverLeases(ctx context.Context, li session.LeaseIndex, tried map[skey]bool, runs []*Run) ([]*Run, error) {
	var after *session.Session
	for {
		page, err := li.ExpiredLeases(ctx, after, recoverPage)
		if err != nil {
			return runs, &Error{Kind: FailStore, Msg: "list the running sessions whose lease expired", Err: err}
		}
		for _, s := range page {
			tried[skey{s.Tenant, s.ID}] = true
			if runs, err = r.recoverSession(ctx, s, runs); err != nil {
				return runs, err
			}
		}
		if len(page) < recoverPage {
			break
		}
		after = page[len(page)-1]
	}
	host := hostOwners()
	if host == "" {
		return runs, nil
	}
	owners, err := li.LeaseOwners(ctx, host)
	if err != nil {
		return runs, &Error{Kind: FailStore, Msg: "list the owners of this host's leases", Err: err}
	}
	for _, owner := range owners {
		if !ownerDead(owner) {
			continue
		}
		after = nil
		for {
			page, err := li.LeasedTo(ctx, owner, after, recoverPage)
			if err != nil {
				return runs, &Error{Kind: FailStore, Msg: "list the sessions leased to " + owner, Err: err}
			}
			for _, s := range page {
				if k := (skey{s.Tenant, s.ID}); !tried[k] {
					tried[k] = true
					if runs, err = r.recoverSession(ctx, s, runs); err != nil {
						return runs, err
					}
				}
			}
			if len(page) < recoverPage {
				break
			}
			after = page[len(page)-1]
		}
	}
	return runs, nil
}

// hostOwners is the prefix of the owner names of this host's runners
// (see ownerID), or "" when the host has no name.
func hostOwners() string {
	host, _ := os.Hostname()
	if host == "" {
		return ""
	}
	return host + ":"
}

// recoverRequests resumes the waiting sessions whose requests all
// expired, found through the store's RequestIndex: each session with a
// request whose deadline passed, by the runner's clock, is tried once
// (begin gives its expired requests their default decisions; one with
// requests left still waits, and is skipped). tried holds the sessions
// tried already.
func (r *Runner) recoverRequests(ctx context.Context, ri session.RequestIndex, tried map[skey]bool, runs []*Run) ([]*Run, error) {
	now := r.now()
	var after *session.PendingRequest
	for {
		page, err := ri.ExpiredRequests(ctx, now, after, recoverPage)
		if err != nil {
			return runs, &Error{Kind: FailStore, Msg: "list the requests whose deadline passed", Err: err}
		}
		for _, p := range page {
			k := skey{p.Tenant, p.SessionID}
			if tried[k] {
				continue
			}
			tried[k] = true
			s, err := r.store.GetSession(session.WithTenant(ctx, p.Tenant), p.SessionID)
			switch {
			case errors.Is(err, session.ErrNotFound):
				continue
			case err != nil:
				return runs, &Error{Kind: FailStore, Msg: "read session " + p.SessionID, Err: err}
			case s.Status != session.StatusWaiting:
				continue // a running one is the lease's to recover
			}
			if runs, err = r.recoverSession(ctx, s, runs); err != nil {
				return runs, err
			}
		}
		if len(page) < recoverPage {
			return runs, nil
		}
		after = &page[len(page)-1]
	}
}

// Sweeper runs a runner's Recover over and over: at once, then after
// every wait, until its context ends. Each wait is Every give or take a
// fifth, at random (uniformly between 0.8 and 1.2 times Every), so that
// replicas that sweep one store, started together, do not sweep it
// together ever after.
type Sweeper struct {
	Runner *Runner
	// Every is the period of the sweeps, on average; it must be positive.
	Every time.Duration
	// Report, when set, is told of each sweep that fails (the store
	// failed, say); the sweeper goes on, and the next sweep tries again.
	Report func(error)
	// Resumed, when set, is told of each run a sweep resumed (it goes on
	// in the background).
	Resumed func(*Run)
	// Rand, when set, draws the jitter: a number in [0, 1). It defaults
	// to math/rand/v2's Float64.
	Rand func() float64

	// sweep is the sweep: Runner.Recover, unless a test says otherwise.
	sweep func(context.Context) ([]*Run, error)
}

// Sweep runs Recover at once and then every period every, give or take a
// fifth at random, until ctx ends: a Sweeper of r that reports nothing.
func (r *Runner) Sweep(ctx context.Context, every time.Duration) error {
	return (&Sweeper{Runner: r, Every: every}).Run(ctx)
}

// Run sweeps until ctx ends, then returns nil. It returns at once the
// error of a sweep that no later sweep can do better: a store without
// leases (no_leases), a closed runner (closed). Runs that Recover starts
// go on in the background, the runner's (Runner.Close stops them).
func (s *Sweeper) Run(ctx context.Context) error {
	sweep := s.sweep
	switch {
	case s.Every <= 0:
		return &Error{Kind: FailConfig, Msg: fmt.Sprintf("sweep every %v: the period must be positive", s.Every)}
	case sweep == nil && s.Runner == nil:
		return &Error{Kind: FailConfig, Msg: "a Sweeper needs a Runner"}
	case sweep == nil:
		sweep = s.Runner.Recover
	}
	draw := s.Rand
	if draw == nil {
		draw = rand.Float64
	}
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		runs, err := sweep(ctx)
		if s.Resumed != nil {
			for _, h := range runs {
				s.Resumed(h)
			}
		}
		if err != nil {
			var e *Error
			switch {
			case ctx.Err() != nil:
				return nil
			case errors.As(err, &e) && (e.Code == CodeNoLeases || e.Code == CodeClosed):
				return err
			case s.Report != nil:
				s.Report(err)
			}
		}
		t.Reset(jittered(s.Every, draw()))
	}
}

// jittered is period every strayed by up to a fifth of it, either way,
// as u in [0, 1) says: 0 the shortest, 0.5 every itself. A u outside is
// taken for the nearest end.
func jittered(every time.Duration, u float64) time.Duration {
	spread := 2 * every / 5
	return every - spread/2 + time.Duration(min(max(u, 0), 1)*float64(spread))
}
