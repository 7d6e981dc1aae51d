package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/agentrt/agentrt/session"
)

// inboxCase is a case of the Inbox section: a store that implements
// session.Inbox, with session s1 created, and the store's clock.
type inboxCase func(t *testing.T, s session.Store, b session.Inbox, c *Clock)

// runInbox checks session.Inbox and Commit.Answers. Beyond the doc
// comments, it pins down: At is the store's clock, to the microsecond;
// Data comes back compact and otherwise byte for byte; a commit's
// checks of its session (fence, then seq) come before those of its
// answers, so a writer that lost its session hears ErrFenced whatever
// its answers.
func runInbox(t *testing.T, newStore Factory) {
	cases := []struct {
		name string
		fn   inboxCase
	}{
		{"SubmitSets", testSubmitSets},
		{"SubmitRepeat", testSubmitRepeat},
		{"SubmitKeyConflict", testSubmitKeyConflict},
		{"SubmitKeyScope", testSubmitKeyScope},
		{"SubmitConcurrent", testSubmitConcurrent},
		{"SubmitIDReused", testSubmitIDReused},
		{"SubmitInvalid", testSubmitInvalid},
		{"RoundTrip", testInputRoundTrip},
		{"Copies", testInputCopies},
		{"PendingSources", testPendingSources},
		{"PendingSourcesOrder", testPendingSourcesOrder},
		{"Pending", testPending},
		{"PendingBytes", testPendingBytes},
		{"SubmitWithin", testSubmitWithin},
		{"Inputs", testInputs},
		{"Refuse", testRefuse},
		{"CommitAnswers", testCommitAnswers},
		{"CommitAnswersNotPending", testCommitAnswersNotPending},
		{"CommitAnswersStale", testCommitAnswersStale},
		{"CommitAnswersTwice", testCommitAnswersTwice},
		{"CommitAnswersConcurrent", testCommitAnswersConcurrent},
		{"Tenants", testInboxTenants},
		{"ContextCanceled", testInboxCanceled},
	}
	for _, cs := range cases {
		t.Run(cs.name, func(t *testing.T) {
			t.Parallel()
			clock := NewClock(base)
			s := newStore(t, clock.Now)
			b, ok := s.(session.Inbox)
			if !ok {
				t.Skip("the store does not implement session.Inbox")
			}
			create(t, s, newSession("s1", at(0)))
			cs.fn(t, s, b, clock)
		})
	}
}

// inputOpts compares inputs: a nil Parts or Metadata equal to an empty
// one, times with Equal.
var inputOpts = cmp.Options{cmpopts.EquateEmpty()}

// textInput is an input of one text part, without a key.
func textInput(id, source, sessionID, text string) *session.InboxInput {
	return &session.InboxInput{ID: id, Source: source, SessionID: sessionID, Parts: []session.InputPart{{Type: "text", Text: text}}}
}

// keyed is in with an idempotency key and digest.
func keyed(in *session.InboxInput, key, digest string) *session.InboxInput {
	in.Key, in.Digest = key, digest
	return in
}

func submitIn(t *testing.T, ctx context.Context, b session.Inbox, in *session.InboxInput) session.InboxInput {
	t.Helper()
	got, dup, err := b.Submit(ctx, in)
	if err != nil {
		t.Fatalf("Submit(%q): %v", in.ID, err)
	}
	if dup {
		t.Fatalf("Submit(%q): dup for a new input", in.ID)
	}
	return got
}

func submit(t *testing.T, b session.Inbox, in *session.InboxInput) session.InboxInput {
	t.Helper()
	return submitIn(t, t.Context(), b, in)
}

func inputsIn(t *testing.T, ctx context.Context, b session.Inbox, source string, after int64, limit int) []session.InboxInput {
	t.Helper()
	got, err := b.Inputs(ctx, source, after, limit)
	if err != nil {
		t.Fatalf("Inputs(%q, %d, %d): %v", source, after, limit, err)
	}
	return got
}

func allInputs(t *testing.T, b session.Inbox, source string) []session.InboxInput {
	t.Helper()
	return inputsIn(t, t.Context(), b, source, 0, 0)
}

func pendingIn(t *testing.T, ctx context.Context, b session.Inbox, source string) []session.InboxInput {
	t.Helper()
	got, err := b.Pending(ctx, source, 0)
	if err != nil {
		t.Fatalf("Pending(%q): %v", source, err)
	}
	return got
}

func sourceOf(t *testing.T, ctx context.Context, b session.Inbox, source string) session.SourceState {
	t.Helper()
	got, err := b.PendingOf(ctx, source)
	if err != nil {
		t.Fatalf("PendingOf(%q): %v", source, err)
	}
	return got
}

func pendingSources(t *testing.T, b session.Inbox, limit int) []session.SourceState {
	t.Helper()
	got, err := b.PendingSources(t.Context(), limit)
	if err != nil {
		t.Fatalf("PendingSources(%d): %v", limit, err)
	}
	return got
}

func refuseIn(t *testing.T, ctx context.Context, b session.Inbox, reason string, ids ...string) {
	t.Helper()
	if err := b.Refuse(ctx, ids, reason); err != nil {
		t.Fatalf("Refuse(%q): %v", ids, err)
	}
}

// ids returns the inputs' ids, in order.
func ids(ins []session.InboxInput) []string {
	out := make([]string, len(ins))
	for i, in := range ins {
		out[i] = in.ID
	}
	return out
}

func diffInputs(t *testing.T, what string, want, got any) {
	t.Helper()
	if diff := cmp.Diff(want, got, inputOpts); diff != "" {
		t.Errorf("%s (-want +got):\n%s", what, diff)
	}
}

