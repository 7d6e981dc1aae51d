package postgres

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentrt/agentrt/internal/pgtest"
	"github.com/agentrt/agentrt/session"
)

func textInput(id, source, sessionID string) *session.InboxInput {
	return &session.InboxInput{ID: id, Source: source, SessionID: sessionID, Parts: []session.InputPart{{Type: "text", Text: id}}}
}

// inputsByID returns the inputs of source in st, by id.
func inputsByID(t *testing.T, st *Store, source string) map[string]session.InboxInput {
	t.Helper()
	ins, err := st.Inputs(t.Context(), source, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	out := make(map[string]session.InboxInput, len(ins))
	for _, in := range ins {
		out[in.ID] = in
	}
	return out
}

// Commits with answers that wait together go in one batch, and each has
// its own outcome: of those answering one shared input, one answers it
// and the others write nothing (neither events nor the answers of their
// own inputs); one answering an input already answered is refused; the
// others are stored with their answers — also when the batch fails as a
// whole (a status Postgres cannot store) and its commits are written one
// by one.
func TestGroupCommitAnswers(t *testing.T) {
	for _, poison := range []bool{false, true} {
		t.Run(fmt.Sprint("poison=", poison), func(t *testing.T) {
			st := openStore(t)
			ctx := t.Context()
			const n = 24
			for i := range n {
				id := fmt.Sprint("s", i)
				if err := st.CreateSession(ctx, &session.Session{ID: id, Agent: "a"}); err != nil {
					t.Fatal(err)
				}
				if _, _, err := st.Submit(ctx, textInput("own"+id, "own", id)); err != nil {
					t.Fatal(err)
				}
			}
			for _, id := range []string{"shared", "done"} {
				if _, _, err := st.Submit(ctx, textInput(id, "shared", "x")); err != nil {
					t.Fatal(err)
				}
			}
			if err := st.CreateSession(ctx, &session.Session{ID: "x", Agent: "a"}); err != nil {
				t.Fatal(err)
			}
			if err := st.Commit(ctx, &session.Commit{SessionID: "x", Events: []*session.Event{event("x", 1)}, Answers: []string{"done"}, RunID: "run-x"}); err != nil {
				t.Fatal(err)
			}

			release := st.commits.Hold()
			defer release()
			errs := make([]error, n)
			var wg sync.WaitGroup
			for i := range n {
				wg.Go(func() {
					id, status := fmt.Sprint("s", i), session.StatusRunning
					answers := []string{"own" + id}
					switch {
					case poison && i == 3:
						status = "bad\x00status"
					case i%4 == 1:
						answers = append(answers, "shared")
					case i%4 == 2:
						answers = append(answers, "done")
					}
					errs[i] = st.Commit(ctx, &session.Commit{SessionID: id, Events: []*session.Event{event(id, 1), event(id, 2)},
						Status: status, Answers: answers, RunID: "run-" + id})
				})
			}
			deadline := time.Now().Add(10 * time.Second)
			for st.commits.Queued() != n {
				if time.Now().After(deadline) {
					t.Fatalf("%d commits queued, want %d", st.commits.Queued(), n)
				}
				time.Sleep(time.Millisecond) // polling a condition, not a delay
			}
			release()
			wg.Wait()

			own := inputsByID(t, st, "own")
			shared := inputsByID(t, st, "shared")["shared"]
			winner := ""
			for i, err := range errs {
				id := fmt.Sprint("s", i)
				switch {
				case poison && i == 3:
					if err == nil {
						t.Errorf("the poisoned commit of %s succeeded", id)
					}
				case i%4 == 1 && err == nil:
					if winner != "" {
						t.Errorf("%s and %s both answered the shared input", winner, id)
					}
					winner = id
				case i%4 == 1 || i%4 == 2:
					if !errors.Is(err, session.ErrConflict) {
						t.Errorf("commit of %s: %v, want ErrConflict", id, err)
					}
				case err != nil:
					t.Errorf("commit of %s: %v", id, err)
				}
				s, gerr := st.GetSession(ctx, id)
				if gerr != nil {
					t.Fatal(gerr)
				}
				in := own["own"+id]
				switch {
				case err == nil && (s.LastSeq != 2 || in.State != session.InputAnswered || in.RunID != "run-"+id):
					t.Errorf("%s, stored: last seq %d, its input %s by %q", id, s.LastSeq, in.State, in.RunID)
				case err != nil && (s.LastSeq != 0 || in.State != session.InputPending):
					t.Errorf("%s, refused: last seq %d, its input %s", id, s.LastSeq, in.State)
				}
			}
			if winner == "" || shared.State != session.InputAnswered || shared.RunID != "run-"+winner {
				t.Errorf("the shared input: %+v, want answered by the winner %q", shared, winner)
			}
		})
	}
}

// holder is a connection of its own holding a transaction open, and the
// backend's pid, so that a test can see who waits for its locks.
type holder struct {
	conn *pgx.Conn
	tx   pgx.Tx
	pid  uint32
}

func hold(t *testing.T, dsn string) *holder {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	tx, err := conn.Begin(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return &holder{conn: conn, tx: tx, pid: conn.PgConn().PID()}
}

// waitBlocked waits until n backends wait for h's locks, directly or
// through another that does, or done says to stop looking, and reports
// how many there were.
func (h *holder) waitBlocked(t *testing.T, st *Store, n int, done func() bool) int {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		var blocked int
		err := st.pool.QueryRow(t.Context(), `WITH RECURSIVE b(pid) AS (
				SELECT pid FROM pg_stat_activity WHERE $1::int = ANY(pg_blocking_pids(pid))
				UNION
				SELECT a.pid FROM pg_stat_activity a JOIN b ON b.pid = ANY(pg_blocking_pids(a.pid))
			) SELECT count(*) FROM b`, int(h.pid)).Scan(&blocked)
		if err != nil {
			t.Fatal(err)
		}
		if blocked >= n || done() {
			return blocked
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d backends wait for the holder's locks, want %d", blocked, n)
		}
		time.Sleep(time.Millisecond) // polling a condition, not a delay
	}
}

// Two processes commit at once, each answering the same input: the
// input's row lock, taken before anything is checked, makes the second
// find it answered once the first has committed, so exactly one commit
// is stored.
func TestAnswerAcrossProcesses(t *testing.T) {
	ctx := t.Context()
	dsn, _ := pgtest.Schema(t)
	var stores [2]*Store
	for i := range stores {
		st, err := Open(ctx, dsn)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		stores[i] = st
	}
	a := stores[0]
	if _, _, err := a.Submit(ctx, textInput("in1", "src", "s0")); err != nil {
		t.Fatal(err)
	}
	for i := range stores {
		if err := a.CreateSession(ctx, &session.Session{ID: fmt.Sprint("s", i), Agent: "a"}); err != nil {
			t.Fatal(err)
		}
	}
	// A third connection holds the input's row, so that both commits are
	// under way, waiting for it, before either can go on.
	h := hold(t, dsn)
	if _, err := h.tx.Exec(ctx, `SELECT 1 FROM inbox WHERE id = 'in1' FOR UPDATE`); err != nil {
		t.Fatal(err)
	}
	errs := make([]error, len(stores))
	var wg sync.WaitGroup
	for i, st := range stores {
		wg.Go(func() {
			id := fmt.Sprint("s", i)
			errs[i] = st.Commit(ctx, &session.Commit{SessionID: id, Events: []*session.Event{event(id, 1)}, Status: session.StatusRunning,
				Answers: []string{"in1"}, RunID: "run-" + id})
		})
	}
	h.waitBlocked(t, a, 2, func() bool { return false })
	if err := h.tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	winner := -1
	for i, err := range errs {
		switch {
		case err == nil && winner >= 0:
			t.Errorf("both commits answered in1")
		case err == nil:
			winner = i
		case !errors.Is(err, session.ErrConflict):
			t.Errorf("commit %d: %v, want ErrConflict", i, err)
		}
	}
	if winner < 0 {
		t.Fatal("no commit answered in1")
	}
	in := inputsByID(t, a, "src")["in1"]
	if in.State != session.InputAnswered || in.RunID != fmt.Sprint("run-s", winner) {
		t.Errorf("in1: %+v, want answered by run-s%d", in, winner)
	}
	loser := 1 - winner
	if s, err := a.GetSession(ctx, fmt.Sprint("s", loser)); err != nil || s.LastSeq != 0 {
		t.Errorf("the refused commit's session: %+v, %v", s, err)
	}
}

// Inputs are visible in the order of their seqs: a submit that took a
// seq and is not yet committed (it waits for the row of another
// transaction holding its id) keeps a later submit of another process
// from committing, so that no reader sees a seq after one still to come.
func TestSubmitOrder(t *testing.T) {
	ctx := t.Context()
	st := openStore(t)
	dsn := st.pool.Config().ConnString()
	h := hold(t, dsn)
	if _, err := h.tx.Exec(ctx, `INSERT INTO inbox (tenant, id, seq, source, session_id, parts, key, digest, at, state)
		VALUES ('default', 'first', 1000, 'other', 's1', '[]', '', '', 0, 'pending')`); err != nil {
		t.Fatal(err)
	}
	type result struct {
		in  session.InboxInput
		err error
	}
	first, second := make(chan result, 1), make(chan result, 1)
	go func() {
		in, _, err := st.Submit(ctx, textInput("first", "src", "s1"))
		first <- result{in, err}
	}()
	h.waitBlocked(t, st, 1, func() bool { return len(first) > 0 })
	// From another process: in this one, the second submit would wait
	// in the store's queue behind the first (submits are batched).
	other, err := Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { other.Close() })
	go func() {
		in, _, err := other.Submit(ctx, textInput("second", "src", "s1"))
		second <- result{in, err}
	}()
	if n := h.waitBlocked(t, st, 2, func() bool { return len(second) > 0 }); n < 2 {
		t.Errorf("the second submit committed while the first, with an earlier seq, was still under way")
	}
	if got := inputsByID(t, st, "src"); len(got) != 0 {
		t.Errorf("inputs visible while the first submit waits: %v", got)
	}
	if err := h.tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	r1, r2 := <-first, <-second
	if r1.err != nil || r2.err != nil {
		t.Fatalf("submits: %v, %v", r1.err, r2.err)
	}
	if r1.in.Seq >= r2.in.Seq {
		t.Errorf("seqs: first %d, second %d", r1.in.Seq, r2.in.Seq)
	}
}

