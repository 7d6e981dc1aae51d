package app

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/config"
	"github.com/agentrt/agentrt/internal/mcptest"
	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/model/scripted"
	"github.com/agentrt/agentrt/session"
)

// serveMCP serves s over Streamable HTTP on 127.0.0.1 until the test ends
// and returns its URL.
func serveMCP(t *testing.T, s *mcp.Server) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	return "http://" + l.Addr().String()
}

func textTool(s *mcp.Server, name, text string) {
	s.AddTool(&mcp.Tool{Name: name, Description: "says " + text, InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}, nil
		})
}

func specNames(specs []model.ToolSpec) []string {
	out := make([]string, len(specs))
	for i, s := range specs {
		out[i] = s.Name
	}
	return out
}

// An MCP server that changes its tools while the app runs: the agents
// whose tool patterns match see the new list in their next model request,
// call the added tool, get a tool error (not a failed run) for a removed
// one, and ask a person before a new tool the approval rules name. An
// agent whose patterns match none of them does not change.
func TestMCPToolChangesReachTheAgents(t *testing.T) {
	s := mcp.NewServer(&mcp.Implementation{Name: "go", Version: "1"}, nil)
	textTool(s, "hello", "hi")
	url := serveMCP(t, s)
	cfg, err := config.Parse("agentrt.yaml", []byte(`
mcp_servers:
  go: {url: "`+url+`"}
models:
  s: {provider: demo}
agents:
  a:
    model: s
    tools: ["go.*"]
    approval: {ask: ["go.secret*"]}
  calc:
    model: s
    tools: [calculator]
`), nil)
	if err != nil {
		t.Fatal(err)
	}
	m := scripted.New("s",
		scripted.Reply{Text: "one"},
		scripted.Reply{ToolCalls: []scripted.Call{scripted.ToolCall("go.added", `{}`)}},
		scripted.Reply{Text: "two"},
		scripted.Reply{ToolCalls: []scripted.Call{scripted.ToolCall("go.hello", `{}`)}},
		scripted.Reply{Text: "three"},
		scripted.Reply{ToolCalls: []scripted.Call{scripted.ToolCall("go.secret_plan", `{}`)}},
	).Record()
	changed := make(chan error, 16)
	a, err := Build(context.Background(), cfg, Options{StoreDSN: "memory:", Models: map[string]model.Model{"s": m},
		OnMCPToolsChanged: func(server string, err error) { changed <- err }})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	agent, _ := a.Runner.Agent("a")
	calc, _ := a.Runner.Agent("calc")
	calcGen := calc.Tools.Generation()
	ctx := context.Background()
	sess, err := a.Runner.CreateSession(ctx, "a", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	turn := func(text string) *agentrt.Result {
		t.Helper()
		res, err := agentrt.Collect(a.Runner.Run(ctx, sess.ID, agentrt.Input{Text: text}))
		if err != nil {
			t.Fatalf("turn %q: %v", text, err)
		}
		return res
	}
	if res := turn("one"); res.Status != session.StatusDone {
		t.Fatalf("turn one: %s %s", res.Status, res.Reason)
	}

	textTool(s, "added", "new")
	textTool(s, "secret_plan", "classified")
	s.RemoveTools("hello")
	want := []string{"go.added", "go.secret_plan"}
	timeout := time.After(30 * time.Second)
	for !slices.Equal(specNames(agent.ToolSpecs()), want) {
		select {
		case err := <-changed:
			if err != nil {
				t.Fatalf("applying the server's change: %v", err)
			}
		case <-timeout:
			t.Fatalf("agent a's tools never became %v (have %v)", want, specNames(agent.ToolSpecs()))
		}
	}

	res := turn("two")
	if res.Status != session.StatusDone {
		t.Fatalf("turn two: %s %s", res.Status, res.Reason)
	}
	if trs := toolResultsOf(res.Events); len(trs) != 1 || !trs[0].OK || !strings.Contains(string(trs[0].Result), "new") {
		t.Errorf("the call of the added tool: %+v", trs)
	}
	res = turn("three")
	if res.Status != session.StatusDone {
		t.Fatalf("turn three: %s %s (a call of a removed tool must not fail the run)", res.Status, res.Reason)
	}
	if trs := toolResultsOf(res.Events); len(trs) != 1 || trs[0].OK || !strings.Contains(trs[0].Error, `unknown tool "go.hello"`) {
		t.Errorf("the call of the removed tool: %+v, want an unknown tool error", trs)
	}
	if res := turn("four"); res.Status != session.StatusWaiting {
		t.Errorf("a call of a new tool the approval rules ask about: %s %s, want waiting", res.Status, res.Reason)
	}

	reqs := m.Requests()
	for i, want := range [][]string{{"go.hello"}, {"go.added", "go.secret_plan"}, {"go.added", "go.secret_plan"}, {"go.added", "go.secret_plan"}} {
		if got := specNames(reqs[i].Tools); !slices.Equal(got, want) {
			t.Errorf("model request %d offered %v, want %v", i+1, got, want)
		}
	}
	if got := specNames(calc.ToolSpecs()); !slices.Equal(got, []string{"calculator"}) || calc.Tools.Generation() != calcGen {
		t.Errorf("the agent without MCP tools changed: %v", got)
	}
	if got := a.Tools.Names(); slices.Contains(got, "go.hello") || !slices.Contains(got, "go.added") {
		t.Errorf("the app's tools: %v", got)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	mcptest.NoGoroutines(t, leftovers...)
}

func toolResultsOf(events []*session.Event) []*session.ToolResult {
	var out []*session.ToolResult
	for _, e := range events {
		if d, ok := e.Data.(*session.ToolResult); ok {
			out = append(out, d)
		}
	}
	return out
}
