package server

import (
	"context"
	"encoding/json"
	"iter"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/agentrt/agentrt/session"
)

// eventSink is where a stream's events go: an SSE response, a WebSocket.
type eventSink interface {
	// event writes one event; token events have seq 0.
	event(ev *session.Event) error
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

// pump copies the events open yields to sink until they end, done says the
// stream is complete (after writing the event), ctx ends, the server
// shuts down, or the client cannot keep up.
//
// A reader goroutine takes events from open(ctx) into a buffer of
// ClientBuffer events; the caller's goroutine writes them out. The run
// never waits for a client: open reads committed events from the store
// (Runner.Watch), and tokens are dropped, not queued, for a client whose
// buffer is full. A client that leaves its buffer full of committed
// events for WriteTimeout is told to reconnect from its last id, and its
// reader stops: a paused client costs its buffer, nothing more. It returns the seq of the last
// committed event written.
func (s *Server) pump(ctx context.Context, open func(context.Context) iter.Seq2[*session.Event, error], after int64, sink eventSink, done func(*session.Event) bool) int64 {
	if !s.openStream() {
		// Shutting down: the client reconnects, to another replica.
		_ = sink.behind(after)
		return after
	}
	defer s.streams.Done()
	s.clients.Add(1)
	defer s.clients.Add(-1)
	if g := s.gauges[sink.kind()]; g != nil {
		g.Inc()
		defer g.Dec()
	}
	return s.copyEvents(ctx, open, after, sink, done)
}

// copyEvents is pump without counting the stream as a client: a
// WebSocket connection counts once, however many subscriptions it
// carries.
func (s *Server) copyEvents(ctx context.Context, open func(context.Context) iter.Seq2[*session.Event, error], after int64, sink eventSink, done func(*session.Event) bool) int64 {
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ch := make(chan item, s.cfg.ClientBuffer)
	var behind atomic.Bool
	go func() {
		defer close(ch)
		for ev, err := range open(rctx) {
			if err != nil {
				select {
				case ch <- item{err: err}:
				case <-rctx.Done():
				}
				return
			}
			select {
			case ch <- item{ev: ev}:
				continue
			case <-rctx.Done():
				return
			default:
			}
			if ev.Seq == 0 {
				continue // a live token: best effort
			}
			// The buffer is full of what the client has not taken: wait
			// as long as a write may take, then give up on it.
			t := time.NewTimer(s.cfg.WriteTimeout)
			select {
			case ch <- item{ev: ev}:
				t.Stop()
				continue
			case <-rctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
			behind.Store(true)
			return
		}
	}()

	last := after
	hb := time.NewTicker(s.cfg.Heartbeat)
	defer hb.Stop()
	for {
		select {
		case it, ok := <-ch:
			switch {
			case !ok:
				if behind.Load() {
					_ = sink.behind(last)
				}
				return last
			case it.err != nil:
				_ = sink.fail(it.err)
				return last
			}
			if it.ev.Seq != 0 && it.ev.Seq <= last {
				continue // the watcher's own replay overlap: never twice
			}
			if err := sink.event(it.ev); err != nil {
				return last
			}
			if it.ev.Seq != 0 {
				last = it.ev.Seq
			}
			if done != nil && done(it.ev) {
				return last
			}
		case <-hb.C:
			if err := sink.heartbeat(); err != nil {
				return last
			}
		case <-ctx.Done():
			return last
		case <-s.stop:
			// Shutting down: the client reconnects, to another replica.
			_ = sink.behind(last)
			return last
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
}

func newSSE(w http.ResponseWriter, timeout time.Duration) *sseSink {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no") // nginx: do not buffer the stream
	w.WriteHeader(http.StatusOK)
	s := &sseSink{w: w, rc: http.NewResponseController(w), timeout: timeout, buf: make([]byte, 0, 1024)}
	// Browsers wait a second before they reconnect.
	s.buf = append(s.buf, "retry: 1000\n\n"...)
	_ = s.flush()
	return s
}

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
	return s.flush()
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
