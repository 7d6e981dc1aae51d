package server_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/internal/pgtest"
	"github.com/agentrt/agentrt/server"
	"github.com/agentrt/agentrt/session/postgres"
)

// The routes that may stream are bounded by the request timeout when a
// request asks for JSON: with the store's sessions table locked by
// another connection (a store that hangs), POST …/messages and GET
// …/events answer 504 request_timeout instead of waiting for the lock.
// (A write the store has begun is bounded by the store: Postgres gives a
// batch of inbox writes its own 30 s, whoever waits for it.)
func TestRequestTimeoutWithoutStream(t *testing.T) {
	dsn, _ := pgtest.Schema(t)
	ctx := context.Background()
	st, err := postgres.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, options{store: st, config: func(c *server.Config) { c.Limits.RequestTimeout = 300 * time.Millisecond }})
	id := f.create(t, "")

	lock, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close(ctx)
	tx, err := lock.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `LOCK TABLE sessions IN ACCESS EXCLUSIVE MODE`); err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)

	hc := &http.Client{Timeout: 20 * time.Second} // the test's bound, not the server's
	for _, c := range []struct{ method, path, body string }{
		{"POST", "/v1/sessions/" + id + "/messages", `{"text":"hi"}`},
		{"GET", "/v1/sessions/" + id + "/events", ""},
	} {
		req, err := http.NewRequest(c.method, f.http.URL+c.path, strings.NewReader(c.body))
		if err != nil {
			t.Fatal(err)
		}
		if c.body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatalf("%s %s with the store locked: %v", c.method, c.path, err)
		}
		var e server.ErrorBody
		_ = json.NewDecoder(resp.Body).Decode(&e)
		resp.Body.Close()
		if resp.StatusCode != http.StatusGatewayTimeout || e.Error.Code != agentrt.CodeRequestTimeout {
			t.Errorf("%s %s with the store locked: %d %+v, want 504 %s", c.method, c.path, resp.StatusCode, e, agentrt.CodeRequestTimeout)
		}
	}
}
