package server

import (
	"context"
	"encoding/json"
	"iter"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/session"
)

// eventSink is where a stream's events go: an SSE response, a WebSocket.
type eventSink interface {
	// event writes one event, or buffers it until flush; token events
	// have seq 0.
	event(ev *session.Event) error
	// flush sends what event buffered.
	flush() error
	// heartbeat tells the client the stream is alive.
	heartbeat() error
	// behind tells the client it fell behind: reconnect after last.
	behind(last int64) error
	// kind names the transport, for metrics: "sse", "ws".
	kind() string
	// fail tells the client the stream ends with err (an event named
	// stream_error, unlike a session's own error events).
	fail(err error) error
}

// item is what the reader of a stream hands its writer.
type item struct {
	ev  *session.Event
	err error
}

// feed is a stream's events between its reader, a goroutine that takes
// them from open(ctx) (a Runner.Watch), and its writer, which sends them
// to the client. It holds at most limit events, queued or being
// written: the run never waits for a client, as the watch reads
// committed events from the store, and tokens are dropped, not queued,
// for a client that has no room. A client that leaves its buffer full of
// committed events for timeout is behind: the reader stops, and the
// client is told to reconnect from its last id once it has taken the
// rest. The queue grows with what the client has not taken, so a client
// that keeps up costs a few slots, not its limit.
type feed struct {
	limit   int
	timeout time.Duration
	cancel  context.CancelFunc

	mu       sync.Mutex
	q        []item // guarded by mu
	inflight int    // guarded by mu: taken by the writer, not yet written
	over     bool   // guarded by mu: the reader ended
	behind   bool   // guarded by mu: it ended as the client fell behind
	err      error  // guarded by mu: the error it ended with

	ready chan struct{} // one value: q has items, or the reader ended
	room  chan struct{} // one value: the writer wrote what it took
	ended chan struct{} // closed when the reader ends
}

// startFeed starts a stream's reader; stop ends it.
func (s *Server) startFeed(ctx context.Context, open func(context.Context) iter.Seq2[*session.Event, error]) *feed {
	rctx, cancel := context.WithCancel(ctx)
	f := &feed{limit: max(s.cfg.ClientBuffer, 1), timeout: s.cfg.WriteTimeout, cancel: cancel, q: make([]item, 0, 16),
		ready: make(chan struct{}, 1), room: make(chan struct{}, 1), ended: make(chan struct{})}
	go f.read(rctx, open)
	return f
}

// stop ends the reader, and returns once it has ended: nothing of the
// stream reads the store after it (Shutdown waits for that).
func (f *feed) stop() {
	if f != nil {
		f.cancel()
		<-f.ended
	}
}

func (f *feed) read(ctx context.Context, open func(context.Context) iter.Seq2[*session.Event, error]) {
	behind := false
	var failed error
	defer func() {
		f.mu.Lock()
		f.over, f.behind, f.err = true, behind, failed
		f.mu.Unlock()
		close(f.ended)
		f.wake()
	}()
	for ev, err := range open(ctx) {
		if err != nil {
			failed = err
			f.mu.Lock()
			f.q = append(f.q, item{err: err}) // past the limit: it ends the stream
			f.mu.Unlock()
			return
		}
		if f.put(ev) || ev.Seq == 0 {
			continue // queued, or a live token with no room: best effort
		}
		// The buffer is full of what the client has not taken: wait as
		// long as a write may take, then give up on it.
		t := time.NewTimer(f.timeout)
		for !f.put(ev) {
			select {
			case <-f.room:
				continue
			case <-ctx.Done():
			case <-t.C:
				behind = true
			}
			t.Stop()
			return
		}
		t.Stop()
	}
}

// put queues ev if there is room.
func (f *feed) put(ev *session.Event) bool {
	f.mu.Lock()
	if len(f.q)+f.inflight >= f.limit {
		f.mu.Unlock()
		return false
	}
	f.q = append(f.q, item{ev: ev})
	first := len(f.q) == 1
	f.mu.Unlock()
	if first {
		f.wake()
	}
	return true
}

func (f *feed) wake() {
	select {
	case f.ready <- struct{}{}:
	default:
	}
}

// failure is the error the reader ended with, or why it ended without
// one before its stream began.
func (f *feed) failure() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return f.err
	}
	return &agentrt.Error{Kind: agentrt.FailInternal, Msg: "the session's watch ended before it began"}
}

// take hands the writer what is queued, swapping in spare (emptied) as
// the queue, and whether the reader ended and why.
func (f *feed) take(spare []item) (q []item, over, behind bool) {
	f.mu.Lock()
	q, f.q = f.q, spare[:0]
	f.inflight = len(q)
	over, behind = f.over, f.behind
	f.mu.Unlock()
	return q, over, behind
}

// wrote tells the reader the writer is done with what it took.
func (f *feed) wrote() {
	f.mu.Lock()
	f.inflight = 0
	f.mu.Unlock()
	select {
	case f.room <- struct{}{}:
	default:
	}
}

