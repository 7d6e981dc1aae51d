package gateway_test

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/gateway"
	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/session"
	"github.com/agentrt/agentrt/session/memstore"
	"github.com/agentrt/agentrt/tool"
)

// bot is a model for the support-bot story: it answers a question about
// an order with the refund tool, then answers from the tool's result; a
// request whose last user message is "slow" waits until its call is
// abandoned. It records every request it sees.
type bot struct {
	mu       sync.Mutex
	requests []*model.Request
	inModel  chan struct{} // receives when a call begins
	release  chan struct{} // closed: a "slow" call answers
}

func (b *bot) Name() string { return "bot" }

func (b *bot) Stream(ctx context.Context, req *model.Request) iter.Seq2[model.Chunk, error] {
	return func(yield func(model.Chunk, error) bool) {
		b.mu.Lock()
		b.requests = append(b.requests, cloneReq(req))
		b.mu.Unlock()
		if b.inModel != nil {
			select {
			case b.inModel <- struct{}{}:
			default:
			}
		}
		last := req.Messages[len(req.Messages)-1]
		user := lastUser(req)
		switch {
		case last.Role == model.RoleTool:
			yield(model.Chunk{Text: "done: " + last.Text(), FinishReason: model.FinishStop}, nil)
		case strings.Contains(user, "slow") && !strings.Contains(user, "order"):
			select {
			case <-ctx.Done():
				yield(model.Chunk{}, ctx.Err())
			case <-b.release:
				yield(model.Chunk{Text: "answer to: " + user, FinishReason: model.FinishStop}, nil)
			}
		case strings.Contains(user, "slow"):
			<-ctx.Done()
			yield(model.Chunk{}, ctx.Err())
		case strings.Contains(user, "order"):
			order := user[strings.LastIndex(user, "order")+len("order "):]
			yield(model.Chunk{ToolCalls: []model.ToolCallDelta{{ID: fmt.Sprint("c", len(req.Messages)), Name: "refund",
				Arguments: fmt.Sprintf(`{"order":%q}`, strings.Fields(order)[0])}}, FinishReason: model.FinishToolCalls}, nil)
		default:
			yield(model.Chunk{Text: "answer to: " + user, FinishReason: model.FinishStop}, nil)
		}
	}
}

func lastUser(req *model.Request) string {
	for i := len(req.Messages) - 1; i >= 0; i-- {
		if req.Messages[i].Role == model.RoleUser {
			return req.Messages[i].Text()
		}
	}
	return ""
}

func cloneReq(r *model.Request) *model.Request {
	c := *r
	c.Messages = append([]model.Message(nil), r.Messages...)
	return &c
}

func (b *bot) seen() []*model.Request {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]*model.Request(nil), b.requests...)
}

type env struct {
	store   *memstore.Store
	r       *agentrt.Runner
	g       *gateway.Gateway
	bot     *bot
	refunds []string
	mu      sync.Mutex
	// toolGate, when set, holds each refund until it receives.
	toolGate chan struct{}
	inTool   chan struct{}
}

func newEnv(t *testing.T, cfg gateway.Config) *env {
	t.Helper()
	return newEnvWrapped(t, cfg, nil)
}

// newEnvWrapped is newEnv with the runner's store wrap(the memstore).
func newEnvWrapped(t *testing.T, cfg gateway.Config, wrap func(*memstore.Store) session.Store) *env {
	t.Helper()
	e := &env{store: memstore.New(), bot: &bot{}}
	var store session.Store = e.store
	if wrap != nil {
		store = wrap(e.store)
	}
	refund := tool.Must(tool.New("refund", "refunds an order", func(ctx context.Context, in struct {
		Order string `json:"order"`
	}) (string, error) {
		e.mu.Lock()
		e.refunds = append(e.refunds, in.Order)
		gate, entered := e.toolGate, e.inTool
		e.mu.Unlock()
		if gate != nil {
			entered <- struct{}{}
			<-gate
		}
		return "refunded order " + in.Order, nil
	}))
	reg, err := tool.NewRegistry(refund)
	if err != nil {
		t.Fatal(err)
	}
	a := &agentrt.Agent{Name: "assistant", Model: e.bot, Tools: reg}
	a.Compaction.Off = true
	e.r, err = agentrt.NewRunner(agentrt.Config{Store: store, Agents: []*agentrt.Agent{a}})
	if err != nil {
		t.Fatal(err)
	}
	cfg.Runner = e.r
	if e.g, err = gateway.New(cfg); err != nil {
		t.Fatal(err)
	}
	return e
}

