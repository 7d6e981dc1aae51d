package sqlite

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentrt/agentrt/session"
)

// holdLead takes the group commit's lead, so that writes queue, and
// returns a function that waits until n writes are queued.
func holdLead(t *testing.T, w *writer) (waitQueued func(n int), release func()) {
	t.Helper()
	release = w.g.Hold()
	t.Cleanup(release)
	return func(n int) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for q := w.g.Queued(); q != n; q = w.g.Queued() {
			if time.Now().After(deadline) {
				t.Fatalf("%d writes queued, want %d", q, n)
			}
			time.Sleep(time.Millisecond) // polling a condition, not a delay
		}
	}, release
}

func openStore(t *testing.T) *Store {
	t.Helper()
	st, err := Open(t.Context(), filepath.Join(t.TempDir(), "agentrt.db"))
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

// Commits of many sessions that wait together go in one transaction, and
// each gets its own outcome: the refused ones (a stale seq, a session that
// does not exist) are rolled back alone, the others are stored.
func TestGroupCommitOutcomesAreEach(t *testing.T) {
	st := openStore(t)
	ctx := t.Context()
	const n = 60
	for i := range n {
		if err := st.CreateSession(ctx, &session.Session{ID: fmt.Sprint("s", i), Agent: "a"}); err != nil {
			t.Fatal(err)
		}
	}
	waitQueued, release := holdLead(t, st.g)
	errs := make([]error, n+1)
	var wg sync.WaitGroup
	for i := range n + 1 {
		wg.Go(func() {
			id, expect := fmt.Sprint("s", i), int64(0)
			switch {
			case i == n:
				id = "missing"
			case i%3 == 1:
				expect = 5 // stale
			}
			errs[i] = st.Commit(ctx, &session.Commit{SessionID: id, ExpectSeq: expect,
				Events: []*session.Event{event(id, expect+1), event(id, expect+2)}, Status: session.StatusRunning})
		})
	}
	waitQueued(n + 1) // every commit waits: the next leader takes them all
	release()
	wg.Wait()
	for i, err := range errs {
		var want error
		switch {
		case i == n:
			want = session.ErrNotFound
		case i%3 == 1:
			want = session.ErrConflict
		}
		if want == nil && err != nil || want != nil && !errors.Is(err, want) {
			t.Errorf("commit %d: %v, want %v", i, err, want)
			continue
		}
		if i == n {
			continue
		}
		var got []int64
		for e, err := range st.Events(ctx, fmt.Sprint("s", i), 0) {
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, e.Seq)
		}
		if wantN := map[bool]int{true: 0, false: 2}[want != nil]; len(got) != wantN {
			t.Errorf("session s%d has events %v, want %d", i, got, wantN)
		}
	}
}

// A write that fails after it changed something is rolled back: the
// batch runs again, each write alone; the writes beside it are kept.
func TestGroupCommitRollsBackAFailedWrite(t *testing.T) {
	st := openStore(t)
	ctx := t.Context()
	if _, err := st.w.ExecContext(ctx, `CREATE TABLE t (x INTEGER)`); err != nil {
		t.Fatal(err)
	}
	waitQueued, release := holdLead(t, st.g)
	const n = 12
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			errs[i] = st.write(ctx, func(ctx context.Context, tx *wtx) error {
				if err := tx.execSQL(`INSERT INTO t VALUES (?)`, i); err != nil {
					return err
				}
				if i%4 == 0 {
					return fmt.Errorf("write %d fails after its insert", i)
				}
				return nil
			})
		})
	}
	waitQueued(n)
	release()
	wg.Wait()
	var kept []int
	rows, err := st.r.QueryContext(ctx, `SELECT x FROM t ORDER BY x`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var x int
		if err := rows.Scan(&x); err != nil {
			t.Fatal(err)
		}
		kept = append(kept, x)
	}
	want := []int{1, 2, 3, 5, 6, 7, 9, 10, 11}
	if fmt.Sprint(kept) != fmt.Sprint(want) {
		t.Errorf("rows %v, want %v", kept, want)
	}
	for i, err := range errs {
		if (i%4 == 0) != (err != nil) {
			t.Errorf("write %d: %v", i, err)
		}
	}
}

