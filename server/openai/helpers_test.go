package openai_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/gateway"
	"github.com/agentrt/agentrt/internal/echomodel"
	"github.com/agentrt/agentrt/server"
	"github.com/agentrt/agentrt/server/openai"
	"github.com/agentrt/agentrt/session"
	"github.com/agentrt/agentrt/session/memstore"
	"github.com/agentrt/agentrt/tool"
)

// echo is the tests' scripted model (internal/echomodel).
var echo = echomodel.Model{FailMessage: "the model refuses"}

// fixture is a server with the OpenAI adapter over a runner whose agent
// "assistant" has a weather tool that runs on the server and a deploy
// tool that needs a person's approval.
type fixture struct {
	r     *agentrt.Runner
	srv   *server.Server
	http  *httptest.Server
	close func() // stops it all (once; the test's cleanup does it too)
}

// fixtureConfig changes a fixture: its API keys, its store (nil: a new
// memstore) and agents besides assistant and writer.
type fixtureConfig struct {
	keys   []server.Key
	store  session.Store
	agents []*agentrt.Agent
	// gateway, when set, changes the gateway's config.
	gateway func(*gateway.Config)
}

func newFixture(t testing.TB, keys ...server.Key) *fixture {
	t.Helper()
	return newFixtureWith(t, fixtureConfig{keys: keys})
}

func newFixtureWith(t testing.TB, cfg fixtureConfig) *fixture {
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
	agents := append([]*agentrt.Agent{
		{Name: "assistant", Description: "Answers questions.", SystemPrompt: "You help.", Model: echo, Tools: tools,
			Approval: agentrt.ApprovalPolicy{Ask: []string{"deploy"}}},
		{Name: "writer", Description: "Writes.", Model: echo},
	}, cfg.agents...)
	store := cfg.store
	if store == nil {
		store = memstore.New()
	}
	f := &fixture{}
	f.r, err = agentrt.NewRunner(agentrt.Config{Store: store, Agents: agents})
	if err != nil {
		t.Fatal(err)
	}
	gc := gateway.Config{Runner: f.r}
	if cfg.gateway != nil {
		cfg.gateway(&gc)
	}
	gw, err := gateway.New(gc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = gw.Run(ctx) })
	f.srv, err = server.New(server.Config{Runner: f.r, Gateway: gw, Keys: cfg.keys, Heartbeat: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := openai.Mount(f.srv, openai.Config{Now: func() time.Time { return time.Unix(1700000000, 0) }}); err != nil {
		t.Fatal(err)
	}
	f.http = httptest.NewServer(f.srv.Handler())
	f.close = sync.OnceFunc(func() {
		f.http.CloseClientConnections()
		_ = f.srv.Shutdown(context.Background())
		f.http.Close()
		cancel()
		wg.Wait()
		_ = f.r.Close(context.Background())
	})
	t.Cleanup(f.close)
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
