// Package follow is what the SQL stores' Follow share: the followers
// waiting on each session, which a commit wakes, and the loop that reads
// the log, then waits for the next commit or the next poll.
package follow

import (
	"context"
	"iter"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentrt/agentrt/session"
)

// Waiters are the Follow calls waiting for commits, by session. The zero
// Waiters is ready to use.
type Waiters struct {
	n  atomic.Int32 // Follow calls registered, read without the lock
	mu sync.Mutex
	m  map[key]*waiter // guarded by mu
}

type key struct{ tenant, id string }

type waiter struct {
	ch chan struct{} // closed by the next commit to the session
	n  int           // Follow calls using it
}

// Any reports whether a Follow call is waiting on any session: a commit
// skips Wake when none is.
func (w *Waiters) Any() bool { return w.n.Load() > 0 }

// Wait registers a Follow on session id of tenant and returns the channel
// the next Wake of it closes; done unregisters.
func (w *Waiters) Wait(tenant, id string) (ch <-chan struct{}, done func()) {
	k := key{tenant, id}
	w.n.Add(1)
	w.mu.Lock()
	if w.m == nil {
		w.m = make(map[key]*waiter)
	}
	wt := w.m[k]
	if wt == nil {
		wt = &waiter{ch: make(chan struct{})}
		w.m[k] = wt
	}
	wt.n++
	w.mu.Unlock()
	return wt.ch, func() {
		w.mu.Lock()
		if wt.n--; wt.n == 0 && w.m[k] == wt {
			delete(w.m, k)
		}
		w.mu.Unlock()
		w.n.Add(-1)
	}
}

// Wake closes the channel the Follow calls on session id of tenant wait
// on.
func (w *Waiters) Wake(tenant, id string) {
	k := key{tenant, id}
	w.mu.Lock()
	if wt := w.m[k]; wt != nil {
		close(wt.ch)
		delete(w.m, k)
	}
	w.mu.Unlock()
}

// Loop yields the events after after that events(after) reads, then waits
// for a Wake of the session or for poll to pass, and reads again, until
// ctx ends or the consumer stops. It registers before each read, so a
// commit between the read and the wait still wakes it.
func Loop(ctx context.Context, w *Waiters, tenant, id string, after int64, poll time.Duration,
	events func(after int64) iter.Seq2[*session.Event, error]) iter.Seq2[*session.Event, error] {
	return func(yield func(*session.Event, error) bool) {
		last := max(after, 0)
		var timer *time.Timer
		defer func() {
			if timer != nil {
				timer.Stop()
			}
		}()
		for {
			wake, done := w.Wait(tenant, id)
			n := 0
			for ev, err := range events(last) {
				if err != nil {
					done()
					if ctx.Err() == nil {
						yield(nil, err)
					}
					return
				}
				if !yield(ev, nil) {
					done()
					return
				}
				last = ev.Seq
				n++
			}
			if n > 0 {
				done()
				continue
			}
			if timer == nil {
				timer = time.NewTimer(poll)
			} else {
				timer.Reset(poll)
			}
			select {
			case <-wake:
			case <-timer.C:
			case <-ctx.Done():
				done()
				return
			}
			done()
		}
	}
}
