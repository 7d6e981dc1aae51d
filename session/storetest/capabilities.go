package storetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/agentrt/agentrt/session"
)

// Clock is a clock that moves only when told to. Its zero value is not
// ready; use NewClock.
type Clock struct {
	mu sync.Mutex
	t  time.Time // guarded by mu
}

// NewClock returns a clock that reads t until advanced.
func NewClock(t time.Time) *Clock { return &Clock{t: t} }

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Advance moves the clock d forward.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// testListByAgent: ListOptions.Agent keeps one agent's sessions, paged
// like any listing, and with a status too.
func testListByAgent(t *testing.T, s session.Store) {
	for i, agent := range []string{"a", "b", "a", "a", "b"} {
		ss := newSession(fmt.Sprintf("s%d", i), at(time.Duration(i)*time.Second))
		ss.Agent = agent
		create(t, s, ss)
	}
	commit(t, s, &session.Commit{SessionID: "s3", Status: session.StatusDone, Time: at(time.Minute)})
	for _, tc := range []struct {
		opt  session.ListOptions
		want []string
	}{
		{session.ListOptions{Agent: "a"}, []string{"s3", "s2", "s0"}},
		{session.ListOptions{Agent: "b"}, []string{"s4", "s1"}},
		{session.ListOptions{Agent: "a", Limit: 1, After: "s3"}, []string{"s2"}},
		{session.ListOptions{Agent: "a", Status: session.StatusIdle}, []string{"s2", "s0"}},
		{session.ListOptions{Agent: "nobody"}, nil},
	} {
		got := list(t, s, tc.opt)
		if diff := cmp.Diff(tc.want, got); diff != "" && len(tc.want)+len(got) > 0 {
			t.Errorf("ListSessions(%+v) (-want +got):\n%s", tc.opt, diff)
		}
	}
}

func testListByStatus(t *testing.T, s session.Store) {
	for i, st := range []session.Status{session.StatusIdle, session.StatusRunning, session.StatusDone, session.StatusRunning, session.StatusRunning} {
		id := fmt.Sprintf("s%d", i)
		create(t, s, newSession(id, at(time.Duration(i)*time.Second)))
		if st != session.StatusIdle {
			commit(t, s, &session.Commit{SessionID: id, Status: st, Time: at(time.Minute)})
		}
	}
	if diff := cmp.Diff([]string{"s4", "s3", "s1"}, list(t, s, session.ListOptions{Status: session.StatusRunning})); diff != "" {
		t.Errorf("running sessions (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"s3", "s1"}, list(t, s, session.ListOptions{Status: session.StatusRunning, After: "s4"})); diff != "" {
		t.Errorf("running sessions after s4 (-want +got):\n%s", diff)
	}
	// The cursor need not have the status itself.
	if diff := cmp.Diff([]string{"s1"}, list(t, s, session.ListOptions{Status: session.StatusRunning, After: "s2"})); diff != "" {
		t.Errorf("running sessions after s2 (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"s4"}, list(t, s, session.ListOptions{Status: session.StatusRunning, Limit: 1})); diff != "" {
		t.Errorf("first running session (-want +got):\n%s", diff)
	}
	if got := list(t, s, session.ListOptions{Status: session.StatusWaiting}); len(got) != 0 {
		t.Errorf("waiting sessions: %v, want none", got)
	}
	for status, want := range map[session.Status][]string{session.StatusDone: {"s2"}, session.StatusIdle: {"s0"}} {
		if diff := cmp.Diff(want, list(t, s, session.ListOptions{Status: status})); diff != "" {
			t.Errorf("%s sessions (-want +got):\n%s", status, diff)
		}
	}
	// A session whose status changes moves from one list to the other.
	commit(t, s, &session.Commit{SessionID: "s3", Status: session.StatusDone, Time: at(2 * time.Minute)})
	commit(t, s, &session.Commit{SessionID: "s0", Status: session.StatusWaiting, Time: at(2 * time.Minute)})
	for status, want := range map[session.Status][]string{
		session.StatusRunning: {"s4", "s1"},
		session.StatusDone:    {"s3", "s2"},
		session.StatusWaiting: {"s0"},
		session.StatusIdle:    nil,
	} {
		if diff := cmp.Diff(want, list(t, s, session.ListOptions{Status: status}), cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("%s sessions after changes (-want +got):\n%s", status, diff)
		}
	}
}

// leaseCase is a case of the Leaser section: a store that implements
// session.Leaser, with session s1 created, and the clock its leases read.
type leaseCase func(t *testing.T, s session.Store, l session.Leaser, c *Clock)

func runLeaser(t *testing.T, newStore Factory) {
	cases := []struct {
		name string
		fn   leaseCase
	}{
		{"AcquireNew", testAcquireNew},
		{"AcquireHeld", testAcquireHeld},
		{"AcquireAgainSameOwner", testAcquireAgain},
		{"AcquireAfterExpiry", testAcquireAfterExpiry},
		{"AcquireNotFound", testAcquireNotFound},
		{"Renew", testRenew},
		{"RenewExpiredNotTaken", testRenewExpired},
		{"Release", testRelease},
		{"ReleaseDeadOwner", testReleaseDeadOwner},
		{"CommitFenced", testCommitFenced},
		{"CommitWithoutToken", testCommitWithoutToken},
		{"CommitReleases", testCommitReleases},
		{"ConcurrentAcquire", testConcurrentAcquire},
		{"SessionShowsLease", testSessionShowsLease},
		{"CreateLeased", testCreateLeased},
		{"FencedByOwner", testFencedByOwner},
		{"Drop", testDrop},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			clock := NewClock(base)
			s := newStore(t, clock.Now)
			l, ok := s.(session.Leaser)
			if !ok {
				t.Skip("the store does not implement session.Leaser")
			}
			create(t, s, newSession("s1", at(0)))
			c.fn(t, s, l, clock)
		})
	}
}

