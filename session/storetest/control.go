package storetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/session"
)

// controlCase is a case of the Controller section: a store that
// implements session.Leaser and session.Controller, with session s1
// created.
type controlCase func(t *testing.T, s session.Store, l session.Leaser, ctl session.Controller, c *Clock)

func runController(t *testing.T, newStore Factory) {
	cases := []struct {
		name string
		fn   controlCase
	}{
		{"RequestForOwner", testControlForOwner},
		{"SteerKeepsStops", testControlSteerKeepsStops},
		{"RequestFenced", testControlFenced},
		{"RequestNotFound", testControlNotFound},
		{"ReleaseForgets", testControlReleaseForgets},
		{"CommitReleaseForgets", testControlCommitReleaseForgets},
		{"TakeoverKeeps", testControlTakeoverKeeps},
		{"Tenants", testControlTenants},
	}
	for _, cs := range cases {
		t.Run(cs.name, func(t *testing.T) {
			t.Parallel()
			clock := NewClock(base)
			s := newStore(t, clock.Now)
			l, ok := s.(session.Leaser)
			ctl, ok2 := s.(session.Controller)
			if !ok || !ok2 {
				t.Skip("the store does not implement session.Leaser and session.Controller")
			}
			create(t, s, newSession("s1", at(0)))
			cs.fn(t, s, l, ctl, clock)
		})
	}
}

var aControl = session.Control{ID: "ctl_1", Kind: session.ControlCancel, Reason: "wrong question", By: "ada", At: at(time.Minute)}

func controls(t *testing.T, ctl session.Controller, owner string) []session.SessionControl {
	t.Helper()
	got, err := ctl.Controls(t.Context(), owner)
	if err != nil {
		t.Fatalf("Controls(%q): %v", owner, err)
	}
	return got
}

// A request is kept for the lease's owner: Controls finds it, under the
// owner's name only, and the session's row shows it; a later request
// replaces it.
func testControlForOwner(t *testing.T, s session.Store, l session.Leaser, ctl session.Controller, c *Clock) {
	a := acquire(t, l, "s1", "a")
	if got := controls(t, ctl, "a"); len(got) != 0 {
		t.Fatalf("Controls before any request: %+v", got)
	}
	if err := ctl.RequestControl(t.Context(), "s1", a, aControl); err != nil {
		t.Fatalf("RequestControl: %v", err)
	}
	want := []session.SessionControl{{Tenant: session.DefaultTenant, SessionID: "s1", Control: aControl}}
	if diff := cmp.Diff(want, controls(t, ctl, "a")); diff != "" {
		t.Errorf("Controls(a) (-want +got):\n%s", diff)
	}
	if got := controls(t, ctl, "b"); len(got) != 0 {
		t.Errorf("Controls(b) = %+v, want none: the request is a's", got)
	}
	if diff := cmp.Diff(&aControl, get(t, s, "s1").Control); diff != "" {
		t.Errorf("session's control (-want +got):\n%s", diff)
	}
	later := aControl
	later.ID, later.Kind, later.Reason = "ctl_2", session.ControlInterrupt, "newer input"
	if err := ctl.RequestControl(t.Context(), "s1", a, later); err != nil {
		t.Fatalf("RequestControl again: %v", err)
	}
	if got := controls(t, ctl, "a"); len(got) != 1 || !cmp.Equal(got[0].Control, later) {
		t.Errorf("Controls after a second request = %+v, want only it", got)
	}
	// The request leaves the session's lease and log alone.
	if got := mustGetLease(t, s, "s1"); got.Token != a.Token || got.Owner != "a" {
		t.Errorf("lease after requests: %+v, want a's token %d", got, a.Token)
	}
	commit(t, s, &session.Commit{SessionID: "s1", Events: events("s1", 0, 1), Status: session.StatusRunning, Fence: a.Token, Time: at(time.Second)})
}

