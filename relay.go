package agentrt

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentrt/agentrt/session"
)

// The relay carries live events (tokens, tool-call deltas) between the
// runners of the processes that share a store with the session.Relay
// capability (Postgres), so that Watch in one process shows the tokens of
// a run in another. It is best effort, as live events are everywhere: a
// watcher may miss some, a run never waits for one.
//
// Publishing costs a round trip per batch, so the run's tokens are not
// sent one by one: they wait in a queue, for all the sessions of the
// runner, at most relayWindow, and go in one Publish. Nothing is
// published for a session that no other process watches: a process
// says which sessions it watches (RelayWatching, when a session gets its
// first watcher here and again every relayRefresh), and the others relay
// a session's live events while such a notice holds (relayTTL). A process
// that has just started listening does not know yet who watches what: it
// says hello (the others answer with their notices at once) and relays
// every run's live events for relayLearn, until the answers are in.
//
// A token is published before the commit that ends its model call (see
// topic.settle), and the store delivers them in the order of their
// commits; a watcher elsewhere, which reads that commit from the log,
// first waits for its relay to deliver what was published before it
// (see watcher.syncRelay). So it shows the token before the commit, as a
// watcher here does.

const (
	// relayWindow is how long a live event may wait for others to be
	// published with.
	relayWindow = 20 * time.Millisecond
	// relayRefresh is how often a process says again which sessions it
	// watches; relayTTL how long the others take that to hold.
	relayRefresh = 5 * time.Second
	relayTTL     = 3 * relayRefresh
	// relayLearn is how long a process that has just started listening
	// relays every run's live events, while the answers to its hello come.
	relayLearn = time.Second
	// relayBatchBytes is about how many bytes of live events make the
	// queue publish at once rather than at the end of the window;
	// relayQueueBytes how many it holds at most (more is dropped: a store
	// that cannot keep up loses live events, the run goes on).
	relayBatchBytes = 64 << 10
	relayQueueBytes = 1 << 20
	// relayPublishTimeout bounds a Publish; relaySettleWait bounds what a
	// commit waits for the session's queued events to be published.
	relayPublishTimeout = 2 * time.Second
	relaySettleWait     = 250 * time.Millisecond
)

// relay is a runner's side of a session.Relay. It is started by the
// first run or watcher (see start) and stopped by Runner.Close.
//
// Lock order: hub.mu, then relay.mu. relay.mu is never held while
// taking hub.mu, nor during a Publish.
type relay struct {
	rl  session.Relay
	hub *hub
	now func() time.Time // the wall clock; tests set their own

	// Timings: the constants above, kept in fields for tests.
	window, refresh, ttl, learn time.Duration

	// learning: this process does not know yet who watches what, and
	// relays the live events of every run.
	learning atomic.Bool
	// sending holds one token while a Publish is under way: batches go
	// one at a time, in the order their events were queued.
	sending chan struct{}

	mu         sync.Mutex
	starting   chan struct{}     // guarded by mu: closed when the start attempt ends; nil before it
	stop       func()            // guarded by mu: ends the subscription; nil if none
	closed     bool              // guarded by mu
	learnUntil time.Time         // guarded by mu
	queue      []session.Relayed // guarded by mu: waiting to be published
	queued     []*topic          // guarded by mu: queue[i]'s topic, nil for a notice
	spareQ     []session.Relayed // guarded by mu: the other buffer
	spareT     []*topic          // guarded by mu
	bytes      int               // guarded by mu: about how large queue is
	flushT     *time.Timer       // guarded by mu
	flushArmed bool              // guarded by mu: flushT will fire
	tickT      *time.Timer       // guarded by mu
	tickArmed  bool              // guarded by mu: tickT will fire
	wg         sync.WaitGroup    // the start and the timers' calls under way

	// Counters, for tests and benchmarks.
	rounds  atomic.Int64 // Publish calls
	sent    atomic.Int64 // messages handed to Publish
	dropped atomic.Int64 // live events dropped (queue full, closed)
}

func newRelay(rl session.Relay, h *hub) *relay {
	r := &relay{rl: rl, hub: h, now: time.Now, window: relayWindow, refresh: relayRefresh, ttl: relayTTL, learn: relayLearn,
		sending: make(chan struct{}, 1)}
	r.learning.Store(true)
	return r
}

