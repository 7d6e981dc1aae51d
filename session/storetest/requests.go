package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/session"
)

// requestCase is a case of the RequestIndex section: a store that
// implements session.RequestIndex, with session s1 created.
type requestCase func(t *testing.T, s session.Store, ri session.RequestIndex, c *Clock)

// runRequests checks session.RequestIndex. Beyond the doc comments, it
// pins down: a request comes back as its event held it (its calls'
// arguments byte for byte), Asked to the microsecond; a commit that is
// refused changes no request; a request asked again replaces the one of
// its id.
func runRequests(t *testing.T, newStore Factory) {
	cases := []struct {
		name string
		fn   requestCase
	}{
		{"AskedThenResolved", testRequestAskedResolved},
		{"OneCommit", testRequestsOneCommit},
		{"AskedAgain", testRequestAskedAgain},
		{"AgentOfSession", testRequestAgentOfSession},
		{"Pages", testRequestPages},
		{"Filters", testRequestFilters},
		{"CursorToken", testRequestCursorToken},
		{"Tenants", testRequestTenants},
		{"DeleteSession", testRequestDeleteSession},
		{"RefusedCommit", testRequestRefusedCommit},
		{"CommitAnswers", testRequestCommitAnswers},
		{"Expired", testRequestsExpired},
		{"ExpiredTenants", testRequestsExpiredTenants},
		{"Copies", testRequestCopies},
		{"ContextCanceled", testRequestsCanceled},
	}
	for _, cs := range cases {
		t.Run(cs.name, func(t *testing.T) {
			t.Parallel()
			clock := NewClock(base)
			s := newStore(t, clock.Now)
			ri, ok := s.(session.RequestIndex)
			if !ok {
				t.Skip("the store does not implement session.RequestIndex")
			}
			create(t, s, newSession("s1", at(0)))
			cs.fn(t, s, ri, clock)
		})
	}
}

// logWriter commits events to a session, numbering them.
type logWriter struct {
	t     *testing.T
	s     session.Store
	ctx   context.Context
	id    string
	agent string // the events' Agent
	seq   int64
}

func writer(t *testing.T, s session.Store, ctx context.Context, id string) *logWriter {
	return &logWriter{t: t, s: s, ctx: ctx, id: id, agent: "assistant"}
}

// put commits data as events with status, the first at when and each
// next a millisecond later, and returns them.
func (w *logWriter) put(status session.Status, when time.Time, data ...session.Data) []*session.Event {
	w.t.Helper()
	evs := make([]*session.Event, len(data))
	for i, d := range data {
		evs[i] = &session.Event{V: session.SchemaVersion, Seq: w.seq + int64(i) + 1, SessionID: w.id, RunID: "run-1", Turn: 1,
			Type: d.EventType(), Time: when.Add(time.Duration(i) * time.Millisecond), Agent: w.agent, Data: d}
	}
	if err := w.s.Commit(w.ctx, &session.Commit{SessionID: w.id, ExpectSeq: w.seq, Events: evs, Status: status, Turn: 1, Time: when}); err != nil {
		w.t.Fatalf("Commit to %q after %d: %v", w.id, w.seq, err)
	}
	w.seq += int64(len(evs))
	return evs
}

// approval is an approval request about one call, expiring at expires
// (nil: never).
func approval(id string, expires *time.Time) *session.InputRequired {
	return &session.InputRequired{RequestID: id, Kind: session.RequestApproval, Question: "Run deploy?",
		Calls:   []model.ToolCall{{ID: "call_" + id, Name: "deploy", Arguments: json.RawMessage(`{"env":"prod","note":"<b>&amp;</b>"}`)}},
		Expires: expires}
}

// prompt is a free-text request.
func prompt(id string) *session.InputRequired {
	return &session.InputRequired{RequestID: id, Kind: session.RequestPrompt, Question: "Which city?", Metadata: map[string]any{"placeholder": "Paris"}}
}

func resolved(id string) *session.InputResolved {
	return &session.InputResolved{RequestID: id, Decision: session.DecisionApprove, By: "ana"}
}

// pendingOf is the request ev asked, as a store lists it.
func pendingOf(tenant, agent string, ev *session.Event) session.PendingRequest {
	return session.PendingRequest{Tenant: tenant, SessionID: ev.SessionID, Agent: agent, Seq: ev.Seq,
		Asked: ev.Time, Request: *ev.Data.(*session.InputRequired)}
}

var requestOpts = cmp.Options{cmpopts.EquateEmpty()}

func pendingReqs(t *testing.T, ri session.RequestIndex, ctx context.Context, opt session.RequestListOptions) []session.PendingRequest {
	t.Helper()
	got, err := ri.PendingRequests(ctx, opt)
	if err != nil {
		t.Fatalf("PendingRequests(%+v): %v", opt, err)
	}
	return got
}

func diffRequests(t *testing.T, what string, want, got []session.PendingRequest) {
	t.Helper()
	if diff := cmp.Diff(want, got, requestOpts); diff != "" {
		t.Errorf("%s (-want +got):\n%s", what, diff)
	}
}

// requestIDs returns the requests' session/request ids, in order.
func requestIDs(ps []session.PendingRequest) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.SessionID + "/" + p.Request.RequestID
	}
	return out
}

