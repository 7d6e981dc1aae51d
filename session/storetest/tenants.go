package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/session"
)

// runTenants checks that a store keeps tenants apart: no read, list,
// follow, commit, lease or delete across them.
func runTenants(t *testing.T, newStore Factory) {
	cases := []struct {
		name string
		fn   func(t *testing.T, s session.Store, a, b context.Context)
	}{
		{"SameIDInTwoTenants", testSameIDTwoTenants},
		{"NoAccessAcross", testNoAccessAcross},
		{"ListScoped", testListScoped},
		{"ListAllTenants", testListAllTenants},
		{"CreateForAnotherTenant", testCreateOtherTenant},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			s := newStore(t, NewClock(base).Now)
			a := session.WithTenant(t.Context(), "acme")
			b := session.WithTenant(t.Context(), "globex")
			c.fn(t, s, a, b)
		})
	}
}

func createIn(t *testing.T, ctx context.Context, s session.Store, id string, created time.Time) {
	t.Helper()
	ss := newSession(id, created)
	ss.Tenant = ""
	if err := s.CreateSession(ctx, ss); err != nil {
		t.Fatalf("CreateSession(%q) for %s: %v", id, session.TenantOf(ctx), err)
	}
}

func testSameIDTwoTenants(t *testing.T, s session.Store, a, b context.Context) {
	createIn(t, a, s, "s1", at(0))
	createIn(t, b, s, "s1", at(time.Second))
	if err := s.Commit(a, &session.Commit{SessionID: "s1", Events: events("s1", 0, 2), Status: session.StatusDone, Time: at(time.Minute)}); err != nil {
		t.Fatal(err)
	}
	ga, err := s.GetSession(a, "s1")
	if err != nil {
		t.Fatal(err)
	}
	gb, err := s.GetSession(b, "s1")
	if err != nil {
		t.Fatal(err)
	}
	if ga.Tenant != "acme" || gb.Tenant != "globex" || ga.LastSeq != 2 || gb.LastSeq != 0 || gb.Status != session.StatusIdle {
		t.Errorf("acme's s1 %+v, globex's s1 %+v", ga, gb)
	}
	if n := len(collect(t, s.Events(b, "s1", 0))); n != 0 {
		t.Errorf("globex's s1 has %d events", n)
	}
	if err := s.DeleteSession(b, "s1"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetSession(a, "s1"); err != nil {
		t.Errorf("deleting globex's s1 deleted acme's: %v", err)
	}
}

func testNoAccessAcross(t *testing.T, s session.Store, a, b context.Context) {
	createIn(t, a, s, "secret", at(0))
	if err := s.Commit(a, &session.Commit{SessionID: "secret", Events: events("secret", 0, 3), Status: session.StatusRunning, Time: at(time.Second),
		Snapshot: &session.Snapshot{Seq: 3, Data: json.RawMessage(`{"v":1}`)}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetSession(t.Context(), "secret"); !errors.Is(err, session.ErrNotFound) {
		t.Errorf("GetSession in the default tenant: %v, want ErrNotFound", err)
	}
	notFound := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, session.ErrNotFound) {
			t.Errorf("%s from another tenant: got %v, want ErrNotFound", what, err)
		}
	}
	_, err := s.GetSession(b, "secret")
	notFound("GetSession", err)
	_, err = s.LoadSnapshot(b, "secret")
	notFound("LoadSnapshot", err)
	notFound("Events", eventsErr(s.Events(b, "secret", 0)))
	notFound("Commit", s.Commit(b, &session.Commit{SessionID: "secret", ExpectSeq: 3, Events: events("secret", 3, 1), Time: at(time.Minute)}))
	notFound("DeleteSession", s.DeleteSession(b, "secret"))
	if l, ok := s.(session.Leaser); ok {
		_, err = l.Acquire(b, "secret", "intruder", ttl)
		notFound("Acquire", err)
		lease, err := l.Acquire(a, "secret", "owner", ttl)
		if err != nil {
			t.Fatal(err)
		}
		_, err = l.Renew(b, lease, ttl)
		notFound("Renew", err)
		notFound("Release", l.Release(b, lease))
	}
	if f, ok := s.(session.Follower); ok {
		notFound("Follow", eventsErr(f.Follow(b, "secret", 0)))
	}
	// Nothing changed for its owner.
	got, err := s.GetSession(a, "secret")
	if err != nil || got.LastSeq != 3 {
		t.Fatalf("acme's session after the attempts: %+v, %v", got, err)
	}
	if n := len(collect(t, s.Events(a, "secret", 0))); n != 3 {
		t.Errorf("acme's session has %d events, want 3", n)
	}
}

func testListScoped(t *testing.T, s session.Store, a, b context.Context) {
	createIn(t, a, s, "a1", at(0))
	createIn(t, a, s, "a2", at(time.Second))
	createIn(t, b, s, "b1", at(2*time.Second))
	ids := func(ctx context.Context, opt session.ListOptions) []string {
		ss, err := s.ListSessions(ctx, opt)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, x := range ss {
			out = append(out, x.ID)
		}
		return out
	}
	if diff := cmp.Diff([]string{"a2", "a1"}, ids(a, session.ListOptions{})); diff != "" {
		t.Errorf("acme's list (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"b1"}, ids(b, session.ListOptions{})); diff != "" {
		t.Errorf("globex's list (-want +got):\n%s", diff)
	}
	if _, err := s.ListSessions(b, session.ListOptions{After: "a2"}); !errors.Is(err, session.ErrNotFound) {
		t.Errorf("paging after another tenant's session: %v, want ErrNotFound", err)
	}
}

func testListAllTenants(t *testing.T, s session.Store, a, b context.Context) {
	createIn(t, a, s, "x", at(0))
	createIn(t, b, s, "x", at(0))
	createIn(t, b, s, "y", at(time.Second))
	ss, err := s.ListSessions(t.Context(), session.ListOptions{AllTenants: true})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, x := range ss {
		got = append(got, x.Tenant+"/"+x.ID)
	}
	if diff := cmp.Diff([]string{"globex/y", "globex/x", "acme/x"}, got); diff != "" {
		t.Errorf("all tenants (-want +got):\n%s", diff)
	}
	ss, err = s.ListSessions(t.Context(), session.ListOptions{AllTenants: true, After: "x", AfterTenant: "globex"})
	if err != nil || len(ss) != 1 || ss[0].Tenant != "acme" {
		t.Errorf("the page after globex/x: %+v, %v", ss, err)
	}
}

func testCreateOtherTenant(t *testing.T, s session.Store, a, b context.Context) {
	ss := newSession("s1", at(0))
	ss.Tenant = "globex"
	if err := s.CreateSession(a, ss); err == nil {
		t.Error("CreateSession of a session of globex in acme's context succeeded")
	}
}
