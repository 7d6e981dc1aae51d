// Package group is the queue of a group commit, shared by the stores: the
// writes that arrive while a batch is being written wait, and go together
// in the next batch; each caller is answered with its own write's
// outcome. What a batch is (one SQLite transaction, one Postgres round
// trip) is the store's.
//
// There is no writer goroutine: the first waiting caller to take the lead
// writes the queue (up to the group's batch size) with the store's flush,
// then hands the lead on; a caller whose write another caller took waits
// for that caller's answer. A write that finds nobody writing goes at once,
// alone.
package group

import (
	"context"
	"fmt"
	"slices"
	"sync"
)

// An Op is one write waiting in a Group: the caller's context and the
// store's description of the write.
type Op[T any] struct {
	Ctx  context.Context
	W    T
	err  error
	done chan struct{} // closed once err is the write's outcome
}

// answered reports whether the op has its outcome.
func (o *Op[T]) answered() bool {
	select {
	case <-o.done:
		return true
	default:
		return false
	}
}

// Answer gives the op its outcome and wakes its caller. Flush answers
// every op it is given, once.
func (o *Op[T]) Answer(err error) {
	o.err = err
	close(o.done)
}

// A Group queues writes of type T and writes them in batches with flush.
type Group[T any] struct {
	flush func(ops []*Op[T])
	max   int

	lead chan struct{} // tokens: their holders write the next batches

	mu    sync.Mutex
	queue []*Op[T] // waiting writes, oldest first; guarded by mu
}

// New returns a Group whose batches hold at most size writes, written by
// flush, by at most leaders callers at once (SQLite has one writer; a
// Postgres pool can write several batches at once). flush must answer
// every op it is given.
func New[T any](size, leaders int, flush func(ops []*Op[T])) *Group[T] {
	return &Group[T]{flush: flush, max: size, lead: make(chan struct{}, max(leaders, 1))}
}

// Do queues w and returns its outcome once a batch holding it has been
// written: flush's answer. ctx bounds the wait in the queue: a write
// whose context ends before a leader took it leaves the queue with the
// context's error; one already taken waits for its outcome (its batch is
// being written).
func (g *Group[T]) Do(ctx context.Context, w T) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("waiting to write: %w", err)
	}
	op := &Op[T]{Ctx: ctx, W: w, done: make(chan struct{})}
	g.mu.Lock()
	g.queue = append(g.queue, op)
	g.mu.Unlock()
	canceled := ctx.Done()
	for {
		select {
		case <-op.done:
			return op.err
		case g.lead <- struct{}{}:
			g.mu.Lock()
			n := min(len(g.queue), g.max)
			batch := slices.Clone(g.queue[:n])
			rest := copy(g.queue, g.queue[n:])
			clear(g.queue[rest:])
			g.queue = g.queue[:rest]
			g.mu.Unlock()
			func() {
				defer func() { <-g.lead }() // even if flush panics
				defer func() {
					if p := recover(); p != nil {
						// The writes flush did not answer hear of it, not
						// wait for ever; the panic goes on.
						for _, o := range batch {
							if !o.answered() {
								o.Answer(fmt.Errorf("a write of the batch panicked: %v", p))
							}
						}
						panic(p)
					}
				}()
				if len(batch) > 0 {
					g.flush(batch)
				}
			}()
			// Another leader took this write: wait for its answer rather
			// than take the lead again (with several leaders, a free token
			// would otherwise be taken and given back in a loop).
			g.mu.Lock()
			queued := slices.Contains(g.queue, op)
			g.mu.Unlock()
			if !queued {
				<-op.done
				return op.err
			}
		case <-canceled:
			canceled = nil
			g.mu.Lock()
			i := slices.Index(g.queue, op)
			if i >= 0 {
				g.queue = slices.Delete(g.queue, i, i+1)
			}
			g.mu.Unlock()
			if i >= 0 {
				return fmt.Errorf("waiting to write: %w", ctx.Err())
			}
		}
	}
}

// Hold takes every lead and returns a function that gives them back:
// writes queue meanwhile. For tests.
func (g *Group[T]) Hold() (release func()) {
	for range cap(g.lead) {
		g.lead <- struct{}{}
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			for range cap(g.lead) {
				<-g.lead
			}
		})
	}
}

// Queued returns how many writes wait. For tests.
func (g *Group[T]) Queued() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.queue)
}