// fenceOf returns a fence token for commits to session id: the lease of
// owner "runner" if s has leases, zero otherwise.
func fenceOf(t *testing.T, s session.Store, id string) int64 {
	t.Helper()
	l, ok := s.(session.Leaser)
	if !ok {
		return 0
	}
	return acquire(t, l, id, "runner").Token
}

// answer commits one event to session id after seq expect, answering
// answers for run runID, and fails the test if the commit fails.
func answer(t *testing.T, s session.Store, id string, expect, fence int64, runID string, answers ...string) {
	t.Helper()
	commit(t, s, &session.Commit{SessionID: id, ExpectSeq: expect, Events: events(id, expect, 1), Status: session.StatusRunning,
		Turn: 1, Fence: fence, Time: at(time.Minute), Answers: answers, RunID: runID})
}

// Submit stores the input pending, with the context's tenant, the store's
// clock and a Seq that grows; what the caller put in the fields the store
// sets is ignored.
func testSubmitSets(t *testing.T, s session.Store, b session.Inbox, c *Clock) {
	in := textInput("in1", "slack:C1", "s1", "hello")
	in.Tenant, in.Seq, in.State, in.At, in.RunID, in.Reason = session.DefaultTenant, 99, session.InputAnswered, at(time.Hour), "run-x", "why"
	first := submit(t, b, in)
	want := session.InboxInput{ID: "in1", Tenant: session.DefaultTenant, Source: "slack:C1", SessionID: "s1",
		Parts: []session.InputPart{{Type: "text", Text: "hello"}}, At: c.Now(), Seq: first.Seq, State: session.InputPending}
	diffInputs(t, "Submit's input", want, first)
	if first.Seq <= 0 {
		t.Errorf("first input's Seq = %d, want > 0", first.Seq)
	}
	c.Advance(1500 * time.Millisecond)
	second := submit(t, b, textInput("in2", "slack:C2", "s1", "again"))
	if second.Seq <= first.Seq {
		t.Errorf("Seq of a later input (another source) = %d, not after %d", second.Seq, first.Seq)
	}
	if !second.At.Equal(c.Now()) {
		t.Errorf("second input's At = %v, want the store's clock %v", second.At, c.Now())
	}
	c.Advance(time.Second)
	third := submit(t, b, textInput("in3", "slack:C1", "s1", "third"))
	if third.Seq <= second.Seq {
		t.Errorf("Seq of a third input = %d, not after %d", third.Seq, second.Seq)
	}
	diffInputs(t, "inputs of slack:C1", []session.InboxInput{want, third}, allInputs(t, b, "slack:C1"))
}

// A repeat of a key with the same digest stores nothing and returns the
// stored input as it is now, whatever id the repeat has.
func testSubmitRepeat(t *testing.T, s session.Store, b session.Inbox, c *Clock) {
	first := submit(t, b, keyed(textInput("in1", "src", "s1", "hello"), "k1", "d1"))
	c.Advance(time.Second)
	for _, id := range []string{"in1", "in2"} {
		got, dup, err := b.Submit(t.Context(), keyed(textInput(id, "src", "s2", "hello again"), "k1", "d1"))
		if err != nil || !dup {
			t.Fatalf("repeat of key k1 as %s: dup %v, %v; want dup", id, dup, err)
		}
		diffInputs(t, "the repeat's input", first, got)
	}
	fence := fenceOf(t, s, "s1")
	answer(t, s, "s1", 0, fence, "run-1", "in1")
	got, dup, err := b.Submit(t.Context(), keyed(textInput("in3", "src", "s1", "hello"), "k1", "d1"))
	if err != nil || !dup {
		t.Fatalf("repeat of an answered input's key: dup %v, %v", dup, err)
	}
	if got.ID != "in1" || got.State != session.InputAnswered || got.RunID != "run-1" {
		t.Errorf("repeat of an answered input's key = %+v, want in1 answered by run-1", got)
	}
	if got := allInputs(t, b, "src"); len(got) != 1 {
		t.Errorf("inputs after repeats: %v, want in1 only", ids(got))
	}
}

// A key repeated with another digest is a conflict, and stores nothing.
func testSubmitKeyConflict(t *testing.T, s session.Store, b session.Inbox, c *Clock) {
	first := submit(t, b, keyed(textInput("in1", "src", "s1", "hello"), "k1", "d1"))
	_, dup, err := b.Submit(t.Context(), keyed(textInput("in2", "src", "s1", "bye"), "k1", "d2"))
	if !errors.Is(err, session.ErrConflict) || dup {
		t.Fatalf("key k1 with another digest: dup %v, %v; want ErrConflict", dup, err)
	}
	diffInputs(t, "inputs after the conflict", []session.InboxInput{first}, allInputs(t, b, "src"))
}

// Keys are a source's: the same key in another source is another input;
// and inputs without a key are never repeats.
func testSubmitKeyScope(t *testing.T, s session.Store, b session.Inbox, c *Clock) {
	submit(t, b, keyed(textInput("in1", "a", "s1", "x"), "k1", "d1"))
	submit(t, b, keyed(textInput("in2", "b", "s1", "x"), "k1", "d1"))
	submit(t, b, keyed(textInput("in3", "b", "s1", "x"), "k2", "d1"))
	submit(t, b, textInput("in4", "b", "s1", "x"))
	submit(t, b, textInput("in5", "b", "s1", "x"))
	if got := ids(allInputs(t, b, "b")); !cmp.Equal(got, []string{"in2", "in3", "in4", "in5"}) {
		t.Errorf("inputs of b: %v", got)
	}
}

