// Package server is agentrt's HTTP API (agentrt serve): sessions, input
// through the gateway, the event log as JSON, server-sent events and
// WebSocket frames, human requests, control, and the operator endpoints.
//
// Every stream is resumable: an event's seq is its SSE id, and a client
// that reconnects with Last-Event-ID (or ?after=) gets the events it
// missed from the store, on any replica, with no gap and no duplicate.
// A client that goes away never stops a run; cancel is a request of its
// own.
//
// The protocol adapters (OpenAI-compatible, AG-UI, A2A, MCP) are handlers
// mounted on the same mux with Server.Mount; they share its auth, tenants,
// limits and logging.
package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/gateway"
	"github.com/agentrt/agentrt/internal/fetch"
	"github.com/agentrt/agentrt/session"
)

// Config configures a Server.
type Config struct {
	// Runner runs the sessions; Gateway takes their input. Both required.
	Runner  *agentrt.Runner
	Gateway *gateway.Gateway
	// Keys are the API keys the server accepts. With none, the server
	// answers only clients on the loopback interface, as Tenant.
	Keys []Key
	// Tenant is the tenant of requests when no keys are configured;
	// empty: session.DefaultTenant.
	Tenant string
	// Log is where the server logs; nil: slog.Default().
	Log *slog.Logger
	// Limits bound what one request may ask of the server.
	Limits Limits
	// CORS, when it names origins, lets web pages of them call the API
	// (origin.go has the whole browser policy).
	CORS CORS
	// AllowedHosts are the names (or addresses, with or without a port)
	// the server answers to besides its loopback ones (localhost,
	// 127.0.0.1, [::1]), which are all it answers to without Keys: a web
	// page that rebinds a name of its own to this machine gets 421
	// host_not_allowed. With Keys and no AllowedHosts, any Host.
	AllowedHosts []string
	// TrustedProxy lets a server without Keys answer requests that came
	// through a proxy (Forwarded, X-Forwarded-For, …): behind one on the
	// same host every client looks local, so only a proxy that admits
	// whom it should may be trusted.
	TrustedProxy bool
	// Heartbeat is how often an idle stream gets a comment, so that
	// proxies keep it open and clients see it alive; zero: 15 s.
	Heartbeat time.Duration
	// ClientBuffer is how many events a stream holds for a client that
	// reads slower than they come; a client that falls further behind is
	// told to reconnect from its last id. Zero: 1024.
	ClientBuffer int
	// WriteTimeout bounds one write to a streaming client; a client that
	// takes no bytes for that long is dropped. Zero: 30 s.
	WriteTimeout time.Duration
	// MaxStreams is how many streams a key may hold open at once (a key's
	// own MaxStreams wins), and the clients on this machine together when
	// there are no keys; one over is 429 too_many_streams. Zero: 256.
	MaxStreams int
	// Ready reports whether the server can serve (GET /readyz); nil: the
	// store answers.
	Ready func(ctx context.Context) error
	// Now is the clock; nil: time.Now.
	Now func() time.Time
	// NoUI leaves the inspector out (the pages at /ui/, ui.go).
	NoUI bool
	// UISecret signs the inspector's sign-in cookies and CSRF tokens; empty:
	// a random one, so that a restart signs everybody out.
	UISecret []byte
	// Metrics, when set, is served at GET /metrics without a key
	// (telemetry.Handler); Streams, when set, counts the open streams by
	// kind ("sse", "ws": Telemetry.OpenStreams).
	Metrics http.Handler
	Streams func(kind string) Gauge
	// Headline, when set, gives the figures the inspector's runtime page
	// shows of this process's metrics (telemetry.Headline).
	Headline func() ([]Figure, error)
	// Fetch says which URLs of images and files a client names the
	// server fetches (ClientFile); none by default.
	Fetch FetchConfig
}

// Figure is a headline figure of the metrics, for a person: what it
// counts, and the count.
type Figure struct {
	Name  string
	Value float64
}

// Gauge is a value that goes up and down (a prometheus.Gauge).
type Gauge interface {
	Inc()
	Dec()
}

