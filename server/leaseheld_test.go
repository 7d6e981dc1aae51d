package server_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/agentrt/agentrt/session"
)

// A session another process runs is 409 lease_held, and the body says
// who runs it and until when, once (the runtime's sentence for people,
// not the catalog's sentence nor the store's words).
func TestLeaseHeldSaysWhoRunsIt(t *testing.T) {
	f := newFixture(t, options{})
	id := f.create(t, "")
	lz := f.store.(session.Leaser)
	if _, err := lz.Acquire(t.Context(), id, "host-b:42:abc", time.Hour); err != nil {
		t.Fatal(err)
	}
	code, body, _ := f.do(t, "POST", "/v1/sessions/"+id+"/resume", "", nil)
	if code != http.StatusConflict || !strings.Contains(string(body), `"lease_held"`) ||
		strings.Count(string(body), "host-b:42:abc") != 1 {
		t.Fatalf("resume of a session another process runs: %d %s; want 409 lease_held naming host-b:42:abc once", code, body)
	}
}