// A request is pending once its input_required is committed — in a
// commit that changes the session's row or in one that does not — and
// gone once its input_resolved is.
func testRequestAskedResolved(t *testing.T, s session.Store, ri session.RequestIndex, c *Clock) {
	ctx := t.Context()
	w := writer(t, s, ctx, "s1")
	w.put(session.StatusRunning, at(time.Second), &session.RunStarted{Input: "deploy"})
	if got := pendingReqs(t, ri, ctx, session.RequestListOptions{}); len(got) != 0 {
		t.Fatalf("pending before any request: %+v", got)
	}
	expires := at(time.Hour)
	// Same status and turn as the commit before: most stores write such a
	// commit's events and nothing else.
	r1 := w.put(session.StatusRunning, at(2*time.Second), approval("r1", &expires))[0]
	r2 := w.put(session.StatusWaiting, at(3*time.Second), prompt("r2"), &session.RunFinished{Status: session.StatusWaiting})[0]
	diffRequests(t, "pending after two requests", []session.PendingRequest{
		pendingOf(session.DefaultTenant, "assistant", r1), pendingOf(session.DefaultTenant, "assistant", r2),
	}, pendingReqs(t, ri, ctx, session.RequestListOptions{}))

	w.put(session.StatusWaiting, at(4*time.Second), resolved("r1"))
	diffRequests(t, "pending after r1's answer", []session.PendingRequest{pendingOf(session.DefaultTenant, "assistant", r2)},
		pendingReqs(t, ri, ctx, session.RequestListOptions{}))
	// An answer to a request the index does not hold changes nothing.
	w.put(session.StatusRunning, at(5*time.Second), resolved("r1"), resolved("nothing"))
	w.put(session.StatusDone, at(6*time.Second), resolved("r2"))
	if got := pendingReqs(t, ri, ctx, session.RequestListOptions{}); len(got) != 0 {
		t.Errorf("pending after every answer: %+v", got)
	}
}

// A log committed at once — a fork's, an import's — leaves pending the
// requests it asks and does not answer.
func testRequestsOneCommit(t *testing.T, s session.Store, ri session.RequestIndex, c *Clock) {
	ctx := t.Context()
	create(t, s, newSession("fork", at(time.Second)))
	w := writer(t, s, ctx, "fork")
	evs := w.put(session.StatusWaiting, at(time.Minute), prompt("r1"), approval("r2", nil), resolved("r1"), prompt("r3"))
	diffRequests(t, "pending after the log", []session.PendingRequest{
		pendingOf(session.DefaultTenant, "assistant", evs[1]), pendingOf(session.DefaultTenant, "assistant", evs[3]),
	}, pendingReqs(t, ri, ctx, session.RequestListOptions{}))
}

// A request asked again (an id reused) replaces the one of its id, and
// one answer ends it.
func testRequestAskedAgain(t *testing.T, s session.Store, ri session.RequestIndex, c *Clock) {
	ctx := t.Context()
	w := writer(t, s, ctx, "s1")
	w.put(session.StatusWaiting, at(time.Second), prompt("r1"))
	again := w.put(session.StatusWaiting, at(2*time.Second), approval("r1", nil))[0]
	diffRequests(t, "pending after r1 asked again", []session.PendingRequest{pendingOf(session.DefaultTenant, "assistant", again)},
		pendingReqs(t, ri, ctx, session.RequestListOptions{}))
	// Answered, then asked again in one commit: pending.
	last := w.put(session.StatusWaiting, at(3*time.Second), resolved("r1"), prompt("r1"))[1]
	diffRequests(t, "pending after r1 answered and asked again", []session.PendingRequest{pendingOf(session.DefaultTenant, "assistant", last)},
		pendingReqs(t, ri, ctx, session.RequestListOptions{}))
	w.put(session.StatusDone, at(4*time.Second), resolved("r1"))
	if got := pendingReqs(t, ri, ctx, session.RequestListOptions{}); len(got) != 0 {
		t.Errorf("pending after the answer: %+v", got)
	}
}

// A request whose event names no agent is the session's agent's.
func testRequestAgentOfSession(t *testing.T, s session.Store, ri session.RequestIndex, c *Clock) {
	ctx := t.Context()
	w := writer(t, s, ctx, "s1")
	w.agent = ""
	ev := w.put(session.StatusWaiting, at(time.Second), prompt("r1"))[0]
	diffRequests(t, "a request without an agent", []session.PendingRequest{pendingOf(session.DefaultTenant, "assistant", ev)},
		pendingReqs(t, ri, ctx, session.RequestListOptions{}))
	w.agent = "helper"
	ev2 := w.put(session.StatusWaiting, at(2*time.Second), prompt("r2"))[0]
	if got := pendingReqs(t, ri, ctx, session.RequestListOptions{Agent: "helper"}); len(got) != 1 || got[0].Agent != "helper" || got[0].Seq != ev2.Seq {
		t.Errorf("the requests of agent helper: %+v", got)
	}
}

