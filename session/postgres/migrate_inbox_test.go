package postgres

import (
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentrt/agentrt/internal/pgtest"
	"github.com/agentrt/agentrt/session"
)

// A database of schema version 2 (before the inbox), with a session
// leased by a live owner, opens: the session and its lease are kept,
// inputs are stored and answered by a commit of that owner.
func TestMigrateFromVersion2Inbox(t *testing.T) {
	ctx := t.Context()
	dsn, _ := pgtest.Schema(t)
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	stmts := []string{
		`CREATE TABLE schema_version (id int NOT NULL PRIMARY KEY CHECK (id = 1), version int NOT NULL)`,
		`INSERT INTO schema_version (id, version) VALUES (1, 2)`,
	}
	for _, m := range migrations[:2] {
		stmts = append(stmts, m...)
	}
	for _, s := range stmts {
		if _, err := conn.Exec(ctx, s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	if _, err := conn.Exec(ctx, `INSERT INTO sessions (tenant, id, agent, status, turn, usage, last_seq, created_at, updated_at, lease_owner, lease_token, lease_expires)
		VALUES ('default', 'old', 'assistant', 'idle', 1, '{}', 0, 1, 1, 'a', 3, $1)`, time.Now().Add(time.Hour).UnixMicro()); err != nil {
		t.Fatal(err)
	}
	conn.Close(ctx)

	st, err := Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	s, err := st.GetSession(ctx, "old")
	if err != nil || s.Lease == nil || s.Lease.Owner != "a" || s.Lease.Token != 3 {
		t.Fatalf("GetSession after migration: %+v, %v", s, err)
	}
	in, dup, err := st.Submit(ctx, &session.InboxInput{ID: "in1", Source: "cli", SessionID: "old", Key: "k", Digest: "d",
		Parts: []session.InputPart{{Type: "text", Text: "hello"}}})
	if err != nil || dup || in.Seq != 1 {
		t.Fatalf("Submit after migration: %+v, dup %v, %v", in, dup, err)
	}
	if err := st.Commit(ctx, &session.Commit{SessionID: "old", Events: []*session.Event{event("old", 1)}, Status: session.StatusRunning,
		Turn: 1, Fence: 3, Answers: []string{"in1"}, RunID: "run-1"}); err != nil {
		t.Fatalf("Commit answering in1 after migration: %v", err)
	}
	got, err := st.Inputs(ctx, "cli", 0, 0)
	if err != nil || len(got) != 1 || got[0].State != session.InputAnswered || got[0].RunID != "run-1" {
		t.Fatalf("Inputs after the commit: %+v, %v", got, err)
	}
	var version int
	if err := st.pool.QueryRow(ctx, `SELECT version FROM schema_version`).Scan(&version); err != nil || version != len(migrations) {
		t.Fatalf("schema version %d (%v), want %d", version, err, len(migrations))
	}
}

// A database of schema version 4 (before inputs had a size), with
// pending and answered inputs, opens: a pending input counts its stored
// parts (a little over its content, never under), an input stored after
// counts its content.
func TestMigrateFromVersion4InputSize(t *testing.T) {
	ctx := t.Context()
	dsn, _ := pgtest.Schema(t)
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	const parts = `[{"type":"text","text":"hello"}]`
	stmts := []string{
		`CREATE TABLE schema_version (id int NOT NULL PRIMARY KEY CHECK (id = 1), version int NOT NULL)`,
		`INSERT INTO schema_version (id, version) VALUES (1, 4)`,
	}
	for _, m := range migrations[:4] {
		stmts = append(stmts, m...)
	}
	stmts = append(stmts,
		`INSERT INTO inbox (tenant, id, seq, source, session_id, parts, key, digest, at, state) VALUES ('default', 'p1', 1, 'cli', 's', '`+parts+`', '', '', 1, 'pending')`,
		`INSERT INTO inbox (tenant, id, seq, source, session_id, parts, key, digest, at, state, run_id) VALUES ('default', 'a1', 2, 'cli', 's', '`+parts+`', '', '', 1, 'answered', 'run-1')`,
		`UPDATE inbox_counter SET last = 2`,
		`INSERT INTO sessions (tenant, id, agent, status, turn, usage, last_seq, created_at, updated_at, lease_owner, lease_token, lease_expires)
			VALUES ('default', '_claim.released', '', 'idle', 0, '{}', 0, 1, 1, NULL, 4, 0),
			('acme', '_claim.released', '', 'idle', 0, '{}', 0, 1, 1, NULL, 2, 0),
			('default', '_claim.held', '', 'idle', 0, '{}', 0, 1, 1, 'a', 1, 9223372036854775807),
			('default', 'kept', 'assistant', 'idle', 0, '{}', 0, 1, 1, NULL, 0, 0)`)
	for _, s := range stmts {
		if _, err := conn.Exec(ctx, s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	conn.Close(ctx)
	st, err := Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	got, err := st.PendingOf(ctx, "cli")
	if err != nil || got.Pending != 1 || got.Bytes != int64(len(parts)) {
		t.Fatalf("PendingOf after migration: %+v, %v; want 1 input of %d bytes", got, err, len(parts))
	}
	if _, _, err := st.Submit(ctx, &session.InboxInput{ID: "p2", Source: "cli", SessionID: "s",
		Parts: []session.InputPart{{Type: "text", Text: "hi"}}}); err != nil {
		t.Fatal(err)
	}
	if got, err = st.PendingOf(ctx, "cli"); err != nil || got.Pending != 2 || got.Bytes != int64(len(parts)+2) {
		t.Fatalf("PendingOf after a new input: %+v, %v", got, err)
	}
	// The released claims are gone; a held one, and other sessions, stay.
	all, err := st.ListSessions(ctx, session.ListOptions{AllTenants: true})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, s := range all {
		ids = append(ids, s.Tenant+"/"+s.ID)
	}
	if want := []string{"default/kept", "default/_claim.held"}; !slices.Equal(ids, want) {
		t.Errorf("sessions after migration: %v, want %v", ids, want)
	}
}
