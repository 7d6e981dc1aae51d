package server_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/agentrt/agentrt/server"
)

var twoTenants = []server.Key{
	{Key: "key-acme", Tenant: "acme", Principal: "ana"},
	{Hash: server.HashKey("key-globex"), Tenant: "globex", Principal: "bo"},
}

// A tenant tries every endpoint on another tenant's session: each is a
// 404 not_found, the same answer as for a session that does not exist,
// and nothing of the session changes.
func TestAnotherTenantsSessionIsNotFound(t *testing.T) {
	f := newFixture(t, options{keys: twoTenants})
	id := f.create(t, "key-acme")
	code, body, _ := f.do(t, "POST", "/v1/sessions/"+id+"/messages", "key-acme", map[string]any{"text": "call deploy {\"env\":\"prod\"}"})
	if code != http.StatusAccepted {
		t.Fatalf("%d %s", code, body)
	}
	f.waitStatus(t, id, "waiting", "acme")
	before := storedTypes(t, f, id, "acme")

	for _, c := range []struct{ method, path, body string }{
		{"GET", "/v1/sessions/" + id, ""},
		{"DELETE", "/v1/sessions/" + id, ""},
		{"POST", "/v1/sessions/" + id + "/messages", `{"text":"hi"}`},
		{"GET", "/v1/sessions/" + id + "/events", ""},
		{"POST", "/v1/sessions/" + id + "/requests/req_x", `{"decision":"approve"}`},
		{"POST", "/v1/sessions/" + id + "/cancel", `{}`},
		{"POST", "/v1/sessions/" + id + "/interrupt", `{}`},
		{"POST", "/v1/sessions/" + id + "/resume", `{}`},
		{"POST", "/v1/sessions/" + id + "/fork", `{"at_seq":1}`},
	} {
		var body any
		if c.body != "" {
			body = c.body
		}
		code, out, _ := f.do(t, c.method, c.path, "key-globex", body)
		if code != http.StatusNotFound || errCode(out) != "not_found" {
			t.Errorf("globex %s %s: %d %s, want 404 not_found", c.method, c.path, code, out)
		}
		// The stream too, asked as a stream.
		if c.method == "GET" && strings.HasSuffix(c.path, "/events") {
			code, out, _ := f.do(t, c.method, c.path, "key-globex", nil, "Accept", "text/event-stream")
			if code != http.StatusNotFound {
				t.Errorf("globex's event stream of acme's session: %d %s", code, out)
			}
		}
	}
	if code, out, _ := f.do(t, "GET", "/v1/sessions", "key-globex", nil); code != 200 || strings.Contains(string(out), id) {
		t.Errorf("globex's session list shows acme's session: %s", out)
	}
	if after := storedTypes(t, f, id, "acme"); len(after) != len(before) {
		t.Errorf("globex's requests changed acme's session: %v → %v", before, after)
	}
	if code, _, _ := f.do(t, "GET", "/v1/sessions/"+id, "key-acme", nil); code != http.StatusOK {
		t.Errorf("acme's own session: %d", code)
	}
}

func TestAPIKeys(t *testing.T) {
	f := newFixture(t, options{keys: twoTenants})
	for _, c := range []struct {
		name, auth string
		want       int
	}{
		{"no key", "", 401},
		{"unknown key", "Bearer nope", 401},
		{"not bearer", "Basic a2V5LWFjbWU=", 401},
		{"empty bearer", "Bearer ", 401},
		{"a key", "Bearer key-acme", 200},
		{"a key by its hash", "Bearer key-globex", 200},
		{"scheme in lower case", "bearer key-acme", 200},
	} {
		req, _ := http.NewRequest("GET", f.http.URL+"/v1/agents", nil)
		if c.auth != "" {
			req.Header.Set("Authorization", c.auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != c.want {
			t.Errorf("%s: %d, want %d", c.name, resp.StatusCode, c.want)
		}
		if c.want == 401 && resp.Header.Get("WWW-Authenticate") == "" {
			t.Errorf("%s: a 401 without WWW-Authenticate", c.name)
		}
	}
	// Health and readiness take no key.
	for _, p := range []string{"/healthz", "/readyz"} {
		if code, body, _ := f.do(t, "GET", p, "", nil); code != 200 {
			t.Errorf("%s: %d %s", p, code, body)
		}
	}
}

func TestBadKeysConfig(t *testing.T) {
	for _, c := range []struct {
		keys []server.Key
		want string
	}{
		{[]server.Key{{Tenant: "a"}}, "neither a key nor a hash"},
		{[]server.Key{{Key: "k", Hash: server.HashKey("k"), Tenant: "a"}}, "not both"},
		{[]server.Key{{Hash: "md5:00", Tenant: "a"}}, "64 hex digits"},
		{[]server.Key{{Key: "k", Tenant: "a"}, {Hash: server.HashKey("k"), Tenant: "b"}}, "twice"},
		{[]server.Key{{Key: "k", Tenant: "bad tenant"}}, "tenant"},
		{[]server.Key{{Key: "k", Tenant: "a", Rate: -1}}, "negative"},
	} {
		_, err := server.New(server.Config{Runner: newFixture(t, options{}).r, Gateway: newFixture(t, options{}).gw, Keys: c.keys})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("keys %+v: %v, want an error saying %q", c.keys, err, c.want)
		}
	}
}

// Without keys the server answers only loopback clients.
func TestNoKeysLoopbackOnly(t *testing.T) {
	f := newFixture(t, options{})
	for _, c := range []struct {
		remote string
		want   int
	}{{"127.0.0.1:5000", 200}, {"[::1]:5000", 200}, {"10.1.2.3:5000", 401}, {"192.168.0.9:80", 401}} {
		req := httptest.NewRequest("GET", "/v1/agents", nil)
		req.Host = "localhost:8080" // httptest's example.com is no loopback name
		req.RemoteAddr = c.remote
		w := httptest.NewRecorder()
		f.srv.Handler().ServeHTTP(w, req)
		if w.Code != c.want {
			t.Errorf("from %s: %d %s, want %d", c.remote, w.Code, w.Body, c.want)
		}
	}
}

// A key over its rate gets 429 too_many_requests with Retry-After; other
// keys are not held back.
func TestRateLimit(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	f := newFixture(t, options{keys: []server.Key{{Key: "slow", Tenant: "a", Rate: 1, Burst: 2}, {Key: "free", Tenant: "a"}},
		config: func(c *server.Config) { c.Now = func() time.Time { return now } }})
	var codes []int
	for range 3 {
		code, body, hdr := f.do(t, "GET", "/v1/agents", "slow", nil)
		codes = append(codes, code)
		if code == 429 {
			if errCode(body) != "too_many_requests" || hdr.Get("Retry-After") != "1" {
				t.Errorf("429: %s, Retry-After %q", body, hdr.Get("Retry-After"))
			}
		}
	}
	if fmt.Sprint(codes) != "[200 200 429]" {
		t.Fatalf("a key of rate 1, burst 2, three requests at once: %v", codes)
	}
	if code, _, _ := f.do(t, "GET", "/v1/agents", "free", nil); code != 200 {
		t.Errorf("another key: %d", code)
	}
	now = now.Add(time.Second)
	if code, _, _ := f.do(t, "GET", "/v1/agents", "slow", nil); code != 200 {
		t.Errorf("a second later: %d", code)
	}
}
