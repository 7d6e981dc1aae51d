package cli_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/internal/cli"
	"github.com/agentrt/agentrt/internal/testenv"
)

// agentrt serve on the memory store says at start that nothing outlives
// it and how many sessions it keeps; past memory:?max_sessions it
// forgets the oldest finished sessions, says so, and counts them in
// /metrics — a long-running serve --store memory: no longer grows with
// every session.
func TestServeMemoryStoreIsBounded(t *testing.T) {
	t.Parallel()
	testenv.SkipShort(t, "runs agentrt serve")
	e := newEnvStore(t, "memory:?max_sessions=20", demoConfig, nil)
	s := startServe(t, e, nil)
	if !strings.Contains(s.stderrText(), "the memory store keeps nothing after this process ends; sessions kept: at most 20") {
		t.Errorf("no notice of the memory store's bound at start:\n%s", s.stderrText())
	}
	for i := range 60 {
		resp, err := http.Post(s.url+"/v1/sessions", "application/json", strings.NewReader(fmt.Sprintf(`{"id":"s%02d"}`, i)))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusCreated {
			t.Fatalf("create s%02d: %s", i, resp.Status)
		}
	}
	s.waitLog("memory store full: forgot the oldest finished sessions")
	resp, err := http.Get(s.url + "/v1/sessions?limit=200")
	if err != nil {
		t.Fatal(err)
	}
	var list struct {
		Sessions []struct{ ID string } `json:"sessions"`
	}
	err = json.NewDecoder(resp.Body).Decode(&list)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	if n := len(list.Sessions); n > 20 || n < 18 {
		t.Errorf("%d sessions kept after 60 were made; want 18 to 20", n)
	}
	if resp, err := http.Get(s.url + "/v1/sessions/s59"); err != nil || resp.StatusCode != http.StatusOK {
		t.Errorf("the newest session: %v %v; want kept", resp, err)
	}
	if resp, err := http.Get(s.url + "/v1/sessions/s00"); err != nil || resp.StatusCode != http.StatusNotFound {
		t.Errorf("the oldest session: %v %v; want forgotten (404)", resp, err)
	}
	if b := s.metrics(); !strings.Contains(b, "\nagentrt_memory_sessions_forgotten 4") {
		t.Errorf("/metrics does not count the forgotten sessions:\n%s", b)
	}
	s.stopOK()
}

// A bad bound is refused at start, naming what is wrong.
func TestServeMemoryStoreBadBound(t *testing.T) {
	t.Parallel()
	e := newEnvStore(t, "memory:?max_sessions=lots", demoConfig, nil)
	r := e.run("serve", "--addr", "127.0.0.1:0")
	if r.code == cli.ExitOK || !strings.Contains(r.err, `max_sessions must be a whole number, 0 for no bound; got "lots"`) {
		t.Errorf("serve with a bad max_sessions: %v", r)
	}
	e = newEnvStore(t, "memory:?max=3", demoConfig, nil)
	if r := e.run("serve", "--addr", "127.0.0.1:0"); r.code == cli.ExitOK || !strings.Contains(r.err, `unknown parameter "max" (memory: takes max_sessions)`) {
		t.Errorf("serve with an unknown parameter: %v", r)
	}
}
