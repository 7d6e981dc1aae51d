package app

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/agentrt/agentrt/config"
	"github.com/agentrt/agentrt/gateway"
	"github.com/agentrt/agentrt/session"
)

const gatewayYAML = `store: memory
max_input_bytes: 100
models:
  d: {provider: demo}
gateway:
  debounce: 2s
  max_wait: 10s
  policy: queue
  workers: 4
  poll: 50ms
  max_pending: 7
  max_pending_bytes: 900
  max_restarts: 2
  sources:
    chat: {session: support, policy: reject, max_pending: 3}
    mail: {debounce: 1m, max_pending_bytes: 200}
agents:
  assistant: {model: d, tools: [calculator], gateway: {debounce: 1s, policy: interrupt, max_restarts: 1}}
  quiet: {model: d}
server: {shutdown_grace: 3s}
`

// The gateway's configuration is the config's gateway block, its agents'
// settings and the sources' session mapping.
func TestGatewayConfig(t *testing.T) {
	cfg, err := config.Parse("agentrt.yaml", []byte(gatewayYAML), nil)
	if err != nil {
		t.Fatal(err)
	}
	gc := GatewayConfig(cfg, nil, Options{})
	want := gateway.Config{
		Debounce: 2 * time.Second, MaxWait: 10 * time.Second, Policy: gateway.Queue, Workers: 4, Poll: 50 * time.Millisecond,
		MaxInputBytes: 100, MaxPending: 7, MaxPendingBytes: 900, MaxRestarts: 2, ShutdownGrace: 3 * time.Second,
		Agents: map[string]gateway.SourceConfig{"assistant": {Debounce: time.Second, Policy: gateway.Interrupt, MaxRestarts: 1}},
		Sources: map[string]gateway.SourceConfig{
			"chat": {Policy: gateway.Reject, MaxPending: 3},
			"mail": {Debounce: time.Minute, MaxPendingBytes: 200},
		},
	}
	if diff := cmp.Diff(want, gc, cmpopts.IgnoreFields(gateway.Config{}, "SessionFor")); diff != "" {
		t.Errorf("gateway config (-want +got):\n%s", diff)
	}
	for source, sess := range map[string]string{"chat": "support", "mail": "mail", "web-42": "web-42"} {
		if got, err := gc.SessionFor(source); got != sess || err != nil {
			t.Errorf("SessionFor(%q) = %q, %v; want %q", source, got, err, sess)
		}
	}
}

// turnDone is a module after the agent's that tells the test each turn
// it sees end.
type turnDone chan *gateway.Turn

func (turnDone) Name() string { return "test-done" }
func (turnDone) Order() int   { return gateway.AgentOrder + 10 }
func (d turnDone) Run(_ context.Context, t *gateway.Turn) error {
	d <- t
	return nil
}

// The app's gateway submits to the sources' sessions and answers them
// while RunGateway runs; Close stops the loop and waits for it, and a
// RunGateway after Close fails.
func TestAppGateway(t *testing.T) {
	cfg, err := config.Parse("agentrt.yaml", []byte("store: memory\ngateway: {sources: {chat: {session: support}}}\nmodels:\n  d: {provider: demo}\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	done := make(turnDone, 1)
	var failures []error
	a, err := Build(t.Context(), cfg, Options{GatewayModules: []gateway.Module{done},
		GatewayOnError: func(_ string, err error) { failures = append(failures, err) }})
	if err != nil {
		t.Fatal(err)
	}
	g, err := a.NeedGateway()
	if err != nil {
		t.Fatal(err)
	}
	ctx := session.WithTenant(t.Context(), "acme")
	sub, err := g.Submit(ctx, gateway.Input{Source: "chat", Text: "what is 6*7"})
	if err != nil {
		t.Fatal(err)
	}
	if sub.Session != "support" {
		t.Errorf("the chat source's input went to session %q, want support", sub.Session)
	}
	other, err := g.Submit(ctx, gateway.Input{Source: "web", Text: "   ", Parts: []session.InputPart{{Type: "data", Data: []byte(`{"x":1}`)}}})
	if err != nil || other.Session != "web" {
		t.Errorf("a source without a mapping: %+v, %v; want its own session", other, err)
	}
	ran := make(chan error, 1)
	go func() { ran <- a.RunGateway(context.Background()) }()
	for range 2 {
		turn := <-done
		res, ok := turn.Result()
		if !ok || res.Status != session.StatusDone || turn.Tenant != "acme" {
			t.Errorf("the turn of source %s: %+v (tenant %s), want done in tenant acme", turn.Source, res, turn.Tenant)
		}
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	// Close waits until the gateway's loop has returned (RunGateway's
	// deferred close of its stopped channel, after g.Run); the value
	// reaches ran a moment later, from RunGateway's goroutine, so it is
	// received rather than polled (polling flaked in CI).
	if err := <-ran; err != nil {
		t.Errorf("RunGateway: %v", err)
	}
	if err := a.RunGateway(context.Background()); !errors.Is(err, errClosed) {
		t.Errorf("RunGateway after Close: %v, want %v", err, errClosed)
	}
	if len(failures) > 0 {
		t.Errorf("failures: %v", failures)
	}
}
