// Package follow is what the SQL stores' Follow share: the followers of
// each session, to which a commit of this process hands its events, and
// the loop that reads the log only when it must — at the start, after a
// commit it was not handed (another process's, a deleted session), and
// at the store's poll, when it has one.
//
// Every follower of a session holds a place in one chain of its commits:
// a node a commit fills (with its events, or with none: "read the
// store") and then closes, linking the next. A follower registers (takes
// the chain's head) before its first read, so that every commit after
// that read is in the chain, and it takes them in order: the events of a
// commit that follow its last one are yielded as they are, without a
// read; a commit it cannot place (a gap, no events) makes it read the
// log once from where it is. A read and the chain may give an event
// twice: the follower yields each seq once, in order.
package follow

import (
	"context"
	"iter"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentrt/agentrt/session"
)

// Waiters are the followers of each session. The zero Waiters is ready to
// use.
type Waiters struct {
	n  atomic.Int32 // followers registered, read without the lock
	mu sync.Mutex
	m  map[key]*entry // guarded by mu

	reads  atomic.Int64 // reads of the log by followers (Reads)
	handed atomic.Int64 // commits' events yielded without a read (Handed)
}

type key struct{ tenant, id string }

// entry is a session's chain: its head, the node the next commit fills.
type entry struct {
	head *node
	n    int // followers registered
}

// node is a place in a session's chain. ch is closed once evs and next
// are set; they do not change after.
type node struct {
	ch   chan struct{}
	evs  []*session.Event // the commit's events; nil: read the store
	next *node
}

func newNode() *node { return &node{ch: make(chan struct{})} }

// Any reports whether a follower is registered on any session: a commit
// skips Committed and Wake when none is.
func (w *Waiters) Any() bool { return w.n.Load() > 0 }

// Reads is how many times followers have read the log, and Handed how
// many commits they took as handed, without a read: what the tests of a
// store measure.
func (w *Waiters) Reads() int64  { return w.reads.Load() }
func (w *Waiters) Handed() int64 { return w.handed.Load() }

// register adds a follower of session k and returns the chain's head.
func (w *Waiters) register(k key) (*node, func()) {
	w.n.Add(1)
	w.mu.Lock()
	if w.m == nil {
		w.m = make(map[key]*entry)
	}
	e := w.m[k]
	if e == nil {
		e = &entry{head: newNode()}
		w.m[k] = e
	}
	e.n++
	head := e.head
	w.mu.Unlock()
	return head, func() {
		w.mu.Lock()
		if e.n--; e.n == 0 && w.m[k] == e {
			delete(w.m, k)
		}
		w.mu.Unlock()
		w.n.Add(-1)
	}
}

// Committed hands the followers of session id of tenant the events a
// commit of this process stored, in seq order. The caller calls it once
// the commit is durable, in the order of the session's commits (a
// session has one writer at a time), and does not change the events
// after; the slice is copied (a runner reuses its own).
func (w *Waiters) Committed(tenant, id string, evs []*session.Event) {
	if len(evs) == 0 {
		return
	}
	k := key{tenant, id}
	w.mu.Lock()
	defer w.mu.Unlock()
	if e := w.m[k]; e != nil {
		fillLocked(e, slices.Clone(evs))
	}
}

// Wake tells the followers of session id of tenant to read the log: it
// changed in a way they were not handed (another process's commit, a
// deletion).
func (w *Waiters) Wake(tenant, id string) { w.fill(key{tenant, id}, nil) }

// WakeAll tells every follower to read the log: another process
// committed, to sessions the caller cannot tell.
func (w *Waiters) WakeAll() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, e := range w.m {
		fillLocked(e, nil)
	}
}

func (w *Waiters) fill(k key, evs []*session.Event) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if e := w.m[k]; e != nil {
		fillLocked(e, evs)
	}
}

func fillLocked(e *entry, evs []*session.Event) {
	h := e.head
	h.evs, h.next = evs, newNode()
	e.head = h.next
	close(h.ch)
}

// Loop yields the session's events after after: those events(after)
// reads, then each commit's as the chain hands them, reading again only
// for a commit it cannot place and, when poll > 0, when poll passes with
// nothing handed (a store that learns of other processes' commits on its
// own, and wakes its followers, passes 0). It ends when ctx ends or the
// consumer stops.
func Loop(ctx context.Context, w *Waiters, tenant, id string, after int64, poll time.Duration,
	events func(after int64) iter.Seq2[*session.Event, error]) iter.Seq2[*session.Event, error] {
	return func(yield func(*session.Event, error) bool) {
		last := max(after, 0)
		cur, done := w.register(key{tenant, id})
		defer done()
		var timer *time.Timer
		var tick <-chan time.Time
		defer func() {
			if timer != nil {
				timer.Stop()
			}
		}()
		read := true
		for {
			if read {
				w.reads.Add(1)
				for ev, err := range events(last) {
					if err != nil {
						if ctx.Err() == nil {
							yield(nil, err)
						}
						return
					}
					if ev.Seq <= last {
						continue
					}
					if !yield(ev, nil) {
						return
					}
					last = ev.Seq
				}
				read = false
			}
			if poll > 0 {
				if timer == nil {
					timer = time.NewTimer(poll)
					tick = timer.C
				} else {
					timer.Reset(poll)
				}
			}
			select {
			case <-cur.ch:
			case <-tick:
				read = true
				continue
			case <-ctx.Done():
				return
			}
			// Take every commit the chain holds by now.
			for closed(cur.ch) {
				evs := cur.evs
				cur = cur.next
				switch {
				case read:
					// A read comes: it has these.
				case evs == nil || evs[0].Seq > last+1:
					read = true
				default:
					w.handed.Add(1)
					for _, ev := range evs {
						if ev.Seq <= last {
							continue
						}
						if !yield(ev, nil) {
							return
						}
						last = ev.Seq
					}
				}
			}
			if ctx.Err() != nil {
				return
			}
		}
	}
}

func closed(ch chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}
