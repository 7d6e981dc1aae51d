package memstore_test

import (
	"errors"
	"testing"
	"time"

	"github.com/agentrt/agentrt/session"
	"github.com/agentrt/agentrt/session/memstore"
	"github.com/agentrt/agentrt/session/storetest"
)

// A store wrapped by Faulty with no fault armed passes the suite, every
// capability it keeps included.
func TestFaultyConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T, now func() time.Time) session.Store {
		return storetest.Faulty(memstore.New(memstore.WithClock(now)), &storetest.Faults{})
	})
}

// inboxOnly has a store's inbox and none of its other capabilities.
type inboxOnly struct {
	session.Store
	session.Inbox
}

// Faulty keeps a store's inbox, and fails its writes (Submit, Refuse),
// its reads and commits with answers as it is told, storing nothing.
func TestFaultyInbox(t *testing.T) {
	var f storetest.Faults
	m := memstore.New()
	s := storetest.Faulty(m, &f)
	b, ok := s.(session.Inbox)
	if !ok {
		t.Fatal("Faulty(memstore) is not an Inbox")
	}
	if _, ok := storetest.Faulty(plain{m}, &f).(session.Inbox); ok {
		t.Error("Faulty of a store without an inbox is an Inbox")
	}
	only := storetest.Faulty(inboxOnly{m, m}, &f)
	if _, ok := only.(session.Inbox); !ok {
		t.Error("Faulty of a store with an inbox only is not an Inbox")
	}
	if _, ok := only.(session.Leaser); ok {
		t.Error("Faulty of a store with an inbox only is a Leaser")
	}

	ctx := t.Context()
	in := func(id string) *session.InboxInput {
		return &session.InboxInput{ID: id, Source: "src", SessionID: "s1", Parts: []session.InputPart{{Type: "text", Text: id}}}
	}
	f.FailInboxWrite(2, false)
	if _, _, err := b.Submit(ctx, in("in1")); err != nil {
		t.Fatal(err)
	}
	if _, _, err := b.Submit(ctx, in("in2")); !errors.Is(err, storetest.ErrInjected) {
		t.Errorf("second Submit: %v, want injected", err)
	}
	if err := b.Refuse(ctx, []string{"nothing"}, "x"); err != nil {
		t.Errorf("Refuse after the fault: %v", err)
	}
	if got := f.InboxWrites(); got != 3 {
		t.Errorf("InboxWrites() = %d, want 3", got)
	}
	f.FailInboxWrite(1, false)
	if err := b.Refuse(ctx, []string{"in1"}, "x"); !errors.Is(err, storetest.ErrInjected) {
		t.Errorf("Refuse: %v, want injected", err)
	}
	f.FailRead(1, true)
	if _, err := b.Pending(ctx, "src", 0); !errors.Is(err, storetest.ErrInjected) {
		t.Errorf("Pending: %v, want injected", err)
	}
	if _, err := b.Inputs(ctx, "src", 0, 0); !errors.Is(err, storetest.ErrInjected) {
		t.Errorf("Inputs: %v, want injected", err)
	}
	if _, err := b.PendingSources(ctx, 0); !errors.Is(err, storetest.ErrInjected) {
		t.Errorf("PendingSources: %v, want injected", err)
	}
	f.FailRead(0, false)

	if err := s.CreateSession(ctx, &session.Session{ID: "s1"}); err != nil {
		t.Fatal(err)
	}
	f.FailCommit(1, false)
	c := &session.Commit{SessionID: "s1", Answers: []string{"in1"}, RunID: "run-1"}
	if err := s.Commit(ctx, c); !errors.Is(err, storetest.ErrInjected) {
		t.Errorf("Commit: %v, want injected", err)
	}
	pending, err := b.Pending(ctx, "src", 0)
	if err != nil || len(pending) != 1 || pending[0].ID != "in1" {
		t.Fatalf("Pending after the failed calls: %+v, %v; want in1 only, pending", pending, err)
	}
	if err := s.Commit(ctx, c); err != nil {
		t.Fatal(err)
	}
	if got, err := b.Pending(ctx, "src", 0); err != nil || len(got) != 0 {
		t.Errorf("Pending after the commit: %+v, %v", got, err)
	}
	if got := f.Failed(); got != 6 { // Submit, Refuse, three reads, Commit
		t.Errorf("Failed() = %d, want 6", got)
	}
}