const ttl = 10 * time.Second

func acquire(t *testing.T, l session.Leaser, id, owner string) session.Lease {
	t.Helper()
	got, err := l.Acquire(t.Context(), id, owner, ttl)
	if err != nil {
		t.Fatalf("Acquire(%q, %q): %v", id, owner, err)
	}
	return got
}

func testAcquireNew(t *testing.T, s session.Store, l session.Leaser, c *Clock) {
	got := acquire(t, l, "s1", "a")
	if got.Token <= 0 || got.Owner != "a" || got.SessionID != "s1" || !got.Expires.Equal(c.Now().Add(ttl)) {
		t.Fatalf("Acquire: got %+v, want owner a, a positive token, expiry now+%v", got, ttl)
	}
}

func testAcquireHeld(t *testing.T, s session.Store, l session.Leaser, c *Clock) {
	a := acquire(t, l, "s1", "a")
	c.Advance(ttl - time.Millisecond)
	_, err := l.Acquire(t.Context(), "s1", "b", ttl)
	var held *session.LeaseHeldError
	if !errors.As(err, &held) || !errors.Is(err, session.ErrLeaseHeld) {
		t.Fatalf("Acquire of a live lease: got %v, want a *LeaseHeldError", err)
	}
	if held.Lease.Owner != "a" || held.Lease.Token != a.Token || !held.Lease.Expires.Equal(a.Expires) {
		t.Errorf("LeaseHeldError says %+v, want %+v", held.Lease, a)
	}
}

func testAcquireAgain(t *testing.T, s session.Store, l session.Leaser, c *Clock) {
	a := acquire(t, l, "s1", "a")
	c.Advance(time.Second)
	again := acquire(t, l, "s1", "a")
	if again.Token != a.Token || !again.Expires.Equal(c.Now().Add(ttl)) {
		t.Errorf("Acquire by the live owner: got %+v, want token %d extended to now+ttl", again, a.Token)
	}
}

func testAcquireAfterExpiry(t *testing.T, s session.Store, l session.Leaser, c *Clock) {
	a := acquire(t, l, "s1", "a")
	c.Advance(ttl)
	b := acquire(t, l, "s1", "b")
	if b.Token <= a.Token {
		t.Fatalf("token of the next owner %d, want more than %d", b.Token, a.Token)
	}
	// The old owner is fenced off everywhere.
	if _, err := l.Renew(t.Context(), a, ttl); !errors.Is(err, session.ErrFenced) {
		t.Errorf("Renew by the old owner: got %v, want ErrFenced", err)
	}
	if err := l.Release(t.Context(), a); !errors.Is(err, session.ErrFenced) {
		t.Errorf("Release by the old owner: got %v, want ErrFenced", err)
	}
	before := stateOf(t, s, "s1")
	err := s.Commit(t.Context(), &session.Commit{SessionID: "s1", Events: events("s1", 0, 2), Status: session.StatusRunning, Fence: a.Token, Time: at(time.Second)})
	if !errors.Is(err, session.ErrFenced) {
		t.Errorf("Commit by the old owner: got %v, want ErrFenced", err)
	}
	checkUnchanged(t, s, "s1", before)
	// Even the old owner coming back gets a new token.
	c.Advance(ttl)
	a2 := acquire(t, l, "s1", "a")
	if a2.Token <= b.Token {
		t.Errorf("token %d after b's %d", a2.Token, b.Token)
	}
}

