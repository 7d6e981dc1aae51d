package openai_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/model/openai"
)

// The watchdog tests run in a synctest bubble: time is fake, and a call
// that waits a minute takes none. The server is a RoundTripper whose
// response body is an io.Pipe written by a goroutine of the bubble.

var testTimeouts = model.Timeouts{
	FirstFeedback: 1 * time.Second,
	FirstChunk:    5 * time.Second,
	Idle:          3 * time.Second,
	Hard:          20 * time.Second,
}

// pipeServer answers a streamed request with a 200 event stream that
// write writes, and a request that does not stream with write's bytes
// as a JSON body; write runs on its own goroutine.
type pipeServer struct {
	write  func(w *io.PipeWriter) error
	closed atomic.Bool   // the client closed the body
	done   chan struct{} // write returned
	err    error         // what write returned, once done is closed
}

func newPipeServer(write func(w *io.PipeWriter) error) *pipeServer {
	return &pipeServer{write: write, done: make(chan struct{})}
}

func (p *pipeServer) RoundTrip(req *http.Request) (*http.Response, error) {
	pr, pw := io.Pipe()
	// A real transport fails the body's reads once the request's
	// context is done.
	go func() {
		<-req.Context().Done()
		pr.CloseWithError(req.Context().Err())
	}()
	go func() {
		defer close(p.done)
		p.err = p.write(pw)
	}()
	ct := "application/json"
	if strings.Contains(req.Header.Get("Accept"), "event-stream") {
		ct = "text/event-stream"
	}
	return &http.Response{
		StatusCode: http.StatusOK,
		Header:     http.Header{"Content-Type": {ct}},
		Body:       &trackedBody{pr, &p.closed},
		Request:    req,
	}, nil
}

type trackedBody struct {
	*io.PipeReader
	closed *atomic.Bool
}

func (b *trackedBody) Close() error {
	b.closed.Store(true)
	return b.PipeReader.Close()
}

func pipeModel(t *testing.T, rt http.RoundTripper, to model.Timeouts) *openai.Model {
	t.Helper()
	m, err := openai.New(openai.Config{Model: "gpt-test", BaseURL: "http://llm.test/v1",
		HTTPClient: &http.Client{Transport: rt}, Timeouts: to})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func textEvent(s string) string {
	return `data: {"choices":[{"index":0,"delta":{"content":"` + s + `"},"finish_reason":null}]}` + "\n\n"
}

const endEvents = `data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}` + "\n\ndata: [DONE]\n\n"

// event is a value a stream yielded, and when.
type event struct {
	at  time.Duration
	c   model.Chunk
	err error
}

// drain ranges over a stream, noting when each value came.
func drain(m *openai.Model) []event {
	start := time.Now()
	var evs []event
	for c, err := range m.Stream(context.Background(), user("hi")) {
		evs = append(evs, event{time.Since(start), c, err})
	}
	return evs
}

// wantTimeout checks that evs ends with a timeout at the given time.
func wantTimeout(t *testing.T, evs []event, at time.Duration, streamed bool, says string) {
	t.Helper()
	if len(evs) == 0 {
		t.Fatal("the stream yielded nothing")
	}
	last := evs[len(evs)-1]
	me, ok := model.AsError(last.err)
	if !ok {
		t.Fatalf("the stream ended with %v, want a *model.Error", last.err)
	}
	if me.Code != model.CodeTimeout || me.Streamed != streamed || !me.Recoverable() || me.Status != 0 {
		t.Errorf("error %q: code %s, streamed %v, recoverable %v, status %d; want timeout, streamed %v, recoverable, no status",
			me, me.Code, me.Streamed, me.Recoverable(), me.Status, streamed)
	}
	if !strings.Contains(me.Error(), says) {
		t.Errorf("error %q does not say %q", me, says)
	}
	if last.at != at {
		t.Errorf("the error came after %v, want %v", last.at, at)
	}
}

func TestWatchdogPulsesBeforeFirstChunk(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		srv := newPipeServer(func(w *io.PipeWriter) error {
			time.Sleep(2500 * time.Millisecond)
			if _, err := io.WriteString(w, textEvent("hi")+endEvents); err != nil {
				return err
			}
			return w.Close()
		})
		evs := drain(pipeModel(t, srv, testTimeouts))
		<-srv.done
		want := []event{
			{at: 1 * time.Second, c: model.Chunk{Pulse: true}},
			{at: 2 * time.Second, c: model.Chunk{Pulse: true}},
			{at: 2500 * time.Millisecond, c: model.Chunk{Text: "hi"}},
			{at: 2500 * time.Millisecond, c: model.Chunk{FinishReason: model.FinishStop}},
		}
		if diff := cmp.Diff(want, evs, cmp.AllowUnexported(event{}), cmp.Comparer(sameError)); diff != "" {
			t.Errorf("stream (-want +got):\n%s", diff)
		}
		if srv.err != nil {
			t.Errorf("server: %v", srv.err)
		}
		if !srv.closed.Load() {
			t.Error("the body was not closed")
		}
	})
}

