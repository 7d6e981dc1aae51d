package gateway_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentrt/agentrt/gateway"
	"github.com/agentrt/agentrt/internal/testenv"
	"github.com/agentrt/agentrt/session"
	"github.com/agentrt/agentrt/session/memstore"
)

// lateSubmit returns from a submit a while after the input is stored
// (spread over 0–2 ms), as a store under load does: Run's look at the
// inbox then often finds an input whose Submit has yet to dispatch it.
type lateSubmit struct {
	*memstore.Store
	n atomic.Int64
}

func (s *lateSubmit) SubmitWithin(ctx context.Context, in *session.InboxInput, b session.Bounds) (session.InboxInput, bool, error) {
	stored, dup, err := s.Store.SubmitWithin(ctx, in, b)
	time.Sleep(time.Duration(s.n.Add(1)*7919%2000) * time.Microsecond) // spread, not synchronisation
	return stored, dup, err
}

// One worker serves a source at a time, however its inputs reach one:
// Submit's dispatch and Run's look at the inbox both start workers, and a
// dispatch that came between the look's check of the source and the
// worker's entry made two workers of one source — two turns of one input,
// the second interrupting the first (found by the server's benchmark, once
// in some 40,000 turns). The agents' settings make Run's look at each
// source slow (as a config of many agents does), and submits return late
// (lateSubmit): the window that was there is wide. Many sources submitted at once from several
// goroutines while Run looks at the inbox every millisecond; every turn
// is the only one of its source while it runs, and each input is in
// exactly one turn.
func TestOneWorkerASource(t *testing.T) {
	sources, submitters := 800, 8
	if testenv.Race {
		sources = 200
	}
	var (
		mu      sync.Mutex
		running = map[string]int{}
		turns   = map[string]int{} // by input
		twice   []string
	)
	mod := &testModule{name: "once", order: 10, fn: func(ctx context.Context, tn *gateway.Turn) error {
		mu.Lock()
		running[tn.Source]++
		if running[tn.Source] > 1 {
			twice = append(twice, tn.Source)
		}
		if tn.Restart == 0 {
			for _, in := range tn.Inputs {
				turns[in.ID]++
			}
		}
		mu.Unlock()
		defer func() {
			mu.Lock()
			running[tn.Source]--
			mu.Unlock()
		}()
		return nil
	}}
	agents := map[string]gateway.SourceConfig{}
	for i := range 3000 {
		agents[fmt.Sprint("agent", i)] = gateway.SourceConfig{MaxPending: 100}
	}
	e := newEnvWrapped(t, gateway.Config{Modules: []gateway.Module{mod}, Poll: time.Millisecond, Workers: 10000, Agents: agents},
		func(m *memstore.Store) session.Store { return &lateSubmit{Store: m} })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	done := make(chan struct{})
	go func() { e.g.Run(ctx); close(done) }()
	var wg sync.WaitGroup
	ids := make([][]string, submitters)
	for w := range submitters {
		wg.Go(func() {
			for i := range sources / submitters {
				s, err := e.g.Submit(ctx, gateway.Input{Source: fmt.Sprintf("s%d-%d", w, i), Text: "hi"})
				if err != nil {
					t.Error(err)
					return
				}
				ids[w] = append(ids[w], s.ID)
			}
		})
	}
	wg.Wait()
	// Every input answered: nothing pending, no worker left.
	for {
		p, err := e.g.Pending(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(p) == 0 && e.g.Serving() == 0 {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%d sources still pending, %d served", len(p), e.g.Serving())
		case <-time.After(5 * time.Millisecond): // waits for the work to end; orders nothing
		}
	}
	cancel()
	<-done
	mu.Lock()
	defer mu.Unlock()
	if len(twice) > 0 {
		t.Errorf("%d sources had two turns at once, e.g. %s", len(twice), twice[0])
	}
	for _, w := range ids {
		for _, id := range w {
			if n := turns[id]; n != 1 {
				t.Errorf("input %s was in %d turns; want 1", id, n)
			}
		}
	}
}
