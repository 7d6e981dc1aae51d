package server

import (
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/internal/weborigin"
)

// The browser policy: what a web page may make this server do. A page
// can send requests to any address its browser reaches — the server on
// the user's own machine included — and, by rebinding a name of its own
// to 127.0.0.1, make them same-origin. The server owns the whole policy
// here and applies it to every route, those Mount adds included, before
// anything else looks at the request (edge wraps the mux and applies
// 1 to 4; acceptsBody, inside each route's authentication, applies 5):
//
//  1. forwarded: without API keys, a request that came through a proxy
//     (Forwarded, X-Forwarded-For, X-Forwarded-Host, X-Real-IP) is
//     refused unless Config.TrustedProxy: behind a proxy on the same
//     host every peer is loopback, and keyless mode would answer whoever
//     reaches the proxy;
//  2. host: the Host must be a loopback name or address, or one of
//     Config.AllowedHosts; with API keys and no AllowedHosts, any Host
//     (a rebound name gets nothing without a key);
//  3. preflight: a CORS preflight is answered for the allowed origins
//     and refused for the others;
//  4. origin: a state-changing request (any method but GET, HEAD and
//     OPTIONS, and a WebSocket handshake) from a page of another origin
//     is refused unless CORS lists the origin; a browser request without
//     an Origin is judged by Sec-Fetch-Site; a request with neither (curl,
//     SDKs) is not a browser's;
//  5. body: a request with a body (but a GET's or a HEAD's) must say it
//     is JSON (application/json, or an application/…+json type): a form
//     or text/plain body is what a page can send without a preflight.

// corsMaxAge is how long a browser may keep a preflight's answer; Chrome
// caps it at 2 hours.
const corsMaxAge = 2 * 60 * 60

// corsMethods are the methods a preflight allows: every method a route
// takes.
const corsMethods = "GET, POST, PUT, PATCH, DELETE"

// corsHeaders are the request headers a preflight allows, besides those
// it asks for: the API's and the protocols'.
const corsHeaders = "Authorization, Content-Type, Idempotency-Key, Last-Event-ID, Agentrt-Session, Mcp-Session-Id, Mcp-Protocol-Version, A2A-Version, A2A-Extensions"

// corsExposed are the response headers a page of an allowed origin may
// read: those the API and the protocols answer with.
const corsExposed = "Location, Retry-After, Allow, WWW-Authenticate, Agentrt-Input-Id, Agentrt-Session, Mcp-Session-Id, Mcp-Protocol-Version"

// browserPolicy is the policy of one Server, fixed by New.
type browserPolicy struct {
	keyless      bool
	trustedProxy bool
	// hosts are Config.AllowedHosts, lower case: "name" allows any port,
	// "name:port" that port.
	hosts map[string]bool
	// anyOrigin is CORS "*": every origin, without credentials; origins
	// are the listed ones, in the form browsers send.
	anyOrigin bool
	origins   map[string]bool
}

func newBrowserPolicy(cfg Config, keyless bool) (*browserPolicy, error) {
	p := &browserPolicy{keyless: keyless, trustedProxy: cfg.TrustedProxy, hosts: map[string]bool{}, origins: map[string]bool{}}
	for _, h := range cfg.AllowedHosts {
		norm, err := weborigin.NormalizeHost(h)
		if err != nil {
			return nil, fmt.Errorf("server: allowed host %q: %w", h, err)
		}
		p.hosts[norm] = true
	}
	for _, o := range cfg.CORS.Origins {
		if o == "*" {
			p.anyOrigin = true
			continue
		}
		norm, err := weborigin.Normalize(o)
		if err != nil {
			return nil, fmt.Errorf("server: CORS origin %q: %w", o, err)
		}
		p.origins[norm] = true
	}
	if p.anyOrigin && keyless {
		return nil, fmt.Errorf(`server: CORS origin "*" without API keys would let every web page the user opens drive this server; list the origins (server.cors.allowed_origins) or configure server.api_keys`)
	}
	return p, nil
}

// policyError is a refusal of the policy.
func policyError(code, format string, args ...any) error {
	return &agentrt.Error{Kind: agentrt.FailInput, Code: code, Msg: fmt.Sprintf(format, args...)}
}

// checkForwarded refuses, without API keys, a request that came through
// a proxy the config does not trust.
func (p *browserPolicy) checkForwarded(r *http.Request) error {
	if !p.keyless || p.trustedProxy {
		return nil
	}
	for _, h := range [...]string{"Forwarded", "X-Forwarded-For", "X-Forwarded-Host", "X-Real-Ip"} {
		if _, ok := r.Header[h]; ok {
			return policyError(agentrt.CodeForwardedNotAllowed,
				"this server has no API keys and the request came through a proxy (%s): behind a proxy every client looks local, so configure server.api_keys, or set server.trusted_proxy: true if the proxy itself lets in only whom it should", h)
		}
	}
	return nil
}

