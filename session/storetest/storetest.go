// Package storetest is the conformance suite every session.Store runs.
//
// A backend's test calls Run with a constructor for fresh, empty stores
// whose leases read the time from the clock it is given:
//
//	func TestConformance(t *testing.T) {
//		storetest.Run(t, func(t *testing.T, now func() time.Time) session.Store {
//			s, err := mystore.Open(t.Context(), filepath.Join(t.TempDir(), "db"), mystore.WithClock(now))
//			if err != nil {
//				t.Fatal(err)
//			}
//			t.Cleanup(func() { s.Close() })
//			return s
//		})
//	}
//
// Every case is a parallel subtest with a store of its own, so newStore is
// called concurrently and each store must be independent of the others.
// The constructor owns the store's lifetime: it should close it in a
// t.Cleanup. Close must be idempotent, since the Close case closes too.
//
// Beyond what the session.Store doc comments say, the suite pins down these
// choices, which every backend must make the same way:
//
//   - Times come back equal under time.Time.Equal (the location may differ).
//     A store must keep at least millisecond precision; the suite's times
//     are whole milliseconds.
//   - ListSessions orders by CreatedAt, newest first, then by ID,
//     descending; a Limit of zero or less means 50. An After that names no
//     session is ErrNotFound, unless AfterCreated is set: then the page
//     follows (AfterCreated, After) whether or not that session exists.
//   - Commit, LoadSnapshot and Events on an unknown session are
//     ErrNotFound; so is DeleteSession.
//   - A Commit with no events is valid: it updates the session row only.
//   - A Commit whose Snapshot.Seq is past its last event fails and writes
//     nothing; a nil event fails and writes nothing.
//   - Stores hand out copies: mutating a returned Session's Metadata or a
//     returned Snapshot's Data does not change the store, nor does
//     mutating a Session or Snapshot after passing it in. (Events are the
//     exception: a store may keep the *Event it was given, and callers must
//     not mutate events after Commit.)
//   - A canceled context fails every method with an error that wraps
//     context.Canceled, and a canceled Commit writes nothing.
//   - Everything is scoped by the context's tenant (session.WithTenant):
//     another tenant's session is ErrNotFound to every method and
//     capability, and two tenants may use the same id.
//
// The optional capabilities have sections of their own, run when the
// store implements them: session.Leaser (leases and fencing, with the
// clock under the suite's control), session.Follower, session.Controller,
// session.Inbox (with Commit.Answers), session.RequestIndex (kept by
// Commit) and session.LeaseIndex.
package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/session"
)

// Factory makes a fresh, empty store whose leases (if it has them) read
// the time from now.
type Factory func(t *testing.T, now func() time.Time) session.Store

// Run runs the conformance suite against stores made by newStore.
func Run(t *testing.T, newStore Factory) {
	t.Helper()
	cases := []struct {
		name string
		fn   func(t *testing.T, s session.Store)
	}{
		{"ListByStatus", testListByStatus},
		{"ListByAgent", testListByAgent},
		{"CreateGet", testCreateGet},
		{"CreateExists", testCreateExists},
		{"GetNotFound", testGetNotFound},
		{"CopiesSession", testCopiesSession},
		{"Metadata", testMetadata},
		{"Times", testTimes},
		{"ListEmpty", testListEmpty},
		{"ListOrderAndPages", testListOrderAndPages},
		{"ListDefaultLimit", testListDefaultLimit},
		{"ListAfterUnknown", testListAfterUnknown},
		{"ListAfterDeleted", testListAfterDeleted},
		{"ListSkipHidden", testListSkipHidden},
		{"Delete", testDelete},
		{"DeleteNotFound", testDeleteNotFound},
		{"DeleteLeavesOthers", testDeleteLeavesOthers},
		{"CommitAppends", testCommitAppends},
		{"CommitUpdatesSession", testCommitUpdatesSession},
		{"CommitNoEvents", testCommitNoEvents},
		{"CommitUnknownSession", testCommitUnknownSession},
		{"CommitStaleExpectSeq", testCommitStale},
		{"CommitBadNumbering", testCommitBadNumbering},
		{"CommitNilEvent", testCommitNilEvent},
		{"Snapshot", testSnapshot},
		{"SnapshotCopied", testSnapshotCopied},
		{"SnapshotPastLastEvent", testSnapshotPastLastEvent},
		{"SnapshotNotFound", testSnapshotNotFound},
		{"EventsAfter", testEventsAfter},
		{"EventsNotFound", testEventsNotFound},
		{"EventsEarlyBreak", testEventsEarlyBreak},
		{"EventsManyPages", testEventsManyPages},
		{"EventDataRoundTrip", testEventDataRoundTrip},
		{"ConcurrentSameExpectSeq", testConcurrentSameExpectSeq},
		{"ConcurrentRetry", testConcurrentRetry},
		{"ConcurrentReaders", testConcurrentReaders},
		{"ContextCanceled", testContextCanceled},
		{"CloseIdempotent", testCloseIdempotent},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			c.fn(t, newStore(t, NewClock(base).Now))
		})
	}
	t.Run("Tenants", func(t *testing.T) { runTenants(t, newStore) })
	t.Run("Leaser", func(t *testing.T) { runLeaser(t, newStore) })
	t.Run("Follower", func(t *testing.T) { runFollower(t, newStore) })
	t.Run("Controller", func(t *testing.T) { runController(t, newStore) })
	t.Run("Inbox", func(t *testing.T) { runInbox(t, newStore) })
	t.Run("Outbox", func(t *testing.T) { runOutbox(t, newStore) })
	t.Run("Blobs", func(t *testing.T) { runBlobs(t, newStore) })
	t.Run("RequestIndex", func(t *testing.T) { runRequests(t, newStore) })
	t.Run("LeaseIndex", func(t *testing.T) { runLeaseIndex(t, newStore) })
	t.Run("Records", func(t *testing.T) { runRecords(t, newStore) })
}

// base is the suite's reference time: whole milliseconds, UTC.
var base = time.Date(2026, 3, 14, 15, 9, 26, 535_000_000, time.UTC)

// at returns base plus d.
func at(d time.Duration) time.Time { return base.Add(d) }