func testAcquireNotFound(t *testing.T, s session.Store, l session.Leaser, c *Clock) {
	if _, err := l.Acquire(t.Context(), "nope", "a", ttl); !errors.Is(err, session.ErrNotFound) {
		t.Errorf("Acquire(unknown): got %v, want ErrNotFound", err)
	}
	if _, err := l.Renew(t.Context(), session.Lease{SessionID: "nope", Owner: "a", Token: 1}, ttl); !errors.Is(err, session.ErrNotFound) {
		t.Errorf("Renew(unknown): got %v, want ErrNotFound", err)
	}
	if err := l.Release(t.Context(), session.Lease{SessionID: "nope", Owner: "a", Token: 1}); !errors.Is(err, session.ErrNotFound) {
		t.Errorf("Release(unknown): got %v, want ErrNotFound", err)
	}
}

func testRenew(t *testing.T, s session.Store, l session.Leaser, c *Clock) {
	a := acquire(t, l, "s1", "a")
	c.Advance(ttl / 2)
	r, err := l.Renew(t.Context(), a, ttl)
	if err != nil {
		t.Fatal(err)
	}
	if r.Token != a.Token || !r.Expires.Equal(c.Now().Add(ttl)) {
		t.Errorf("Renew: got %+v, want token %d until now+ttl", r, a.Token)
	}
	c.Advance(ttl - time.Millisecond) // past the first expiry, before the renewed one
	if _, err := l.Acquire(t.Context(), "s1", "b", ttl); !errors.Is(err, session.ErrLeaseHeld) {
		t.Errorf("Acquire after a renewal: got %v, want ErrLeaseHeld", err)
	}
}

func testRenewExpired(t *testing.T, s session.Store, l session.Leaser, c *Clock) {
	a := acquire(t, l, "s1", "a")
	c.Advance(2 * ttl)
	r, err := l.Renew(t.Context(), a, ttl)
	if err != nil {
		t.Fatalf("Renew of an expired lease nobody took: %v", err)
	}
	if r.Token != a.Token {
		t.Errorf("token %d, want %d", r.Token, a.Token)
	}
	if _, err := l.Acquire(t.Context(), "s1", "b", ttl); !errors.Is(err, session.ErrLeaseHeld) {
		t.Errorf("Acquire after the renewal: got %v, want ErrLeaseHeld", err)
	}
}

func testRelease(t *testing.T, s session.Store, l session.Leaser, c *Clock) {
	a := acquire(t, l, "s1", "a")
	if err := l.Release(t.Context(), a); err != nil {
		t.Fatal(err)
	}
	if err := l.Release(t.Context(), a); !errors.Is(err, session.ErrFenced) {
		t.Errorf("second Release: got %v, want ErrFenced", err)
	}
	if _, err := l.Renew(t.Context(), a, ttl); !errors.Is(err, session.ErrFenced) {
		t.Errorf("Renew after Release: got %v, want ErrFenced", err)
	}
	b := acquire(t, l, "s1", "b") // at once, without waiting for the expiry
	if b.Token <= a.Token {
		t.Errorf("token after a release %d, want more than %d", b.Token, a.Token)
	}
}

// A process that knows the owner of a live lease is dead releases it with
// the lease the LeaseHeldError reported.
func testReleaseDeadOwner(t *testing.T, s session.Store, l session.Leaser, c *Clock) {
	acquire(t, l, "s1", "dead")
	_, err := l.Acquire(t.Context(), "s1", "b", ttl)
	var held *session.LeaseHeldError
	if !errors.As(err, &held) {
		t.Fatalf("Acquire: got %v, want a *LeaseHeldError", err)
	}
	if err := l.Release(t.Context(), held.Lease); err != nil {
		t.Fatal(err)
	}
	acquire(t, l, "s1", "b")
	// A stale report cannot release the new owner's lease.
	if err := l.Release(t.Context(), held.Lease); !errors.Is(err, session.ErrFenced) {
		t.Errorf("Release with a stale report: got %v, want ErrFenced", err)
	}
}

