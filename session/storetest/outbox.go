package storetest

import (
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/agentrt/agentrt/session"
)

// outboxCase is a case of the Outbox section: a store that implements
// session.Outbox, with sessions s1 and s2 created.
type outboxCase func(t *testing.T, s session.Store, o session.Outbox)

// runOutbox checks session.Outbox and Commit.Outbox. Beyond the doc
// comments, it pins down: an item's Due and Created are its commit's
// Time, to the microsecond; a refused commit owes nothing.
func runOutbox(t *testing.T, newStore Factory) {
	cases := []struct {
		name string
		fn   outboxCase
	}{
		{"CommitWrites", testOutboxCommitWrites},
		{"CommitRefused", testOutboxCommitRefused},
		{"CommitChecked", testOutboxCommitChecked},
		{"CommitWithRequestsAndAnswers", testOutboxWithRequestsAndAnswers},
		{"ClaimInOrder", testOutboxClaimInOrder},
		{"ClaimLapses", testOutboxClaimLapses},
		{"Retry", testOutboxRetry},
		{"GiveUp", testOutboxGiveUp},
		{"Tenants", testOutboxTenants},
		{"Deleted", testOutboxDeleted},
	}
	for _, cs := range cases {
		t.Run(cs.name, func(t *testing.T) {
			t.Parallel()
			s := newStore(t, NewClock(base).Now)
			o, ok := s.(session.Outbox)
			if !ok {
				t.Skip("the store does not implement session.Outbox")
			}
			create(t, s, newSession("s1", at(0)))
			create(t, s, newSession("s2", at(0)))
			cs.fn(t, s, o)
		})
	}
}

// outboxOpts compares items: times with Equal, IDs not at all (a store
// numbers them its way, growing).
var outboxOpts = cmp.Options{cmpopts.IgnoreFields(session.OutboxItem{}, "ID")}

// owe commits n events to session id after seq from, the last of which
// is owed to source.
func owe(t *testing.T, s session.Store, id string, from int64, n int, source string, when time.Time) {
	t.Helper()
	commit(t, s, &session.Commit{SessionID: id, ExpectSeq: from, Events: events(id, from, n), Status: session.StatusRunning, Time: when,
		Outbox: []session.OutboxItem{{SessionID: id, Seq: from + int64(n), Kind: "final", Source: source}}})
}

func outboxOf(t *testing.T, o session.Outbox, id string) []session.OutboxItem {
	t.Helper()
	items, err := o.OutboxOf(t.Context(), id)
	if err != nil {
		t.Fatalf("OutboxOf(%q): %v", id, err)
	}
	return items
}

func claim(t *testing.T, o session.Outbox, owner string, now time.Time, limit int) []session.OutboxItem {
	t.Helper()
	items, err := o.ClaimOutbox(t.Context(), owner, now, now.Add(time.Minute), limit)
	if err != nil {
		t.Fatalf("ClaimOutbox(%s): %v", owner, err)
	}
	return items
}

// itemIDs are the items' session:seq, in order.
func itemIDs(items []session.OutboxItem) []string {
	var out []string
	for _, it := range items {
		out = append(out, it.SessionID+":"+strconv.FormatInt(it.Seq, 10))
	}
	return out
}

func testOutboxCommitWrites(t *testing.T, s session.Store, o session.Outbox) {
	owe(t, s, "s1", 0, 3, "chat:1", at(time.Second))
	owe(t, s, "s1", 3, 2, "chat:1", at(2*time.Second))
	got := outboxOf(t, o, "s1")
	want := []session.OutboxItem{
		{Tenant: session.DefaultTenant, SessionID: "s1", Seq: 3, Kind: "final", Source: "chat:1", State: session.OutboxPending, Due: at(time.Second), Created: at(time.Second)},
		{Tenant: session.DefaultTenant, SessionID: "s1", Seq: 5, Kind: "final", Source: "chat:1", State: session.OutboxPending, Due: at(2 * time.Second), Created: at(2 * time.Second)},
	}
	if diff := cmp.Diff(want, got, outboxOpts); diff != "" {
		t.Errorf("the outbox (-want +got):\n%s", diff)
	}
	if len(got) == 2 && (got[0].ID < 1 || got[1].ID <= got[0].ID) {
		t.Errorf("ids %d, %d: want growing from 1", got[0].ID, got[1].ID)
	}
	if items := outboxOf(t, o, "s2"); len(items) != 0 {
		t.Errorf("s2 owes %v", items)
	}
}

