package sqlite

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/agentrt/agentrt/session"
)

// explain returns SQLite's plan of query, a step a line.
func explain(t *testing.T, st *Store, query string, args ...any) string {
	t.Helper()
	rows, err := st.r.QueryContext(t.Context(), `EXPLAIN QUERY PLAN `+query, args...)
	if err != nil {
		t.Fatalf("EXPLAIN QUERY PLAN %s: %v", query, err)
	}
	defer rows.Close()
	var lines []string
	for rows.Next() {
		var (
			id, parent, notused int
			detail              string
		)
		if err := rows.Scan(&id, &parent, &notused, &detail); err != nil {
			t.Fatal(err)
		}
		lines = append(lines, detail)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return strings.Join(lines, "\n")
}

// The queries of the request and lease indexes search their indexes:
// none reads the whole requests or sessions table.
func TestIndexQueryPlans(t *testing.T) {
	st, err := Open(t.Context(), filepath.Join(t.TempDir(), "agentrt.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	type query struct {
		name, index, sql string
		args             []any
	}
	var qs []query
	cursor := session.RequestCursor{Asked: time.Now(), SessionID: "s1", Seq: 3}
	for _, o := range []session.RequestListOptions{{}, {SessionID: "s1"}, {Agent: "a"}, {Kind: session.RequestPrompt}, {After: cursor},
		{SessionID: "s1", Agent: "a", Kind: session.RequestApproval, After: cursor, Limit: 5}} {
		q, args := pendingRequestsQuery("acme", o)
		qs = append(qs, query{fmt.Sprintf("PendingRequests(%+v)", o), "requests_asked", q, args})
	}
	expires := time.Now()
	for _, after := range []*session.PendingRequest{nil, {Tenant: "acme", SessionID: "s1", Seq: 3, Request: session.InputRequired{Expires: &expires}}} {
		q, args, err := expiredRequestsQuery(time.Now(), after, 10)
		if err != nil {
			t.Fatal(err)
		}
		qs = append(qs, query{fmt.Sprintf("ExpiredRequests(after %v)", after != nil), "requests_expires", q, args})
	}
	for _, after := range []*session.Session{nil, {Tenant: "acme", ID: "s1", Lease: &session.Lease{Owner: "h:1:x", Expires: time.Now()}}} {
		q, args := expiredLeasesQuery(time.Now(), after, 10)
		qs = append(qs, query{fmt.Sprintf("ExpiredLeases(after %v)", after != nil), "sessions_leases", q, args})
		q, args = leasedToQuery("h:1:x", after, 10)
		qs = append(qs, query{fmt.Sprintf("LeasedTo(after %v)", after != nil), "sessions_owners", q, args})
	}
	for _, prefix := range []string{"h:", "\U0010FFFF"} { // the second has no upper bound
		q, args := leaseOwnersQuery(prefix)
		qs = append(qs, query{fmt.Sprintf("LeaseOwners(%q)", prefix), "sessions_owners", q, args})
	}
	for _, q := range qs {
		plan := explain(t, st, q.sql, q.args...)
		searches := false
		for _, table := range []string{"requests", "sessions"} {
			for _, how := range []string{"INDEX ", "COVERING INDEX "} {
				searches = searches || strings.Contains(plan, "SEARCH "+table+" USING "+how+q.index+" (")
			}
		}
		if !searches {
			t.Errorf("%s does not search %s:\n%s", q.name, q.index, plan)
		}
		if strings.Contains(plan, "SCAN requests") || strings.Contains(plan, "SCAN sessions") {
			t.Errorf("%s scans a table:\n%s", q.name, plan)
		}
	}
}

// oldEvent is an event's line as a build of an older schema wrote it.
func oldEvent(id string, seq int, typ, data string) string {
	return fmt.Sprintf(`{"v":1,"seq":%d,"session_id":%q,"turn":1,"type":%q,"time":"2026-01-01T00:00:%02dZ","agent":"assistant","data":%s}`, seq, id, typ, seq, data)
}

// A database of schema version 7 (before the request index) opens, and
// its index holds the requests pending in the sessions a run goes on in
// (waiting, running), from their logs — legacy approval events included —
// but not those of a session that ended.
func TestMigrateFromVersion7Requests(t *testing.T) {
	ctx := t.Context()
	calls := `[{"id":"call_1","name":"deploy","arguments":{"env":"prod"}}]`
	// A row of events of the log numbered log, the last of seq last.
	row := func(log, last int, lines ...string) string {
		return fmt.Sprintf(`INSERT INTO events (key, n, json) VALUES ((%d << 32) | %d, %d, '%s')`, log, last, len(lines), strings.Join(lines, "\n"))
	}
	path := oldDatabase(t, 7,
		`INSERT INTO sessions (tenant, id, agent, status, turn, usage, last_seq, created_at, updated_at, log) VALUES
			('default', 'waits', 'assistant', 'waiting', 1, '{}', 5, 1, 1, 1),
			('acme', 'runs', 'helper', 'running', 1, '{}', 2, 2, 2, 2),
			('default', 'ended', 'assistant', 'done', 1, '{}', 1, 3, 3, 3)`,
		`UPDATE logs SET next = 4`,
		// Two rows, as two commits wrote them.
		row(1, 3,
			oldEvent("waits", 1, "run_started", `{"input":"deploy"}`),
			oldEvent("waits", 2, "input_required", `{"request_id":"r1","kind":"approval","question":"Deploy?","calls":`+calls+`,"expires":"2026-01-01T01:00:00Z"}`),
			oldEvent("waits", 3, "approval_required", `{"request_id":"r2","question":"Old style?","calls":`+calls+`}`)),
		row(1, 5,
			oldEvent("waits", 4, "input_required", `{"request_id":"r3","kind":"prompt","question":"Why?"}`),
			oldEvent("waits", 5, "approval_resolved", `{"request_id":"r2","decision":"approve"}`)),
		row(2, 2, oldEvent("runs", 1, "run_started", `{"input":"x"}`), oldEvent("runs", 2, "input_required", `{"request_id":"q1","kind":"prompt","question":"Name?"}`)),
		row(3, 1, oldEvent("ended", 1, "input_required", `{"request_id":"z","kind":"prompt","question":"Never answered"}`)),
	)
	st, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var version int
	if err := st.w.QueryRowContext(ctx, `SELECT version FROM schema_version`).Scan(&version); err != nil || version < 8 || version != len(migrations) {
		t.Fatalf("schema version %d (%v), want %d", version, err, len(migrations))
	}
	var evs []*session.Event
	for ev, err := range st.Events(ctx, "waits", 0) {
		if err != nil {
			t.Fatal(err)
		}
		evs = append(evs, ev)
	}
	want := []session.PendingRequest{
		{Tenant: session.DefaultTenant, SessionID: "waits", Agent: "assistant", Seq: 2, Asked: evs[1].Time, Request: *evs[1].Data.(*session.InputRequired)},
		{Tenant: session.DefaultTenant, SessionID: "waits", Agent: "assistant", Seq: 4, Asked: evs[3].Time, Request: *evs[3].Data.(*session.InputRequired)},
	}
	got, err := st.PendingRequests(ctx, session.RequestListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("default's pending requests after the migration (-want +got):\n%s", diff)
	}
	acme, err := st.PendingRequests(session.WithTenant(ctx, "acme"), session.RequestListOptions{})
	if err != nil || len(acme) != 1 || acme[0].Request.RequestID != "q1" || acme[0].Agent != "assistant" {
		t.Errorf("acme's pending requests after the migration: %+v, %v", acme, err)
	}
	expired, err := st.ExpiredRequests(ctx, time.Date(2026, 1, 1, 1, 0, 0, 0, time.UTC), nil, 0)
	if err != nil || len(expired) != 1 || expired[0].Request.RequestID != "r1" {
		t.Errorf("expired requests after the migration: %+v, %v", expired, err)
	}
	// The index goes on from there: an answer takes r1 out.
	ans := &session.Event{V: 1, Seq: 6, SessionID: "waits", Type: session.TypeInputResolved, Time: time.Now().UTC(),
		Data: &session.InputResolved{RequestID: "r1", Decision: session.DecisionReject}}
	if err := st.Commit(ctx, &session.Commit{SessionID: "waits", ExpectSeq: 5, Events: []*session.Event{ans}, Status: session.StatusWaiting, Turn: 1}); err != nil {
		t.Fatal(err)
	}
	if got, err := st.PendingRequests(ctx, session.RequestListOptions{}); err != nil || len(got) != 1 || got[0].Request.RequestID != "r3" {
		t.Errorf("pending after r1's answer: %+v, %v", got, err)
	}
}
