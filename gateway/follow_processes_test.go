package gateway_test

import (
	"context"
	"testing"
	"time"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/gateway"
	"github.com/agentrt/agentrt/internal/pgtest"
	"github.com/agentrt/agentrt/session"
	"github.com/agentrt/agentrt/session/postgres"
	"github.com/agentrt/agentrt/tool"
)

// process is a runner and a gateway of their own on a Postgres store
// that others share: another process, as the store sees it.
type process struct {
	r   *agentrt.Runner
	g   *gateway.Gateway
	bot *bot
}

func newProcess(t *testing.T, dsn string, cfg gateway.Config) *process {
	t.Helper()
	ctx := context.Background()
	st, err := postgres.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	p := &process{bot: &bot{inModel: make(chan struct{}, 8)}}
	refund := tool.Must(tool.New("refund", "refunds an order", func(ctx context.Context, in struct {
		Order string `json:"order"`
	}) (string, error) {
		return "refunded order " + in.Order, nil
	}))
	reg, err := tool.NewRegistry(refund)
	if err != nil {
		t.Fatal(err)
	}
	a := &agentrt.Agent{Name: "assistant", Model: p.bot, Tools: reg}
	a.Compaction.Off = true
	if p.r, err = agentrt.NewRunner(agentrt.Config{Store: st, Agents: []*agentrt.Agent{a}}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.r.Close(ctx) })
	cfg.Runner = p.r
	if p.g, err = gateway.New(cfg); err != nil {
		t.Fatal(err)
	}
	return p
}

// serve runs p's gateway loop until the test ends.
func (p *process) serve(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = p.g.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
}

// twoProcesses returns two processes on a new Postgres schema: one that
// serves the sources (its gateway loop runs), and one whose gateway only
// takes input and follows turns.
func twoProcesses(t *testing.T, cfg gateway.Config) (serving, following *process) {
	t.Helper()
	dsn, _ := pgtest.Schema(t)
	cfg.Poll, cfg.FollowPoll = 20*time.Millisecond, 50*time.Millisecond
	serving, following = newProcess(t, dsn, cfg), newProcess(t, dsn, cfg)
	serving.serve(t)
	return serving, following
}

// A turn served by one process is followed from another, on Postgres:
// the follower sees the serving process's live tokens and follows the
// restart that newer input (submitted through the follower's process)
// asks for to the answer; a person's interrupt made through the
// follower's process ends the turn, and the next turn, another source's,
// is not followed; a refusal the serving process made is heard within
// FollowPoll.
func TestFollowAcrossProcesses(t *testing.T) {
	type result struct {
		evs []*session.Event
		err error
	}
	start := func(ctx context.Context, f *gateway.Following) <-chan result {
		res := make(chan result, 1)
		go func() {
			evs, err := follow(ctx, f)
			res <- result{evs, err}
		}()
		return res
	}
	runsOf := func(evs []*session.Event) map[string]bool {
		runs := map[string]bool{}
		for _, ev := range evs {
			runs[ev.RunID] = true
		}
		return runs
	}

	t.Run("restart", func(t *testing.T) {
		serving, follower := twoProcesses(t, gateway.Config{})
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		if _, err := follower.r.CreateSession(ctx, "", "chat", nil); err != nil {
			t.Fatal(err)
		}
		f := follower.g.Open(gateway.Input{Source: "chat", Text: "slow: order 42"}, 0)
		res := start(ctx, f)
		<-serving.bot.inModel
		if _, err := follower.g.Submit(ctx, gateway.Input{Source: "chat", Text: "sorry, 43 — order 43"}); err != nil {
			t.Fatal(err)
		}
		r := <-res
		if r.err != nil || ctx.Err() != nil {
			t.Fatalf("the follower ended with %v (%v)", r.err, ctx.Err())
		}
		tokens, final := 0, ""
		for _, ev := range r.evs {
			switch d := ev.Data.(type) {
			case *session.Token:
				tokens++
			case *session.Final:
				final = d.Text
			}
		}
		o, _ := f.Outcome()
		if runs := runsOf(r.evs); len(runs) != 2 || tokens == 0 || final != `done: "refunded order 43"` || o.State != gateway.TurnAnswered {
			t.Errorf("the follower saw runs %v, %d tokens, final %q, outcome %+v; want both runs of the turn with the serving process's tokens, answered about order 43",
				runs, tokens, final, o)
		}
	})

	t.Run("a person's interrupt", func(t *testing.T) {
		serving, follower := twoProcesses(t, gateway.Config{})
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		if _, err := follower.r.CreateSession(ctx, "", "chat", nil); err != nil {
			t.Fatal(err)
		}
		f := follower.g.Open(gateway.Input{Source: "chat", Text: "slow: think"}, 0)
		res := start(ctx, f)
		<-serving.bot.inModel
		if _, err := follower.r.Interrupt(ctx, "chat", "a person stopped it"); err != nil {
			t.Fatal(err)
		}
		if _, err := follower.g.Submit(ctx, gateway.Input{Source: "desk", Session: "chat", Text: "hello from the desk"}); err != nil {
			t.Fatal(err)
		}
		r := <-res
		if r.err != nil || ctx.Err() != nil {
			t.Fatalf("the follower ended with %v (%v)", r.err, ctx.Err())
		}
		o, _ := f.Outcome()
		if runs := runsOf(r.evs); len(runs) != 1 || o.State != gateway.TurnInterrupted || o.Reason != "a person stopped it" {
			t.Errorf("the follower saw runs %v, outcome %+v; want the interrupted run only, interrupted by the person", runs, o)
		}
	})

	t.Run("a refusal", func(t *testing.T) {
		serving, follower := twoProcesses(t, gateway.Config{Policy: gateway.Reject})
		serving.bot.release = make(chan struct{})
		defer close(serving.bot.release)
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		if _, err := serving.g.Submit(ctx, gateway.Input{Source: "chat", Text: "slow"}); err != nil {
			t.Fatal(err)
		}
		<-serving.bot.inModel
		f := follower.g.Open(gateway.Input{Source: "chat", Text: "order 2"}, 0)
		r := <-start(ctx, f)
		o, _ := f.Outcome()
		if agentrt.AsError(r.err).ErrorCode() != agentrt.CodeInputRejected || o.State != gateway.TurnRefused {
			t.Errorf("the follower ended with %v (%v), outcome %+v; want input_rejected, refused", r.err, ctx.Err(), o)
		}
	})
}