// run runs the gateway's loop until the test's bubble ends it.
func (e *env) run(t *testing.T) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { e.g.Run(ctx); close(done) }()
	return func() {
		cancel()
		<-done
		e.r.Close(context.Background())
	}
}

// busy runs e's gateway with a turn of source chat held in its model
// call (text is "slow…"; close e.bot.release to let it answer): the
// input, and stop, which ends the gateway.
func (e *env) busy(t *testing.T, text string) (*gateway.Submitted, func()) {
	t.Helper()
	e.bot.inModel = make(chan struct{}, 8)
	e.bot.release = make(chan struct{})
	stop := e.run(t)
	in := e.submit(t, "chat", text)
	<-e.bot.inModel
	return in, stop
}

func (e *env) submit(t *testing.T, source, text string) *gateway.Submitted {
	t.Helper()
	s, err := e.g.Submit(context.Background(), gateway.Input{Source: source, Text: text})
	if err != nil {
		t.Fatalf("submit %q: %v", text, err)
	}
	return s
}

func events[T any](t *testing.T, store session.Store, id string) []*T {
	t.Helper()
	var out []*T
	for e, err := range store.Events(context.Background(), id, 0) {
		if err != nil {
			t.Fatal(err)
		}
		if d, ok := any(e.Data).(*T); ok {
			out = append(out, d)
		}
	}
	return out
}

// Three inputs within the debounce window make one turn, answering all
// of them; the turn's run_started names them.
func TestCoalescedWithinTheWindow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, gateway.Config{Debounce: 2 * time.Second})
		stop := e.run(t)
		defer stop()
		var ids []string
		for _, text := range []string{"hi", "I need help", "with my account"} {
			ids = append(ids, e.submit(t, "chat", text).ID)
			time.Sleep(500 * time.Millisecond)
		}
		synctest.Wait()
		if n := len(e.bot.seen()); n != 0 {
			t.Fatalf("the turn began before the source settled (%d model calls)", n)
		}
		time.Sleep(2 * time.Second)
		synctest.Wait()
		starts := events[session.RunStarted](t, e.store, "chat")
		if len(starts) != 1 || strings.Join(starts[0].Inputs, ",") != strings.Join(ids, ",") {
			t.Fatalf("run_started %+v, want one turn answering %v", starts, ids)
		}
		if want := "hi\n\nI need help\n\nwith my account"; starts[0].Input != want {
			t.Errorf("the turn's input %q, want %q", starts[0].Input, want)
		}
		if p, _ := e.g.Pending(context.Background()); len(p) != 0 {
			t.Errorf("pending after the turn: %+v", p)
		}
	})
}

// A chatty source cannot starve: MaxWait bounds the debounce.
func TestMaxWaitBoundsTheDebounce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, gateway.Config{Debounce: time.Second, MaxWait: 3 * time.Second})
		stop := e.run(t)
		defer stop()
		start := time.Now()
		for i := 0; len(e.bot.seen()) == 0; i++ {
			if i > 20 {
				t.Fatal("no turn began though the source kept talking past MaxWait")
			}
			e.submit(t, "chat", fmt.Sprint("message ", i))
			time.Sleep(900 * time.Millisecond)
			synctest.Wait()
		}
		if waited := time.Since(start); waited < 3*time.Second || waited > 4*time.Second {
			t.Errorf("the turn began after %s, want about MaxWait (3s)", waited)
		}
	})
}