// Limits bound what one request may ask of the server. Zero fields take
// the defaults.
type Limits struct {
	// MaxBodyBytes bounds a request's body; default 1 MiB.
	MaxBodyBytes int64
	// MaxJSONDepth bounds how deeply a request's JSON nests; default 32.
	MaxJSONDepth int
	// RequestTimeout bounds a request that does not stream, and the
	// reading of any request's body; default 60 s.
	RequestTimeout time.Duration
	// ReadTimeout is how long the server waits for a client that sends
	// nothing: for each part of a request's body (the connection is then
	// closed, 408 body_timeout). agentrt serve gives the http.Server's
	// ReadHeaderTimeout the same value. Default 10 s.
	ReadTimeout time.Duration
}

// CORS says which web pages, besides the server's own origin, may call
// the API: send it requests that change something, open a WebSocket, and
// read its answers. None by default.
type CORS struct {
	// Origins are the allowed origins ("https://app.example.com"),
	// credentials allowed; "*" allows any, without credentials, and only
	// with Keys.
	Origins []string
}

// Defaults.
const (
	DefaultHeartbeat      = 15 * time.Second
	DefaultClientBuffer   = 1024
	DefaultWriteTimeout   = 30 * time.Second
	DefaultMaxBodyBytes   = 1 << 20
	DefaultMaxJSONDepth   = 32
	DefaultRequestTimeout = 60 * time.Second
	DefaultReadTimeout    = 10 * time.Second
	DefaultMaxStreams     = 256
)

// Server is the HTTP API. Its Handler is safe for concurrent use.
type Server struct {
	cfg   Config
	r     *agentrt.Runner
	gw    *gateway.Gateway
	store session.Store
	log   *slog.Logger
	now   func() time.Time
	keys  *keyring
	// policy is what web pages may do (origin.go).
	policy *browserPolicy
	// local is the stream allowance of the clients on this machine when
	// there are no keys.
	local streamBudget
	mux   *http.ServeMux
	h     http.Handler
	// mounted are the routes, in the order they were added; shapes the
	// error shapes of adapters' paths (ShapeErrors). Both are set up
	// before the server serves, and only read after.
	mounted []Route
	// verified are the path prefixes of MountVerified's routes, which
	// the browser policy's Host and Origin rules leave to them.
	verified []string
	shapes   []pathShape

	draining atomic.Bool // Shutdown began: no new work
	// streamsMu orders each stream's streams.Add before Shutdown's Wait,
	// as a WaitGroup requires of an Add from zero (a request that passed
	// the draining check may still be opening its stream); after
	// Shutdown, streamsClosed refuses new streams.
	streamsMu     sync.Mutex
	streamsClosed bool // guarded by streamsMu
	streams       sync.WaitGroup
	stop          chan struct{} // closed by Shutdown: streams end
	stopOnce      sync.Once
	// abandon is closed when Shutdown's wait ends with streams still
	// open: the turns adapters follow end (shutting_down), their runs
	// left to another process.
	abandon     chan struct{}
	abandonOnce sync.Once

	uiMounted []Route
	ui        *uiSigner    // the inspector's cookies and CSRF tokens
	uiT       *uiTemplates // the inspector's pages

	// fetch gets the URLs clients name for their files (ClientFile).
	fetch *fetch.Fetcher

	clients atomic.Int64     // open streams (SSE and WebSocket)
	gauges  map[string]Gauge // open streams by kind, for metrics
	bufs    sync.Pool        // SSE streams' buffers (*[]byte)
}

type nopGauge struct{}

func (nopGauge) Inc() {}
func (nopGauge) Dec() {}

