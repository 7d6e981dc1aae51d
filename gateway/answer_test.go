package gateway_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/gateway"
	"github.com/agentrt/agentrt/session"
)

// collect is a yield that keeps the events it is handed.
type collect struct{ events []*session.Event }

func (c *collect) yield(e *session.Event) bool {
	c.events = append(c.events, e)
	return true
}

func (c *collect) types() []string {
	var out []string
	for _, e := range c.events {
		out = append(out, string(e.Type))
	}
	return out
}

// Answer runs the turn at once, whatever the debounce, with every input
// the source has pending, and hands the agent's events to yield as they
// are committed: the same events the log holds.
func TestAnswerRunsAtOnceAndYieldsTheEvents(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, gateway.Config{Debounce: time.Hour})
		ctx := context.Background()
		first := e.submit(t, "cli", "hi")
		sub := e.submit(t, "cli", "what is up")
		var c collect
		if err := e.g.Answer(ctx, sub, c.yield); err != nil {
			t.Fatal(err)
		}
		starts := events[session.RunStarted](t, e.store, "cli")
		if len(starts) != 1 || !slices.Equal(starts[0].Inputs, []string{first.ID, sub.ID}) {
			t.Fatalf("run_started %+v, want one turn answering both inputs", starts)
		}
		var stored []*session.Event
		for ev, err := range e.store.Events(ctx, "cli", 0) {
			if err != nil {
				t.Fatal(err)
			}
			stored = append(stored, ev)
		}
		var yielded []int64
		for _, ev := range c.events {
			if ev.Seq > 0 {
				yielded = append(yielded, ev.Seq)
			}
		}
		var want []int64
		for _, ev := range stored {
			want = append(want, ev.Seq)
		}
		if diff := cmp.Diff(want, yielded); diff != "" {
			t.Errorf("the committed events yielded (-stored +yielded):\n%s", diff)
		}
		if got := c.types(); got[0] != "run_started" || got[len(got)-1] != "run_finished" {
			t.Errorf("yielded %v, want run_started first and run_finished last", got)
		}
		if p, _ := e.g.Pending(ctx); len(p) != 0 {
			t.Errorf("pending after Answer: %+v", p)
		}
		e.r.Close(ctx)
	})
}

// Ctrl-C while Answer runs the turn cancels its run with the context's
// cause, recorded as the run's reason; the input was answered by the
// run, which is resumable.
func TestAnswerCanceledWithTheCause(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, gateway.Config{})
		e.bot.inModel = make(chan struct{}, 1)
		ctx, cancel := context.WithCancelCause(context.Background())
		sub := e.submit(t, "cli", "slow")
		go func() {
			<-e.bot.inModel
			cancel(agentrt.ErrSignalInterrupt)
		}()
		var c collect
		if err := e.g.Answer(ctx, sub, c.yield); err != nil {
			t.Fatal(err)
		}
		fin, ok := c.events[len(c.events)-1].Data.(*session.RunFinished)
		if !ok || fin.Status != session.StatusCanceled || fin.Reason != agentrt.CodeSignalInterrupt {
			t.Fatalf("the last event yielded %+v, want run_finished canceled with reason sigint", c.events[len(c.events)-1].Data)
		}
		ins, _ := e.store.Inputs(context.Background(), "cli", 0, 0)
		if len(ins) != 1 || ins[0].State != session.InputAnswered {
			t.Errorf("inbox %+v, want the input answered", ins)
		}
		e.r.Close(context.Background())
	})
}

// A yield that returns false cancels the run, as leaving Runner.Run's
// loop does.
func TestAnswerYieldFalseCancels(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, gateway.Config{})
		sub := e.submit(t, "cli", "order 7")
		n := 0
		if err := e.g.Answer(context.Background(), sub, func(*session.Event) bool { n++; return false }); err != nil {
			t.Fatal(err)
		}
		if n != 1 {
			t.Errorf("yield called %d times after it returned false", n)
		}
		fins := events[session.RunFinished](t, e.store, "cli")
		if len(fins) != 1 || fins[0].Status != session.StatusCanceled {
			t.Fatalf("run_finished %+v, want the run canceled", fins)
		}
		if len(e.refunds) != 0 {
			t.Errorf("the canceled run called the tool: %v", e.refunds)
		}
		e.r.Close(context.Background())
	})
}

// A session in use by another run: with policy queue, Answer says why it
// could not run the turn, and the input stays pending; with the default
// policy (interrupt) the run in the way is interrupted and the input
// answered.
func TestAnswerSessionInUse(t *testing.T) {
	for _, policy := range []gateway.Policy{gateway.Queue, gateway.Interrupt} {
		t.Run(string(policy), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := newEnv(t, gateway.Config{Policy: policy})
				ctx := context.Background()
				other, err := e.r.Start(ctx, "cli", agentrt.Input{Text: "slow", Agent: "assistant"})
				if err != nil {
					t.Fatal(err)
				}
				sub := e.submit(t, "cli", "hello")
				err = e.g.Answer(ctx, sub, nil)
				ins, _ := e.store.Inputs(ctx, "cli", 0, 0)
				switch policy {
				case gateway.Queue:
					if code := agentrt.AsError(err).ErrorCode(); code != agentrt.CodeBusy {
						t.Fatalf("Answer: %v (code %q), want code busy", err, code)
					}
					if len(ins) != 1 || ins[0].State != session.InputPending {
						t.Errorf("inbox %+v, want the input pending", ins)
					}
					other.Cancel()
				case gateway.Interrupt:
					if err != nil {
						t.Fatal(err)
					}
					if res, _ := other.Wait(ctx); res.Status != session.StatusInterrupted {
						t.Errorf("the run in the way ended %s, want interrupted", res.Status)
					}
					if len(ins) != 1 || ins[0].State != session.InputAnswered {
						t.Errorf("inbox %+v, want the input answered", ins)
					}
				}
				e.r.Close(ctx)
			})
		})
	}
}

// failing is a module whose failure fails the turn.
type failing struct{}

func (failing) Name() string { return "moderation" }
func (failing) Order() int   { return 10 }
func (failing) Run(context.Context, *gateway.Turn) error {
	return errors.New("the moderation service is down")
}

// A turn that fails: Answer returns its error, and the input is set aside.
func TestAnswerTurnFails(t *testing.T) {
	e := newEnv(t, gateway.Config{Modules: []gateway.Module{failing{}}})
	defer e.r.Close(context.Background())
	sub := e.submit(t, "cli", "hello")
	err := e.g.Answer(context.Background(), sub, nil)
	if err == nil || !containsAll(err.Error(), "moderation", "down") {
		t.Fatalf("Answer: %v, want the module's failure", err)
	}
	ins, _ := e.store.Inputs(context.Background(), "cli", 0, 0)
	if len(ins) != 1 || ins[0].State != session.InputRefused || !containsAll(ins[0].Reason, agentrt.CodeModuleFailed, "down") {
		t.Errorf("inbox %+v, want the input refused with the failure", ins)
	}
	if err := e.g.Answer(context.Background(), &gateway.Submitted{}, nil); err == nil {
		t.Error("Answer of no input: no error")
	}
}

func containsAll(s string, parts ...string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}