// requestsOnly has a store's request index and none of its other
// capabilities.
type requestsOnly struct {
	session.Store
	session.RequestIndex
}

// Faulty keeps a store's two indexes, together, and fails their queries
// as reads.
func TestFaultyIndexes(t *testing.T) {
	var f storetest.Faults
	m := memstore.New()
	s := storetest.Faulty(m, &f)
	ri, ok := s.(session.RequestIndex)
	li, ok2 := s.(session.LeaseIndex)
	if !ok || !ok2 {
		t.Fatalf("Faulty(memstore) is a RequestIndex: %v, a LeaseIndex: %v", ok, ok2)
	}
	for name, st := range map[string]session.Store{"plain": plain{m}, "requests only": requestsOnly{m, m}} {
		fs := storetest.Faulty(st, &f)
		_, isR := fs.(session.RequestIndex)
		_, isL := fs.(session.LeaseIndex)
		if isR || isL {
			t.Errorf("Faulty of a store with %s: a RequestIndex %v, a LeaseIndex %v; want neither", name, isR, isL)
		}
	}
	if _, ok := storetest.Faulty(struct {
		session.Store
		session.RequestIndex
		session.LeaseIndex
	}{m, m, m}, &f).(session.Leaser); ok {
		t.Error("Faulty of a store with the indexes only is a Leaser")
	}

	ctx := t.Context()
	f.FailRead(1, true)
	if _, err := ri.PendingRequests(ctx, session.RequestListOptions{}); !errors.Is(err, storetest.ErrInjected) {
		t.Errorf("PendingRequests: %v, want injected", err)
	}
	if _, err := ri.ExpiredRequests(ctx, time.Now(), nil, 0); !errors.Is(err, storetest.ErrInjected) {
		t.Errorf("ExpiredRequests: %v, want injected", err)
	}
	if _, err := li.ExpiredLeases(ctx, nil, 0); !errors.Is(err, storetest.ErrInjected) {
		t.Errorf("ExpiredLeases: %v, want injected", err)
	}
	if _, err := li.LeaseOwners(ctx, "h:"); !errors.Is(err, storetest.ErrInjected) {
		t.Errorf("LeaseOwners: %v, want injected", err)
	}
	if _, err := li.LeasedTo(ctx, "h:1:x", nil, 0); !errors.Is(err, storetest.ErrInjected) {
		t.Errorf("LeasedTo: %v, want injected", err)
	}
	f.FailRead(0, false)
	if got, err := ri.PendingRequests(ctx, session.RequestListOptions{}); err != nil || len(got) != 0 {
		t.Errorf("PendingRequests once disarmed: %+v, %v", got, err)
	}
	if got := f.Failed(); got != 5 {
		t.Errorf("Failed() = %d, want 5", got)
	}
}

// Faulty keeps a store's records when it has every capability, fails
// their writes and reads as it is told, storing nothing, and has none
// for a store with an inbox only.
func TestFaultyRecords(t *testing.T) {
	var f storetest.Faults
	m := memstore.New()
	r, ok := storetest.Faulty(m, &f).(session.Records)
	if !ok {
		t.Fatal("Faulty(memstore) keeps no records")
	}
	if _, ok := storetest.Faulty(inboxOnly{m, m}, &f).(session.Records); ok {
		t.Error("Faulty of a store with an inbox only keeps records")
	}
	ctx := t.Context()
	if err := m.CreateSession(ctx, &session.Session{ID: "s1", Agent: "a", Status: session.StatusIdle}); err != nil {
		t.Fatal(err)
	}
	f.FailRecordWrite(1, false)
	if _, err := r.PutRecord(ctx, &session.Record{SessionID: "s1", Kind: "k", Data: []byte(`1`)}); !errors.Is(err, storetest.ErrInjected) {
		t.Errorf("PutRecord: %v, want injected", err)
	}
	if _, err := r.PutRecord(ctx, &session.Record{SessionID: "s1", Kind: "k", Data: []byte(`2`)}); err != nil {
		t.Fatal(err)
	}
	f.FailRead(1, false)
	if _, err := r.SessionRecords(ctx, "s1", "k", ""); !errors.Is(err, storetest.ErrInjected) {
		t.Errorf("SessionRecords: %v, want injected", err)
	}
	if got, err := r.SessionRecords(ctx, "s1", "k", ""); err != nil || len(got) != 1 || string(got[0].Data) != `2` {
		t.Errorf("the records: %+v %v; want the second write's only", got, err)
	}
}
