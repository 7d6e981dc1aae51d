package gateway_test

import (
	"context"
	"fmt"
	"iter"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/gateway"
	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/session"
	"github.com/agentrt/agentrt/session/memstore"
)

// quickModel answers at once.
type quickModel struct{}

func (quickModel) Name() string { return "quick" }

func (quickModel) Stream(context.Context, *model.Request) iter.Seq2[model.Chunk, error] {
	return func(yield func(model.Chunk, error) bool) {
		yield(model.Chunk{Text: "ok", FinishReason: model.FinishStop}, nil)
	}
}

// benchStores are the stores the gateway's benchmarks run on.
func benchStores(b *testing.B) map[string]func() session.Store {
	return map[string]func() session.Store{
		"memory": func() session.Store { return memstore.New() },
	}
}

// BenchmarkBursts: sources each sending a burst of 3 inputs, the turns
// answering them (one a source), debounce 50 ms. One op is every source's
// burst answered; the turns run is reported (it must equal the sources),
// and the delay from a source's last input to its turn's start (p50,
// p99) beside the window.
func BenchmarkBursts(b *testing.B) {
	const sources = 2000
	const window = 50 * time.Millisecond
	for name, mk := range benchStores(b) {
		b.Run(name, func(b *testing.B) {
			var delays []time.Duration
			turns := 0
			for b.Loop() {
				store := mk()
				a := &agentrt.Agent{Name: "assistant", Model: quickModel{}}
				a.Compaction.Off = true
				r, err := agentrt.NewRunner(agentrt.Config{Store: store, Agents: []*agentrt.Agent{a}})
				if err != nil {
					b.Fatal(err)
				}
				var (
					mu   sync.Mutex
					last = map[string]time.Time{}
				)
				g, err := gateway.New(gateway.Config{Runner: r, Debounce: window, Workers: 256,
					Modules: []gateway.Module{&startProbe{at: func(src string) {
						mu.Lock()
						delays = append(delays, time.Since(last[src]))
						turns++
						mu.Unlock()
					}}}})
				if err != nil {
					b.Fatal(err)
				}
				ctx, cancel := context.WithCancel(context.Background())
				done := make(chan struct{})
				go func() { g.Run(ctx); close(done) }()
				var wg sync.WaitGroup
				for i := range sources {
					wg.Go(func() {
						src := fmt.Sprint("s", i)
						for j := range 3 {
							if _, err := g.Submit(ctx, gateway.Input{Source: src, Text: fmt.Sprint("part ", j)}); err != nil {
								b.Error(err)
								return
							}
						}
						mu.Lock()
						last[src] = time.Now()
						mu.Unlock()
					})
				}
				wg.Wait()
				for {
					p, err := g.Pending(ctx)
					if err != nil {
						b.Fatal(err)
					}
					mu.Lock()
					n := turns
					mu.Unlock()
					if len(p) == 0 && n%sources == 0 {
						break
					}
					time.Sleep(10 * time.Millisecond) // waiting for the work to end, not a synchronisation of the code under test
				}
				cancel()
				<-done
				r.Close(context.Background())
			}
			slices.Sort(delays)
			b.ReportMetric(float64(turns)/float64(b.N), "turns/op")
			b.ReportMetric(float64(delays[len(delays)/2].Microseconds())/1000, "p50-start-ms")
			b.ReportMetric(float64(delays[len(delays)*99/100].Microseconds())/1000, "p99-start-ms")
		})
	}
}

// startProbe is a module before the agent that reports when a turn starts.
type startProbe struct{ at func(source string) }

func (*startProbe) Name() string { return "probe" }
func (*startProbe) Order() int   { return 1 }
func (p *startProbe) Run(_ context.Context, t *gateway.Turn) error {
	if t.Restart == 0 {
		p.at(t.Source)
	}
	return nil
}

// BenchmarkSubmit: Submit's inputs per second, alone.
func BenchmarkSubmit(b *testing.B) {
	for name, mk := range benchStores(b) {
		b.Run(name, func(b *testing.B) {
			store := mk()
			r, err := agentrt.NewRunner(agentrt.Config{Store: store, Agents: []*agentrt.Agent{{Name: "assistant", Model: quickModel{}}}})
			if err != nil {
				b.Fatal(err)
			}
			g, err := gateway.New(gateway.Config{Runner: r})
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			var n atomic.Int64
			b.SetParallelism(4)
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					i := n.Add(1)
					if _, err := g.Submit(ctx, gateway.Input{Source: fmt.Sprint("s", i%1000), Text: "hello"}); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}

// A source whose turn is done holds no memory in the gateway.
func TestIdleSourcesHoldNothing(t *testing.T) {
	e := newEnv(t, gateway.Config{})
	stop := e.run(t)
	for i := range 500 {
		e.submit(t, fmt.Sprint("s", i), "hi")
	}
	for {
		if p, _ := e.g.Pending(context.Background()); len(p) == 0 && e.g.Serving() == 0 {
			break
		}
		time.Sleep(5 * time.Millisecond) // waiting for the turns to end
	}
	stop()
	if n := e.g.Serving(); n != 0 {
		t.Fatalf("%d sources still served after their turns", n)
	}
}