// One key submitted by many callers at once is stored once, and every
// caller gets that input.
func testSubmitConcurrent(t *testing.T, s session.Store, b session.Inbox, c *Clock) {
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
			in := keyed(textInput(fmt.Sprintf("in%d", i), "src", "s1", "hello"), "k1", "d1")
			r := &results[i]
			r.in, r.dup, r.err = b.Submit(t.Context(), in)
		})
	}
	wg.Wait()
	stored := allInputs(t, b, "src")
	if len(stored) != 1 {
		t.Fatalf("%d inputs stored, want 1: %v", len(stored), ids(stored))
	}
	fresh := 0
	for i, r := range results {
		if r.err != nil {
			t.Errorf("Submit %d: %v", i, r.err)
			continue
		}
		if !r.dup {
			fresh++
		}
		diffInputs(t, fmt.Sprintf("Submit %d's input", i), stored[0], r.in)
	}
	if fresh != 1 {
		t.Errorf("%d Submits stored their input, want 1", fresh)
	}
}

// An id is an input's for good: reused, without the key that makes a
// repeat, it is ErrExists, in any source.
func testSubmitIDReused(t *testing.T, s session.Store, b session.Inbox, c *Clock) {
	first := submit(t, b, keyed(textInput("in1", "a", "s1", "x"), "k1", "d1"))
	for _, in := range []*session.InboxInput{
		textInput("in1", "a", "s1", "y"),
		keyed(textInput("in1", "a", "s1", "y"), "k2", "d2"),
		textInput("in1", "b", "s1", "y"),
	} {
		if _, _, err := b.Submit(t.Context(), in); !errors.Is(err, session.ErrExists) {
			t.Errorf("Submit of id in1 again (source %s, key %q): %v, want ErrExists", in.Source, in.Key, err)
		}
	}
	diffInputs(t, "inputs of a", []session.InboxInput{first}, allInputs(t, b, "a"))
	if got := allInputs(t, b, "b"); len(got) != 0 {
		t.Errorf("inputs of b: %v, want none", ids(got))
	}
}

// An input without an id, source or session, of another tenant, or with
// a part that is not text or JSON data, is refused and not stored.
func testSubmitInvalid(t *testing.T, s session.Store, b session.Inbox, c *Clock) {
	// Each with an id of its own, so that one stored by mistake does not
	// make the next fail for its id.
	for name, in := range map[string]*session.InboxInput{
		"no id":          textInput("", "src", "s1", "x"),
		"no source":      textInput("in2", "", "s1", "x"),
		"no session":     textInput("in3", "src", "", "x"),
		"another tenant": {ID: "in4", Tenant: "acme", Source: "src", SessionID: "s1"},
		"a part's type":  {ID: "in5", Source: "src", SessionID: "s1", Parts: []session.InputPart{{Type: "image", Text: "x"}}},
		"data not JSON":  {ID: "in6", Source: "src", SessionID: "s1", Parts: []session.InputPart{{Type: "data", Data: json.RawMessage(`{"a":`)}}},
		"data missing":   {ID: "in7", Source: "src", SessionID: "s1", Parts: []session.InputPart{{Type: "data"}}},
		"text with data": {ID: "in8", Source: "src", SessionID: "s1", Parts: []session.InputPart{{Type: "text", Text: "x", Data: json.RawMessage(`1`)}}},
	} {
		if _, _, err := b.Submit(t.Context(), in); err == nil {
			t.Errorf("Submit of an input with %s: no error", name)
		}
	}
	if got := allInputs(t, b, "src"); len(got) != 0 {
		t.Errorf("refused inputs were stored: %v", ids(got))
	}
	if got := pendingSources(t, b, 0); len(got) != 0 {
		t.Errorf("PendingSources after refused inputs: %+v", got)
	}
}

// Parts of both types, and metadata, come back as they went in; data
// compact, its strings and key order kept.
func testInputRoundTrip(t *testing.T, s session.Store, b session.Inbox, c *Clock) {
	in := &session.InboxInput{
		ID: "in1", Source: "telegram:42", SessionID: "s1", Key: "update:7", Digest: "sha256:ab12",
		Parts: []session.InputPart{
			{Type: "text", Text: "Bonjour ünïcødé ✓ <b>&amp;</b>\nsecond line\t\"quoted\""},
			{Type: "data", Data: json.RawMessage(`{"z":1,"a":[true,null,2.5,"<&>"],"nested":{"k":"\u00e9"}}`)},
			{Type: "text", Text: ""},
			{Type: "data", Data: json.RawMessage(` [ 1 , "two" ,
				{"three" : 3} ] `)},
		},
		Metadata: map[string]string{"chat": "42", "user": "ada", "empty": "", "ünï": "cødé"},
	}
	want := *in
	want.Parts = []session.InputPart{in.Parts[0], in.Parts[1], in.Parts[2],
		{Type: "data", Data: json.RawMessage(`[1,"two",{"three":3}]`)}}
	want.Tenant, want.At, want.State = session.DefaultTenant, c.Now(), session.InputPending
	got := submit(t, b, in)
	want.Seq = got.Seq
	diffInputs(t, "Submit's input", want, got)
	diffInputs(t, "Inputs", []session.InboxInput{want}, allInputs(t, b, "telegram:42"))
	diffInputs(t, "Pending", []session.InboxInput{want}, pendingIn(t, t.Context(), b, "telegram:42"))
	dup, _, err := b.Submit(t.Context(), in)
	if err != nil {
		t.Fatal(err)
	}
	diffInputs(t, "a repeat's input", want, dup)
}

