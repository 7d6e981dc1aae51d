// Package llmhttp is the HTTP plumbing the provider clients share: sending
// a request, classifying failures, reading an event stream under the four
// watchdogs of model.Timeouts (first feedback, first chunk, idle, hard).
package llmhttp

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentrt/agentrt/internal/sse"
	"github.com/agentrt/agentrt/model"
)

// Call describes the calls of one provider client.
type Call struct {
	Client          *http.Client
	Provider, Model string
	Timeouts        model.Timeouts // with defaults filled in
	// MaxLine bounds an event stream's lines (0: sse.DefaultMaxLine).
	MaxLine int
	// MaxBody bounds a non-streamed response (0: 32 MiB).
	MaxBody int64
}

// NewClient returns an HTTP client for calls bounded by t: the request
// timeout is t.RequestTimeout(), so the watchdogs fire first.
func NewClient(t model.Timeouts) *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 64
	return &http.Client{Timeout: t.RequestTimeout(), Transport: tr}
}

// errStopped ends a wait whose pulses nobody reads any more.
var errStopped = errors.New("llmhttp: the caller stopped reading")

// IsStopped reports whether err means the consumer stopped (Open's pulse
// returned false).
func IsStopped(err error) bool { return errors.Is(err, errStopped) }

// Stream is one streamed response, read event by event. It is not safe for
// concurrent use.
type Stream struct {
	c      *Call
	ctx    context.Context
	cancel context.CancelCauseFunc
	resp   *http.Response
	rd     *sse.Reader

	start time.Time
	timer *time.Timer
	first atomic.Bool // the first event has arrived
	// waiting: a read is under way, begun at waitStart (ns since start).
	// The idle watchdog counts only that time: a consumer slow to ask for
	// the next event is not a stalled stream.
	waiting   atomic.Bool
	waitStart atomic.Int64
	done      sync.Once
	// complete: the terminator arrived; closing: Close is draining.
	complete bool
	closing  atomic.Bool

	// The first event, read by Open and returned by the first Next.
	pending          bool
	pendingEv, pendD []byte
	pendingErr       error
}

// readers recycles event-stream readers (each holds a 4 KiB buffer) across
// responses.
var readers = sync.Pool{New: func() any { return sse.NewReader(nil, 0) }}

// Open sends the request newReq builds (with the context it is given,
// which the watchdogs cancel) and returns once the response's first event
// has arrived (or the stream ended), or the call failed. While it waits, pulse is called every
// Timeouts.FirstFeedback; if pulse returns false Open gives up, and the
// error satisfies IsStopped. pulse may be nil.
//
// The failures are *model.Error values: an HTTP status, a body that is not
// an event stream, a watchdog; or ctx's error when ctx ended.
func (c *Call) Open(ctx context.Context, newReq func(context.Context) (*http.Request, error), pulse func() bool) (*Stream, error) {
	s := &Stream{c: c, start: time.Now()}
	s.ctx, s.cancel = context.WithCancelCause(ctx)
	t := c.Timeouts
	s.timer = time.AfterFunc(min(t.FirstChunk, t.Hard), s.check)
	req, err := newReq(s.ctx)
	if err != nil {
		s.Close()
		return nil, err
	}
	if pulse == nil || t.FirstFeedback <= 0 {
		if err := s.open(req); err != nil {
			s.Close()
			return nil, err
		}
		return s, nil
	}
	// Wait on another goroutine, so that this one can pulse meanwhile.
	ch := make(chan error, 1)
	go func() { ch <- s.open(req) }()
	tick := time.NewTimer(t.FirstFeedback)
	defer tick.Stop()
	for {
		select {
		case err := <-ch:
			if err != nil {
				s.Close()
				return nil, err
			}
			return s, nil
		case <-tick.C:
			if !pulse() {
				s.cancel(errStopped)
				<-ch
				s.Close()
				return nil, errStopped
			}
			tick.Reset(t.FirstFeedback)
		}
	}
}