// Requests list oldest first (then by session and seq), a page at a
// time, each page after the last request of the one before.
func testRequestPages(t *testing.T, s session.Store, ri session.RequestIndex, c *Clock) {
	ctx := t.Context()
	create(t, s, newSession("s2", at(time.Second)))
	create(t, s, newSession("s3", at(2*time.Second)))
	w1, w2, w3 := writer(t, s, ctx, "s1"), writer(t, s, ctx, "s2"), writer(t, s, ctx, "s3")
	// s2's r1 and s1's r2 are asked at the same moment: the session
	// decides; s3's two requests are one commit, a millisecond apart.
	w2.put(session.StatusWaiting, at(time.Minute), prompt("r1"))
	w1.put(session.StatusWaiting, at(time.Minute), prompt("r2"))
	w3.put(session.StatusWaiting, at(30*time.Second), prompt("r3"), prompt("r4"))
	w1.put(session.StatusWaiting, at(2*time.Minute), prompt("r5"))
	want := []string{"s3/r3", "s3/r4", "s1/r2", "s2/r1", "s1/r5"}
	if got := requestIDs(pendingReqs(t, ri, ctx, session.RequestListOptions{})); !cmp.Equal(want, got) {
		t.Fatalf("all pending: %v, want %v", got, want)
	}
	var got []string
	opt := session.RequestListOptions{Limit: 2}
	for range 4 {
		page := pendingReqs(t, ri, ctx, opt)
		if len(page) > opt.Limit {
			t.Fatalf("a page of %d with limit %d", len(page), opt.Limit)
		}
		got = append(got, requestIDs(page)...)
		if len(page) < opt.Limit {
			break
		}
		opt.After = page[len(page)-1].Cursor()
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("pages of 2 (-want +got):\n%s", diff)
	}
	// A cursor whose request was answered meanwhile still places the page.
	all := pendingReqs(t, ri, ctx, session.RequestListOptions{})
	w1.put(session.StatusWaiting, at(3*time.Minute), resolved("r2"))
	if got := requestIDs(pendingReqs(t, ri, ctx, session.RequestListOptions{After: all[2].Cursor()})); !cmp.Equal(got, []string{"s2/r1", "s1/r5"}) {
		t.Errorf("after the answered s1/r2: %v", got)
	}
}

// The session, agent and kind filters keep what they say, and page.
func testRequestFilters(t *testing.T, s session.Store, ri session.RequestIndex, c *Clock) {
	ctx := t.Context()
	create(t, s, newSession("s2", at(time.Second)))
	w1, w2 := writer(t, s, ctx, "s1"), writer(t, s, ctx, "s2")
	w1.put(session.StatusWaiting, at(time.Minute), prompt("p1"), approval("a1", nil))
	w2.agent = "helper"
	w2.put(session.StatusWaiting, at(2*time.Minute), approval("a2", nil), prompt("p2"))
	for _, tc := range []struct {
		opt  session.RequestListOptions
		want []string
	}{
		{session.RequestListOptions{SessionID: "s2"}, []string{"s2/a2", "s2/p2"}},
		{session.RequestListOptions{SessionID: "nope"}, nil},
		{session.RequestListOptions{Agent: "assistant"}, []string{"s1/p1", "s1/a1"}},
		{session.RequestListOptions{Kind: session.RequestApproval}, []string{"s1/a1", "s2/a2"}},
		{session.RequestListOptions{Kind: session.RequestApproval, Agent: "helper"}, []string{"s2/a2"}},
		{session.RequestListOptions{Kind: session.RequestPrompt, SessionID: "s1"}, []string{"s1/p1"}},
		{session.RequestListOptions{Kind: session.RequestSelect}, nil},
		{session.RequestListOptions{Kind: session.RequestPrompt, Limit: 1}, []string{"s1/p1"}},
	} {
		if got := requestIDs(pendingReqs(t, ri, ctx, tc.opt)); !cmp.Equal(tc.want, got, cmpopts.EquateEmpty()) {
			t.Errorf("PendingRequests(%+v) = %v, want %v", tc.opt, got, tc.want)
		}
	}
	first := pendingReqs(t, ri, ctx, session.RequestListOptions{Kind: session.RequestPrompt, Limit: 1})
	if got := requestIDs(pendingReqs(t, ri, ctx, session.RequestListOptions{Kind: session.RequestPrompt, After: first[0].Cursor()})); !cmp.Equal(got, []string{"s2/p2"}) {
		t.Errorf("the prompts after the first: %v", got)
	}
}

// A cursor goes out as a token and comes back as the same cursor.
func testRequestCursorToken(t *testing.T, s session.Store, ri session.RequestIndex, c *Clock) {
	ctx := t.Context()
	create(t, s, newSession("a.b:c@d", at(time.Second)))
	writer(t, s, ctx, "a.b:c@d").put(session.StatusWaiting, at(time.Minute+1500*time.Microsecond), prompt("r1"), prompt("r2"))
	first := pendingReqs(t, ri, ctx, session.RequestListOptions{Limit: 1})
	cur, err := session.ParseRequestCursor(first[0].Cursor().String())
	if err != nil {
		t.Fatal(err)
	}
	if got := requestIDs(pendingReqs(t, ri, ctx, session.RequestListOptions{After: cur})); !cmp.Equal(got, []string{"a.b:c@d/r2"}) {
		t.Errorf("after the token of the first: %v", got)
	}
}

