package mcp_test

import (
	"context"
	"encoding/json"
	"iter"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/gateway"
	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/server"
	"github.com/agentrt/agentrt/server/mcp"
	"github.com/agentrt/agentrt/session"
	"github.com/agentrt/agentrt/session/memstore"
	"github.com/agentrt/agentrt/tool"
)

// echo answers the last message with "echo: " and its text; a user
// message "call NAME ARGS" makes it call tool NAME with ARGS first.
type echo struct{}

func (echo) Name() string { return "echo" }

func (echo) Stream(ctx context.Context, req *model.Request) iter.Seq2[model.Chunk, error] {
	return func(yield func(model.Chunk, error) bool) {
		last := req.Messages[len(req.Messages)-1]
		if last.Role == model.RoleUser {
			if rest, ok := strings.CutPrefix(last.Text(), "call "); ok {
				name, args, _ := strings.Cut(rest, " ")
				yield(model.Chunk{ToolCalls: []model.ToolCallDelta{{Index: 0, ID: "call_1", Name: name, Arguments: args}},
					FinishReason: model.FinishToolCalls}, nil)
				return
			}
		}
		yield(model.Chunk{Text: "echo: " + last.Text(), FinishReason: model.FinishStop,
			Usage: &model.Usage{InputTokens: 10, OutputTokens: 5}}, nil)
	}
}

type fixture struct {
	r    *agentrt.Runner
	http *httptest.Server
}

var keys = []server.Key{{Key: "key-a", Tenant: "ta", Principal: "alice"}, {Key: "key-b", Tenant: "tb", Principal: "bob"}}

// newFixture is agentrt serve in a test: an agent "assistant" with a
// tool lookup and a tool deploy that needs approval, and a second agent
// "other", behind API keys key-a (tenant ta) and key-b (tenant tb), with
// the MCP endpoint mounted.
func newFixture(t *testing.T) *fixture {
	t.Helper()
	lookup := tool.Must(tool.New("lookup", "looks up", func(ctx context.Context, in struct{}) (string, error) { return "found", nil }))
	deploy := tool.Must(tool.New("deploy", "deploys", func(ctx context.Context, in struct {
		Env string `json:"env"`
	}) (string, error) {
		return "deployed to " + in.Env, nil
	}))
	tools, err := tool.NewRegistry(lookup, deploy)
	if err != nil {
		t.Fatal(err)
	}
	agents := []*agentrt.Agent{
		{Name: "assistant", Description: "Answers questions and deploys.", Model: echo{}, Tools: tools,
			Approval: agentrt.ApprovalPolicy{Ask: []string{"deploy"}}},
		{Name: "other", Model: echo{}},
	}
	r, err := agentrt.NewRunner(agentrt.Config{Store: memstore.New(), Agents: agents})
	if err != nil {
		t.Fatal(err)
	}
	gw, err := gateway.New(gateway.Config{Runner: r})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = gw.Run(ctx) })
	srv, err := server.New(server.Config{Runner: r, Gateway: gw, Keys: keys})
	if err != nil {
		t.Fatal(err)
	}
	if err := mcp.Mount(srv, mcp.Config{}); err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(func() {
		hs.CloseClientConnections()
		_ = srv.Shutdown(context.Background())
		hs.Close()
		cancel()
		wg.Wait()
		_ = r.Close(context.Background())
	})
	return &fixture{r: r, http: hs}
}

type bearer struct{ key string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.key)
	return http.DefaultTransport.RoundTrip(r)
}

// connect is an MCP client of the fixture with key, at protocol version
// (empty: the SDK's latest).
func (f *fixture) connect(t *testing.T, key, version string, opts *sdk.ClientOptions) *sdk.ClientSession {
	t.Helper()
	c := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, opts)
	tr := &sdk.StreamableClientTransport{Endpoint: f.http.URL + mcp.Path, HTTPClient: &http.Client{Transport: bearer{key}}}
	cs, err := c.Connect(t.Context(), tr, &sdk.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

func call(t *testing.T, cs *sdk.ClientSession, params *sdk.CallToolParams) (*sdk.CallToolResult, mcp.Output) {
	t.Helper()
	res, err := cs.CallTool(t.Context(), params)
	if err != nil {
		t.Fatal(err)
	}
	var out mcp.Output
	if res.StructuredContent != nil {
		b, _ := json.Marshal(res.StructuredContent)
		if err := json.Unmarshal(b, &out); err != nil {
			t.Fatal(err)
		}
	}
	return res, out
}

func text(res *sdk.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

func tenantCtx(t *testing.T, tenant string) context.Context {
	return session.WithTenant(t.Context(), tenant)
}
