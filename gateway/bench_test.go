package gateway_test

import (
	"context"
	"database/sql"
	"flag"
	"fmt"
	"iter"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/gateway"
	"github.com/agentrt/agentrt/internal/pgtest"
	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/session"
	"github.com/agentrt/agentrt/session/memstore"
	"github.com/agentrt/agentrt/session/postgres"
	"github.com/agentrt/agentrt/session/sqlite"

	_ "modernc.org/sqlite"
)

// quickModel answers at once.
type quickModel struct{}

func (quickModel) Name() string { return "quick" }

func (quickModel) Stream(context.Context, *model.Request) iter.Seq2[model.Chunk, error] {
	return func(yield func(model.Chunk, error) bool) {
		yield(model.Chunk{Text: "ok", FinishReason: model.FinishStop}, nil)
	}
}

// benchStore opens a store of the kind for a benchmark.
func benchStore(b *testing.B, kind string) session.Store {
	ctx := context.Background()
	switch kind {
	case "sqlite":
		st, err := sqlite.Open(ctx, filepath.Join(b.TempDir(), "bench.db"))
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { st.Close() })
		return st
	case "postgres":
		dsn, _ := pgtest.Schema(b)
		st, err := postgres.Open(ctx, dsn)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { st.Close() })
		return st
	}
	return memstore.New()
}

var (
	burstSources = flag.Int("bursts.sources", 10000, "BenchmarkBursts: the sources")
	burstEvery   = flag.Duration("bursts.every", time.Millisecond, "BenchmarkBursts: a new source every")
)