func sameError(a, b error) bool {
	return errors.Is(a, b) || (a != nil && b != nil && a.Error() == b.Error())
}

func TestWatchdogNoChunk(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		srv := newPipeServer(func(w *io.PipeWriter) error { return nil }) // headers, then nothing
		evs := drain(pipeModel(t, srv, testTimeouts))
		<-srv.done
		wantTimeout(t, evs, testTimeouts.FirstChunk, false, "first-chunk timeout")
		// Pulses at 1, 2, 3 and 4 s; the one due at 5 s races the
		// watchdog (both fire at the same instant) and may come or not.
		pulses := 0
		for _, e := range evs[:len(evs)-1] {
			if !cmp.Equal(e.c, model.Chunk{Pulse: true}) || e.err != nil {
				t.Errorf("at %v: %+v, %v; want a pulse", e.at, e.c, e.err)
			}
			pulses++
		}
		if pulses != 4 && pulses != 5 {
			t.Errorf("%d pulses in 5 s, want 4 or 5", pulses)
		}
		if !srv.closed.Load() {
			t.Error("the body was not closed")
		}
	})
}

func TestWatchdogIdle(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		times []time.Duration // when chunks are sent, from the start
		want  time.Duration   // when the idle watchdog fires
	}{
		{"first chunk at once", []time.Duration{0}, 3 * time.Second},
		{"first chunk after 1 s", []time.Duration{1 * time.Second}, 4 * time.Second},
		// The first-chunk timer (5 s) is still set when the first chunk
		// comes at 4 s; it must re-arm for idle at 7 s.
		{"first chunk late", []time.Duration{4 * time.Second}, 7 * time.Second},
		{"a few chunks", []time.Duration{0, 2 * time.Second, 4500 * time.Millisecond}, 7500 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				srv := newPipeServer(func(w *io.PipeWriter) error {
					start := time.Now()
					for _, at := range tt.times {
						time.Sleep(at - time.Since(start))
						if _, err := io.WriteString(w, textEvent("x")); err != nil {
							return err
						}
					}
					return nil // and then silence
				})
				evs := drain(pipeModel(t, srv, testTimeouts))
				<-srv.done
				wantTimeout(t, evs, tt.want, true, "idle timeout")
				texts := 0
				for _, e := range evs {
					if e.c.Text != "" {
						texts++
					}
				}
				if texts != len(tt.times) {
					t.Errorf("%d text chunks before the timeout, want %d", texts, len(tt.times))
				}
			})
		})
	}
}

func TestWatchdogHard(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		srv := newPipeServer(func(w *io.PipeWriter) error {
			for {
				time.Sleep(2 * time.Second) // within Idle, forever
				if _, err := io.WriteString(w, textEvent("x")); err != nil {
					return err
				}
			}
		})
		evs := drain(pipeModel(t, srv, testTimeouts))
		<-srv.done
		wantTimeout(t, evs, testTimeouts.Hard, true, "hard limit")
		if srv.err == nil {
			t.Error("the server's writes never failed: the body was not closed")
		}
	})
}

