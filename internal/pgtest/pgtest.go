// Package pgtest gives tests a PostgreSQL of their own: a fresh schema in
// the database AGENTRT_TEST_POSTGRES names, dropped when the test ends.
// The test command (scripts/test.sh) starts a throwaway cluster and sets
// the variable; without it a test skips, except under CI, where a test
// that needs Postgres and cannot have it fails.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// EnvVar names the variable that holds the test database's DSN.
const EnvVar = "AGENTRT_TEST_POSTGRES"

// DSN returns the test database's DSN, or skips (fails under CI) when
// there is none.
func DSN(t testing.TB) string {
	t.Helper()
	dsn := os.Getenv(EnvVar)
	if dsn == "" {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s is not set: the test command starts Postgres for the tests (scripts/test.sh)", EnvVar)
		}
		t.Skipf("%s is not set (make test starts a Postgres and sets it)", EnvVar)
	}
	return dsn
}

// Schema creates a new schema in the test database, dropped when the test
// ends, and returns a DSN whose connections use it (search_path), and
// its name.
func Schema(t testing.TB) (dsn, schema string) {
	t.Helper()
	base := DSN(t)
	var b [6]byte
	_, _ = rand.Read(b[:])
	schema = "t_" + hex.EncodeToString(b[:])
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `CREATE SCHEMA `+schema); err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if conn, err := pgx.Connect(ctx, base); err == nil {
			_, _ = conn.Exec(ctx, `DROP SCHEMA `+schema+` CASCADE`)
			conn.Close(ctx)
		}
	})
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("pgtest: %s is not a URL: %v", EnvVar, err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String(), schema
}
