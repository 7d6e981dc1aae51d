package agentrt_test

import (
	"context"
	"fmt"
	"iter"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/internal/pgtest"
	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/session"
	"github.com/agentrt/agentrt/session/memstore"
	"github.com/agentrt/agentrt/session/postgres"
	"github.com/agentrt/agentrt/session/sqlite"
	"github.com/agentrt/agentrt/tool"
)

// loadModel plays the benchmark turn for any number of sessions at once:
// it calls add while the turn has fewer than three tool results, then
// answers; each call waits delay first, as a model's latency.
type loadModel struct{ delay time.Duration }

func (loadModel) Name() string { return "load" }

func (m loadModel) Stream(ctx context.Context, req *model.Request) iter.Seq2[model.Chunk, error] {
	return func(yield func(model.Chunk, error) bool) {
		if m.delay > 0 {
			t := time.NewTimer(m.delay)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				yield(model.Chunk{}, ctx.Err())
				return
			}
		}
		results := 0
		for i := len(req.Messages) - 1; i >= 0 && req.Messages[i].Role != model.RoleUser; i-- {
			if req.Messages[i].Role == model.RoleTool {
				results++
			}
		}
		if results < 3 {
			yield(model.Chunk{ToolCalls: []model.ToolCallDelta{{Index: 0, ID: "c" + strconv.Itoa(results),
				Name: "add", Arguments: `{"a":1,"b":2}`}}, FinishReason: model.FinishToolCalls}, nil)
			return
		}
		yield(model.Chunk{Text: "done", FinishReason: model.FinishStop}, nil)
	}
}

func loadRunner(b testing.TB, store session.Store, delay time.Duration) *agentrt.Runner {
	reg, err := tool.NewRegistry(tool.Must(tool.New("add", "adds two numbers", add)))
	if err != nil {
		b.Fatal(err)
	}
	r, err := agentrt.NewRunner(agentrt.Config{Store: store, Agents: []*agentrt.Agent{
		{Name: "bench", Model: loadModel{delay}, Tools: reg},
	}})
	if err != nil {
		b.Fatal(err)
	}
	return r
}

func loadStores(b *testing.B) map[string]func() session.Store {
	return map[string]func() session.Store{
		"memory": func() session.Store { return memstore.New() },
		"sqlite": func() session.Store {
			st, err := sqlite.Open(context.Background(), filepath.Join(b.TempDir(), "load.db"))
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { st.Close() })
			return st
		},
		"sqlite-full": func() session.Store {
			st, err := sqlite.Open(context.Background(), "file:"+filepath.Join(b.TempDir(), "load.db")+"?_synchronous=FULL")
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { st.Close() })
			return st
		},
		"postgres": func() session.Store {
			dsn, _ := pgtest.Schema(b)
			st, err := postgres.Open(context.Background(), dsn)
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { st.Close() })
			return st
		},
	}
}

// BenchmarkConcurrentSessions runs 1,000 sessions' turns at once, each
// model call taking 50 ms: one op is all 1,000 turns. Compare the stores'
// times in one run. Each turn creates its session (Send with the agent);
// the "-existing" sub-benchmarks create the sessions with the timer
// stopped and time their turns only, as a service running turns of its
// conversations does.
func BenchmarkConcurrentSessions(b *testing.B) {
	const sessions = 1000
	ctx := context.Background()
	stores := loadStores(b)
	for _, name := range []string{"memory", "sqlite", "sqlite-full", "postgres", "memory-existing", "sqlite-existing", "postgres-existing"} {
		b.Run(name, func(b *testing.B) {
			store, existing := strings.CutSuffix(name, "-existing")
			r := loadRunner(b, stores[store](), 50*time.Millisecond)
			round := 0
			for b.Loop() {
				round++
				if existing {
					b.StopTimer()
					for i := range sessions {
						if _, err := r.CreateSession(ctx, "bench", fmt.Sprintf("r%d-s%d", round, i), nil); err != nil {
							b.Fatal(err)
						}
					}
					b.StartTimer()
				}
				var wg sync.WaitGroup
				errs := make(chan error, sessions)
				for i := range sessions {
					wg.Go(func() {
						id := fmt.Sprintf("r%d-s%d", round, i)
						res, err := r.Send(ctx, id, agentrt.Input{Text: "add", Agent: "bench"})
						if err != nil || res.Text != "done" {
							errs <- fmt.Errorf("%s: %v %v", id, res, err)
						}
					})
				}
				wg.Wait()
				close(errs)
				for err := range errs {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkClients runs 16 clients, each taking turns back to back in
// sessions of its own, each model call taking 50 ms (as in
// BenchmarkConcurrentSessions): one op is one turn, so turns per second is
// 1e9 / (ns/op). The sub-benchmarks named "-nolatency" take no time in the
// model, to show the stores' own throughput.
func BenchmarkClients(b *testing.B) {
	const clients = 16
	ctx := context.Background()
	stores := loadStores(b)
	for _, name := range []string{"memory", "sqlite", "sqlite-full", "postgres", "memory-nolatency", "sqlite-nolatency", "sqlite-full-nolatency", "postgres-nolatency"} {
		b.Run(name, func(b *testing.B) {
			store, lat := strings.TrimSuffix(name, "-nolatency"), 50*time.Millisecond
			if store != name {
				lat = 0
			}
			r := loadRunner(b, stores[store](), lat)
			var mu sync.Mutex
			n := 0
			next := func() (int, bool) {
				mu.Lock()
				defer mu.Unlock()
				if n >= b.N {
					return 0, false
				}
				n++
				return n, true
			}
			b.ResetTimer()
			var wg sync.WaitGroup
			for c := range clients {
				wg.Go(func() {
					for {
						i, ok := next()
						if !ok {
							return
						}
						id := fmt.Sprintf("c%d-%d", c, i)
						if res, err := r.Send(ctx, id, agentrt.Input{Text: "add", Agent: "bench"}); err != nil || res.Text != "done" {
							b.Error(id, res, err)
							return
						}
					}
				})
			}
			wg.Wait()
		})
	}
}