// Another tenant sees none of the tenant's requests, even of a session
// of the same id.
func testRequestTenants(t *testing.T, s session.Store, ri session.RequestIndex, c *Clock) {
	acme := session.WithTenant(t.Context(), "acme")
	mine := writer(t, s, t.Context(), "s1").put(session.StatusWaiting, at(time.Minute), prompt("r1"))[0]
	if got := pendingReqs(t, ri, acme, session.RequestListOptions{}); len(got) != 0 {
		t.Fatalf("acme sees %+v", got)
	}
	createIn(t, acme, s, "s1", at(time.Second))
	theirs := writer(t, s, acme, "s1").put(session.StatusWaiting, at(2*time.Minute), prompt("r1"))[0]
	diffRequests(t, "acme's", []session.PendingRequest{pendingOf("acme", "assistant", theirs)}, pendingReqs(t, ri, acme, session.RequestListOptions{}))
	diffRequests(t, "default's", []session.PendingRequest{pendingOf(session.DefaultTenant, "assistant", mine)},
		pendingReqs(t, ri, t.Context(), session.RequestListOptions{SessionID: "s1"}))
	// Acme's answer ends acme's request only.
	w := writer(t, s, acme, "s1")
	w.seq = 1
	w.put(session.StatusDone, at(3*time.Minute), resolved("r1"))
	if got := pendingReqs(t, ri, acme, session.RequestListOptions{}); len(got) != 0 {
		t.Errorf("acme's after its answer: %+v", got)
	}
	if got := pendingReqs(t, ri, t.Context(), session.RequestListOptions{}); len(got) != 1 {
		t.Errorf("default's after acme's answer: %+v", got)
	}
}

// Deleting a session deletes its requests: a new session of the same id
// has none.
func testRequestDeleteSession(t *testing.T, s session.Store, ri session.RequestIndex, c *Clock) {
	ctx := t.Context()
	create(t, s, newSession("s2", at(time.Second)))
	writer(t, s, ctx, "s1").put(session.StatusWaiting, at(time.Minute), prompt("r1"), prompt("r2"))
	kept := writer(t, s, ctx, "s2").put(session.StatusWaiting, at(2*time.Minute), prompt("r1"))[0]
	if err := s.DeleteSession(ctx, "s1"); err != nil {
		t.Fatal(err)
	}
	diffRequests(t, "pending after s1's deletion", []session.PendingRequest{pendingOf(session.DefaultTenant, "assistant", kept)},
		pendingReqs(t, ri, ctx, session.RequestListOptions{}))
	create(t, s, newSession("s1", at(3*time.Second)))
	if got := pendingReqs(t, ri, ctx, session.RequestListOptions{SessionID: "s1"}); len(got) != 0 {
		t.Errorf("the new s1's requests: %+v", got)
	}
	if got, err := ri.ExpiredRequests(ctx, at(1000*time.Hour), nil, 0); err != nil || len(got) != 0 {
		t.Errorf("ExpiredRequests after the deletion: %+v, %v", got, err)
	}
	// Another tenant's request counts too: the count is every tenant's.
	other := session.WithTenant(ctx, "initech")
	s9 := newSession("s9", at(4*time.Second))
	s9.Tenant = "initech"
	if err := s.CreateSession(other, s9); err != nil {
		t.Fatal(err)
	}
	writer(t, s, other, "s9").put(session.StatusWaiting, at(5*time.Minute), prompt("r9"))
	if n, err := ri.CountRequests(ctx); err != nil || n != 2 {
		t.Errorf("CountRequests: %d, %v; want 2 (s2's r1 and initech's r9)", n, err)
	}
}

// A commit that is refused — a stale seq, a fenced token — asks and
// answers nothing.
func testRequestRefusedCommit(t *testing.T, s session.Store, ri session.RequestIndex, c *Clock) {
	ctx := t.Context()
	w := writer(t, s, ctx, "s1")
	asked := w.put(session.StatusWaiting, at(time.Minute), prompt("r1"))[0]
	stale := &session.Commit{SessionID: "s1", ExpectSeq: 0, Status: session.StatusWaiting, Turn: 1, Time: at(2 * time.Minute),
		Events: []*session.Event{{V: session.SchemaVersion, Seq: 1, SessionID: "s1", Type: session.TypeInputResolved, Time: at(2 * time.Minute), Data: resolved("r1")}}}
	if err := s.Commit(ctx, stale); !errors.Is(err, session.ErrConflict) {
		t.Fatalf("a stale commit: %v, want ErrConflict", err)
	}
	stale.Events[0] = &session.Event{V: session.SchemaVersion, Seq: 1, SessionID: "s1", Type: session.TypeInputRequired, Time: at(2 * time.Minute), Data: prompt("r9")}
	if err := s.Commit(ctx, stale); !errors.Is(err, session.ErrConflict) {
		t.Fatalf("a stale commit: %v, want ErrConflict", err)
	}
	if l, ok := s.(session.Leaser); ok {
		acquire(t, l, "s1", "owner")
		fenced := &session.Commit{SessionID: "s1", ExpectSeq: 1, Status: session.StatusWaiting, Turn: 1, Time: at(2 * time.Minute), Fence: 99,
			Events: []*session.Event{{V: session.SchemaVersion, Seq: 2, SessionID: "s1", Type: session.TypeInputResolved, Time: at(2 * time.Minute), Data: resolved("r1")}}}
		if err := s.Commit(ctx, fenced); !errors.Is(err, session.ErrFenced) {
			t.Fatalf("a fenced commit: %v, want ErrFenced", err)
		}
	}
	diffRequests(t, "pending after refused commits", []session.PendingRequest{pendingOf(session.DefaultTenant, "assistant", asked)},
		pendingReqs(t, ri, ctx, session.RequestListOptions{}))
}