// A write whose context ends while it waits in the queue leaves it, and
// is not written when the queue moves on.
func TestGroupCommitCanceledWhileQueued(t *testing.T) {
	st := openStore(t)
	if err := st.CreateSession(t.Context(), &session.Session{ID: "s1", Agent: "a"}); err != nil {
		t.Fatal(err)
	}
	waitQueued, release := holdLead(t, st.g)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error)
	go func() {
		done <- st.Commit(ctx, &session.Commit{SessionID: "s1", Events: []*session.Event{event("s1", 1)}})
	}()
	waitQueued(1)
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Commit canceled in the queue: %v", err)
	}
	waitQueued(0)
	release()
	// The queue moves on without it.
	if err := st.Commit(t.Context(), &session.Commit{SessionID: "s1", Events: []*session.Event{event("s1", 1)}}); err != nil {
		t.Fatalf("next commit: %v", err)
	}
	s, err := st.GetSession(t.Context(), "s1")
	if err != nil || s.LastSeq != 1 {
		t.Fatalf("session after: %+v %v", s, err)
	}
}

// A write that panics leaves no transaction open behind it: the
// connection goes back rolled back, and the next writes go through.
func TestGroupCommitWriteThatPanics(t *testing.T) {
	st := openStore(t)
	ctx := t.Context()
	if err := st.CreateSession(ctx, &session.Session{ID: "s1", Agent: "a"}); err != nil {
		t.Fatal(err)
	}
	func() {
		defer func() {
			if recover() == nil {
				t.Fatal("the write's panic did not reach its caller")
			}
		}()
		st.write(ctx, func(ctx context.Context, tx *wtx) error {
			if err := tx.execSQL(`UPDATE sessions SET agent = 'changed'`); err != nil {
				return err
			}
			panic("a bug in a write")
		})
	}()
	if err := st.Commit(ctx, &session.Commit{SessionID: "s1", Events: []*session.Event{event("s1", 1)}, Status: session.StatusDone}); err != nil {
		t.Fatalf("a commit after the panic: %v", err)
	}
	s, err := st.GetSession(ctx, "s1")
	if err != nil || s.Agent != "a" || s.LastSeq != 1 {
		t.Fatalf("session after: %+v, %v; want agent a (the panicking write rolled back), seq 1", s, err)
	}
}

// A write that panics in a batch does not leave the others of the batch
// waiting for ever: they are answered with an error, and the panic goes
// on to the caller whose goroutine was writing.
func TestGroupCommitPanicAnswersTheBatch(t *testing.T) {
	st := openStore(t)
	ctx := t.Context()
	waitQueued, release := holdLead(t, st.g)
	outcomes := make(chan string, 2)
	for i := range 2 {
		go func() {
			defer func() {
				if p := recover(); p != nil {
					outcomes <- fmt.Sprint("panic: ", p)
				}
			}()
			err := st.write(ctx, func(ctx context.Context, tx *wtx) error {
				if i == 0 {
					panic("a bug in write 0")
				}
				return nil
			})
			outcomes <- fmt.Sprint("error: ", err)
		}()
		waitQueued(i + 1)
	}
	release()
	got := []string{<-outcomes, <-outcomes} // a write never answered hangs here
	var panics, errs int
	for _, o := range got {
		switch {
		case strings.HasPrefix(o, "panic: a bug in write 0"):
			panics++
		case strings.HasPrefix(o, "error: ") && strings.Contains(o, "a write of the batch panicked"):
			errs++
		}
	}
	if panics+errs != 2 || errs < 1 {
		t.Errorf("outcomes %q: want the other write answered with the panic as an error", got)
	}
}

// A refusal a write wraps with its own context is still a refusal: the
// writes beside it are kept in the batch (none runs twice), and its caller
// is told the refusal's error.
func TestGroupCommitWrappedRefusal(t *testing.T) {
	st := openStore(t)
	ctx := t.Context()
	waitQueued, release := holdLead(t, st.g)
	const n = 6
	var mu sync.Mutex
	runs := make([]int, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			errs[i] = st.write(ctx, func(ctx context.Context, tx *wtx) error {
				mu.Lock()
				runs[i]++
				mu.Unlock()
				if i%2 == 0 {
					return fmt.Errorf("write %d: %w", i, refuse(session.ErrExists))
				}
				return nil
			})
		})
	}
	waitQueued(n)
	release()
	wg.Wait()
	for i := range n {
		if runs[i] != 1 {
			t.Errorf("write %d ran %d times, want once (a refusal keeps the batch)", i, runs[i])
		}
		if refused := i%2 == 0; refused != errors.Is(errs[i], session.ErrExists) || !refused && errs[i] != nil {
			t.Errorf("write %d: %v", i, errs[i])
		}
	}
}