// Stores hand out copies: changing an input after Submit, or one that a
// read returned, changes nothing stored.
func testInputCopies(t *testing.T, s session.Store, b session.Inbox, c *Clock) {
	in := &session.InboxInput{ID: "in1", Source: "src", SessionID: "s1",
		Parts:    []session.InputPart{{Type: "data", Data: json.RawMessage(`{"a":1}`)}, {Type: "text", Text: "x"}},
		Metadata: map[string]string{"k": "v"}}
	want := submit(t, b, in)
	want.Parts = []session.InputPart{{Type: "data", Data: json.RawMessage(`{"a":1}`)}, {Type: "text", Text: "x"}}
	want.Metadata = map[string]string{"k": "v"}
	in.Parts[0].Data[2] = 'b'
	in.Parts[1].Text = "y"
	in.Metadata["k"] = "changed"
	got := allInputs(t, b, "src")
	diffInputs(t, "the input after changing what was submitted", []session.InboxInput{want}, got)
	got[0].Parts[0].Data[2] = 'c'
	got[0].Parts[1] = session.InputPart{Type: "text", Text: "z"}
	got[0].Metadata["k"] = "changed"
	diffInputs(t, "the input after changing what Inputs returned", []session.InboxInput{want}, allInputs(t, b, "src"))
	p := pendingIn(t, t.Context(), b, "src")
	p[0].Parts[0].Data[2] = 'd'
	diffInputs(t, "the input after changing what Pending returned", []session.InboxInput{want}, allInputs(t, b, "src"))
}

// PendingSources summarises each source's pending inputs, of every
// tenant, ordered by their oldest pending input; inputs answered or
// refused do not count.
func testPendingSources(t *testing.T, s session.Store, b session.Inbox, c *Clock) {
	acme := session.WithTenant(t.Context(), "acme")
	t0 := c.Now()
	a1 := submit(t, b, textInput("a1", "A", "sA1", "x")) // t0
	c.Advance(time.Second)
	b1 := submit(t, b, textInput("b1", "B", "sB", "x")) // t0+1s
	c.Advance(time.Second)
	a2 := submit(t, b, textInput("a2", "A", "sA2", "x")) // t0+2s
	c.Advance(time.Second)
	x1 := submitIn(t, acme, b, textInput("x1", "A", "sX", "x")) // t0+3s, acme
	c.Advance(time.Second)
	submit(t, b, textInput("d1", "D", "sD", "x"))
	refuseIn(t, t.Context(), b, "spam", "d1")
	submit(t, b, textInput("e1", "E", "s1", "x"))
	answer(t, s, "s1", 0, fenceOf(t, s, "s1"), "run-1", "e1")

	want := []session.SourceState{
		{Tenant: session.DefaultTenant, Source: "A", SessionID: "sA2", Pending: 2, Bytes: 2, First: t0, Last: t0.Add(2 * time.Second), Version: a2.Seq},
		{Tenant: session.DefaultTenant, Source: "B", SessionID: "sB", Pending: 1, Bytes: 1, First: b1.At, Last: b1.At, Version: b1.Seq},
		{Tenant: "acme", Source: "A", SessionID: "sX", Pending: 1, Bytes: 1, First: x1.At, Last: x1.At, Version: x1.Seq},
	}
	if !a1.At.Equal(t0) {
		t.Fatalf("a1.At = %v, want %v", a1.At, t0)
	}
	diffInputs(t, "PendingSources(0)", want, pendingSources(t, b, 0))
	diffInputs(t, "PendingSources(-1)", want, pendingSources(t, b, -1))
	diffInputs(t, "PendingSources(2)", want[:2], pendingSources(t, b, 2))
	diffInputs(t, "PendingSources(1)", want[:1], pendingSources(t, b, 1))

	// A's oldest pending input is now a2: A comes after B.
	if err := s.CreateSession(t.Context(), newSession("sA1", at(0))); err != nil {
		t.Fatal(err)
	}
	answer(t, s, "sA1", 0, fenceOf(t, s, "sA1"), "run-2", "a1")
	want[0].Pending, want[0].Bytes, want[0].First = 1, 1, a2.At
	want = []session.SourceState{want[1], want[0], want[2]}
	diffInputs(t, "PendingSources after A's first input was answered", want, pendingSources(t, b, 0))
	// A newer input changes the version and the session.
	c.Advance(time.Second)
	b2 := submit(t, b, textInput("b2", "B", "sB2", "x"))
	want[0].Pending, want[0].Bytes, want[0].Last, want[0].Version, want[0].SessionID = 2, 2, b2.At, b2.Seq, "sB2"
	diffInputs(t, "PendingSources after a newer input of B", want, pendingSources(t, b, 0))
	// PendingOf says the same of one source, of the context's tenant.
	diffInputs(t, "PendingOf(B)", want[0], sourceOf(t, t.Context(), b, "B"))
	diffInputs(t, "PendingOf(A)", want[1], sourceOf(t, t.Context(), b, "A"))
	diffInputs(t, "PendingOf(A) of acme", want[2], sourceOf(t, acme, b, "A"))
	diffInputs(t, "PendingOf(D), all refused", session.SourceState{Tenant: session.DefaultTenant, Source: "D"}, sourceOf(t, t.Context(), b, "D"))
	diffInputs(t, "PendingOf(B) of acme", session.SourceState{Tenant: "acme", Source: "B"}, sourceOf(t, acme, b, "B"))
	refuseIn(t, t.Context(), b, "stale", "b1", "b2", "a2")
	refuseIn(t, acme, b, "stale", "x1")
	if got := pendingSources(t, b, 0); len(got) != 0 {
		t.Errorf("PendingSources with nothing pending: %+v", got)
	}
}

// Sources whose first inputs came at the same time are ordered by those
// inputs' Seq: the order they came in.
func testPendingSourcesOrder(t *testing.T, s session.Store, b session.Inbox, c *Clock) {
	for i, src := range []string{"X", "Y", "X", "Z", "Y", "X"} {
		submit(t, b, textInput(fmt.Sprint("in", i), src, "s1", "x"))
	}
	var got []string
	for _, ss := range pendingSources(t, b, 0) {
		got = append(got, fmt.Sprint(ss.Source, ss.Pending))
	}
	if want := []string{"X3", "Y2", "Z1"}; !cmp.Equal(got, want) {
		t.Errorf("PendingSources = %v, want %v", got, want)
	}
}