// A commit that answers inbox inputs keeps the requests of its events
// like any other, and writes none when it is refused for its answers.
func testRequestCommitAnswers(t *testing.T, s session.Store, ri session.RequestIndex, c *Clock) {
	b, ok := s.(session.Inbox)
	if !ok {
		t.Skip("the store does not implement session.Inbox")
	}
	ctx := t.Context()
	submit(t, b, textInput("in1", "src", "s1", "deploy"))
	ev := func(seq int64, d session.Data) *session.Event {
		return &session.Event{V: session.SchemaVersion, Seq: seq, SessionID: "s1", RunID: "run-1", Turn: 1, Type: d.EventType(),
			Time: at(time.Duration(seq) * time.Second), Agent: "assistant", Data: d}
	}
	asked := ev(2, prompt("r1"))
	commit(t, s, &session.Commit{SessionID: "s1", Events: []*session.Event{ev(1, &session.RunStarted{Input: "deploy", Inputs: []string{"in1"}}), asked},
		Status: session.StatusWaiting, Turn: 1, Time: at(time.Minute), Answers: []string{"in1"}, RunID: "run-1"})
	diffRequests(t, "pending after a commit with answers", []session.PendingRequest{pendingOf(session.DefaultTenant, "assistant", asked)},
		pendingReqs(t, ri, ctx, session.RequestListOptions{}))
	// in1 is answered: a commit answering it again is refused, and its
	// events ask and answer nothing.
	err := s.Commit(ctx, &session.Commit{SessionID: "s1", ExpectSeq: 2, Events: []*session.Event{ev(3, resolved("r1")), ev(4, prompt("r2"))},
		Status: session.StatusWaiting, Turn: 2, Time: at(2 * time.Minute), Answers: []string{"in1"}, RunID: "run-2"})
	if !errors.Is(err, session.ErrConflict) {
		t.Fatalf("a commit answering an answered input: %v, want ErrConflict", err)
	}
	diffRequests(t, "pending after a refused commit with answers", []session.PendingRequest{pendingOf(session.DefaultTenant, "assistant", asked)},
		pendingReqs(t, ri, ctx, session.RequestListOptions{}))
	submit(t, b, textInput("in2", "src", "s1", "again"))
	commit(t, s, &session.Commit{SessionID: "s1", ExpectSeq: 2, Events: []*session.Event{ev(3, resolved("r1")), ev(4, &session.RunStarted{Input: "again", Inputs: []string{"in2"}})},
		Status: session.StatusRunning, Turn: 2, Time: at(2 * time.Minute), Answers: []string{"in2"}, RunID: "run-2"})
	if got := pendingReqs(t, ri, ctx, session.RequestListOptions{}); len(got) != 0 {
		t.Errorf("pending after r1's answer in a commit with answers: %+v", got)
	}
}

// ExpiredRequests lists the requests whose deadline is at or before the
// time given — no other — in the order of their deadlines, a page at a
// time.
func testRequestsExpired(t *testing.T, s session.Store, ri session.RequestIndex, c *Clock) {
	ctx := t.Context()
	create(t, s, newSession("s2", at(time.Second)))
	h1, h2, h3 := at(time.Hour), at(2*time.Hour), at(3*time.Hour)
	// Sub-microsecond deadlines: a request is never expired early.
	odd := at(time.Hour + 500*time.Nanosecond)
	w1, w2 := writer(t, s, ctx, "s1"), writer(t, s, ctx, "s2")
	w1.put(session.StatusWaiting, at(time.Minute), approval("a", &h2), prompt("never"), approval("b", &h1))
	w2.put(session.StatusWaiting, at(time.Minute), approval("c", &h1), approval("d", &h3), approval("e", &odd))
	expired := func(now time.Time, after *session.PendingRequest, limit int) []session.PendingRequest {
		t.Helper()
		got, err := ri.ExpiredRequests(ctx, now, after, limit)
		if err != nil {
			t.Fatalf("ExpiredRequests(%v): %v", now, err)
		}
		return got
	}
	for _, tc := range []struct {
		now  time.Time
		want []string
	}{
		{at(time.Hour - time.Microsecond), nil},
		{h1, []string{"s1/b", "s2/c"}},
		{at(time.Hour + time.Microsecond), []string{"s1/b", "s2/c", "s2/e"}},
		{h3, []string{"s1/b", "s2/c", "s2/e", "s1/a", "s2/d"}},
	} {
		if got := requestIDs(expired(tc.now, nil, 0)); !cmp.Equal(tc.want, got, cmpopts.EquateEmpty()) {
			t.Errorf("expired at %v: %v, want %v", tc.now.Sub(base), got, tc.want)
		}
	}
	var got []string
	var after *session.PendingRequest
	for range 5 {
		page := expired(h3, after, 2)
		got = append(got, requestIDs(page)...)
		if len(page) < 2 {
			break
		}
		after = &page[len(page)-1]
	}
	if want := []string{"s1/b", "s2/c", "s2/e", "s1/a", "s2/d"}; !cmp.Equal(want, got) {
		t.Errorf("expired in pages of 2: %v, want %v", got, want)
	}
	// Once answered, an expired request is not listed.
	w1.put(session.StatusRunning, at(2*time.Hour), &session.InputResolved{RequestID: "b", Decision: session.DecisionReject, By: "system", Reason: "expired"})
	if got := requestIDs(expired(h1, nil, 0)); !cmp.Equal(got, []string{"s2/c"}) {
		t.Errorf("expired after b's answer: %v", got)
	}
}