// sessionOpts compares sessions: times with Equal (cmp uses the Equal
// method), and a nil Metadata equal to an empty one.
var sessionOpts = cmp.Options{cmpopts.EquateEmpty()}

func newSession(id string, created time.Time) *session.Session {
	return &session.Session{
		Tenant:    session.DefaultTenant,
		ID:        id,
		Agent:     "assistant",
		Status:    session.StatusIdle,
		CreatedAt: created,
		UpdatedAt: created,
	}
}

func create(t *testing.T, s session.Store, ss *session.Session) {
	t.Helper()
	if err := s.CreateSession(t.Context(), ss); err != nil {
		t.Fatalf("CreateSession(%q): %v", ss.ID, err)
	}
}

func get(t *testing.T, s session.Store, id string) *session.Session {
	t.Helper()
	got, err := s.GetSession(t.Context(), id)
	if err != nil {
		t.Fatalf("GetSession(%q): %v", id, err)
	}
	return got
}

func commit(t *testing.T, s session.Store, c *session.Commit) {
	t.Helper()
	if err := s.Commit(t.Context(), c); err != nil {
		t.Fatalf("Commit(%q, expect %d, %d events): %v", c.SessionID, c.ExpectSeq, len(c.Events), err)
	}
}

// events returns n events of session id numbered from+1, from+2, ...
func events(id string, from int64, n int) []*session.Event {
	evs := make([]*session.Event, n)
	for i := range evs {
		seq := from + int64(i) + 1
		evs[i] = &session.Event{
			V:         session.SchemaVersion,
			Seq:       seq,
			SessionID: id,
			RunID:     "run-1",
			Turn:      1,
			Type:      session.TypeToolResult,
			Time:      at(time.Duration(seq) * time.Millisecond),
			Agent:     "assistant",
			Data: &session.ToolResult{
				CallID:    fmt.Sprintf("call_%d", seq),
				Name:      "search",
				OK:        true,
				Result:    json.RawMessage(fmt.Sprintf(`{"seq":%d}`, seq)),
				LatencyMS: seq,
			},
		}
	}
	return evs
}

// collect drains seq, failing the test on an error.
func collect(t *testing.T, seq iter.Seq2[*session.Event, error]) []*session.Event {
	t.Helper()
	var out []*session.Event
	for e, err := range seq {
		if err != nil {
			t.Fatalf("Events: %v", err)
		}
		out = append(out, e)
	}
	return out
}

func readAll(t *testing.T, s session.Store, id string, after int64) []*session.Event {
	t.Helper()
	return collect(t, s.Events(t.Context(), id, after))
}

// eventsErr drains seq and returns its first error.
func eventsErr(seq iter.Seq2[*session.Event, error]) error {
	for _, err := range seq {
		if err != nil {
			return err
		}
	}
	return nil
}

func diffEvents(t *testing.T, want, got []*session.Event) {
	t.Helper()
	if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("events mismatch (-want +got):\n%s", diff)
	}
}

// checkSeqs checks that evs are numbered first, first+1, ... with no gap.
func checkSeqs(t *testing.T, evs []*session.Event, first int64) {
	t.Helper()
	for i, e := range evs {
		if want := first + int64(i); e.Seq != want {
			t.Fatalf("event %d has seq %d, want %d", i, e.Seq, want)
		}
	}
}

// state is everything a session has in a store, to check that a failed
// call wrote nothing.
type state struct {
	Session  *session.Session
	Events   []*session.Event
	Snapshot *session.Snapshot
}

func stateOf(t *testing.T, s session.Store, id string) state {
	t.Helper()
	snap, err := s.LoadSnapshot(t.Context(), id)
	if err != nil {
		t.Fatalf("LoadSnapshot(%q): %v", id, err)
	}
	return state{Session: get(t, s, id), Events: readAll(t, s, id, 0), Snapshot: snap}
}

func checkUnchanged(t *testing.T, s session.Store, id string, before state) {
	t.Helper()
	if diff := cmp.Diff(before, stateOf(t, s, id), cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("a failed call changed the session (-before +after):\n%s", diff)
	}
}

func testCreateGet(t *testing.T, s session.Store) {
	want := &session.Session{
		ID:        "s1",
		Agent:     "assistant",
		Status:    session.StatusIdle,
		Metadata:  map[string]string{"tenant": "acme"},
		CreatedAt: at(0),
		UpdatedAt: at(time.Second),
	}
	create(t, s, want)
	if diff := cmp.Diff(want, get(t, s, "s1"), sessionOpts); diff != "" {
		t.Errorf("GetSession mismatch (-want +got):\n%s", diff)
	}
}

func testCreateExists(t *testing.T, s session.Store) {
	first := newSession("s1", at(0))
	create(t, s, first)
	second := newSession("s1", at(time.Hour))
	second.Agent = "other"
	err := s.CreateSession(t.Context(), second)
	if !errors.Is(err, session.ErrExists) {
		t.Fatalf("second CreateSession: got %v, want ErrExists", err)
	}
	if diff := cmp.Diff(first, get(t, s, "s1"), sessionOpts); diff != "" {
		t.Errorf("a failed CreateSession changed the session (-want +got):\n%s", diff)
	}
}

func testGetNotFound(t *testing.T, s session.Store) {
	if _, err := s.GetSession(t.Context(), "nope"); !errors.Is(err, session.ErrNotFound) {
		t.Fatalf("GetSession(unknown): got %v, want ErrNotFound", err)
	}
}

func testCopiesSession(t *testing.T, s session.Store) {
	in := newSession("s1", at(0))
	in.Metadata = map[string]string{"k": "v"}
	create(t, s, in)
	in.Metadata["k"] = "changed by caller"
	in.Agent = "changed by caller"

	got := get(t, s, "s1")
	got.Metadata["k"] = "changed by reader"
	got.Metadata["extra"] = "x"

	want := newSession("s1", at(0))
	want.Metadata = map[string]string{"k": "v"}
	if diff := cmp.Diff(want, get(t, s, "s1"), sessionOpts); diff != "" {
		t.Errorf("store shares memory with callers (-want +got):\n%s", diff)
	}
}

