package agentrt

import (
	"context"
	"iter"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentrt/agentrt/session"
)

// Watch yields a session's events with seq > after, then each new one as
// it commits, in order and without gaps, plus the live token events of a
// run of this session, each after the last committed event before it: a
// run in this process, or, with a store that relays (session.Relay, the
// Postgres store) and unless Config.NoRelay, a run in any process sharing
// the store. It ends when ctx ends (without an error) or the consumer
// stops; the error, when it yields one, is the store's (an unknown or
// deleted session is not_found), or, when a run of the session in this
// process stopped because the store refused its write, end_not_stored
// (recoverable: after the events it stored, which the watch yields
// first; watch again from the last one to follow the run once it is
// resumed).
//
// Watching never holds up a run: committed events come from the store (a
// session.Follower sees the commits of every process), and a watcher that
// falls behind reads them from there when it catches up. Live tokens are
// best effort: a watcher too slow for them loses some, never a committed
// event, and so may one that starts while the run is streaming (a token
// older than what it has shown is dropped). With a store that cannot
// follow, Watch sees only the commits made by runs of this process.
func (r *Runner) Watch(ctx context.Context, sessionID string, after int64) iter.Seq2[*session.Event, error] {
	return r.watch(ctx, sessionID, after, nil)
}

// watch is Watch, which also ends when until is closed, once it has
// yielded every event committed by then.
func (r *Runner) watch(ctx context.Context, sessionID string, after int64, until <-chan struct{}) iter.Seq2[*session.Event, error] {
	return func(yield func(*session.Event, error) bool) {
		if _, err := r.store.GetSession(ctx, sessionID); err != nil {
			yield(nil, notFound(sessionID, err))
			return
		}
		t := r.hub.retain(keyOf(ctx, sessionID), nil)
		defer r.hub.release(t)
		sub := t.subscribe()
		defer t.unsubscribe(sub)
		if rl := r.hub.relay; rl != nil && !rl.await(ctx) {
			// Subscribed to other processes' tokens before the first
			// event, so that none published from then on is missed.
			return
		}
		if subscribed, ok := ctx.Value(subscribedKey{}).(func()); ok {
			subscribed()
		}

		w := &watcher{r: r, id: sessionID, key: t.key, last: max(after, 0), yield: yield}
		w.seen.Store(w.last)
		wctx, cancel := context.WithCancel(ctx)
		var wg sync.WaitGroup
		defer func() {
			cancel()
			wg.Wait()
		}()
		var follow chan followed
		if r.follower != nil {
			follow = make(chan followed, 16)
			from := w.last
			wg.Go(func() {
				defer close(follow)
				for e, err := range r.follower.Follow(wctx, sessionID, from) {
					if err == nil && e.Seq <= w.seen.Load() {
						continue // the watcher has it (a commit of this process)
					}
					select {
					case follow <- followed{e, err}:
					case <-wctx.Done():
						return
					}
					if err != nil {
						return
					}
				}
			})
		} else if !w.catchUp(ctx) {
			return
		}
		for {
			// This process's messages first: a token is published before
			// the commit that ends its model call, which the follower may
			// deliver first.
			if !w.drain(ctx, sub) {
				return
			}
			if sub.lagged.Swap(false) && !w.catchUp(ctx) {
				// Events this watcher had no room for: the store has them.
				return
			}
			select {
			case <-sub.ready:
			case f, ok := <-follow:
				switch {
				case !ok:
					return // ctx ended
				case f.err != nil:
					if ctx.Err() == nil {
						yield(nil, notFound(sessionID, f.err))
					}
					return
				}
				if !w.drain(ctx, sub) {
					return
				}
				if w.open && f.ev.Seq == w.last+1 && !w.syncRelay(ctx, sub) {
					return
				}
				if !w.take(ctx, f.ev, 0) {
					return
				}
			case <-until:
				// Everything committed before until closed is in the
				// store: the rest is read from there.
				w.catchUp(ctx)
				return
			case <-ctx.Done():
				return
			}
		}
	}
}

// drain takes the messages in the watcher's inbox.
func (w *watcher) drain(ctx context.Context, sub *subscriber) bool {
	for {
		q := sub.take(w.spare)
		w.spare = q
		if len(q) == 0 {
			return ctx.Err() == nil
		}
		for _, m := range q {
			if m.ev == nil {
				// The run here stopped without storing its end: what
				// it stored is in the store, and then the watch ends.
				if w.catchUp(ctx) {
					w.yield(nil, sub.failure())
				}
				clear(q)
				return false
			}
			if !w.take(ctx, m.ev, m.pos) {
				clear(q)
				return false
			}
		}
		clear(q)
	}
}

type followed struct {
	ev  *session.Event
	err error
}

