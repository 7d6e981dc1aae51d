package follow

import (
	"context"
	"iter"
	"math"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/session"
)

// logStore is a session's log in memory, as a store holds it: commits
// append to it, and a read yields what it holds after a seq.
type logStore struct {
	mu  sync.Mutex
	evs []*session.Event
}

func (l *logStore) append(n int) []*session.Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []*session.Event
	for range n {
		ev := &session.Event{Seq: int64(len(l.evs) + 1)}
		l.evs = append(l.evs, ev)
		out = append(out, ev)
	}
	return out
}

func (l *logStore) events(after int64) iter.Seq2[*session.Event, error] {
	return func(yield func(*session.Event, error) bool) {
		l.mu.Lock()
		evs := l.evs[min(after, int64(len(l.evs))):]
		l.mu.Unlock()
		for _, ev := range evs {
			if !yield(ev, nil) {
				return
			}
		}
	}
}

func (l *logStore) last() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return int64(len(l.evs))
}

// Random interleavings of commits handed by this process, commits of
// another process (the log grows, and the followers are woken, or all
// are, or — until this process next looks — not at all), followers that
// join at any seq and leave at any point, and followers slower than the
// commits: every follower sees each seq after its start once, in order,
// without a gap, up to where it left or to the end of the log.
func TestLoopProperty(t *testing.T) {
	for seed := range uint64(200) {
		r := rand.New(rand.NewPCG(seed, 7))
		var w Waiters
		var l logStore
		var target atomic.Int64 // followers that stay return at this seq
		target.Store(math.MaxInt64)
		type result struct {
			from  int64
			got   []int64
			leave int // 0: follows to the end
		}
		var (
			wg      sync.WaitGroup
			results []*result
		)
		start := func() {
			res := &result{from: r.Int64N(l.last() + 1)}
			if r.IntN(3) == 0 {
				res.leave = 1 + r.IntN(20)
			}
			slow := r.IntN(4) == 0
			results = append(results, res)
			registered := make(chan struct{})
			var once sync.Once
			read := func(after int64) iter.Seq2[*session.Event, error] {
				// Loop registers before its first read.
				once.Do(func() { close(registered) })
				return l.events(after)
			}
			wg.Go(func() {
				for ev, err := range Loop(context.Background(), &w, "t", "s", res.from, 0, read) {
					if err != nil {
						t.Errorf("seed %d: %v", seed, err)
						return
					}
					res.got = append(res.got, ev.Seq)
					if res.leave > 0 && len(res.got) >= res.leave || ev.Seq >= target.Load() {
						return
					}
					if slow {
						time.Sleep(time.Duration(len(res.got)%7) * 10 * time.Microsecond)
					}
				}
			})
			<-registered
		}
		start()
		for range 60 {
			switch r.IntN(6) {
			case 0:
				start()
			case 1:
				l.append(1 + r.IntN(3)) // another process's, not heard yet
			case 2:
				l.append(1 + r.IntN(3))
				w.Wake("t", "s") // another process's, heard
			case 3:
				w.WakeAll()
			default:
				w.Committed("t", "s", l.append(1+r.IntN(4)))
			}
		}
		// The last commit is heard, and every follower that stays ends
		// with it.
		end := l.last() + 1
		target.Store(end)
		w.Committed("t", "s", l.append(1))
		wg.Wait()
		for i, res := range results {
			var want []int64
			for s := res.from + 1; s <= end; s++ {
				want = append(want, s)
			}
			if res.leave > 0 && len(want) > res.leave {
				want = want[:res.leave]
			}
			if diff := cmp.Diff(want, res.got); diff != "" {
				t.Fatalf("seed %d, follower %d from %d: seqs (-want +got):\n%s", seed, i, res.from, diff)
			}
		}
		if w.Any() {
			t.Fatalf("seed %d: followers still registered after all left", seed)
		}
	}
}

// A follower of a session whose commits are all handed reads the log
// once, at its start, however many commits follow.
func TestLoopReadsOnceWhenHanded(t *testing.T) {
	var w Waiters
	var l logStore
	l.append(3)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	got := make(chan int64, 256)
	var wg sync.WaitGroup
	ready := make(chan struct{})
	var once sync.Once
	read := func(after int64) iter.Seq2[*session.Event, error] {
		once.Do(func() { close(ready) })
		return l.events(after)
	}
	wg.Go(func() {
		for ev, err := range Loop(ctx, &w, "t", "s", 0, 0, read) {
			if err != nil {
				t.Error(err)
				return
			}
			got <- ev.Seq
		}
	})
	<-ready
	for range 100 {
		w.Committed("t", "s", l.append(2))
	}
	for want := int64(1); want <= 203; want++ {
		if s := <-got; s != want {
			t.Fatalf("seq %d, want %d", s, want)
		}
	}
	cancel()
	wg.Wait()
	if r := w.Reads(); r != 1 {
		t.Fatalf("%d reads of the log, want 1 (the rest handed: %d)", r, w.Handed())
	}
}
