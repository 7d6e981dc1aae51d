package memstore_test

import (
	"testing"
	"time"

	"github.com/agentrt/agentrt/session"
	"github.com/agentrt/agentrt/session/memstore"
	"github.com/agentrt/agentrt/session/storetest"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) session.Store {
		s := memstore.New()
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