// watcher is one Watch's position in the log.
type watcher struct {
	r     *Runner
	id    string
	key   skey
	last  int64 // the seq of the last event yielded
	open  bool  // it is a model_started: the model call streams
	yield func(*session.Event, error) bool
	held  []hubMsg // tokens that came before the event they follow
	spare []hubMsg // the inbox's other queue (subscriber.take)
	// seen is last, for the goroutine that follows the store: it skips
	// the events the watcher has had from this process's runs.
	seen atomic.Int64
}

// relaySyncWait bounds how long a watcher waits for the relay before it
// shows the commit that ends a model call.
const relaySyncWait = time.Second

// syncRelay is called before the watcher shows the commit that ends a
// model call (its next event after model_started) read from the log.
// When the run is in another process, the relay may not have delivered
// yet the call's last tokens, though they were published before that
// commit (see topic.settle): the log can be read sooner. It waits until
// the relay has delivered everything published so far (Relay.Sync), and
// takes what is in the watcher's inbox, before the commit. Best effort:
// waiting fails, and the commit goes first, if it takes longer than
// relaySyncWait.
func (w *watcher) syncRelay(ctx context.Context, sub *subscriber) bool {
	rl := w.r.hub.relay
	if rl == nil || w.r.reg.run(w.key) != nil {
		return true // no relay, or the run is here: its tokens came first
	}
	sctx, cancel := context.WithTimeout(ctx, relaySyncWait)
	_ = rl.rl.Sync(sctx)
	cancel()
	return w.drain(ctx, sub)
}

// maxHeld is the most tokens a watcher keeps waiting for their place.
const maxHeld = 1024

// take handles one event: a committed one is yielded in its place (events
// already yielded are skipped, a gap is filled from the store), a token
// (pos: the seq of the committed event it follows) once that event was.
func (w *watcher) take(ctx context.Context, e *session.Event, pos int64) bool {
	if e.Seq == 0 {
		switch {
		case pos == w.last:
			return w.yield(e, nil)
		case pos > w.last && len(w.held) < maxHeld:
			w.held = append(w.held, hubMsg{ev: e, pos: pos})
		}
		return true
	}
	if e.Seq <= w.last {
		return true
	}
	if e.Seq > w.last+1 {
		return w.catchUp(ctx)
	}
	return w.yieldCommitted(e)
}

func (w *watcher) yieldCommitted(e *session.Event) bool {
	if !w.yield(e, nil) {
		return false
	}
	w.last, w.open = e.Seq, e.Type == session.TypeModelStarted
	w.seen.Store(e.Seq)
	if len(w.held) > 0 {
		// Tokens that follow this event; older ones are stale.
		keep := w.held[:0]
		for _, t := range w.held {
			switch {
			case t.pos == w.last:
				if !w.yield(t.ev, nil) {
					return false
				}
			case t.pos > w.last:
				keep = append(keep, t)
			}
		}
		w.held = keep
	}
	return true
}

// catchUp yields the committed events after w.last from the store.
func (w *watcher) catchUp(ctx context.Context) bool {
	for e, err := range w.r.store.Events(ctx, w.id, w.last) {
		if err != nil {
			if ctx.Err() == nil {
				w.yield(nil, &Error{Kind: FailStore, Code: CodeWatchBehind,
					Msg: "read events of session " + w.id + "; resume watching from seq " + strconv.FormatInt(w.last, 10), Err: err})
			}
			return false
		}
		if e.Seq <= w.last {
			continue
		}
		if !w.yieldCommitted(e) {
			return false
		}
	}
	return true
}

// hub holds the watchers of this process, by session, and the positions
// of the tokens published to them. With a relay (relay.go), it also
// publishes the tokens of runs here to the watchers of other processes,
// and hands theirs to the watchers here.
type hub struct {
	relay *relay // nil: this process's runs and watchers only

	mu     sync.Mutex
	topics map[skey]*topic // guarded by mu
	// remote holds, for the sessions that other processes said they
	// watch, until when that holds (see relay). Guarded by mu.
	remote map[skey]time.Time
}

// topic is one session's watchers. A run and each watcher retain it while
// they use it.
type topic struct {
	key    skey
	refs   int           // guarded by hub.mu
	subs   []*subscriber // guarded by hub.mu
	nsubs  atomic.Int32  // len(subs), read without the lock
	remote atomic.Bool   // another process watches the session (hub.remote has it)
	queued atomic.Int32  // the session's live events in the relay's queue
	hub    *hub
}

// subscriber is one Watch's inbox. Publishing never blocks: an inbox that
// is full drops the message and marks the watcher lagged, which then
// reads the committed events it missed from the store.
type subscriber struct {
	mu     sync.Mutex
	q      []hubMsg      // guarded by mu; grows up to subscriberBuffer
	failed error         // guarded by mu: set by fail
	ready  chan struct{} // one value: q has messages
	lagged atomic.Bool
}

