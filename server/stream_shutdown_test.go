package server

import (
	"bufio"
	"context"
	"fmt"
	"iter"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/gateway"
	"github.com/agentrt/agentrt/model/demo"
	"github.com/agentrt/agentrt/session"
	"github.com/agentrt/agentrt/session/memstore"
)

func newStreamServer(t *testing.T) *Server {
	t.Helper()
	a, err := agentrt.NewAgent("assistant").Model(demo.New()).Build()
	if err != nil {
		t.Fatal(err)
	}
	r, err := agentrt.NewRunner(agentrt.Config{Store: memstore.New(), Agents: []*agentrt.Agent{a}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close(context.Background()) })
	gw, err := gateway.New(gateway.Config{Runner: r})
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(Config{Runner: r, Gateway: gw})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// Shutdown ends the streams that are open, each with a reconnect event
// naming the last id it sent, and returns once they have closed. (Under
// -race this also checks that a stream's start is ordered before
// Shutdown's wait for it.)
func TestShutdownEndsOpenStreams(t *testing.T) {
	t.Parallel()
	s := newStreamServer(t)
	hs := httptest.NewServer(s.Handler())
	defer hs.Close()
	if _, err := s.r.CreateSession(t.Context(), "", "s1", nil); err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequestWithContext(t.Context(), "GET", hs.URL+"/v1/sessions/s1/events", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "text/event-stream")
	resp, err := hs.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	if !sc.Scan() || sc.Text() != "retry: 1000" {
		t.Fatalf("the stream begins %q, want its retry line", sc.Text())
	}
	if err := s.Shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
	var rest []string
	for sc.Scan() {
		if l := sc.Text(); l != "" {
			rest = append(rest, l)
		}
	}
	want := []string{"event: reconnect", `data: {"last_event_id":0,"reason":"reconnect from last_event_id"}`}
	if strings.Join(rest, "\n") != strings.Join(want, "\n") {
		t.Errorf("after Shutdown the stream says %q, want %q", rest, want)
	}
	if n := s.Clients(); n != 0 {
		t.Errorf("%d streams open after Shutdown", n)
	}
}

// recordingSink keeps what a stream wrote.
type recordingSink struct{ got []string }

func (r *recordingSink) event(ev *session.Event) error { r.got = append(r.got, "event"); return nil }
func (r *recordingSink) heartbeat() error              { r.got = append(r.got, "heartbeat"); return nil }
func (r *recordingSink) fail(err error) error          { r.got = append(r.got, "fail"); return nil }
func (r *recordingSink) kind() string                  { return "test" }
func (r *recordingSink) flush() error                  { return nil }
func (r *recordingSink) behind(last int64) error {
	r.got = append(r.got, fmt.Sprint("behind ", last))
	return nil
}

// A stream that opens once Shutdown has begun (its request got past the
// check before the server began to drain) is told at once to reconnect
// from where it asked to start, and reads nothing.
func TestStreamOpenedAfterShutdown(t *testing.T) {
	t.Parallel()
	s := newStreamServer(t)
	if err := s.Shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
	opened := false
	sink := &recordingSink{}
	last := s.pump(t.Context(), func(context.Context) iter.Seq2[*session.Event, error] {
		opened = true
		return func(func(*session.Event, error) bool) {}
	}, 3, sink)
	if last != 3 || opened || strings.Join(sink.got, ",") != "behind 3" {
		t.Errorf("pump after Shutdown: returned %d, opened %v, wrote %q; want 3, false, behind 3", last, opened, sink.got)
	}
}

// Shutdown returns only once every stream's reader has stopped reading
// the store: a reader still in a store read when its stream ends is
// waited for (it returned while readers went on, on b63961d).
func TestShutdownWaitsForStreamReaders(t *testing.T) {
	t.Parallel()
	s := newStreamServer(t)
	inRead := make(chan struct{})
	release := make(chan struct{})
	var reading atomic.Bool
	open := func(ctx context.Context) iter.Seq2[*session.Event, error] {
		return func(func(*session.Event, error) bool) {
			reading.Store(true)
			defer reading.Store(false)
			<-ctx.Done()
			close(inRead) // a store read that has not returned yet
			<-release
		}
	}
	pumped := make(chan struct{})
	go func() {
		defer close(pumped)
		s.pump(context.Background(), open, 0, &recordingSink{})
	}()
	for !reading.Load() {
		runtime.Gosched()
	}
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	err := s.Shutdown(ctx)
	<-inRead
	if err == nil || reading.Load() == false {
		t.Fatalf("Shutdown returned %v while a stream's reader was still reading (%v); want it to wait for the reader (its context's error)", err, reading.Load())
	}
	close(release)
	<-pumped
	if err := s.Shutdown(t.Context()); err != nil || reading.Load() {
		t.Fatalf("Shutdown once the reader stopped: %v, reading %v", err, reading.Load())
	}
}
