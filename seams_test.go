package agentrt_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/model/scripted"
	"github.com/agentrt/agentrt/session"
	"github.com/agentrt/agentrt/session/memstore"
	"github.com/agentrt/agentrt/session/storetest"
	"github.com/agentrt/agentrt/tool"
	"github.com/agentrt/agentrt/tool/builtin"
)

// gate is a tool that waits until released (or its context ends), and
// says when a call has started.
type gate struct {
	started chan string
	release chan struct{}
	ran     atomic.Int32
}

func newGate() *gate { return &gate{started: make(chan string, 16), release: make(chan struct{})} }

func (g *gate) tool() tool.Tool {
	return tool.Must(tool.New("gate", "waits", func(ctx context.Context, in struct {
		N int `json:"n"`
	}) (string, error) {
		g.ran.Add(1)
		g.started <- "started"
		select {
		case <-g.release:
			return "passed", nil
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}))
}

func gateCall() scripted.Reply {
	return scripted.Reply{ToolCalls: []scripted.Call{scripted.ToolCall("gate", `{"n":1}`)}}
}

func errCode(err error) string {
	var re *agentrt.Error
	if errors.As(err, &re) {
		return re.ErrorCode()
	}
	return ""
}

// wait waits for ch with a guard against a hang.
func wait[T any](t *testing.T, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(30 * time.Second):
		t.Fatal("timed out")
	}
	var zero T
	return zero
}

// A session is owned by one runner at a time across processes: a second
// runner (another process, another owner) is told who holds it.
func TestLeaseHeldByAnotherRunner(t *testing.T) {
	store := memstore.New()
	g := newGate()
	a := newEnv(t, store, agentrt.Config{Owner: "host-a:1:a"}, calcAgent(scripted.New("m", gateCall(), scripted.Reply{Text: "done"}), registry(t, g.tool())))
	b := newEnv(t, store, agentrt.Config{Owner: "host-b:2:b"}, calcAgent(scripted.New("m", scripted.Reply{Text: "b"}), registry(t, g.tool())))
	id := a.session(t, "calc")
	h, err := a.r.Start(context.Background(), id, agentrt.Input{Text: "go"})
	if err != nil {
		t.Fatal(err)
	}
	wait(t, g.started)
	_, err = agentrt.Collect(b.r.Resume(context.Background(), id))
	if errCode(err) != "lease_held" || !strings.Contains(err.Error(), "host-a:1:a") {
		t.Fatalf("resume from another runner: %v, want lease_held naming the owner", err)
	}
	if !errors.Is(err, session.ErrLeaseHeld) {
		t.Errorf("error does not wrap ErrLeaseHeld: %v", err)
	}
	if _, err := a.r.Start(context.Background(), id, agentrt.Input{Text: "again"}); errCode(err) != "busy" {
		t.Errorf("second start in one runner: %v, want busy", err)
	}
	close(g.release)
	res, err := h.Wait(context.Background())
	if err != nil || res.Status != session.StatusDone || res.Text != "done" {
		t.Fatalf("wait: %+v %v", res, err)
	}
	// Released: the other runner may run it now.
	if res := b.run(t, id, "hi"); res.Status != session.StatusDone || res.Text != "b" {
		t.Fatalf("after release: %+v", res)
	}
	if s, _ := store.GetSession(context.Background(), id); s.Lease != nil {
		t.Errorf("lease after the runs: %+v", s.Lease)
	}
}

// A runner whose lease was taken over (it expired while the process
// stalled) writes nothing more: its next commit is fenced, and the run
// stops with lease_lost.
func TestLeaseLostFencesTheRun(t *testing.T) {
	clock := storetest.NewClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	store := memstore.New(memstore.WithClock(clock.Now))
	g := newGate()
	cfg := agentrt.Config{LeaseTTL: time.Hour}
	cfg.Owner = "a:1:a"
	a := newEnv(t, store, cfg, calcAgent(scripted.New("m", gateCall(), scripted.Reply{Text: "from a"}), registry(t, g.tool())))
	id := a.session(t, "calc")
	h, err := a.r.Start(context.Background(), id, agentrt.Input{Text: "go"})
	if err != nil {
		t.Fatal(err)
	}
	wait(t, g.started)
	clock.Advance(2 * time.Hour) // a's lease expired
	cfg.Owner = "b:2:b"
	g2 := newGate()
	close(g2.release)
	b := newEnv(t, store, cfg, calcAgent(scripted.New("m", scripted.Reply{Text: "from b"}), registry(t, g2.tool())))
	res := b.resume(t, id)
	if res.Status != session.StatusDone || res.Text != "from b" {
		t.Fatalf("b's resume: %+v", res)
	}
	before := storedLog(t, store, id)
	close(g.release) // a's tool comes back; a must not write its result
	ares, err := h.Wait(context.Background())
	if errCode(err) != "lease_lost" {
		t.Fatalf("a's run: %+v %v, want lease_lost", ares, err)
	}
	if diff := cmp.Diff(before, storedLog(t, store, id)); diff != "" {
		t.Errorf("the fenced runner wrote:\n%s", diff)
	}
}

// crashed returns a store holding a session whose run stopped during a
// tool call without releasing its lease, as a killed process leaves it:
// status running, lease held by owner until it expires.
func crashed(t *testing.T, store *memstore.Store, id, owner string) string {
	t.Helper()
	var faults storetest.Faults
	g := newGate()
	close(g.release)
	e := newEnv(t, storetest.Faulty(store, &faults), agentrt.Config{Owner: "setup:1:s"}, calcAgent(scripted.New("m", gateCall()), registry(t, g.tool())))
	if _, err := e.r.CreateSession(context.Background(), "calc", id, nil); err != nil {
		t.Fatal(err)
	}
	faults.FailCommit(3, false) // the tool's result
	if _, err := agentrt.Collect(e.r.Run(context.Background(), id, agentrt.Input{Text: "go"})); !errors.Is(err, storetest.ErrInjected) {
		t.Fatalf("setup run: %v", err)
	}
	if owner != "" {
		if _, err := store.Acquire(context.Background(), id, owner, time.Hour); err != nil {
			t.Fatal(err)
		}
	}
	return id
}

// Recover resumes the sessions whose process stopped, exactly once across
// runners that call it at the same moment, and leaves alone those whose
// owner is alive.
func TestRecoverExactlyOnce(t *testing.T) {
	clock := storetest.NewClock(time.Now())
	store := memstore.New(memstore.WithClock(clock.Now))
	abandoned := crashed(t, store, "abandoned", "")        // released: the store failed, not the process
	leased := crashed(t, store, "leased", "elsewhere:9:x") // a live owner on another host
	g := newGate()
	close(g.release)
	var runners []*env
	for _, owner := range []string{"r1:1:a", "r2:2:b", "r3:3:c"} {
		runners = append(runners, newEnv(t, store, agentrt.Config{Owner: owner},
			calcAgent(scripted.New("m", scripted.Reply{Text: "recovered"}, scripted.Reply{Text: "recovered"}), registry(t, g.tool()))))
	}
	var mu sync.Mutex
	var runs []*agentrt.Run
	var wg sync.WaitGroup
	for _, e := range runners {
		wg.Go(func() {
			rs, err := e.r.Recover(context.Background())
			if err != nil {
				t.Error(err)
			}
			mu.Lock()
			runs = append(runs, rs...)
			mu.Unlock()
		})
	}
	wg.Wait()
	if len(runs) != 1 || runs[0].SessionID() != abandoned {
		t.Fatalf("recovered %d runs, want exactly %s once", len(runs), abandoned)
	}
	if res, err := runs[0].Wait(context.Background()); err != nil || res.Status != session.StatusDone {
		t.Fatalf("recovered run: %+v %v", res, err)
	}
	if s, _ := store.GetSession(context.Background(), leased); s.Status != session.StatusRunning {
		t.Fatalf("the leased session was touched: %s", s.Status)
	}
	// Once its owner's lease expires, it is recovered too.
	clock.Advance(2 * time.Hour)
	rs, err := runners[0].r.Recover(context.Background())
	if err != nil || len(rs) != 1 || rs[0].SessionID() != leased {
		t.Fatalf("after expiry: %d runs, %v", len(rs), err)
	}
	if res, err := rs[0].Wait(context.Background()); err != nil || res.Status != session.StatusDone {
		t.Fatalf("recovered run: %+v %v", res, err)
	}
	if got := g.ran.Load(); got != 2 {
		t.Errorf("the gate ran %d times on recovery, want 2 (once per session)", got)
	}
	if _, err := newEnv(t, plainStore{memstore.New()}, agentrt.Config{}).r.Recover(context.Background()); errCode(err) != "no_leases" {
		t.Errorf("Recover without leases: %v", err)
	}
}

