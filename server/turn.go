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
// in their own shapes.
type Turn struct {
	// Submitted is the stored input (Duplicate when its idempotency key
	// named an input stored before).
	Submitted *gateway.Submitted
	// After is the seq the turn's events come after.
	After int64

	s   *Server
	ctx context.Context
	f   *feed
	// refused is closed when this process's gateway sets the input
	// aside; unwatch stops watching for it.
	refused <-chan struct{}
	unwatch func()
	closed  sync.Once
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
	t := &Turn{s: s, ctx: ctx, After: after, unwatch: func() {}}
	var err error
	if t.f, err = s.subscribe(ctx, in.Session, t.After); err != nil {
		s.streams.Done()
		return nil, err
	}
	sub, err := s.gw.Submit(ctx, in)
	if err != nil {
		t.f.stop()
		s.streams.Done()
		return nil, err
	}
	t.Submitted = sub
	t.refused, t.unwatch = s.gw.Refused(sub.ID)
	if sub.Duplicate {
		// Its run may be anywhere in the log: watch it from the start.
		t.f.stop()
		t.After = 0
		if t.f, err = s.subscribe(ctx, in.Session, 0); err != nil {
			t.unwatch()
			s.streams.Done()
			return nil, err
		}
	}
	return t, nil
}

// Close stops following the turn (the turn goes on).
func (t *Turn) Close() {
	t.closed.Do(func() {
		t.f.stop()
		t.unwatch()
		t.s.streams.Done()
	})
}

// following is how a stream follows the turn: its events, to the end
// of its last run, and the input's refusal.
func (t *Turn) following() following {
	fw := &inputFollower{inputID: t.Submitted.ID}
	sub := t.Submitted
	return following{keep: fw.keep, done: fw.done, check: func() error { return t.s.refused(t.ctx, sub) }, refused: t.refused}
}

// Events yields the turn's events: the run that answers the input, from
// its run_started, through the runs that restart it after an
// interruption, to the turn's last run_finished (yielded, then the
// sequence ends), with the live tokens (seq 0) of each. It ends with an
// error when the gateway refuses the input (input_rejected), or when the
// consumer leaves committed events untaken for the server's write
// timeout (watch_behind: read the rest from the log, after the last seq
// it had); it ends without one when ctx ends. Call it once (or
// EventBatches).
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
		fl := t.following()
		last := t.After
		hb := time.NewTicker(t.s.cfg.Heartbeat)
		defer hb.Stop()
		var spare []item
		var batch []*session.Event
		for {
			select {
			case <-t.f.ready:
				q, over, behind := t.f.take(spare)
				batch = batch[:0]
				done := false
				for _, it := range q {
					if it.err != nil {
						if len(batch) == 0 || yield(batch, nil) {
							yield(nil, it.err)
						}
						return
					}
					ev := it.ev
					if !fl.keep(ev) || ev.Seq != 0 && ev.Seq <= last {
						continue
					}
					batch = append(batch, ev)
					if ev.Seq != 0 {
						last = ev.Seq
					}
					if fl.done(ev) {
						done = true
						break
					}
				}
				if len(batch) > 0 && !yield(batch, nil) || done {
					return
				}
				clear(q)
				spare = q
				t.f.wrote()
				if over {
					if behind {
						yield(nil, &agentrt.Error{Kind: agentrt.FailState, Code: agentrt.CodeWatchBehind,
							Msg: "the turn's follower fell behind; read the session's events after seq " + strconv.FormatInt(last, 10)})
					}
					return
				}
			case <-fl.refused:
				// Set aside by this process: say why at once. (Refused
				// elsewhere, the heartbeat's look at the inbox finds it.)
				fl.refused = nil
				if err := fl.check(); err != nil {
					yield(nil, err)
					return
				}
			case <-hb.C:
				if err := fl.check(); err != nil {
					yield(nil, err)
					return
				}
			case <-t.s.abandon:
				yield(nil, &agentrt.Error{Kind: agentrt.FailState, Code: agentrt.CodeShuttingDown,
					Msg: "the server shut down while following the turn, which goes on in another process: read session " +
						t.Submitted.Session + "'s events after seq " + strconv.FormatInt(last, 10)})
				return
			case <-t.ctx.Done():
				return
			}
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
