package mcp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"net"
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

// echo answers the last user message with "echo: " and its text.
//
// A user message "call NAME ARGS" makes it call tool NAME with ARGS
// first and then answer "echo: " and the results, joined by "; ". Calls
// joined by " && " are made at once (in parallel); " then " starts the
// next round's calls: "call deploy {} && deploy {} then lookup {}".
// "block" waits for the gate to open (saying so on entered first);
// "fail" fails as a provider refusing the key does.
type echo struct {
	entered chan struct{}
	gate    chan struct{}
}

func (*echo) Name() string { return "echo" }

func (m *echo) Stream(ctx context.Context, req *model.Request) iter.Seq2[model.Chunk, error] {
	return func(yield func(model.Chunk, error) bool) {
		u := len(req.Messages) - 1
		for u > 0 && req.Messages[u].Role != model.RoleUser {
			u--
		}
		user, after := req.Messages[u].Text(), req.Messages[u+1:]
		switch user {
		case "block":
			select {
			case m.entered <- struct{}{}:
			case <-ctx.Done():
				yield(model.Chunk{}, ctx.Err())
				return
			}
			select {
			case <-m.gate:
			case <-ctx.Done():
				yield(model.Chunk{}, ctx.Err())
				return
			}
		case "fail":
			yield(model.Chunk{}, &model.Error{Code: model.CodeAuth, Message: "the provider refused the key"})
			return
		}
		text := user
		if rest, ok := strings.CutPrefix(user, "call "); ok {
			rounds := strings.Split(rest, " then ")
			done := 0
			for _, msg := range after {
				if len(msg.ToolCalls) > 0 {
					done++
				}
			}
			if done < len(rounds) {
				var calls []model.ToolCallDelta
				for i, c := range strings.Split(rounds[done], " && ") {
					name, args, _ := strings.Cut(c, " ")
					calls = append(calls, model.ToolCallDelta{Index: i, ID: fmt.Sprintf("call_%d_%d", done+1, i+1), Name: name, Arguments: args})
				}
				yield(model.Chunk{ToolCalls: calls, FinishReason: model.FinishToolCalls}, nil)
				return
			}
			var results []string
			for i := len(after) - 1; i >= 0 && after[i].Role == model.RoleTool; i-- {
				results = append([]string{after[i].Text()}, results...)
			}
			text = strings.Join(results, "; ")
		}
		yield(model.Chunk{Text: "echo: " + text, FinishReason: model.FinishStop,
			Usage: &model.Usage{InputTokens: 10, OutputTokens: 5}}, nil)
	}
}

type fixture struct {
	r     *agentrt.Runner
	srv   *server.Server
	http  *httptest.Server
	model *echo
}

var keys = []server.Key{{Key: "key-a", Tenant: "ta", Principal: "alice"}, {Key: "key-b", Tenant: "tb", Principal: "bob"}}

// newFixture is agentrt serve in a test: an agent "assistant" with a
// tool lookup and a tool deploy that needs approval, and a second agent
// "other", behind API keys key-a (tenant ta) and key-b (tenant tb), with
// the MCP endpoint mounted; and the extra agents.
func newFixture(t *testing.T, extra ...*agentrt.Agent) *fixture {
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
	m := &echo{entered: make(chan struct{}), gate: make(chan struct{})}
	agents := []*agentrt.Agent{
		{Name: "assistant", Description: "Answers questions and deploys.", Model: m, Tools: tools,
			Approval: agentrt.ApprovalPolicy{Ask: []string{"deploy"}}},
		{Name: "other", Model: m},
	}
	agents = append(agents, extra...)
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
	return &fixture{r: r, srv: srv, http: hs, model: m}
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

// connectStdio is an MCP client of the fixture's agents served as
// agentrt mcp serve serves them (mcp.New), in tenant ta, over a pipe: the
// SDK's latest protocol, 2026-07-28, unless version says otherwise. mw,
// when set, wraps the server's handling of each request.
func (f *fixture) connectStdio(t *testing.T, version string, opts *sdk.ClientOptions, mw sdk.Middleware) *sdk.ClientSession {
	t.Helper()
	cs, _ := f.stdio(t, version, opts, mw)
	return cs
}

// stdio is connectStdio, and the client's end of the pipe: closing it is
// the client process going away.
func (f *fixture) stdio(t *testing.T, version string, opts *sdk.ClientOptions, mw sdk.Middleware) (*sdk.ClientSession, net.Conn) {
	t.Helper()
	s, err := mcp.New(mcp.Config{Server: f.srv, Tenant: "ta", Actor: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	if mw != nil {
		s.AddReceivingMiddleware(mw)
	}
	serverEnd, clientEnd := net.Pipe()
	ss, err := s.Connect(t.Context(), &sdk.IOTransport{Reader: serverEnd, Writer: serverEnd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ss.Close() })
	c := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, opts)
	cs, err := c.Connect(t.Context(), &sdk.IOTransport{Reader: clientEnd, Writer: clientEnd}, &sdk.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs, clientEnd
}

// protocol is the protocol version cs negotiated.
func protocol(cs *sdk.ClientSession) string { return cs.InitializeResult().ProtocolVersion }

// newSession makes a session of the assistant in tenant ta.
func (f *fixture) newSession(t *testing.T) string {
	t.Helper()
	ss, err := f.r.CreateSession(tenantCtx(t, "ta"), "assistant", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	return ss.ID
}

// rest makes a request of the REST API with key-a and decodes its JSON
// answer into out (when not nil); it returns the status.
func (f *fixture) rest(t *testing.T, method, path, body string, out any) int {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, f.http.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer key-a")
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if out != nil {
		if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
			t.Fatalf("%s %s: %d: %v", method, path, resp.StatusCode, err)
		}
	}
	return resp.StatusCode
}

// finished waits for the run of session id (tenant ta) to finish, and
// returns how.
func (f *fixture) finished(t *testing.T, id string) *session.RunFinished {
	t.Helper()
	for ev, err := range f.r.Watch(tenantCtx(t, "ta"), id, 0) {
		if err != nil {
			t.Fatal(err)
		}
		if d, ok := ev.Data.(*session.RunFinished); ok && d.Status != session.StatusInterrupted {
			return d
		}
	}
	t.Fatalf("the watch of session %s ended before its run did", id)
	return nil
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

// called is what a call made by callAsync got.
type called struct {
	res *sdk.CallToolResult
	out mcp.Output
	err error
}

// callAsync makes a call on a goroutine of its own and sends what it got
// on done.
func callAsync(ctx context.Context, cs *sdk.ClientSession, params *sdk.CallToolParams, done chan<- called) {
	res, err := cs.CallTool(ctx, params)
	c := called{res: res, err: err}
	if err == nil && res.StructuredContent != nil {
		b, _ := json.Marshal(res.StructuredContent)
		c.err = json.Unmarshal(b, &c.out)
	}
	done <- c
}

// check fails the test if the call failed, and returns c.
func (c called) check(t *testing.T) called {
	t.Helper()
	if c.err != nil {
		t.Fatal(c.err)
	}
	return c
}

// waitEntered waits for the model to block on its gate ("block"); a call
// that ends first fails the test.
func (f *fixture) waitEntered(t *testing.T, done <-chan called) {
	t.Helper()
	select {
	case <-f.model.entered:
	case c := <-done:
		t.Fatalf("the call ended before the model blocked: %v %+v", c.err, c.out)
	}
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
