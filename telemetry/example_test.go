package telemetry_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/common/expfmt"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/model/scripted"
	"github.com/agentrt/agentrt/session/memstore"
	"github.com/agentrt/agentrt/telemetry"
)

// A Telemetry observes a Runner: every run of every agent is counted in
// the registry (and traced, given a tracer provider; see TracerProvider).
// A server would serve the registry with telemetry.Handler(reg).
func Example() {
	ctx := context.Background()
	reg := prometheus.NewRegistry()
	tel, err := telemetry.New(telemetry.Config{Registry: reg})
	if err != nil {
		panic(err)
	}
	m := scripted.New("gpt-4o-mini", scripted.Reply{Text: "Hello!"})
	r, err := agentrt.NewRunner(agentrt.Config{
		Store:    memstore.New(),
		Agents:   []*agentrt.Agent{{Name: "assistant", Model: m}},
		Observer: tel,
	})
	if err != nil {
		panic(err)
	}
	if _, err := agentrt.Collect(r.Run(ctx, "chat-1", agentrt.Input{Text: "hi", Agent: "assistant"})); err != nil {
		panic(err)
	}
	b, err := testutil.GatherAndFormat(reg, expfmt.TypeTextPlain, "agentrt_runs_finished_total", "agentrt_model_calls_total")
	if err != nil {
		panic(err)
	}
	for l := range strings.Lines(string(b)) {
		if !strings.HasPrefix(l, "#") {
			fmt.Print(l)
		}
	}
	// Output:
	// agentrt_model_calls_total{model="gpt-4o-mini",outcome="ok"} 1
	// agentrt_runs_finished_total{agent="assistant",status="done"} 1
}