func testCommitFenced(t *testing.T, s session.Store, l session.Leaser, c *Clock) {
	a := acquire(t, l, "s1", "a")
	commit(t, s, &session.Commit{SessionID: "s1", Events: events("s1", 0, 2), Status: session.StatusRunning, Fence: a.Token, Time: at(time.Second)})
	before := stateOf(t, s, "s1")
	for _, fence := range []int64{a.Token + 1, a.Token - 1, -1} {
		err := s.Commit(t.Context(), &session.Commit{SessionID: "s1", ExpectSeq: 2, Events: events("s1", 2, 1), Fence: fence, Time: at(time.Minute)})
		if !errors.Is(err, session.ErrFenced) {
			t.Errorf("Commit with token %d (lease %d): got %v, want ErrFenced", fence, a.Token, err)
		}
	}
	checkUnchanged(t, s, "s1", before)
	// A stale seq with a stale token is fenced: the writer lost the
	// session, which matters more than its stale view.
	err := s.Commit(t.Context(), &session.Commit{SessionID: "s1", ExpectSeq: 1, Events: events("s1", 1, 1), Fence: a.Token + 1, Time: at(time.Minute)})
	if !errors.Is(err, session.ErrFenced) {
		t.Errorf("Commit with a stale seq and token: got %v, want ErrFenced", err)
	}
	// A stale seq with the right token is a conflict, not a fence.
	err = s.Commit(t.Context(), &session.Commit{SessionID: "s1", ExpectSeq: 1, Events: events("s1", 1, 1), Fence: a.Token, Time: at(time.Minute)})
	if !errors.Is(err, session.ErrConflict) {
		t.Errorf("Commit with a stale seq: got %v, want ErrConflict", err)
	}
	// The owner's token still writes after its lease expired, as long as
	// nobody took the session over: nobody else can have written.
	c.Advance(2 * ttl)
	commit(t, s, &session.Commit{SessionID: "s1", ExpectSeq: 2, Events: events("s1", 2, 1), Status: session.StatusDone, Fence: a.Token, Time: at(time.Minute)})
}

// A commit with Release frees the lease with its events; a refused one
// (stale seq, stale token) releases nothing; the token stays, so the next
// owner's is larger and the released owner's commits are fenced.
func testCommitReleases(t *testing.T, s session.Store, l session.Leaser, c *Clock) {
	a := acquire(t, l, "s1", "a")
	commit(t, s, &session.Commit{SessionID: "s1", Events: events("s1", 0, 1), Status: session.StatusRunning, Fence: a.Token, Time: at(time.Second)})
	for _, bad := range []*session.Commit{
		{SessionID: "s1", ExpectSeq: 0, Events: events("s1", 0, 1), Fence: a.Token, Release: true},
		{SessionID: "s1", ExpectSeq: 1, Events: events("s1", 1, 1), Fence: a.Token + 1, Release: true},
	} {
		if err := s.Commit(t.Context(), bad); err == nil {
			t.Fatalf("a bad commit with Release (seq %d, token %d) was stored", bad.ExpectSeq, bad.Fence)
		}
		if _, err := l.Acquire(t.Context(), "s1", "b", ttl); !errors.Is(err, session.ErrLeaseHeld) {
			t.Fatalf("Acquire after a refused releasing commit: %v, want ErrLeaseHeld", err)
		}
	}
	commit(t, s, &session.Commit{SessionID: "s1", ExpectSeq: 1, Events: events("s1", 1, 1), Status: session.StatusDone,
		Fence: a.Token, Release: true, Time: at(time.Minute)})
	if got := get(t, s, "s1"); got.Lease != nil {
		t.Errorf("session after a releasing commit shows lease %+v", got.Lease)
	}
	b := acquire(t, l, "s1", "b") // at once, before a's lease would have expired
	if b.Token <= a.Token {
		t.Errorf("next owner's token %d, want more than %d", b.Token, a.Token)
	}
	err := s.Commit(t.Context(), &session.Commit{SessionID: "s1", ExpectSeq: 2, Events: events("s1", 2, 1), Fence: a.Token})
	if !errors.Is(err, session.ErrFenced) {
		t.Errorf("commit with the released token: %v, want ErrFenced", err)
	}
}

