package telemetry_test

import (
	"context"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/session/memstore"
	"github.com/agentrt/agentrt/telemetry"
)

// BenchmarkTelemetry is the cost of observing a turn of three rounds
// (two concurrent calls, a denied one, an answer: 3 model calls, 3 tool
// results, 7 spans): without an observer, with metrics, and with metrics
// and spans (the SDK's batching processor, whose exporter drops them).
func BenchmarkTelemetry(b *testing.B) {
	cases := []struct {
		name           string
		metrics, spans bool
	}{{"none", false, false}, {"metrics", true, false}, {"metrics+traces", true, true}}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			ctx := context.Background()
			m := toolsScript()
			a := toolsAgent(b, m)
			cfg := agentrt.Config{Store: memstore.New(), Agents: []*agentrt.Agent{a}}
			if c.metrics {
				tc := telemetry.Config{Registry: prometheus.NewRegistry()}
				if c.spans {
					tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(tracetest.NewNoopExporter()))
					defer func() { _ = tp.Shutdown(ctx) }()
					tc.TracerProvider = tp
				}
				tel, err := telemetry.New(tc)
				if err != nil {
					b.Fatal(err)
				}
				cfg.Observer = tel
			}
			r, err := agentrt.NewRunner(cfg)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				m.Reset()
				s, err := r.CreateSession(ctx, "calc", "", nil)
				if err != nil {
					b.Fatal(err)
				}
				res, err := agentrt.Collect(r.Run(ctx, s.ID, agentrt.Input{Text: "go"}))
				if err != nil || res.Status != "done" {
					b.Fatal(res, err)
				}
				if err := r.DeleteSession(ctx, s.ID, true); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