// A steering replaces a steering, and never a cancellation or an
// interruption kept for the owner (nor is it an error then); a stop
// replaces a steering.
func testControlSteerKeepsStops(t *testing.T, s session.Store, l session.Leaser, ctl session.Controller, c *Clock) {
	a := acquire(t, l, "s1", "a")
	steer := session.Control{ID: "ctl_s1", Kind: session.ControlSteer, At: at(time.Minute),
		Steer: []session.Steered{{ID: "st_1", Text: "also the blue one", Inputs: []string{"in_1"}}}}
	if err := ctl.RequestControl(t.Context(), "s1", a, steer); err != nil {
		t.Fatalf("RequestControl(steer): %v", err)
	}
	more := steer
	more.ID = "ctl_s2"
	more.Steer = append(more.Steer, session.Steered{ID: "st_2", Text: "and fast"})
	if err := ctl.RequestControl(t.Context(), "s1", a, more); err != nil {
		t.Fatalf("RequestControl(steer again): %v", err)
	}
	if diff := cmp.Diff(&more, get(t, s, "s1").Control); diff != "" {
		t.Errorf("a steering after a steering (-want +got):\n%s", diff)
	}
	if err := ctl.RequestControl(t.Context(), "s1", a, aControl); err != nil {
		t.Fatalf("RequestControl(cancel): %v", err)
	}
	if err := ctl.RequestControl(t.Context(), "s1", a, steer); err != nil {
		t.Fatalf("a steering after a cancellation: %v, want no error", err)
	}
	if diff := cmp.Diff(&aControl, get(t, s, "s1").Control); diff != "" {
		t.Errorf("a steering replaced a cancellation (-want +got):\n%s", diff)
	}
	// Fenced as any request.
	if err := l.Release(t.Context(), a); err != nil {
		t.Fatal(err)
	}
	if err := ctl.RequestControl(t.Context(), "s1", a, steer); !errors.Is(err, session.ErrFenced) {
		t.Fatalf("a steering for a released lease: %v, want ErrFenced", err)
	}
}

// A request for a lease that is no longer the session's is refused with
// ErrFenced: released, taken over, never held.
func testControlFenced(t *testing.T, s session.Store, l session.Leaser, ctl session.Controller, c *Clock) {
	if err := ctl.RequestControl(t.Context(), "s1", session.Lease{SessionID: "s1", Owner: "a", Token: 1}, aControl); !errors.Is(err, session.ErrFenced) {
		t.Fatalf("RequestControl of a session nobody leases: %v, want ErrFenced", err)
	}
	a := acquire(t, l, "s1", "a")
	if err := l.Release(t.Context(), a); err != nil {
		t.Fatal(err)
	}
	if err := ctl.RequestControl(t.Context(), "s1", a, aControl); !errors.Is(err, session.ErrFenced) {
		t.Fatalf("RequestControl for a released lease: %v, want ErrFenced", err)
	}
	b := acquire(t, l, "s1", "b")
	if err := ctl.RequestControl(t.Context(), "s1", a, aControl); !errors.Is(err, session.ErrFenced) {
		t.Fatalf("RequestControl for a's lease, now b's: %v, want ErrFenced", err)
	}
	stale := b
	stale.Owner = "a"
	if err := ctl.RequestControl(t.Context(), "s1", stale, aControl); !errors.Is(err, session.ErrFenced) {
		t.Fatalf("RequestControl naming another owner: %v, want ErrFenced", err)
	}
	if got := controls(t, ctl, "b"); len(got) != 0 {
		t.Errorf("refused requests were kept: %+v", got)
	}
}

func testControlNotFound(t *testing.T, s session.Store, l session.Leaser, ctl session.Controller, c *Clock) {
	err := ctl.RequestControl(t.Context(), "nope", session.Lease{SessionID: "nope", Owner: "a", Token: 1}, aControl)
	if !errors.Is(err, session.ErrNotFound) {
		t.Fatalf("RequestControl of an unknown session: %v, want ErrNotFound", err)
	}
}

// Releasing the lease forgets the request: it was for that owner's run.
func testControlReleaseForgets(t *testing.T, s session.Store, l session.Leaser, ctl session.Controller, c *Clock) {
	a := acquire(t, l, "s1", "a")
	if err := ctl.RequestControl(t.Context(), "s1", a, aControl); err != nil {
		t.Fatal(err)
	}
	if err := l.Release(t.Context(), a); err != nil {
		t.Fatal(err)
	}
	if got := controls(t, ctl, "a"); len(got) != 0 {
		t.Errorf("Controls after the release = %+v", got)
	}
	acquire(t, l, "s1", "a")
	if got := controls(t, ctl, "a"); len(got) != 0 {
		t.Errorf("Controls after acquiring again = %+v: the old request came back", got)
	}
	if got := get(t, s, "s1").Control; got != nil {
		t.Errorf("session shows control %+v after the release", got)
	}
}

