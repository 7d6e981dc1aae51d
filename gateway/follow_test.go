package gateway_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/gateway"
	"github.com/agentrt/agentrt/session"
	"github.com/agentrt/agentrt/session/memstore"
)

type failingModule struct{}

func (failingModule) Name() string { return "screen" }
func (failingModule) Order() int   { return 10 }
func (failingModule) Run(context.Context, *gateway.Turn) error {
	return errors.New("screening is down")
}

// follow collects what a Following's Events yields.
func follow(ctx context.Context, f *gateway.Following) (evs []*session.Event, err error) {
	for ev, err := range f.Events(ctx) {
		if err != nil {
			return evs, err
		}
		evs = append(evs, ev)
	}
	return evs, nil
}

// An input this process sets aside ends its followers at once, every
// one of them: each hears the refusal with its code, none takes it from
// another (two followers of one input shared one channel, and the first
// to stop unregistered it for the second).
func TestFollowRefusedTellsEveryFollower(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, gateway.Config{Modules: []gateway.Module{failingModule{}}})
		stop := e.run(t)
		defer stop()
		if _, err := e.r.CreateSession(t.Context(), "", "chat", nil); err != nil {
			t.Fatal(err)
		}
		sub := e.submit(t, "chat", "hello")
		type result struct {
			evs []*session.Event
			err error
			o   gateway.Outcome
		}
		results := make(chan result, 2)
		for range 2 {
			go func() {
				f := e.g.Follow(sub, 0)
				evs, err := follow(context.Background(), f)
				o, _ := f.Outcome()
				results <- result{evs, err, o}
			}()
		}
		for range 2 {
			r := <-results
			if len(r.evs) != 0 || agentrt.AsError(r.err).ErrorCode() != agentrt.CodeModuleFailed {
				t.Fatalf("a follower got %d events and %v; want none and module_failed", len(r.evs), r.err)
			}
			if r.o.State != gateway.TurnRefused || r.o.Code != agentrt.CodeModuleFailed {
				t.Errorf("outcome %+v, want refused, module_failed", r.o)
			}
		}
	})
}

// Newer input restarts the turn: the restart's run keeps the turn's id,
// and a follower of the first input follows both runs to the answer.
func TestFollowRestartKeepsTheTurn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, gateway.Config{})
		e.bot.inModel = make(chan struct{}, 8)
		stop := e.run(t)
		defer stop()
		if _, err := e.r.CreateSession(t.Context(), "", "chat", nil); err != nil {
			t.Fatal(err)
		}
		f := e.g.Open(gateway.Input{Source: "chat", Text: "slow: order 42"}, 0)
		done := make(chan struct{})
		var evs []*session.Event
		var ferr error
		go func() {
			defer close(done)
			evs, ferr = follow(context.Background(), f)
		}()
		first, err := f.Stored(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		<-e.bot.inModel
		e.submit(t, "chat", "sorry, 43 — order 43")
		<-done
		if ferr != nil {
			t.Fatal(ferr)
		}
		var turns []string
		var ends []session.Status
		final := ""
		for _, ev := range evs {
			switch d := ev.Data.(type) {
			case *session.RunStarted:
				turns = append(turns, d.TurnID)
			case *session.RunFinished:
				ends = append(ends, d.Status)
			case *session.Final:
				final = d.Text
			}
		}
		if len(turns) != 2 || turns[0] != turns[1] || turns[0] == "" {
			t.Fatalf("run_started turn ids %q: want two runs of one turn", turns)
		}
		if !slices.Equal(ends, []session.Status{session.StatusInterrupted, session.StatusDone}) || final != `done: "refunded order 43"` {
			t.Fatalf("run ends %v, final %q", ends, final)
		}
		o, ok := f.Outcome()
		if want := (gateway.Outcome{State: gateway.TurnAnswered, Status: session.StatusDone, TurnID: turns[0], RunID: evs[len(evs)-1].RunID}); !ok || !cmp.Equal(o, want) {
			t.Errorf("outcome %+v, want %+v", o, want)
		}
		if first.ID == "" {
			t.Error("Stored gave no input")
		}
	})
}