// open sends req and reads up to the first event.
func (s *Stream) open(req *http.Request) error {
	c := s.c
	resp, err := c.Client.Do(req)
	if err != nil {
		return c.TransportError(s.ctx, err, false)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return c.StatusError(resp)
	}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt != "text/event-stream" {
		// A 200 that is not a stream: an error object, or a page from
		// something that is not the API.
		body, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
		resp.Body.Close()
		e := c.BodyError(http.StatusOK, resp.Header, body)
		if !bytes.Contains(body, []byte(`"error"`)) {
			no := false
			e.Code, e.Retryable = model.CodeServer, &no
			e.Message = fmt.Sprintf("expected an event stream, got %q (is the base URL right?): %s", resp.Header.Get("Content-Type"), e.Message)
		}
		return e
	}
	s.resp = resp
	s.rd = readers.Get().(*sse.Reader)
	s.rd.Reset(resp.Body)
	// Wait for the first event here, where the caller can be told of the
	// wait; a failure to read it is Next's to report (it may be io.EOF).
	s.pendingEv, s.pendD, s.pendingErr = s.next()
	s.pending = true
	if s.pendingErr != nil && !errors.Is(s.pendingErr, io.EOF) {
		if me, ok := model.AsError(s.pendingErr); ok && !me.Streamed {
			return s.pendingErr // nothing arrived: a failure to open
		}
	}
	return nil
}

// Next returns the next event's type and data, valid until the next call.
// At the end of the stream it returns io.EOF. A watchdog that fired, a cut
// connection or a line too long is a *model.Error; the caller's
// cancellation is ctx's error.
func (s *Stream) Next() (event, data []byte, err error) {
	if s.pending {
		s.pending = false
		return s.pendingEv, s.pendD, s.pendingErr
	}
	return s.next()
}

func (s *Stream) next() (event, data []byte, err error) {
	s.waitStart.Store(int64(time.Since(s.start)))
	s.waiting.Store(true)
	event, data, err = s.rd.Next()
	s.waiting.Store(false)
	if err != nil {
		if errors.Is(err, io.EOF) {
			if cause := context.Cause(s.ctx); cause != nil {
				return nil, nil, s.c.TransportError(s.ctx, cause, s.first.Load())
			}
			return nil, nil, io.EOF
		}
		if errors.Is(err, sse.ErrLineTooLong) {
			return nil, nil, s.c.Malformed("event stream", err, s.first.Load())
		}
		return nil, nil, s.c.TransportError(s.ctx, err, s.first.Load())
	}
	if !s.first.Load() {
		el := time.Since(s.start)
		s.first.Store(true)
		// The timer was set for the first-chunk bound; the idle bound
		// may come sooner.
		if t := s.c.Timeouts; t.Idle < t.FirstChunk-el {
			s.timer.Reset(min(t.Idle, t.Hard-el))
		}
	}
	return event, data, nil
}

// check runs when a watchdog's time may have come: it cancels the call
// with the bound that was passed, or sets the timer for the next one.
func (s *Stream) check() {
	if s.closing.Load() {
		s.cancel(context.Canceled)
		return
	}
	t := s.c.Timeouts
	el := time.Since(s.start)
	if el >= t.Hard {
		s.cancel(s.timeout(fmt.Sprintf("the call ran past its hard limit of %s", t.Hard)))
		return
	}
	next := t.Hard - el
	if !s.first.Load() {
		if el >= t.FirstChunk {
			s.cancel(s.timeout(fmt.Sprintf("no reply within %s (first-chunk timeout)", t.FirstChunk)))
			return
		}
		next = min(next, t.FirstChunk-el)
	} else if s.waiting.Load() {
		idle := el - time.Duration(s.waitStart.Load())
		if idle >= t.Idle {
			s.cancel(s.timeout(fmt.Sprintf("the stream stalled: nothing for %s (idle timeout)", t.Idle)))
			return
		}
		next = min(next, t.Idle-idle)
	} else {
		next = min(next, t.Idle) // the consumer is busy; look again later
	}
	s.timer.Reset(next)
}

func (s *Stream) timeout(msg string) *model.Error {
	return &model.Error{Code: model.CodeTimeout, Provider: s.c.Provider, Model: s.c.Model, Message: msg, Streamed: s.first.Load()}
}

