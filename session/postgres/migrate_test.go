package postgres

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"

	"github.com/agentrt/agentrt/internal/pgtest"
	"github.com/agentrt/agentrt/session"
)

// A database of schema version 1 (before control requests), with a
// session leased by a live owner, opens, keeps the session and its lease,
// and carries control requests to that owner.
func TestMigrateFromVersion1(t *testing.T) {
	ctx := t.Context()
	dsn, _ := pgtest.Schema(t)
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	expires := time.Now().Add(time.Hour).UnixMicro()
	stmts := append([]string{
		`CREATE TABLE schema_version (id int NOT NULL PRIMARY KEY CHECK (id = 1), version int NOT NULL)`,
		`INSERT INTO schema_version (id, version) VALUES (1, 1)`,
	}, migrations[0]...)
	for _, s := range stmts {
		if _, err := conn.Exec(ctx, s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	if _, err := conn.Exec(ctx, `INSERT INTO sessions (tenant, id, agent, status, turn, usage, last_seq, created_at, updated_at, lease_owner, lease_token, lease_expires)
		VALUES ('default', 'old', 'assistant', 'running', 1, '{}', 0, 1, 1, 'a', 3, $1)`, expires); err != nil {
		t.Fatal(err)
	}
	conn.Close(ctx)

	st, err := Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	s, err := st.GetSession(ctx, "old")
	if err != nil || s.Status != session.StatusRunning || s.Lease == nil || s.Lease.Owner != "a" || s.Lease.Token != 3 || s.Control != nil {
		t.Fatalf("GetSession after migration: %+v, %v", s, err)
	}
	c := session.Control{ID: "ctl_1", Kind: session.ControlCancel, Reason: "stop", By: "ada", At: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	if err := st.RequestControl(ctx, "old", *s.Lease, c); err != nil {
		t.Fatalf("RequestControl after migration: %v", err)
	}
	got, err := st.Controls(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]session.SessionControl{{Tenant: session.DefaultTenant, SessionID: "old", Control: c}}, got); diff != "" {
		t.Errorf("Controls(a) after migration (-want +got):\n%s", diff)
	}
	if err := st.Release(ctx, *s.Lease); err != nil {
		t.Fatal(err)
	}
	if got, err := st.Controls(ctx, "a"); err != nil || len(got) != 0 {
		t.Errorf("Controls(a) after the release: %+v %v", got, err)
	}
	var version int
	if err := st.pool.QueryRow(ctx, `SELECT version FROM schema_version`).Scan(&version); err != nil || version != len(migrations) {
		t.Fatalf("schema version %d (%v), want %d", version, err, len(migrations))
	}
}