// A person's interrupt ends the turn: its follower ends with the run it
// interrupted, and does not take the session's next turn — another
// source's — as its own.
func TestFollowPersonInterruptEndsTheTurn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, gateway.Config{})
		e.bot.inModel = make(chan struct{}, 8)
		stop := e.run(t)
		defer stop()
		if _, err := e.r.CreateSession(t.Context(), "", "chat", nil); err != nil {
			t.Fatal(err)
		}
		f := e.g.Open(gateway.Input{Source: "chat", Session: "chat", Text: "slow: think"}, 0)
		done := make(chan struct{})
		var evs []*session.Event
		var ferr error
		go func() {
			defer close(done)
			evs, ferr = follow(context.Background(), f)
		}()
		<-e.bot.inModel
		if _, err := e.r.Interrupt(t.Context(), "chat", "a person stopped it"); err != nil {
			t.Fatal(err)
		}
		// Another source's input to the same session: its own turn.
		if _, err := e.g.Submit(t.Context(), gateway.Input{Source: "desk", Session: "chat", Text: "hello from the desk"}); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		select {
		case <-done:
		default:
			t.Fatal("the follower of the interrupted turn is still following")
		}
		if ferr != nil {
			t.Fatal(ferr)
		}
		runs := map[string]bool{}
		for _, ev := range evs {
			runs[ev.RunID] = true
		}
		if len(runs) != 1 || evs[len(evs)-1].Type != session.TypeRunFinished {
			t.Fatalf("the follower saw runs %v, ending with %s; want the interrupted run only", runs, evs[len(evs)-1].Type)
		}
		if starts := events[session.RunStarted](t, e.store, "chat"); len(starts) != 2 {
			t.Fatalf("%d runs, want the interrupted one and the desk's", len(starts))
		}
		o, _ := f.Outcome()
		if o.State != gateway.TurnInterrupted || o.Status != session.StatusInterrupted || o.Reason != "a person stopped it" {
			t.Errorf("outcome %+v, want interrupted by the person", o)
		}
	})
}

// An input the reject policy refused, sent again with the same key, is
// refused again: a retrying client does not take it for accepted.
func TestRejectedInputRetriedIsRefusedAgain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, gateway.Config{Policy: gateway.Reject})
		_, stop := e.busy(t, "slow")
		defer stop()
		in := gateway.Input{Source: "chat", Text: "order 2", Key: "k1"}
		_, err := e.g.Submit(t.Context(), in)
		if agentrt.AsError(err).ErrorCode() != agentrt.CodeInputRejected {
			t.Fatalf("first: %v, want input_rejected", err)
		}
		sub, err := e.g.Submit(t.Context(), in)
		if agentrt.AsError(err).ErrorCode() != agentrt.CodeInputRejected {
			t.Fatalf("again with the same key: %+v, %v; want input_rejected", sub, err)
		}
		close(e.bot.release)
		synctest.Wait()
	})
}

// restartFailing fails the turns that restart.
type restartFailing struct{}

func (restartFailing) Name() string { return "screen" }
func (restartFailing) Order() int   { return 10 }
func (restartFailing) Run(_ context.Context, t *gateway.Turn) error {
	if t.Restart > 0 {
		return errors.New("screening is down")
	}
	return nil
}

// A turn whose restart is set aside (a module failed on it) ends its
// follower with the failure, rather than leaving it waiting for a run
// that never comes.
func TestFollowRestartSetAside(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, gateway.Config{Modules: []gateway.Module{restartFailing{}}})
		e.bot.inModel = make(chan struct{}, 8)
		stop := e.run(t)
		defer stop()
		if _, err := e.r.CreateSession(t.Context(), "", "chat", nil); err != nil {
			t.Fatal(err)
		}
		f := e.g.Open(gateway.Input{Source: "chat", Text: "slow: order 42"}, 0)
		done := make(chan struct{})
		var ferr error
		go func() {
			defer close(done)
			_, ferr = follow(context.Background(), f)
		}()
		<-e.bot.inModel
		e.submit(t, "chat", "sorry, 43")
		select {
		case <-done:
		case <-time.After(time.Minute):
			t.Fatal("the follower waits for a restart that was set aside")
		}
		if agentrt.AsError(ferr).ErrorCode() != agentrt.CodeModuleFailed {
			t.Fatalf("the follower ended with %v, want module_failed", ferr)
		}
		if o, _ := f.Outcome(); o.State != gateway.TurnFailed {
			t.Errorf("outcome %+v, want failed", o)
		}
	})
}

