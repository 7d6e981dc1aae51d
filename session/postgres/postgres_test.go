package postgres_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentrt/agentrt/internal/pgtest"
	"github.com/agentrt/agentrt/session"
	"github.com/agentrt/agentrt/session/postgres"
	"github.com/agentrt/agentrt/session/storetest"
)

func open(t *testing.T, opts ...postgres.Option) (*postgres.Store, string) {
	t.Helper()
	dsn, _ := pgtest.Schema(t)
	st, err := postgres.Open(t.Context(), dsn, append([]postgres.Option{postgres.WithPollInterval(50 * time.Millisecond)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st, dsn
}

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T, now func() time.Time) session.Store {
		st, _ := open(t, postgres.WithClock(now))
		return st
	})
}

// Two stores (two processes) on one database: a follower in one sees the
// other's commits, through LISTEN/NOTIFY.
func TestFollowAcrossStores(t *testing.T) {
	a, dsn := open(t, postgres.WithPollInterval(time.Hour)) // no polling: only the notification can wake it
	b, err := postgres.Open(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ctx := t.Context()
	if err := b.CreateSession(ctx, &session.Session{ID: "s1", Agent: "x"}); err != nil {
		t.Fatal(err)
	}
	got := make(chan int64, 8)
	fctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		for e, err := range a.Follow(fctx, "s1", 0) {
			if err != nil {
				return
			}
			got <- e.Seq
		}
	}()
	ev := &session.Event{V: 1, Seq: 1, SessionID: "s1", Type: session.TypeFinal, Time: time.Now().UTC(), Data: &session.Final{Text: "hi"}}
	// The follower may not be listening yet: commit until it hears.
	select {
	case <-got:
		t.Fatal("an event before any commit")
	default:
	}
	if err := b.Commit(ctx, &session.Commit{SessionID: "s1", Events: []*session.Event{ev}}); err != nil {
		t.Fatal(err)
	}
	select {
	case seq := <-got:
		if seq != 1 {
			t.Fatalf("seq %d", seq)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the follower did not hear of the other store's commit")
	}
}

// Two stores (two processes) on one database: followers on each see every
// commit of both, in order, once — this process's handed without a read,
// the other's heard through LISTEN/NOTIFY.
func TestFollowAcrossProcesses(t *testing.T) {
	a, dsn := open(t)
	b, err := postgres.Open(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	storetest.FollowAcross(t, a, b, 8)
}

// A database migrated by a newer build is refused with a clear message;
// an unreachable one says so without the password.
func TestOpenErrors(t *testing.T) {
	_, dsn := open(t)
	conn, err := pgx.Connect(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(t.Context(), `UPDATE schema_version SET version = 99`); err != nil {
		t.Fatal(err)
	}
	conn.Close(t.Context())
	_, err = postgres.Open(t.Context(), dsn)
	if err == nil || !strings.Contains(err.Error(), "schema is version 99, newer than this build's") {
		t.Errorf("a newer schema: %v", err)
	}

	bad := "postgres://agentrt:s3cret-pw@127.0.0.1:1/agentrt?connect_timeout=5"
	_, err = postgres.Open(t.Context(), bad)
	if err == nil || strings.Contains(err.Error(), "s3cret-pw") || !strings.Contains(err.Error(), "cannot reach postgres://agentrt:xxxxx@127.0.0.1:1/agentrt") {
		t.Errorf("an unreachable database: %v", err)
	}
	_, err = postgres.Open(t.Context(), "postgres://agentrt@127.0.0.1:1/agentrt?password=s3cret-pw&connect_timeout=5")
	if err == nil || strings.Contains(err.Error(), "s3cret-pw") || !strings.Contains(err.Error(), "password=xxxxx") {
		t.Errorf("an unreachable database, the password as a parameter: %v", err)
	}
	_, err = postgres.Open(t.Context(), "postgres://u:s3cret-pw@[bad")
	if err == nil || strings.Contains(err.Error(), "s3cret-pw") {
		t.Errorf("a malformed DSN: %v", err)
	}
}

func TestRedact(t *testing.T) {
	for in, want := range map[string]string{
		"postgres://u:pw@h/db":                                   "postgres://u:xxxxx@h/db",
		"postgres://u@h/db":                                      "postgres://u@h/db",
		"host=h user=u password=pw db=x":                         "host=h user=u password=xxxxx db=x",
		"postgres://u@h/db?password=secret&sslmode=disable":      "postgres://u@h/db?password=xxxxx&sslmode=disable",
		"postgres://u:secret@h/db?password=secret":               "postgres://u:xxxxx@h/db?password=xxxxx",
		"postgres://u:se%cret@h/db":                              "postgres://u:xxxxx@h/db",
		"postgres://u@h:badport/db?sslmode=x&password=secret2 x": "postgres://u@h:badport/db?sslmode=x&password=xxxxx x",
	} {
		if got := postgres.Redact(in); got != want {
			t.Errorf("Redact(%q) = %q, want %q", in, got, want)
		}
	}
}