// New returns a Server.
func New(cfg Config) (*Server, error) {
	if cfg.Runner == nil || cfg.Gateway == nil {
		return nil, errors.New("server: a Runner and a Gateway are required")
	}
	if cfg.Tenant == "" {
		cfg.Tenant = session.DefaultTenant
	}
	if err := session.CheckTenant(cfg.Tenant); err != nil {
		return nil, fmt.Errorf("server: %w", err)
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Heartbeat <= 0 {
		cfg.Heartbeat = DefaultHeartbeat
	}
	if cfg.ClientBuffer <= 0 {
		cfg.ClientBuffer = DefaultClientBuffer
	}
	if cfg.WriteTimeout <= 0 {
		cfg.WriteTimeout = DefaultWriteTimeout
	}
	if cfg.MaxStreams <= 0 {
		cfg.MaxStreams = DefaultMaxStreams
	}
	if cfg.Limits.MaxBodyBytes <= 0 {
		cfg.Limits.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if cfg.Limits.MaxJSONDepth <= 0 {
		cfg.Limits.MaxJSONDepth = DefaultMaxJSONDepth
	}
	if cfg.Limits.RequestTimeout <= 0 {
		cfg.Limits.RequestTimeout = DefaultRequestTimeout
	}
	if cfg.Limits.ReadTimeout <= 0 {
		cfg.Limits.ReadTimeout = DefaultReadTimeout
	}
	keys, err := newKeyring(cfg.Keys, cfg.MaxStreams)
	if err != nil {
		return nil, err
	}
	policy, err := newBrowserPolicy(cfg, len(keys.keys) == 0)
	if err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, r: cfg.Runner, gw: cfg.Gateway, store: cfg.Runner.Store(), log: cfg.Log, now: cfg.Now,
		keys: keys, policy: policy, mux: http.NewServeMux(), stop: make(chan struct{}), abandon: make(chan struct{})}
	s.local.max = int64(cfg.MaxStreams)
	if s.fetch, err = newFetcher(cfg.Fetch, cfg.Gateway.MaxFileBytes()); err != nil {
		return nil, err
	}
	if s.ui, err = newUISigner(cfg.UISecret); err != nil {
		return nil, err
	}
	if s.uiT, err = newUITemplates(); err != nil {
		return nil, err
	}
	for _, rt := range s.routes() {
		s.handle(rt)
	}
	if !cfg.NoUI {
		for _, rt := range s.uiRoutes() {
			s.handle(rt)
		}
	}
	if cfg.Metrics != nil {
		s.handle(Route{Method: "GET", Pattern: "/metrics", Public: true, h: cfg.Metrics.ServeHTTP})
	}
	s.gauges = map[string]Gauge{}
	for _, kind := range []string{"sse", "ws"} {
		if cfg.Streams != nil {
			s.gauges[kind] = cfg.Streams(kind)
		} else {
			s.gauges[kind] = nopGauge{}
		}
	}
	s.mux.HandleFunc("/", s.noRoute)
	// The body guard is outermost, so that the edge's refusals of a body
	// not yet read do not wait for it either; the adapters' error shapes
	// apply to the edge's refusals too.
	s.h = s.guardBody(s.shaped(s.edge(s.mux)))
	return s, nil
}

// Handler returns the server's handler: every route, with the browser
// policy, auth, limits and logging.
func (s *Server) Handler() http.Handler { return s.h }

// Route is one endpoint: what Routes lists and the OpenAPI document
// describes.
type Route struct {
	Method  string
	Pattern string // the path, as net/http.ServeMux patterns write it
	// Public routes take no API key (health, readiness, metrics).
	Public bool
	// Stream routes may answer with a stream; they get no request timeout,
	// unless streams says a request asks for none (an adapter's route,
	// Mount, says nothing: its handler bounds what does not stream).
	Stream  bool
	streams func(*http.Request) bool
	// ui routes are the inspector's (ui.go): signed in by its cookie,
	// forms for bodies, a CSRF token on every form.
	ui bool
	// Verified routes verify their requests themselves (a platform's
	// signature: MountVerified).
	Verified bool
	h        http.HandlerFunc
}

// Routes lists the server's endpoints (those Mount added included).
func (s *Server) Routes() []Route { return append([]Route(nil), s.mounted...) }

// UIRoutes lists the inspector's pages (ui.go): HTML, not the API.
func (s *Server) UIRoutes() []Route { return append([]Route(nil), s.uiMounted...) }

// Mount adds an endpoint of an adapter (a protocol served over the same
// sessions): h gets requests already authenticated, scoped to their
// tenant (session.TenantOf) and actor (agentrt.ActorOf), with the body
// limit and the browser policy applied (origin.go: the Host, the Origin
// of a request that changes something, a JSON body).
func (s *Server) Mount(method, pattern string, stream bool, h http.Handler) {
	s.handle(Route{Method: method, Pattern: pattern, Stream: stream, h: h.ServeHTTP})
}

// MountVerified adds the endpoint of a platform (a chat channel) whose
// handler verifies every request itself, by a signature or a secret the
// platform shares: it takes no API key, from any address, under any Host
// and with any body (the platforms post form data too); the body limit
// and the request timeout apply. The method is the pattern's.
func (s *Server) MountVerified(method, pattern string, h http.Handler) {
	s.verified = append(s.verified, strings.TrimSuffix(strings.Split(pattern, "{")[0], "/")+"/")
	s.handle(Route{Method: method, Pattern: pattern, Public: true, Verified: true, h: h.ServeHTTP})
}

// verifiedPath reports whether path is under a route of MountVerified.
func (s *Server) verifiedPath(path string) bool {
	for _, p := range s.verified {
		if strings.HasPrefix(path, p) {
			return true
		}
	}
	return false
}

// handle adds rt: logged(limitBody(authenticate(acceptsBody(timeout(h))))),
// inside the edge that Handler puts around the mux.
func (s *Server) handle(rt Route) {
	if rt.ui || strings.HasPrefix(rt.Pattern, "/ui/") || rt.Pattern == "/{$}" {
		s.uiMounted = append(s.uiMounted, rt) // pages, not the API: UIRoutes
	} else {
		s.mounted = append(s.mounted, rt)
	}
	h := rt.h
	switch {
	case !rt.Stream:
		h = s.timeout(h)
	case rt.streams != nil:
		h = s.timeoutUnless(rt.streams, h)
	}
	if rt.Stream {
		h = s.limitStreams(rt, h)
	}
	switch {
	case rt.Verified:
		// The handler verifies the platform's requests.
	case rt.ui:
		h = s.acceptsForm(rt, s.uiCSRF(h))
		if !rt.Public {
			h = s.uiAuthenticate(h)
		}
	case rt.Public && strings.HasPrefix(rt.Pattern, "/ui/"), rt.Pattern == "/{$}":
		// The inspector's pages before sign-in: GETs, no body.
		h = s.acceptsBody(rt, h)
	default:
		h = s.acceptsBody(rt, h)
		if !rt.Public {
			h = s.authenticate(h)
		}
	}
	s.mux.Handle(rt.Method+" "+rt.Pattern, s.logged(rt, s.limitBody(h)))
}

// Shutdown stops taking new work (new requests get shutting_down), ends
// every open stream (its client reconnects elsewhere, from its last id)
// and waits for them to close, or for ctx.
func (s *Server) Shutdown(ctx context.Context) error {
	s.draining.Store(true)
	s.streamsMu.Lock()
	s.streamsClosed = true
	s.streamsMu.Unlock()
	s.stopOnce.Do(func() { close(s.stop) })
	done := make(chan struct{})
	go func() {
		s.streams.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
	}
	// The turns the protocol adapters follow are streams too, which
	// Shutdown lets run to their end while ctx lasts (their clients may
	// have no way to resume). Past it they end, saying so; give their
	// handlers a moment to write that.
	s.abandonOnce.Do(func() { close(s.abandon) })
	t := time.NewTimer(abandonWait)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
	}
	return ctx.Err()
}