// plainStore hides the optional capabilities of a store.
type plainStore struct{ session.Store }

// A session that crashes its process every time it is resumed is stopped
// after MaxRecoveries, failed with reason crash_loop; a person's resume
// tries again.
func TestCrashLoop(t *testing.T) {
	store := memstore.New()
	id := crashed(t, store, "s1", "")
	for i := 1; i <= 3; i++ {
		var faults storetest.Faults
		e := newEnv(t, storetest.Faulty(store, &faults), agentrt.Config{MaxRecoveries: 3}, calcAgent(scripted.New("m"), registry(t, newGate().tool())))
		faults.FailCommit(2, false) // the commit after run_resumed: the process "dies" before any progress
		if _, err := agentrt.Collect(e.r.Resume(context.Background(), id)); !errors.Is(err, storetest.ErrInjected) {
			t.Fatalf("resume %d: %v", i, err)
		}
	}
	g := newGate()
	close(g.release)
	e := newEnv(t, store, agentrt.Config{MaxRecoveries: 3}, calcAgent(scripted.New("m", scripted.Reply{Text: "fixed"}), registry(t, g.tool())))
	res := e.resume(t, id)
	if res.Status != session.StatusFailed || res.Err == nil || res.Err.Code != "crash_loop" || g.ran.Load() != 0 {
		t.Fatalf("fourth resume: %+v (gate ran %d)", res, g.ran.Load())
	}
	res = e.resume(t, id)
	if res.Status != session.StatusDone || res.Text != "fixed" {
		t.Fatalf("a person's resume: %+v", res)
	}
}

// Start runs a turn in the background; watchers see its events in order,
// tokens included, and a watcher that reads nothing does not hold it up.
func TestStartWatchWait(t *testing.T) {
	m := scripted.New("m",
		scripted.Reply{Text: "warming up"},
		scripted.Reply{ToolCalls: []scripted.Call{scripted.ToolCall("calculator", `{"expression":"2*3"}`)}},
		scripted.Reply{Text: "the answer is six", Chunks: 4},
	)
	e := newEnv(t, nil, agentrt.Config{}, calcAgent(m, registry(t)))
	id := e.session(t, "calc")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	e.run(t, id, "warm up") // seq 1 to 6: a watcher from 0 sees them at once
	const warm = 6

	// A watcher that stops reading after the first event: its inbox
	// fills, the run goes on.
	stalled := make(chan struct{})
	go func() {
		defer close(stalled)
		for range e.r.Watch(ctx, id, 0) {
			<-ctx.Done()
			return
		}
	}()

	type got struct {
		evs []*session.Event
		err error
	}
	watched := make(chan got, 1)
	ready := make(chan struct{})
	go func() {
		var g got
		for ev, err := range e.r.Watch(ctx, id, 0) {
			if err != nil {
				g.err = err
				break
			}
			if ev.Seq == warm {
				close(ready) // subscribed: it has seen the log so far
				continue
			}
			if ev.Seq > warm || ev.Seq == 0 {
				g.evs = append(g.evs, ev)
			}
			if ev.Type == session.TypeRunFinished && ev.Seq > warm {
				break
			}
		}
		watched <- g
	}()
	wait(t, ready)
	h, err := e.r.Start(ctx, id, agentrt.Input{Text: "2*3?"})
	if err != nil {
		t.Fatal(err)
	}
	res, err := h.Wait(ctx)
	if err != nil || res.Status != session.StatusDone || res.Text != "the answer is six" || res.RunID != h.ID() {
		t.Fatalf("wait: %+v %v", res, err)
	}
	g := wait(t, watched)
	if g.err != nil {
		t.Fatal(g.err)
	}
	log := storedLog(t, e.store, id)[warm:]
	var committed []*session.Event
	var tokens []string
	for _, ev := range g.evs {
		if ev.Seq == 0 {
			if tok, ok := ev.Data.(*session.Token); ok { // not a tool_call_delta
				tokens = append(tokens, tok.Text)
			}
			continue
		}
		committed = append(committed, ev)
	}
	if diff := cmp.Diff(types(log), types(committed)); diff != "" {
		t.Errorf("watched events (-log +watched):\n%s", diff)
	}
	if s := strings.Join(tokens, ""); s != "the answer is six" {
		t.Errorf("tokens %q", tokens)
	}
	// Tokens come between the model_started and the model_finished of
	// their call.
	in := false
	for _, ev := range g.evs {
		switch ev.Type {
		case session.TypeModelStarted:
			in = true
		case session.TypeModelFinished:
			in = false
		case session.TypeToken:
			if !in {
				t.Errorf("token %+v outside a model call", ev.Data)
			}
		}
	}
	// Run.Events gives the run's events, from the store once it is over.
	var again []session.Type
	for ev, err := range h.Events(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		again = append(again, ev.Type)
	}
	if diff := cmp.Diff(types(log), again); diff != "" {
		t.Errorf("Run.Events after the run (-log +events):\n%s", diff)
	}
	cancel()
	<-stalled
}

// A watcher in another runner (another process) sees the commits through
// the store's Follower, and an unknown session is not_found.
func TestWatchFromAnotherRunner(t *testing.T) {
	store := memstore.New()
	e := newEnv(t, store, agentrt.Config{}, calcAgent(scripted.New("m", scripted.Reply{Text: "hello"}), nil))
	other := newEnv(t, store, agentrt.Config{}, calcAgent(scripted.New("m"), nil))
	id := e.session(t, "calc")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	seen := make(chan []session.Type, 1)
	subscribed := make(chan struct{})
	go func() {
		var ts []session.Type
		for ev, err := range other.r.Watch(ctx, id, 0) {
			if err != nil {
				t.Error(err)
				break
			}
			ts = append(ts, ev.Type)
			if ev.Type == session.TypeRunFinished {
				break
			}
		}
		seen <- ts
	}()
	close(subscribed)
	e.run(t, id, "hi")
	if diff := cmp.Diff(types(storedLog(t, store, id)), wait(t, seen)); diff != "" {
		t.Errorf("(-log +watched):\n%s", diff)
	}
	for _, err := range other.r.Watch(ctx, "nope", 0) {
		if errCode(err) != "not_found" {
			t.Errorf("Watch(unknown): %v", err)
		}
	}
}

// Interrupt stops a run at its next safe point: a model call in flight is
// abandoned, the run ends interrupted, and the next turn finds a coherent
// history.
func TestInterruptDuringModelCall(t *testing.T) {
	m := scripted.New("m",
		scripted.Reply{Text: "too slow", Delay: time.Hour},
		scripted.Reply{Text: "fresh answer", Expect: &scripted.Expect{LastUserContains: "newer"}},
	)
	e := newEnv(t, nil, agentrt.Config{}, calcAgent(m, nil))
	id := e.session(t, "calc")
	ctx := context.Background()
	started := make(chan struct{})
	var once sync.Once
	e2hooks := calcAgent(m, nil)
	_ = e2hooks
	h, err := e.r.Start(ctx, id, agentrt.Input{Text: "first"})
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		for ev := range h.Events(ctx) {
			if ev != nil && ev.Type == session.TypeModelStarted {
				once.Do(func() { close(started) })
			}
		}
	}()
	wait(t, started)
	h.Interrupt("newer input")
	res, err := h.Wait(ctx)
	if err != nil || res.Status != session.StatusInterrupted {
		t.Fatalf("wait: %+v %v", res, err)
	}
	log := storedLog(t, e.store, id)
	n := len(log)
	if log[n-2].Type != session.TypeInterrupted || log[n-2].Data.(*session.Interrupted).Reason != "newer input" {
		t.Errorf("log ends %v", types(log[n-2:]))
	}
	if res := e.run(t, id, "newer question"); res.Status != session.StatusDone || res.Text != "fresh answer" {
		t.Fatalf("next turn: %+v", res)
	}
}

