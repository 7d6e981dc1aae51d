package postgres

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/agentrt/agentrt/internal/pgtest"
	"github.com/agentrt/agentrt/session"
)

func openStore(t *testing.T) *Store {
	t.Helper()
	dsn, _ := pgtest.Schema(t)
	st, err := Open(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func event(id string, seq int64) *session.Event {
	return &session.Event{V: session.SchemaVersion, Seq: seq, SessionID: id, Type: session.TypeFinal,
		Time: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), Data: &session.Final{Text: fmt.Sprint("answer ", seq)}}
}

// Commits of many sessions that wait together go in one round trip, and
// each gets its own outcome: stale ones and one for a missing session are
// refused alone; one that Postgres cannot store (a NUL in its status)
// fails the batch, whose commits are then written one by one, so that it
// alone fails.
func TestGroupCommitOutcomesAreEach(t *testing.T) {
	for _, poison := range []bool{false, true} {
		t.Run(fmt.Sprint("poison=", poison), func(t *testing.T) {
			st := openStore(t)
			ctx := t.Context()
			const n = 40
			for i := range n {
				if err := st.CreateSession(ctx, &session.Session{ID: fmt.Sprint("s", i), Agent: "a"}); err != nil {
					t.Fatal(err)
				}
			}
			release := st.commits.Hold()
			defer release()
			errs := make([]error, n+1)
			var wg sync.WaitGroup
			for i := range n + 1 {
				wg.Go(func() {
					id, expect, status := fmt.Sprint("s", i), int64(0), session.StatusRunning
					switch {
					case i == n:
						id = "missing"
					case i%3 == 1:
						expect = 5 // stale
					case poison && i == 7:
						status = "bad\x00status"
					}
					errs[i] = st.Commit(ctx, &session.Commit{SessionID: id, ExpectSeq: expect,
						Events: []*session.Event{event(id, expect+1), event(id, expect+2)}, Status: status})
				})
			}
			deadline := time.Now().Add(10 * time.Second)
			for st.commits.Queued() != n+1 {
				if time.Now().After(deadline) {
					t.Fatalf("%d commits queued, want %d", st.commits.Queued(), n+1)
				}
				time.Sleep(time.Millisecond) // polling a condition, not a delay
			}
			release()
			wg.Wait()
			for i, err := range errs {
				var want error
				switch {
				case i == n:
					want = session.ErrNotFound
				case i%3 == 1:
					want = session.ErrConflict
				case poison && i == 7:
					if err == nil {
						t.Errorf("commit %d with a NUL in its status was stored", i)
					}
					continue
				}
				if want == nil && err != nil || want != nil && !errors.Is(err, want) {
					t.Errorf("commit %d: %v, want %v", i, err, want)
					continue
				}
				if i == n {
					continue
				}
				s, err := st.GetSession(ctx, fmt.Sprint("s", i))
				if err != nil {
					t.Fatal(err)
				}
				if wantSeq := map[bool]int64{true: 0, false: 2}[want != nil]; s.LastSeq != wantSeq {
					t.Errorf("session s%d at seq %d, want %d", i, s.LastSeq, wantSeq)
				}
			}
		})
	}
}