func TestWatchdogHardBeforeFirstChunk(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		srv := newPipeServer(func(w *io.PipeWriter) error { return nil })
		to := testTimeouts
		to.Hard = 2 * time.Second // shorter than FirstChunk
		evs := drain(pipeModel(t, srv, to))
		<-srv.done
		wantTimeout(t, evs, to.Hard, false, "hard limit")
	})
}

func TestWatchdogConsumerStopsDuringPulses(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		srv := newPipeServer(func(w *io.PipeWriter) error {
			time.Sleep(10 * time.Second) // long after the consumer left
			_, err := io.WriteString(w, textEvent("late"))
			return err
		})
		m := pipeModel(t, srv, testTimeouts)
		start := time.Now()
		n := 0
		for c, err := range m.Stream(context.Background(), user("hi")) {
			n++
			if err != nil || !c.Pulse {
				t.Fatalf("got %+v, %v; want a pulse", c, err)
			}
			break
		}
		if n != 1 || time.Since(start) != testTimeouts.FirstFeedback {
			t.Errorf("%d values, stopped after %v; want one pulse after %v", n, time.Since(start), testTimeouts.FirstFeedback)
		}
		if !srv.closed.Load() {
			t.Error("the body is still open after the loop ended")
		}
		<-srv.done
		if srv.err == nil {
			t.Error("the server wrote after the consumer left, and nobody noticed")
		}
	})
}

func TestWatchdogSlowConsumer(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		// The server has the second chunk ready after 1 s; the consumer
		// takes 4 s (more than Idle) over the first. The server never
		// stalled, so no idle timeout is due.
		srv := newPipeServer(func(w *io.PipeWriter) error {
			if _, err := io.WriteString(w, textEvent("a")); err != nil {
				return err
			}
			time.Sleep(time.Second)
			if _, err := io.WriteString(w, textEvent("b")+endEvents); err != nil {
				return err
			}
			return w.Close()
		})
		var text string
		for c, err := range pipeModel(t, srv, testTimeouts).Stream(context.Background(), user("hi")) {
			if err != nil {
				t.Fatalf("after %q: %v", text, err)
			}
			text += c.Text
			if c.Text == "a" {
				time.Sleep(4 * time.Second)
			}
		}
		<-srv.done
		if text != "ab" {
			t.Errorf("text %q, want ab", text)
		}
	})
}

func TestWatchdogGenerate(t *testing.T) {
	t.Parallel()
	check := func(t *testing.T, rt http.RoundTripper) {
		t.Helper()
		start := time.Now()
		resp, err := pipeModel(t, rt, testTimeouts).Generate(context.Background(), user("hi"))
		me, ok := model.AsError(err)
		if !ok {
			t.Fatalf("Generate = %+v, %v; want a *model.Error", resp, err)
		}
		if me.Code != model.CodeTimeout || me.Streamed || !me.Recoverable() {
			t.Errorf("error %q: code %s, streamed %v, recoverable %v; want timeout, not streamed, recoverable", me, me.Code, me.Streamed, me.Recoverable())
		}
		if el := time.Since(start); el != testTimeouts.FirstChunk {
			t.Errorf("Generate gave up after %v, want %v", el, testTimeouts.FirstChunk)
		}
	}
	t.Run("no response", func(t *testing.T) {
		t.Parallel()
		synctest.Test(t, func(t *testing.T) {
			check(t, roundTripFunc(func(req *http.Request) (*http.Response, error) {
				<-req.Context().Done()
				return nil, req.Context().Err()
			}))
		})
	})
	t.Run("body never ends", func(t *testing.T) {
		t.Parallel()
		synctest.Test(t, func(t *testing.T) {
			srv := newPipeServer(func(w *io.PipeWriter) error {
				_, err := io.WriteString(w, `{"choices":[{"index":0,"message":{"content":"hal`)
				return err
			})
			check(t, srv)
			<-srv.done
			if !srv.closed.Load() {
				t.Error("the body was not closed")
			}
		})
	})
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
