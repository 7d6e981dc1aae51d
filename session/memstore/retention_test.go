package memstore_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/session"
	"github.com/agentrt/agentrt/session/memstore"
)

// A store bounded to 100 sessions keeps at most 100 (and at least 90,
// the bound less the tenth it forgets at once) however many are made:
// the oldest finished ones go first; running, waiting and paused ones
// and those under a live lease stay; each eviction is told.
func TestMaxSessions(t *testing.T) {
	ctx := context.Background()
	var told []int
	st := memstore.New(memstore.WithMaxSessions(100, func(forgot, kept int) { told = append(told, forgot) }))
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	mk := func(i int, status session.Status) string {
		id := fmt.Sprintf("s%04d", i)
		at := t0.Add(time.Duration(i) * time.Second)
		if err := st.CreateSession(ctx, &session.Session{ID: id, Agent: "a", Status: status, CreatedAt: at, UpdatedAt: at}); err != nil {
			t.Fatal(err)
		}
		return id
	}
	// The oldest five are not finished: they stay.
	keep := []string{mk(0, session.StatusRunning), mk(1, session.StatusWaiting), mk(2, session.StatusPaused)}
	leased := mk(3, session.StatusDone)
	if _, err := st.Acquire(ctx, leased, "owner", time.Hour); err != nil {
		t.Fatal(err)
	}
	keep = append(keep, leased)
	for i := 4; i < 1000; i++ {
		mk(i, session.StatusDone)
		if n := st.Sessions(); n > 100 {
			t.Fatalf("after %d creates the store keeps %d sessions; want at most 100", i+1, n)
		}
	}
	if n := st.Sessions(); n < 90 {
		t.Errorf("the store keeps %d sessions; want at least 90", n)
	}
	for _, id := range append(keep, "s0999", "s0950") {
		if _, err := st.GetSession(ctx, id); err != nil {
			t.Errorf("session %s: %v; want kept", id, err)
		}
	}
	for _, id := range []string{"s0004", "s0500"} {
		if _, err := st.GetSession(ctx, id); err == nil {
			t.Errorf("session %s kept; want it forgotten (finished, and old)", id)
		}
	}
	var sum int
	for _, n := range told {
		sum += n
	}
	if int64(sum) != st.Evicted() || sum != 1000-st.Sessions() {
		t.Errorf("told of %d evictions, Evicted %d, kept %d of 1000", sum, st.Evicted(), st.Sessions())
	}
}

// A store whose sessions all run goes past its bound rather than forget
// one of them.
func TestMaxSessionsNeverForgetsARun(t *testing.T) {
	ctx := context.Background()
	st := memstore.New(memstore.WithMaxSessions(10, nil))
	var ids []string
	for i := range 20 {
		id := fmt.Sprint("r", i)
		if err := st.CreateSession(ctx, &session.Session{ID: id, Agent: "a", Status: session.StatusRunning}); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	var kept []string
	for _, id := range ids {
		if _, err := st.GetSession(ctx, id); err == nil {
			kept = append(kept, id)
		}
	}
	if diff := cmp.Diff(ids, kept); diff != "" {
		t.Errorf("running sessions kept (-made +kept):\n%s", diff)
	}
}
