package sqlite

import (
	"database/sql"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentrt/agentrt/session"
)

// A database written by an older build (schema version 1, before leases)
// opens, keeps its sessions and events, and gains leases.
func TestMigrateFromVersion1(t *testing.T) {
	ctx := t.Context()
	path := oldDatabase(t, 1,
		`INSERT INTO sessions (id, agent, status, turn, usage, last_seq, created_at, updated_at, log) VALUES ('old', 'assistant', 'done', 1, '{}', 1, 1, 1, 1)`,
		`UPDATE logs SET next = 2`,
		`INSERT INTO events (key, session_id, seq, type, time, json) VALUES ((1 << 32) | 1, 'old', 1, 'approval_required', 1,
			'{"v":1,"seq":1,"session_id":"old","turn":1,"type":"approval_required","time":"2026-01-01T00:00:00Z","data":{"request_id":"r1","calls":[],"question":"ok?"}}')`,
	)

	st, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	s, err := st.GetSession(ctx, "old")
	if err != nil || s.Status != session.StatusDone || s.Lease != nil {
		t.Fatalf("GetSession after migration: %+v, %v", s, err)
	}
	for e, err := range st.Events(ctx, "old", 0) {
		if err != nil {
			t.Fatal(err)
		}
		if d, ok := e.Data.(*session.InputRequired); !ok || d.Kind != session.RequestApproval {
			t.Errorf("legacy event reads as %T %+v", e.Data, e.Data)
		}
	}
	l, err := st.Acquire(ctx, "old", "me", time.Minute)
	if err != nil || l.Token != 1 {
		t.Fatalf("Acquire after migration: %+v, %v", l, err)
	}
	var version int
	if err := st.w.QueryRowContext(ctx, `SELECT version FROM schema_version`).Scan(&version); err != nil || version != len(migrations) {
		t.Fatalf("schema version %d (%v), want %d", version, err, len(migrations))
	}
}

// The store runs synchronous=NORMAL (a power loss may lose the last
// commits; a process crash loses nothing); a DSN may ask for FULL, which
// wins over the store's default (docs/configuration.md, the cost in
// docs/benchmarks.md).
func TestSynchronous(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	for dsn, want := range map[string]int{
		filepath.Join(dir, "normal.db"):                                1,
		"file:" + filepath.Join(dir, "full.db") + "?_synchronous=FULL": 2,
	} {
		st, err := Open(ctx, dsn)
		if err != nil {
			t.Fatal(err)
		}
		var got int
		if err := st.w.QueryRowContext(ctx, "PRAGMA synchronous").Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("%s: synchronous = %d, want %d", dsn, got, want)
		}
		st.Close()
	}
}

// A database of schema version 3 (events keyed by log<<32 | seq) opens:
// its events read back in order, each session's own, and new events
// append after them.
func TestMigrateFromVersion3(t *testing.T) {
	ctx := t.Context()
	ev := func(id string, seq int) string {
		return fmt.Sprintf(`{"v":1,"seq":%d,"session_id":%q,"turn":1,"type":"final","time":"2026-01-01T00:00:00Z","data":{"text":"%s %d"}}`, seq, id, id, seq)
	}
	path := oldDatabase(t, 3,
		`INSERT INTO sessions (tenant, id, agent, status, turn, usage, last_seq, created_at, updated_at, log)
			VALUES ('default', 'a', 'x', 'done', 1, '{}', 2, 1, 1, 1), ('default', 'b', 'x', 'done', 1, '{}', 2, 2, 2, 2)`,
		`UPDATE logs SET next = 3`,
		// Written interleaved, as two sessions running at once did.
		fmt.Sprintf(`INSERT INTO events (key, session_id, seq, type, time, json) VALUES
			((2 << 32) | 1, 'b', 1, 'final', 1, '%s'), ((1 << 32) | 1, 'a', 1, 'final', 1, '%s'),
			((1 << 32) | 2, 'a', 2, 'final', 1, '%s'), ((2 << 32) | 2, 'b', 2, 'final', 1, '%s')`,
			ev("b", 1), ev("a", 1), ev("a", 2), ev("b", 2)),
	)

	st, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	read := func(id string) []string {
		var out []string
		for e, err := range st.Events(ctx, id, 0) {
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, fmt.Sprint(e.Seq, " ", e.Data.(*session.Final).Text))
		}
		return out
	}
	if got, want := fmt.Sprint(read("a"), read("b")), "[1 a 1 2 a 2] [1 b 1 2 b 2]"; got != want {
		t.Fatalf("events after migration: %s, want %s", got, want)
	}
	if err := st.Commit(ctx, &session.Commit{SessionID: "a", ExpectSeq: 2, Status: session.StatusDone,
		Events: []*session.Event{event("a", 3)}}); err != nil {
		t.Fatal(err)
	}
	// A seq stays unique: the index refuses a second row ending at event
	// 3 of a.
	if _, err := st.w.ExecContext(ctx, `INSERT INTO events (key, n, json) VALUES ((1 << 32) | 3, 1, '{}')`); err == nil || !strings.Contains(err.Error(), "UNIQUE") {
		t.Errorf("a duplicate key: %v", err)
	}
	if got := read("a"); len(got) != 3 || got[2] != "3 answer 3" {
		t.Errorf("events of a after a new commit: %v", got)
	}
}