func testMetadata(t *testing.T, s session.Store) {
	tests := map[string]map[string]string{
		"nil":     nil,
		"one":     {"tenant": "acme"},
		"several": {"tenant": "acme", "user": "ana", "empty": "", "quote\"key": "multi\nline ✓"},
	}
	for id, md := range tests {
		in := newSession(id, at(0))
		in.Metadata = md
		create(t, s, in)
		if diff := cmp.Diff(md, get(t, s, id).Metadata, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("Metadata %s mismatch (-want +got):\n%s", id, diff)
		}
	}
	// Commits leave Metadata alone.
	commit(t, s, &session.Commit{SessionID: "one", Events: events("one", 0, 1), Status: session.StatusDone, Time: at(time.Second)})
	if diff := cmp.Diff(tests["one"], get(t, s, "one").Metadata); diff != "" {
		t.Errorf("Commit changed Metadata (-want +got):\n%s", diff)
	}
}

func testTimes(t *testing.T, s session.Store) {
	ist := time.FixedZone("IST", 5*3600+1800)
	created := time.Date(2026, 7, 1, 9, 30, 0, 123_000_000, ist)
	updated := created.Add(90 * time.Minute)
	in := newSession("s1", created)
	in.UpdatedAt = updated
	create(t, s, in)
	got := get(t, s, "s1")
	if !got.CreatedAt.Equal(created) || !got.UpdatedAt.Equal(updated) {
		t.Errorf("times: got created %v updated %v, want %v and %v", got.CreatedAt, got.UpdatedAt, created, updated)
	}

	committed := time.Date(2027, 1, 2, 3, 4, 5, 678_000_000, time.Local)
	evs := events("s1", 0, 1)
	evs[0].Time = committed.In(ist)
	commit(t, s, &session.Commit{SessionID: "s1", Events: evs, Status: session.StatusDone, Time: committed})
	got = get(t, s, "s1")
	if !got.UpdatedAt.Equal(committed) {
		t.Errorf("UpdatedAt after Commit: got %v, want %v", got.UpdatedAt, committed)
	}
	if !got.CreatedAt.Equal(created) {
		t.Errorf("CreatedAt after Commit: got %v, want %v", got.CreatedAt, created)
	}
	if e := readAll(t, s, "s1", 0)[0]; !e.Time.Equal(committed) {
		t.Errorf("event time: got %v, want %v", e.Time, committed)
	}
}

func list(t *testing.T, s session.Store, opt session.ListOptions) []string {
	t.Helper()
	got, err := s.ListSessions(t.Context(), opt)
	if err != nil {
		t.Fatalf("ListSessions(%+v): %v", opt, err)
	}
	ids := make([]string, len(got))
	for i, ss := range got {
		ids[i] = ss.ID
	}
	return ids
}

func testListEmpty(t *testing.T, s session.Store) {
	if got := list(t, s, session.ListOptions{}); len(got) != 0 {
		t.Errorf("ListSessions on an empty store: got %q, want none", got)
	}
}

func testListOrderAndPages(t *testing.T, s session.Store) {
	// Created out of order; d, e and f share a creation time, so the id
	// decides among them.
	created := []struct {
		id string
		at time.Duration
	}{
		{"c", 2 * time.Second}, {"a", 0}, {"f", 3 * time.Second}, {"g", 4 * time.Second},
		{"d", 3 * time.Second}, {"b", time.Second}, {"e", 3 * time.Second},
	}
	for _, c := range created {
		create(t, s, newSession(c.id, at(c.at)))
	}
	if diff := cmp.Diff([]string{"g", "f", "e", "d", "c", "b", "a"}, list(t, s, session.ListOptions{})); diff != "" {
		t.Errorf("ListSessions order (-want +got):\n%s", diff)
	}

	var pages [][]string
	after := ""
	for range 10 {
		page := list(t, s, session.ListOptions{Limit: 3, After: after})
		pages = append(pages, page)
		if len(page) == 0 {
			break
		}
		after = page[len(page)-1]
	}
	want := [][]string{{"g", "f", "e"}, {"d", "c", "b"}, {"a"}, {}}
	if diff := cmp.Diff(want, pages, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("pages (-want +got):\n%s", diff)
	}

	// Rows are whole sessions, not just ids.
	got, err := s.ListSessions(t.Context(), session.ListOptions{Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]*session.Session{newSession("g", at(4*time.Second))}, got, sessionOpts); diff != "" {
		t.Errorf("ListSessions rows (-want +got):\n%s", diff)
	}
}

func testListDefaultLimit(t *testing.T, s session.Store) {
	for i := range 55 {
		create(t, s, newSession(fmt.Sprintf("s%02d", i), at(time.Duration(i)*time.Second)))
	}
	first := list(t, s, session.ListOptions{})
	if len(first) != 50 || first[0] != "s54" || first[49] != "s05" {
		t.Fatalf("first page: got %d sessions %q, want 50 from s54 to s05", len(first), first)
	}
	rest := list(t, s, session.ListOptions{After: first[49]})
	if diff := cmp.Diff([]string{"s04", "s03", "s02", "s01", "s00"}, rest); diff != "" {
		t.Errorf("second page (-want +got):\n%s", diff)
	}
}

func testListAfterUnknown(t *testing.T, s session.Store) {
	create(t, s, newSession("s1", at(0)))
	_, err := s.ListSessions(t.Context(), session.ListOptions{After: "nope"})
	if !errors.Is(err, session.ErrNotFound) {
		t.Fatalf("ListSessions(After: unknown): got %v, want ErrNotFound", err)
	}
}

// A page after a session deleted since the page before was listed
// follows it by its creation time, when the caller gives it.
func testListAfterDeleted(t *testing.T, s session.Store) {
	for i, id := range []string{"s1", "s2", "s3", "s4"} {
		create(t, s, newSession(id, at(time.Duration(i)*time.Second)))
	}
	first, err := s.ListSessions(t.Context(), session.ListOptions{Limit: 2})
	if err != nil || len(first) != 2 {
		t.Fatalf("first page: %v %v", first, err)
	}
	last := first[1]
	if err := s.DeleteSession(t.Context(), last.ID); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"s2", "s1"}, list(t, s, session.ListOptions{After: last.ID, AfterCreated: last.CreatedAt})); diff != "" {
		t.Errorf("the page after %s, deleted (-want +got):\n%s", last.ID, diff)
	}
	if diff := cmp.Diff([]string{"s1"}, list(t, s, session.ListOptions{After: "s2", AfterCreated: at(time.Second)})); diff != "" {
		t.Errorf("the page after s2 by its time (-want +got):\n%s", diff)
	}
	if _, err := s.ListSessions(t.Context(), session.ListOptions{After: last.ID}); !errors.Is(err, session.ErrNotFound) {
		t.Errorf("ListSessions(After: deleted, no AfterCreated): got %v, want ErrNotFound", err)
	}
}