// readCounting counts the reads of the stored inputs' states
// (Inbox.Inputs): what a Following's checker costs the store.
type readCounting struct {
	*memstore.Store
	reads atomic.Int64
}

func (c *readCounting) Inputs(ctx context.Context, source string, after int64, limit int) ([]session.InboxInput, error) {
	c.reads.Add(1)
	return c.Store.Inputs(ctx, source, after, limit)
}

// A refusal wakes the followers of the inputs it refused, not every
// follower of the process: with many inputs waiting for their turns
// (here held by a debounce), each refusal of another source's input made
// every one of them read its input's state from the store — a read per
// follower per refusal.
func TestFollowersReadOnlyTheirRefusals(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var store *readCounting
		e := newEnvWrapped(t, gateway.Config{Debounce: time.Hour,
			Sources: map[string]gateway.SourceConfig{"hot": {Debounce: time.Nanosecond, Policy: gateway.Reject}}},
			func(m *memstore.Store) session.Store { store = &readCounting{Store: m}; return store })
		e.bot.inModel = make(chan struct{}, 8)
		e.bot.release = make(chan struct{})
		stop := e.run(t)
		defer stop()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		const waiting = 200
		for i := range waiting {
			src := fmt.Sprint("chat", i)
			if _, err := e.r.CreateSession(t.Context(), "", src, nil); err != nil {
				t.Fatal(err)
			}
			go follow(ctx, e.g.Follow(e.submit(t, src, "hello"), 0))
		}
		e.submit(t, "hot", "slow")
		<-e.bot.inModel
		synctest.Wait() // every follower has looked once, and waits
		before := store.reads.Load()
		const refusals = 5
		for range refusals {
			if _, err := e.g.Submit(t.Context(), gateway.Input{Source: "hot", Text: "more"}); agentrt.AsError(err).ErrorCode() != agentrt.CodeInputRejected {
				t.Fatalf("hot's newer input: %v, want input_rejected", err)
			}
			synctest.Wait()
		}
		if n := store.reads.Load() - before; n > refusals {
			t.Errorf("%d refusals of hot's inputs made %d reads of the inbox, with %d followers of other inputs waiting; want at most one a refusal", refusals, n, waiting)
		}
		close(e.bot.release)
		cancel()
		synctest.Wait()
	})
}

// An input Open's submission refused (the source's policy rejects input
// while its turn runs) is a turn that came to refused: Outcome says so,
// with its code, as for an input refused later.
func TestOpenRefusedAtSubmitHasItsOutcome(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, gateway.Config{Policy: gateway.Reject})
		_, stop := e.busy(t, "slow")
		defer stop()
		f := e.g.Open(gateway.Input{Source: "chat", Text: "order 2"}, 0)
		if _, err := follow(t.Context(), f); agentrt.AsError(err).ErrorCode() != agentrt.CodeInputRejected {
			t.Fatalf("the follower ended with %v, want input_rejected", err)
		}
		o, ok := f.Outcome()
		if !ok || o.State != gateway.TurnRefused || o.Code != agentrt.CodeInputRejected {
			t.Errorf("outcome %+v (%v), want refused, input_rejected", o, ok)
		}
		close(e.bot.release)
		synctest.Wait()
	})
}

// slowSessionRead holds each read of a session row, once armed, until
// its context ends: a store read still under way.
type slowSessionRead struct {
	*memstore.Store
	armed atomic.Bool
}

func (s *slowSessionRead) GetSession(ctx context.Context, id string) (*session.Session, error) {
	if s.armed.Load() {
		<-ctx.Done()
		return nil, fmt.Errorf("get session %s: %w", id, ctx.Err())
	}
	return s.Store.GetSession(ctx, id)
}