// Pending lists a source's pending inputs only, in order, the oldest up
// to its limit.
func testPending(t *testing.T, s session.Store, b session.Inbox, c *Clock) {
	p1 := submit(t, b, textInput("p1", "src", "s1", "one"))
	submit(t, b, textInput("other", "elsewhere", "s1", "x"))
	submit(t, b, textInput("p2", "src", "s1", "two"))
	p3 := submit(t, b, textInput("p3", "src", "s1", "three"))
	submitIn(t, session.WithTenant(t.Context(), "acme"), b, textInput("p4", "src", "s1", "acme's"))
	refuseIn(t, t.Context(), b, "no", "p2")
	p5 := submit(t, b, textInput("p5", "src", "s1", "five"))
	diffInputs(t, "Pending(src)", []session.InboxInput{p1, p3, p5}, pendingIn(t, t.Context(), b, "src"))
	for limit, want := range map[int][]session.InboxInput{-1: {p1, p3, p5}, 1: {p1}, 2: {p1, p3}, 3: {p1, p3, p5}, 4: {p1, p3, p5}} {
		got, err := b.Pending(t.Context(), "src", limit)
		if err != nil {
			t.Fatal(err)
		}
		diffInputs(t, fmt.Sprintf("Pending(src, %d)", limit), want, got)
	}
	if got := pendingIn(t, t.Context(), b, "nowhere"); len(got) != 0 {
		t.Errorf("Pending of an unknown source: %v", ids(got))
	}
}

// An input's size, as PendingOf and PendingSources add it up, is its
// content's (InboxInput.Size): text in bytes, data as stored, compact.
func testPendingBytes(t *testing.T, s session.Store, b session.Inbox, c *Clock) {
	submit(t, b, textInput("t1", "src", "s1", "héllo")) // 6 bytes
	submit(t, b, &session.InboxInput{ID: "d1", Source: "src", SessionID: "s1", Parts: []session.InputPart{
		{Type: "text", Text: "see"}, {Type: "data", Data: []byte(`{ "a" : [1, 2] }`)}}}) // 3 + len(`{"a":[1,2]}`)
	got := sourceOf(t, t.Context(), b, "src")
	if want := int64(6 + 3 + len(`{"a":[1,2]}`)); got.Bytes != want || got.Pending != 2 {
		t.Errorf("PendingOf(src) = %d inputs, %d bytes; want 2, %d", got.Pending, got.Bytes, want)
	}
	if all := pendingSources(t, b, 0); len(all) != 1 || all[0].Bytes != got.Bytes {
		t.Errorf("PendingSources = %+v, want src with %d bytes", all, got.Bytes)
	}
	refuseIn(t, t.Context(), b, "no", "t1")
	if got := sourceOf(t, t.Context(), b, "src"); got.Bytes != int64(3+len(`{"a":[1,2]}`)) || got.Pending != 1 {
		t.Errorf("PendingOf(src) after a refusal = %d inputs, %d bytes", got.Pending, got.Bytes)
	}
}

// Inputs lists a source's inputs in any state, in order, after a seq, up
// to a limit.
func testInputs(t *testing.T, s session.Store, b session.Inbox, c *Clock) {
	var all []session.InboxInput
	for i := range 5 {
		all = append(all, submit(t, b, textInput(fmt.Sprint("in", i), "src", "s1", fmt.Sprint("text ", i))))
		submit(t, b, textInput(fmt.Sprint("other", i), "elsewhere", "s1", "x"))
	}
	refuseIn(t, t.Context(), b, "spam", "in1")
	answer(t, s, "s1", 0, fenceOf(t, s, "s1"), "run-1", "in3", "in0")
	all[1].State, all[1].Reason = session.InputRefused, "spam"
	all[0].State, all[0].RunID = session.InputAnswered, "run-1"
	all[3].State, all[3].RunID = session.InputAnswered, "run-1"
	diffInputs(t, "Inputs(0, 0)", all, allInputs(t, b, "src"))
	diffInputs(t, "Inputs(0, 2)", all[:2], inputsIn(t, t.Context(), b, "src", 0, 2))
	diffInputs(t, "Inputs(in1, 2)", all[2:4], inputsIn(t, t.Context(), b, "src", all[1].Seq, 2))
	diffInputs(t, "Inputs(in1, 0)", all[2:], inputsIn(t, t.Context(), b, "src", all[1].Seq, 0))
	diffInputs(t, "Inputs(in1+1, 0)", all[2:], inputsIn(t, t.Context(), b, "src", all[1].Seq+1, 0))
	diffInputs(t, "Inputs(-5, 0)", all, inputsIn(t, t.Context(), b, "src", -5, 0))
	if got := inputsIn(t, t.Context(), b, "src", all[4].Seq, 0); len(got) != 0 {
		t.Errorf("Inputs after the last: %v", ids(got))
	}
}

// Refuse marks pending inputs refused with its reason, and leaves alone
// the inputs that are not pending and the ids it does not know.
func testRefuse(t *testing.T, s session.Store, b session.Inbox, c *Clock) {
	var all []session.InboxInput
	for i := range 4 {
		all = append(all, submit(t, b, textInput(fmt.Sprint("in", i), "src", "s1", "x")))
	}
	answer(t, s, "s1", 0, fenceOf(t, s, "s1"), "run-1", "in0")
	refuseIn(t, t.Context(), b, "first reason", "in1")
	refuseIn(t, t.Context(), b, "second reason", "in0", "in1", "in2", "unknown")
	refuseIn(t, t.Context(), b, "nothing")
	all[0].State, all[0].RunID = session.InputAnswered, "run-1"
	all[1].State, all[1].Reason = session.InputRefused, "first reason"
	all[2].State, all[2].Reason = session.InputRefused, "second reason"
	diffInputs(t, "inputs after Refuse", all, allInputs(t, b, "src"))
	if got := ids(pendingIn(t, t.Context(), b, "src")); !cmp.Equal(got, []string{"in3"}) {
		t.Errorf("Pending after Refuse: %v, want in3", got)
	}
}