func testDelete(t *testing.T, s session.Store) {
	ctx := t.Context()
	create(t, s, newSession("s1", at(0)))
	commit(t, s, &session.Commit{
		SessionID: "s1", Events: events("s1", 0, 3), Status: session.StatusDone, Turn: 1, Time: at(time.Second),
		Snapshot: &session.Snapshot{Seq: 3, Data: json.RawMessage(`{"messages":3}`)},
	})
	if err := s.DeleteSession(ctx, "s1"); err != nil {
		t.Fatalf("DeleteSession: %v", err)
	}
	if _, err := s.GetSession(ctx, "s1"); !errors.Is(err, session.ErrNotFound) {
		t.Errorf("GetSession after delete: got %v, want ErrNotFound", err)
	}
	if err := eventsErr(s.Events(ctx, "s1", 0)); !errors.Is(err, session.ErrNotFound) {
		t.Errorf("Events after delete: got %v, want ErrNotFound", err)
	}
	if _, err := s.LoadSnapshot(ctx, "s1"); !errors.Is(err, session.ErrNotFound) {
		t.Errorf("LoadSnapshot after delete: got %v, want ErrNotFound", err)
	}
	if got := list(t, s, session.ListOptions{}); len(got) != 0 {
		t.Errorf("ListSessions after delete: got %q, want none", got)
	}
	// A writer that still holds the session (a run in progress) cannot
	// commit to it any more.
	late := &session.Commit{SessionID: "s1", ExpectSeq: 3, Events: events("s1", 3, 1), Time: at(2 * time.Second)}
	if err := s.Commit(ctx, late); !errors.Is(err, session.ErrNotFound) {
		t.Errorf("Commit after delete: got %v, want ErrNotFound", err)
	}

	// A new session under the same id starts from nothing.
	create(t, s, newSession("s1", at(time.Hour)))
	st := stateOf(t, s, "s1")
	if st.Session.LastSeq != 0 || len(st.Events) != 0 || st.Snapshot != nil {
		t.Fatalf("recreated session: LastSeq %d, %d events, snapshot %v; want an empty session", st.Session.LastSeq, len(st.Events), st.Snapshot)
	}
	commit(t, s, &session.Commit{SessionID: "s1", Events: events("s1", 0, 2), Time: at(2 * time.Hour)})
	checkSeqs(t, readAll(t, s, "s1", 0), 1)
}

func testDeleteNotFound(t *testing.T, s session.Store) {
	if err := s.DeleteSession(t.Context(), "nope"); !errors.Is(err, session.ErrNotFound) {
		t.Fatalf("DeleteSession(unknown): got %v, want ErrNotFound", err)
	}
}

func testDeleteLeavesOthers(t *testing.T, s session.Store) {
	for _, id := range []string{"a", "b", "c"} {
		create(t, s, newSession(id, at(0)))
		commit(t, s, &session.Commit{
			SessionID: id, Events: events(id, 0, 2), Time: at(time.Second),
			Snapshot: &session.Snapshot{Seq: 2, Data: json.RawMessage(`"` + id + `"`)},
		})
	}
	before := stateOf(t, s, "a")
	if err := s.DeleteSession(t.Context(), "b"); err != nil {
		t.Fatal(err)
	}
	checkUnchanged(t, s, "a", before)
	if got := len(readAll(t, s, "c", 0)); got != 2 {
		t.Errorf("session c has %d events after deleting b, want 2", got)
	}
}

func testCommitAppends(t *testing.T, s session.Store) {
	create(t, s, newSession("s1", at(0)))
	first := events("s1", 0, 3)
	second := events("s1", 3, 2)
	commit(t, s, &session.Commit{SessionID: "s1", ExpectSeq: 0, Events: first, Time: at(time.Second)})
	commit(t, s, &session.Commit{SessionID: "s1", ExpectSeq: 3, Events: second, Time: at(2 * time.Second)})
	got := readAll(t, s, "s1", 0)
	diffEvents(t, append(events("s1", 0, 3), events("s1", 3, 2)...), got)
	checkSeqs(t, got, 1)
	if last := get(t, s, "s1").LastSeq; last != 5 {
		t.Errorf("LastSeq: got %d, want 5", last)
	}
}

func testCommitUpdatesSession(t *testing.T, s session.Store) {
	in := newSession("s1", at(0))
	in.Metadata = map[string]string{"k": "v"}
	create(t, s, in)

	u1 := model.Usage{InputTokens: 100, OutputTokens: 20}
	commit(t, s, &session.Commit{
		SessionID: "s1", Events: events("s1", 0, 2),
		Status: session.StatusRunning, Turn: 1, Usage: u1, Time: at(time.Second),
	})
	want := &session.Session{
		Tenant: session.DefaultTenant, ID: "s1", Agent: "assistant", Status: session.StatusRunning, Turn: 1, Usage: u1, LastSeq: 2,
		Metadata: map[string]string{"k": "v"}, CreatedAt: at(0), UpdatedAt: at(time.Second),
	}
	if diff := cmp.Diff(want, get(t, s, "s1"), sessionOpts); diff != "" {
		t.Errorf("after first commit (-want +got):\n%s", diff)
	}

	u2 := model.Usage{InputTokens: 250, OutputTokens: 61, CachedTokens: 100, CostUSD: 0.0042}
	commit(t, s, &session.Commit{
		SessionID: "s1", ExpectSeq: 2, Events: events("s1", 2, 3),
		Status: session.StatusWaiting, Turn: 2, Usage: u2, Time: at(2 * time.Second),
	})
	want.Status, want.Turn, want.Usage, want.LastSeq, want.UpdatedAt = session.StatusWaiting, 2, u2, 5, at(2*time.Second)
	if diff := cmp.Diff(want, get(t, s, "s1"), sessionOpts); diff != "" {
		t.Errorf("after second commit (-want +got):\n%s", diff)
	}
	got, err := s.ListSessions(t.Context(), session.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]*session.Session{want}, got, sessionOpts); diff != "" {
		t.Errorf("ListSessions after commits (-want +got):\n%s", diff)
	}
}