func testCommitWithoutToken(t *testing.T, s session.Store, l session.Leaser, c *Clock) {
	// No lease yet: a commit without a token is fine.
	commit(t, s, &session.Commit{SessionID: "s1", Events: events("s1", 0, 1), Time: at(time.Second)})
	a := acquire(t, l, "s1", "a")
	before := stateOf(t, s, "s1")
	err := s.Commit(t.Context(), &session.Commit{SessionID: "s1", ExpectSeq: 1, Events: events("s1", 1, 1), Time: at(time.Minute)})
	if !errors.Is(err, session.ErrFenced) {
		t.Errorf("Commit without a token while a lease is live: got %v, want ErrFenced", err)
	}
	checkUnchanged(t, s, "s1", before)
	c.Advance(ttl) // expired: writable without a token again
	commit(t, s, &session.Commit{SessionID: "s1", ExpectSeq: 1, Events: events("s1", 1, 1), Time: at(time.Minute)})
	acquire(t, l, "s1", "b")
	if err := l.Release(t.Context(), mustGetLease(t, s, "s1")); err != nil {
		t.Fatal(err)
	}
	commit(t, s, &session.Commit{SessionID: "s1", ExpectSeq: 2, Events: events("s1", 2, 1), Time: at(time.Minute)})
	_ = a
}

func mustGetLease(t *testing.T, s session.Store, id string) session.Lease {
	t.Helper()
	ss := get(t, s, id)
	if ss.Lease == nil {
		t.Fatalf("session %q has no lease", id)
	}
	return *ss.Lease
}

func testConcurrentAcquire(t *testing.T, s session.Store, l session.Leaser, c *Clock) {
	const n = 8
	var wg sync.WaitGroup
	leases := make([]session.Lease, n)
	errs := make([]error, n)
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			leases[i], errs[i] = l.Acquire(context.WithoutCancel(t.Context()), "s1", fmt.Sprintf("owner%d", i), ttl)
		})
	}
	close(start)
	wg.Wait()
	var won []session.Lease
	for i, err := range errs {
		switch {
		case err == nil:
			won = append(won, leases[i])
		case !errors.Is(err, session.ErrLeaseHeld):
			t.Errorf("owner%d: %v", i, err)
		}
	}
	if len(won) != 1 {
		t.Fatalf("%d owners acquired the lease, want exactly 1: %+v", len(won), won)
	}
	if got := mustGetLease(t, s, "s1"); got.Owner != won[0].Owner || got.Token != won[0].Token {
		t.Errorf("stored lease %+v, want the winner's %+v", got, won[0])
	}
}

func testSessionShowsLease(t *testing.T, s session.Store, l session.Leaser, c *Clock) {
	if got := get(t, s, "s1").Lease; got != nil {
		t.Fatalf("a new session has lease %+v", got)
	}
	a := acquire(t, l, "s1", "a")
	got := get(t, s, "s1").Lease
	if got == nil || got.Owner != "a" || got.Token != a.Token || !got.Expires.Equal(a.Expires) {
		t.Fatalf("GetSession shows lease %+v, want %+v", got, a)
	}
	ss := list(t, s, session.ListOptions{})
	if len(ss) != 1 {
		t.Fatalf("list: %v", ss)
	}
	if err := l.Release(t.Context(), a); err != nil {
		t.Fatal(err)
	}
	if got := get(t, s, "s1").Lease; got != nil {
		t.Errorf("after Release: lease %+v, want none", got)
	}
}

