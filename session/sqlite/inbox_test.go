package sqlite

import (
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"

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

// Commits with answers that wait together go in one transaction, and
// each has its own outcome: of those answering one shared input, the
// first in the batch answers it and the others, refused, write nothing —
// neither their events nor the answers of their own inputs; a commit
// answering an input already answered is refused too; the others are
// stored with their answers.
func TestGroupCommitAnswers(t *testing.T) {
	st := openStore(t)
	ctx := t.Context()
	const n = 40
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

	waitQueued, release := holdLead(t, st.g)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			id := fmt.Sprint("s", i)
			answers := []string{"own" + id}
			switch i % 4 {
			case 1:
				answers = append(answers, "shared")
			case 2:
				answers = append(answers, "done")
			}
			errs[i] = st.Commit(ctx, &session.Commit{SessionID: id, Events: []*session.Event{event(id, 1), event(id, 2)},
				Status: session.StatusRunning, Answers: answers, RunID: "run-" + id})
		})
	}
	waitQueued(n) // every commit waits: the next leader takes them all
	release()
	wg.Wait()

	own := inputsByID(t, st, "own")
	shared := inputsByID(t, st, "shared")["shared"]
	winner := ""
	for i, err := range errs {
		id := fmt.Sprint("s", i)
		switch {
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
}

// Submits of one key that wait together go in one transaction: one
// stores its input, and those after it in the transaction read that
// input back — a repeat if their digest is its, else a conflict, refused
// alone.
func TestGroupSubmitOneKey(t *testing.T) {
	st := openStore(t)
	ctx := t.Context()
	const n = 20
	waitQueued, release := holdLead(t, st.g)
	digest := func(i int) string { return fmt.Sprint("d", i%2) }
	got := make([]session.InboxInput, n)
	dups := make([]bool, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			in := textInput(fmt.Sprint("in", i), "src", "s1")
			in.Key, in.Digest = "k1", digest(i)
			got[i], dups[i], errs[i] = st.Submit(ctx, in)
		})
	}
	waitQueued(n)
	release()
	wg.Wait()
	stored := inputsByID(t, st, "src")
	if len(stored) != 1 {
		t.Fatalf("%d inputs stored, want 1", len(stored))
	}
	var winner session.InboxInput
	for _, in := range stored {
		winner = in
	}
	fresh := 0
	for i := range n {
		switch {
		case digest(i) != winner.Digest:
			if !errors.Is(errs[i], session.ErrConflict) {
				t.Errorf("Submit %d, the key with another digest: %v, want ErrConflict", i, errs[i])
			}
		case errs[i] != nil:
			t.Errorf("Submit %d: %v", i, errs[i])
		case got[i].ID != winner.ID || got[i].Seq != winner.Seq:
			t.Errorf("Submit %d got %s (seq %d), not the stored input %s", i, got[i].ID, got[i].Seq, winner.ID)
		case !dups[i]:
			fresh++
		}
	}
	if fresh != 1 {
		t.Errorf("%d Submits stored their input, want 1", fresh)
	}
}

// Two stores on one file are two processes: submits of one key through
// both store one input, and commits through both answer an input once.
func TestInboxAcrossProcesses(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "agentrt.db")
	var stores [2]*Store
	for i := range stores {
		st, err := Open(ctx, path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		stores[i] = st
	}
	const n = 16
	type result struct {
		in  session.InboxInput
		dup bool
		err error
	}
	results := make([]result, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			in := textInput(fmt.Sprint("in", i), "src", "s1")
			in.Key, in.Digest = "k1", "d1"
			r := &results[i]
			r.in, r.dup, r.err = stores[i%2].Submit(ctx, in)
		})
	}
	wg.Wait()
	stored := inputsByID(t, stores[1], "src")
	if len(stored) != 1 {
		t.Fatalf("%d inputs stored, want 1: %v", len(stored), stored)
	}
	fresh := 0
	for i, r := range results {
		if r.err != nil {
			t.Fatalf("Submit %d: %v", i, r.err)
		}
		if _, ok := stored[r.in.ID]; !ok {
			t.Errorf("Submit %d got %s, not the stored input", i, r.in.ID)
		}
		if !r.dup {
			fresh++
		}
	}
	if fresh != 1 {
		t.Errorf("%d Submits stored their input, want 1", fresh)
	}

	var shared string
	for id := range stored {
		shared = id
	}
	for i := range n {
		if err := stores[0].CreateSession(ctx, &session.Session{ID: fmt.Sprint("s", i), Agent: "a"}); err != nil {
			t.Fatal(err)
		}
	}
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			id := fmt.Sprint("s", i)
			errs[i] = stores[i%2].Commit(ctx, &session.Commit{SessionID: id, Events: []*session.Event{event(id, 1)},
				Status: session.StatusRunning, Answers: []string{shared}, RunID: "run-" + id})
		})
	}
	wg.Wait()
	won := 0
	for i, err := range errs {
		switch {
		case err == nil:
			won++
		case !errors.Is(err, session.ErrConflict):
			t.Errorf("commit %d: %v", i, err)
		}
	}
	if won != 1 {
		t.Errorf("%d commits answered the input, want 1", won)
	}
}
