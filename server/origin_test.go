package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/server"
	"github.com/agentrt/agentrt/server/a2a"
	"github.com/agentrt/agentrt/server/agui"
	"github.com/agentrt/agentrt/server/mcp"
	"github.com/agentrt/agentrt/server/openai"
	"github.com/agentrt/agentrt/session"
)

// everyProtocol is a fixture with every protocol adapter mounted and
// metrics served, as agentrt serve mounts them: its Routes are the whole
// route table.
func everyProtocol(t *testing.T, o options) *fixture {
	t.Helper()
	cfg := o.config
	o.config = func(c *server.Config) {
		c.Metrics = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "# metrics\n") })
		if cfg != nil {
			cfg(c)
		}
	}
	f := newFixture(t, o)
	if _, err := openai.Mount(f.srv, openai.Config{}); err != nil {
		t.Fatal(err)
	}
	if err := agui.Mount(f.srv); err != nil {
		t.Fatal(err)
	}
	if err := a2a.Mount(f.srv, a2a.Config{}); err != nil {
		t.Fatal(err)
	}
	if err := mcp.Mount(f.srv, mcp.Config{}); err != nil {
		t.Fatal(err)
	}
	return f
}

// probe is a request of the route table test: the route's path with its
// wildcards filled, a body that the route takes (empty: none), headers it
// needs, and the status a client that is not a browser gets (curl, an
// SDK): the policy must let that client through.
type probe struct {
	path string
	body string
	hdr  []string
	want int
}

