package gateway_test

import (
	"context"
	"iter"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/gateway"
	"github.com/agentrt/agentrt/model"
)

// holdingModel holds a call whose last user message says "wait" until
// the call is abandoned, and reports when that happened; it answers
// anything else at once.
type holdingModel struct {
	entered chan struct{}
	stopped chan time.Time
}

func (m *holdingModel) Name() string { return "holding" }

func (m *holdingModel) Stream(ctx context.Context, req *model.Request) iter.Seq2[model.Chunk, error] {
	return func(yield func(model.Chunk, error) bool) {
		if !strings.Contains(lastUser(req), "wait") {
			yield(model.Chunk{Text: "ok", FinishReason: model.FinishStop}, nil)
			return
		}
		m.entered <- struct{}{}
		<-ctx.Done()
		m.stopped <- time.Now()
		yield(model.Chunk{}, ctx.Err())
	}
}

// BenchmarkInterrupt: the time from Submit of newer input to the moment
// the running turn's model call is abandoned (the interrupt policy).
// "here": the input is submitted to the gateway serving the source;
// "elsewhere": to another process's gateway on the same store (as
// `agentrt send` does), which the serving gateway sees at its next read
// of the source's inbox (Poll, 200 ms). p50 and p99 over the ops.
func BenchmarkInterrupt(b *testing.B) {
	for _, kind := range []string{"memory", "sqlite", "postgres"} {
		for _, where := range []string{"here", "elsewhere"} {
			b.Run(kind+"/"+where, func(b *testing.B) {
				store := benchStore(b, kind)
				m := &holdingModel{entered: make(chan struct{}, 1), stopped: make(chan time.Time, 1)}
				mk := func() (*agentrt.Runner, *gateway.Gateway) {
					a := &agentrt.Agent{Name: "assistant", Model: m}
					a.Compaction.Off = true
					r, err := agentrt.NewRunner(agentrt.Config{Store: store, Agents: []*agentrt.Agent{a}})
					if err != nil {
						b.Fatal(err)
					}
					g, err := gateway.New(gateway.Config{Runner: r})
					if err != nil {
						b.Fatal(err)
					}
					return r, g
				}
				r, g := mk()
				defer r.Close(context.Background())
				sender := g
				if where == "elsewhere" {
					r2, g2 := mk()
					defer r2.Close(context.Background())
					sender = g2
				}
				ctx, cancel := context.WithCancel(context.Background())
				done := make(chan struct{})
				go func() { g.Run(ctx); close(done) }()
				var lat []time.Duration
				for b.Loop() {
					if _, err := g.Submit(ctx, gateway.Input{Source: "chat", Text: "wait for it"}); err != nil {
						b.Fatal(err)
					}
					<-m.entered
					t0 := time.Now()
					if _, err := sender.Submit(ctx, gateway.Input{Source: "chat", Text: "one more thing"}); err != nil {
						b.Fatal(err)
					}
					lat = append(lat, (<-m.stopped).Sub(t0))
					for {
						if p, _ := g.Pending(ctx); len(p) == 0 && g.Serving() == 0 {
							break
						}
						time.Sleep(time.Millisecond) // waiting for the restarted turn to end, not synchronising the code under test
					}
				}
				cancel()
				<-done
				slices.Sort(lat)
				b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
				b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
			})
		}
	}
}