// The story: three messages make one turn; "sorry, 43" while the agent
// works interrupts it; the restarted turn answers it, the model seeing
// every input once and in order, and the agent answers once.
func TestInterruptAndRestart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, gateway.Config{Debounce: time.Second})
		e.bot.inModel = make(chan struct{}, 8)
		stop := e.run(t)
		defer stop()
		for _, text := range []string{"hi", "I need a refund", "slow: order 42"} {
			e.submit(t, "chat", text)
		}
		time.Sleep(time.Second)
		<-e.bot.inModel // the turn's model call is under way
		newer := e.submit(t, "chat", "sorry, 43 — order 43")
		time.Sleep(time.Second)
		synctest.Wait()
		starts := events[session.RunStarted](t, e.store, "chat")
		if len(starts) != 2 || len(starts[0].Inputs) != 3 || len(starts[1].Inputs) != 1 {
			t.Fatalf("run_started %+v, want the first turn with 3 inputs, the restart with 1", starts)
		}
		finals := events[session.Final](t, e.store, "chat")
		if len(finals) != 1 || finals[0].Text != `done: "refunded order 43"` {
			for _, f := range finals {
				t.Logf("final %q", f.Text)
			}
			t.Fatalf("%d finals, want one answer, about order 43", len(finals))
		}
		if got := events[session.Interrupted](t, e.store, "chat"); len(got) != 1 || !slices.Equal(got[0].Inputs, []string{newer.ID}) || got[0].MergedInputs != 1 {
			t.Errorf("interrupted events %+v, want one naming the newer input", got)
		}
		// Every input reached the model once, in order.
		reqs := e.bot.seen()
		var users []string
		for _, m := range reqs[len(reqs)-1].Messages {
			if m.Role == model.RoleUser {
				users = append(users, m.Text())
			}
		}
		if want := []string{"hi\n\nI need a refund\n\nslow: order 42", "sorry, 43 — order 43"}; strings.Join(users, "|") != strings.Join(want, "|") {
			t.Errorf("the model's user messages %q, want %q", users, want)
		}
		if strings.Join(e.refunds, ",") != "43" {
			t.Errorf("refunds %v, want 43 only", e.refunds)
		}
	})
}

// queue: the running turn finishes; the next answers what came meanwhile.
// reject: the input is refused, kept in the inbox as refused.
func TestQueueAndRejectPolicies(t *testing.T) {
	for _, policy := range []gateway.Policy{gateway.Queue, gateway.Reject} {
		t.Run(string(policy), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := newEnv(t, gateway.Config{Policy: policy})
				e.bot.inModel = make(chan struct{}, 8)
				e.bot.release = make(chan struct{}) // the first turn waits in its model call until released
				stop := e.run(t)
				defer stop()
				e.submit(t, "chat", "slow")
				<-e.bot.inModel
				synctest.Wait()
				_, err := e.g.Submit(context.Background(), gateway.Input{Source: "chat", Text: "order 2"})
				close(e.bot.release)
				synctest.Wait()
				starts := events[session.RunStarted](t, e.store, "chat")
				switch policy {
				case gateway.Queue:
					if err != nil || len(starts) != 2 || len(starts[1].Inputs) != 1 {
						t.Fatalf("queue: %v, starts %+v", err, starts)
					}
					if got := events[session.Interrupted](t, e.store, "chat"); len(got) != 0 {
						t.Errorf("queue interrupted the turn: %+v", got)
					}
				case gateway.Reject:
					if agentrt.AsError(err).ErrorCode() != agentrt.CodeInputRejected || len(starts) != 1 {
						t.Fatalf("reject: %v, starts %+v", err, starts)
					}
					ins, _ := e.store.Inputs(context.Background(), "chat", 0, 0)
					if len(ins) != 2 || ins[1].State != session.InputRefused {
						t.Errorf("inbox %+v, want the second input refused", ins)
					}
				}
			})
		})
	}
}

