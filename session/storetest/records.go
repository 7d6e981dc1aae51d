package storetest

import (
	"encoding/json"
	"errors"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/session"
)

// recordsCase is a case of the Records section: a store that implements
// session.Records, with session s1 created.
type recordsCase func(t *testing.T, s session.Store, r session.Records)

// runRecords checks session.Records. Beyond the doc comments, it pins
// down: Data comes back byte for byte; an unknown session has no
// records (not an error).
func runRecords(t *testing.T, newStore Factory) {
	cases := []struct {
		name string
		fn   recordsCase
	}{
		{"Create", testRecordCreate},
		{"ReplaceAtVersion", testRecordReplace},
		{"Upsert", testRecordUpsert},
		{"NotFound", testRecordNotFound},
		{"Order", testRecordOrder},
		{"DeletedWithSession", testRecordsDeletedWithSession},
		{"Tenants", testRecordTenants},
		{"ConcurrentReplace", testRecordConcurrentReplace},
	}
	for _, cs := range cases {
		t.Run(cs.name, func(t *testing.T) {
			t.Parallel()
			s := newStore(t, NewClock(base).Now)
			r, ok := s.(session.Records)
			if !ok {
				t.Skip("the store does not implement session.Records")
			}
			create(t, s, newSession("s1", at(0)))
			cs.fn(t, s, r)
		})
	}
}

// rec is a record of session s1 with data d.
func rec(kind, key, id, d string, version int64) *session.Record {
	return &session.Record{SessionID: "s1", Kind: kind, Key: key, ID: id, Data: json.RawMessage(d), Version: version}
}

func put(t *testing.T, r session.Records, rc *session.Record) int64 {
	t.Helper()
	v, err := r.PutRecord(t.Context(), rc)
	if err != nil {
		t.Fatalf("PutRecord(%s/%s/%s at %d): %v", rc.Kind, rc.Key, rc.ID, rc.Version, err)
	}
	return v
}

func sessionRecords(t *testing.T, r session.Records, id, kind, key string) []session.Record {
	t.Helper()
	got, err := r.SessionRecords(t.Context(), id, kind, key)
	if err != nil {
		t.Fatalf("SessionRecords(%s, %s, %q): %v", id, kind, key, err)
	}
	return got
}

func testRecordCreate(t *testing.T, s session.Store, r session.Records) {
	if v := put(t, r, rec("k", "task1", "c1", `{"url": "https://example.com/hook"}`, 0)); v != 1 {
		t.Errorf("created at version %d, want 1", v)
	}
	if _, err := r.PutRecord(t.Context(), rec("k", "task1", "c1", `{}`, 0)); !errors.Is(err, session.ErrExists) {
		t.Errorf("creating it again: %v, want ErrExists", err)
	}
	want := []session.Record{{Tenant: session.DefaultTenant, SessionID: "s1", Kind: "k", Key: "task1", ID: "c1",
		Data: json.RawMessage(`{"url": "https://example.com/hook"}`), Version: 1}}
	if diff := cmp.Diff(want, sessionRecords(t, r, "s1", "k", "task1")); diff != "" {
		t.Errorf("the record (-want +got):\n%s", diff)
	}
	if _, err := r.PutRecord(t.Context(), rec("k", "task1", "c2", `not json`, 0)); err == nil {
		t.Error("a record whose data is not JSON was stored")
	}
}

func testRecordReplace(t *testing.T, s session.Store, r session.Records) {
	put(t, r, rec("k", "t", "", `{"n":1}`, 0))
	if v := put(t, r, rec("k", "t", "", `{"n":2}`, 1)); v != 2 {
		t.Errorf("replaced at version %d, want 2", v)
	}
	if _, err := r.PutRecord(t.Context(), rec("k", "t", "", `{"n":3}`, 1)); !errors.Is(err, session.ErrConflict) {
		t.Errorf("replacing from a stale version: %v, want ErrConflict", err)
	}
	got := sessionRecords(t, r, "s1", "k", "t")
	if len(got) != 1 || string(got[0].Data) != `{"n":2}` || got[0].Version != 2 {
		t.Errorf("after the refused write: %+v, want version 2 with n 2", got)
	}
}

func testRecordUpsert(t *testing.T, s session.Store, r session.Records) {
	if v := put(t, r, rec("k", "t", "a", `1`, -1)); v != 1 {
		t.Errorf("upsert of a new record: version %d, want 1", v)
	}
	if v := put(t, r, rec("k", "t", "a", `2`, -1)); v != 2 {
		t.Errorf("upsert of a record: version %d, want 2", v)
	}
	if got := sessionRecords(t, r, "s1", "k", "t"); len(got) != 1 || string(got[0].Data) != `2` {
		t.Errorf("after the upserts: %+v", got)
	}
}

