package temporal_test

import (
	"context"
	"fmt"
	"iter"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/internal/pgtest"
	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/session"
	"github.com/agentrt/agentrt/session/postgres"
	"github.com/agentrt/agentrt/temporal"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"google.golang.org/protobuf/proto"
)

// okModel answers every request "ok" at once: the benchmarks measure the
// engine, not a model.
type okModel struct{}

func (okModel) Name() string { return "ok" }

func (okModel) Stream(context.Context, *model.Request) iter.Seq2[model.Chunk, error] {
	return func(yield func(model.Chunk, error) bool) {
		yield(model.Chunk{Text: "ok", FinishReason: model.FinishStop}, nil)
	}
}

// timedEngine is the Temporal engine, timing each hand-over.
type timedEngine struct {
	temporal.Engine
	mu    sync.Mutex
	times []time.Duration
}

func (e *timedEngine) Drive(ctx context.Context, d agentrt.Drive) error {
	t0 := time.Now()
	err := e.Engine.Drive(ctx, d)
	e.mu.Lock()
	e.times = append(e.times, time.Since(t0))
	e.mu.Unlock()
	return err
}

// benchDeployment is a runner that starts runs, on one Postgres schema:
// on Temporal (two in-process workers, each a runner of its own, on a dev
// server), or local.
type benchDeployment struct {
	serve *agentrt.Runner
	eng   *timedEngine
	tc    client.Client
}

// engines are the benchmarks' engines: local; temporal, two workers as
// NewWorker makes them (a session kept on its worker between steps, a
// queue of each worker's own); temporal-letgo, two workers registered
// without a queue of their own (Register): each step takes the session
// from the store and lets it go, as before workers had their own queue.
var engines = []string{"local", "temporal", "temporal-letgo"}

func newBenchDeployment(b *testing.B, engine string) *benchDeployment {
	b.Helper()
	dsn, _ := pgtest.Schema(b)
	ctx := context.Background()
	open := func() session.Store {
		s, err := postgres.Open(ctx, dsn)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = s.Close() })
		return s
	}
	agents := []*agentrt.Agent{{Name: "assistant", Model: okModel{}}}
	d := &benchDeployment{}
	cfg := agentrt.Config{Store: open(), Agents: agents, Owner: "serve"}
	if engine != "local" {
		_, tc := devServer(b)
		d.tc = tc
		queue := fmt.Sprintf("bench-%d", time.Now().UnixNano())
		for i := range 2 {
			wr, err := agentrt.NewRunner(agentrt.Config{Store: open(), Agents: agents, Owner: fmt.Sprintf("worker-%d", i), EngineName: temporal.EngineName})
			if err != nil {
				b.Fatal(err)
			}
			var w interface {
				Start() error
				Stop()
			}
			if engine == "temporal" {
				if w, err = temporal.NewWorker(tc, queue, wr, temporal.Options{}); err != nil {
					b.Fatal(err)
				}
			} else {
				sw := worker.New(tc, queue, worker.Options{})
				temporal.Register(sw, wr, temporal.Options{})
				w = sw
			}
			if err := w.Start(); err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() {
				w.Stop()
				_ = wr.Close(context.Background())
			})
		}
		d.eng = &timedEngine{Engine: temporal.Engine{Client: tc, TaskQueue: queue}}
		cfg.Engine = d.eng
	}
	r, err := agentrt.NewRunner(cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = r.Close(context.Background()) })
	d.serve = r
	return d
}

// turn runs a turn of session id and returns its result.
func (d *benchDeployment) turn(ctx context.Context, id string) (*agentrt.Result, error) {
	h, err := d.serve.Start(ctx, id, agentrt.Input{Agent: "assistant", Text: "hi"})
	if err != nil {
		return nil, err
	}
	return h.Wait(ctx)
}