func testCommitNoEvents(t *testing.T, s session.Store) {
	create(t, s, newSession("s1", at(0)))
	commit(t, s, &session.Commit{SessionID: "s1", Events: events("s1", 0, 2), Status: session.StatusRunning, Time: at(time.Second)})
	commit(t, s, &session.Commit{SessionID: "s1", ExpectSeq: 2, Status: session.StatusPaused, Turn: 1, Time: at(2 * time.Second)})
	got := get(t, s, "s1")
	if got.LastSeq != 2 || got.Status != session.StatusPaused || !got.UpdatedAt.Equal(at(2*time.Second)) {
		t.Errorf("after an empty commit: LastSeq %d, Status %q, UpdatedAt %v; want 2, paused, %v", got.LastSeq, got.Status, got.UpdatedAt, at(2*time.Second))
	}
	if n := len(readAll(t, s, "s1", 0)); n != 2 {
		t.Errorf("an empty commit changed the log: %d events, want 2", n)
	}
}

func testCommitUnknownSession(t *testing.T, s session.Store) {
	err := s.Commit(t.Context(), &session.Commit{SessionID: "nope", Events: events("nope", 0, 1), Time: at(0)})
	if !errors.Is(err, session.ErrNotFound) {
		t.Fatalf("Commit(unknown session): got %v, want ErrNotFound", err)
	}
}

// seeded returns a store holding session s1 with 3 events and a snapshot.
func seeded(t *testing.T, s session.Store) state {
	t.Helper()
	create(t, s, newSession("s1", at(0)))
	commit(t, s, &session.Commit{
		SessionID: "s1", Events: events("s1", 0, 3), Status: session.StatusRunning, Turn: 1,
		Usage: model.Usage{InputTokens: 1}, Time: at(time.Second),
		Snapshot: &session.Snapshot{Seq: 3, Data: json.RawMessage(`{"v":"old"}`)},
	})
	return stateOf(t, s, "s1")
}

// failingCommit is a commit that, but for the field a case changes, would
// succeed on a seeded store and change everything it can.
func failingCommit(expect int64, evs []*session.Event) *session.Commit {
	return &session.Commit{
		SessionID: "s1", ExpectSeq: expect, Events: evs, Status: session.StatusFailed, Turn: 9,
		Usage: model.Usage{InputTokens: 999}, Time: at(time.Hour),
		Snapshot: &session.Snapshot{Seq: expect, Data: json.RawMessage(`{"v":"new"}`)},
	}
}

func testCommitStale(t *testing.T, s session.Store) {
	before := seeded(t, s)
	for _, expect := range []int64{0, 2, 4, 10} {
		err := s.Commit(t.Context(), failingCommit(expect, events("s1", expect, 2)))
		if !errors.Is(err, session.ErrConflict) {
			t.Errorf("Commit(ExpectSeq %d) on a session at 3: got %v, want ErrConflict", expect, err)
		}
	}
	checkUnchanged(t, s, "s1", before)
}

func testCommitBadNumbering(t *testing.T, s session.Store) {
	before := seeded(t, s)
	renumber := func(seqs ...int64) []*session.Event {
		evs := events("s1", 3, len(seqs))
		for i, seq := range seqs {
			evs[i].Seq = seq
		}
		return evs
	}
	tests := map[string][]*session.Event{
		"zero":      renumber(0),
		"repeat":    renumber(3),
		"skip":      renumber(5),
		"gap":       renumber(4, 6),
		"duplicate": renumber(4, 5, 5),
		"backwards": renumber(5, 4),
		"unset":     renumber(4, 0),
	}
	for name, evs := range tests {
		err := s.Commit(t.Context(), failingCommit(3, evs))
		if !errors.Is(err, session.ErrConflict) {
			t.Errorf("%s: got %v, want ErrConflict", name, err)
		}
	}
	checkUnchanged(t, s, "s1", before)
}

func testCommitNilEvent(t *testing.T, s session.Store) {
	before := seeded(t, s)
	evs := events("s1", 3, 2)
	evs[1] = nil
	if err := s.Commit(t.Context(), failingCommit(3, evs)); err == nil {
		t.Fatal("Commit with a nil event succeeded")
	}
	checkUnchanged(t, s, "s1", before)
}

func loadSnapshot(t *testing.T, s session.Store, id string) *session.Snapshot {
	t.Helper()
	snap, err := s.LoadSnapshot(t.Context(), id)
	if err != nil {
		t.Fatalf("LoadSnapshot(%q): %v", id, err)
	}
	return snap
}

func testSnapshot(t *testing.T, s session.Store) {
	create(t, s, newSession("s1", at(0)))
	if snap := loadSnapshot(t, s, "s1"); snap != nil {
		t.Fatalf("LoadSnapshot on a new session: got %+v, want nil", snap)
	}
	commit(t, s, &session.Commit{SessionID: "s1", Events: events("s1", 0, 2), Time: at(time.Second)})
	if snap := loadSnapshot(t, s, "s1"); snap != nil {
		t.Fatalf("LoadSnapshot after a commit without one: got %+v, want nil", snap)
	}

	first := &session.Snapshot{Seq: 3, Data: json.RawMessage(`{"messages":["a","b"],"round":1}`)}
	commit(t, s, &session.Commit{SessionID: "s1", ExpectSeq: 2, Events: events("s1", 2, 2), Time: at(2 * time.Second), Snapshot: first})
	if diff := cmp.Diff(first, loadSnapshot(t, s, "s1")); diff != "" {
		t.Errorf("first snapshot (-want +got):\n%s", diff)
	}

	// A commit without a snapshot keeps the last one.
	commit(t, s, &session.Commit{SessionID: "s1", ExpectSeq: 4, Events: events("s1", 4, 1), Time: at(3 * time.Second)})
	if diff := cmp.Diff(first, loadSnapshot(t, s, "s1")); diff != "" {
		t.Errorf("snapshot after a commit without one (-want +got):\n%s", diff)
	}

	// A later snapshot replaces it; an empty commit may carry one too.
	second := &session.Snapshot{Seq: 5, Data: json.RawMessage(`{"messages":["a","b","c"],"round":2}`)}
	commit(t, s, &session.Commit{SessionID: "s1", ExpectSeq: 5, Time: at(4 * time.Second), Snapshot: second})
	if diff := cmp.Diff(second, loadSnapshot(t, s, "s1")); diff != "" {
		t.Errorf("replaced snapshot (-want +got):\n%s", diff)
	}
}

