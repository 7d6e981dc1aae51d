package a2a_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	spec "github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/a2aproject/a2a-go/v2/a2aclient/agentcard"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/gateway"
	"github.com/agentrt/agentrt/internal/echomodel"
	"github.com/agentrt/agentrt/server"
	"github.com/agentrt/agentrt/server/a2a"
	"github.com/agentrt/agentrt/session"
	"github.com/agentrt/agentrt/session/memstore"
	"github.com/agentrt/agentrt/tool"
)

// echo is the tests' scripted model (internal/echomodel).
var echo = echomodel.Model{FailMessage: "the model refused"}

// fixture is agentrt's server with the A2A endpoints, over a runner whose
// agent "assistant" has a tool "deploy" that needs an approval and a tool
// "gate" that waits until released.
type fixture struct {
	r       *agentrt.Runner
	srv     *server.Server
	http    *httptest.Server
	started chan struct{} // a gate call began
	release chan struct{} // closed: gate calls return
	stop    func()        // see close
}

type options struct {
	keys []server.Key
	cfg  a2a.Config
	// store is the session store; nil: a new memstore. Fixtures on one
	// store are replicas: two servers, each with its runner and gateway,
	// as two processes on one database.
	store session.Store
	// agents are served beside assistant.
	agents []*agentrt.Agent
	// policy is the gateway's for input to a source whose turn runs;
	// "": interrupt.
	policy gateway.Policy
	// strictWebhooks keeps cfg.AllowPrivateWebhooks as it is (else it is
	// set: the tests' webhooks are on 127.0.0.1).
	strictWebhooks bool
}

func newFixture(t *testing.T, o options) *fixture {
	t.Helper()
	f := &fixture{started: make(chan struct{}, 16), release: make(chan struct{})}
	gate := tool.Must(tool.New("gate", "waits until released", func(ctx context.Context, in struct{}) (string, error) {
		f.started <- struct{}{}
		select {
		case <-f.release:
			return "passed", nil
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}))
	deploy := tool.Must(tool.New("deploy", "deploys the service", func(ctx context.Context, in struct {
		Env string `json:"env"`
	}) (string, error) {
		return "deployed to " + in.Env, nil
	}))
	tools, err := tool.NewRegistry(gate, deploy)
	if err != nil {
		t.Fatal(err)
	}
	ag := &agentrt.Agent{Name: "assistant", Description: "Answers questions and deploys the service.", Model: echo,
		Tools: tools, Approval: agentrt.ApprovalPolicy{Ask: []string{"deploy"}}}
	if o.store == nil {
		o.store = memstore.New()
	}
	f.r, err = agentrt.NewRunner(agentrt.Config{Store: o.store, Agents: append([]*agentrt.Agent{ag}, o.agents...)})
	if err != nil {
		t.Fatal(err)
	}
	gw, err := gateway.New(gateway.Config{Runner: f.r, Policy: o.policy})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = gw.Run(ctx) })
	f.srv, err = server.New(server.Config{Runner: f.r, Gateway: gw, Keys: o.keys, Heartbeat: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if !o.strictWebhooks {
		o.cfg.AllowPrivateWebhooks = true
	}
	if o.cfg.PushPoll == 0 {
		o.cfg.PushPoll = 10 * time.Millisecond // replicas take tasks over at once
	}
	if err := a2a.Mount(f.srv, o.cfg); err != nil {
		t.Fatal(err)
	}
	f.http = httptest.NewServer(f.srv.Handler())
	f.stop = sync.OnceFunc(func() {
		f.http.CloseClientConnections()
		_ = f.srv.Shutdown(context.Background())
		f.http.Close()
		cancel()
		wg.Wait()
		_ = f.r.Close(context.Background())
	})
	t.Cleanup(f.stop)
	return f
}

// close stops the fixture's server, gateway and runner (once; the test's
// cleanup does it too), as a replica that goes away.
func (f *fixture) close(t *testing.T) {
	t.Helper()
	f.stop()
}

// bearer adds an API key to every request.
type bearer struct{ key string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.key)
	return http.DefaultTransport.RoundTrip(r)
}

// client is a2a-go's client of agent "assistant", found through its card,
// with API key key (none: "").
func (f *fixture) client(t *testing.T, key string) *a2aclient.Client {
	t.Helper()
	return f.agentClient(t, "assistant", key)
}

// agentClient is a2a-go's client of agent, found through its card, with
// API key key (none: "").
func (f *fixture) agentClient(t *testing.T, agent, key string) *a2aclient.Client {
	t.Helper()
	hc := &http.Client{}
	if key != "" {
		hc.Transport = bearer{key}
	}
	card := f.card(t, agent, key)
	c, err := a2aclient.NewFromCard(t.Context(), card, a2aclient.WithJSONRPCTransport(hc))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Destroy() })
	return c
}

// card resolves agent's card as a2a-go's client does, with API key key.
func (f *fixture) card(t *testing.T, agent, key string) *spec.AgentCard {
	t.Helper()
	var opts []agentcard.ResolveOption
	if key != "" {
		opts = append(opts, agentcard.WithRequestHeader("Authorization", "Bearer "+key))
	}
	card, err := agentcard.NewResolver(http.DefaultClient).Resolve(t.Context(), f.http.URL+"/v1/a2a/"+agent, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return card
}

// text is a user message of one text part.
func text(s string) *spec.Message { return spec.NewMessage(spec.MessageRoleUser, spec.NewTextPart(s)) }

// artifactText is the text of a task's artifacts.
func artifactText(t *spec.Task) string {
	var b strings.Builder
	for _, a := range t.Artifacts {
		for _, p := range a.Parts {
			b.WriteString(p.Text())
		}
	}
	return b.String()
}

// waitState follows the log of session id until it is status want.
func (f *fixture) waitStatus(t *testing.T, ctx context.Context, id string, want session.Status) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for ev, err := range f.r.Watch(ctx, id, 0) {
		if err != nil {
			t.Fatal(err)
		}
		if ev.Type != session.TypeRunFinished {
			continue
		}
		if s, err := f.r.Store().GetSession(ctx, id); err == nil && s.Status == want {
			return
		}
	}
	t.Fatalf("session %s never became %s", id, want)
}
