package server

import (
	"context"
	"iter"
	"strconv"
	"sync"
	"time"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/gateway"
	"github.com/agentrt/agentrt/session"
)

// Turn is an input submitted through the gateway and the turn that
// answers it, followed as it runs: what POST /v1/sessions/{id}/messages
// streams, and what the protocol adapters mounted on the server stream
// in their own shapes. Which events are the turn's, when it ends and
// what it came to are the gateway's (gateway.Following); the server
// buffers them for a client that reads slower than they come.
type Turn struct {
	// Submitted is the stored input (Duplicate when its idempotency key
	// named an input stored before).
	Submitted *gateway.Submitted
	// After is the seq the turn's events come after.
	After int64

	s      *Server
	ctx    context.Context
	fl     *gateway.Following
	f      *feed
	closed sync.Once
}

// SubmitTurn stores in through the gateway (coalescing, debounce and the
// source's busy policy apply) and returns the turn that answers it. The
// session must exist (agentrt.Runner.CreateSession). The session is
// watched from before the input is stored, so that Events misses none of
// the turn's tokens. ctx bounds the following, not the turn: a turn goes
// on when its follower goes away. Close the Turn when done with it.
func (s *Server) SubmitTurn(ctx context.Context, in gateway.Input) (*Turn, error) {
	ss, err := s.getSessionRow(ctx, in.Session)
	if err != nil {
		return nil, err
	}
	return s.submitTurn(ctx, in, ss.LastSeq)
}

// submitTurn is SubmitTurn of a session whose last seq is after.
func (s *Server) submitTurn(ctx context.Context, in gateway.Input, after int64) (*Turn, error) {
	// A turn's follower is a stream Shutdown waits for.
	if !s.openStream() {
		return nil, &agentrt.Error{Kind: agentrt.FailState, Code: agentrt.CodeShuttingDown, Msg: "the server is shutting down: send the input to another replica"}
	}
	fl := s.gw.Open(in, after)
	t := &Turn{s: s, ctx: ctx, After: after, fl: fl}
	t.f = s.startFeed(ctx, fl.Events)
	sub, err := fl.Stored(ctx)
	if err != nil {
		t.f.stop()
		s.streams.Done()
		return nil, err
	}
	t.Submitted = sub
	if sub.Duplicate {
		t.After = 0 // its turn may be anywhere in the log
	}
	return t, nil
}

// FollowInput returns the turn that answers sub, an input stored before
// (by any replica), followed as SubmitTurn follows an input's from seq
// after. Close the Turn when done with it.
func (s *Server) FollowInput(ctx context.Context, sub *gateway.Submitted, after int64) (*Turn, error) {
	return s.follow(ctx, s.gw.Follow(sub, after), sub, after)
}

// FollowSession returns the turn of session id that goes on after seq
// after — the run a person's answer resumes, say — followed as SubmitTurn
// follows an input's: the session is watched when FollowSession
// returns, so that a run that starts after it is followed from its first
// token. Close the Turn when done with it.
func (s *Server) FollowSession(ctx context.Context, id string, after int64) (*Turn, error) {
	return s.follow(ctx, s.gw.FollowSession(id, after), &gateway.Submitted{Session: id}, after)
}

// follow starts following fl, and returns once the session is watched.
func (s *Server) follow(ctx context.Context, fl *gateway.Following, sub *gateway.Submitted, after int64) (*Turn, error) {
	if !s.openStream() {
		return nil, &agentrt.Error{Kind: agentrt.FailState, Code: agentrt.CodeShuttingDown, Msg: "the server is shutting down"}
	}
	t := &Turn{s: s, ctx: ctx, After: after, fl: fl, Submitted: sub}
	t.f = s.startFeed(ctx, fl.Events)
	if err := watching(fl, t.f); err != nil {
		t.Close()
		return nil, err
	}
	return t, nil
}

// watching waits until fl watches its session, and returns nil, or until
// f, the feed of its events, ends first, and returns why. A feed that
// ended after its watch began (a turn that ended at once) holds the
// turn's events: that is not a failure.
func watching(fl *gateway.Following, f *feed) error {
	select {
	case <-fl.Watching():
		return nil
	case <-f.ended:
		select {
		case <-fl.Watching():
			return nil
		default:
			return f.failure()
		}
	}
}

// Close stops following the turn (the turn goes on), once everything
// the following started has ended.
func (t *Turn) Close() {
	t.closed.Do(func() {
		t.f.stop()
		t.s.streams.Done()
	})
}

// Outcome is what the turn came to, once its events have ended at the
// turn's end (false when they ended otherwise).
func (t *Turn) Outcome() (gateway.Outcome, bool) { return t.fl.Outcome() }

// Events yields the turn's events: the run that answers the input, from
// its run_started, through the runs that restart it after newer input,
// to the end of the run that ends the turn (yielded, then the sequence
// ends; Outcome says what the turn came to), with the live tokens (seq
// 0) of each. It ends with an error when the gateway refuses the input
// (its code says why), when the consumer leaves committed events untaken
// for the server's write timeout (watch_behind: read the rest from the
// log, after the last seq it had), or when the server shuts down past
// its grace (shutting_down); it ends without one when ctx ends. Call it
// once (or EventBatches).
func (t *Turn) Events() iter.Seq2[*session.Event, error] {
	return func(yield func(*session.Event, error) bool) {
		for evs, err := range t.EventBatches() {
			if err != nil {
				yield(nil, err)
				return
			}
			for _, ev := range evs {
				if !yield(ev, nil) {
					return
				}
			}
		}
	}
}

// EventBatches yields the events of Events, in the same order and with
// the same end, grouped as they were ready together: a batch holds what
// arrived while the consumer was busy with the one before, so that a
// consumer for which an event costs more than its size (one protocol
// message a token) can merge what is already queued. A batch is never
// empty, and is valid only until the next one is asked for. Call it once
// (or Events).
func (t *Turn) EventBatches() iter.Seq2[[]*session.Event, error] {
	return func(yield func([]*session.Event, error) bool) {
		// The adapters' streams go on through Shutdown's grace (their
		// clients may have no way to resume), and end past it.
		last, end, err := t.s.pumpEvents(t.ctx, t.f, t.After, pumpOpts{
			batch: func(evs []*session.Event) bool { return yield(evs, nil) },
			stop:  t.s.abandon,
		})
		switch end {
		case endFailed:
			yield(nil, err)
		case endBehind:
			yield(nil, &agentrt.Error{Kind: agentrt.FailState, Code: agentrt.CodeWatchBehind,
				Msg: "the turn's follower fell behind; read the session's events after seq " + strconv.FormatInt(last, 10)})
		case endStopped:
			yield(nil, &agentrt.Error{Kind: agentrt.FailState, Code: agentrt.CodeShuttingDown,
				Msg: "the server shut down while following the turn, which goes on in another process: read session " +
					t.Submitted.Session + "'s events after seq " + strconv.FormatInt(last, 10)})
		}
	}
}

// Runner is the server's runner: what the adapters run, resolve and
// control sessions with.
func (s *Server) Runner() *agentrt.Runner { return s.r }

// Gateway is the server's gateway: every input goes through it.
func (s *Server) Gateway() *gateway.Gateway { return s.gw }

// Heartbeat is how often an idle stream of the server gets a comment
// (Config.Heartbeat): what an adapter's own streams send keep-alives at.
func (s *Server) Heartbeat() time.Duration { return s.cfg.Heartbeat }