// streamOpenWait is how long a stream's headers wait for its first
// events to go out with them.
const streamOpenWait = 50 * time.Millisecond

// pump copies the events open yields to sink until they end, ctx ends,
// the server shuts down, or the client cannot keep up (see feed). It
// returns the seq of the last committed event written.
func (s *Server) pump(ctx context.Context, open func(context.Context) iter.Seq2[*session.Event, error], after int64, sink eventSink) int64 {
	if !s.openStream() {
		// Shutting down: the client reconnects, to another replica.
		_ = sink.behind(after)
		return after
	}
	f := s.startFeed(ctx, open)
	defer f.stop()
	return s.pumpFeed(ctx, f, after, sink, true)
}

// pumpFeed is pump of a feed already started; opened says the caller
// has counted the stream with openStream.
func (s *Server) pumpFeed(ctx context.Context, f *feed, after int64, sink eventSink, opened bool) int64 {
	if !opened && !s.openStream() {
		_ = sink.behind(after)
		return after
	}
	defer func() {
		// The stream is over once its reader is: Shutdown waits for both.
		f.stop()
		s.streams.Done()
	}()
	s.clients.Add(1)
	defer s.clients.Add(-1)
	if g := s.gauges[sink.kind()]; g != nil {
		g.Inc()
		defer g.Dec()
	}
	return s.drain(ctx, f, after, sink)
}

// copyEvents is pump without counting the stream as a client: a
// WebSocket connection counts once, however many subscriptions it
// carries.
func (s *Server) copyEvents(ctx context.Context, open func(context.Context) iter.Seq2[*session.Event, error], after int64, sink eventSink) int64 {
	f := s.startFeed(ctx, open)
	defer f.stop()
	return s.drain(ctx, f, after, sink)
}

// drain is the writer of a stream to a sink: it writes what the feed has
// queued, all of it before one flush, heartbeats while the session is
// quiet, and ends the stream as the pump's end says.
func (s *Server) drain(ctx context.Context, f *feed, after int64, sink eventSink) int64 {
	last, end, err := s.pumpEvents(ctx, f, after, pumpOpts{
		batch: func(evs []*session.Event) bool {
			for i, ev := range evs {
				if err := sink.event(ev); err != nil {
					if i > 0 {
						_ = sink.flush()
					}
					return false
				}
			}
			return sink.flush() == nil
		},
		idle:    func() bool { return sink.heartbeat() == nil },
		opening: func() bool { return sink.flush() == nil },
		stop:    s.stop,
	})
	switch end {
	case endFailed:
		_ = sink.fail(err)
	case endBehind, endStopped:
		// Shutting down, or behind: the client reconnects from its last
		// id (to another replica).
		_ = sink.behind(last)
	}
	return last
}

// pumpEnd says why a stream's pump ended.
type pumpEnd int

const (
	endDone    pumpEnd = iota // the events ended: the turn's end, or the watch's
	endFailed                 // they ended with an error
	endBehind                 // the client left committed events untaken too long
	endClient                 // the client could not take a batch (it left)
	endContext                // the stream's context ended
	endStopped                // the server stops: pumpOpts.stop closed
)

// pumpOpts are what a pump does with a stream's events and its quiet.
type pumpOpts struct {
	// batch takes events ready together (never empty; valid only during
	// the call); false ends the stream (endClient).
	batch func([]*session.Event) bool
	// idle, when set, is called every Heartbeat of quiet; opening once,
	// streamOpenWait after the start if no batch went before it. False
	// ends the stream (endClient).
	idle, opening func() bool
	// stop ends the stream when closed (endStopped): the server's stop
	// for streams a client resumes, its abandon for turns that adapters
	// follow through Shutdown's grace.
	stop <-chan struct{}
}

// pumpEvents is the one stream pump of the server, for SSE, WebSocket
// and the adapters alike: it hands what the feed has queued to o.batch —
// everything queued at once, committed events never twice (the watch's
// replay overlaps what it saw live) — until the feed ends, ctx ends, o
// says stop, or the client cannot keep up. It returns the seq of the
// last committed event handed over, why it ended, and the feed's error
// for endFailed.
func (s *Server) pumpEvents(ctx context.Context, f *feed, after int64, o pumpOpts) (last int64, end pumpEnd, err error) {
	last = after
	var hb <-chan time.Time
	if o.idle != nil {
		t := time.NewTicker(s.cfg.Heartbeat)
		defer t.Stop()
		hb = t.C
	}
	var opening <-chan time.Time
	if o.opening != nil {
		// The response's headers go out with its first events, which mostly
		// come at once, or after streamOpenWait: one write fewer a stream.
		t := time.NewTimer(streamOpenWait)
		defer t.Stop()
		opening = t.C
	}
	var spare []item
	var batch []*session.Event
	for {
		select {
		case <-opening:
			if !o.opening() {
				return last, endClient, nil
			}
		case <-f.ready:
			q, over, behind := f.take(spare)
			batch = batch[:0]
			var failed error
			upto := last
			for _, it := range q {
				if it.err != nil {
					failed = it.err
					break
				}
				switch ev := it.ev; {
				case ev.Seq == 0:
					batch = append(batch, ev)
				case ev.Seq > upto:
					batch = append(batch, ev)
					upto = ev.Seq
				}
			}
			if len(batch) > 0 {
				opening = nil // the headers go with these events
				if !o.batch(batch) {
					return last, endClient, nil
				}
				last = upto
			}
			clear(q)
			spare = q
			f.wrote()
			switch {
			case failed != nil:
				return last, endFailed, failed
			case over && behind:
				return last, endBehind, nil
			case over:
				return last, endDone, nil
			}
		case <-hb:
			if !o.idle() {
				return last, endClient, nil
			}
		case <-ctx.Done():
			return last, endContext, nil
		case <-o.stop:
			return last, endStopped, nil
		}
	}
}