// Complete tells s that its terminator ([DONE], message_stop) arrived:
// Close then reads what little may follow (the end of the chunked body),
// for a second at most, so that the connection can be reused.
func (s *Stream) Complete() { s.complete = true }

// Close ends the stream: it stops the watchdogs and releases the
// connection. Close is idempotent.
func (s *Stream) Close() {
	s.done.Do(func() {
		if s.resp != nil {
			if s.complete {
				s.closing.Store(true)
				s.timer.Reset(time.Second) // check cancels the drain then
				_, _ = io.CopyN(io.Discard, s.resp.Body, 4<<10)
			} else {
				s.cancel(context.Canceled)
			}
			s.resp.Body.Close()
		}
		s.timer.Stop()
		s.cancel(context.Canceled)
		if s.rd != nil {
			s.rd.Reset(nil)
			readers.Put(s.rd)
			s.rd = nil
		}
	})
}

// Do sends a request that does not stream and returns the body of its
// successful response. The wait is bounded by the first-chunk and hard
// timeouts; failures are as for Open.
func (c *Call) Do(ctx context.Context, newReq func(context.Context) (*http.Request, error)) ([]byte, error) {
	t := c.Timeouts
	limit := min(t.FirstChunk, t.Hard)
	ctx, cancel := context.WithTimeoutCause(ctx, limit, &model.Error{Code: model.CodeTimeout, Provider: c.Provider, Model: c.Model,
		Message: fmt.Sprintf("no reply within %s", limit)})
	defer cancel()
	req, err := newReq(ctx)
	if err != nil {
		return nil, err
	}
	resp, err := c.Client.Do(req)
	if err != nil {
		return nil, c.TransportError(ctx, err, false)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, c.StatusError(resp)
	}
	defer resp.Body.Close()
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt != "" && mt != "application/json" && !strings.HasSuffix(mt, "+json") {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
		e := c.BodyError(http.StatusOK, resp.Header, body)
		if !bytes.Contains(body, []byte(`"error"`)) {
			no := false
			e.Code, e.Retryable = model.CodeServer, &no
			e.Message = fmt.Sprintf("expected JSON, got %q (is the base URL right?): %s", resp.Header.Get("Content-Type"), e.Message)
		}
		return nil, e
	}
	maxBody := c.MaxBody
	if maxBody <= 0 {
		maxBody = 32 << 20
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxBody+1))
	if err != nil {
		return nil, c.TransportError(ctx, err, false)
	}
	if int64(len(body)) > maxBody {
		return nil, c.Malformed("response", fmt.Errorf("the body is larger than %d bytes", maxBody), false)
	}
	return body, nil
}

// StreamChunks sends the streamed request newReq builds and yields, in
// order, a pulse chunk every Timeouts.FirstFeedback until the first event,
// then what decode makes of each event; an empty chunk is not yielded.
// decode reports the stream's terminator with done; a stream that ends
// before it fails with Incomplete(terminator). The first error (of the
// call, of decode) is yielded last. It is the loop of every provider's
// Stream.
func (c *Call) StreamChunks(ctx context.Context, newReq func(context.Context) (*http.Request, error), terminator string,
	decode func(event, data []byte) (chunk model.Chunk, done bool, err error), yield func(model.Chunk, error) bool) {
	stopped := false
	s, err := c.Open(ctx, newReq, func() bool {
		if !yield(model.Chunk{Pulse: true}, nil) {
			stopped = true
			return false
		}
		return true
	})
	if err != nil {
		if !stopped {
			yield(model.Chunk{}, err)
		}
		return
	}
	defer s.Close()
	for {
		ev, data, err := s.Next()
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = c.Incomplete(terminator)
			}
			yield(model.Chunk{}, err)
			return
		}
		ch, done, err := decode(ev, data)
		if err != nil {
			yield(model.Chunk{}, err)
			return
		}
		if done {
			s.Complete()
		}
		empty := ch.Text == "" && len(ch.ToolCalls) == 0 && ch.Usage == nil && ch.FinishReason == ""
		if !empty && !yield(ch, nil) {
			return
		}
		if done {
			return
		}
	}
}