func testRecordNotFound(t *testing.T, s session.Store, r session.Records) {
	if _, err := r.PutRecord(t.Context(), rec("k", "t", "a", `1`, 3)); !errors.Is(err, session.ErrNotFound) {
		t.Errorf("replacing a record that does not exist: %v, want ErrNotFound", err)
	}
	nope := rec("k", "t", "a", `1`, 0)
	nope.SessionID = "nope"
	if _, err := r.PutRecord(t.Context(), nope); !errors.Is(err, session.ErrNotFound) {
		t.Errorf("a record of an unknown session: %v, want ErrNotFound", err)
	}
	if err := r.DeleteRecord(t.Context(), "s1", "k", "t", "a"); !errors.Is(err, session.ErrNotFound) {
		t.Errorf("deleting a record that does not exist: %v, want ErrNotFound", err)
	}
	if got, err := r.SessionRecords(t.Context(), "nope", "k", ""); err != nil || len(got) != 0 {
		t.Errorf("the records of an unknown session: %v %v, want none", got, err)
	}
}

func testRecordOrder(t *testing.T, s session.Store, r session.Records) {
	for _, k := range [][2]string{{"t2", "b"}, {"t1", "b"}, {"t2", "a"}, {"t1", "a"}} {
		put(t, r, rec("k", k[0], k[1], `{}`, 0))
	}
	put(t, r, rec("other", "t1", "a", `{}`, 0))
	var got []string
	for _, x := range sessionRecords(t, r, "s1", "k", "") {
		got = append(got, x.Key+"/"+x.ID)
	}
	if diff := cmp.Diff([]string{"t1/a", "t1/b", "t2/a", "t2/b"}, got); diff != "" {
		t.Errorf("records of kind k, every key (-want +got):\n%s", diff)
	}
	got = nil
	for _, x := range sessionRecords(t, r, "s1", "k", "t2") {
		got = append(got, x.Key+"/"+x.ID)
	}
	if diff := cmp.Diff([]string{"t2/a", "t2/b"}, got); diff != "" {
		t.Errorf("records of kind k, key t2 (-want +got):\n%s", diff)
	}
	if err := r.DeleteRecord(t.Context(), "s1", "k", "t1", "b"); err != nil {
		t.Fatal(err)
	}
	if got := sessionRecords(t, r, "s1", "k", "t1"); len(got) != 1 || got[0].ID != "a" {
		t.Errorf("after deleting t1/b: %+v", got)
	}
}

func testRecordsDeletedWithSession(t *testing.T, s session.Store, r session.Records) {
	put(t, r, rec("k", "t", "a", `{}`, 0))
	if err := s.DeleteSession(t.Context(), "s1"); err != nil {
		t.Fatal(err)
	}
	create(t, s, newSession("s1", at(1)))
	if got := sessionRecords(t, r, "s1", "k", ""); len(got) != 0 {
		t.Errorf("a session made again with the id of a deleted one has its records: %+v", got)
	}
	if got, err := r.KindRecords(t.Context(), "k", 0); err != nil || len(got) != 0 {
		t.Errorf("KindRecords after the session was deleted: %+v %v", got, err)
	}
}

func testRecordTenants(t *testing.T, s session.Store, r session.Records) {
	a := session.WithTenant(t.Context(), "acme")
	b := session.WithTenant(t.Context(), "globex")
	createIn(t, a, s, "s1", at(0))
	createIn(t, b, s, "s1", at(0))
	if _, err := r.PutRecord(a, rec("k", "t", "x", `"acme"`, 0)); err != nil {
		t.Fatal(err)
	}
	if _, err := r.PutRecord(b, rec("k", "t", "x", `"globex"`, 0)); err != nil {
		t.Fatal(err)
	}
	if got, err := r.SessionRecords(b, "s1", "k", ""); err != nil || len(got) != 1 || string(got[0].Data) != `"globex"` || got[0].Tenant != "globex" {
		t.Errorf("globex's records: %+v %v, want its own only", got, err)
	}
	if err := r.DeleteRecord(a, "s1", "k", "t", "x"); err != nil {
		t.Fatal(err)
	}
	if got, err := r.SessionRecords(b, "s1", "k", ""); err != nil || len(got) != 1 {
		t.Errorf("globex's records after acme deleted its own: %+v %v", got, err)
	}
	put(t, r, rec("k", "t", "x", `"default"`, 0))
	var tenants []string
	all, err := r.KindRecords(t.Context(), "k", 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range all {
		tenants = append(tenants, x.Tenant)
	}
	if diff := cmp.Diff([]string{session.DefaultTenant, "globex"}, tenants); diff != "" {
		t.Errorf("KindRecords across tenants (-want +got):\n%s", diff)
	}
	if one, err := r.KindRecords(t.Context(), "k", 1); err != nil || len(one) != 1 || one[0].Tenant != session.DefaultTenant {
		t.Errorf("KindRecords with limit 1: %+v %v", one, err)
	}
}

func testRecordConcurrentReplace(t *testing.T, s session.Store, r session.Records) {
	put(t, r, rec("k", "t", "", `0`, 0))
	const n = 8
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			_, errs[i] = r.PutRecord(t.Context(), rec("k", "t", "", `1`, 1))
		})
	}
	wg.Wait()
	won := 0
	for _, err := range errs {
		switch {
		case err == nil:
			won++
		case !errors.Is(err, session.ErrConflict):
			t.Errorf("a losing writer: %v, want ErrConflict", err)
		}
	}
	if won != 1 {
		t.Errorf("%d writers replaced version 1; want exactly one", won)
	}
}