func testSnapshotCopied(t *testing.T, s session.Store) {
	create(t, s, newSession("s1", at(0)))
	data := []byte(`{"k":"original"}`)
	commit(t, s, &session.Commit{SessionID: "s1", Events: events("s1", 0, 1), Time: at(time.Second), Snapshot: &session.Snapshot{Seq: 1, Data: data}})
	copy(data, `{"k":"CALLER!!!"}`)

	got := loadSnapshot(t, s, "s1")
	want := &session.Snapshot{Seq: 1, Data: json.RawMessage(`{"k":"original"}`)}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("snapshot shares the caller's bytes (-want +got):\n%s", diff)
	}
	copy(got.Data, `{"k":"READER!!!"}`)
	if diff := cmp.Diff(want, loadSnapshot(t, s, "s1")); diff != "" {
		t.Errorf("snapshot shares bytes with a reader (-want +got):\n%s", diff)
	}
}

func testSnapshotPastLastEvent(t *testing.T, s session.Store) {
	before := seeded(t, s)
	c := failingCommit(3, events("s1", 3, 2))
	c.Snapshot.Seq = 6
	if err := s.Commit(t.Context(), c); err == nil {
		t.Fatal("Commit with a snapshot past its last event succeeded")
	}
	checkUnchanged(t, s, "s1", before)
}

func testSnapshotNotFound(t *testing.T, s session.Store) {
	if _, err := s.LoadSnapshot(t.Context(), "nope"); !errors.Is(err, session.ErrNotFound) {
		t.Fatalf("LoadSnapshot(unknown): got %v, want ErrNotFound", err)
	}
}

func testEventsAfter(t *testing.T, s session.Store) {
	create(t, s, newSession("s1", at(0)))
	create(t, s, newSession("other", at(0)))
	commit(t, s, &session.Commit{SessionID: "s1", Events: events("s1", 0, 3), Time: at(time.Second)})
	commit(t, s, &session.Commit{SessionID: "other", Events: events("other", 0, 4), Time: at(time.Second)})
	commit(t, s, &session.Commit{SessionID: "s1", ExpectSeq: 3, Events: events("s1", 3, 3), Time: at(2 * time.Second)})
	all := append(events("s1", 0, 3), events("s1", 3, 3)...)
	for after := int64(0); after <= 7; after++ {
		want := all[min(after, int64(len(all))):]
		got := readAll(t, s, "s1", after)
		if len(want) == 0 && len(got) == 0 {
			continue
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("Events(after %d) (-want +got):\n%s", after, diff)
		}
	}
	// A known session with nothing after the cursor yields nothing, and no error.
	create(t, s, newSession("empty", at(0)))
	if got := readAll(t, s, "empty", 0); len(got) != 0 {
		t.Errorf("Events of a session without events: got %d events", len(got))
	}
}

func testEventsNotFound(t *testing.T, s session.Store) {
	var n int
	var first error
	for e, err := range s.Events(t.Context(), "nope", 0) {
		n++
		if n == 1 {
			first = err
			if e != nil {
				t.Errorf("Events(unknown) yielded an event with its error: %+v", e)
			}
		}
	}
	if n != 1 || !errors.Is(first, session.ErrNotFound) {
		t.Fatalf("Events(unknown): %d yields, first error %v; want one ErrNotFound", n, first)
	}
}

func testEventsEarlyBreak(t *testing.T, s session.Store) {
	create(t, s, newSession("s1", at(0)))
	commit(t, s, &session.Commit{SessionID: "s1", Events: events("s1", 0, 5), Time: at(time.Second)})
	n := 0
	for _, err := range s.Events(t.Context(), "s1", 0) {
		if err != nil {
			t.Fatal(err)
		}
		n++
		if n == 2 {
			break
		}
	}
	// The store is still usable: a stopped iteration released what it held.
	commit(t, s, &session.Commit{SessionID: "s1", ExpectSeq: 5, Events: events("s1", 5, 1), Time: at(2 * time.Second)})
	checkSeqs(t, readAll(t, s, "s1", 0), 1)
}

func testEventsManyPages(t *testing.T, s session.Store) {
	// Enough events to span several pages of a store that reads in pages
	// (sqlite reads 256 at a time).
	create(t, s, newSession("s1", at(0)))
	const total = 700
	for from := int64(0); from < total; from += 100 {
		commit(t, s, &session.Commit{SessionID: "s1", ExpectSeq: from, Events: events("s1", from, 100), Time: at(time.Second)})
	}
	for _, after := range []int64{0, 1, 255, 256, 257, 511, 512, 699, 700} {
		got := readAll(t, s, "s1", after)
		if int64(len(got)) != total-after {
			t.Fatalf("Events(after %d): %d events, want %d", after, len(got), total-after)
		}
		checkSeqs(t, got, after+1)
	}
	diffEvents(t, events("s1", 0, total), readAll(t, s, "s1", 0))
}