// checkHost refuses a Host the server does not answer to: DNS rebinding.
func (p *browserPolicy) checkHost(r *http.Request) error {
	if !p.keyless && len(p.hosts) == 0 {
		return nil
	}
	name, port := weborigin.Split(r.Host)
	if weborigin.Loopback(name) || p.hosts[name] || (port != "" && p.hosts[net.JoinHostPort(name, port)]) {
		return nil
	}
	which := "localhost, 127.0.0.1 and [::1]"
	if len(p.hosts) > 0 {
		which += " and server.allowed_hosts"
	}
	if p.keyless {
		which = "without API keys, only " + which
	}
	return policyError(agentrt.CodeHostNotAllowed,
		"this server does not answer to Host %q (%s): add it to server.allowed_hosts to allow it", r.Host, which)
}

// stateChanging reports whether a page's request can change something:
// a method other than GET, HEAD and OPTIONS, or a WebSocket handshake
// (whose frames do).
func stateChanging(r *http.Request) bool {
	switch r.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return r.Method == http.MethodGet && headerHas(r.Header, "Upgrade", "websocket")
	}
	return true
}

// allowedOrigin reports whether a page of origin may call the server at
// host: its own origin, or one CORS allows. Browsers send an origin as
// weborigin.Normalize writes it, so a listed one matches by string.
func (p *browserPolicy) allowedOrigin(origin, host string) bool {
	if p.anyOrigin || p.origins[origin] {
		return true
	}
	// An Origin is scheme://host[:port], nothing after: its host part is
	// compared as it is, without parsing it.
	_, rest, ok := strings.Cut(origin, "://")
	return ok && rest != "" && strings.EqualFold(rest, host)
}

// checkOrigin refuses a state-changing request of a page of another
// origin, unless CORS allows the origin.
func (p *browserPolicy) checkOrigin(r *http.Request) error {
	if !stateChanging(r) {
		return nil
	}
	site := r.Header.Get("Sec-Fetch-Site")
	switch site {
	case "same-origin", "none":
		// The browser says so; a page cannot set this header.
		return nil
	}
	origin := r.Header.Get("Origin")
	if origin == "" {
		if site == "" {
			return nil // not a browser: curl, an SDK
		}
		return policyError(agentrt.CodeOriginNotAllowed,
			"a browser request from another site (Sec-Fetch-Site: %s) without an Origin may not %s here", site, r.Method)
	}
	if p.allowedOrigin(origin, r.Host) {
		return nil
	}
	what := r.Method + " " + r.URL.Path
	if r.Method == http.MethodGet {
		what = "open a WebSocket at " + r.URL.Path
	}
	return policyError(agentrt.CodeOriginNotAllowed,
		"a page of %s may not %s on this server: add the origin to server.cors.allowed_origins to allow it", origin, what)
}

// corsHeaders marks the answer to a page of an allowed origin as
// readable by it. Credentials are allowed for the origins listed, never
// with "*".
func (p *browserPolicy) corsHeaders(h http.Header, origin string) {
	switch {
	case origin == "":
		return
	case p.origins[origin]:
		h.Set("Access-Control-Allow-Origin", origin)
		h.Set("Access-Control-Allow-Credentials", "true")
	case p.anyOrigin:
		h.Set("Access-Control-Allow-Origin", "*")
	default:
		return
	}
	h.Set("Access-Control-Expose-Headers", corsExposed)
}

// cors reports whether the answers depend on Origin beyond refusals:
// CORS names origins.
func (p *browserPolicy) cors() bool { return p.anyOrigin || len(p.origins) > 0 }

// edge applies the policy's Host, proxy, preflight and Origin rules to
// every request, before the mux routes it.
func (s *Server) edge(next http.Handler) http.Handler {
	p := s.policy
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := p.checkForwarded(r); err != nil {
			s.refuse(w, r, err)
			return
		}
		if s.verifiedPath(r.URL.Path) {
			// A platform's request, which its route verifies: no page
			// can forge its signature, wherever it is sent from.
			next.ServeHTTP(w, r)
			return
		}
		if err := p.checkHost(r); err != nil {
			s.refuse(w, r, err)
			return
		}
		origin := r.Header.Get("Origin")
		if p.cors() {
			// Whether an answer carries CORS headers depends on Origin:
			// a cache must not give one origin's answer to another.
			w.Header().Add("Vary", "Origin")
		}
		if r.Method == http.MethodOptions && origin != "" && r.Header.Get("Access-Control-Request-Method") != "" {
			s.preflight(w, r, origin)
			return
		}
		if err := p.checkOrigin(r); err != nil {
			s.refuse(w, r, err)
			return
		}
		p.corsHeaders(w.Header(), origin)
		next.ServeHTTP(w, r)
	})
}