// Commit.Answers marks the inputs answered by the commit's run, with the
// commit, whichever way the store writes it (a commit that keeps the
// session's status and turn, after others that did, included).
func testCommitAnswers(t *testing.T, s session.Store, b session.Inbox, c *Clock) {
	var all []session.InboxInput
	for i := range 3 {
		all = append(all, submit(t, b, textInput(fmt.Sprint("in", i), "src", "s1", "x")))
	}
	fence := fenceOf(t, s, "s1")
	answer(t, s, "s1", 0, fence, "")
	answer(t, s, "s1", 1, fence, "")
	answer(t, s, "s1", 2, fence, "run-1", "in2", "in0")
	for _, i := range []int{0, 2} {
		all[i].State, all[i].RunID = session.InputAnswered, "run-1"
	}
	diffInputs(t, "inputs after the commit", all, allInputs(t, b, "src"))
	if got := get(t, s, "s1").LastSeq; got != 3 {
		t.Errorf("session's last seq = %d, want 3", got)
	}
	// A commit that releases the lease, with a snapshot, answers too.
	commit(t, s, &session.Commit{SessionID: "s1", ExpectSeq: 3, Events: events("s1", 3, 2), Status: session.StatusDone, Turn: 1,
		Fence: fence, Release: true, Snapshot: &session.Snapshot{Seq: 5, Data: json.RawMessage(`{}`)}, Time: at(time.Hour),
		Answers: []string{"in1"}, RunID: "run-2"})
	all[1].State, all[1].RunID = session.InputAnswered, "run-2"
	diffInputs(t, "inputs after the releasing commit", all, allInputs(t, b, "src"))
	if got := pendingSources(t, b, 0); len(got) != 0 {
		t.Errorf("PendingSources with every input answered: %+v", got)
	}
}

// A commit whose answers name an input that is not pending (answered,
// refused, unknown, another tenant's) is refused with ErrConflict and
// writes nothing: no event, no session change, no snapshot, no lease
// release, no answer.
func testCommitAnswersNotPending(t *testing.T, s session.Store, b session.Inbox, c *Clock) {
	for _, id := range []string{"done", "refused", "p1", "p2"} {
		submit(t, b, textInput(id, "src", "s1", "x"))
	}
	submitIn(t, session.WithTenant(t.Context(), "acme"), b, textInput("theirs", "src", "s1", "x"))
	fence := fenceOf(t, s, "s1")
	answer(t, s, "s1", 0, fence, "run-1", "done")
	answer(t, s, "s1", 1, fence, "") // status and turn kept: the next commits may be light
	refuseIn(t, t.Context(), b, "spam", "refused")
	beforeInputs := allInputs(t, b, "src")
	before := stateOf(t, s, "s1")
	for _, answers := range [][]string{
		{"p1", "done"},
		{"refused", "p1"},
		{"p1", "p2", "unknown"},
		{"theirs"},
		{""},
	} {
		for _, heavy := range []bool{false, true} {
			cm := &session.Commit{SessionID: "s1", ExpectSeq: 2, Events: events("s1", 2, 1), Status: session.StatusRunning, Turn: 1,
				Fence: fence, Time: at(time.Hour), Answers: answers, RunID: "run-2"}
			if heavy {
				cm.Status, cm.Release = session.StatusDone, true
				cm.Snapshot = &session.Snapshot{Seq: 3, Data: json.RawMessage(`{"x":1}`)}
			}
			if err := s.Commit(t.Context(), cm); !errors.Is(err, session.ErrConflict) {
				t.Errorf("commit answering %q (heavy %v): %v, want ErrConflict", answers, heavy, err)
			}
		}
	}
	checkUnchanged(t, s, "s1", before)
	diffInputs(t, "inputs after refused commits", beforeInputs, allInputs(t, b, "src"))
	if got := ids(pendingIn(t, session.WithTenant(t.Context(), "acme"), b, "src")); !cmp.Equal(got, []string{"theirs"}) {
		t.Errorf("acme's pending inputs: %v", got)
	}
	// A commit naming an input twice is a caller's mistake.
	err := s.Commit(t.Context(), &session.Commit{SessionID: "s1", ExpectSeq: 2, Events: events("s1", 2, 1), Status: session.StatusRunning,
		Turn: 1, Fence: fence, Time: at(time.Hour), Answers: []string{"p1", "p1"}})
	if err == nil {
		t.Error("a commit answering p1 twice: no error")
	}
	checkUnchanged(t, s, "s1", before)
	// The same commit with pending answers goes through.
	answer(t, s, "s1", 2, fence, "run-2", "p1", "p2")
	if got := pendingIn(t, t.Context(), b, "src"); len(got) != 0 {
		t.Errorf("pending after the commit: %v", ids(got))
	}
}

