package server_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/gateway"
	"github.com/agentrt/agentrt/model/demo"
	"github.com/agentrt/agentrt/server"
	"github.com/agentrt/agentrt/session/memstore"
)

// newLoopbackServer is a server on an in-memory store with the demo
// model, and keys when given.
func newLoopbackServer(t *testing.T, keys ...server.Key) http.Handler {
	t.Helper()
	a, err := agentrt.NewAgent("assistant").Model(demo.New()).Build()
	if err != nil {
		t.Fatal(err)
	}
	r, err := agentrt.NewRunner(agentrt.Config{Store: memstore.New(), Agents: []*agentrt.Agent{a}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close(t.Context()) })
	gw, err := gateway.New(gateway.Config{Runner: r})
	if err != nil {
		t.Fatal(err)
	}
	s, err := server.New(server.Config{Runner: r, Gateway: gw, Keys: keys})
	if err != nil {
		t.Fatal(err)
	}
	return s.Handler()
}

// Without API keys the server answers only clients on this machine: the
// address the connection came from decides (a test reaches only
// 127.0.0.1, so the other addresses are set on the request). A header
// that claims another address changes nothing.
func TestNoKeysLoopbackOnly(t *testing.T) {
	t.Parallel()
	h := newLoopbackServer(t)
	for _, tc := range []struct {
		remote string
		hdr    map[string]string
		want   int
	}{
		{"127.0.0.1:50000", nil, http.StatusOK},
		{"[::1]:50000", nil, http.StatusOK},
		{"127.8.9.10:50000", nil, http.StatusOK},
		{"192.0.2.1:50000", nil, http.StatusUnauthorized},
		{"[2001:db8::1]:50000", nil, http.StatusUnauthorized},
		{"10.0.0.7:50000", nil, http.StatusUnauthorized},
		{"192.0.2.1:50000", map[string]string{"X-Forwarded-For": "127.0.0.1", "X-Real-IP": "127.0.0.1"}, http.StatusUnauthorized},
		{"127.0.0.1:50000", map[string]string{"X-Forwarded-For": "192.0.2.1"}, http.StatusOK},
	} {
		req := httptest.NewRequest("GET", "/v1/sessions", nil)
		req.RemoteAddr = tc.remote
		for k, v := range tc.hdr {
			req.Header.Set(k, v)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code != tc.want {
			t.Errorf("from %s %v: %d %s, want %d", tc.remote, tc.hdr, w.Code, w.Body, tc.want)
			continue
		}
		if w.Code == http.StatusUnauthorized && !strings.Contains(w.Body.String(), `"code":"unauthorized"`) {
			t.Errorf("from %s: %s", tc.remote, w.Body)
		}
	}
	// Health answers anyone: a load balancer elsewhere checks it.
	req := httptest.NewRequest("GET", "/healthz", nil)
	req.RemoteAddr = "192.0.2.1:50000"
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	if w.Code != http.StatusOK {
		t.Errorf("healthz from elsewhere: %d %s", w.Code, w.Body)
	}
}

// With keys, where the client is does not matter: the key does.
func TestKeysFromAnywhere(t *testing.T) {
	t.Parallel()
	h := newLoopbackServer(t, server.Key{Key: "k1", Tenant: "acme"})
	for _, tc := range []struct {
		remote, key string
		want        int
	}{
		{"192.0.2.1:50000", "k1", http.StatusOK},
		{"192.0.2.1:50000", "", http.StatusUnauthorized},
		{"127.0.0.1:50000", "", http.StatusUnauthorized},
	} {
		req := httptest.NewRequest("GET", "/v1/sessions", nil)
		req.RemoteAddr = tc.remote
		if tc.key != "" {
			req.Header.Set("Authorization", "Bearer "+tc.key)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code != tc.want {
			t.Errorf("from %s with key %q: %d %s, want %d", tc.remote, tc.key, w.Code, w.Body, tc.want)
		}
	}
}