// Interrupted between a model reply and its tool calls: the calls that
// did not start are answered "not run", so the history stays coherent.
func TestInterruptBeforeTools(t *testing.T) {
	m := scripted.New("m",
		scripted.Reply{ToolCalls: []scripted.Call{scripted.ToolCall("calculator", `{"expression":"1+1"}`)}},
		scripted.Reply{Text: "ok", Expect: &scripted.Expect{LastToolResultContains: "not run"}},
	)
	a := calcAgent(m, registry(t))
	var r *agentrt.Runner
	var once sync.Once
	a.Hooks.AfterModel(0, func(ctx context.Context, info agentrt.HookInfo, resp *model.Response) (*model.Response, error) {
		if h, ok := r.Active(ctx, info.SessionID); ok {
			once.Do(func() { h.Interrupt("stop") })
		}
		return nil, nil
	})
	e := newEnv(t, nil, agentrt.Config{}, a)
	r = e.r
	id := e.session(t, "calc")
	res := e.run(t, id, "go")
	if res.Status != session.StatusInterrupted {
		t.Fatalf("run: %+v", res)
	}
	rs := toolResults(res.Events)
	if len(rs) != 1 || rs[0].OK || !strings.Contains(rs[0].Error, "not run") {
		t.Fatalf("results %+v", rs)
	}
	if res := e.resume(t, id); res.Status != session.StatusDone {
		t.Fatalf("resume: %+v", res)
	}
}

func TestCancelHandle(t *testing.T) {
	e := newEnv(t, nil, agentrt.Config{}, calcAgent(scripted.New("m", scripted.Reply{Text: "x", Delay: time.Hour}), nil))
	id := e.session(t, "calc")
	h, err := e.r.Start(context.Background(), id, agentrt.Input{Text: "go"})
	if err != nil {
		t.Fatal(err)
	}
	h.Cancel()
	res, err := h.Wait(context.Background())
	if err != nil || res.Status != session.StatusCanceled {
		t.Fatalf("wait: %+v %v", res, err)
	}
	if err := e.r.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := e.r.Start(context.Background(), id, agentrt.Input{Text: "go"}); errCode(err) != "closed" {
		t.Errorf("start after Close: %v", err)
	}
}

// tickPolicy keeps its own state, folded from its executor's custom
// events: it ticks three times, then finishes with the count.
type tickPolicy struct{}

type tickState struct {
	Ticks int `json:"ticks"`
}

type tick struct {
	N int `json:"n"`
}

func (*tick) EventType() session.Type { return "tick" }

func (s *tickState) Apply(e *session.Event) error {
	if t, ok, err := session.As[tick](e); err != nil {
		return err
	} else if ok {
		s.Ticks = t.N
	}
	return nil
}

func (tickPolicy) NewPolicyState() agentrt.PolicyState { return &tickState{} }

func (tickPolicy) Next(_ context.Context, _ *agentrt.Agent, s *agentrt.State) (agentrt.Instruction, error) {
	n := s.Policy().(*tickState).Ticks
	if n >= 3 {
		return agentrt.Instruction{Kind: agentrt.KindFinish, Text: strings.Repeat("tick ", n)}, nil
	}
	return agentrt.Instruction{Kind: "tick"}, nil
}