// A stale commit (a seq another writer passed, a lost lease) answers
// nothing, and says it is stale (fenced before everything) rather than
// that its answers are.
func testCommitAnswersStale(t *testing.T, s session.Store, b session.Inbox, c *Clock) {
	submit(t, b, textInput("p1", "src", "s1", "x"))
	submit(t, b, textInput("done", "src", "s1", "x"))
	fence := fenceOf(t, s, "s1")
	answer(t, s, "s1", 0, fence, "run-1", "done")
	answer(t, s, "s1", 1, fence, "")
	stale := &session.Commit{SessionID: "s1", ExpectSeq: 1, Events: events("s1", 1, 1), Status: session.StatusRunning, Turn: 1,
		Fence: fence, Time: at(time.Hour), Answers: []string{"p1"}, RunID: "run-2"}
	if err := s.Commit(t.Context(), stale); !errors.Is(err, session.ErrConflict) {
		t.Errorf("a stale commit with answers: %v, want ErrConflict", err)
	}
	if l, ok := s.(session.Leaser); ok {
		c.Advance(ttl + time.Second)
		acquire(t, l, "s1", "another")
		for _, answers := range [][]string{{"p1"}, {"done"}, {"unknown"}} {
			err := s.Commit(t.Context(), &session.Commit{SessionID: "s1", ExpectSeq: 2, Events: events("s1", 2, 1), Status: session.StatusRunning,
				Turn: 1, Fence: fence, Time: at(time.Hour), Answers: answers, RunID: "run-2"})
			if !errors.Is(err, session.ErrFenced) {
				t.Errorf("a fenced commit answering %q: %v, want ErrFenced", answers, err)
			}
		}
	}
	got := pendingIn(t, t.Context(), b, "src")
	if len(got) != 1 || got[0].ID != "p1" || got[0].RunID != "" {
		t.Errorf("pending after stale commits: %+v, want p1 untouched", got)
	}
	if got := get(t, s, "s1").LastSeq; got != 2 {
		t.Errorf("session's last seq = %d, want 2", got)
	}
}

// An input is answered once: a second session's commit naming it is
// refused.
func testCommitAnswersTwice(t *testing.T, s session.Store, b session.Inbox, c *Clock) {
	submit(t, b, textInput("in1", "src", "s1", "x"))
	create(t, s, newSession("s2", at(0)))
	answer(t, s, "s1", 0, fenceOf(t, s, "s1"), "run-1", "in1")
	err := s.Commit(t.Context(), &session.Commit{SessionID: "s2", Events: events("s2", 0, 1), Status: session.StatusRunning,
		Fence: fenceOf(t, s, "s2"), Time: at(time.Hour), Answers: []string{"in1"}, RunID: "run-2"})
	if !errors.Is(err, session.ErrConflict) {
		t.Errorf("a second answer of in1: %v, want ErrConflict", err)
	}
	if got := get(t, s, "s2"); got.LastSeq != 0 {
		t.Errorf("the refused commit wrote s2: last seq %d", got.LastSeq)
	}
	if got := allInputs(t, b, "src"); len(got) != 1 || got[0].RunID != "run-1" {
		t.Errorf("in1 after a second answer: %+v, want answered by run-1", got)
	}
}

// Commits of many sessions at once, each answering the same input and
// one of its own: exactly one answers the shared input; the others write
// nothing, and their own inputs stay pending.
func testCommitAnswersConcurrent(t *testing.T, s session.Store, b session.Inbox, c *Clock) {
	const n = 12
	submit(t, b, textInput("shared", "src", "s1", "x"))
	fences := make([]int64, n)
	for i := range n {
		id := fmt.Sprint("c", i)
		create(t, s, newSession(id, at(0)))
		fences[i] = fenceOf(t, s, id)
		submit(t, b, textInput("own"+id, "own", id, "x"))
	}
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			id := fmt.Sprint("c", i)
			errs[i] = s.Commit(t.Context(), &session.Commit{SessionID: id, Events: events(id, 0, 1), Status: session.StatusRunning,
				Fence: fences[i], Time: at(time.Hour), Answers: []string{"own" + id, "shared"}, RunID: "run-" + id})
		})
	}
	wg.Wait()
	winner := -1
	for i, err := range errs {
		id := fmt.Sprint("c", i)
		switch {
		case err == nil && winner >= 0:
			t.Errorf("commits of c%d and %s both answered the shared input", winner, id)
		case err == nil:
			winner = i
		case !errors.Is(err, session.ErrConflict):
			t.Errorf("commit of %s: %v, want ErrConflict or success", id, err)
		}
		wantSeq := int64(0)
		if err == nil {
			wantSeq = 1
		}
		if got := get(t, s, id).LastSeq; got != wantSeq {
			t.Errorf("session %s: last seq %d, want %d (its commit: %v)", id, got, wantSeq, err)
		}
	}
	if winner < 0 {
		t.Fatal("no commit answered the shared input")
	}
	shared := allInputs(t, b, "src")
	if len(shared) != 1 || shared[0].State != session.InputAnswered || shared[0].RunID != fmt.Sprint("run-c", winner) {
		t.Errorf("the shared input: %+v, want answered by run-c%d", shared, winner)
	}
	for _, in := range allInputs(t, b, "own") {
		want := session.InputPending
		if in.SessionID == fmt.Sprint("c", winner) {
			want = session.InputAnswered
		}
		if in.State != want {
			t.Errorf("input %s is %s, want %s", in.ID, in.State, want)
		}
	}
}