// A database of schema version 4 (an event a row) opens: its events read
// back, from any seq, and a commit's events after them go in a row of
// their own.
func TestMigrateFromVersion4(t *testing.T) {
	ctx := t.Context()
	ev := func(id string, seq int) string {
		return fmt.Sprintf(`{"v":1,"seq":%d,"session_id":%q,"turn":1,"type":"final","time":"2026-01-01T00:00:00Z","data":{"text":"%s %d"}}`, seq, id, id, seq)
	}
	path := oldDatabase(t, 4,
		`INSERT INTO sessions (tenant, id, agent, status, turn, usage, last_seq, created_at, updated_at, log)
			VALUES ('default', 'a', 'x', 'done', 1, '{}', 2, 1, 1, 1), ('default', 'b', 'x', 'done', 1, '{}', 1, 2, 2, 2)`,
		`UPDATE logs SET next = 3`,
		fmt.Sprintf(`INSERT INTO events (key, session_id, seq, type, time, json) VALUES
			((1 << 32) | 1, 'a', 1, 'final', 1, '%s'), ((2 << 32) | 1, 'b', 1, 'final', 1, '%s'), ((1 << 32) | 2, 'a', 2, 'final', 1, '%s')`,
			ev("a", 1), ev("b", 1), ev("a", 2)),
	)
	st, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	read := func(id string, after int64) string {
		var out []string
		for e, err := range st.Events(ctx, id, after) {
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, fmt.Sprint(e.Seq, " ", e.Data.(*session.Final).Text))
		}
		return strings.Join(out, ", ")
	}
	if got, want := read("a", 0)+"; "+read("b", 0), "1 a 1, 2 a 2; 1 b 1"; got != want {
		t.Fatalf("events after migration: %s, want %s", got, want)
	}
	if err := st.Commit(ctx, &session.Commit{SessionID: "a", ExpectSeq: 2, Status: session.StatusDone,
		Events: []*session.Event{event("a", 3), event("a", 4)}}); err != nil {
		t.Fatal(err)
	}
	for after, want := range map[int64]string{
		0: "1 a 1, 2 a 2, 3 answer 3, 4 answer 4",
		2: "3 answer 3, 4 answer 4",
		3: "4 answer 4",
		4: "",
	} {
		if got := read("a", after); got != want {
			t.Errorf("events of a after %d: %s, want %s", after, got, want)
		}
	}
	var rows int
	if err := st.w.QueryRowContext(ctx, `SELECT count(*) FROM events`).Scan(&rows); err != nil || rows != 4 {
		t.Errorf("%d rows (%v), want 4: three from version 4, one for the commit", rows, err)
	}
}

// oldDatabase makes a database of schema version v, as a build of that
// version left it, with rows written by stmts, and returns its path.
func oldDatabase(t *testing.T, v int, stmts ...string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), fmt.Sprintf("v%d.db", v))
	base, err := baseDSN(path, true)
	if err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", base)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	all := []string{
		`CREATE TABLE schema_version (id INTEGER NOT NULL PRIMARY KEY CHECK (id = 1), version INTEGER NOT NULL)`,
		fmt.Sprintf(`INSERT INTO schema_version (id, version) VALUES (1, %d)`, v),
	}
	for _, m := range migrations[:v] {
		all = append(all, m...)
	}
	for _, s := range append(all, stmts...) {
		if _, err := db.ExecContext(t.Context(), s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	return path
}