func testOutboxCommitRefused(t *testing.T, s session.Store, o session.Outbox) {
	owe(t, s, "s1", 0, 1, "chat:1", at(time.Second))
	// A stale commit (seq 0 again) is refused, and owes nothing.
	err := s.Commit(t.Context(), &session.Commit{SessionID: "s1", ExpectSeq: 0, Events: events("s1", 0, 1), Status: session.StatusRunning,
		Outbox: []session.OutboxItem{{SessionID: "s1", Seq: 1, Kind: "final", Source: "chat:1"}}})
	if !errors.Is(err, session.ErrConflict) {
		t.Fatalf("a stale commit: %v, want ErrConflict", err)
	}
	if items := outboxOf(t, o, "s1"); len(items) != 1 {
		t.Errorf("after a refused commit the outbox has %d items, want 1", len(items))
	}
}

func testOutboxCommitChecked(t *testing.T, s session.Store, o session.Outbox) {
	for _, it := range []session.OutboxItem{
		{SessionID: "s1", Seq: 3, Kind: "final", Source: "chat:1"}, // not one of the commit's events
		{SessionID: "s1", Seq: 1, Kind: "final"},                   // no source
		{SessionID: "s1", Seq: 1, Source: "chat:1"},                // no kind
	} {
		err := s.Commit(t.Context(), &session.Commit{SessionID: "s1", Events: events("s1", 0, 2), Status: session.StatusRunning,
			Outbox: []session.OutboxItem{it}})
		if err == nil {
			t.Errorf("a commit owing %+v was stored", it)
		}
	}
	if items := outboxOf(t, o, "s1"); len(items) != 0 {
		t.Errorf("refused commits owe %v", items)
	}
}

func testOutboxClaimInOrder(t *testing.T, s session.Store, o session.Outbox) {
	owe(t, s, "s1", 0, 1, "chat:1", at(time.Second))
	owe(t, s, "s2", 0, 1, "chat:2", at(2*time.Second))
	owe(t, s, "s1", 1, 1, "chat:1", at(3*time.Second))
	now := at(time.Minute)
	// Oldest first, a session's oldest pending item only.
	if got := itemIDs(claim(t, o, "a", now, 0)); !cmp.Equal(got, []string{"s1:1", "s2:1"}) {
		t.Fatalf("the first claim: %v", got)
	}
	// Claimed now, they hold their sessions' next back: another owner
	// gets nothing.
	if got := claim(t, o, "b", now, 0); len(got) != 0 {
		t.Fatalf("a claim while the oldest are claimed: %v", itemIDs(got))
	}
	items := outboxOf(t, o, "s1")
	if err := o.SettleOutbox(t.Context(), items[0].ID, "a", session.OutboxSettle{Sent: true, Ref: "m1"}); err != nil {
		t.Fatal(err)
	}
	// s1's next is its oldest pending now; s2's claim has not lapsed.
	owe(t, s, "s1", 2, 1, "chat:1", at(4*time.Second))
	if got := itemIDs(claim(t, o, "b", now, 0)); !cmp.Equal(got, []string{"s1:2"}) {
		t.Errorf("the next claim: %v, want s1's second", got)
	}
	// Once the claims lapsed, a limit of one takes the oldest (s2's),
	// and the next claim s1's second again.
	later := now.Add(2 * time.Minute)
	if got := itemIDs(claim(t, o, "c", later, 1)); !cmp.Equal(got, []string{"s2:1"}) {
		t.Errorf("a claim of one: %v, want s2's (a's claim lapsed)", got)
	}
	if got := itemIDs(claim(t, o, "c", later, 1)); !cmp.Equal(got, []string{"s1:2"}) {
		t.Errorf("the next claim of one: %v, want s1's second again (b's claim lapsed)", got)
	}
	got := outboxOf(t, o, "s1")
	if got[0].State != session.OutboxSent || got[0].Ref != "m1" || got[0].Attempts != 1 || got[1].Attempts != 2 || got[2].Attempts != 0 {
		t.Errorf("s1's items: %+v", got)
	}
}