// BenchmarkTurn is a turn's latency — a text answer, two steps — on the
// local engine and on Temporal, on the same machine and the same
// Postgres: what the engine costs a turn. Reported beside ns/op: the
// p50 and p99 of a turn, and on Temporal the hand-over (the commit of
// run_started and SignalWithStart) and the time from the hand-over to
// the turn's end (the workflow task, two activities, their events).
//
//	cd temporal && go test -run '^$' -bench BenchmarkTurn -benchtime 200x -count 3 .
func BenchmarkTurn(b *testing.B) {
	for _, engine := range engines {
		b.Run("engine="+engine, func(b *testing.B) {
			d := newBenchDeployment(b, engine)
			ctx := context.Background()
			// A session per turn, made before the clock starts.
			for i := range b.N {
				if _, err := d.serve.CreateSession(ctx, "assistant", fmt.Sprintf("s%d", i), nil); err != nil {
					b.Fatal(err)
				}
			}
			lat := make([]time.Duration, b.N)
			ended := make([]time.Time, b.N)
			b.ResetTimer()
			for i := range b.N {
				t0 := time.Now()
				res, err := d.turn(ctx, fmt.Sprintf("s%d", i))
				if err != nil || res.Status != session.StatusDone {
					b.Fatalf("turn %d: %+v %v", i, res, err)
				}
				ended[i] = time.Now()
				lat[i] = ended[i].Sub(t0)
			}
			b.StopTimer()
			report(b, lat, "turn")
			// Where the time goes, from the log's times: from run_started
			// (committed by the runner that starts the turn) to the first
			// step's events (the worker's), between the steps, and from
			// run_finished to the handle's Wait.
			var first, between, follow []time.Duration
			tctx := session.WithTenant(ctx, session.DefaultTenant)
			for i := range b.N {
				var started, last time.Time
				for ev, err := range d.serve.Store().Events(tctx, fmt.Sprintf("s%d", i), 0) {
					if err != nil {
						b.Fatal(err)
					}
					switch ev.Type {
					case session.TypeRunStarted:
						started = ev.Time
					case session.TypeRoundStarted:
						first = append(first, ev.Time.Sub(started))
						last = ev.Time
					case session.TypeFinal:
						between = append(between, ev.Time.Sub(last))
					case session.TypeRunFinished:
						follow = append(follow, ended[i].Sub(ev.Time))
					}
				}
			}
			report(b, first, "to-first-step")
			report(b, between, "to-second-step")
			report(b, follow, "finished-to-wait")
			if d.eng != nil {
				d.eng.mu.Lock()
				report(b, d.eng.times, "handover")
				d.eng.mu.Unlock()
			}
		})
	}
}

// BenchmarkConcurrentSessions starts 1,000 sessions' turns at once, on
// Temporal across two workers and, for the floor, on the local engine:
// the wall time, the turns that failed (errors), and on Temporal the
// largest workflow run's history among a tenth of the sessions.
//
//	cd temporal && go test -run '^$' -bench BenchmarkConcurrentSessions -benchtime 1x -count 2 .
func BenchmarkConcurrentSessions(b *testing.B) {
	const sessions = 1000
	for _, engine := range engines {
		b.Run("engine="+engine, func(b *testing.B) {
			d := newBenchDeployment(b, engine)
			ctx := context.Background()
			for n := range b.N {
				for i := range sessions {
					if _, err := d.serve.CreateSession(ctx, "assistant", fmt.Sprintf("c%d-%d", n, i), nil); err != nil {
						b.Fatal(err)
					}
				}
			}
			var failed atomic.Int64
			b.ResetTimer()
			for n := range b.N {
				var wg sync.WaitGroup
				for i := range sessions {
					wg.Go(func() {
						res, err := d.turn(ctx, fmt.Sprintf("c%d-%d", n, i))
						if err != nil || res.Status != session.StatusDone {
							failed.Add(1)
						}
					})
				}
				wg.Wait()
			}
			b.StopTimer()
			b.ReportMetric(float64(failed.Load()), "errors")
			b.ReportMetric(b.Elapsed().Seconds()/float64(b.N), "wall-s")
			if d.tc == nil {
				return
			}
			maxEvents, maxBytes := 0, 0
			for i := 0; i < sessions; i += sessions / 100 {
				wid := temporal.WorkflowID(session.DefaultTenant, fmt.Sprintf("c0-%d", i))
				page, err := d.tc.ListWorkflow(ctx, listRuns(wid))
				if err != nil {
					b.Fatal(err)
				}
				for _, e := range page.Executions {
					events, bytes := 0, 0
					it := d.tc.GetWorkflowHistory(ctx, wid, e.Execution.RunId, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
					for it.HasNext() {
						ev, err := it.Next()
						if err != nil {
							b.Fatal(err)
						}
						events++
						bytes += proto.Size(ev)
					}
					maxEvents, maxBytes = max(maxEvents, events), max(maxBytes, bytes)
				}
			}
			b.ReportMetric(float64(maxEvents), "history-events")
			b.ReportMetric(float64(maxBytes), "history-bytes")
		})
	}
}

// report adds the p50 and p99 of ds, in milliseconds, named what.
func report(b *testing.B, ds []time.Duration, what string) {
	if len(ds) == 0 {
		return
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	b.ReportMetric(float64(s[len(s)/2].Microseconds())/1000, what+"-p50-ms")
	b.ReportMetric(float64(s[len(s)*99/100].Microseconds())/1000, what+"-p99-ms")
}

// listRuns asks for the runs of workflow wid.
func listRuns(wid string) *workflowservice.ListWorkflowExecutionsRequest {
	return &workflowservice.ListWorkflowExecutionsRequest{Query: fmt.Sprintf("WorkflowId = %q", wid)}
}