// The follower of an input refused before its watch has read the
// session hears the refusal, with its code: the checker that found it
// ends the watch, and the watch's read, cut short, is not the turn's
// end (the follower said "context canceled", at random, under -race).
func TestFollowRefusedBeforeTheWatchBegins(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var store *slowSessionRead
		e := newEnvWrapped(t, gateway.Config{Modules: []gateway.Module{failingModule{}}},
			func(m *memstore.Store) session.Store { store = &slowSessionRead{Store: m}; return store })
		stop := e.run(t)
		defer stop()
		if _, err := e.r.CreateSession(t.Context(), "", "chat", nil); err != nil {
			t.Fatal(err)
		}
		sub := e.submit(t, "chat", "hello")
		synctest.Wait() // set aside: the module failed
		store.armed.Store(true)
		f := e.g.Follow(sub, 0)
		if _, err := follow(t.Context(), f); agentrt.AsError(err).ErrorCode() != agentrt.CodeModuleFailed {
			t.Fatalf("the follower ended with %v, want module_failed", err)
		}
		if o, _ := f.Outcome(); o.State != gateway.TurnRefused || o.Code != agentrt.CodeModuleFailed {
			t.Errorf("outcome %+v, want refused, module_failed", o)
		}
	})
}

// Open of an input to a session that does not exist (deleted since its
// follower was made, say) reports why to Stored: not_found, not that
// the watch "ended before the input was stored".
func TestOpenOfAnUnknownSession(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, gateway.Config{})
		stop := e.run(t)
		defer stop()
		f := e.g.Open(gateway.Input{Source: "chat", Text: "hello"}, 0)
		_, ferr := follow(t.Context(), f)
		sub, err := f.Stored(t.Context())
		if agentrt.AsError(ferr).ErrorCode() != agentrt.CodeNotFound || agentrt.AsError(err).ErrorCode() != agentrt.CodeNotFound || sub != nil {
			t.Errorf("Events ended with %v, Stored gave %+v, %v; want not_found from both, nothing stored", ferr, sub, err)
		}
		if ins, _ := e.store.Inputs(t.Context(), "chat", 0, 0); len(ins) != 0 {
			t.Errorf("inbox %+v, want nothing submitted", ins)
		}
	})
}

// A follower of a session's run (FollowSession: an AG-UI reconnect, say)
// whose turn's restart is set aside ends too: the interrupted event says
// the source of the inputs the restart answers, so it finds them in the
// inbox (it waited for ever: it knew of no source to look in).
func TestFollowSessionRestartSetAside(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, gateway.Config{Modules: []gateway.Module{restartFailing{}}})
		e.bot.inModel = make(chan struct{}, 8)
		stop := e.run(t)
		defer stop()
		if _, err := e.r.CreateSession(t.Context(), "", "chat", nil); err != nil {
			t.Fatal(err)
		}
		e.submit(t, "chat", "slow: order 42")
		<-e.bot.inModel
		f := e.g.FollowSession("chat", 0)
		done := make(chan struct{})
		var ferr error
		go func() {
			defer close(done)
			_, ferr = follow(context.Background(), f)
		}()
		<-f.Watching()
		e.submit(t, "chat", "sorry, 43")
		select {
		case <-done:
		case <-time.After(time.Minute):
			t.Fatal("the session's follower waits for a restart that was set aside")
		}
		if agentrt.AsError(ferr).ErrorCode() != agentrt.CodeModuleFailed {
			t.Fatalf("the follower ended with %v, want module_failed", ferr)
		}
	})
}

// A turn Open submits and follows costs no read of the inbox for its
// input's state: it was stored anew, pending, and a refusal by this
// process would name it (the follower read it once a turn before: 6 %
// of the CPU with 1,000 turns at once on SQLite). A refusal right after
// the store still ends it, with its code.
func TestOpenSparesTheFirstLook(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var store *readCounting
		e := newEnvWrapped(t, gateway.Config{}, func(m *memstore.Store) session.Store { store = &readCounting{Store: m}; return store })
		stop := e.run(t)
		defer stop()
		if _, err := e.r.CreateSession(t.Context(), "", "chat", nil); err != nil {
			t.Fatal(err)
		}
		before := store.reads.Load()
		f := e.g.Open(gateway.Input{Source: "chat", Text: "hello"}, 0)
		if _, err := follow(t.Context(), f); err != nil {
			t.Fatal(err)
		}
		if o, ok := f.Outcome(); !ok || o.State != gateway.TurnAnswered {
			t.Fatalf("outcome %+v (%v), want answered", o, ok)
		}
		if n := store.reads.Load() - before; n != 0 {
			t.Errorf("the turn's follower read the inbox %d times; want 0", n)
		}
	})
}
