package postgres

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/jackc/pgx/v5"

	"github.com/agentrt/agentrt/internal/pgtest"
	"github.com/agentrt/agentrt/session"
)

// The queries of the request and lease indexes can go through their
// indexes: with sequential scans priced out, Postgres plans none of them
// on a whole table. (On tables this small it would rightly read the
// table; the test asks whether it has a choice.)
func TestIndexQueryPlans(t *testing.T) {
	ctx := t.Context()
	dsn, _ := pgtest.Schema(t)
	st, err := Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `SET enable_seqscan = off`); err != nil {
		t.Fatal(err)
	}
	type query struct {
		name, index, sql string
		args             []any
	}
	var qs []query
	cursor := session.RequestCursor{Asked: time.Now(), SessionID: "s1", Seq: 3}
	for _, o := range []session.RequestListOptions{{}, {SessionID: "s1"}, {Agent: "a"}, {Kind: session.RequestPrompt}, {After: cursor},
		{SessionID: "s1", Agent: "a", Kind: session.RequestApproval, After: cursor, Limit: 5}} {
		q, args := pendingRequestsQuery("acme", o)
		// A session's requests are a range of the key too.
		qs = append(qs, query{fmt.Sprintf("PendingRequests(%+v)", o), "requests_asked|requests_pkey", q, args})
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
		rows, err := conn.Query(ctx, `EXPLAIN `+q.sql, append([]any{pgx.QueryExecModeSimpleProtocol}, q.args...)...)
		if err != nil {
			t.Fatalf("EXPLAIN %s: %v", q.name, err)
		}
		var lines []string
		for rows.Next() {
			var line string
			if err := rows.Scan(&line); err != nil {
				t.Fatal(err)
			}
			lines = append(lines, line)
		}
		if err := rows.Err(); err != nil {
			t.Fatalf("EXPLAIN %s: %v", q.name, err)
		}
		plan := strings.Join(lines, "\n")
		if !slices.ContainsFunc(strings.Split(q.index, "|"), func(index string) bool {
			return strings.Contains(plan, " using "+index+" on ") || strings.Contains(plan, "Bitmap Index Scan on "+index)
		}) {
			t.Errorf("%s does not go through %s:\n%s", q.name, q.index, plan)
		}
		// Through the index, a range of it: not the whole index either.
		if strings.Contains(plan, "Seq Scan") || !strings.Contains(plan, "Index Cond") {
			t.Errorf("%s reads a whole table or index:\n%s", q.name, plan)
		}
	}
}

// A database of schema version 3 (before the request index) opens, and
// its index holds the requests pending in the sessions a run goes on in
// (waiting, running), from their logs — legacy approval events included —
// but not those of a session that ended.
func TestMigrateFromVersion3Requests(t *testing.T) {
	ctx := t.Context()
	dsn, _ := pgtest.Schema(t)
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	stmts := []string{
		`CREATE TABLE schema_version (id int NOT NULL PRIMARY KEY CHECK (id = 1), version int NOT NULL)`,
		`INSERT INTO schema_version (id, version) VALUES (1, 3)`,
	}
	for _, m := range migrations[:3] {
		stmts = append(stmts, m...)
	}
	stmts = append(stmts, `INSERT INTO sessions (tenant, id, agent, status, turn, usage, last_seq, created_at, updated_at) VALUES
		('default', 'waits', 'assistant', 'waiting', 1, '{}', 5, 1, 1),
		('acme', 'runs', 'helper', 'running', 1, '{}', 2, 2, 2),
		('default', 'ended', 'assistant', 'done', 1, '{}', 1, 3, 3)`)
	for _, s := range stmts {
		if _, err := conn.Exec(ctx, s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	calls := `[{"id":"call_1","name":"deploy","arguments":{"env":"prod"}}]`
	for _, e := range []struct {
		tenant, id string
		seq        int
		typ, data  string
	}{
		{"default", "waits", 1, "run_started", `{"input":"deploy"}`},
		{"default", "waits", 2, "input_required", `{"request_id":"r1","kind":"approval","question":"Deploy?","calls":` + calls + `,"expires":"2026-01-01T01:00:00Z"}`},
		{"default", "waits", 3, "approval_required", `{"request_id":"r2","question":"Old style?","calls":` + calls + `}`},
		{"default", "waits", 4, "input_required", `{"request_id":"r3","kind":"prompt","question":"Why?"}`},
		{"default", "waits", 5, "approval_resolved", `{"request_id":"r2","decision":"approve"}`},
		{"acme", "runs", 1, "run_started", `{"input":"x"}`},
		{"acme", "runs", 2, "input_required", `{"request_id":"q1","kind":"prompt","question":"Name?"}`},
		{"default", "ended", 1, "input_required", `{"request_id":"z","kind":"prompt","question":"Never answered"}`},
	} {
		line := fmt.Sprintf(`{"v":1,"seq":%d,"session_id":%q,"turn":1,"type":%q,"time":"2026-01-01T00:00:%02dZ","agent":"assistant","data":%s}`, e.seq, e.id, e.typ, e.seq, e.data)
		if _, err := conn.Exec(ctx, `INSERT INTO events (tenant, session_id, seq, type, time, json) VALUES ($1, $2, $3, $4, 0, $5)`,
			e.tenant, e.id, e.seq, e.typ, line); err != nil {
			t.Fatal(err)
		}
	}
	conn.Close(ctx)

	st, err := Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var version int
	if err := st.pool.QueryRow(ctx, `SELECT version FROM schema_version`).Scan(&version); err != nil || version < 4 || version != len(migrations) {
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
	if err != nil || len(acme) != 1 || acme[0].Request.RequestID != "q1" {
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