// A LeasedCreator creates a session with its first lease taken: nobody
// else can acquire it, fenced commits go through, an unfenced one is
// refused, and it releases as any lease. On a session that exists it
// takes the lease as Acquire does: refused while another owner's lease is
// live, the same lease for its owner, the next token once it is free. The
// session's tenant is the context's.
func testCreateLeased(t *testing.T, s session.Store, l session.Leaser, c *Clock) {
	lc, ok := s.(session.LeasedCreator)
	if !ok {
		t.Skip("the store does not implement session.LeasedCreator")
	}
	ctx := session.WithTenant(t.Context(), "acme")
	in := newSession("s2", at(time.Second))
	in.Tenant = ""
	row, got, created, err := lc.CreateOrAcquire(ctx, in, "a", ttl)
	if err != nil || !created {
		t.Fatalf("CreateOrAcquire of a new session: created %v, %v", created, err)
	}
	if got.Token != 1 || got.Owner != "a" || got.SessionID != "s2" || !got.Expires.Equal(c.Now().Add(ttl)) {
		t.Fatalf("CreateOrAcquire: lease %+v, want owner a, token 1, expiry now+%v", got, ttl)
	}
	if in.Tenant != "acme" {
		t.Errorf("CreateOrAcquire set tenant %q, want acme", in.Tenant)
	}
	sess, err := s.GetSession(ctx, "s2")
	if err != nil {
		t.Fatal(err)
	}
	if sess.Lease == nil || sess.Lease.Owner != "a" || sess.Lease.Token != 1 || sess.Agent != in.Agent || sess.LastSeq != 0 {
		t.Fatalf("GetSession after CreateOrAcquire: %+v, lease %+v", sess, sess.Lease)
	}
	if diff := cmp.Diff(sess, row); diff != "" {
		t.Errorf("CreateOrAcquire's session is not GetSession's (-get +returned):\n%s", diff)
	}
	if _, err := s.GetSession(t.Context(), "s2"); !errors.Is(err, session.ErrNotFound) {
		t.Errorf("GetSession in another tenant: %v, want ErrNotFound", err)
	}
	var held *session.LeaseHeldError
	if _, err := l.Acquire(ctx, "s2", "b", ttl); !errors.As(err, &held) || held.Lease.Owner != "a" {
		t.Errorf("Acquire by b of a session created leased to a: %v", err)
	}
	other := newSession("s2", at(0))
	other.Tenant, other.Agent = "acme", "someone-else"
	if _, _, created, err := lc.CreateOrAcquire(ctx, other, "b", ttl); !errors.As(err, &held) || created {
		t.Errorf("CreateOrAcquire by b of a session a holds: created %v, %v; want a LeaseHeldError", created, err)
	}
	if _, again, created, err := lc.CreateOrAcquire(ctx, other, "a", ttl); err != nil || created || again.Token != 1 {
		t.Errorf("CreateOrAcquire by a again: %+v created %v, %v; want its lease, token 1", again, created, err)
	}
	if err := s.Commit(ctx, &session.Commit{SessionID: "s2", Events: events("s2", 0, 1), Status: session.StatusRunning}); !errors.Is(err, session.ErrFenced) {
		t.Errorf("unfenced commit: %v, want ErrFenced", err)
	}
	if err := s.Commit(ctx, &session.Commit{SessionID: "s2", Events: events("s2", 0, 1), Status: session.StatusDone, Fence: got.Token, Release: true}); err != nil {
		t.Fatalf("fenced commit: %v", err)
	}
	row, b, created, err := lc.CreateOrAcquire(ctx, other, "b", ttl)
	if err != nil || created || b.Token != 2 || b.Owner != "b" {
		t.Errorf("CreateOrAcquire by b after the release: %+v created %v, %v; want token 2", b, created, err)
	}
	if sess, err := s.GetSession(ctx, "s2"); err != nil || sess.Agent != in.Agent || sess.LastSeq != 1 {
		t.Errorf("the session after: %+v, %v; want it as it was (agent %s, seq 1)", sess, err, in.Agent)
	} else if diff := cmp.Diff(sess, row); diff != "" {
		t.Errorf("CreateOrAcquire's session that existed is not GetSession's (-get +returned):\n%s", diff)
	}
	if _, _, _, err := lc.CreateOrAcquire(t.Context(), newSession("s3", at(0)), "", ttl); err == nil {
		t.Error("CreateOrAcquire with no owner succeeded")
	}
}

// followCase is a case of the Follower section.
type followCase func(t *testing.T, s session.Store, f session.Follower)

func runFollower(t *testing.T, newStore Factory) {
	cases := []struct {
		name string
		fn   followCase
	}{
		{"CatchUpThenLive", testFollowLive},
		{"NotFound", testFollowNotFound},
		{"Deleted", testFollowDeleted},
		{"EarlyBreak", testFollowEarlyBreak},
		{"ConcurrentWriter", testFollowConcurrentWriter},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			s := newStore(t, NewClock(base).Now)
			f, ok := s.(session.Follower)
			if !ok {
				t.Skip("the store does not implement session.Follower")
			}
			c.fn(t, s, f)
		})
	}
}

// followed is one item a Follow yielded.
type followed struct {
	ev  *session.Event
	err error
}

// follow runs Follow on a goroutine until ctx ends and returns what it
// yields, and a channel closed when it returns.
func follow(ctx context.Context, f session.Follower, id string, after int64) (<-chan followed, <-chan struct{}) {
	out := make(chan followed, 1024)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for e, err := range f.Follow(ctx, id, after) {
			out <- followed{e, err}
		}
	}()
	return out, done
}

