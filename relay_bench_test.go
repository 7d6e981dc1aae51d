package agentrt_test

import (
	"context"
	"fmt"
	"iter"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/internal/pgtest"
	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/session"
	"github.com/agentrt/agentrt/session/postgres"
)

// pacedModel streams words tokens, one every gap, as a model does.
type pacedModel struct {
	words int
	gap   time.Duration
}

func (pacedModel) Name() string { return "paced" }

func (m pacedModel) Stream(ctx context.Context, req *model.Request) iter.Seq2[model.Chunk, error] {
	return func(yield func(model.Chunk, error) bool) {
		t := time.NewTimer(m.gap)
		defer t.Stop()
		for i := range m.words {
			select {
			case <-t.C:
			case <-ctx.Done():
				yield(model.Chunk{}, ctx.Err())
				return
			}
			t.Reset(m.gap)
			if !yield(model.Chunk{Text: fmt.Sprint(" word", i)}, nil) {
				return
			}
		}
		yield(model.Chunk{FinishReason: model.FinishStop}, nil)
	}
}

// publishCounter counts the relay's Publish calls: its round trips.
type publishCounter struct {
	*postgres.Store
	publishes atomic.Int64
}

func (s *publishCounter) Publish(ctx context.Context, msgs []session.Relayed) error {
	s.publishes.Add(1)
	return s.Store.Publish(ctx, msgs)
}

// notifyCounter counts the NOTIFYs on a channel.
type notifyCounter struct {
	n      atomic.Int64
	marked chan struct{} // a payload that names the marker session came
}

// markerID names the session of the message that says "all counted".
const markerID = "bench-marker"

func countNotifies(b *testing.B, ctx context.Context, dsn, channel string) *notifyCounter {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `LISTEN `+pgx.Identifier{channel}.Sanitize()); err != nil {
		b.Fatal(err)
	}
	c := &notifyCounter{marked: make(chan struct{}, 1)}
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			n, err := conn.WaitForNotification(ctx)
			if err != nil {
				return
			}
			if strings.Contains(n.Payload, markerID) {
				c.marked <- struct{}{}
				continue
			}
			c.n.Add(1)
		}
	})
	b.Cleanup(func() {
		wg.Wait()
		conn.Close(context.Background())
	})
	return c
}

// flushed waits until the counter has seen every NOTIFY st sent so far:
// they come in the order they were sent, so once a marker st sends now.
func (c *notifyCounter) flushed(b *testing.B, ctx context.Context, st *postgres.Store) {
	if err := st.Publish(ctx, []session.Relayed{{Kind: session.RelayWatching, Tenant: "bench", SessionID: markerID}}); err != nil {
		b.Fatal(err)
	}
	select {
	case <-c.marked:
	case <-ctx.Done():
	}
}

// BenchmarkRelay runs 64 turns at once on Postgres, each streaming 50
// tokens 2 ms apart (paced: 100 ms of model time) or at once (burst);
// one op is all 64 turns. The runner relays: off; on with nobody watching elsewhere (after it has
// learnt so); off and on with every session watched by a second runner
// (another process), whose watchers read every event — the relay's cost
// is the difference between those two, the rest is the watchers'. It
// reports the relay's round trips (Publish calls) and NOTIFYs per turn,
// and the tokens the other process's watchers saw per turn.
func BenchmarkRelay(b *testing.B) {
	for _, gap := range []time.Duration{2 * time.Millisecond, 0} {
		for _, mode := range []string{"off", "unwatched", "watched-off", "watched"} {
			name := "paced/" + mode
			if gap == 0 {
				name = "burst/" + mode
			}
			b.Run(name, func(b *testing.B) { benchRelay(b, mode, gap) })
		}
	}
}

func benchRelay(b *testing.B, mode string, gap time.Duration) {
	const (
		turns = 64
		words = 50
	)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dsn, _ := pgtest.Schema(b)
	open := func() *publishCounter {
		st, err := postgres.Open(ctx, dsn)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { st.Close() })
		return &publishCounter{Store: st}
	}
	sa, sb := open(), open()
	// No compaction: its summaries would be calls of the paced model
	// too, quiet ones, in every mode alike.
	agent := &agentrt.Agent{Name: "paced", Model: pacedModel{words: words, gap: gap}, Compaction: agentrt.Compaction{Off: true}}
	a, err := agentrt.NewRunner(agentrt.Config{Store: sa, Agents: []*agentrt.Agent{agent}, NoRelay: strings.HasSuffix(mode, "off")})
	if err != nil {
		b.Fatal(err)
	}
	defer a.Close(context.Background())
	w, err := agentrt.NewRunner(agentrt.Config{Store: sb, Agents: []*agentrt.Agent{agent}})
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close(context.Background())
	ids := make([]string, turns)
	for i := range ids {
		s, err := a.CreateSession(ctx, "paced", fmt.Sprint("s", i), nil)
		if err != nil {
			b.Fatal(err)
		}
		ids[i] = s.ID
	}
	var seen atomic.Int64
	finished := make(chan struct{}, 1<<16) // a watcher showed a run_finished
	if strings.HasPrefix(mode, "watched") {
		for _, id := range ids {
			ready := make(chan struct{})
			go func() {
				first := true
				for e, err := range w.Watch(ctx, id, 0) {
					if err != nil {
						return
					}
					if first {
						close(ready)
						first = false
					}
					switch e.Type {
					case session.TypeToken:
						seen.Add(1)
					case session.TypeRunFinished:
						finished <- struct{}{}
					}
				}
			}()
			// Subscribed once it shows the session's first event.
			if _, err := agentrt.Collect(a.Run(ctx, id, agentrt.Input{Text: "hello"})); err != nil {
				b.Fatal(err)
			}
			<-ready
			<-finished
		}
	}
	if mode == "unwatched" {
		// A turn starts the relay; then the runner learns that
		// nobody watches (a second with no answer to its hello).
		if _, err := agentrt.Collect(a.Run(ctx, ids[0], agentrt.Input{Text: "hello"})); err != nil {
			b.Fatal(err)
		}
		time.Sleep(1500 * time.Millisecond)
	}
	notifies := countNotifies(b, ctx, dsn, sa.RelayChannel())
	pub0, not0, seen0 := sa.publishes.Load(), notifies.n.Load(), seen.Load()
	b.ResetTimer()
	for b.Loop() {
		var wg sync.WaitGroup
		errs := make(chan error, turns)
		for _, id := range ids {
			wg.Go(func() {
				res, err := a.Send(ctx, id, agentrt.Input{Text: "go"})
				if err != nil || !strings.HasPrefix(res.Text, " word0") {
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
	b.StopTimer()
	n := float64(b.N * turns)
	if strings.HasPrefix(mode, "watched") {
		// Every watcher has shown every turn: all it saw is counted.
		for range b.N * turns {
			<-finished
		}
	}
	notifies.flushed(b, ctx, sa.Store)
	b.ReportMetric(float64(sa.publishes.Load()-pub0)/n, "publishes/turn")
	b.ReportMetric(float64(notifies.n.Load()-not0)/n, "notifies/turn")
	b.ReportMetric(float64(seen.Load()-seen0)/n, "tokens-seen/turn")
}