// routeProbes has a probe for every route of a server with every protocol
// mounted. A route added without one fails TestBrowserPolicyEveryRoute.
// "S" is a session that exists; "doomed" one that the DELETE removes.
func routeProbes() map[string]probe {
	const agui = `{"threadId":"agui-thread","runId":"r1","messages":[{"id":"m1","role":"user","content":"hi"}],"tools":[],"context":[],"state":{},"forwardedProps":{}}`
	mcpInit := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"curl","version":"1"}}}`
	mcpAccept := []string{"Accept", "application/json, text/event-stream"}
	ws := []string{"Connection", "Upgrade", "Upgrade", "websocket", "Sec-WebSocket-Version", "13", "Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ=="}
	return map[string]probe{
		"GET /healthz":                                    {path: "/healthz", want: 200},
		"GET /readyz":                                     {path: "/readyz", want: 200},
		"GET /openapi.json":                               {path: "/openapi.json", want: 200},
		"GET /metrics":                                    {path: "/metrics", want: 200},
		"GET /v1/agents":                                  {path: "/v1/agents", want: 200},
		"POST /v1/sessions":                               {path: "/v1/sessions", body: `{}`, want: 201},
		"GET /v1/sessions":                                {path: "/v1/sessions", want: 200},
		"GET /v1/sessions/{id}":                           {path: "/v1/sessions/S", want: 200},
		"DELETE /v1/sessions/{id}":                        {path: "/v1/sessions/doomed", want: 204},
		"POST /v1/sessions/{id}/messages":                 {path: "/v1/sessions/S/messages", body: `{"text":"hi"}`, want: 202},
		"GET /v1/sessions/{id}/events":                    {path: "/v1/sessions/S/events", want: 200},
		"GET /v1/sessions/{id}/events/{seq}/sent":         {path: "/v1/sessions/S/events/1/sent", want: 404},
		"POST /v1/sessions/{id}/requests/{rid}":           {path: "/v1/sessions/S/requests/nope", body: `{"decision":"approve"}`, want: 404},
		"POST /v1/sessions/{id}/cancel":                   {path: "/v1/sessions/S/cancel", body: `{}`, want: 409},
		"POST /v1/sessions/{id}/interrupt":                {path: "/v1/sessions/S/interrupt", want: 409},
		"POST /v1/sessions/{id}/resume":                   {path: "/v1/sessions/S/resume", want: 409},
		"POST /v1/sessions/{id}/fork":                     {path: "/v1/sessions/S/fork", body: `{}`, want: 400},
		"GET /v1/requests":                                {path: "/v1/requests", want: 200},
		"GET /v1/ws":                                      {path: "/v1/ws", hdr: ws, want: 101},
		"GET /v1/models":                                  {path: "/v1/models", want: 200},
		"GET /v1/models/{model}":                          {path: "/v1/models/assistant", want: 200},
		"POST /v1/chat/completions":                       {path: "/v1/chat/completions", body: `{"model":"assistant","messages":[{"role":"user","content":"hi"}]}`, want: 200},
		"POST /v1/responses":                              {path: "/v1/responses", body: `{"model":"assistant","input":"hi"}`, want: 200},
		"GET /v1/responses/{id}":                          {path: "/v1/responses/resp_nope", want: 404},
		"POST /v1/responses/{id}/cancel":                  {path: "/v1/responses/resp_nope/cancel", want: 404},
		"DELETE /v1/responses/{id}":                       {path: "/v1/responses/resp_nope", want: 404},
		"POST /v1/agui/{agent}":                           {path: "/v1/agui/assistant", body: agui, hdr: []string{"Accept", "text/event-stream"}, want: 200},
		"POST /v1/a2a/{agent}":                            {path: "/v1/a2a/assistant", body: `{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"nope"}}`, want: 200},
		"GET /v1/a2a/{agent}/.well-known/agent-card.json": {path: "/v1/a2a/assistant/.well-known/agent-card.json", want: 200},
		"GET /v1/a2a/.well-known/agent-card.json":         {path: "/v1/a2a/.well-known/agent-card.json", want: 200}, // one agent: its card
		"POST /v1/mcp":                                    {path: "/v1/mcp", body: mcpInit, hdr: mcpAccept, want: 200},
		"GET /v1/mcp":                                     {path: "/v1/mcp", hdr: []string{"Accept", "text/event-stream"}, want: 400},
		"DELETE /v1/mcp":                                  {path: "/v1/mcp", want: 400},
	}
}

// reply is what a probe got.
type reply struct {
	status int
	hdr    http.Header
	body   []byte
}

// code is the error code of an reply in the API's error shape.
func (a reply) code() string {
	var e server.ErrorBody
	_ = json.Unmarshal(a.body, &e)
	return e.Error.Code
}

// send makes a request to the server as given: host, when set, is its
// Host; hdr are headers (name, value, …). A WebSocket handshake's reply
// is not read past its headers.
func send(t *testing.T, base, method, path, host, body string, hdr ...string) reply {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, base+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if host != "" {
		req.Host = host
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusSwitchingProtocols {
		return reply{status: resp.StatusCode, hdr: resp.Header}
	}
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: reading the reply: %v", method, path, err)
	}
	return reply{status: resp.StatusCode, hdr: resp.Header, body: b}
}

// Every route of a keyless server (the default) with every protocol
// mounted, as a web page could reach it: with a Host it rebound to
// 127.0.0.1, from a page of another origin, from another site without an
// Origin, with a JSON body sent as text/plain or as a form (what a page
// sends without a preflight). Each is refused before it reaches a
// handler, and the store is as it was; the same request from curl (no
// Origin, a JSON body said to be JSON) still works.
func TestBrowserPolicyEveryRoute(t *testing.T) {
	f := everyProtocol(t, options{})
	probes := routeProbes()
	routes := f.srv.Routes()
	var keys []string
	for _, rt := range routes {
		key := rt.Method + " " + rt.Pattern
		keys = append(keys, key)
		if _, ok := probes[key]; !ok {
			t.Errorf("route %s has no probe: add one to routeProbes, so that the browser policy is tested on it", key)
		}
	}
	for key := range probes {
		if !slices.Contains(keys, key) {
			t.Errorf("routeProbes has %s, which is not a route", key)
		}
	}
	if t.Failed() {
		t.FailNow()
	}
	for _, id := range []string{"S", "doomed"} {
		if code, body, _ := f.do(t, "POST", "/v1/sessions", "", map[string]any{"id": id}, "Content-Type", "application/json"); code != http.StatusCreated {
			t.Fatalf("create session %s: %d %s", id, code, body)
		}
	}
	before := storeState(t, f)

	const foreign = "https://evil.example"
	base := f.http.URL
	slices.Sort(keys)
	for _, key := range keys {
		p := probes[key]
		method, _, _ := strings.Cut(key, " ")
		changing := method != "GET" || key == "GET /v1/ws"
		body, jsonType := p.body, []string{}
		if body != "" {
			jsonType = []string{"Content-Type", "application/json"}
		}
		withHdr := func(extra ...string) []string { return append(append(slices.Clone(p.hdr), jsonType...), extra...) }

		// A rebound name: refused on every route, whatever it asks.
		a := send(t, base, method, p.path, "evil.example:8080", body, withHdr()...)
		if a.status != http.StatusMisdirectedRequest || a.code() != "host_not_allowed" {
			t.Errorf("%s with Host evil.example:8080: %d %s, want 421 host_not_allowed", key, a.status, a.body)
		}

		// A page of another origin, and one of another site that sends
		// no Origin: refused when the request changes something; a read
		// goes through, and the page may not read it (no CORS headers).
		for _, h := range [][]string{{"Origin", foreign}, {"Sec-Fetch-Site", "cross-site"}} {
			a := send(t, base, method, p.path, "", body, withHdr(h...)...)
			switch {
			case changing && (a.status != http.StatusForbidden || a.code() != "origin_not_allowed"):
				t.Errorf("%s with %s: %s: %d %s, want 403 origin_not_allowed", key, h[0], h[1], a.status, a.body)
			case !changing && a.status != p.want:
				t.Errorf("%s with %s: %s: %d %s, want %d (a read is not refused)", key, h[0], h[1], a.status, a.body, p.want)
			case a.hdr.Get("Access-Control-Allow-Origin") != "":
				t.Errorf("%s with %s: %s: Access-Control-Allow-Origin %q, want none", key, h[0], h[1], a.hdr.Get("Access-Control-Allow-Origin"))
			}
		}

		// A body a page can send without a preflight: 415, from any origin.
		if method != "GET" {
			json := body
			if json == "" {
				json = `{}`
			}
			for _, ct := range []string{"text/plain", "text/plain;charset=UTF-8", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", ""} {
				a := send(t, base, method, p.path, "", json, append(slices.Clone(p.hdr), "Content-Type", ct)...)
				if a.status != http.StatusUnsupportedMediaType || a.code() != "unsupported_media_type" {
					t.Errorf("%s with a JSON body as Content-Type %q: %d %s, want 415 unsupported_media_type", key, ct, a.status, a.body)
				}
			}
		}
	}
	if diff := cmp.Diff(before, storeState(t, f)); diff != "" {
		t.Errorf("the refused requests changed the store (-before +after):\n%s", diff)
	}

	// curl: no Origin, no Sec-Fetch-Site, a JSON body said to be JSON.
	for _, key := range keys {
		p := probes[key]
		method, _, _ := strings.Cut(key, " ")
		hdr := slices.Clone(p.hdr)
		if p.body != "" {
			hdr = append(hdr, "Content-Type", "application/json")
		}
		if a := send(t, base, method, p.path, "", p.body, hdr...); a.status != p.want {
			t.Errorf("%s as curl sends it: %d %s, want %d", key, a.status, a.body, p.want)
		}
	}
}

// storeState is what a refused request must not change: the sessions
// and the log of S.
func storeState(t *testing.T, f *fixture) map[string]int64 {
	t.Helper()
	ctx := session.WithTenant(t.Context(), session.DefaultTenant)
	list, err := f.store.ListSessions(ctx, session.ListOptions{Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int64{}
	for _, s := range list {
		out[s.ID] = s.LastSeq
	}
	return out
}

// A page of the server's own origin, and one of an origin CORS lists,
// may change things; the listed one may read the answers (with
// credentials), and every reply says it varies by Origin.
func TestBrowserPolicyAllowedOrigins(t *testing.T) {
	const app = "http://app.example.com:3000"
	f := newFixture(t, options{config: func(c *server.Config) { c.CORS.Origins = []string{"HTTP://App.Example.com:3000"} }})
	self := "http://" + strings.TrimPrefix(f.http.URL, "http://")
	for _, tc := range []struct {
		name, origin, site string
		cors               bool
	}{
		{"listed", app, "cross-site", true},
		{"its own", self, "", false},
		{"own, said by Sec-Fetch-Site", "", "same-origin", false},
		{"typed in the address bar", "", "none", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hdr := []string{"Content-Type", "application/json"}
			if tc.origin != "" {
				hdr = append(hdr, "Origin", tc.origin)
			}
			if tc.site != "" {
				hdr = append(hdr, "Sec-Fetch-Site", tc.site)
			}
			a := send(t, f.http.URL, "POST", "/v1/sessions", "", `{}`, hdr...)
			if a.status != http.StatusCreated {
				t.Fatalf("POST /v1/sessions: %d %s, want 201", a.status, a.body)
			}
			if !slices.Contains(a.hdr.Values("Vary"), "Origin") {
				t.Errorf("Vary %q, want Origin", a.hdr.Values("Vary"))
			}
			got := [3]string{a.hdr.Get("Access-Control-Allow-Origin"), a.hdr.Get("Access-Control-Allow-Credentials"), a.hdr.Get("Access-Control-Expose-Headers")}
			switch {
			case tc.cors && (got[0] != app || got[1] != "true" || !strings.Contains(got[2], "Location")):
				t.Errorf("CORS headers %q, want the origin, credentials and the exposed headers", got)
			case !tc.cors && got != [3]string{}:
				t.Errorf("CORS headers %q, want none", got)
			}
		})
	}
}

// A CORS preflight: answered for a listed origin — the methods, the
// headers it asks for, how long to keep it — and refused for another,
// with no CORS header, so that the browser sends nothing. "*" allows any
// origin without credentials, and only with API keys.
func TestBrowserPolicyPreflight(t *testing.T) {
	const app = "https://app.example.com"
	f := newFixture(t, options{config: func(c *server.Config) { c.CORS.Origins = []string{app} }})
	ask := func(base, origin string) reply {
		return send(t, base, "OPTIONS", "/v1/sessions", "", "", "Origin", origin, "Access-Control-Request-Method", "POST",
			"Access-Control-Request-Headers", "authorization,content-type,idempotency-key,x-stainless-os")
	}
	a := ask(f.http.URL, app)
	want := map[string]string{
		"Access-Control-Allow-Origin":      app,
		"Access-Control-Allow-Credentials": "true",
		"Access-Control-Allow-Methods":     "GET, POST, PUT, PATCH, DELETE",
		"Access-Control-Allow-Headers":     "Authorization, Content-Type, Idempotency-Key, Last-Event-ID, Agentrt-Session, Mcp-Session-Id, Mcp-Protocol-Version, A2A-Version, A2A-Extensions, x-stainless-os",
		"Access-Control-Max-Age":           "7200",
	}
	got := map[string]string{}
	for k := range want {
		got[k] = a.hdr.Get(k)
	}
	if a.status != http.StatusNoContent {
		t.Errorf("preflight of a listed origin: %d %s, want 204", a.status, a.body)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("preflight of a listed origin (-want +got):\n%s", diff)
	}
	if v := a.hdr.Values("Vary"); !slices.Contains(v, "Origin") || !slices.Contains(v, "Access-Control-Request-Headers") {
		t.Errorf("preflight Vary %q, want Origin and Access-Control-Request-Headers", v)
	}

	a = ask(f.http.URL, "https://evil.example")
	if a.status != http.StatusForbidden || a.code() != "origin_not_allowed" || a.hdr.Get("Access-Control-Allow-Origin") != "" ||
		!strings.Contains(string(a.body), "server.cors.allowed_origins") {
		t.Errorf("preflight of another origin: %d %v %s, want 403 origin_not_allowed naming the key, without CORS headers", a.status, a.hdr, a.body)
	}

	// "*": any origin, never with credentials; refused without keys.
	keyed := newFixture(t, options{keys: []server.Key{{Key: "k", Tenant: "acme"}}, config: func(c *server.Config) { c.CORS.Origins = []string{"*"} }})
	a = ask(keyed.http.URL, "https://anyone.example")
	if a.status != http.StatusNoContent || a.hdr.Get("Access-Control-Allow-Origin") != "*" || a.hdr.Get("Access-Control-Allow-Credentials") != "" {
		t.Errorf(`preflight with CORS "*": %d %v, want 204 with Access-Control-Allow-Origin: * and no credentials`, a.status, a.hdr)
	}
	cfg := server.Config{Runner: f.r, Gateway: f.gw, CORS: server.CORS{Origins: []string{"*"}}}
	if _, err := server.New(cfg); err == nil || !strings.Contains(err.Error(), "server.api_keys") {
		t.Errorf(`New with CORS "*" and no keys: %v, want an error naming server.api_keys`, err)
	}
	for _, bad := range []string{"app.example.com", "https://app.example.com/path", "ftp://app.example.com", "null"} {
		cfg := server.Config{Runner: f.r, Gateway: f.gw, CORS: server.CORS{Origins: []string{bad}}}
		if _, err := server.New(cfg); err == nil {
			t.Errorf("New with CORS origin %q: no error", bad)
		}
	}
}

// The Host rule: without keys, the loopback names and addresses, with or
// without a port, and server.allowed_hosts; with keys, any Host unless
// allowed_hosts lists some.
func TestBrowserPolicyHosts(t *testing.T) {
	keyless := newFixture(t, options{})
	listed := newFixture(t, options{config: func(c *server.Config) { c.AllowedHosts = []string{"Agents.Internal", "box.lan:8443"} }})
	keyed := newFixture(t, options{keys: []server.Key{{Key: "k", Tenant: "acme"}}})
	keyedListed := newFixture(t, options{keys: []server.Key{{Key: "k", Tenant: "acme"}},
		config: func(c *server.Config) { c.AllowedHosts = []string{"agents.example.com"} }})
	for _, tc := range []struct {
		f    *fixture
		name string
		host string
		want int
	}{
		{keyless, "keyless", "localhost", 200},
		{keyless, "keyless", "localhost:8080", 200},
		{keyless, "keyless", "LOCALHOST.:8080", 200},
		{keyless, "keyless", "127.0.0.1", 200},
		{keyless, "keyless", "127.0.0.1:9", 200},
		{keyless, "keyless", "[::1]", 200},
		{keyless, "keyless", "[::1]:8080", 200},
		{keyless, "keyless", "evil.example", 421},
		{keyless, "keyless", "localhost.evil.example", 421},
		{keyless, "keyless", "192.168.1.2:8080", 421},
		{keyless, "keyless", "agents.internal", 421},
		{listed, "allowed_hosts", "agents.internal:80", 200},
		{listed, "allowed_hosts", "box.lan:8443", 200},
		{listed, "allowed_hosts", "box.lan:8080", 421},
		{listed, "allowed_hosts", "localhost:8080", 200},
		{listed, "allowed_hosts", "evil.example", 421},
		{keyed, "keys", "evil.example", 200},
		{keyedListed, "keys and allowed_hosts", "agents.example.com", 200},
		{keyedListed, "keys and allowed_hosts", "127.0.0.1:8080", 200},
		{keyedListed, "keys and allowed_hosts", "evil.example", 421},
	} {
		a := send(t, tc.f.http.URL, "GET", "/v1/agents", tc.host, "", "Authorization", "Bearer k")
		if a.status != tc.want {
			t.Errorf("%s, Host %s: %d %s, want %d", tc.name, tc.host, a.status, a.body, tc.want)
		}
		if a.status == 421 && (a.code() != "host_not_allowed" || !strings.Contains(string(a.body), "server.allowed_hosts")) {
			t.Errorf("%s, Host %s: %s, want host_not_allowed naming server.allowed_hosts", tc.name, tc.host, a.body)
		}
	}
	cfg := server.Config{Runner: keyless.r, Gateway: keyless.gw, AllowedHosts: []string{"https://agents.example.com"}}
	if _, err := server.New(cfg); err == nil {
		t.Error("New with allowed host https://agents.example.com: no error")
	}
}

// Without keys, a request that came through a proxy is refused unless the
// proxy is trusted: behind a proxy on this host every peer is loopback.
// With keys, the key decides.
func TestBrowserPolicyForwarded(t *testing.T) {
	keyless := newFixture(t, options{})
	trusted := newFixture(t, options{config: func(c *server.Config) { c.TrustedProxy = true }})
	keyed := newFixture(t, options{keys: []server.Key{{Key: "k", Tenant: "acme"}}})
	for _, h := range [][]string{{"X-Forwarded-For", "203.0.113.9"}, {"Forwarded", "for=203.0.113.9"}, {"X-Real-Ip", "203.0.113.9"}, {"X-Forwarded-Host", "agents.example.com"}} {
		a := send(t, keyless.http.URL, "GET", "/v1/agents", "", "", h...)
		if a.status != http.StatusForbidden || a.code() != "forwarded_not_allowed" || !strings.Contains(string(a.body), "server.trusted_proxy") {
			t.Errorf("keyless, %s: %d %s, want 403 forwarded_not_allowed naming server.trusted_proxy", h[0], a.status, a.body)
		}
		if a := send(t, trusted.http.URL, "GET", "/v1/agents", "", "", h...); a.status != http.StatusOK {
			t.Errorf("keyless with trusted_proxy, %s: %d %s, want 200", h[0], a.status, a.body)
		}
		if a := send(t, keyed.http.URL, "GET", "/v1/agents", "", "", append(h, "Authorization", "Bearer k")...); a.status != http.StatusOK {
			t.Errorf("keys, %s: %d %s, want 200", h[0], a.status, a.body)
		}
	}
	if a := send(t, keyless.http.URL, "GET", "/v1/agents", "", ""); a.status != http.StatusOK {
		t.Errorf("keyless, no proxy: %d %s, want 200", a.status, a.body)
	}
}

// A request with a body needs a JSON type; application/json with
// parameters and a +json type are JSON, and a POST without a body needs
// none. (Cancelling an idle session is 409 not_running: the request got
// through.)
func TestBrowserPolicyContentTypes(t *testing.T) {
	f := newFixture(t, options{})
	id := f.create(t, "")
	for _, tc := range []struct {
		ct   string
		body string
		want int
	}{
		{"application/json", `{}`, 409},
		{"Application/JSON; charset=utf-8", `{}`, 409},
		{"application/merge-patch+json", `{}`, 409},
		{"", "", 409},
		{"text/plain", "", 409},
		{"text/json", `{}`, 415},
		{"application/jsonx", `{}`, 415},
		{"application/+json", `{}`, 415},
		{"", `{}`, 415},
	} {
		hdr := []string{}
		if tc.ct != "" {
			hdr = []string{"Content-Type", tc.ct}
		}
		a := send(t, f.http.URL, "POST", "/v1/sessions/"+id+"/cancel", "", tc.body, hdr...)
		if a.status != tc.want {
			t.Errorf("Content-Type %q, body %q: %d %s, want %d", tc.ct, tc.body, a.status, a.body, tc.want)
		}
	}
	// A chunked body of unknown length is a body.
	req, err := http.NewRequestWithContext(t.Context(), "POST", f.http.URL+"/v1/sessions/"+id+"/cancel", io.NopCloser(bytes.NewReader([]byte(`{}`))))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnsupportedMediaType {
		t.Errorf("a chunked body without a type: %d, want 415", resp.StatusCode)
	}
}

// A verified route (a chat platform's: MountVerified) takes no key, and is
// left its Host, Origin and body type, which its handler verifies by the
// platform's signature; the other routes keep the policy.
func TestMountVerified(t *testing.T) {
	for _, keys := range [][]server.Key{nil, {{Key: "k", Tenant: "a"}}} {
		var got []string
		f := newFixture(t, options{keys: keys, config: func(c *server.Config) { c.AllowedHosts = nil }})
		f.srv.MountVerified("POST", "/v1/channels/{name}/{path...}", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			got = append(got, r.PathValue("name")+" "+r.PathValue("path")+" "+r.Header.Get("Content-Type"))
			w.WriteHeader(http.StatusAccepted)
		}))
		post := func(path, host, origin, ct string) int {
			req, _ := http.NewRequest("POST", f.http.URL+path, strings.NewReader("payload=x"))
			req.Host = host
			if origin != "" {
				req.Header.Set("Origin", origin)
			}
			req.Header.Set("Content-Type", ct)
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			return res.StatusCode
		}
		if code := post("/v1/channels/sl/events", "agents.example.com", "https://evil.example", "application/x-www-form-urlencoded"); code != http.StatusAccepted {
			t.Errorf("keys %v: a platform's post under another Host: %d", keys != nil, code)
		}
		if len(got) != 1 || got[0] != "sl events application/x-www-form-urlencoded" {
			t.Errorf("the handler got %q", got)
		}
		if code := post("/v1/sessions", "agents.example.com", "", "text/plain"); keys == nil && code != http.StatusMisdirectedRequest {
			t.Errorf("keyless, another Host on the API: %d, want 421", code)
		} else if keys != nil && code != http.StatusUnauthorized && code != http.StatusUnsupportedMediaType {
			t.Errorf("keyed, a keyless text/plain post to the API: %d", code)
		}
		found := false
		for _, rt := range f.srv.Routes() {
			found = found || rt.Verified && rt.Pattern == "/v1/channels/{name}/{path...}"
		}
		if !found {
			t.Error("Routes does not list the verified route")
		}
	}
}
