package postgres

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/agentrt/agentrt/session"
)

// Submits queued together are written in one statement: each gets its
// own outcome — stored with a seq of its own, a repeat of a key (within
// the batch or before it) given the stored input, a key given to other
// content refused (ErrConflict), a taken id refused (ErrExists) — and a
// poisoned row (a NUL in its text, which Postgres refuses) fails alone.
func TestSubmitBatch(t *testing.T) {
	for _, poison := range []bool{false, true} {
		t.Run(fmt.Sprint("poisoned=", poison), func(t *testing.T) { testSubmitBatch(t, poison) })
	}
}

func testSubmitBatch(t *testing.T, poison bool) {
	ctx := t.Context()
	st := openStore(t)
	if _, _, err := st.Submit(ctx, textInput("taken", "src", "s1")); err != nil {
		t.Fatal(err)
	}
	keyed := func(id, key, digest string) *session.InboxInput {
		in := textInput(id, "src", "s1")
		in.Key, in.Digest = key, digest
		return in
	}
	if _, _, err := st.Submit(ctx, keyed("old", "k-old", "d")); err != nil {
		t.Fatal(err)
	}
	poisoned := textInput("poisoned", "src", "s1")
	poisoned.SessionID = "bad\x00session"
	ins := []*session.InboxInput{
		textInput("a", "src", "s1"),
		textInput("b", "other", "s2"),
		keyed("k1", "k", "d1"),
		keyed("k2", "k", "d1"),          // the same key and content: a repeat
		keyed("k3", "k", "d2"),          // the same key, other content
		textInput("taken", "src", "s1"), // an id stored before
		keyed("again", "k-old", "d"),    // a key stored before
	}
	if poison {
		ins = append(ins, poisoned)
	}
	release := st.submits.Hold()
	defer release()
	type outcome struct {
		in  session.InboxInput
		dup bool
		err error
	}
	out := make([]outcome, len(ins))
	var wg sync.WaitGroup
	for i, in := range ins {
		wg.Go(func() {
			got, dup, err := st.Submit(ctx, in)
			out[i] = outcome{got, dup, err}
		})
	}
	deadline := time.Now().Add(10 * time.Second)
	for st.submits.Queued() != len(ins) {
		if time.Now().After(deadline) {
			t.Fatalf("%d submits queued, want %d", st.submits.Queued(), len(ins))
		}
		time.Sleep(time.Millisecond) // polling a condition, not a delay
	}
	release()
	wg.Wait()

	seqs := map[int64]string{}
	for i, o := range out {
		if o.err == nil && !o.dup {
			if prev, ok := seqs[o.in.Seq]; ok || o.in.Seq == 0 {
				t.Errorf("%s stored with seq %d (%s has it too)", ins[i].ID, o.in.Seq, prev)
			}
			seqs[o.in.Seq] = ins[i].ID
		}
	}
	for _, i := range []int{0, 1} {
		if o := out[i]; o.err != nil || o.dup || o.in.ID != ins[i].ID {
			t.Errorf("%s: %+v, want stored", ins[i].ID, o)
		}
	}
	// k1, k2 (one content) and k3 (another) race for key k, in the
	// order the goroutines queued: the first stored; one of the same
	// content gets it as a repeat; one of other content is refused.
	k1, k2, k3 := out[2], out[3], out[4]
	switch {
	case k3.err == nil && !k3.dup: // k3 first
		if !errors.Is(k1.err, session.ErrConflict) || !errors.Is(k2.err, session.ErrConflict) {
			t.Errorf("k3 stored first; k1 %+v, k2 %+v: want both refused (ErrConflict)", k1, k2)
		}
	default:
		if k1.err != nil || k2.err != nil || k1.dup == k2.dup || k1.in.ID != k2.in.ID {
			t.Errorf("k1 %+v, k2 %+v: want one stored and the other its repeat", k1, k2)
		}
		if !errors.Is(k3.err, session.ErrConflict) {
			t.Errorf("k3: %v, want ErrConflict", k3.err)
		}
	}
	if !errors.Is(out[5].err, session.ErrExists) {
		t.Errorf("taken: %v, want ErrExists", out[5].err)
	}
	if o := out[6]; o.err != nil || !o.dup || o.in.ID != "old" {
		t.Errorf("again: %+v, want the input stored before", o)
	}
	if poison && out[7].err == nil {
		t.Errorf("the poisoned submit was stored")
	}
	got := inputsByID(t, st, "src")
	for _, id := range []string{"taken", "old", "a"} {
		if _, ok := got[id]; !ok {
			t.Errorf("input %s not stored", id)
		}
	}
	if n := len(got) + len(inputsByID(t, st, "other")); n != 5 {
		t.Errorf("%d inputs stored, want 5 (taken, old, a, b, one of k1/k2/k3)", n)
	}
}

// Two submits of one id queued together: one is stored, the other is
// refused (ErrExists), as when they are written one after the other —
// not both told they stored it.
func TestSubmitBatchSameID(t *testing.T) {
	ctx := t.Context()
	st := openStore(t)
	ins := []*session.InboxInput{textInput("same", "src", "s1"), textInput("same", "other", "s2")}
	ins[1].Metadata = map[string]string{"k": "v"}
	release := st.submits.Hold()
	defer release()
	errs := make([]error, len(ins))
	var wg sync.WaitGroup
	for i, in := range ins {
		wg.Go(func() { _, _, errs[i] = st.Submit(ctx, in) })
	}
	deadline := time.Now().Add(10 * time.Second)
	for st.submits.Queued() != len(ins) {
		if time.Now().After(deadline) {
			t.Fatalf("%d submits queued, want %d", st.submits.Queued(), len(ins))
		}
		time.Sleep(time.Millisecond) // polling a condition, not a delay
	}
	release()
	wg.Wait()
	stored := 0
	for i, err := range errs {
		switch {
		case err == nil:
			stored++
		case !errors.Is(err, session.ErrExists):
			t.Errorf("submit %d: %v, want stored or ErrExists", i, err)
		}
	}
	if stored != 1 {
		t.Errorf("%d submits of id same were told they stored it (errors %v), want 1", stored, errs)
	}
}
