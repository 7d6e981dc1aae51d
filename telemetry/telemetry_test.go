package telemetry_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/model/scripted"
	"github.com/agentrt/agentrt/session"
	"github.com/agentrt/agentrt/session/memstore"
	"github.com/agentrt/agentrt/telemetry"
	"github.com/agentrt/agentrt/tool"
	"github.com/agentrt/agentrt/tool/builtin"
)

// rig is a Runner observed by a Telemetry that reports to a registry and
// to an in-memory span exporter.
type rig struct {
	reg   *prometheus.Registry
	spans *tracetest.InMemoryExporter
	tel   *telemetry.Telemetry
	r     *agentrt.Runner
	store session.Store
}

// newRig builds a rig over store (nil: a new memstore). Spans are
// exported as they end, so they are all there when the run is.
func newRig(t *testing.T, store session.Store, cfg agentrt.Config, agents ...*agentrt.Agent) *rig {
	t.Helper()
	if store == nil {
		store = memstore.New()
	}
	rg := &rig{reg: prometheus.NewRegistry(), spans: tracetest.NewInMemoryExporter(), store: store}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(rg.spans))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	tel, err := telemetry.New(telemetry.Config{Registry: rg.reg, TracerProvider: tp, Provider: func(m string) string {
		if m == "unpriced" {
			return ""
		}
		return "openai"
	}})
	if err != nil {
		t.Fatal(err)
	}
	rg.tel = tel
	cfg.Store, cfg.Agents, cfg.Observer = store, agents, tel
	if cfg.Now == nil {
		cfg.Now = stepClock()
	}
	r, err := agentrt.NewRunner(cfg)
	if err != nil {
		t.Fatal(err)
	}
	rg.r = r
	return rg
}

// stepClock returns a clock that advances one millisecond per reading:
// every event has its own time, and spans a duration.
func stepClock() func() time.Time {
	var mu sync.Mutex
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	return func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		now = now.Add(time.Millisecond)
		return now
	}
}

// session creates a session of agent.
func (rg *rig) session(t *testing.T, agent string) string {
	t.Helper()
	s, err := rg.r.CreateSession(context.Background(), agent, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	return s.ID
}

// run runs a turn to its end and returns its result.
func (rg *rig) run(t *testing.T, ctx context.Context, id, text string) *agentrt.Result {
	t.Helper()
	res, err := agentrt.Collect(rg.r.Run(ctx, id, agentrt.Input{Text: text}))
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	return res
}

var usage = model.Usage{InputTokens: 10, OutputTokens: 5}

// reply is a scripted reply with usage that calls the tools of calls
// (name, arguments pairs), or answers text when there are none.
func reply(text string, calls ...string) scripted.Reply {
	u := usage
	r := scripted.Reply{Text: text, Usage: &u}
	for i := 0; i+1 < len(calls); i += 2 {
		r.ToolCalls = append(r.ToolCalls, scripted.ToolCall(calls[i], calls[i+1]))
	}
	return r
}

// tools are the calculator, a tool that always fails ("fail") and one
// that must never run ("rm", denied by toolsAgent's policy).
func tools(t testing.TB) *tool.Registry {
	t.Helper()
	fail := tool.Must(tool.New("fail", "fails", func(context.Context, struct{}) (string, error) {
		return "", errors.New("disk full")
	}))
	rm := tool.Must(tool.New("rm", "removes", func(context.Context, struct{}) (string, error) {
		t.Error("rm ran: it is denied")
		return "", nil
	}))
	reg, err := tool.NewRegistry(builtin.Calculator(), fail, rm)
	if err != nil {
		t.Fatal(err)
	}
	return reg
}

// toolsAgent is an agent "calc" on m with tools(t), rm denied.
func toolsAgent(t testing.TB, m model.Model) *agentrt.Agent {
	return &agentrt.Agent{Name: "calc", Model: m, Tools: tools(t), Approval: agentrt.ApprovalPolicy{Deny: []string{"rm"}}}
}

// toolsScript is a turn of three rounds: two calls at once (one fails),
// a denied call, then the answer.
func toolsScript() *scripted.Model {
	return scripted.New("m",
		reply("", "calculator", `{"expression":"2+3"}`, "fail", `{}`),
		reply("", "rm", `{}`),
		reply("5, and the disk is full."))
}

// A Telemetry with neither registry nor tracer provider observes nothing
// and fails nothing.
func TestNothingToReport(t *testing.T) {
	tel, err := telemetry.New(telemetry.Config{})
	if err != nil {
		t.Fatal(err)
	}
	r, err := agentrt.NewRunner(agentrt.Config{Store: memstore.New(), Agents: []*agentrt.Agent{toolsAgent(t, toolsScript())}, Observer: tel})
	if err != nil {
		t.Fatal(err)
	}
	res, err := agentrt.Collect(r.Run(context.Background(), "s", agentrt.Input{Text: "go", Agent: "calc"}))
	if err != nil || res.Status != session.StatusDone {
		t.Fatalf("run: %+v %v", res, err)
	}
	// The streams gauge still works, for a server that uses it anyway.
	tel.OpenStreams("sse").Inc()
}