// put queues m, or drops it and marks the watcher lagged if its inbox
// is full.
func (s *subscriber) put(m hubMsg) {
	s.mu.Lock()
	if len(s.q) >= subscriberBuffer {
		s.mu.Unlock()
		s.lagged.Store(true)
		return
	}
	s.q = append(s.q, m)
	first := len(s.q) == 1
	s.mu.Unlock()
	if first {
		select {
		case s.ready <- struct{}{}:
		default:
		}
	}
}

// take returns the queued messages, leaving spare, emptied, as the queue.
func (s *subscriber) take(spare []hubMsg) []hubMsg {
	s.mu.Lock()
	q := s.q
	s.q = spare[:0]
	s.mu.Unlock()
	return q
}

// A hubMsg without an event ends the watch with the subscriber's failure
// (see topic.fail).
type hubMsg struct {
	ev  *session.Event
	pos int64 // for a token, the seq of the last event committed before it
}

// subscriberBuffer is the size of a watcher's inbox: a turn's events and
// a few hundred tokens.
const subscriberBuffer = 512

// retain returns session id's topic, made from spare (zero, and the
// caller's to give) or new if the session has none. The first use
// starts the relay.
func (h *hub) retain(k skey, spare *topic) *topic {
	if h.relay != nil {
		h.relay.start()
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	t := h.topics[k]
	if t == nil {
		t = spare
		if t == nil {
			t = new(topic)
		}
		t.key, t.hub = k, h
		if until, ok := h.remote[k]; ok && h.relay.now().Before(until) {
			t.remote.Store(true)
		}
		h.topics[k] = t
	}
	t.refs++
	return t
}

func (h *hub) release(t *topic) {
	if t == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if t.refs--; t.refs == 0 {
		delete(h.topics, t.key)
	}
}

func (t *topic) subscribe() *subscriber {
	s := &subscriber{ready: make(chan struct{}, 1), q: make([]hubMsg, 0, 16)}
	t.hub.mu.Lock()
	t.subs = append(t.subs, s)
	t.nsubs.Store(int32(len(t.subs)))
	if len(t.subs) == 1 && t.hub.relay != nil {
		t.hub.relay.watching(t.key)
	}
	t.hub.mu.Unlock()
	return s
}

func (t *topic) unsubscribe(s *subscriber) {
	t.hub.mu.Lock()
	for i, x := range t.subs {
		if x == s {
			t.subs = append(t.subs[:i], t.subs[i+1:]...)
			break
		}
	}
	t.nsubs.Store(int32(len(t.subs)))
	t.hub.mu.Unlock()
}

// watched reports whether anyone may watch the session: in this process,
// or in another through the relay.
func (t *topic) watched() bool { return t != nil && (t.nsubs.Load() > 0 || t.relayed()) }

// publish hands a token, which follows the committed event pos, to the
// watchers, here and through the relay.
func (t *topic) publish(e *session.Event, pos int64) {
	if t == nil {
		return
	}
	if t.nsubs.Load() > 0 {
		t.send(hubMsg{ev: e, pos: pos})
	}
	if t.relayed() {
		t.hub.relay.enqueue(t, e, pos)
	}
}

// publishCommitted hands committed events to the watchers.
func (t *topic) publishCommitted(evs []*session.Event) {
	if t == nil || t.nsubs.Load() == 0 {
		return
	}
	for _, e := range evs {
		t.send(hubMsg{ev: e})
	}
}

// fail ends the watches of t's session in this process with err, after
// the events they have yet to yield: its run stopped here because the
// store refused a write, and the run_finished they would wait for is not
// coming (revive.go).
func (t *topic) fail(err error) {
	if t == nil || t.nsubs.Load() == 0 {
		return
	}
	t.hub.mu.Lock()
	defer t.hub.mu.Unlock()
	for _, s := range t.subs {
		s.fail(err)
	}
}

// fail queues the end of the watch with err, even when the inbox is full.
func (s *subscriber) fail(err error) {
	s.mu.Lock()
	if s.failed == nil {
		s.failed = err
	}
	s.q = append(s.q, hubMsg{})
	first := len(s.q) == 1
	s.mu.Unlock()
	if first {
		select {
		case s.ready <- struct{}{}:
		default:
		}
	}
}

// failure is the error fail queued the end of the watch with.
func (s *subscriber) failure() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.failed
}

func (t *topic) send(m hubMsg) {
	t.hub.mu.Lock()
	defer t.hub.mu.Unlock()
	t.sendLocked(m)
}

// sendLocked is send with hub.mu held.
func (t *topic) sendLocked(m hubMsg) {
	for _, s := range t.subs {
		s.put(m)
	}
}