// preflight answers a CORS preflight: for an allowed origin, the methods,
// the API's headers and any other it asks for (the origin is trusted
// with any: SDKs send headers of their own, such as the OpenAI SDK's
// X-Stainless-*) and how long to keep the answer; for another, 403 and
// no CORS headers, so that the browser sends nothing.
func (s *Server) preflight(w http.ResponseWriter, r *http.Request, origin string) {
	p := s.policy
	h := w.Header()
	h.Add("Vary", "Access-Control-Request-Method")
	h.Add("Vary", "Access-Control-Request-Headers")
	if !p.anyOrigin && !p.origins[origin] {
		s.refuse(w, r, policyError(agentrt.CodeOriginNotAllowed,
			"a page of %s may not call this server: add the origin to server.cors.allowed_origins to allow it", origin))
		return
	}
	p.corsHeaders(h, origin)
	h.Set("Access-Control-Allow-Methods", corsMethods)
	allow, known := corsHeaders, strings.Split(corsHeaders, ", ")
	for _, v := range r.Header.Values("Access-Control-Request-Headers") {
		for name := range strings.SplitSeq(v, ",") {
			name = strings.TrimSpace(name)
			if name != "" && validHeaderName(name) && !slices.ContainsFunc(known, func(n string) bool { return strings.EqualFold(n, name) }) {
				allow += ", " + name
			}
		}
	}
	h.Set("Access-Control-Allow-Headers", allow)
	h.Set("Access-Control-Max-Age", strconv.Itoa(corsMaxAge))
	w.WriteHeader(http.StatusNoContent)
}

// validHeaderName reports whether name is an HTTP token.
func validHeaderName(name string) bool {
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0) {
			return false
		}
	}
	return true
}

// acceptsBody refuses a request to rt whose body is not JSON: every
// route, the protocols' included (OpenAI, AG-UI, A2A's JSON-RPC and MCP's
// Streamable HTTP all specify application/json), takes JSON. A request
// without a body (Content-Length: 0) needs no type, nor does a GET or a
// HEAD, whose body no route reads and no page can send (openai-go sends
// its GETs' parameters as an untyped body).
func (s *Server) acceptsBody(rt Route, next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength != 0 && r.Method != http.MethodGet && r.Method != http.MethodHead && !jsonMediaType(r.Header.Get("Content-Type")) {
			ct := r.Header.Get("Content-Type")
			if ct == "" {
				ct = "none"
			} else {
				ct = strconv.Quote(ct)
			}
			writeError(w, r, s.log, policyError(agentrt.CodeUnsupportedMediaType,
				"%s %s takes a JSON body: send Content-Type: application/json (the request's is %s; with curl, -H 'Content-Type: application/json')", r.Method, rt.Pattern, ct))
			return
		}
		next(w, r)
	}
}

// jsonMediaType reports whether a Content-Type is JSON: application/json
// or application/…+json, with any parameters.
func jsonMediaType(ct string) bool {
	mt, _, _ := strings.Cut(ct, ";")
	mt = strings.TrimSpace(mt)
	if strings.EqualFold(mt, "application/json") {
		return true
	}
	sub, ok := cutPrefixFold(mt, "application/")
	return ok && len(sub) > len("+json") && strings.EqualFold(sub[len(sub)-len("+json"):], "+json") && !strings.ContainsAny(sub, "/ \t")
}

func cutPrefixFold(s, prefix string) (string, bool) {
	if len(s) < len(prefix) || !strings.EqualFold(s[:len(prefix)], prefix) {
		return s, false
	}
	return s[len(prefix):], true
}

// refuse answers a request the policy refuses, and logs it at debug level
// as requests are.
func (s *Server) refuse(w http.ResponseWriter, r *http.Request, err error) {
	writeError(w, r, s.log, err)
	if s.log.Enabled(r.Context(), slog.LevelDebug) {
		code := ""
		if e := agentrt.AsError(err); e != nil {
			code = e.Code
		}
		s.log.LogAttrs(r.Context(), slog.LevelDebug, "refused", slog.String("method", r.Method), slog.String("path", r.URL.Path),
			slog.String("host", r.Host), slog.String("origin", r.Header.Get("Origin")), slog.String("code", code))
	}
}
