package agentrt_test

import (
	"context"
	"sync"
	"testing"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/model/scripted"
	"github.com/agentrt/agentrt/session"
	"github.com/agentrt/agentrt/session/memstore"
)

// onChildRound calls fn, once, right after a session other than parent
// commits a round_started: the parent hears of that round only then.
type onChildRound struct {
	*memstore.Store
	parent string
	once   sync.Once
	fn     func()
}

func (s *onChildRound) Commit(ctx context.Context, c *session.Commit) error {
	if err := s.Store.Commit(ctx, c); err != nil {
		return err
	}
	if c.SessionID != s.parent {
		for _, e := range c.Events {
			if e.Type == session.TypeRoundStarted {
				s.once.Do(s.fn)
			}
		}
	}
	return nil
}

// A run canceled as its child's round begins — the child committed the
// round, and the parent records the delegation's progress after the
// cancellation — ends canceled, stored: the progress it recorded goes
// into the store with the end, rather than making the run's state run
// ahead of the store, so that its end could not be stored.
func TestCancelAsTheChildsRoundBegins(t *testing.T) {
	for _, how := range []string{"handle", "context"} {
		t.Run(how, func(t *testing.T) {
			boss := scripted.New("boss", delegate("compute"), scripted.Reply{Text: "done"})
			b, c := delegation(t, boss, scripted.New("calc-model", scripted.Reply{Text: "42"}))
			var stop func()
			st := &onChildRound{Store: memstore.New(), parent: "s1", fn: func() { stop() }}
			e := newEnv(t, st, agentrt.Config{}, b, c)
			ctx := t.Context()
			var res *agentrt.Result
			var err error
			if how == "handle" {
				var (
					h       *agentrt.Run
					started = make(chan struct{})
				)
				stop = func() { <-started; h.Cancel() }
				h, err = e.r.Start(ctx, "s1", agentrt.Input{Text: "go", Agent: "boss"})
				close(started)
				if err != nil {
					t.Fatal(err)
				}
				res, err = h.Wait(ctx)
			} else {
				rctx, cancel := context.WithCancel(ctx)
				defer cancel()
				stop = cancel
				res, err = agentrt.Collect(e.r.Run(rctx, "s1", agentrt.Input{Text: "go", Agent: "boss"}))
			}
			if err != nil || res.Status != session.StatusCanceled {
				t.Fatalf("the parent's run: %+v %v, want canceled", res, err)
			}
			s, err := st.GetSession(ctx, "s1")
			if err != nil || s.Status != session.StatusCanceled || s.Lease != nil {
				t.Fatalf("the parent's session: %+v %v, want canceled and let go of", s, err)
			}
		})
	}
}

// A run canceled while a BeforeTool hook decides about a call ends
// canceled, stored: the commit that would announce the call, made with
// the canceled context, leaves its events for the commit that ends the
// run rather than putting the state ahead of the store.
func TestCancelDuringABeforeToolHook(t *testing.T) {
	m := scripted.New("m", scripted.Reply{ToolCalls: []scripted.Call{scripted.ToolCall("calculator", `{"expression":"1+1"}`)}}, scripted.Reply{Text: "2"})
	a := calcAgent(m, registry(t))
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	a.Hooks.BeforeTool(0, func(context.Context, agentrt.HookInfo, model.ToolCall) agentrt.ToolDecision {
		cancel() // as a person presses Ctrl-C while the hook runs
		return agentrt.ToolDecision{}
	})
	e := newEnv(t, nil, agentrt.Config{}, a)
	res, err := agentrt.Collect(e.r.Run(ctx, "s1", agentrt.Input{Text: "1+1", Agent: "calc"}))
	if err != nil || res.Status != session.StatusCanceled {
		t.Fatalf("run: %+v %v, want canceled", res, err)
	}
	if s, err := e.store.GetSession(t.Context(), "s1"); err != nil || s.Status != session.StatusCanceled {
		t.Fatalf("stored: %+v %v, want canceled", s, err)
	}
}
