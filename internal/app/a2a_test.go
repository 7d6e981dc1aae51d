package app

import (
	"context"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/model/scripted"
	"github.com/agentrt/agentrt/server"
	"github.com/agentrt/agentrt/server/a2a"
	"github.com/agentrt/agentrt/session"
	"github.com/agentrt/agentrt/tool"
)

// remoteA2A serves app a's agents over A2A on 127.0.0.1, behind API key
// key (tenant team), and returns the server's URL.
func remoteA2A(t *testing.T, a *App, key string) string {
	t.Helper()
	gw, err := a.NeedGateway()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = gw.Run(ctx) })
	srv, err := server.New(server.Config{Runner: a.Runner, Gateway: gw, Heartbeat: time.Hour,
		Keys: []server.Key{{Key: key, Tenant: "team"}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := a2a.Mount(srv, a2a.Config{}); err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(func() {
		hs.CloseClientConnections()
		_ = srv.Shutdown(context.Background())
		hs.Close()
		cancel()
		wg.Wait()
	})
	return hs.URL
}

// An agent that lists an entry of a2a_agents in its tools delegates to
// that remote agent: the call goes over A2A (with the entry's headers, the
// remote server's API key here) and its answer is the tool's result.
func TestA2AAgentFromConfig(t *testing.T) {
	remote := buildYAML(t, "models:\n  r: {provider: demo}\nagents:\n  researcher: {model: r, description: Looks things up.}\n",
		Options{Models: map[string]model.Model{"r": scripted.New("r", scripted.Reply{Text: "the remote found 42"})}})
	url := remoteA2A(t, remote, "k-remote")

	local := scripted.New("l",
		scripted.Reply{ToolCalls: []scripted.Call{scripted.ToolCall("helper", `{"task":"find the answer"}`)}},
		scripted.Reply{Text: "done"})
	src := "models:\n  l: {provider: demo}\n" +
		"a2a_agents:\n  helper: {url: " + url + "/v1/a2a/researcher, description: A researcher on another server., headers: {Authorization: Bearer k-remote}}\n" +
		"agents:\n  a: {model: l, tools: [helper]}\n"
	a := buildYAML(t, src, Options{Models: map[string]model.Model{"l": local}})
	ag, ok := a.Runner.Agent("a")
	if !ok {
		t.Fatal("no agent a")
	}
	ht, ok := ag.Tools.Get("helper")
	if !ok {
		t.Fatalf("agent a has no tool helper; it has %v", ag.Tools.Names())
	}
	if got := ht.Definition().Description; got != "A researcher on another server." {
		t.Errorf("the tool's description %q, want the entry's", got)
	}
	res, err := a.Runner.Ask(context.Background(), "a", "ask the researcher")
	if err != nil {
		t.Fatal(err)
	}
	var results []*session.ToolResult
	for _, e := range res.Events {
		if d, ok := e.Data.(*session.ToolResult); ok {
			results = append(results, d)
		}
	}
	if len(results) != 1 || !results[0].OK || !strings.Contains(string(results[0].Result), "the remote found 42") {
		t.Fatalf("tool results %+v, want the remote agent's answer", results)
	}
	// The call is a delegation to the remote task, to its answer.
	var started *session.SubagentStarted
	var finished *session.SubagentFinished
	for _, e := range res.Events {
		switch d := e.Data.(type) {
		case *session.SubagentStarted:
			started = d
		case *session.SubagentFinished:
			finished = d
		}
	}
	if started == nil || started.Agent != "helper" || !strings.HasPrefix(started.ChildSession, a2a.RemoteChildPrefix) ||
		finished == nil || finished.ChildSession != started.ChildSession || finished.Answer != "the remote found 42" {
		t.Errorf("the delegation: %+v, %+v; want the remote task started and answered", started, finished)
	}
	// The entry's timeout (10m by default) bounds the call, not the
	// registry's default for tools.
	if got := tool.MetaOf(ht).Timeout; got != 10*time.Minute {
		t.Errorf("the call's timeout %v, want 10m", got)
	}
	// The remote session is in the remote's store, under the caller's
	// session id (the A2A context), in the tenant of the key sent.
	s, err := remote.Store.GetSession(session.WithTenant(context.Background(), "team"), res.SessionID)
	if err != nil || s.Agent != "researcher" {
		t.Errorf("the remote session %v: %v; want one of researcher under the calling session's id", s, err)
	}
}

// Without the entry's headers the remote server refuses the call: the
// headers are what reached it above.
func TestA2AAgentHeadersAreSent(t *testing.T) {
	remote := buildYAML(t, "models:\n  r: {provider: demo}\nagents:\n  researcher: {model: r}\n",
		Options{Models: map[string]model.Model{"r": scripted.New("r", scripted.Reply{Text: "hi"})}})
	url := remoteA2A(t, remote, "k-remote")
	local := scripted.New("l",
		scripted.Reply{ToolCalls: []scripted.Call{scripted.ToolCall("helper", `{"task":"x"}`)}},
		scripted.Reply{Text: "done"})
	a := buildYAML(t, "models:\n  l: {provider: demo}\na2a_agents:\n  helper: {url: "+url+"/v1/a2a/researcher}\nagents:\n  a: {model: l, tools: [helper]}\n",
		Options{Models: map[string]model.Model{"l": local}})
	res, err := a.Runner.Ask(context.Background(), "a", "go")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range res.Events {
		if d, ok := e.Data.(*session.ToolResult); ok {
			if d.OK || !strings.Contains(d.Error, "401") && !strings.Contains(strings.ToLower(d.Error), "unauthorized") {
				t.Errorf("a call without the key: %+v, want it refused", d)
			}
			return
		}
	}
	t.Fatal("no tool result")
}

// A remote agent named like a built-in tool cannot be told apart from it.
func TestA2AAgentNameClashesWithTool(t *testing.T) {
	_, err := buildYAMLErr(t, "models:\n  d: {provider: demo}\na2a_agents:\n  calculator: {url: \"http://127.0.0.1:1/a2a\"}\nagents:\n  a: {model: d, tools: [calculator]}\n", Options{})
	if err == nil || !strings.Contains(err.Error(), `agentrt.yaml:4:3: a2a_agents.calculator: "calculator" is also the name of a tool`) {
		t.Fatalf("a remote agent named calculator: %v", err)
	}
}
