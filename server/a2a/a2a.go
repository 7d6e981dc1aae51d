// Package a2a serves agentrt's agents over the A2A protocol (v1.0,
// JSON-RPC binding), on the same server, gateway, log and tenants as the
// native HTTP API.
//
// Each agent is an A2A agent at /v1/a2a/{agent}, its card at
// /v1/a2a/{agent}/.well-known/agent-card.json. A task is one turn of a
// session: the task's contextId is the session's id, so the messages of
// one context go to one session, which the REST API, the other protocols
// and the CLI read and answer as any other. The turn's streamed text is
// the task's artifact (replaced by the agent's final answer when the turn
// ends); a human request turns the task to INPUT_REQUIRED, and the next
// message on the same task answers it and the turn goes on; CancelTask
// cancels the session's run (Runner.Cancel).
//
// The protocol itself (methods, streams, push notifications) is a2a-go's
// server (a2asrv) over an AgentExecutor that runs turns through the
// gateway, but for the common case, a SendStreamingMessage that starts a
// task, whose stream the adapter writes itself in a2a-go's wire format
// (serveStream): a2a-go's task manager copies the task several times an
// update. Both are over a task store of the adapter's: a task is derived
// from what the session store holds — the input its id names and the
// events of the turn that answers it — so that any process on the store
// finds it, after a restart too (see taskStore). Push configs are records
// of the task's session in the store too, and a task's updates are pushed
// by whichever server follows it (see push.go).
package a2a

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"

	spec "github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/server"
	"github.com/agentrt/agentrt/session"
)

// Config configures the A2A endpoints. The zero value serves every agent
// of the server's runner.
type Config struct {
	// Log is where the A2A server logs; nil: slog.Default().
	Log *slog.Logger
	// PublicURL is the server's URL as clients reach it
	// ("https://agents.example.com"), for the agent cards' interface
	// URLs; empty: the scheme and host of the request for the card.
	PublicURL string
	// AllowPrivateWebhooks lets push notifications go to loopback and
	// private addresses. Off by default: a client could otherwise make the
	// server POST into its own network (A2A's SSRF guidance). A push
	// config's URL is checked when the config is made (its host, and the
	// addresses its name resolves to) and again when a push dials it.
	AllowPrivateWebhooks bool
	// Resolver resolves a push config's host when the config is made;
	// nil: net.DefaultResolver.
	Resolver Resolver
	// PushTimeout bounds one push notification; zero: 10 s.
	PushTimeout time.Duration
	// PushPoll is how often a server looks for tasks whose updates
	// nobody pushes (their pusher stopped, their session moved on); zero:
	// 2 s.
	PushPoll time.Duration
	// PushLease is how long a server pushes a task's updates without
	// renewing its claim to, after which another takes the task over
	// (at once when the server is known gone); zero:
	// agentrt.DefaultLeaseTTL.
	PushLease time.Duration
	// Version is the agents' version on their cards; empty: "1".
	Version string
	// KeepAlive is how often an idle A2A stream (SendStreamingMessage,
	// SubscribeToTask) gets an SSE comment, so that proxies and clients
	// keep it open while a turn waits on a model or a tool; zero: the
	// server's heartbeat.
	KeepAlive time.Duration
}

// Paths of the A2A endpoints, {agent} an agent's name.
const (
	RPCPath  = "/v1/a2a/{agent}"
	CardPath = "/v1/a2a/{agent}/.well-known/agent-card.json"
)

// Mount adds the A2A endpoints of every agent of srv's runner to srv:
// JSON-RPC at RPCPath and the agent card at CardPath. Requests get the
// server's authentication: a task belongs to the tenant that created it,
// and another tenant's tasks and sessions are not found.
func Mount(srv *server.Server, cfg Config) error {
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	if cfg.PushTimeout <= 0 {
		cfg.PushTimeout = 10 * time.Second
	}
	if cfg.PushPoll <= 0 {
		cfg.PushPoll = 2 * time.Second
	}
	if cfg.PushLease <= 0 {
		cfg.PushLease = agentrt.DefaultLeaseTTL
	}
	if cfg.Version == "" {
		cfg.Version = "1"
	}
	if cfg.KeepAlive <= 0 {
		cfg.KeepAlive = srv.Heartbeat()
	}
	cfg.PublicURL = strings.TrimRight(cfg.PublicURL, "/")
	r := srv.Runner()
	names := r.AgentNames()
	if len(names) == 0 {
		return fmt.Errorf("a2a: the runner has no agent to serve")
	}
	m := &mux{cfg: cfg, r: r, agents: map[string]*agentEndpoint{}}
	// Push configs are records of the store's: a store without them
	// serves no push notifications.
	if recs, ok := r.Store().(session.Records); ok {
		m.pushes = newPusher(srv, cfg, recs, func(agent string) *taskStore {
			if ep := m.agents[agent]; ep != nil {
				return ep.h.tasks
			}
			return nil
		}, slog.New(quiet{cfg.Log.Handler()}).With("protocol", "a2a"))
	}
	for _, name := range names {
		a, ok := r.Agent(name)
		if !ok {
			return fmt.Errorf("a2a: agent %q listed but not found", name)
		}
		ep, err := newAgentEndpoint(srv, cfg, a, m.pushes)
		if err != nil {
			return err
		}
		m.agents[name] = ep
	}
	if m.pushes != nil && !srv.Go(m.pushes.run) {
		return fmt.Errorf("a2a: the server is shutting down")
	}
	srv.Mount(http.MethodPost, RPCPath, true, http.HandlerFunc(m.serveRPC))
	srv.Mount(http.MethodGet, CardPath, false, http.HandlerFunc(m.serveCard))
	srv.Mount(http.MethodGet, "/v1/a2a/.well-known/agent-card.json", false, http.HandlerFunc(m.serveNoCard))
	return nil
}