// Tenants are apart: one source name and one input id in two tenants are
// two inboxes; reads, refusals and answers stay in theirs.
func testInboxTenants(t *testing.T, s session.Store, b session.Inbox, c *Clock) {
	acme := session.WithTenant(t.Context(), "acme")
	mine := submit(t, b, keyed(textInput("in1", "src", "s1", "mine"), "k1", "d1"))
	theirs := submitIn(t, acme, b, keyed(textInput("in1", "src", "s1", "theirs"), "k1", "d2"))
	if theirs.Tenant != "acme" || mine.Tenant != session.DefaultTenant {
		t.Fatalf("tenants: %q and %q", mine.Tenant, theirs.Tenant)
	}
	diffInputs(t, "default's inputs", []session.InboxInput{mine}, allInputs(t, b, "src"))
	diffInputs(t, "acme's inputs", []session.InboxInput{theirs}, inputsIn(t, acme, b, "src", 0, 0))
	refuseIn(t, acme, b, "theirs only", "in1")
	diffInputs(t, "default's pending after acme's refusal", []session.InboxInput{mine}, pendingIn(t, t.Context(), b, "src"))
	got := pendingSources(t, b, 0)
	if len(got) != 1 || got[0].Tenant != session.DefaultTenant {
		t.Errorf("PendingSources after acme's refusal: %+v", got)
	}
	// Acme's in1 is refused; default's is answerable, by default's session.
	answer(t, s, "s1", 0, fenceOf(t, s, "s1"), "run-1", "in1")
	if got := inputsIn(t, acme, b, "src", 0, 0); len(got) != 1 || got[0].State != session.InputRefused || got[0].RunID != "" {
		t.Errorf("acme's in1 after default's answer: %+v", got)
	}
}

// A canceled context fails every inbox method, and stores nothing.
func testInboxCanceled(t *testing.T, s session.Store, b session.Inbox, c *Clock) {
	p1 := submit(t, b, textInput("p1", "src", "s1", "x"))
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	check := func(op string, err error) {
		t.Helper()
		if !errors.Is(err, context.Canceled) {
			t.Errorf("%s with a canceled context: %v, want an error wrapping context.Canceled", op, err)
		}
	}
	_, _, err := b.Submit(ctx, textInput("p2", "src", "s1", "x"))
	check("Submit", err)
	_, err = b.PendingSources(ctx, 0)
	check("PendingSources", err)
	_, err = b.Pending(ctx, "src", 0)
	check("Pending", err)
	_, err = b.PendingOf(ctx, "src")
	check("PendingOf", err)
	_, err = b.Inputs(ctx, "src", 0, 0)
	check("Inputs", err)
	check("Refuse", b.Refuse(ctx, []string{"p1"}, "no"))
	check("Commit", s.Commit(ctx, &session.Commit{SessionID: "s1", Events: events("s1", 0, 1), Status: session.StatusRunning,
		Time: at(time.Hour), Answers: []string{"p1"}, RunID: "run-1"}))
	diffInputs(t, "inputs after canceled calls", []session.InboxInput{p1}, allInputs(t, b, "src"))
}

// A bounded submit (session.BoundedInbox) stores nothing for a source
// with as many pending inputs as its bound, or whose pending size with
// the input's would pass its bound: a *FullError says what is pending.
// A repeat of a waiting input with its key is that input; a refused or
// answered input makes room; zero bounds bound nothing.
func testSubmitWithin(t *testing.T, s session.Store, b session.Inbox, c *Clock) {
	bi, ok := b.(session.BoundedInbox)
	if !ok {
		t.Skip("the store does not implement session.BoundedInbox")
	}
	ctx := t.Context()
	within := func(in *session.InboxInput, bounds session.Bounds) (session.InboxInput, bool, error) {
		t.Helper()
		return bi.SubmitWithin(ctx, in, bounds)
	}
	two := session.Bounds{Pending: 2}
	first, _, err := within(keyed(textInput("k1", "src", "s1", "one"), "key-1", "d1"), two)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := within(textInput("k2", "src", "s1", "two"), two); err != nil {
		t.Fatal(err)
	}
	_, _, err = within(textInput("k3", "src", "s1", "three"), two)
	var full *session.FullError
	if !errors.As(err, &full) || !errors.Is(err, session.ErrFull) || full.Pending != 2 || full.Bytes != 6 || full.Bounds != two {
		t.Fatalf("a third input under a bound of 2: %v, want a FullError of 2 inputs, 6 bytes", err)
	}
	if got, dup, err := within(keyed(textInput("k1-again", "src", "s1", "one"), "key-1", "d1"), two); err != nil || !dup || got.ID != first.ID {
		t.Errorf("the first input again with its key: %s, dup %v, %v; want it, dup", got.ID, dup, err)
	}
	if _, _, err := within(textInput("other", "elsewhere", "s1", "x"), two); err != nil {
		t.Errorf("another source: %v", err)
	}
	if _, _, err := bi.SubmitWithin(session.WithTenant(ctx, "acme"), textInput("k3", "src", "s1", "three"), two); err != nil {
		t.Errorf("the same source of another tenant: %v", err)
	}
	refuseIn(t, ctx, b, "no", "k1")
	if _, _, err := within(textInput("k3", "src", "s1", "three"), two); err != nil {
		t.Errorf("once an input was refused: %v", err)
	}
	diffInputs(t, "Pending(src)", []string{"k2", "k3"}, ids(pendingIn(t, ctx, b, "src")))
	// Bytes: "héllo" is 6, two of them fill 12 exactly; one byte more does not fit.
	twelve := session.Bounds{Bytes: 12}
	for _, id := range []string{"b1", "b2"} {
		if _, _, err := within(textInput(id, "bytes", "s1", "héllo"), twelve); err != nil {
			t.Fatalf("%s within 12 bytes: %v", id, err)
		}
	}
	if _, _, err := within(textInput("b3", "bytes", "s1", "x"), twelve); !errors.As(err, &full) || full.Bytes != 12 || full.Pending != 2 {
		t.Errorf("a byte past 12: %v, want a FullError of 12 bytes", err)
	}
	if _, _, err := within(textInput("b4", "bytes", "s1", "x"), session.Bounds{}); err != nil {
		t.Errorf("no bounds: %v", err)
	}
	if got := allInputs(t, b, "bytes"); len(got) != 3 {
		t.Errorf("source bytes stored %v, want b1, b2, b4", ids(got))
	}
}