// ExpiredRequests lists the requests of every tenant, each with its
// tenant.
func testRequestsExpiredTenants(t *testing.T, s session.Store, ri session.RequestIndex, c *Clock) {
	acme := session.WithTenant(t.Context(), "acme")
	h1 := at(time.Hour)
	createIn(t, acme, s, "s1", at(time.Second))
	mine := writer(t, s, t.Context(), "s1").put(session.StatusWaiting, at(time.Minute), approval("r1", &h1))[0]
	theirs := writer(t, s, acme, "s1").put(session.StatusWaiting, at(time.Minute), approval("r1", &h1))[0]
	got, err := ri.ExpiredRequests(session.WithTenant(t.Context(), "initech"), h1, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	diffRequests(t, "expired across tenants", []session.PendingRequest{
		pendingOf("acme", "assistant", theirs), pendingOf(session.DefaultTenant, "assistant", mine),
	}, got)
}

// The requests a store hands out are copies.
func testRequestCopies(t *testing.T, s session.Store, ri session.RequestIndex, c *Clock) {
	ctx := t.Context()
	ev := writer(t, s, ctx, "s1").put(session.StatusWaiting, at(time.Minute), approval("r1", nil))[0]
	got := pendingReqs(t, ri, ctx, session.RequestListOptions{})
	got[0].Request.Calls[0].Arguments[2] = 'X'
	got[0].Request.Calls[0].Name = "changed"
	diffRequests(t, "pending after changing a copy", []session.PendingRequest{pendingOf(session.DefaultTenant, "assistant", ev)},
		pendingReqs(t, ri, ctx, session.RequestListOptions{}))
}

// A canceled context fails both methods.
func testRequestsCanceled(t *testing.T, s session.Store, ri session.RequestIndex, c *Clock) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := ri.PendingRequests(ctx, session.RequestListOptions{}); !errors.Is(err, context.Canceled) {
		t.Errorf("PendingRequests with a canceled context: %v", err)
	}
	if _, err := ri.ExpiredRequests(ctx, at(time.Hour), nil, 0); !errors.Is(err, context.Canceled) {
		t.Errorf("ExpiredRequests with a canceled context: %v", err)
	}
}

// leaseIndexCase is a case of the LeaseIndex section: a store that
// implements session.Leaser and session.LeaseIndex, and its clock.
type leaseIndexCase func(t *testing.T, s session.Store, l session.Leaser, li session.LeaseIndex, c *Clock)

// runLeaseIndex checks session.LeaseIndex.
func runLeaseIndex(t *testing.T, newStore Factory) {
	cases := []struct {
		name string
		fn   leaseIndexCase
	}{
		{"ExpiredLeases", testExpiredLeases},
		{"ExpiredLeasesPages", testExpiredLeasesPages},
		{"LeaseOwners", testLeaseOwners},
		{"LeasedToPages", testLeasedToPages},
		{"ContextCanceled", testLeaseIndexCanceled},
	}
	for _, cs := range cases {
		t.Run(cs.name, func(t *testing.T) {
			t.Parallel()
			clock := NewClock(base)
			s := newStore(t, clock.Now)
			l, ok := s.(session.Leaser)
			li, ok2 := s.(session.LeaseIndex)
			if !ok || !ok2 {
				t.Skip("the store does not implement session.Leaser and session.LeaseIndex")
			}
			cs.fn(t, s, l, li, clock)
		})
	}
}

// ids of sessions, tenant/id.
func sessionIDs(ss []*session.Session) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = s.Tenant + "/" + s.ID
	}
	return out
}