// mux routes a request to its agent's endpoint.
type mux struct {
	cfg    Config
	r      *agentrt.Runner
	agents map[string]*agentEndpoint // set by Mount, then only read
	pushes *pusher                   // nil: the store keeps no records
}

// agentEndpoint is one agent's A2A server: its own tasks, push configs
// and JSON-RPC handler.
type agentEndpoint struct {
	agent *agentrt.Agent
	srv   *server.Server
	h     *handler
	rpc   http.Handler
}

func newAgentEndpoint(srv *server.Server, cfg Config, a *agentrt.Agent, pushes *pusher) (*agentEndpoint, error) {
	tasks, err := newTaskStore(srv, a.Name)
	if err != nil {
		return nil, err
	}
	x := &executor{srv: srv, agent: a.Name, tasks: tasks}
	lg := slog.New(quiet{cfg.Log.Handler()}).With("agent", a.Name, "protocol", "a2a")
	// a2a-go neither keeps push configs nor pushes: the handler keeps
	// them (push methods) and the pusher pushes (see push.go).
	caps := capabilities(false)
	h := &handler{
		RequestHandler: a2asrv.NewHandler(x,
			a2asrv.WithTaskStore(tasks),
			a2asrv.WithCapabilityChecks(&caps),
			a2asrv.WithLogger(lg),
		),
		srv: srv, x: x, tasks: tasks, pushes: pushes, log: lg,
	}
	rpc := a2asrv.NewJSONRPCHandler(publicHandler{h: h, log: lg}, a2asrv.WithTransportKeepAlive(cfg.KeepAlive))
	return &agentEndpoint{agent: a, srv: srv, h: h, rpc: rpc}, nil
}

// quiet is the log of a2a-go's server: it reports routine steps of every
// task at info level ("local subscription queue closed"), which the
// server's log keeps only when it is at debug level; warnings and errors
// always.
type quiet struct{ slog.Handler }

func (q quiet) Enabled(ctx context.Context, l slog.Level) bool {
	return q.Handler.Enabled(ctx, l) && (l >= slog.LevelWarn || q.Handler.Enabled(ctx, slog.LevelDebug))
}

func (q quiet) WithAttrs(as []slog.Attr) slog.Handler { return quiet{q.Handler.WithAttrs(as)} }

func (q quiet) WithGroup(name string) slog.Handler { return quiet{q.Handler.WithGroup(name)} }

// capabilities are the card's: streaming, and push notifications when
// the store keeps push configs.
func capabilities(push bool) spec.AgentCapabilities {
	return spec.AgentCapabilities{Streaming: true, PushNotifications: push}
}

func (m *mux) endpoint(w http.ResponseWriter, r *http.Request) (*agentEndpoint, bool) {
	name := r.PathValue("agent")
	ep, ok := m.agents[name]
	if !ok {
		writeError(w, http.StatusNotFound, agentrt.CodeNotFound, fmt.Sprintf("no agent %q (agents: %s)", name, strings.Join(slices.Sorted(maps.Keys(m.agents)), ", ")))
		return nil, false
	}
	return ep, true
}