// start subscribes, in the background, if no one has yet; the returned
// channel is closed once the attempt is over. A start that failed is
// tried again by the next caller.
func (r *relay) start() <-chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.starting != nil || r.closed {
		if r.starting == nil {
			r.starting = make(chan struct{})
			close(r.starting)
		}
		return r.starting
	}
	done := make(chan struct{})
	r.starting = done
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		defer close(done)
		ctx, cancel := context.WithTimeout(context.Background(), relayPublishTimeout)
		stop, err := r.rl.Subscribe(ctx, r.deliver)
		cancel()
		r.mu.Lock()
		switch {
		case err != nil:
			r.starting = nil // the next run or watcher tries again
		case r.closed:
		default:
			r.stop, stop = stop, nil
		}
		r.mu.Unlock()
		if stop != nil {
			stop() // closed meanwhile (never under r.mu: deliver takes it)
		}
	}()
	return done
}

// await starts the relay if need be and waits until it is subscribed (or
// could not be), or ctx ends: false then.
func (r *relay) await(ctx context.Context) bool {
	select {
	case <-r.start():
		return true
	case <-ctx.Done():
		return false
	}
}

// close ends the subscription and the timers, and publishes what is
// queued. It is idempotent.
func (r *relay) close() {
	if r == nil {
		return
	}
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return
	}
	r.closed = true
	if r.flushArmed && r.flushT.Stop() {
		r.flushArmed = false
		r.wg.Done()
	}
	if r.tickArmed && r.tickT.Stop() {
		r.tickArmed = false
		r.wg.Done()
	}
	stop := r.stop
	r.stop = nil
	r.mu.Unlock()
	if stop != nil {
		stop()
	}
	r.wg.Wait()
	r.flush(relayPublishTimeout)
}

// relayed reports whether the live events of t's session go to the
// relay.
func (t *topic) relayed() bool {
	r := t.hub.relay
	return r != nil && (t.remote.Load() || r.learning.Load())
}

// enqueue queues a live event of t's session, which follows the
// committed event pos, to be published.
func (r *relay) enqueue(t *topic, e *session.Event, pos int64) {
	size := 64
	if tok, ok := e.Data.(*session.Token); ok {
		size += len(tok.Text)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed || r.bytes+size > relayQueueBytes {
		r.dropped.Add(1)
		return
	}
	r.queue = append(r.queue, session.Relayed{Kind: session.RelayLive, Tenant: t.key.tenant, SessionID: t.key.id, Event: e, After: pos})
	r.queued = append(r.queued, t)
	t.queued.Add(1)
	r.bytes += size
	if r.bytes >= relayBatchBytes {
		r.armFlush(0)
	} else {
		r.armFlush(r.window)
	}
}

// notice queues a message that is not a live event (RelayWatching,
// RelayHello), to be published at once. r.mu is held.
func (r *relay) notice(m session.Relayed) {
	if r.closed {
		return
	}
	r.queue = append(r.queue, m)
	r.queued = append(r.queued, nil)
	r.bytes += 64
	r.armFlush(0)
}

// armFlush has the queue published within d (sooner if it is already
// due sooner). r.mu is held.
func (r *relay) armFlush(d time.Duration) {
	switch {
	case r.closed:
	case !r.flushArmed:
		r.flushArmed = true
		r.wg.Add(1)
		if r.flushT == nil {
			r.flushT = time.AfterFunc(d, r.flushTimer)
		} else {
			r.flushT.Reset(d)
		}
	case d == 0 && r.flushT.Stop():
		r.flushT.Reset(0) // still armed: flushTimer runs once
	}
}

func (r *relay) flushTimer() {
	defer r.wg.Done()
	r.mu.Lock()
	r.flushArmed = false
	r.mu.Unlock()
	r.flush(relayPublishTimeout)
}

// flush publishes what is queued, once the batch before it is out (or
// wait has passed: then it gives up, leaving the queue for later).
func (r *relay) flush(wait time.Duration) {
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case r.sending <- struct{}{}:
	case <-t.C:
		return
	}
	defer func() { <-r.sending }()
	r.mu.Lock()
	msgs, tops := r.queue, r.queued
	r.queue, r.queued, r.bytes = r.spareQ[:0], r.spareT[:0], 0
	r.spareQ, r.spareT = nil, nil
	r.mu.Unlock()
	if len(msgs) > 0 {
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		// An error loses this batch: live events are best effort, and
		// the next batch is another attempt.
		_ = r.rl.Publish(ctx, msgs)
		cancel()
		r.rounds.Add(1)
		r.sent.Add(int64(len(msgs)))
		for _, t := range tops {
			if t != nil {
				t.queued.Add(-1)
			}
		}
	}
	clear(msgs)
	clear(tops)
	r.mu.Lock()
	r.spareQ, r.spareT = msgs[:0], tops[:0]
	r.mu.Unlock()
}

