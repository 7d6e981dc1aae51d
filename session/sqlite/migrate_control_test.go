package sqlite

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/session"
)

// A database of schema version 5 (before control requests), with a
// session leased by a live owner, opens, keeps the lease, and carries
// control requests to that owner.
func TestMigrateFromVersion5Control(t *testing.T) {
	ctx := t.Context()
	expires := time.Now().Add(time.Hour).UnixMicro()
	path := oldDatabase(t, 5, fmt.Sprintf(`INSERT INTO sessions (tenant, id, agent, status, turn, usage, last_seq, created_at, updated_at, lease_owner, lease_token, lease_expires)
		VALUES ('default', 'old', 'assistant', 'running', 1, '{}', 0, 1, 1, 'a', 3, %d)`, expires))
	st, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	s, err := st.GetSession(ctx, "old")
	if err != nil || s.Lease == nil || s.Lease.Owner != "a" || s.Lease.Token != 3 || s.Control != nil {
		t.Fatalf("GetSession after migration: %+v, %v", s, err)
	}
	c := session.Control{ID: "ctl_1", Kind: session.ControlInterrupt, Reason: "newer input", By: "ada", At: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
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
}
