package server_test

import (
	"context"
	"log/slog"
	"net/http"
	"testing"
	"time"

	"github.com/agentrt/agentrt/server"
	"github.com/agentrt/agentrt/server/openai"
)

// logTap hands the server's "request" log records to the test.
type logTap struct{ records chan slog.Record }

func (*logTap) Enabled(context.Context, slog.Level) bool { return true }
func (l *logTap) Handle(_ context.Context, r slog.Record) error {
	if r.Message == "request" {
		l.records <- r.Clone()
	}
	return nil
}
func (l *logTap) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *logTap) WithGroup(string) slog.Handler      { return l }

// next is the next request's record, as attributes by key.
func (l *logTap) next(t *testing.T) map[string]string {
	t.Helper()
	select {
	case r := <-l.records:
		out := map[string]string{}
		r.Attrs(func(a slog.Attr) bool {
			out[a.Key] = a.Value.String()
			return true
		})
		return out
	case <-time.After(10 * time.Second):
		t.Fatal("no request was logged")
		return nil
	}
}

// A request's log line names the tenant and the principal of its key, as
// authenticate found them (it read the tenant of the request before
// authenticate scoped it: the default tenant for every key), on the
// server's routes and an adapter's; a request refused for its key names
// none.
func TestRequestLogNamesTheKeysTenant(t *testing.T) {
	tap := &logTap{records: make(chan slog.Record, 16)}
	f := newFixture(t, options{
		keys:   []server.Key{{Key: "k-acme", Tenant: "acme", Principal: "alice"}},
		config: func(c *server.Config) { c.Log = slog.New(tap) },
	})
	if _, err := openai.Mount(f.srv, openai.Config{}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		path, key         string
		status            int
		tenant, principal string
	}{
		{"/v1/sessions", "k-acme", 200, "acme", "alice"},
		{"/v1/models", "k-acme", 200, "acme", "alice"},
		{"/v1/sessions", "", 401, "", ""},
		{"/v1/sessions", "wrong", 401, "", ""},
	} {
		if code, body, _ := f.do(t, "GET", tc.path, tc.key, nil); code != tc.status {
			t.Fatalf("GET %s: %d %s", tc.path, code, body)
		}
		got := tap.next(t)
		if got["route"] != tc.path || got["tenant"] != tc.tenant || got["principal"] != tc.principal {
			t.Errorf("GET %s with key %q logged %v; want tenant %q, principal %q", tc.path, tc.key, got, tc.tenant, tc.principal)
		}
	}
}

// Without keys, a request's log line names the server's tenant and the
// local principal.
func TestRequestLogWithoutKeys(t *testing.T) {
	tap := &logTap{records: make(chan slog.Record, 16)}
	f := newFixture(t, options{config: func(c *server.Config) { c.Log = slog.New(tap); c.Tenant = "home" }})
	if code, body, _ := f.do(t, "GET", "/v1/sessions", "", nil); code != http.StatusOK {
		t.Fatalf("GET /v1/sessions: %d %s", code, body)
	}
	if got := tap.next(t); got["tenant"] != "home" || got["principal"] != "local" {
		t.Errorf("logged %v; want tenant home, principal local", got)
	}
}
