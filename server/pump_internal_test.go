package server

import (
	"context"
	"errors"
	"io"
	"iter"
	"log/slog"
	"testing"
	"time"

	"github.com/agentrt/agentrt/session"
)

// blockingSink takes events only when told to, like a client that stops
// reading.
type blockingSink struct {
	wrote        []int64
	tokens       int
	next         chan struct{} // one value: one more write
	behindAt     int64
	behindCalled bool
	failed       error
	beats        int
}

func (s *blockingSink) event(ev *session.Event) error {
	<-s.next
	if ev.Seq == 0 {
		s.tokens++
	} else {
		s.wrote = append(s.wrote, ev.Seq)
	}
	return nil
}
func (s *blockingSink) kind() string     { return "test" }
func (s *blockingSink) flush() error     { return nil }
func (s *blockingSink) heartbeat() error { s.beats++; return nil }
func (s *blockingSink) behind(last int64) error {
	s.behindCalled, s.behindAt = true, last
	return nil
}
func (s *blockingSink) fail(err error) error { s.failed = err; return nil }

func testServer(buf int, writeTimeout time.Duration) *Server {
	return &Server{cfg: Config{ClientBuffer: buf, Heartbeat: time.Hour, WriteTimeout: writeTimeout}, stop: make(chan struct{}), log: slog.New(slog.NewTextHandler(io.Discard, nil))}
}

// events yields n committed events (seq from+1 …), with a token after
// each, and reports how far it got when it stops.
func events(from, n int64, reached *int64, stopped chan<- struct{}) func(context.Context) iter.Seq2[*session.Event, error] {
	return func(ctx context.Context) iter.Seq2[*session.Event, error] {
		return func(yield func(*session.Event, error) bool) {
			defer close(stopped)
			for i := from + 1; i <= from+n; i++ {
				*reached = i
				if !yield(&session.Event{Seq: i, Type: session.TypeRoundStarted}, nil) {
					return
				}
				if !yield(&session.Event{Type: session.TypeToken, Data: &session.Token{Text: "t"}}, nil) {
					return
				}
			}
			<-ctx.Done()
		}
	}
}

// A client that stops reading holds at most its buffer: the reader stops
// once the buffer is full of committed events (tokens are dropped, not
// queued) and the client has not taken any for WriteTimeout, and when
// the client reads again it gets what was buffered
// and is told to reconnect from the last id it got — nothing is lost,
// as the rest is in the store.
func TestSlowClientToldToReconnect(t *testing.T) {
	s := testServer(4, time.Nanosecond)
	sink := &blockingSink{next: make(chan struct{}, 1000)}
	var reached int64
	stopped := make(chan struct{})
	done := make(chan int64)
	go func() { done <- s.pump(context.Background(), events(10, 1000, &reached, stopped), 10, sink) }()
	<-stopped // the reader gave up: the client is behind
	if reached > 10+4+2 {
		t.Fatalf("the reader read up to seq %d for a client that took nothing: want about a buffer (4) ahead", reached)
	}
	for range 100 {
		sink.next <- struct{}{}
	}
	last := <-done
	if !sink.behindCalled || sink.behindAt != last || last != sink.wrote[len(sink.wrote)-1] {
		t.Fatalf("behind %v at %d, last %d, wrote %v", sink.behindCalled, sink.behindAt, last, sink.wrote)
	}
	for i, seq := range sink.wrote {
		if seq != int64(11+i) {
			t.Fatalf("wrote %v: want 11, 12, … with no gap", sink.wrote)
		}
	}
}

// A client that keeps up gets every committed event, however many come
// at once (a replay from the store) and however small its buffer.
func TestPumpKeepsUp(t *testing.T) {
	s := testServer(4, time.Hour)
	sink := &blockingSink{next: make(chan struct{}, 1<<20)}
	for range 1 << 20 {
		sink.next <- struct{}{}
	}
	var reached int64
	stopped := make(chan struct{})
	// The events end after seq 50: the stream with them.
	upTo50 := func(ctx context.Context) iter.Seq2[*session.Event, error] {
		return func(yield func(*session.Event, error) bool) {
			for ev, err := range events(0, 50, &reached, stopped)(ctx) {
				if !yield(ev, err) || ev.Seq == 50 {
					return
				}
			}
		}
	}
	last := s.pump(context.Background(), upTo50, 0, sink)
	if last != 50 || len(sink.wrote) != 50 || sink.behindCalled {
		t.Fatalf("last %d, wrote %d, behind %v", last, len(sink.wrote), sink.behindCalled)
	}
}

// Events the watcher yields twice (a replay overlapping what was sent)
// go out once; an error ends the stream with an error event.
func TestPumpNoDuplicateAndFail(t *testing.T) {
	s := testServer(16, time.Hour)
	sink := &blockingSink{next: make(chan struct{}, 100)}
	for range 100 {
		sink.next <- struct{}{}
	}
	boom := errors.New("boom")
	open := func(context.Context) iter.Seq2[*session.Event, error] {
		return func(yield func(*session.Event, error) bool) {
			for _, seq := range []int64{1, 2, 2, 1, 3} {
				if !yield(&session.Event{Seq: seq}, nil) {
					return
				}
			}
			yield(nil, boom)
		}
	}
	s.pump(context.Background(), open, 0, sink)
	if len(sink.wrote) != 3 || sink.failed != boom {
		t.Fatalf("wrote %v, failed %v", sink.wrote, sink.failed)
	}
}