// abandonWait is how long Shutdown waits, once its context has ended, for
// the followers of turns to tell their clients.
const abandonWait = time.Second

// openStream counts a stream Shutdown waits for, unless Shutdown has
// begun.
func (s *Server) openStream() bool {
	s.streamsMu.Lock()
	defer s.streamsMu.Unlock()
	if s.streamsClosed {
		return false
	}
	s.streams.Add(1)
	return true
}

// Clients is the number of open streams (SSE and WebSocket).
func (s *Server) Clients() int64 { return s.clients.Load() }

// loopback reports whether the request came from this machine.
func loopback(r *http.Request) bool {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}

// noRoute answers a request no route takes: 405 with Allow when the path
// has routes for other methods, else 404.
func (s *Server) noRoute(w http.ResponseWriter, r *http.Request) {
	var allow []string
	for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete} {
		probe := r.Clone(r.Context())
		probe.Method = m
		if _, pattern := s.mux.Handler(probe); pattern != "/" && pattern != "" {
			allow = append(allow, m)
		}
	}
	if len(allow) > 0 {
		w.Header().Set("Allow", strings.Join(allow, ", "))
		writeError(w, r, s.log, &agentrt.Error{Kind: agentrt.FailInput, Code: agentrt.CodeMethodNotAllowed,
			Msg: fmt.Sprintf("%s %s: this endpoint takes %s", r.Method, r.URL.Path, strings.Join(allow, ", "))})
		return
	}
	writeError(w, r, s.log, &agentrt.Error{Kind: agentrt.FailInput, Code: agentrt.CodeNoRoute,
		Msg: fmt.Sprintf("no endpoint %s %s", r.Method, r.URL.Path)})
}
