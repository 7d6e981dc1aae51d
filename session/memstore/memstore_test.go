package memstore_test

import (
	"errors"
	"testing"
	"time"

	"github.com/agentrt/agentrt/session"
	"github.com/agentrt/agentrt/session/memstore"
	"github.com/agentrt/agentrt/session/storetest"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T, now func() time.Time) session.Store {
		s := memstore.New(memstore.WithClock(now))
		t.Cleanup(func() { s.Close() })
		return s
	})
}

// TestCommitAllocs keeps Commit cheap: once a session's log has room, a
// commit of a few events with a snapshot allocates nothing.
func TestCommitAllocs(t *testing.T) {
	ctx := t.Context()
	s := memstore.New()
	if err := s.CreateSession(ctx, &session.Session{ID: "s1", CreatedAt: time.Unix(1, 0)}); err != nil {
		t.Fatal(err)
	}
	const perCommit, runs = 3, 100
	evs := make([]*session.Event, perCommit*(runs+2))
	for i := range evs {
		evs[i] = &session.Event{V: session.SchemaVersion, Seq: int64(i + 1), SessionID: "s1", Type: session.TypeFinal, Data: &session.Final{Text: "x"}}
	}
	// Grow the log once so that the measured commits do not.
	c := &session.Commit{SessionID: "s1", Events: evs, Time: time.Unix(2, 0)}
	if err := s.Commit(ctx, c); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteSession(ctx, "s1"); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateSession(ctx, &session.Session{ID: "s1", CreatedAt: time.Unix(1, 0)}); err != nil {
		t.Fatal(err)
	}
	snap := &session.Snapshot{Data: []byte(`{"state":"some runtime state of a realistic size, a few hundred bytes"}`)}
	var next int64
	commit := func() {
		c.ExpectSeq = next
		c.Events = evs[next : next+perCommit]
		snap.Seq = next + perCommit
		c.Snapshot = snap
		if err := s.Commit(ctx, c); err != nil {
			t.Fatal(err)
		}
		next += perCommit
	}
	commit() // first snapshot allocates its buffer
	allocs := testing.AllocsPerRun(runs, commit)
	// Appending to the log may grow it; amortized that is well under one
	// allocation per commit.
	if allocs > 0.5 {
		t.Errorf("Commit allocates %.2f times per call, want amortized < 0.5", allocs)
	}
}

// BenchmarkCommit commits 3 events at a time. Events are never mutated
// after Commit: the session is recreated every cycle commits, and the
// events of one cycle are made once, up front.
func BenchmarkCommit(b *testing.B) {
	ctx := b.Context()
	s := memstore.New()
	const perCommit, cycle = 3, 1024
	evs := make([]*session.Event, perCommit*cycle)
	for i := range evs {
		evs[i] = &session.Event{V: session.SchemaVersion, Seq: int64(i + 1), SessionID: "s1", Type: session.TypeFinal, Data: &session.Final{Text: "x"}}
	}
	c := &session.Commit{SessionID: "s1", Time: time.Unix(2, 0)}
	next := int64(len(evs))
	b.ReportAllocs()
	for b.Loop() {
		if next == int64(len(evs)) {
			s.DeleteSession(ctx, "s1")
			if err := s.CreateSession(ctx, &session.Session{ID: "s1", CreatedAt: time.Unix(1, 0)}); err != nil {
				b.Fatal(err)
			}
			next = 0
		}
		c.ExpectSeq = next
		c.Events = evs[next : next+perCommit]
		if err := s.Commit(ctx, c); err != nil {
			b.Fatal(err)
		}
		next += perCommit
	}
}

// Faulty keeps exactly the capabilities of the store it wraps, and fails
// the calls it is told to.
func TestFaulty(t *testing.T) {
	var f storetest.Faults
	s := storetest.Faulty(memstore.New(), &f)
	if _, ok := s.(session.Leaser); !ok {
		t.Error("Faulty(memstore) is not a Leaser")
	}
	if _, ok := s.(session.Follower); !ok {
		t.Error("Faulty(memstore) is not a Follower")
	}
	if _, ok := storetest.Faulty(plain{memstore.New()}, &f).(session.Leaser); ok {
		t.Error("Faulty of a store without leases is a Leaser")
	}
	ctx := t.Context()
	if err := s.CreateSession(ctx, &session.Session{ID: "s1"}); err != nil {
		t.Fatal(err)
	}
	f.FailCommit(2, false)
	c := &session.Commit{SessionID: "s1"}
	for i, wantErr := range []bool{false, true, false} {
		err := s.Commit(ctx, c)
		if got := errors.Is(err, storetest.ErrInjected); got != wantErr {
			t.Errorf("commit %d: %v", i+1, err)
		}
	}
	f.FailRead(1, true)
	for range 3 {
		if _, err := s.GetSession(ctx, "s1"); !errors.Is(err, storetest.ErrInjected) {
			t.Errorf("GetSession: %v, want injected", err)
		}
	}
	f.FailRead(0, false)
	if _, err := s.GetSession(ctx, "s1"); err != nil {
		t.Error(err)
	}
	if got := f.Failed(); got != 4 {
		t.Errorf("Failed() = %d, want 4", got)
	}
}

// plain hides every optional capability of a store.
type plain struct{ session.Store }
