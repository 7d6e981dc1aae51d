package server_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/server"
)

// Without API keys, the address the connection came from decides whether
// the client is on this machine (a test reaches only 127.0.0.1, so the
// other addresses are set on the request): the whole of 127.0.0.0/8 is,
// an IPv6 address other than ::1 is not, and a header that claims another
// address does not make a client local; a request that came through a
// proxy is refused (origin_test.go, TestBrowserPolicyForwarded). Health
// answers anyone (a load balancer elsewhere checks it).
func TestNoKeysLoopbackByConnection(t *testing.T) {
	f := newFixture(t, options{})
	for _, c := range []struct {
		remote string
		hdr    map[string]string
		path   string
		want   int
	}{
		{"127.8.9.10:50000", nil, "/v1/sessions", http.StatusOK},
		{"[2001:db8::1]:50000", nil, "/v1/sessions", http.StatusUnauthorized},
		{"192.0.2.1:50000", map[string]string{"X-Forwarded-For": "127.0.0.1", "X-Real-IP": "127.0.0.1", "Forwarded": "for=127.0.0.1"}, "/v1/sessions", http.StatusForbidden},
		{"127.0.0.1:50000", map[string]string{"X-Forwarded-For": "192.0.2.1"}, "/v1/sessions", http.StatusForbidden},
		{"192.0.2.1:50000", nil, "/healthz", http.StatusOK},
	} {
		req := httptest.NewRequest("GET", c.path, nil)
		req.Host = "127.0.0.1:8080" // httptest's example.com is no loopback name
		req.RemoteAddr = c.remote
		for k, v := range c.hdr {
			req.Header.Set(k, v)
		}
		w := httptest.NewRecorder()
		f.srv.Handler().ServeHTTP(w, req)
		if w.Code != c.want {
			t.Errorf("%s from %s %v: %d %s, want %d", c.path, c.remote, c.hdr, w.Code, w.Body, c.want)
			continue
		}
		if w.Code == http.StatusUnauthorized && !strings.Contains(w.Body.String(), `"code":"unauthorized"`) {
			t.Errorf("%s from %s: %s", c.path, c.remote, w.Body)
		}
	}
}

// With keys, where the client is does not matter: the key does.
func TestKeysFromAnywhere(t *testing.T) {
	f := newFixture(t, options{keys: []server.Key{{Key: "k1", Tenant: "acme"}}})
	for _, c := range []struct {
		remote, key string
		want        int
	}{
		{"192.0.2.1:50000", "k1", http.StatusOK},
		{"192.0.2.1:50000", "", http.StatusUnauthorized},
		{"127.0.0.1:50000", "", http.StatusUnauthorized},
	} {
		req := httptest.NewRequest("GET", "/v1/sessions", nil)
		req.RemoteAddr = c.remote
		if c.key != "" {
			req.Header.Set("Authorization", "Bearer "+c.key)
		}
		w := httptest.NewRecorder()
		f.srv.Handler().ServeHTTP(w, req)
		if w.Code != c.want {
			t.Errorf("from %s with key %q: %d %s, want %d", c.remote, c.key, w.Code, w.Body, c.want)
		}
	}
}
