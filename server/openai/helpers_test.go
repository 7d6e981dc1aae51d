package openai_test

import (
	"context"
	"iter"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/gateway"
	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/server"
	"github.com/agentrt/agentrt/server/openai"
	"github.com/agentrt/agentrt/session/memstore"
	"github.com/agentrt/agentrt/tool"
)

// echo answers the last message with "echo: " and its text, a word a
// token; a user message "call NAME ARGS" makes it call tool NAME with
// ARGS first, and "fail" makes the model call fail.
type echo struct{}

func (echo) Name() string { return "echo" }

func (echo) Stream(ctx context.Context, req *model.Request) iter.Seq2[model.Chunk, error] {
	return func(yield func(model.Chunk, error) bool) {
		last := req.Messages[len(req.Messages)-1]
		if last.Role == model.RoleUser {
			if rest, ok := strings.CutPrefix(last.Text(), "call "); ok {
				name, args, _ := strings.Cut(rest, " ")
				yield(model.Chunk{ToolCalls: []model.ToolCallDelta{{Index: 0, ID: "call_1", Name: name, Arguments: args}},
					FinishReason: model.FinishToolCalls, Usage: &model.Usage{InputTokens: 3, OutputTokens: 2}}, nil)
				return
			}
			if last.Text() == "fail" {
				yield(model.Chunk{}, &model.Error{Code: model.CodeBadRequest, Message: "the model refuses"})
				return
			}
		}
		words := strings.SplitAfter("echo: "+last.Text(), " ")
		for i, w := range words {
			c := model.Chunk{Text: w}
			if i == len(words)-1 {
				c.FinishReason = model.FinishStop
				c.Usage = &model.Usage{InputTokens: 10, OutputTokens: 5}
			}
			if !yield(c, nil) {
				return
			}
		}
	}
}

// fixture is a server with the OpenAI adapter over a runner whose agent
// "assistant" has a weather tool that runs on the server and a deploy
// tool that needs a person's approval.
type fixture struct {
	r    *agentrt.Runner
	srv  *server.Server
	http *httptest.Server
}

func newFixture(t *testing.T, keys ...server.Key) *fixture {
	t.Helper()
	weather := tool.Must(tool.New("weather", "the weather in a city", func(ctx context.Context, in struct {
		City string `json:"city"`
	}) (string, error) {
		return "sunny in " + in.City, nil
	}))
	deploy := tool.Must(tool.New("deploy", "deploys", func(ctx context.Context, in struct {
		Env string `json:"env"`
	}) (string, error) {
		return "deployed to " + in.Env, nil
	}))
	tools, err := tool.NewRegistry(weather, deploy)
	if err != nil {
		t.Fatal(err)
	}
	agents := []*agentrt.Agent{
		{Name: "assistant", Description: "Answers questions.", SystemPrompt: "You help.", Model: echo{}, Tools: tools,
			Approval: agentrt.ApprovalPolicy{Ask: []string{"deploy"}}},
		{Name: "writer", Description: "Writes.", Model: echo{}},
	}
	f := &fixture{}
	f.r, err = agentrt.NewRunner(agentrt.Config{Store: memstore.New(), Agents: agents})
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
	f.srv, err = server.New(server.Config{Runner: f.r, Gateway: gw, Keys: keys, Heartbeat: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := openai.Mount(f.srv, openai.Config{Now: func() time.Time { return time.Unix(1700000000, 0) }}); err != nil {
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

// sessionOf is the session an answer names.
func sessionOf(t *testing.T, resp *http.Response) string {
	t.Helper()
	if resp == nil {
		t.Fatal("no response")
	}
	id := resp.Header.Get(openai.SessionHeader)
	if id == "" {
		t.Fatalf("the answer names no session (header %s)", openai.SessionHeader)
	}
	return id
}