// serveRPC serves a JSON-RPC request to an agent: a request whose params
// do not decode is answered here (see checkParams), a SendStreamingMessage
// that starts a task by the adapter's own stream (serveStream), any other
// by a2a-go's server, with the body as it came.
func (m *mux) serveRPC(w http.ResponseWriter, r *http.Request) {
	ep, ok := m.endpoint(w, r)
	if !ok {
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		msg := "the request's body could not be read: " + err.Error()
		if mbe := (*http.MaxBytesError)(nil); errors.As(err, &mbe) {
			msg = fmt.Sprintf("the request's body is over %d bytes", mbe.Limit)
		}
		writeRPCError(w, nil, rpcError(spec.ErrInvalidRequest, "%s", msg))
		return
	}
	var rq rpcRequest
	if json.Unmarshal(body, &rq) == nil && rq.JSONRPC == "2.0" && validID(rq.ID) {
		params, err := checkParams(rq.Method, rq.Params)
		switch {
		case err != nil && (rq.Method == methodStream || rq.Method == "SubscribeToTask"):
			// A stream's error is an event of the stream, as a2a-go's.
			startSSE(w)
			(&sseWriter{w: w, rc: http.NewResponseController(w), resp: rpcResult{JSONRPC: "2.0", ID: rq.ID}}).fail(err)
			return
		case err != nil:
			writeRPCError(w, rq.ID, err)
			return
		}
		if req, ok := params.(*spec.SendMessageRequest); ok && rq.Method == methodStream && ep.serveStream(w, r, rq.ID, req, m.cfg.KeepAlive) {
			return
		}
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	ep.rpc.ServeHTTP(flusher{w}, r)
}

// writeRPCError answers a JSON-RPC request (of id id) with err.
func writeRPCError(w http.ResponseWriter, id any, err error) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(struct {
		JSONRPC string         `json:"jsonrpc"`
		ID      any            `json:"id"`
		Error   map[string]any `json:"error"`
	}{"2.0", id, rpcErrorObject(err)})
}

// flusher lets a2a-go's SSE writer, which asks for an http.Flusher,
// flush through the server's wrapped ResponseWriter (which unwraps).
type flusher struct{ http.ResponseWriter }

func (f flusher) Flush() { _ = http.NewResponseController(f.ResponseWriter).Flush() }

func (f flusher) Unwrap() http.ResponseWriter { return f.ResponseWriter }

func (m *mux) serveCard(w http.ResponseWriter, r *http.Request) {
	if ep, ok := m.endpoint(w, r); ok {
		m.serveCardOf(w, r, ep)
	}
}

// serveCardOf answers with ep's agent card.
func (m *mux) serveCardOf(w http.ResponseWriter, r *http.Request, ep *agentEndpoint) {
	base := m.cfg.PublicURL
	if base == "" {
		scheme := "http"
		if r.TLS != nil {
			scheme = "https"
		}
		base = scheme + "://" + r.Host
	}
	card := Card(ep.agent, base+"/v1/a2a/"+ep.agent.Name, m.cfg.Version)
	card.Capabilities.PushNotifications = m.pushes != nil
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(card)
}

// serveNoCard answers where an agent's URL without its trailing slash
// leads a client that resolves the card's path against it as a relative
// URL (@a2a-js/sdk's createFromUrl does: /v1/a2a/NAME gives
// /v1/a2a/.well-known/agent-card.json). With one agent, that URL can
// only mean it: its card is served here too. With several, nothing in
// the request says which agent the client was given (the path lost the
// name, and fetch sends no referrer), and another agent's card would
// lead the client to talk to the wrong agent: the answer is a 404
// saying where the cards are.
func (m *mux) serveNoCard(w http.ResponseWriter, r *http.Request) {
	if len(m.agents) == 1 {
		m.serveCardOf(w, r, slices.Collect(maps.Values(m.agents))[0])
		return
	}
	var cards []string
	for _, name := range slices.Sorted(maps.Keys(m.agents)) {
		cards = append(cards, "/v1/a2a/"+name+"/.well-known/agent-card.json")
	}
	writeError(w, http.StatusNotFound, agentrt.CodeNotFound, "no agent card here: this server has several agents, each with its own card ("+strings.Join(cards, ", ")+
		"); a client that finds the card from an agent's URL (as @a2a-js/sdk's createFromUrl does) needs the URL with its trailing slash, /v1/a2a/NAME/, or the card's own URL")
}

// Card is agent a's A2A card, served at url: its description, a skill for
// what it is for and one for each of its tools, JSON-RPC at url, streaming
// and push notifications (which a server over a store that keeps no
// records, session.Records, has not).
func Card(a *agentrt.Agent, url, version string) *spec.AgentCard {
	desc := a.Description
	if desc == "" {
		desc = "agentrt agent " + a.Name
	}
	skills := []spec.AgentSkill{{ID: a.Name, Name: a.Name, Description: desc, Tags: []string{"agent"}}}
	if a.Tools != nil {
		for _, d := range a.Tools.Definitions() {
			skills = append(skills, spec.AgentSkill{ID: a.Name + "." + d.Name, Name: d.Name, Description: d.Description, Tags: []string{"tool"}})
		}
	}
	return &spec.AgentCard{
		Name:                a.Name,
		Description:         desc,
		Version:             version,
		SupportedInterfaces: []*spec.AgentInterface{{URL: url, ProtocolBinding: spec.TransportProtocolJSONRPC, ProtocolVersion: spec.Version}},
		Capabilities:        capabilities(true),
		DefaultInputModes:   []string{"text/plain", "application/json"},
		DefaultOutputModes:  []string{"text/plain"},
		Skills:              skills,
	}
}

// writeError answers with the server's error shape.
func writeError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(server.ErrorBody{Error: server.ErrorDetail{Code: code, Message: msg}})
}