// next waits for the next item Follow yields; the long timeout only
// guards against a hang.
func next(t *testing.T, ch <-chan followed) followed {
	t.Helper()
	select {
	case f := <-ch:
		return f
	case <-time.After(30 * time.Second):
		t.Fatal("Follow yielded nothing for 30s")
	}
	return followed{}
}

func testFollowLive(t *testing.T, s session.Store, f session.Follower) {
	create(t, s, newSession("s1", at(0)))
	commit(t, s, &session.Commit{SessionID: "s1", Events: events("s1", 0, 3), Time: at(time.Second)})
	ctx, cancel := context.WithCancel(t.Context())
	ch, done := follow(ctx, f, "s1", 1)
	for want := int64(2); want <= 3; want++ {
		if got := next(t, ch); got.err != nil || got.ev.Seq != want {
			t.Fatalf("Follow yielded %+v, want seq %d", got, want)
		}
	}
	commit(t, s, &session.Commit{SessionID: "s1", ExpectSeq: 3, Events: events("s1", 3, 2), Time: at(time.Second)})
	for want := int64(4); want <= 5; want++ {
		got := next(t, ch)
		if got.err != nil || got.ev.Seq != want {
			t.Fatalf("Follow yielded %+v, want seq %d", got, want)
		}
		diffEvents(t, events("s1", want-1, 1), []*session.Event{got.ev})
	}
	cancel()
	<-done
	select {
	case got := <-ch:
		t.Errorf("after its context ended Follow yielded %+v", got)
	default:
	}
}

func testFollowNotFound(t *testing.T, s session.Store, f session.Follower) {
	ch, done := follow(t.Context(), f, "nope", 0)
	if got := next(t, ch); !errors.Is(got.err, session.ErrNotFound) {
		t.Errorf("Follow(unknown): got %+v, want ErrNotFound", got)
	}
	<-done
}

func testFollowDeleted(t *testing.T, s session.Store, f session.Follower) {
	create(t, s, newSession("s1", at(0)))
	commit(t, s, &session.Commit{SessionID: "s1", Events: events("s1", 0, 1), Time: at(time.Second)})
	ch, done := follow(t.Context(), f, "s1", 0)
	if got := next(t, ch); got.err != nil || got.ev.Seq != 1 {
		t.Fatalf("Follow yielded %+v, want seq 1", got)
	}
	if err := s.DeleteSession(t.Context(), "s1"); err != nil {
		t.Fatal(err)
	}
	if got := next(t, ch); !errors.Is(got.err, session.ErrNotFound) {
		t.Errorf("Follow of a deleted session: got %+v, want ErrNotFound", got)
	}
	<-done
}

func testFollowEarlyBreak(t *testing.T, s session.Store, f session.Follower) {
	create(t, s, newSession("s1", at(0)))
	commit(t, s, &session.Commit{SessionID: "s1", Events: events("s1", 0, 5), Time: at(time.Second)})
	n := 0
	for e, err := range f.Follow(t.Context(), "s1", 0) {
		if err != nil {
			t.Fatal(err)
		}
		if n++; e.Seq == 2 {
			break
		}
	}
	if n != 2 {
		t.Errorf("yielded %d events before the break, want 2", n)
	}
}