func TestSubmitBadInputAndKeys(t *testing.T) {
	e := newEnv(t, gateway.Config{MaxInputBytes: 10})
	ctx := context.Background()
	for _, tc := range []struct {
		in   gateway.Input
		code string
	}{
		{gateway.Input{Text: "hi"}, agentrt.CodeUnknownSource},
		{gateway.Input{Source: "s", Text: "  "}, agentrt.CodeEmptyInput},
		{gateway.Input{Source: "s", Parts: []session.InputPart{{Type: "data", Data: []byte("{")}}}, agentrt.CodeBadPart},
		{gateway.Input{Source: "s", Parts: []session.InputPart{{Type: "image"}}}, agentrt.CodeBadPart},
		{gateway.Input{Source: "s", Parts: []session.InputPart{{Type: "text", Text: "x", Data: []byte(`{"a":1}`)}}}, agentrt.CodeBadPart},
		{gateway.Input{Source: "s", Text: "far too long for it"}, agentrt.CodeInputTooLarge},
		{gateway.Input{Source: "s", Session: "two words", Text: "hi"}, agentrt.CodeBadSessionID},
		{gateway.Input{Source: "s", Session: "_rules.assistant", Text: "hi"}, agentrt.CodeBadSessionID},
		{gateway.Input{Source: "s", Session: "_claim.x", Text: "hi"}, agentrt.CodeBadSessionID},
		{gateway.Input{Source: "a source with spaces", Text: "hi"}, agentrt.CodeBadSessionID},
	} {
		if _, err := e.g.Submit(ctx, tc.in); agentrt.AsError(err).ErrorCode() != tc.code {
			t.Errorf("%+v: %v, want %s", tc.in, err, tc.code)
		}
	}
	a, err := e.g.Submit(ctx, gateway.Input{Source: "s", Text: "hi", Key: "k1"})
	if err != nil {
		t.Fatal(err)
	}
	b, err := e.g.Submit(ctx, gateway.Input{Source: "s", Text: "hi", Key: "k1"})
	if err != nil || !b.Duplicate || b.ID != a.ID {
		t.Fatalf("the same key again: %+v %v, want the first input, duplicate", b, err)
	}
	_, err = e.g.Submit(ctx, gateway.Input{Source: "s", Text: "bye", Key: "k1"})
	if agentrt.AsError(err).ErrorCode() != agentrt.CodeKeyConflict {
		t.Fatalf("the key with other content: %v", err)
	}
	// The caller reads the refusal (agentrt send, a 409's message), not
	// the store's error, whose ErrConflict says "changed concurrently".
	if want := `key "k1" of source s was given to another input before; send new content with a new key`; err.Error() != want {
		t.Errorf("the key with other content: %q, want %q", err, want)
	}
	if ins, _ := e.store.Inputs(ctx, "s", 0, 0); len(ins) != 1 {
		t.Fatalf("stored %d inputs, want 1", len(ins))
	}
	other := gateway.Config{SessionFor: func(string) (string, error) { return "", errors.New("no such channel") }, Runner: e.r}
	g2, err := gateway.New(other)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g2.Submit(ctx, gateway.Input{Source: "x", Text: "hi"}); agentrt.AsError(err).ErrorCode() != agentrt.CodeUnknownSource {
		t.Fatalf("a source that maps to no session: %v", err)
	}
}

// An agent's settings apply to its sources; a source's, over them.
func TestSettingsPerAgentAndSource(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, gateway.Config{
			Agents:  map[string]gateway.SourceConfig{"assistant": {Policy: gateway.Reject}},
			Sources: map[string]gateway.SourceConfig{"vip": {Policy: gateway.Queue}},
		})
		e.bot.inModel = make(chan struct{}, 8)
		e.bot.release = make(chan struct{})
		stop := e.run(t)
		defer stop()
		for _, src := range []string{"chat", "vip"} {
			e.submit(t, src, "slow")
			<-e.bot.inModel
		}
		synctest.Wait()
		_, errChat := e.g.Submit(context.Background(), gateway.Input{Source: "chat", Text: "more"})
		_, errVIP := e.g.Submit(context.Background(), gateway.Input{Source: "vip", Text: "more"})
		close(e.bot.release)
		synctest.Wait()
		if agentrt.AsError(errChat).ErrorCode() != agentrt.CodeInputRejected || errVIP != nil {
			t.Fatalf("chat (the agent's reject): %v; vip (its own queue): %v", errChat, errVIP)
		}
	})
}

