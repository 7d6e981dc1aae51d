// Package mcp serves agentrt's agents as MCP tools, on the official MCP
// Go SDK: each agent is a tool whose input is a message (and optionally
// the session to continue) and whose output is the agent's answer, with
// structured content naming the session, the run, its status and usage.
//
// It is served two ways over the same runner, gateway and log: Streamable
// HTTP at /v1/mcp of agentrt serve (Mount: the server's API keys and
// tenants apply), and stdio (New, run by agentrt mcp serve).
//
// A request for a person during a call (an approval, a question, a
// choice) is put to the MCP client as an elicitation when the client
// supports it: over the 2025 protocol versions as an elicitation/create
// request while the call waits, over 2026-07-28 as the call's input
// requests (the client answers and calls again with the request state).
// Over Streamable HTTP the SDK's handler keeps an MCP session per client,
// which it serves at versions up to 2025-11-25; 2026-07-28 is stdio's.
// A client without elicitation gets a result whose status is waiting and
// which names each request and how to answer it (REST, CLI, or the same
// tool call again once answered). With a progress token, the call sends
// progress notifications as the agent works: rounds, tool calls, results.
package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/auth"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/server"
	"github.com/agentrt/agentrt/session"
	agenttool "github.com/agentrt/agentrt/tool"
)

// Path is where Mount serves the Streamable HTTP endpoint.
const Path = "/v1/mcp"

// Config configures the MCP server.
type Config struct {
	// Server runs the turns (SubmitTurn) and holds the runner. Required.
	Server *server.Server
	// Tenant and Actor scope the calls of a client that brings no
	// identity of its own (stdio); over HTTP the API key's apply. Empty:
	// session.DefaultTenant, and "mcp".
	Tenant string
	Actor  string
	// Version is the version the server reports; empty: "dev".
	Version string
}

// New returns an MCP server with one tool per agent of cfg.Server's
// runner, named as the agent and described by its Description.
func New(cfg Config) (*sdk.Server, error) {
	if cfg.Server == nil {
		return nil, errors.New("mcp: a server is required")
	}
	if cfg.Tenant == "" {
		cfg.Tenant = session.DefaultTenant
	}
	if err := session.CheckTenant(cfg.Tenant); err != nil {
		return nil, err
	}
	if cfg.Actor == "" {
		cfg.Actor = "mcp"
	}
	if cfg.Version == "" {
		cfg.Version = "dev"
	}
	in, err := jsonschema.For[Input](nil)
	if err != nil {
		return nil, err
	}
	raw, err := json.Marshal(in)
	if err != nil {
		return nil, err
	}
	out, err := jsonschema.For[Output](nil)
	if err != nil {
		return nil, err
	}
	s := sdk.NewServer(&sdk.Implementation{Name: "agentrt", Version: cfg.Version},
		&sdk.ServerOptions{Capabilities: &sdk.ServerCapabilities{Tools: &sdk.ToolCapabilities{}}})
	r := cfg.Server.Runner()
	for _, name := range r.AgentNames() {
		a, _ := r.Agent(name)
		desc := a.Description
		if desc == "" {
			desc = "Ask the agent " + name + "."
		}
		desc += " Give the session of an earlier answer to continue that conversation."
		v, err := agenttool.NewValidator(agenttool.Definition{Name: name, InputSchema: raw})
		if err != nil {
			return nil, err
		}
		t := &tool{cfg: cfg, agent: name, args: v}
		s.AddTool(&sdk.Tool{Name: name, Description: desc, InputSchema: in, OutputSchema: out,
			Annotations: &sdk.ToolAnnotations{Title: name, OpenWorldHint: ptr(true)}}, t.call)
	}
	return s, nil
}

func ptr[T any](v T) *T { return &v }

// Mount serves the agents over Streamable HTTP at /v1/mcp (POST for
// messages, GET for the server's stream, DELETE to end an MCP session),
// behind srv's authentication: every call runs in the tenant of the API
// key that made it, and an MCP session answers only the key (tenant and
// principal) that opened it.
func Mount(srv *server.Server, cfg Config) error {
	cfg.Server = srv
	s, err := New(cfg)
	if err != nil {
		return err
	}
	// The server's browser policy (server/origin.go) has judged the
	// request's Host, Origin and Content-Type as for every route; the
	// SDK's own Host check (a non-loopback Host on a loopback listener is
	// 403, in plain text) would refuse what the policy allows — a name in
	// server.allowed_hosts, any Host with API keys — so it is off.
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s },
		&sdk.StreamableHTTPOptions{DisableLocalhostProtection: true})
	// The SDK ties an MCP session to the identity in the request's
	// TokenInfo (a request of another identity gets 403), and hands the
	// TokenInfo to each call: it is how the tenant reaches the tool. The
	// server has authenticated the request already; its tenant and
	// principal become the TokenInfo. The bearer the SDK's middleware
	// wants is not read again (a request without keys configured has
	// none, and gets a placeholder).
	verify := func(ctx context.Context, _ string, r *http.Request) (*auth.TokenInfo, error) {
		tenant, actor := session.TenantOf(ctx), agentrt.ActorOf(ctx)
		return &auth.TokenInfo{UserID: tenant + "\x00" + actor, Expiration: time.Now().Add(24 * time.Hour),
			Extra: map[string]any{extraTenant: tenant, extraActor: actor}}, nil
	}
	bearer := auth.RequireBearerToken(verify, nil)(h)
	hh := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") == "" {
			r = r.Clone(r.Context())
			r.Header.Set("Authorization", "Bearer local")
		}
		ew := &errorWriter{ResponseWriter: w}
		bearer.ServeHTTP(ew, r)
		ew.finish(srv, r)
	})
	for _, m := range []string{"POST", "GET", "DELETE"} {
		srv.Mount(m, Path, true, hh)
	}
	return nil
}

const (
	extraTenant = "agentrt_tenant"
	extraActor  = "agentrt_actor"
)