// BenchmarkBursts: sources arriving at a steady rate (-bursts.every, 1 ms),
// each sending a burst of 3 inputs 10 ms apart, debounce 50 ms, the
// scripted model answering at once. One op is every source's burst
// answered. Reported: turns run per op (it must equal the sources, plus
// the bursts the store took with a pause of a window or more between two
// inputs: paused-bursts), and
// the delay from a source's last input to its turn's start, p50 and p99,
// to set beside the window.
func BenchmarkBursts(b *testing.B) {
	const window = 50 * time.Millisecond
	sources, every := *burstSources, *burstEvery
	for _, kind := range []string{"memory", "sqlite", "postgres"} {
		b.Run(kind, func(b *testing.B) {
			var delays []time.Duration
			turns, late := 0, 0
			for b.Loop() {
				store := benchStore(b, kind)
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
				g, err := gateway.New(gateway.Config{Runner: r, Debounce: window, Workers: 256, Poll: 20 * time.Millisecond,
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
				tick := time.NewTicker(every)
				for i := range sources {
					<-tick.C
					wg.Go(func() {
						src := fmt.Sprint("s", i)
						for j := range 3 {
							if j > 0 {
								time.Sleep(10 * time.Millisecond) // the person typing
							}
							if _, err := g.Submit(ctx, gateway.Input{Source: src, Text: fmt.Sprint("part ", j)}); err != nil {
								b.Error(err)
								return
							}
							if j == 2 {
								mu.Lock()
								last[src] = time.Now()
								mu.Unlock()
							}
						}
					})
				}
				tick.Stop()
				wg.Wait()
				for give := time.Now().Add(2 * time.Minute); ; {
					p, err := g.Pending(ctx)
					if err != nil {
						b.Fatal(err)
					}
					if len(p) == 0 && g.Serving() == 0 {
						break
					}
					if time.Now().After(give) {
						mu.Lock()
						n := turns
						mu.Unlock()
						b.Fatalf("after 2 minutes: %d sources pending (first %+v), %d served, %d turns", len(p), p[:min(len(p), 3)], g.Serving(), n)
					}
					time.Sleep(10 * time.Millisecond) // waiting for the work to end, not synchronising the code under test
				}
				cancel()
				<-done
				r.Close(context.Background())
				// A burst whose inputs the store took more than a window
				// apart (the load generator late: 10,000 sleeping
				// goroutines on a small machine) is rightly two turns.
				b.StopTimer()
				inbox := store.(session.Inbox)
				for i := range sources {
					ins, err := inbox.Inputs(context.Background(), fmt.Sprint("s", i), 0, 0)
					if err != nil {
						b.Fatal(err)
					}
					for j := 1; j < len(ins); j++ {
						if ins[j].At.Sub(ins[j-1].At) >= window {
							late++
						}
					}
				}
				b.StartTimer()
			}
			slices.Sort(delays)
			b.ReportMetric(float64(turns)/float64(b.N), "turns/op")
			b.ReportMetric(float64(late)/float64(b.N), "paused-bursts/op")
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

// BenchmarkSubmit: Submit's inputs per second from 16 goroutines, beside
// the floor: the same rows inserted into the same table shape with
// prepared statements, one transaction each, from 16 goroutines.
func BenchmarkSubmit(b *testing.B) {
	for _, kind := range []string{"memory", "sqlite", "sqlite-floor", "postgres", "postgres-floor"} {
		b.Run(kind, func(b *testing.B) {
			ctx := context.Background()
			var submit func(i int64) error
			switch kind {
			case "sqlite-floor":
				db, err := sql.Open("sqlite", "file:"+filepath.Join(b.TempDir(), "floor.db")+"?_journal_mode=WAL&_synchronous=NORMAL&_busy_timeout=10000&_txlock=immediate")
				if err != nil {
					b.Fatal(err)
				}
				defer db.Close()
				db.SetMaxOpenConns(1)
				if _, err := db.Exec(floorSchema); err != nil {
					b.Fatal(err)
				}
				ins, err := db.Prepare(floorInsert)
				if err != nil {
					b.Fatal(err)
				}
				submit = func(i int64) error {
					_, err := ins.Exec(floorArgs(i)...)
					return err
				}
			case "postgres-floor":
				dsn, _ := pgtest.Schema(b)
				pool, err := pgxpool.New(ctx, dsn)
				if err != nil {
					b.Fatal(err)
				}
				defer pool.Close()
				if _, err := pool.Exec(ctx, floorSchemaPG); err != nil {
					b.Fatal(err)
				}
				submit = func(i int64) error {
					_, err := pool.Exec(ctx, floorInsertPG, floorArgs(i)...)
					return err
				}
			default:
				r, err := agentrt.NewRunner(agentrt.Config{Store: benchStore(b, kind), Agents: []*agentrt.Agent{{Name: "assistant", Model: quickModel{}}}})
				if err != nil {
					b.Fatal(err)
				}
				// Nothing answers: the sources pile up far past the bounds on
				// what one may have waiting (each Submit still counts them).
				g, err := gateway.New(gateway.Config{Runner: r, MaxPending: 1 << 30})
				if err != nil {
					b.Fatal(err)
				}
				submit = func(i int64) error {
					_, err := g.Submit(ctx, gateway.Input{Source: fmt.Sprint("s", i%1000), Text: "hello there"})
					return err
				}
			}
			var n atomic.Int64
			b.SetParallelism(8) // 16 goroutines on 2 cores
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if err := submit(n.Add(1)); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "inputs/s")
		})
	}
}

const floorSchema = `CREATE TABLE inbox (seq INTEGER PRIMARY KEY AUTOINCREMENT, tenant TEXT NOT NULL, id TEXT NOT NULL,
	source TEXT NOT NULL, session_id TEXT NOT NULL, parts TEXT NOT NULL, metadata TEXT, key TEXT NOT NULL, digest TEXT NOT NULL,
	at INTEGER NOT NULL, state TEXT NOT NULL, UNIQUE (tenant, id));
	CREATE INDEX inbox_source ON inbox (tenant, source, seq);
	CREATE INDEX inbox_pending ON inbox (tenant, source, seq) WHERE state = 'pending'`

const floorInsert = `INSERT INTO inbox (tenant, id, source, session_id, parts, key, digest, at, state) VALUES (?, ?, ?, ?, ?, '', ?, ?, 'pending')`

const floorSchemaPG = `CREATE TABLE inbox (seq bigserial PRIMARY KEY, tenant text NOT NULL, id text NOT NULL,
	source text NOT NULL, session_id text NOT NULL, parts text NOT NULL, metadata text, key text NOT NULL, digest text NOT NULL,
	at bigint NOT NULL, state text NOT NULL, UNIQUE (tenant, id));
	CREATE INDEX inbox_source ON inbox (tenant, source, seq);
	CREATE INDEX inbox_pending ON inbox (tenant, source, seq) WHERE state = 'pending'`

const floorInsertPG = `INSERT INTO inbox (tenant, id, source, session_id, parts, key, digest, at, state) VALUES ($1, $2, $3, $4, $5, '', $6, $7, 'pending')`

func floorArgs(i int64) []any {
	src := fmt.Sprint("s", i%1000)
	return []any{"default", fmt.Sprintf("in_%032x", i), src, src, `[{"type":"text","text":"hello there"}]`, fmt.Sprintf("%032x", i), time.Now().UnixMicro()}
}

// A source whose turn is done holds no memory in the gateway: no worker,
// no entry in its maps.
func TestIdleSourcesHoldNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, gateway.Config{})
		stop := e.run(t)
		for i := range 500 {
			e.submit(t, fmt.Sprint("s", i), "hi")
		}
		time.Sleep(time.Second)
		synctest.Wait()
		if p, err := e.g.Pending(context.Background()); err != nil || len(p) != 0 {
			t.Fatalf("pending %v, %v; want every input answered", p, err)
		}
		if n := e.g.Serving(); n != 0 {
			t.Fatalf("%d sources still served after their turns", n)
		}
		stop()
	})
}