// allData holds one payload of every event type, and one of a type this
// build does not know.
func allData() []session.Data {
	usage := model.Usage{InputTokens: 1200, OutputTokens: 345, CachedTokens: 1024, CostUSD: 0.01875}
	calls := []model.ToolCall{
		{ID: "call_a", Name: "search", Arguments: json.RawMessage(`{"q":"agentrt","limit":5}`)},
		{ID: "call_b", Name: "read_file", Arguments: json.RawMessage(`{"path":"/etc/hosts"}`)},
	}
	return []session.Data{
		&session.RunStarted{Input: "What's new? ünïcødé ✓", Source: "cli"},
		&session.RunResumed{Reason: "recovered", From: session.StatusInterrupted},
		&session.RoundStarted{Round: 1, MaxRounds: 8},
		&session.ModelStarted{Model: "gpt-test", Attempt: 2},
		&session.Token{Text: "Hel", Pulse: true},
		&session.ToolCallDelta{Index: 0, CallID: "call_a", Name: "search", Arguments: `{"q":"agen`},
		&session.ModelFinished{Model: "gpt-test", Content: "Looking.", ToolCalls: calls, Usage: usage, FinishReason: model.FinishToolCalls, LatencyMS: 1234},
		&session.ToolCall{CallID: "call_a", Name: "search", Arguments: json.RawMessage(`{"q":"agentrt","limit":5}`)},
		&session.ToolResult{CallID: "call_a", Name: "search", OK: true, Result: json.RawMessage(`{"hits":[{"t":"a"},{"t":"b"}],"n":2.5,"none":null}`), LatencyMS: 87},
		&session.ToolResult{CallID: "call_b", Name: "read_file", Error: "permission denied", LatencyMS: 3},
		&session.InputRequired{RequestID: "req_1", Kind: session.RequestApproval, Calls: calls, Question: "Run 2 tools?"},
		&session.InputResolved{RequestID: "req_1", Kind: session.RequestApproval, Decision: session.DecisionEdit, By: "ana", Reason: "narrower query", Arguments: json.RawMessage(`{"q":"agentrt store"}`)},
		&session.InputResolved{RequestID: "req_2", Kind: session.RequestApproval, Decision: session.DecisionReject},
		&session.InputRequired{RequestID: "req_3", Kind: session.RequestSelect, Question: "Which?", Options: []string{"a", "b"}},
		&session.Final{Text: "Here is what's new.\n\n- a\n- b", Usage: usage},
		&session.Error{Code: "budget_exceeded", Message: "cost limit reached", Recoverable: false},
		&session.RunFinished{Status: session.StatusDone, Usage: usage},
		&session.RunFinished{Status: session.StatusPaused, Usage: usage, Reason: "max_rounds"},
		&session.Raw{T: "team_note", JSON: json.RawMessage(`{"plan":[{"tool":"search","args":{"q":"x"}},{"reply":true}],"version":3}`)},
		&session.Raw{T: "my_custom_event", JSON: json.RawMessage(`[1,"two",{"three":3}]`)},
		&session.Interrupted{Reason: "newer input", MergedInputs: 2},
	}
}

func testEventDataRoundTrip(t *testing.T, s session.Store) {
	create(t, s, newSession("s1", at(0)))
	data := allData()
	evs := make([]*session.Event, len(data))
	want := make([]*session.Event, len(data))
	for i, d := range data {
		mk := func() *session.Event {
			return &session.Event{
				V: session.SchemaVersion, Seq: int64(i + 1), SessionID: "s1", RunID: "run-7", Turn: 3,
				Type: d.EventType(), Time: at(time.Duration(i) * time.Millisecond), Agent: "assistant", Data: d,
			}
		}
		evs[i], want[i] = mk(), mk()
	}
	// Two commits, so the round trip is not an artefact of one batch.
	commit(t, s, &session.Commit{SessionID: "s1", Events: evs[:5], Time: at(time.Second)})
	commit(t, s, &session.Commit{SessionID: "s1", ExpectSeq: 5, Events: evs[5:], Time: at(time.Second)})
	got := readAll(t, s, "s1", 0)
	diffEvents(t, want, got)
	for _, e := range got {
		if e.Data == nil || e.Data.EventType() != e.Type {
			t.Errorf("event %d: Data %T does not match type %q", e.Seq, e.Data, e.Type)
		}
	}
}

func testConcurrentSameExpectSeq(t *testing.T, s session.Store) {
	ctx := t.Context()
	create(t, s, newSession("s1", at(0)))
	const writers, rounds, perCommit = 8, 20, 2
	for r := range rounds {
		expect := int64(r * perCommit)
		errs := make([]error, writers)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for w := range writers {
			evs := events("s1", expect, perCommit)
			for _, e := range evs {
				e.RunID = fmt.Sprintf("writer-%d", w)
			}
			wg.Go(func() {
				<-start
				errs[w] = s.Commit(ctx, &session.Commit{SessionID: "s1", ExpectSeq: expect, Events: evs, Turn: r, Time: at(time.Second)})
			})
		}
		close(start)
		wg.Wait()
		wins := 0
		for w, err := range errs {
			switch {
			case err == nil:
				wins++
			case !errors.Is(err, session.ErrConflict):
				t.Fatalf("round %d writer %d: got %v, want nil or ErrConflict", r, w, err)
			}
		}
		if wins != 1 {
			t.Fatalf("round %d: %d commits on ExpectSeq %d succeeded, want exactly 1", r, wins, expect)
		}
	}
	got := readAll(t, s, "s1", 0)
	if len(got) != rounds*perCommit {
		t.Fatalf("log has %d events, want %d", len(got), rounds*perCommit)
	}
	checkSeqs(t, got, 1)
	for i := 0; i < len(got); i += perCommit {
		for _, e := range got[i+1 : i+perCommit] {
			if e.RunID != got[i].RunID {
				t.Fatalf("commit at seq %d mixes events of %s and %s", got[i].Seq, got[i].RunID, e.RunID)
			}
		}
	}
	if last := get(t, s, "s1").LastSeq; last != rounds*perCommit {
		t.Errorf("LastSeq: got %d, want %d", last, rounds*perCommit)
	}
}