func testFollowConcurrentWriter(t *testing.T, s session.Store, f session.Follower) {
	create(t, s, newSession("s1", at(0)))
	const total = 300
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	ch, done := follow(ctx, f, "s1", 0)
	go func() {
		for seq := int64(0); seq < total; seq += 3 {
			if err := s.Commit(context.WithoutCancel(ctx), &session.Commit{SessionID: "s1", ExpectSeq: seq, Events: events("s1", seq, 3), Time: at(time.Second)}); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	for want := int64(1); want <= total; want++ {
		got := next(t, ch)
		if got.err != nil || got.ev.Seq != want {
			t.Fatalf("Follow yielded %+v, want seq %d", got, want)
		}
	}
	cancel()
	<-done
}

// Renew and Release fence by the lease's owner beside its token: a
// lease of the same token and another owner — one of a session made
// anew, which starts again at token 1 — is not the session's.
func testFencedByOwner(t *testing.T, s session.Store, l session.Leaser, c *Clock) {
	a := acquire(t, l, "s1", "a")
	other := a
	other.Owner = "b"
	if _, err := l.Renew(t.Context(), other, ttl); !errors.Is(err, session.ErrFenced) {
		t.Errorf("Renew with the token of another owner's lease: %v, want ErrFenced", err)
	}
	if err := l.Release(t.Context(), other); !errors.Is(err, session.ErrFenced) {
		t.Errorf("Release with the token of another owner's lease: %v, want ErrFenced", err)
	}
	if got := get(t, s, "s1"); got.Lease == nil || got.Lease.Owner != "a" || got.Lease.Token != a.Token {
		t.Errorf("after the fenced calls the lease is %+v, want a's", got.Lease)
	}
}

// Drop deletes a session of no events by its lease, in one write: not
// with a lease that is not the session's (another owner's, a stale one,
// a released one), nor a session that holds events. A session made anew
// after a drop is not the dropped one's holder's: its Renew and Release
// are fenced off.
func testDrop(t *testing.T, s session.Store, l session.Leaser, c *Clock) {
	d, ok := s.(session.Dropper)
	if !ok {
		t.Skip("the store does not implement session.Dropper")
	}
	lc, ok := s.(session.LeasedCreator)
	if !ok {
		t.Skip("the store does not implement session.LeasedCreator")
	}
	ctx := t.Context()
	claim := func(owner string) session.Lease {
		t.Helper()
		_, got, _, err := lc.CreateOrAcquire(ctx, newSession("_claim.x", c.Now()), owner, ttl)
		if err != nil {
			t.Fatalf("CreateOrAcquire(_claim.x, %s): %v", owner, err)
		}
		return got
	}
	a := claim("a")
	stale := a
	stale.Token--
	otherOwner := a
	otherOwner.Owner = "b"
	for name, bad := range map[string]session.Lease{"a stale token": stale, "another owner": otherOwner} {
		if err := d.Drop(ctx, bad); !errors.Is(err, session.ErrFenced) {
			t.Errorf("Drop with %s: %v, want ErrFenced", name, err)
		}
	}
	if err := d.Drop(ctx, a); err != nil {
		t.Fatalf("Drop by its holder: %v", err)
	}
	if _, err := s.GetSession(ctx, "_claim.x"); !errors.Is(err, session.ErrNotFound) {
		t.Errorf("GetSession after Drop: %v, want ErrNotFound", err)
	}
	if err := d.Drop(ctx, a); !errors.Is(err, session.ErrNotFound) {
		t.Errorf("Drop again: %v, want ErrNotFound", err)
	}
	// Made anew by another owner, at token 1 again: the first holder's
	// lease, of the same token, is fenced off.
	b := claim("b")
	if b.Token != a.Token {
		t.Logf("token %d after the drop, %d before", b.Token, a.Token)
	}
	if _, err := l.Renew(ctx, a, ttl); !errors.Is(err, session.ErrFenced) {
		t.Errorf("Renew of the dropped session's lease: %v, want ErrFenced", err)
	}
	if err := l.Release(ctx, a); !errors.Is(err, session.ErrFenced) {
		t.Errorf("Release of the dropped session's lease: %v, want ErrFenced", err)
	}
	if err := d.Drop(ctx, a); !errors.Is(err, session.ErrFenced) {
		t.Errorf("Drop of the dropped session's lease: %v, want ErrFenced", err)
	}
	if err := l.Release(ctx, b); err != nil {
		t.Fatal(err)
	}
	if err := d.Drop(ctx, b); !errors.Is(err, session.ErrFenced) {
		t.Errorf("Drop with a released lease: %v, want ErrFenced", err)
	}
	// A session with events is not dropped.
	s1 := acquire(t, l, "s1", "a")
	if err := s.Commit(ctx, &session.Commit{SessionID: "s1", Events: events("s1", 0, 1), Status: session.StatusRunning, Fence: s1.Token, Time: c.Now()}); err != nil {
		t.Fatal(err)
	}
	if err := d.Drop(ctx, s1); !errors.Is(err, session.ErrConflict) {
		t.Errorf("Drop of a session with events: %v, want ErrConflict", err)
	}
	if _, err := s.GetSession(ctx, "s1"); err != nil {
		t.Errorf("the session with events after Drop: %v", err)
	}
	if err := d.Drop(ctx, session.Lease{SessionID: "nope", Owner: "a", Token: 1}); !errors.Is(err, session.ErrNotFound) {
		t.Errorf("Drop(unknown): %v, want ErrNotFound", err)
	}
}
