package agui_test

import (
	"context"
	"iter"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/gateway"
	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/server"
	"github.com/agentrt/agentrt/server/agui"
	"github.com/agentrt/agentrt/session/memstore"
	"github.com/agentrt/agentrt/tool"
)

// script is a model for any number of threads: it answers the last user
// message by what it says.
//
//   - "call NAME ARGS": calls tool NAME with ARGS, the arguments streamed
//     in two pieces; after the tool's result it answers "done: RESULT".
//   - "fail …": fails with a provider error that is not retried.
//   - "stall": starts streaming a call, then waits for its ctx to end.
//   - anything else: "echo: " and the message, a word per token.
type script struct{}

func (script) Name() string { return "script" }

func (script) Stream(ctx context.Context, req *model.Request) iter.Seq2[model.Chunk, error] {
	return func(yield func(model.Chunk, error) bool) {
		last := req.Messages[len(req.Messages)-1]
		if last.Role == model.RoleTool {
			words(yield, "done: "+last.Text())
			return
		}
		text := last.Text()
		switch {
		case strings.HasPrefix(text, "call "):
			name, args, _ := strings.Cut(strings.TrimPrefix(text, "call "), " ")
			half := len(args) / 2
			if !yield(model.Chunk{ToolCalls: []model.ToolCallDelta{{Index: 0, ID: "call_" + name, Name: name, Arguments: args[:half]}}}, nil) {
				return
			}
			yield(model.Chunk{ToolCalls: []model.ToolCallDelta{{Index: 0, Arguments: args[half:]}}, FinishReason: model.FinishToolCalls}, nil)
		case strings.HasPrefix(text, "fail"):
			yield(model.Chunk{}, &model.Error{Code: model.CodeBadRequest, Message: "the scripted model refuses"})
		case text == "stall":
			if !yield(model.Chunk{ToolCalls: []model.ToolCallDelta{{Index: 0, ID: "call_stall", Name: "lookup", Arguments: `{"q":`}}}, nil) {
				return
			}
			<-ctx.Done()
			yield(model.Chunk{}, ctx.Err())
		default:
			words(yield, "echo: "+text)
		}
	}
}

func words(yield func(model.Chunk, error) bool, text string) {
	ws := strings.SplitAfter(text, " ")
	for i, w := range ws {
		c := model.Chunk{Text: w}
		if i == len(ws)-1 {
			c.FinishReason = model.FinishStop
			c.Usage = &model.Usage{InputTokens: 10, OutputTokens: 5}
		}
		if !yield(c, nil) {
			return
		}
	}
}

// fixture is a server with the AG-UI adapter mounted, over a runner whose
// agent "assistant" has tools lookup and deploy (deploy asks approval).
type fixture struct {
	r    *agentrt.Runner
	srv  *server.Server
	http *httptest.Server
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	lookup := tool.Must(tool.New("lookup", "looks up", func(ctx context.Context, in struct {
		Q string `json:"q"`
	}) (string, error) {
		return "found " + in.Q, nil
	}))
	deploy := tool.Must(tool.New("deploy", "deploys", func(ctx context.Context, in struct {
		Env string `json:"env"`
	}) (string, error) {
		return "deployed to " + in.Env, nil
	}))
	tools, err := tool.NewRegistry(lookup, deploy)
	if err != nil {
		t.Fatal(err)
	}
	a := &agentrt.Agent{Name: "assistant", Model: script{}, Tools: tools, Approval: agentrt.ApprovalPolicy{Ask: []string{"deploy"}}}
	f := &fixture{}
	f.r, err = agentrt.NewRunner(agentrt.Config{Store: memstore.New(), Agents: []*agentrt.Agent{a}})
	if err != nil {
		t.Fatal(err)
	}
	gw, err := gateway.New(gateway.Config{Runner: f.r})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = gw.Run(ctx) })
	f.srv, err = server.New(server.Config{Runner: f.r, Gateway: gw, Heartbeat: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if err := agui.Mount(f.srv); err != nil {
		t.Fatal(err)
	}
	f.http = httptest.NewServer(f.srv.Handler())
	t.Cleanup(func() {
		f.http.CloseClientConnections()
		_ = f.srv.Shutdown(context.Background())
		f.http.Close()
		cancel()
		wg.Wait()
		_ = f.r.Close(context.Background())
	})
	return f
}