// So does a commit that releases the lease; one that does not keeps it.
func testControlCommitReleaseForgets(t *testing.T, s session.Store, l session.Leaser, ctl session.Controller, c *Clock) {
	a := acquire(t, l, "s1", "a")
	commit(t, s, &session.Commit{SessionID: "s1", Events: events("s1", 0, 1), Status: session.StatusRunning, Fence: a.Token, Time: at(time.Second)})
	if err := ctl.RequestControl(t.Context(), "s1", a, aControl); err != nil {
		t.Fatal(err)
	}
	commit(t, s, &session.Commit{SessionID: "s1", ExpectSeq: 1, Events: events("s1", 1, 1), Status: session.StatusRunning, Fence: a.Token, Time: at(2 * time.Second)})
	if got := controls(t, ctl, "a"); len(got) != 1 {
		t.Fatalf("Controls after a commit that keeps the lease = %+v, want the request", got)
	}
	commit(t, s, &session.Commit{SessionID: "s1", ExpectSeq: 2, Events: events("s1", 2, 1), Status: session.StatusCanceled, Fence: a.Token,
		Release: true, Time: at(3 * time.Second)})
	if got := controls(t, ctl, "a"); len(got) != 0 {
		t.Errorf("Controls after a releasing commit = %+v", got)
	}
}

// An owner that takes over an expired lease finds the request made to the
// one before: it was for the run it goes on with.
func testControlTakeoverKeeps(t *testing.T, s session.Store, l session.Leaser, ctl session.Controller, c *Clock) {
	a := acquire(t, l, "s1", "a")
	if err := ctl.RequestControl(t.Context(), "s1", a, aControl); err != nil {
		t.Fatal(err)
	}
	c.Advance(ttl + time.Second)
	acquire(t, l, "s1", "b")
	want := []session.SessionControl{{Tenant: session.DefaultTenant, SessionID: "s1", Control: aControl}}
	if diff := cmp.Diff(want, controls(t, ctl, "b")); diff != "" {
		t.Errorf("Controls(b) after the takeover (-want +got):\n%s", diff)
	}
	if got := controls(t, ctl, "a"); len(got) != 0 {
		t.Errorf("Controls(a) after the takeover = %+v", got)
	}
}

// Controls lists an owner's requests of every tenant; a request is made
// in the context's tenant.
func testControlTenants(t *testing.T, s session.Store, l session.Leaser, ctl session.Controller, c *Clock) {
	acme := session.WithTenant(t.Context(), "acme")
	other := newSession("s1", at(0))
	other.Tenant = "acme"
	if err := s.CreateSession(acme, other); err != nil {
		t.Fatal(err)
	}
	la, err := l.Acquire(acme, "s1", "a", ttl)
	if err != nil {
		t.Fatal(err)
	}
	if err := ctl.RequestControl(context.WithoutCancel(acme), "s1", la, aControl); err != nil {
		t.Fatal(err)
	}
	d := acquire(t, l, "s1", "a")
	if err := ctl.RequestControl(t.Context(), "s1", d, aControl); err != nil {
		t.Fatal(err)
	}
	got := controls(t, ctl, "a")
	tenants := map[string]bool{}
	for _, g := range got {
		tenants[g.Tenant] = true
	}
	if len(got) != 2 || !tenants["acme"] || !tenants[session.DefaultTenant] {
		t.Errorf("Controls(a) = %+v, want s1 of acme and of the default tenant", got)
	}
	if err := l.Release(acme, la); err != nil {
		t.Fatal(err)
	}
	if got := controls(t, ctl, "a"); len(got) != 1 || got[0].Tenant != session.DefaultTenant {
		t.Errorf("Controls(a) after acme's release = %+v, want the default tenant's only", got)
	}
}