// settle publishes, before a commit of t's session, its live events still
// queued: the store delivers them before the commit then, and a watcher
// elsewhere shows them before it, in their place, rather than dropping
// them as older than what it has already shown. It waits
// relaySettleWait at most.
func (t *topic) settle() {
	if t != nil && t.queued.Load() > 0 {
		t.hub.relay.flush(relaySettleWait)
	}
}

// watching says to the other processes that this one watches k: its
// first watcher here just came. hub.mu is held.
func (r *relay) watching(k skey) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.notice(session.Relayed{Kind: session.RelayWatching, Tenant: k.tenant, SessionID: k.id})
	r.armTick()
}

// deliver takes what other processes published (it is the subscription's
// callback, on the store's goroutine): live events go to this process's
// watchers of their session, like those of runs here (see watcher.take
// for their order), notices say who watches what.
func (r *relay) deliver(msgs []session.Relayed) {
	now := r.now()
	h := r.hub
	var hello, listening bool
	h.mu.Lock()
	for i := range msgs {
		m := &msgs[i]
		switch m.Kind {
		case session.RelayLive:
			if t := h.topics[skey{m.Tenant, m.SessionID}]; t != nil && m.Event != nil {
				t.sendLocked(hubMsg{ev: m.Event, pos: m.After})
			}
		case session.RelayWatching:
			k := skey{m.Tenant, m.SessionID}
			if h.remote == nil {
				h.remote = make(map[skey]time.Time)
			}
			h.remote[k] = now.Add(r.ttl)
			if t := h.topics[k]; t != nil {
				t.remote.Store(true)
			}
		case session.RelayHello:
			hello = true
		case session.RelayListening:
			listening = true
		}
	}
	var watched []skey
	if hello || listening {
		watched = h.watchedLocked()
	}
	remote := len(h.remote) > 0
	h.mu.Unlock()
	if !hello && !listening && !remote {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if listening {
		// Whatever was said while this process was not listening is
		// lost: ask again, and relay everything until the answers come.
		// And say again what this process watches: it may have said so
		// before another process listened, whose hello came before this
		// one listened, so that neither heard the other.
		r.learning.Store(true)
		r.learnUntil = now.Add(r.learn)
		r.notice(session.Relayed{Kind: session.RelayHello})
	}
	for _, k := range watched {
		r.notice(session.Relayed{Kind: session.RelayWatching, Tenant: k.tenant, SessionID: k.id})
	}
	r.armTick()
}

// armTick has tick run within refresh, if it is not armed. r.mu is held.
func (r *relay) armTick() {
	if r.closed || r.tickArmed {
		return
	}
	r.tickArmed = true
	r.wg.Add(1)
	d := r.refresh
	if r.learning.Load() && !r.learnUntil.IsZero() {
		d = min(d, max(r.learnUntil.Sub(r.now()), 0))
	}
	if r.tickT == nil {
		r.tickT = time.AfterFunc(d, r.tickTimer)
	} else {
		r.tickT.Reset(d)
	}
}

func (r *relay) tickTimer() {
	defer r.wg.Done()
	r.mu.Lock()
	r.tickArmed = false
	r.mu.Unlock()
	r.tick()
}

// tick does what the relay does from time to time: it ends learning when
// its time is up, forgets the notices of others that no longer hold, and
// says again which sessions this process watches. It runs while there
// is any of that to do.
func (r *relay) tick() {
	now := r.now()
	h := r.hub
	h.mu.Lock()
	for k, until := range h.remote {
		if !now.Before(until) {
			delete(h.remote, k)
			if t := h.topics[k]; t != nil {
				t.remote.Store(false)
			}
		}
	}
	watched := h.watchedLocked()
	remote := len(h.remote) > 0
	h.mu.Unlock()
	r.mu.Lock()
	defer r.mu.Unlock()
	learning := r.learning.Load()
	if learning && !r.learnUntil.IsZero() && !now.Before(r.learnUntil) {
		r.learning.Store(false)
		learning = false
	}
	for _, k := range watched {
		r.notice(session.Relayed{Kind: session.RelayWatching, Tenant: k.tenant, SessionID: k.id})
	}
	if len(watched) > 0 || remote || learning && !r.learnUntil.IsZero() {
		r.armTick()
	}
}

// watchedLocked returns the sessions watched in this process. h.mu is
// held.
func (h *hub) watchedLocked() []skey {
	var out []skey
	for k, t := range h.topics {
		if len(t.subs) > 0 {
			out = append(out, k)
		}
	}
	return out
}