func testOutboxClaimLapses(t *testing.T, s session.Store, o session.Outbox) {
	owe(t, s, "s1", 0, 1, "chat:1", at(time.Second))
	now := at(time.Minute)
	first := claim(t, o, "a", now, 0)
	if len(first) != 1 || first[0].Attempts != 1 {
		t.Fatalf("the first claim: %+v", first)
	}
	// a stops (its process was killed); its claim lapses; b claims it,
	// knowing a may have sent it.
	second := claim(t, o, "b", now.Add(2*time.Minute), 0)
	if len(second) != 1 || second[0].Attempts != 2 {
		t.Fatalf("the claim after a's lapsed: %+v", second)
	}
	err := o.SettleOutbox(t.Context(), first[0].ID, "a", session.OutboxSettle{Sent: true, Ref: "late"})
	if !errors.Is(err, session.ErrConflict) {
		t.Errorf("a settle by an owner whose claim was taken: %v, want ErrConflict", err)
	}
	if err := o.SettleOutbox(t.Context(), first[0].ID, "b", session.OutboxSettle{Sent: true, Ref: "m1"}); err != nil {
		t.Fatal(err)
	}
	if err := o.SettleOutbox(t.Context(), first[0].ID, "b", session.OutboxSettle{Sent: true, Ref: "m2"}); !errors.Is(err, session.ErrConflict) {
		t.Errorf("a second settle: %v, want ErrConflict", err)
	}
	if got := outboxOf(t, o, "s1"); got[0].State != session.OutboxSent || got[0].Ref != "m1" {
		t.Errorf("the item: %+v", got[0])
	}
	if err := o.SettleOutbox(t.Context(), 1<<40, "b", session.OutboxSettle{Sent: true}); !errors.Is(err, session.ErrConflict) {
		t.Errorf("a settle of no item: %v, want ErrConflict", err)
	}
}

func testOutboxRetry(t *testing.T, s session.Store, o session.Outbox) {
	owe(t, s, "s1", 0, 1, "chat:1", at(time.Second))
	now := at(time.Minute)
	it := claim(t, o, "a", now, 0)[0]
	due := now.Add(30 * time.Second)
	if err := o.SettleOutbox(t.Context(), it.ID, "a", session.OutboxSettle{Error: "429: slow down", Due: due}); err != nil {
		t.Fatal(err)
	}
	if got := claim(t, o, "a", due.Add(-time.Millisecond), 0); len(got) != 0 {
		t.Errorf("claimed before it is due: %+v", got)
	}
	got := claim(t, o, "b", due, 0)
	if len(got) != 1 || got[0].Attempts != 2 || got[0].Error != "429: slow down" || !got[0].Due.Equal(due) {
		t.Errorf("claimed when due: %+v", got)
	}
}

func testOutboxGiveUp(t *testing.T, s session.Store, o session.Outbox) {
	owe(t, s, "s1", 0, 1, "chat:1", at(time.Second))
	owe(t, s, "s1", 1, 1, "chat:1", at(2*time.Second))
	now := at(time.Minute)
	items := claim(t, o, "a", now, 1)
	if err := o.SettleOutbox(t.Context(), items[0].ID, "a", session.OutboxSettle{Error: "403: not in channel", GiveUp: true}); err != nil {
		t.Fatal(err)
	}
	// Given up, it holds its session's next back no more.
	if got := itemIDs(claim(t, o, "a", now, 0)); !cmp.Equal(got, []string{"s1:2"}) {
		t.Errorf("after one was given up: %v", got)
	}
	if got := outboxOf(t, o, "s1"); got[0].State != session.OutboxFailed || got[0].Error != "403: not in channel" {
		t.Errorf("the given-up item: %+v", got[0])
	}
}