// Submits of one key through two stores (two processes) store one input,
// and every caller gets it.
func TestSubmitAcrossProcesses(t *testing.T) {
	ctx := t.Context()
	dsn, _ := pgtest.Schema(t)
	var stores [2]*Store
	for i := range stores {
		st, err := Open(ctx, dsn)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		stores[i] = st
	}
	const n = 16
	got := make([]session.InboxInput, n)
	dups := make([]bool, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			in := textInput(fmt.Sprint("in", i), "src", "s1")
			in.Key, in.Digest = "k1", "d1"
			got[i], dups[i], errs[i] = stores[i%2].Submit(ctx, in)
		})
	}
	wg.Wait()
	stored := inputsByID(t, stores[1], "src")
	if len(stored) != 1 {
		t.Fatalf("%d inputs stored, want 1", len(stored))
	}
	fresh := 0
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("Submit %d: %v", i, errs[i])
		}
		if s, ok := stored[got[i].ID]; !ok || s.Seq != got[i].Seq {
			t.Errorf("Submit %d got %s (seq %d), not the stored input", i, got[i].ID, got[i].Seq)
		}
		if !dups[i] {
			fresh++
		}
	}
	if fresh != 1 {
		t.Errorf("%d Submits stored their input, want 1", fresh)
	}
}
