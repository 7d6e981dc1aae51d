package agentrt_test

import (
	"context"
	"fmt"
	"iter"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/internal/pgtest"
	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/session"
	"github.com/agentrt/agentrt/session/memstore"
	"github.com/agentrt/agentrt/session/postgres"
	"github.com/agentrt/agentrt/session/sqlite"
)

// BenchmarkControlLatency measures how long a cancellation made in one
// process takes to stop a run of another: two runners (two owners, two
// store connections, as two processes have) on one store; one op is
// Runner.Cancel of the other runner's run, waiting in a model call, until
// the run has stopped and its end is stored. It is about half of
// Config.ControlPoll (the poll's phase is random) plus the store's reads
// and the run's last commit: compare the stores, and "-poll100ms" with the
// default.
func BenchmarkControlLatency(b *testing.B) {
	ctx := context.Background()
	for _, name := range []string{"memory", "sqlite", "postgres", "sqlite-poll100ms", "postgres-poll100ms"} {
		b.Run(name, func(b *testing.B) {
			kind, poll := name, time.Duration(0)
			if k, ok := strings.CutSuffix(name, "-poll100ms"); ok {
				kind, poll = k, 100*time.Millisecond
			}
			one, other := twoStores(b, kind)
			mk := func(st session.Store, owner string) *agentrt.Runner {
				r, err := agentrt.NewRunner(agentrt.Config{Store: st, Owner: owner, ControlPoll: poll,
					Agents: []*agentrt.Agent{calcAgent(blockingModel{}, nil)}})
				if err != nil {
					b.Fatal(err)
				}
				b.Cleanup(func() { r.Close(ctx) })
				return r
			}
			a, c := mk(one, "host-a:1:a"), mk(other, "host-b:2:b")
			i := 0
			for b.Loop() {
				b.StopTimer()
				i++
				id := fmt.Sprint("s", i)
				h := startInModelB(b, a, id)
				b.StartTimer()
				out, err := c.Cancel(ctx, id, "bench")
				if err != nil || !out.Acted {
					b.Fatalf("cancel: %+v %v", out, err)
				}
				b.StopTimer()
				h.Wait(ctx)
				b.StartTimer()
			}
		})
	}
}

func startInModelB(b *testing.B, r *agentrt.Runner, id string) *agentrt.Run {
	ctx := context.Background()
	h, err := r.Start(ctx, id, agentrt.Input{Text: "go", Agent: "calc"})
	if err != nil {
		b.Fatal(err)
	}
	for e, err := range h.Events(ctx) {
		if err != nil {
			b.Fatal(err)
		}
		if e.Type == session.TypeModelStarted {
			return h
		}
	}
	b.Fatal("the run ended before its model call")
	return nil
}

// blockingModel answers nothing until its call is canceled.
type blockingModel struct{}

func (blockingModel) Name() string { return "blocking" }

func (blockingModel) Stream(ctx context.Context, _ *model.Request) iter.Seq2[model.Chunk, error] {
	return func(yield func(model.Chunk, error) bool) {
		<-ctx.Done()
		yield(model.Chunk{}, ctx.Err())
	}
}

// twoStores opens two stores on one database of the kind, as two
// processes do (one store twice for memory).
func twoStores(b *testing.B, kind string) (session.Store, session.Store) {
	ctx := context.Background()
	var open func() session.Store
	switch kind {
	case "memory":
		st := memstore.New()
		return st, st
	case "sqlite":
		path := filepath.Join(b.TempDir(), "control.db")
		open = func() session.Store {
			st, err := sqlite.Open(ctx, path)
			if err != nil {
				b.Fatal(err)
			}
			return st
		}
	case "postgres":
		dsn, _ := pgtest.Schema(b)
		open = func() session.Store {
			st, err := postgres.Open(ctx, dsn)
			if err != nil {
				b.Fatal(err)
			}
			return st
		}
	}
	one, other := open(), open()
	b.Cleanup(func() { one.Close(); other.Close() })
	return one, other
}