func testConcurrentRetry(t *testing.T, s session.Store) {
	ctx := t.Context()
	create(t, s, newSession("s1", at(0)))
	const writers, commitsEach, perCommit = 6, 8, 3
	var wg sync.WaitGroup
	errc := make(chan error, writers)
	for w := range writers {
		wg.Go(func() {
			for done := 0; done < commitsEach; {
				ss, err := s.GetSession(ctx, "s1")
				if err != nil {
					errc <- err
					return
				}
				evs := events("s1", ss.LastSeq, perCommit)
				for _, e := range evs {
					e.RunID = fmt.Sprintf("writer-%d", w)
				}
				err = s.Commit(ctx, &session.Commit{SessionID: "s1", ExpectSeq: ss.LastSeq, Events: evs, Time: at(time.Second)})
				switch {
				case err == nil:
					done++
				case !errors.Is(err, session.ErrConflict):
					errc <- fmt.Errorf("writer %d: %w", w, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Fatal(err)
	}
	got := readAll(t, s, "s1", 0)
	if len(got) != writers*commitsEach*perCommit {
		t.Fatalf("log has %d events, want %d", len(got), writers*commitsEach*perCommit)
	}
	checkSeqs(t, got, 1)
	perWriter := map[string]int{}
	for i := 0; i < len(got); i += perCommit {
		perWriter[got[i].RunID]++
		for _, e := range got[i+1 : i+perCommit] {
			if e.RunID != got[i].RunID {
				t.Fatalf("commit at seq %d mixes events of %s and %s", got[i].Seq, got[i].RunID, e.RunID)
			}
		}
	}
	for w := range writers {
		if n := perWriter[fmt.Sprintf("writer-%d", w)]; n != commitsEach {
			t.Errorf("writer %d has %d commits in the log, want %d", w, n, commitsEach)
		}
	}
}

func testConcurrentReaders(t *testing.T, s session.Store) {
	ctx := t.Context()
	create(t, s, newSession("s1", at(0)))
	const commits = 40
	var done atomic.Bool
	var wg sync.WaitGroup
	errc := make(chan error, 8)
	for r := range 4 {
		wg.Go(func() {
			for reads := 0; reads == 0 || !done.Load(); reads++ {
				var n int64
				for e, err := range s.Events(ctx, "s1", 0) {
					if err != nil {
						errc <- fmt.Errorf("reader %d: %w", r, err)
						return
					}
					if n++; e.Seq != n {
						errc <- fmt.Errorf("reader %d: event %d has seq %d", r, n, e.Seq)
						return
					}
				}
				ss, err := s.GetSession(ctx, "s1")
				if err != nil {
					errc <- fmt.Errorf("reader %d: %w", r, err)
					return
				}
				if ss.LastSeq < n {
					errc <- fmt.Errorf("reader %d: saw %d events, then LastSeq %d", r, n, ss.LastSeq)
					return
				}
			}
		})
	}
	for i := range commits {
		commit(t, s, &session.Commit{SessionID: "s1", ExpectSeq: int64(i), Events: events("s1", int64(i), 1), Time: at(time.Second)})
	}
	done.Store(true)
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Error(err)
	}
	checkSeqs(t, readAll(t, s, "s1", 0), 1)
}

func testContextCanceled(t *testing.T, s session.Store) {
	before := seeded(t, s)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	check := func(op string, err error) {
		t.Helper()
		if !errors.Is(err, context.Canceled) {
			t.Errorf("%s with a canceled context: got %v, want an error wrapping context.Canceled", op, err)
		}
	}
	check("CreateSession", s.CreateSession(ctx, newSession("s2", at(0))))
	_, err := s.GetSession(ctx, "s1")
	check("GetSession", err)
	_, err = s.ListSessions(ctx, session.ListOptions{})
	check("ListSessions", err)
	check("Commit", s.Commit(ctx, failingCommit(3, events("s1", 3, 2))))
	_, err = s.LoadSnapshot(ctx, "s1")
	check("LoadSnapshot", err)
	check("Events", eventsErr(s.Events(ctx, "s1", 0)))
	check("DeleteSession", s.DeleteSession(ctx, "s1"))

	checkUnchanged(t, s, "s1", before)
	if _, err := s.GetSession(t.Context(), "s2"); !errors.Is(err, session.ErrNotFound) {
		t.Errorf("a canceled CreateSession created the session: GetSession got %v", err)
	}
}

func testCloseIdempotent(t *testing.T, s session.Store) {
	create(t, s, newSession("s1", at(0)))
	if err := s.Close(); err != nil {
		t.Fatalf("first Close: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

// With SkipHidden, the runtime's hidden sessions (agents' rule logs,
// claims) are left out in the listing itself: every page is full as long
// as there are other sessions, and paging by each page's last session
// lists every other session once, in order, whatever the page size and
// however the hidden ones are interleaved — also by status, and across
// tenants.
func testListSkipHidden(t *testing.T, s session.Store) {
	var visible []string
	for i := range 12 {
		at := at(time.Duration(i) * time.Second)
		id := fmt.Sprintf("v%02d", i)
		create(t, s, newSession(id, at))
		visible = append([]string{id}, visible...) // newest first
		// Hidden ones around it: one created at the same time (ids order
		// them), and runs of them between.
		create(t, s, newSession(fmt.Sprintf("_claim.%02d", i), at))
		if i%3 == 0 {
			for j := range 4 {
				create(t, s, newSession(fmt.Sprintf("_rules.%02d-%d", i, j), at.Add(time.Duration(j+1)*time.Millisecond)))
			}
		}
	}
	if got := list(t, s, session.ListOptions{SkipHidden: true}); !cmp.Equal(got, visible) {
		t.Fatalf("ListSessions(SkipHidden) = %q, want %q", got, visible)
	}
	if got := list(t, s, session.ListOptions{}); len(got) != 12+12+16 {
		t.Errorf("ListSessions without SkipHidden listed %d sessions, want all 40", len(got))
	}
	for size := 1; size <= len(visible)+1; size++ {
		for _, opt := range []session.ListOptions{{SkipHidden: true}, {SkipHidden: true, Status: session.StatusIdle}, {SkipHidden: true, AllTenants: true}} {
			opt.Limit = size
			var all []string
			for pages := 0; ; pages++ {
				if pages > len(visible)+1 {
					t.Fatalf("page size %d: paging does not end", size)
				}
				got, err := s.ListSessions(t.Context(), opt)
				if err != nil {
					t.Fatalf("ListSessions(%+v): %v", opt, err)
				}
				if want := min(size, len(visible)-len(all)); len(got) != want {
					t.Fatalf("ListSessions(%+v) after %q: a page of %d, want %d", opt, all, len(got), want)
				}
				for _, ss := range got {
					all = append(all, ss.ID)
				}
				if len(got) < size {
					break
				}
				last := got[len(got)-1]
				opt.After, opt.AfterCreated, opt.AfterTenant = last.ID, last.CreatedAt, last.Tenant
			}
			if !cmp.Equal(all, visible) {
				t.Errorf("pages of %d (%+v) listed %q, want %q", size, opt, all, visible)
			}
		}
	}
}