func testOutboxTenants(t *testing.T, s session.Store, o session.Outbox) {
	acme := session.WithTenant(t.Context(), "acme")
	createIn(t, acme, s, "s1", at(0))
	if err := s.Commit(acme, &session.Commit{SessionID: "s1", Events: events("s1", 0, 1), Status: session.StatusRunning, Time: at(time.Second),
		Outbox: []session.OutboxItem{{SessionID: "s1", Seq: 1, Kind: "final", Source: "chat:acme"}}}); err != nil {
		t.Fatal(err)
	}
	if items := outboxOf(t, o, "s1"); len(items) != 0 {
		t.Errorf("the default tenant's s1 owes %+v", items)
	}
	items, err := o.OutboxOf(acme, "s1")
	if err != nil || len(items) != 1 || items[0].Tenant != "acme" {
		t.Fatalf("acme's s1: %+v %v", items, err)
	}
	// A claim is of every tenant.
	got := claim(t, o, "a", at(time.Minute), 0)
	if len(got) != 1 || got[0].Tenant != "acme" || got[0].Source != "chat:acme" {
		t.Errorf("the claim: %+v", got)
	}
}

func testOutboxDeleted(t *testing.T, s session.Store, o session.Outbox) {
	owe(t, s, "s1", 0, 1, "chat:1", at(time.Second))
	owe(t, s, "s2", 0, 1, "chat:2", at(time.Second))
	if err := s.DeleteSession(t.Context(), "s1"); err != nil {
		t.Fatal(err)
	}
	if got := itemIDs(claim(t, o, "a", at(time.Minute), 0)); !cmp.Equal(got, []string{"s2:1"}) {
		t.Errorf("after s1 was deleted: %v", got)
	}
}

// A commit that asks a person (its requests indexed) or answers inputs
// owes its messages as any does.
func testOutboxWithRequestsAndAnswers(t *testing.T, s session.Store, o session.Outbox) {
	ask := &session.Event{V: session.SchemaVersion, Seq: 1, SessionID: "s1", RunID: "run-1", Turn: 1, Type: session.TypeInputRequired,
		Time: at(time.Second), Agent: "assistant", Data: approval("r1", nil)}
	commit(t, s, &session.Commit{SessionID: "s1", Events: []*session.Event{ask}, Status: session.StatusWaiting, Time: at(time.Second),
		Outbox: []session.OutboxItem{{SessionID: "s1", Seq: 1, Kind: "input_required", Source: "chat:1"}}})
	want := 1
	if b, ok := s.(session.Inbox); ok {
		in, _, err := b.Submit(t.Context(), textInput("in1", "chat:2", "s2", "hi"))
		if err != nil {
			t.Fatal(err)
		}
		commit(t, s, &session.Commit{SessionID: "s2", Events: events("s2", 0, 2), Status: session.StatusDone, Time: at(2 * time.Second),
			Answers: []string{in.ID}, RunID: "run-1", Outbox: []session.OutboxItem{{SessionID: "s2", Seq: 2, Kind: "final", Source: "chat:2"}}})
		// And both at once.
		in2, _, err := b.Submit(t.Context(), textInput("in2", "chat:1", "s1", "yes"))
		if err != nil {
			t.Fatal(err)
		}
		done := &session.Event{V: session.SchemaVersion, Seq: 2, SessionID: "s1", RunID: "run-2", Turn: 2, Type: session.TypeInputResolved,
			Time: at(3 * time.Second), Agent: "assistant", Data: resolved("r1")}
		commit(t, s, &session.Commit{SessionID: "s1", ExpectSeq: 1, Events: []*session.Event{done}, Status: session.StatusRunning, Time: at(3 * time.Second),
			Answers: []string{in2.ID}, RunID: "run-2", Outbox: []session.OutboxItem{{SessionID: "s1", Seq: 2, Kind: "input_resolved", Source: "chat:1"}}})
		want = 2 // s1's first and s2's; s1's second after its first
		if items := outboxOf(t, o, "s1"); len(items) != 2 || items[1].Kind != "input_resolved" {
			t.Errorf("s1 owes %+v", items)
		}
	}
	got := claim(t, o, "a", at(time.Minute), 0)
	if len(got) != want {
		t.Fatalf("claimed %v, want %d items", itemIDs(got), want)
	}
	if got[0].Kind != "input_required" || got[0].Seq != 1 || got[0].SessionID != "s1" {
		t.Errorf("the first: %+v", got[0])
	}
}