// sseSink writes events as server-sent events: id is the event's seq
// (none for live tokens), event its type, data its JSON.
type sseSink struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	timeout time.Duration
	buf     []byte
	pool    *sync.Pool
}

func (srv *Server) newSSE(w http.ResponseWriter) *sseSink {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no") // nginx: do not buffer the stream
	w.WriteHeader(http.StatusOK)
	s := &sseSink{w: w, rc: http.NewResponseController(w), timeout: srv.cfg.WriteTimeout, pool: &srv.bufs}
	if b, ok := srv.bufs.Get().(*[]byte); ok {
		s.buf = (*b)[:0]
	} else {
		s.buf = make([]byte, 0, 4096)
	}
	// Browsers wait a second before they reconnect. This and the headers
	// go out with the first events, or after streamOpenWait (drain).
	s.buf = append(s.buf, "retry: 1000\n\n"...)
	return s
}

// release gives the sink's buffer back for another stream's use, and
// clears the write deadline flush set: the connection may serve another
// request, whose writes may set none.
func (s *sseSink) release() {
	_ = s.rc.SetWriteDeadline(time.Time{})
	if cap(s.buf) <= maxPooledBuf {
		b := s.buf[:0]
		s.pool.Put(&b)
	}
	s.buf = nil
}

// maxPooledBuf is the largest stream buffer kept for another stream: a
// larger one was for a rare, large batch.
const maxPooledBuf = 64 << 10

func (s *sseSink) kind() string { return "sse" }

func (s *sseSink) flush() error {
	_ = s.rc.SetWriteDeadline(time.Now().Add(s.timeout))
	_, err := s.w.Write(s.buf)
	s.buf = s.buf[:0]
	if err == nil {
		err = s.rc.Flush()
	}
	return err
}

func (s *sseSink) event(ev *session.Event) error {
	if ev.Seq != 0 {
		s.buf = append(s.buf, "id: "...)
		s.buf = strconv.AppendInt(s.buf, ev.Seq, 10)
		s.buf = append(s.buf, '\n')
	}
	s.buf = append(s.buf, "event: "...)
	s.buf = append(s.buf, ev.Type...)
	s.buf = append(s.buf, "\ndata: "...)
	var err error
	if s.buf, err = ev.AppendJSON(s.buf); err != nil {
		return err
	}
	s.buf = append(s.buf, "\n\n"...)
	return nil
}

func (s *sseSink) heartbeat() error {
	s.buf = append(s.buf, ": ping\n\n"...)
	return s.flush()
}

// behind ends the stream with a reconnect event: the client connects
// again with Last-Event-ID (a browser's EventSource does so by itself
// when the stream ends).
func (s *sseSink) behind(last int64) error {
	s.buf = append(s.buf, "event: reconnect\ndata: "...)
	b, _ := json.Marshal(map[string]any{"last_event_id": last, "reason": "reconnect from last_event_id"})
	s.buf = append(s.buf, b...)
	s.buf = append(s.buf, "\n\n"...)
	return s.flush()
}

func (s *sseSink) fail(err error) error {
	_, d := statusOf(err)
	b, _ := json.Marshal(ErrorBody{Error: d})
	s.buf = append(s.buf, "event: stream_error\ndata: "...)
	s.buf = append(s.buf, b...)
	s.buf = append(s.buf, "\n\n"...)
	return s.flush()
}

// wantsSSE reports whether the client asked for an event stream.
func wantsSSE(r *http.Request) bool {
	for a := range strings.SplitSeq(r.Header.Get("Accept"), ",") {
		mt, _, _ := strings.Cut(a, ";")
		if strings.EqualFold(strings.TrimSpace(mt), "text/event-stream") {
			return true
		}
	}
	return false
}

// resumeFrom is where a stream starts: after the Last-Event-ID the client
// reconnects with, else after ?after=, else from the start.
func resumeFrom(r *http.Request) (int64, error) {
	v, name := r.Header.Get("Last-Event-ID"), "Last-Event-ID"
	if v == "" {
		v, name = r.URL.Query().Get("after"), "after"
	}
	if v == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err != nil || n < 0 {
		return 0, badRequest("%s %q is not an event seq (a whole number, 0 or more)", name, v)
	}
	return n, nil
}