// setStatus commits no event to session id, with status.
func setStatus(t *testing.T, s session.Store, ctx context.Context, id string, status session.Status, fence int64) {
	t.Helper()
	cur, err := s.GetSession(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Commit(ctx, &session.Commit{SessionID: id, ExpectSeq: cur.LastSeq, Status: status, Fence: fence, Time: at(time.Minute)}); err != nil {
		t.Fatalf("Commit(%q, %s): %v", id, status, err)
	}
}

func acquireIn(t *testing.T, ctx context.Context, l session.Leaser, id, owner string, d time.Duration) session.Lease {
	t.Helper()
	got, err := l.Acquire(ctx, id, owner, d)
	if err != nil {
		t.Fatalf("Acquire(%q, %q): %v", id, owner, err)
	}
	return got
}

func expiredLeases(t *testing.T, li session.LeaseIndex, after *session.Session, limit int) []*session.Session {
	t.Helper()
	got, err := li.ExpiredLeases(t.Context(), after, limit)
	if err != nil {
		t.Fatalf("ExpiredLeases: %v", err)
	}
	return got
}

// ExpiredLeases lists the running sessions, of every tenant, whose lease
// expired by the store's clock or that have none — those without first,
// then by expiry — and none other.
func testExpiredLeases(t *testing.T, s session.Store, l session.Leaser, li session.LeaseIndex, c *Clock) {
	ctx := t.Context()
	acme := session.WithTenant(ctx, "acme")
	for i, id := range []string{"free", "live", "short", "idle", "waiting"} {
		create(t, s, newSession(id, at(time.Duration(i)*time.Second)))
	}
	createIn(t, acme, s, "short", at(time.Second))
	setStatus(t, s, ctx, "free", session.StatusRunning, 0)
	acquireIn(t, ctx, l, "live", "a:1:x", time.Hour)
	setStatus(t, s, ctx, "live", session.StatusRunning, mustGetLease(t, s, "live").Token)
	acquireIn(t, ctx, l, "short", "b:1:x", time.Minute)
	setStatus(t, s, ctx, "short", session.StatusRunning, mustGetLease(t, s, "short").Token)
	acquireIn(t, acme, l, "short", "b:1:x", 2*time.Minute)
	setStatus(t, s, acme, "short", session.StatusRunning, 1)
	acquireIn(t, ctx, l, "waiting", "c:1:x", time.Minute)
	setStatus(t, s, ctx, "waiting", session.StatusWaiting, mustGetLease(t, s, "waiting").Token)

	if got := sessionIDs(expiredLeases(t, li, nil, 0)); !cmp.Equal(got, []string{"default/free"}) {
		t.Errorf("expired leases at first: %v, want default/free", got)
	}
	c.Advance(time.Minute) // default/short's lease expires now: expired
	if got := sessionIDs(expiredLeases(t, li, nil, 0)); !cmp.Equal(got, []string{"default/free", "default/short"}) {
		t.Errorf("after a minute: %v", got)
	}
	c.Advance(2 * time.Hour)
	got := expiredLeases(t, li, nil, 0)
	if ids := sessionIDs(got); !cmp.Equal(ids, []string{"default/free", "default/short", "acme/short", "default/live"}) {
		t.Errorf("after two hours: %v", ids)
	}
	if got[1].Lease == nil || got[1].Lease.Owner != "b:1:x" || got[1].Status != session.StatusRunning {
		t.Errorf("the session as listed: %+v", got[1])
	}
	// Released, a session has no lease: first. Done, it is not listed.
	if err := l.Release(ctx, mustGetLease(t, s, "live")); err != nil {
		t.Fatal(err)
	}
	setStatus(t, s, acme, "short", session.StatusDone, 0)
	if ids := sessionIDs(expiredLeases(t, li, nil, 0)); !cmp.Equal(ids, []string{"default/free", "default/live", "default/short"}) {
		t.Errorf("after a release and a status change: %v", ids)
	}
	// Taken again, live: not listed. Deleted: not listed.
	acquireIn(t, ctx, l, "short", "d:1:x", time.Hour)
	if err := s.DeleteSession(ctx, "free"); err != nil {
		t.Fatal(err)
	}
	if ids := sessionIDs(expiredLeases(t, li, nil, 0)); !cmp.Equal(ids, []string{"default/live"}) {
		t.Errorf("after a takeover and a deletion: %v", ids)
	}
}

// ExpiredLeases pages: each page after the last session of the one
// before.
func testExpiredLeasesPages(t *testing.T, s session.Store, l session.Leaser, li session.LeaseIndex, c *Clock) {
	ctx := t.Context()
	var want []string
	for i := range 7 {
		id := fmt.Sprintf("s%d", i)
		create(t, s, newSession(id, at(time.Duration(i)*time.Second)))
		if i%2 == 1 {
			// Leases of different lengths, so that the expiry orders them.
			acquireIn(t, ctx, l, id, "o:1:x", time.Duration(10-i)*time.Minute)
		}
		setStatus(t, s, ctx, id, session.StatusRunning, fenceIfLeased(t, s, id))
	}
	c.Advance(time.Hour)
	want = []string{"default/s0", "default/s2", "default/s4", "default/s6", "default/s5", "default/s3", "default/s1"}
	var got []string
	var after *session.Session
	for range 5 {
		page := expiredLeases(t, li, after, 3)
		got = append(got, sessionIDs(page)...)
		if len(page) < 3 {
			break
		}
		after = page[len(page)-1]
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("expired leases in pages of 3 (-want +got):\n%s", diff)
	}
}

func leaseOwners(t *testing.T, li session.LeaseIndex, prefix string) []string {
	t.Helper()
	got, err := li.LeaseOwners(t.Context(), prefix)
	if err != nil {
		t.Fatalf("LeaseOwners(%q): %v", prefix, err)
	}
	return got
}

func leasedTo(t *testing.T, li session.LeaseIndex, owner string, after *session.Session, limit int) []*session.Session {
	t.Helper()
	got, err := li.LeasedTo(t.Context(), owner, after, limit)
	if err != nil {
		t.Fatalf("LeasedTo(%q): %v", owner, err)
	}
	return got
}

// LeaseOwners lists the owners of a prefix of the running sessions'
// leases, live or expired, each once, in the order of their bytes;
// LeasedTo lists an owner's running sessions. An empty prefix is an
// error.
func testLeaseOwners(t *testing.T, s session.Store, l session.Leaser, li session.LeaseIndex, c *Clock) {
	ctx := t.Context()
	acme := session.WithTenant(ctx, "acme")
	for i, o := range []struct{ id, owner string }{
		{"s1", "h1:2:b"}, {"s2", "h1:1:a"}, {"s3", "h10:1:c"}, {"s4", "h2:1:d"}, {"s5", ""}, {"s6", "h1:3:c"}, {"s7", "h1:1:a"},
	} {
		create(t, s, newSession(o.id, at(time.Duration(i)*time.Second)))
		if o.owner != "" {
			acquireIn(t, ctx, l, o.id, o.owner, time.Duration(i+1)*time.Minute)
		}
		if o.id != "s6" {
			setStatus(t, s, ctx, o.id, session.StatusRunning, fenceIfLeased(t, s, o.id))
		}
	}
	createIn(t, acme, s, "s1", at(time.Second))
	acquireIn(t, acme, l, "s1", "h1:1:a", time.Minute)
	setStatus(t, s, acme, "s1", session.StatusRunning, 1)
	c.Advance(3 * time.Minute) // some expired, some live: all listed
	for prefix, want := range map[string][]string{
		"h1:":    {"h1:1:a", "h1:2:b"}, // not h1:3:c, whose session is not running
		"h1":     {"h10:1:c", "h1:1:a", "h1:2:b"},
		"h1:1:a": {"h1:1:a"},
		"h":      {"h10:1:c", "h1:1:a", "h1:2:b", "h2:1:d"},
		"zz":     nil,
	} {
		if got := leaseOwners(t, li, prefix); !cmp.Equal(got, want, cmpopts.EquateEmpty()) {
			t.Errorf("LeaseOwners(%q) = %q, want %q", prefix, got, want)
		}
	}
	if _, err := li.LeaseOwners(ctx, ""); err == nil {
		t.Error("LeaseOwners with an empty prefix: no error")
	}
	got := leasedTo(t, li, "h1:1:a", nil, 0)
	if ids := sessionIDs(got); !cmp.Equal(ids, []string{"acme/s1", "default/s2", "default/s7"}) {
		t.Errorf(`LeasedTo("h1:1:a"): %v`, ids)
	}
	if got[1].Lease == nil || got[1].Lease.Owner != "h1:1:a" || got[1].Status != session.StatusRunning {
		t.Errorf("the session as listed: %+v", got[1])
	}
	for _, owner := range []string{"h1:", "h1:3:c", "", "nobody"} {
		if got := leasedTo(t, li, owner, nil, 0); len(got) != 0 {
			t.Errorf("LeasedTo(%q): %v", owner, sessionIDs(got))
		}
	}
	// Released or done: not listed.
	if err := l.Release(ctx, mustGetLease(t, s, "s2")); err != nil {
		t.Fatal(err)
	}
	setStatus(t, s, acme, "s1", session.StatusDone, 0)
	if ids := sessionIDs(leasedTo(t, li, "h1:1:a", nil, 0)); !cmp.Equal(ids, []string{"default/s7"}) {
		t.Errorf(`LeasedTo("h1:1:a") after a release and a status change: %v`, ids)
	}
	setStatus(t, s, ctx, "s7", session.StatusWaiting, fenceIfLeased(t, s, "s7"))
	if got := leaseOwners(t, li, "h1:"); !cmp.Equal(got, []string{"h1:2:b"}) {
		t.Errorf(`LeaseOwners("h1:") once h1:1:a runs nothing: %q`, got)
	}
}

// fenceIfLeased returns the token of id's lease, or zero if it has none.
func fenceIfLeased(t *testing.T, s session.Store, id string) int64 {
	t.Helper()
	if ss := get(t, s, id); ss.Lease != nil {
		return ss.Lease.Token
	}
	return 0
}

// LeasedTo pages.
func testLeasedToPages(t *testing.T, s session.Store, l session.Leaser, li session.LeaseIndex, c *Clock) {
	ctx := t.Context()
	var want []string
	for i := range 5 {
		id := fmt.Sprintf("s%d", 4-i)
		create(t, s, newSession(id, at(time.Duration(i)*time.Second)))
		acquireIn(t, ctx, l, id, "h:1:x", time.Hour)
		setStatus(t, s, ctx, id, session.StatusRunning, 1)
		want = append([]string{"default/" + id}, want...)
	}
	create(t, s, newSession("other", at(time.Minute)))
	acquireIn(t, ctx, l, "other", "h:2:x", time.Hour)
	setStatus(t, s, ctx, "other", session.StatusRunning, 1)
	var got []string
	var after *session.Session
	for range 5 {
		page := leasedTo(t, li, "h:1:x", after, 2)
		got = append(got, sessionIDs(page)...)
		if len(page) < 2 {
			break
		}
		after = page[len(page)-1]
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("LeasedTo in pages of 2 (-want +got):\n%s", diff)
	}
}

func testLeaseIndexCanceled(t *testing.T, s session.Store, l session.Leaser, li session.LeaseIndex, c *Clock) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := li.ExpiredLeases(ctx, nil, 0); !errors.Is(err, context.Canceled) {
		t.Errorf("ExpiredLeases with a canceled context: %v", err)
	}
	if _, err := li.LeaseOwners(ctx, "h:"); !errors.Is(err, context.Canceled) {
		t.Errorf("LeaseOwners with a canceled context: %v", err)
	}
	if _, err := li.LeasedTo(ctx, "h:1:x", nil, 0); !errors.Is(err, context.Canceled) {
		t.Errorf("LeasedTo with a canceled context: %v", err)
	}
}
