package sqlite

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/agentrt/agentrt/session"
	"github.com/agentrt/agentrt/session/storetest"
)

func openFollow(t *testing.T, path string, opts ...Option) *Store {
	t.Helper()
	st, err := Open(t.Context(), path, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := st.Close(); err != nil {
			t.Error(err)
		}
	})
	return st
}

// Two stores on one file (two processes): followers on each see every
// commit of both, in order, once — this process's handed, the other's
// found by the writer's data_version.
func TestFollowAcrossProcesses(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "a.db")
	a := openFollow(t, path, WithPollInterval(5*time.Millisecond))
	b := openFollow(t, path, WithPollInterval(5*time.Millisecond))
	storetest.FollowAcross(t, a, b, 12)
}

// A follower of a session this process commits to reads the log once, at
// its start: every commit after is handed to it. Before, each commit made
// every follower read the log (and each polled it every 100 ms). Commits
// of another process are found while this one writes nothing, and read.
func TestFollowReadsOnlyWhatItWasNotHanded(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "a.db")
	a := openFollow(t, path, WithPollInterval(5*time.Millisecond))
	b := openFollow(t, path, WithPollInterval(5*time.Millisecond))
	ctx := t.Context()
	const followers, commits = 8, 50
	if err := a.CreateSession(ctx, &session.Session{ID: "s", Agent: "x"}); err != nil {
		t.Fatal(err)
	}
	got := make(chan int64, followers*(commits+2))
	fctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() {
		cancel()
		wg.Wait()
	}()
	for range followers {
		wg.Go(func() {
			for ev, err := range a.Follow(fctx, "s", 0) {
				if err != nil {
					return
				}
				got <- ev.Seq
			}
		})
	}
	commit := func(st *Store, seq int64) {
		ev := &session.Event{V: 1, Seq: seq, SessionID: "s", Type: session.TypeFinal, Time: time.Now().UTC(), Data: &session.Final{Text: fmt.Sprint(seq)}}
		if err := st.Commit(ctx, &session.Commit{SessionID: "s", ExpectSeq: seq - 1, Events: []*session.Event{ev}, Status: session.StatusRunning}); err != nil {
			t.Fatal(err)
		}
	}
	wait := func(seq int64) {
		for range followers {
			for s := range got {
				if s == seq {
					break
				}
			}
		}
	}
	commit(a, 1)
	wait(1)
	reads := a.waiters.Reads()
	for seq := int64(2); seq <= commits; seq++ {
		commit(a, seq)
	}
	wait(commits)
	if n := a.waiters.Reads() - reads; n != 0 {
		t.Errorf("%d commits of this process made its %d followers read the log %d times; want 0", commits-1, followers, n)
	}
	// Another process's commit: found while a writes nothing, and read
	// once by each follower.
	commit(b, commits+1)
	wait(commits + 1)
	if n := a.waiters.Reads() - reads; n < followers || n > 3*followers {
		t.Errorf("another process's commit: %d reads by %d followers", n, followers)
	}
}

// The inbox's reads run through statements prepared once, by query text
// (parsing a query cost SQLite more than running it): however many
// reads, of however many sources, one statement a shape.
func TestReadsArePreparedOnce(t *testing.T) {
	t.Parallel()
	st := openFollow(t, filepath.Join(t.TempDir(), "a.db"))
	for i := range 50 {
		if _, err := st.Pending(t.Context(), fmt.Sprint("src", i), 10); err != nil {
			t.Fatal(err)
		}
		if _, err := st.Inputs(t.Context(), fmt.Sprint("src", i), int64(i), 0); err != nil {
			t.Fatal(err)
		}
	}
	n := 0
	st.reads.Range(func(_, _ any) bool { n++; return true })
	if n != 2 {
		t.Fatalf("%d statements prepared for 100 reads of two shapes; want 2", n)
	}
}

// Foreign changes once another store on the file has committed, found
// by the next look of the data_version, and not while only this store
// writes (a process's own commits are not foreign).
func TestForeign(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "a.db")
	a := openFollow(t, path, WithPollInterval(5*time.Millisecond))
	b := openFollow(t, path, WithPollInterval(5*time.Millisecond))
	ctx := t.Context()
	if err := a.CreateSession(ctx, &session.Session{ID: "s", Agent: "x"}); err != nil {
		t.Fatal(err)
	}
	// a's writer has read the data_version since b last wrote (b made
	// its schema before a opened; a's looks since found that).
	if err := a.g.look(ctx); err != nil {
		t.Fatal(err)
	}
	n := a.Foreign()
	for i := range 20 {
		if err := a.CreateSession(ctx, &session.Session{ID: fmt.Sprint("own", i), Agent: "x"}); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.g.look(ctx); err != nil {
		t.Fatal(err)
	}
	if got := a.Foreign(); got != n {
		t.Errorf("Foreign went from %d to %d with only this store writing", n, got)
	}
	if err := b.CreateSession(ctx, &session.Session{ID: "theirs", Agent: "x"}); err != nil {
		t.Fatal(err)
	}
	if err := a.g.look(ctx); err != nil {
		t.Fatal(err)
	}
	if got := a.Foreign(); got == n {
		t.Errorf("Foreign stayed %d after another store committed", got)
	}
}