// steer: the running turn goes on; the new input reaches the model at its
// next call, after the tool batch in flight, and the turn answers both.
func TestSteerPolicy(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, gateway.Config{Policy: gateway.Steer})
		e.toolGate, e.inTool = make(chan struct{}), make(chan struct{}, 1)
		stop := e.run(t)
		defer stop()
		e.submit(t, "chat", "order 42")
		<-e.inTool // the refund runs
		h, ok := e.r.Active(context.Background(), "chat")
		if !ok {
			t.Fatal("no active run while the refund runs")
		}
		turn := h.TurnID()
		second := e.submit(t, "chat", "and thanks")
		close(e.toolGate)
		synctest.Wait()
		starts := events[session.RunStarted](t, e.store, "chat")
		if len(starts) == 0 || starts[0].TurnID != turn || turn == "" {
			t.Fatalf("the active run's TurnID %q, run_started %+v: want the turn's id (the gateway steers into the session's active run when it is of the turn)", turn, starts)
		}
		steered := events[session.InputSteered](t, e.store, "chat")
		if len(starts) != 1 || len(steered) != 1 || strings.Join(steered[0].Inputs, ",") != second.ID {
			t.Fatalf("run_started %+v, input_steered %+v: want one turn, the second input steered into it", starts, steered)
		}
		if got := events[session.Interrupted](t, e.store, "chat"); len(got) != 0 {
			t.Fatalf("steer interrupted the turn")
		}
		reqs := e.bot.seen()
		last := reqs[len(reqs)-1].Messages
		if m := last[len(last)-1]; m.Role != model.RoleUser || m.Text() != "and thanks" {
			t.Fatalf("the model's last request ends with %+v, want the steered input after the tool's result", m)
		}
		if ins, _ := e.store.Inputs(context.Background(), "chat", 0, 0); len(ins) != 2 || ins[1].State != session.InputAnswered {
			t.Fatalf("inbox %+v", ins)
		}
	})
}

// A prefix's settings apply to the sources that start with it (the
// longest that matches), over the agent's and under the source's own.
func TestSettingsPerPrefix(t *testing.T) {
	e := newEnv(t, gateway.Config{
		Debounce: time.Second,
		Agents:   map[string]gateway.SourceConfig{"assistant": {Policy: gateway.Reject}},
		Prefixes: map[string]gateway.SourceConfig{"tg:": {Debounce: 1500 * time.Millisecond, Policy: gateway.Queue}, "tg:vip": {Debounce: time.Millisecond}},
		Sources:  map[string]gateway.SourceConfig{"tg:42": {Policy: gateway.Steer}},
	})
	for src, want := range map[string]gateway.SourceConfig{
		"chat":     {Debounce: time.Second, MaxWait: 10 * time.Second, Policy: gateway.Reject},
		"tg:7":     {Debounce: 1500 * time.Millisecond, MaxWait: 15 * time.Second, Policy: gateway.Queue},
		"tg:vip:1": {Debounce: time.Millisecond, MaxWait: 10 * time.Millisecond, Policy: gateway.Reject},
		"tg:42":    {Debounce: 1500 * time.Millisecond, MaxWait: 15 * time.Second, Policy: gateway.Steer},
	} {
		got := e.g.Settings(src, "")
		if got.Debounce != want.Debounce || got.MaxWait != want.MaxWait || got.Policy != want.Policy {
			t.Errorf("%s: %+v, want %+v", src, got, want)
		}
	}
}