func TestPolicyState(t *testing.T) {
	a := calcAgent(scripted.New("m"), nil)
	a.Policy = tickPolicy{}
	a.Executors = map[agentrt.Kind]agentrt.Executor{"tick": func(_ context.Context, x *agentrt.Exec, _ agentrt.Instruction) error {
		x.Emit(&tick{N: x.State().Policy().(*tickState).Ticks + 1})
		return nil
	}}
	store := memstore.New()
	e := newEnv(t, store, agentrt.Config{SnapshotEvery: 2}, a)
	id := e.session(t, "calc")
	res := e.run(t, id, "go")
	if res.Status != session.StatusDone || res.Text != "tick tick tick " {
		t.Fatalf("run: %+v", res)
	}
	snap, err := store.LoadSnapshot(context.Background(), id)
	if err != nil || snap == nil || !strings.Contains(string(snap.Data), `"policy":{"ticks":3}`) {
		t.Fatalf("snapshot %s (%v) lacks the policy's state", snap.Data, err)
	}
	// Rebuilt from the snapshot and from the whole log, the same.
	st, err := e.r.Load(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	replayed := agentrt.NewState(id, "calc")
	if err := replayed.AttachPolicy(tickPolicy{}); err != nil {
		t.Fatal(err)
	}
	for _, ev := range storedLog(t, store, id) {
		if err := replayed.Apply(ev); err != nil {
			t.Fatal(err)
		}
	}
	if diff := cmp.Diff(replayed.Policy(), st.Policy()); diff != "" {
		t.Errorf("policy state (-replayed +loaded):\n%s", diff)
	}
}

// Any executor calls the model through Exec.Complete, with the retries,
// hooks and events of call_model, and the conversation is left as it was.
func TestExecComplete(t *testing.T) {
	m := scripted.New("m",
		scripted.Reply{Error: "overloaded", ErrorCode: model.CodeServer},
		scripted.Reply{Text: "1. look 2. leap", Expect: &scripted.Expect{LastUserContains: "plan for: go"}},
	).Record()
	a := calcAgent(m, nil)
	a.Retry = agentrt.RetryPolicy{InitialDelay: time.Millisecond, MaxDelay: time.Millisecond}
	var hooked atomic.Int32
	a.Hooks.BeforeModel(0, func(context.Context, agentrt.HookInfo, *model.Request) (*model.Request, error) {
		hooked.Add(1)
		return nil, nil
	})
	a.Policy = agentrt.PolicyFunc(func(_ context.Context, _ *agentrt.Agent, s *agentrt.State) (agentrt.Instruction, error) {
		return agentrt.Instruction{Kind: "plan"}, nil
	})
	a.Executors = map[agentrt.Kind]agentrt.Executor{"plan": func(ctx context.Context, x *agentrt.Exec, _ agentrt.Instruction) error {
		req := &model.Request{Messages: []model.Message{model.TextMessage(model.RoleUser, "plan for: "+x.State().Messages[0].Text())}}
		resp, err := x.Complete(ctx, agentrt.ModelCall{Request: req, Purpose: "plan"})
		if err != nil {
			return err
		}
		return agentrt.Finish(ctx, x, agentrt.Instruction{Text: resp.Message.Text()})
	}}
	e := newEnv(t, nil, agentrt.Config{}, a)
	id := e.session(t, "calc")
	res := e.run(t, id, "go")
	if res.Status != session.StatusDone || res.Text != "1. look 2. leap" {
		t.Fatalf("run: %+v", res)
	}
	want := []session.Type{session.TypeRunStarted, session.TypeModelStarted, session.TypeError, session.TypeModelStarted,
		session.TypeModelFinished, session.TypeFinal, session.TypeRunFinished}
	if diff := cmp.Diff(want, types(res.Events)); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	for _, ev := range res.Events {
		switch d := ev.Data.(type) {
		case *session.ModelStarted:
			if d.Purpose != "plan" {
				t.Errorf("model_started purpose %q", d.Purpose)
			}
		case *session.ModelFinished:
			if d.Purpose != "plan" {
				t.Errorf("model_finished purpose %q", d.Purpose)
			}
		}
	}
	st, _ := e.r.Load(context.Background(), id)
	if len(st.Messages) != 1 || st.Round != 0 {
		t.Errorf("the history changed: %d messages, round %d", len(st.Messages), st.Round)
	}
	if hooked.Load() != 1 {
		t.Errorf("before-model hook ran %d times", hooked.Load())
	}
}

// An agent with NoStream asks for whole replies.
func TestNoStream(t *testing.T) {
	a := calcAgent(model.Unstreamed(scripted.New("m", scripted.Reply{Text: "whole reply", Chunks: 3})), nil)
	a.NoStream = true
	e := newEnv(t, nil, agentrt.Config{}, a)
	id := e.session(t, "calc")
	var tokens int
	var mode string
	for ev, err := range e.r.Run(context.Background(), id, agentrt.Input{Text: "hi"}) {
		if err != nil {
			t.Fatal(err)
		}
		switch d := ev.Data.(type) {
		case *session.Token:
			tokens++
		case *session.ModelStarted:
			mode = d.Mode
		}
	}
	if tokens != 1 || mode != "generate" {
		t.Errorf("%d tokens, mode %q; want 1 and generate", tokens, mode)
	}
}

// Input.Agent creates the session on first use, and refuses another
// agent's session; Input.Parent is recorded in run_started.
func TestInputAgentAndParent(t *testing.T) {
	other := calcAgent(scripted.New("m"), nil)
	other.Name = "other"
	e := newEnv(t, nil, agentrt.Config{}, calcAgent(scripted.New("m", scripted.Reply{Text: "hi"}), nil), other)
	parent := &session.ParentRef{SessionID: "p", CallID: "call_1"}
	res, err := agentrt.Collect(e.r.Run(context.Background(), "fresh", agentrt.Input{Text: "hello", Agent: "calc", Parent: parent}))
	if err != nil || res.Status != session.StatusDone {
		t.Fatalf("run: %+v %v", res, err)
	}
	if d := res.Events[0].Data.(*session.RunStarted); d.Parent == nil || *d.Parent != *parent {
		t.Errorf("run_started parent %+v", d.Parent)
	}
	_, err = agentrt.Collect(e.r.Run(context.Background(), "fresh", agentrt.Input{Text: "hello", Agent: "other"}))
	if errCode(err) != "wrong_agent" || !strings.Contains(err.Error(), `belongs to agent "calc"`) {
		t.Errorf("another agent's session: %v", err)
	}
}

// Prompt and select requests a policy asks: validated answers, recorded
// for the policy to fold.
func TestPromptAndSelect(t *testing.T) {
	var asked atomic.Int32
	a := calcAgent(scripted.New("m"), nil)
	a.Policy = agentrt.PolicyFunc(func(_ context.Context, _ *agentrt.Agent, s *agentrt.State) (agentrt.Instruction, error) {
		switch {
		case len(s.Requests) > 0:
			return agentrt.Instruction{Kind: agentrt.KindWait}, nil
		case asked.Load() == 0:
			asked.Add(1)
			return agentrt.Instruction{Kind: agentrt.KindAskHuman, Ask: &agentrt.Ask{Kind: session.RequestSelect, Question: "Which region?", Options: []string{"eu", "us"}}}, nil
		case asked.Load() == 1:
			asked.Add(1)
			return agentrt.Instruction{Kind: agentrt.KindAskHuman, Ask: &agentrt.Ask{Kind: session.RequestPrompt, Question: "Why?"}}, nil
		}
		return agentrt.Instruction{Kind: agentrt.KindFinish, Text: "thanks"}, nil
	})
	e := newEnv(t, nil, agentrt.Config{}, a)
	id := e.session(t, "calc")
	res := e.run(t, id, "go")
	if res.Status != session.StatusWaiting {
		t.Fatalf("run: %+v", res)
	}
	st, _ := e.r.Load(context.Background(), id)
	q := st.Requests[0]
	before := storedLog(t, e.store, id)
	for _, tc := range []struct {
		res  agentrt.Resolution
		code string
	}{
		{agentrt.Resolution{Selected: []string{"asia"}}, "bad_answer"},
		{agentrt.Resolution{Selected: []string{"eu", "us"}}, "bad_answer"},
		{agentrt.Resolution{}, "empty_answer"},
		{agentrt.Resolution{Decision: "approve"}, "bad_decision"},
	} {
		if _, err := e.r.Resolve(context.Background(), id, q.ID, tc.res); errCode(err) != tc.code {
			t.Errorf("%+v: %v, want %s", tc.res, err, tc.code)
		}
	}
	if diff := cmp.Diff(before, storedLog(t, e.store, id)); diff != "" {
		t.Errorf("bad answers changed the log:\n%s", diff)
	}
	ev, err := e.r.Resolve(context.Background(), id, q.ID, agentrt.Resolution{Selected: []string{"us"}, By: "ana"})
	if err != nil {
		t.Fatal(err)
	}
	if d := ev.Data.(*session.InputResolved); d.Decision != "answer" || !cmp.Equal(d.Selected, []string{"us"}) || d.By != "ana" {
		t.Errorf("input_resolved %+v", d)
	}
	res = e.resume(t, id)
	st, _ = e.r.Load(context.Background(), id)
	if res.Status != session.StatusWaiting || st.Requests[0].Kind != session.RequestPrompt {
		t.Fatalf("second question: %+v", res)
	}
	if _, err := e.r.Resolve(context.Background(), id, st.Requests[0].ID, agentrt.Resolution{Text: "latency"}); err != nil {
		t.Fatal(err)
	}
	if res := e.resume(t, id); res.Status != session.StatusDone {
		t.Fatalf("done: %+v", res)
	}
	_, err = e.r.Resolve(context.Background(), id, q.ID, agentrt.Resolution{Selected: []string{"eu"}})
	if errCode(err) != "already_resolved" || !strings.Contains(err.Error(), "already resolved by ana at") {
		t.Errorf("resolving again: %v", err)
	}
}

// Two resolutions of one request at the same moment: exactly one wins.
func TestResolveConcurrently(t *testing.T) {
	var runs atomic.Int32
	m := scripted.New("m", scripted.Reply{ToolCalls: []scripted.Call{scripted.ToolCall("deploy", `{"env":"prod"}`)}})
	store := memstore.New()
	e := newEnv(t, store, agentrt.Config{}, calcAgent(m, registry(t, askTool(t, &runs))))
	id := e.session(t, "calc")
	res := e.run(t, id, "deploy")
	rid := res.Events[len(res.Events)-2].Data.(*session.InputRequired).RequestID
	var runners []*env
	for range 4 {
		runners = append(runners, newEnv(t, store, agentrt.Config{}, calcAgent(scripted.New("m"), registry(t, askTool(t, &runs)))))
	}
	var wins, already atomic.Int32
	var wg sync.WaitGroup
	for _, r := range runners {
		wg.Go(func() {
			_, err := r.r.Resolve(context.Background(), id, rid, agentrt.Resolution{Decision: "approve"})
			switch errCode(err) {
			case "":
				wins.Add(1)
			case "already_resolved":
				already.Add(1)
			default:
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if wins.Load() != 1 || already.Load() != 3 {
		t.Errorf("%d won, %d already resolved; want 1 and 3", wins.Load(), already.Load())
	}
	var resolved int
	for _, ev := range storedLog(t, store, id) {
		if ev.Type == session.TypeInputResolved {
			resolved++
		}
	}
	if resolved != 1 {
		t.Errorf("%d input_resolved events", resolved)
	}
}

var _ = json.RawMessage(nil)
var _ = cmpopts.EquateEmpty

func TestSendAndAsk(t *testing.T) {
	m := scripted.New("m",
		scripted.Reply{Text: "5"},
		scripted.Reply{Error: "boom"},
		scripted.Reply{Text: "four"},
		scripted.Reply{ToolCalls: []scripted.Call{scripted.ToolCall("deploy", `{"env":"prod"}`)}},
	)
	var runs atomic.Int32
	e := newEnv(t, nil, agentrt.Config{}, calcAgent(m, registry(t, askTool(t, &runs))))
	ctx := context.Background()
	res, err := e.r.Send(ctx, "chat", agentrt.Input{Text: "2+3?", Agent: "calc"})
	if err != nil || res.Text != "5" {
		t.Fatalf("Send: %+v %v", res, err)
	}
	_, err = e.r.Send(ctx, "chat", agentrt.Input{Text: "again"})
	var re *agentrt.RunError
	if !errors.As(err, &re) || re.Status != session.StatusFailed || re.Event == nil || !strings.Contains(err.Error(), "boom") {
		t.Fatalf("a failed turn: %v", err)
	}
	// A throwaway session is gone afterwards.
	res, err = e.r.Ask(ctx, "calc", "2+2?")
	if err != nil || res.Text != "four" {
		t.Fatalf("Ask: %+v %v", res, err)
	}
	if _, err := e.store.GetSession(ctx, res.SessionID); !errors.Is(err, session.ErrNotFound) {
		t.Errorf("the throwaway session is still there: %v", err)
	}
	// Unless it waits for a person: then it is kept, to be continued.
	_, err = e.r.Ask(ctx, "calc", "deploy")
	if !errors.As(err, &re) || re.Status != session.StatusWaiting || len(re.Requests) != 1 {
		t.Fatalf("Ask of a turn that waits: %v", err)
	}
	if _, err := e.store.GetSession(ctx, re.SessionID); err != nil {
		t.Errorf("the waiting session was deleted: %v", err)
	}
}

// Tenants never see each other: the same id is two sessions, and a run,
// a resume, a watch, a resolution from another tenant find nothing.
// Recover resumes the crashed sessions of every tenant.
func TestTenants(t *testing.T) {
	store := memstore.New()
	m := scripted.New("m", scripted.Reply{Text: "for acme"}, scripted.Reply{Text: "for globex"})
	e := newEnv(t, store, agentrt.Config{}, calcAgent(m, nil))
	acme := session.WithTenant(context.Background(), "acme")
	globex := session.WithTenant(context.Background(), "globex")
	for _, ctx := range []context.Context{acme, globex} {
		if _, err := e.r.CreateSession(ctx, "calc", "shared-id", nil); err != nil {
			t.Fatal(err)
		}
	}
	res, err := agentrt.Collect(e.r.Run(acme, "shared-id", agentrt.Input{Text: "hi"}))
	if err != nil || res.Text != "for acme" {
		t.Fatalf("acme's run: %+v %v", res, err)
	}
	if s, _ := store.GetSession(globex, "shared-id"); s.LastSeq != 0 {
		t.Errorf("acme's run wrote into globex's session: %+v", s)
	}
	if _, err := agentrt.Collect(e.r.Resume(context.Background(), "shared-id")); errCode(err) != "not_found" {
		t.Errorf("resume in the default tenant: %v", err)
	}
	for _, err := range e.r.Watch(session.WithTenant(context.Background(), "initech"), "shared-id", 0) {
		if errCode(err) != "not_found" {
			t.Errorf("watch from another tenant: %v", err)
		}
	}
	// A crashed session in each tenant: Recover finds both.
	crashedIn := func(ctx context.Context, id string) {
		var faults storetest.Faults
		g := newGate()
		close(g.release)
		ce := newEnv(t, storetest.Faulty(store, &faults), agentrt.Config{}, calcAgent(scripted.New("m", gateCall()), registry(t, g.tool())))
		if _, err := ce.r.CreateSession(ctx, "calc", id, nil); err != nil {
			t.Fatal(err)
		}
		faults.FailCommit(3, false)
		agentrt.Collect(ce.r.Run(ctx, id, agentrt.Input{Text: "go"}))
	}
	crashedIn(acme, "c1")
	crashedIn(globex, "c1")
	for _, ctx := range []context.Context{acme, globex} {
		if s, err := store.GetSession(ctx, "c1"); err != nil || s.Status != session.StatusRunning {
			t.Fatalf("%s/c1 after the crash: %+v %v", session.TenantOf(ctx), s, err)
		}
	}
	g := newGate()
	close(g.release)
	re := newEnv(t, store, agentrt.Config{}, calcAgent(scripted.New("m", scripted.Reply{Text: "ok"}, scripted.Reply{Text: "ok"}), registry(t, g.tool())))
	runs, err := re.r.Recover(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, h := range runs {
		if res, err := h.Wait(context.Background()); err != nil || res.Status != session.StatusDone {
			t.Errorf("%s/%s: %+v %v", h.Tenant(), h.SessionID(), res, err)
		}
		got = append(got, h.Tenant()+"/"+h.SessionID())
	}
	if diff := cmp.Diff([]string{"acme/c1", "globex/c1"}, got, cmpopts.SortSlices(func(a, b string) bool { return a < b })); diff != "" {
		t.Errorf("recovered (-want +got):\n%s", diff)
	}
}

// A fork copies the log up to a seq and runs on its own; a fork of a
// waiting session keeps its pending request.
func TestFork(t *testing.T) {
	var runs atomic.Int32
	m := scripted.New("m",
		scripted.Reply{ToolCalls: []scripted.Call{scripted.ToolCall("deploy", `{"env":"prod"}`)}},
		scripted.Reply{Text: "deployed"},
	)
	e := newEnv(t, nil, agentrt.Config{}, calcAgent(m, registry(t, askTool(t, &runs))))
	ctx := context.Background()
	id := e.session(t, "calc")
	res := e.run(t, id, "deploy")
	if res.Status != session.StatusWaiting {
		t.Fatalf("run: %+v", res)
	}
	last := res.Events[len(res.Events)-1].Seq
	f, err := e.r.Fork(ctx, id, last, "fork1")
	if err != nil {
		t.Fatal(err)
	}
	if f.Status != session.StatusWaiting || f.LastSeq != last || f.Metadata["forked_from"] != id {
		t.Fatalf("fork: %+v", f)
	}
	st, err := e.r.Load(ctx, "fork1")
	if err != nil || len(st.Requests) != 1 {
		t.Fatalf("the fork's pending requests: %+v %v", st, err)
	}
	// The fork is resolved and finished on its own; the original waits on.
	if _, err := e.r.Resolve(ctx, "fork1", st.Requests[0].ID, agentrt.Resolution{Decision: "approve"}); err != nil {
		t.Fatal(err)
	}
	if res := e.resume(t, "fork1"); res.Status != session.StatusDone || res.Text != "deployed" {
		t.Fatalf("fork resumed: %+v", res)
	}
	if s, _ := e.store.GetSession(ctx, id); s.Status != session.StatusWaiting {
		t.Errorf("the original is %s", s.Status)
	}
	// A fork earlier in the log: before the model's reply, mid-run.
	early, err := e.r.Fork(ctx, id, 3, "")
	if err != nil || early.Status != session.StatusRunning || early.LastSeq != 3 {
		t.Fatalf("early fork: %+v %v", early, err)
	}
	for _, bad := range []int64{0, -1, last + 1} {
		if _, err := e.r.Fork(ctx, id, bad, ""); errCode(err) != "bad_seq" || !strings.Contains(err.Error(), "cannot fork at") {
			t.Errorf("fork at %d: %v", bad, err)
		}
	}
	if _, err := e.r.Fork(ctx, "nope", 1, ""); errCode(err) != "not_found" {
		t.Errorf("fork of an unknown session: %v", err)
	}
	if _, err := e.r.Fork(ctx, id, 1, "fork1"); errCode(err) != "session_exists" {
		t.Errorf("fork onto an existing id: %v", err)
	}
	storedLog(t, e.store, "fork1")
}

// The model asks the user with the ask_user tool: the call becomes a
// prompt (or a select, with options), and the answer is its result.
func TestAskUserTool(t *testing.T) {
	m := scripted.New("m",
		scripted.Reply{ToolCalls: []scripted.Call{scripted.ToolCall("ask_user", `{"question":"Which region?","options":["eu","us"]}`)}},
		scripted.Reply{ToolCalls: []scripted.Call{scripted.ToolCall("ask_user", `{"question":"Why?"}`)}, Expect: &scripted.Expect{LastToolResultContains: `{"selected":["eu"]}`}},
		scripted.Reply{Text: "eu, for latency", Expect: &scripted.Expect{LastToolResultContains: `{"answer":"latency"}`}},
	)
	reg, err := tool.NewRegistry(builtin.AskUser())
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, nil, agentrt.Config{}, calcAgent(m, reg))
	ctx := context.Background()
	id := e.session(t, "calc")
	res := e.run(t, id, "deploy somewhere")
	st, _ := e.r.Load(ctx, id)
	if res.Status != session.StatusWaiting || len(st.Requests) != 1 || st.Requests[0].Kind != session.RequestSelect || st.Requests[0].Question != "Which region?" {
		t.Fatalf("first question: %+v %+v", res, st.Requests)
	}
	if _, err := e.r.Resolve(ctx, id, st.Requests[0].ID, agentrt.Resolution{Selected: []string{"eu"}}); err != nil {
		t.Fatal(err)
	}
	res = e.resume(t, id)
	st, _ = e.r.Load(ctx, id)
	if res.Status != session.StatusWaiting || st.Requests[0].Kind != session.RequestPrompt {
		t.Fatalf("second question: %+v %+v", res, st.Requests)
	}
	if _, err := e.r.Resolve(ctx, id, st.Requests[0].ID, agentrt.Resolution{Text: "latency"}); err != nil {
		t.Fatal(err)
	}
	if res := e.resume(t, id); res.Status != session.StatusDone || res.Text != "eu, for latency" {
		t.Fatalf("done: %+v", res)
	}
}

// A runner's cached state is checked against the store: turns taken by
// another runner (another process) in between are not lost.
func TestStateCacheAcrossRunners(t *testing.T) {
	store := memstore.New()
	reply := func(n int) []scripted.Reply {
		var rs []scripted.Reply
		for i := range n {
			rs = append(rs, scripted.Reply{Text: fmt.Sprint("answer ", i)})
		}
		return rs
	}
	// The whole history is compared: compaction off.
	uncompacted := func(ag *agentrt.Agent) *agentrt.Agent { ag.Compaction.Off = true; return ag }
	a := newEnv(t, store, agentrt.Config{}, uncompacted(calcAgent(scripted.New("m", reply(3)...), nil)))
	b := newEnv(t, store, agentrt.Config{}, uncompacted(calcAgent(scripted.New("m", reply(100)...), nil)))
	id := a.session(t, "calc")
	a.run(t, id, "one")
	b.run(t, id, "two")
	a.run(t, id, "three") // a's cache missed b's turn: it replays it
	for i := 0; i < 70; i++ {
		b.run(t, id, "more") // more than a snapshot's worth
	}
	a.run(t, id, "last")
	st, err := a.r.Load(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	var users []string
	for _, m := range st.Messages {
		if m.Role == model.RoleUser {
			users = append(users, m.Text())
		}
	}
	if len(users) != 74 || users[0] != "one" || users[1] != "two" || users[2] != "three" || users[73] != "last" {
		t.Errorf("user messages %d: %v...", len(users), users[:3])
	}
	fresh := newEnv(t, store, agentrt.Config{StateCache: -1}, calcAgent(scripted.New("m"), nil))
	want, err := fresh.r.Load(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want.Messages, st.Messages, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("cached and loaded differ:\n%s", diff)
	}
}

// A request with a deadline gets its default decision once it passes,
// from the next process that touches the session, or from Recover.
func TestRequestExpiry(t *testing.T) {
	for _, via := range []string{"resume", "recover"} {
		t.Run(via, func(t *testing.T) {
			var runs atomic.Int32
			clock := storetest.NewClock(time.Date(2026, 5, 1, 9, 0, 0, 0, time.UTC))
			m := scripted.New("m",
				scripted.Reply{ToolCalls: []scripted.Call{scripted.ToolCall("deploy", `{"env":"prod"}`)}},
				scripted.Reply{Text: "not deployed", Expect: &scripted.Expect{LastToolResultContains: "rejected this call: expired"}},
			)
			a := calcAgent(m, registry(t, askTool(t, &runs)))
			a.Approval = agentrt.ApprovalPolicy{ExpiresFor: map[string]time.Duration{"dep*": time.Hour}}
			e := newEnv(t, nil, agentrt.Config{Now: clock.Now}, a)
			id := e.session(t, "calc")
			res := e.run(t, id, "deploy")
			req := res.Events[len(res.Events)-2].Data.(*session.InputRequired)
			if req.Expires == nil || !req.Expires.Equal(clock.Now().Add(time.Hour)) {
				t.Fatalf("request expires %v", req.Expires)
			}
			// Before the deadline nothing happens.
			if _, err := agentrt.Collect(e.r.Resume(context.Background(), id)); errCode(err) != "waiting" {
				t.Fatalf("resume before the deadline: %v", err)
			}
			clock.Advance(time.Hour)
			switch via {
			case "resume":
				res = e.resume(t, id)
			case "recover":
				runs, err := e.r.Recover(context.Background())
				if err != nil || len(runs) != 1 {
					t.Fatalf("recover: %d runs, %v", len(runs), err)
				}
				r, err := runs[0].Wait(context.Background())
				if err != nil {
					t.Fatal(err)
				}
				res = r
			}
			if res.Status != session.StatusDone || res.Text != "not deployed" || runs.Load() != 0 {
				t.Fatalf("after the deadline: %+v (deploy ran %d)", res, runs.Load())
			}
			var d *session.InputResolved
			for _, ev := range storedLog(t, e.store, id) {
				if x, ok := ev.Data.(*session.InputResolved); ok {
					d = x
				}
			}
			if d == nil || d.By != "system" || d.Reason != "expired" || d.Decision != "reject" {
				t.Errorf("resolution %+v", d)
			}
		})
	}
}

// Standing decisions: "always" answers stand for later calls, in the
// session or for the agent, are recorded, listed and revocable.
func TestStandingDecisions(t *testing.T) {
	var runs atomic.Int32
	deployCall := func(env string) scripted.Reply {
		return scripted.Reply{ToolCalls: []scripted.Call{scripted.ToolCall("deploy", fmt.Sprintf(`{"env":%q}`, env))}}
	}
	ok := scripted.Reply{Text: "ok"}
	m := scripted.New("m",
		deployCall("prod"), ok, // asks; approved always (session, tool)
		deployCall("staging"), ok, // no question: the rule stands
		deployCall("prod"), ok, // new session: asks; approved always for the agent, these arguments
		deployCall("prod"), ok, // third session: the agent rule stands
		deployCall("dev"), ok, // other arguments: asks
	)
	e := newEnv(t, nil, agentrt.Config{}, calcAgent(m, registry(t, askTool(t, &runs))))
	ctx := context.Background()
	approveAlways := func(id string, a agentrt.Always) {
		t.Helper()
		st, err := e.r.Load(ctx, id)
		if err != nil || len(st.Requests) != 1 {
			t.Fatalf("%s: requests %+v %v", id, st, err)
		}
		if _, err := e.r.Resolve(ctx, id, st.Requests[0].ID, agentrt.Resolution{Decision: "approve", By: "ana", Always: &a}); err != nil {
			t.Fatal(err)
		}
		if res := e.resume(t, id); res.Status != session.StatusDone {
			t.Fatalf("%s: %+v", id, res)
		}
	}
	s1 := e.session(t, "calc")
	if res := e.run(t, s1, "deploy prod"); res.Status != session.StatusWaiting {
		t.Fatalf("%+v", res)
	}
	approveAlways(s1, agentrt.Always{})
	res := e.run(t, s1, "deploy staging")
	if res.Status != session.StatusDone || runs.Load() != 2 {
		t.Fatalf("the session rule did not stand: %+v (runs %d)", res, runs.Load())
	}
	var ruled string
	for _, ev := range res.Events {
		if d, ok := ev.Data.(*session.ToolCall); ok {
			ruled = d.Rule
		}
	}
	if ruled == "" {
		t.Error("the tool_call does not name the rule that approved it")
	}

	s2 := e.session(t, "calc")
	if res := e.run(t, s2, "deploy prod"); res.Status != session.StatusWaiting {
		t.Fatalf("a new session asks again: %+v", res)
	}
	approveAlways(s2, agentrt.Always{Scope: "agent", Match: "arguments"})
	s3 := e.session(t, "calc")
	if res := e.run(t, s3, "deploy prod"); res.Status != session.StatusDone {
		t.Fatalf("the agent rule did not stand in another session: %+v", res)
	}
	if res := e.run(t, s3, "deploy dev"); res.Status != session.StatusWaiting {
		t.Fatalf("other arguments should ask: %+v", res)
	}
	rules, err := e.r.Rules(ctx, s3)
	if err != nil || len(rules) != 1 || rules[0].Scope != "agent" || string(rules[0].Arguments) != `{"env":"prod"}` || rules[0].By != "ana" {
		t.Fatalf("rules of s3: %+v %v", rules, err)
	}
	// Revoked: it no longer stands.
	if err := e.r.RevokeRule(ctx, s3, rules[0].ID, "bob", "too broad"); err != nil {
		t.Fatal(err)
	}
	if rules, _ := e.r.AgentRules(ctx, "calc"); len(rules) != 0 {
		t.Errorf("agent rules after revocation: %+v", rules)
	}
	s1rules, _ := e.r.Rules(ctx, s1)
	if len(s1rules) != 1 || s1rules[0].Scope != "session" {
		t.Fatalf("s1 rules: %+v", s1rules)
	}
	if err := e.r.RevokeRule(ctx, s1, s1rules[0].ID, "bob", ""); err != nil {
		t.Fatal(err)
	}
	if rules, _ := e.r.Rules(ctx, s1); len(rules) != 0 {
		t.Errorf("s1 rules after revocation: %+v", rules)
	}
	if err := e.r.RevokeRule(ctx, s1, "rule_nope", "bob", ""); errCode(err) != "unknown_rule" {
		t.Errorf("revoking an unknown rule: %v", err)
	}
	// Bad "always": on an edit, with an unknown scope.
	st, _ := e.r.Load(ctx, s3)
	for _, tc := range []agentrt.Resolution{
		{Decision: "edit", Arguments: json.RawMessage(`{"env":"dev"}`), Always: &agentrt.Always{}},
		{Decision: "approve", Always: &agentrt.Always{Scope: "planet"}},
		{Decision: "approve", Always: &agentrt.Always{Match: "vibes"}},
	} {
		if _, err := e.r.Resolve(ctx, s3, st.Requests[0].ID, tc); errCode(err) != "bad_rule" {
			t.Errorf("%+v: %v", tc.Always, err)
		}
	}
}

// TestHookAsksAPerson: a BeforeTool hook asks a person before a call runs
// (seed 003's request_human_select/prompt from a hook): the call waits,
// the answer goes back to the hook, and the model never sees the
// question. A rejected approval blocks the call; an unanswered question
// expires into a blocked call; a malformed question fails the run.
func TestHookAsksAPerson(t *testing.T) {
	ctx := context.Background()
	deploy := func(env string) scripted.Reply {
		return scripted.Reply{ToolCalls: []scripted.Call{scripted.ToolCall("deploy", fmt.Sprintf(`{"env":%q}`, env))}}
	}
	newAgent := func(m model.Model, runs *atomic.Int32, ask *agentrt.Ask, seen *[]*session.InputResolved) *agentrt.Agent {
		tools := registry(t, tool.Must(tool.New("deploy", "deploys", func(_ context.Context, in struct {
			Env string `json:"env"`
		}) (string, error) {
			runs.Add(1)
			return "deployed to " + in.Env, nil
		})))
		a := calcAgent(m, tools)
		a.Approval.ExpiresFor = map[string]time.Duration{"deploy": time.Hour}
		a.Hooks.BeforeTool(0, func(_ context.Context, info agentrt.HookInfo, call model.ToolCall) agentrt.ToolDecision {
			if info.Answer == nil {
				return agentrt.ToolDecision{Ask: ask}
			}
			*seen = append(*seen, info.Answer)
			if len(info.Answer.Selected) == 1 {
				return agentrt.ToolDecision{Arguments: json.RawMessage(fmt.Sprintf(`{"env":%q}`, info.Answer.Selected[0]))}
			}
			return agentrt.ToolDecision{}
		})
		return a
	}
	pending := func(e *env, id string) agentrt.HumanRequest {
		t.Helper()
		st, err := e.r.Load(ctx, id)
		if err != nil || len(st.Requests) != 1 {
			t.Fatalf("want one pending request: %+v %v", st, err)
		}
		return st.Requests[0]
	}

	t.Run("select", func(t *testing.T) {
		var runs atomic.Int32
		var seen []*session.InputResolved
		m := scripted.New("m", deploy("prod"), scripted.Reply{Text: "done", Expect: &scripted.Expect{LastToolResultContains: "deployed to staging"}})
		ask := &agentrt.Ask{Kind: session.RequestSelect, Question: "which environment?", Options: []string{"staging", "prod"}}
		e := newEnv(t, nil, agentrt.Config{}, newAgent(m, &runs, ask, &seen))
		id := e.session(t, "calc")
		res := e.run(t, id, "deploy")
		if res.Status != session.StatusWaiting || runs.Load() != 0 {
			t.Fatalf("the call did not wait: %+v (runs %d)", res, runs.Load())
		}
		q := pending(e, id)
		if q.Kind != session.RequestSelect || !q.Hook || q.Question != "which environment?" || q.CallID == "" || q.Expires == nil || q.Asked.IsZero() {
			t.Fatalf("request %+v", q)
		}

		if _, err := e.r.Resolve(ctx, id, q.ID, agentrt.Resolution{Selected: []string{"qa"}}); err == nil {
			t.Fatal("an answer outside the options was accepted")
		}
		if _, err := e.r.Resolve(ctx, id, q.ID, agentrt.Resolution{Selected: []string{"staging"}, By: "ana"}); err != nil {
			t.Fatal(err)
		}
		if res := e.resume(t, id); res.Status != session.StatusDone || res.Text != "done" {
			t.Fatalf("%+v", res)
		}
		if runs.Load() != 1 || len(seen) != 1 || seen[0].By != "ana" {
			t.Fatalf("runs %d, the hook saw %+v", runs.Load(), seen)
		}
		// The log: the question is not a tool result; the call ran once,
		// with the arguments the hook made from the answer.
		var results, calls []string
		for ev, err := range e.store.Events(ctx, id, 0) {
			if err != nil {
				t.Fatal(err)
			}
			switch d := ev.Data.(type) {
			case *session.ToolResult:
				results = append(results, string(d.Result))
			case *session.ToolCall:
				calls = append(calls, string(d.Arguments))
			}
		}
		if diff := cmp.Diff([]string{`{"env":"staging"}`}, calls); diff != "" {
			t.Errorf("tool calls (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff([]string{`"deployed to staging"`}, results); diff != "" {
			t.Errorf("tool results (-want +got):\n%s", diff)
		}
	})

	t.Run("approval rejected", func(t *testing.T) {
		var runs atomic.Int32
		var seen []*session.InputResolved
		m := scripted.New("m", deploy("prod"), scripted.Reply{Text: "not deployed", Expect: &scripted.Expect{LastToolResultContains: "rejected this call: friday"}})
		e := newEnv(t, nil, agentrt.Config{}, newAgent(m, &runs, &agentrt.Ask{Kind: session.RequestApproval}, &seen))
		id := e.session(t, "calc")
		e.run(t, id, "deploy")
		q := pending(e, id)
		if q.Kind != session.RequestApproval || !strings.Contains(q.Question, "Allow deploy") {
			t.Fatalf("request %+v", q)
		}
		// A rule decides the approval policy's question, not a hook's.
		if _, err := e.r.Resolve(ctx, id, q.ID, agentrt.Resolution{Decision: "approve", Always: &agentrt.Always{}}); err == nil ||
			!strings.Contains(err.Error(), "a hook's question cannot stand for later calls") {
			t.Fatalf("always on a hook's approval: %v", err)
		}
		if _, err := e.r.Resolve(ctx, id, q.ID, agentrt.Resolution{Decision: "reject", Reason: "friday"}); err != nil {
			t.Fatal(err)
		}
		if res := e.resume(t, id); res.Status != session.StatusDone || runs.Load() != 0 || len(seen) != 0 {
			t.Fatalf("%+v (runs %d, seen %v)", res, runs.Load(), seen)
		}
	})

	t.Run("prompt expires", func(t *testing.T) {
		var runs atomic.Int32
		var seen []*session.InputResolved
		now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		m := scripted.New("m", deploy("prod"), scripted.Reply{Text: "nobody answered", Expect: &scripted.Expect{LastToolResultContains: "expired"}})
		e := newEnv(t, nil, agentrt.Config{Now: func() time.Time { return now }},
			newAgent(m, &runs, &agentrt.Ask{Kind: session.RequestPrompt, Question: "ticket number?"}, &seen))
		id := e.session(t, "calc")
		e.run(t, id, "deploy")
		if q := pending(e, id); q.Kind != session.RequestPrompt || !q.Hook {
			t.Fatalf("request %+v", q)
		}
		now = now.Add(2 * time.Hour)
		if res := e.resume(t, id); res.Status != session.StatusDone || runs.Load() != 0 {
			t.Fatalf("%+v (runs %d)", res, runs.Load())
		}
	})

	t.Run("two hooks, each its own answer", func(t *testing.T) {
		var runs atomic.Int32
		var seen []*session.InputResolved
		m := scripted.New("m", deploy("prod"), scripted.Reply{Text: "done", Expect: &scripted.Expect{LastToolResultContains: "deployed to staging"}})
		a := newAgent(m, &runs, &agentrt.Ask{Kind: session.RequestPrompt, Question: "ticket?"}, &seen)
		var second []*session.InputResolved
		a.Hooks.BeforeTool(-1, func(_ context.Context, info agentrt.HookInfo, call model.ToolCall) agentrt.ToolDecision {
			if info.Answer == nil {
				return agentrt.ToolDecision{Ask: &agentrt.Ask{Kind: session.RequestSelect, Question: "where?", Options: []string{"staging"}}}
			}
			second = append(second, info.Answer)
			return agentrt.ToolDecision{Arguments: json.RawMessage(`{"env":"staging"}`)}
		})
		e := newEnv(t, nil, agentrt.Config{}, a)
		id := e.session(t, "calc")
		e.run(t, id, "deploy")
		q := pending(e, id)
		if q.Kind != session.RequestPrompt || q.HookIndex != 0 {
			t.Fatalf("first question %+v", q)
		}
		if _, err := e.r.Resolve(ctx, id, q.ID, agentrt.Resolution{Text: "T-1"}); err != nil {
			t.Fatal(err)
		}
		if res := e.resume(t, id); res.Status != session.StatusWaiting {
			t.Fatalf("the second hook did not ask: %+v", res)
		}
		q = pending(e, id)
		if q.Kind != session.RequestSelect || q.HookIndex != 1 {
			t.Fatalf("second question %+v", q)
		}
		if _, err := e.r.Resolve(ctx, id, q.ID, agentrt.Resolution{Selected: []string{"staging"}}); err != nil {
			t.Fatal(err)
		}
		if res := e.resume(t, id); res.Status != session.StatusDone || runs.Load() != 1 {
			t.Fatalf("%+v (runs %d)", res, runs.Load())
		}
		if len(seen) == 0 || seen[len(seen)-1].Text != "T-1" || len(second) != 1 || second[0].Selected[0] != "staging" {
			t.Fatalf("first hook saw %+v, second %+v", seen, second)
		}
	})

	t.Run("a malformed question announces no call", func(t *testing.T) {
		var runs atomic.Int32
		var seen []*session.InputResolved
		both := scripted.Reply{ToolCalls: []scripted.Call{scripted.ToolCall("deploy", `{"env":"dev"}`), scripted.ToolCall("deploy", `{"env":"prod"}`)}}
		m := scripted.New("m", both)
		a := newAgent(m, &runs, nil, &seen)
		a.Hooks = agentrt.Hooks{}
		a.Hooks.BeforeTool(0, func(_ context.Context, _ agentrt.HookInfo, call model.ToolCall) agentrt.ToolDecision {
			if strings.Contains(string(call.Arguments), "prod") {
				return agentrt.ToolDecision{Ask: &agentrt.Ask{Kind: session.RequestSelect, Question: "sure?"}}
			}
			return agentrt.ToolDecision{}
		})
		e := newEnv(t, nil, agentrt.Config{}, a)
		id := e.session(t, "calc")
		if res := e.run(t, id, "deploy"); res.Status != session.StatusFailed || runs.Load() != 0 {
			t.Fatalf("%+v (runs %d)", res, runs.Load())
		}
		for ev, err := range e.store.Events(ctx, id, 0) {
			if err != nil {
				t.Fatal(err)
			}
			if ev.Type == session.TypeToolCall {
				t.Errorf("a tool_call was committed for a call that never ran: %+v", ev.Data)
			}
		}
	})

	t.Run("a select without options fails the run", func(t *testing.T) {
		var runs atomic.Int32
		var seen []*session.InputResolved
		m := scripted.New("m", deploy("prod"))
		e := newEnv(t, nil, agentrt.Config{}, newAgent(m, &runs, &agentrt.Ask{Kind: session.RequestSelect, Question: "which?"}, &seen))
		id := e.session(t, "calc")
		res := e.run(t, id, "deploy")
		if res.Status != session.StatusFailed || res.Err == nil || res.Err.Code != "bad_instruction" || !strings.Contains(res.Err.Message, "a select without options") || runs.Load() != 0 {
			t.Fatalf("%+v (runs %d)", res, runs.Load())
		}
	})
}

// TestBlockedCallIsNotInDoubt: a call announced as blocked does not run,
// so a process that stops before its failed result is stored leaves no
// doubt about it: on resume it is not a confirm request, even for an
// at-most-once tool.
func TestBlockedCallIsNotInDoubt(t *testing.T) {
	call := model.ToolCall{ID: "c1", Name: "charge", Arguments: json.RawMessage(`{}`)}
	for _, tc := range []struct {
		blocked string
		started bool
	}{{"", true}, {"the user rejected this call", false}} {
		st := agentrt.NewState("s", "a")
		for _, d := range []session.Data{
			&session.RunStarted{Input: "charge"},
			&session.ModelFinished{ToolCalls: []model.ToolCall{call}},
			&session.ToolCall{CallID: "c1", Name: "charge", Arguments: call.Arguments, Blocked: tc.blocked},
		} {
			if err := st.Apply(&session.Event{Type: d.EventType(), Data: d}); err != nil {
				t.Fatal(err)
			}
		}
		if len(st.Calls) != 1 || st.Calls[0].Started != tc.started {
			t.Errorf("blocked %q: calls %+v, want started %v", tc.blocked, st.Calls, tc.started)
		}
	}
}
