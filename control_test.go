package agentrt_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/model/scripted"
	"github.com/agentrt/agentrt/session"
	"github.com/agentrt/agentrt/session/memstore"
	"github.com/agentrt/agentrt/tool"
	"github.com/agentrt/agentrt/tool/builtin"
)

// slowAgent is an agent whose model answers after an hour: its runs wait
// in the model call until they are stopped.
func slowAgent() *agentrt.Agent {
	return calcAgent(scripted.New("m", scripted.Reply{Text: "late", Delay: time.Hour}), nil)
}

// twoRunners returns two runners of different owners on one store, as
// two processes would be, looking for control requests every few ms.
func twoRunners(t *testing.T, store session.Store, agents func() *agentrt.Agent) (a, b *agentrt.Runner) {
	t.Helper()
	mk := func(owner string) *agentrt.Runner {
		r, err := agentrt.NewRunner(agentrt.Config{Store: store, Agents: []*agentrt.Agent{agents()}, Owner: owner, ControlPoll: 5 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { r.Close(context.Background()) })
		return r
	}
	return mk("host-a:1:a"), mk("host-b:2:b")
}

// startInModel starts a turn of session id in r and returns once its model
// call has begun.
func startInModel(t *testing.T, r *agentrt.Runner, id string) *agentrt.Run {
	t.Helper()
	ctx := context.Background()
	h, err := r.Start(ctx, id, agentrt.Input{Text: "go", Agent: "calc"})
	if err != nil {
		t.Fatal(err)
	}
	for e, err := range h.Events(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		if e.Type == session.TypeModelStarted {
			return h
		}
	}
	t.Fatal("the run ended before its model call")
	return nil
}

func controlEvent(t *testing.T, store session.Store, id string) *session.Control {
	t.Helper()
	var found *session.Control
	for _, e := range storedLog(t, store, id) {
		if c, ok := e.Data.(*session.Control); ok {
			if found != nil {
				t.Errorf("two control events: %+v and %+v", found, c)
			}
			found = c
		}
	}
	return found
}

func TestCancelFromAnotherRunner(t *testing.T) {
	for _, kind := range []session.ControlKind{session.ControlCancel, session.ControlInterrupt} {
		t.Run(string(kind), func(t *testing.T) {
			store := memstore.New()
			a, b := twoRunners(t, store, slowAgent)
			h := startInModel(t, a, "s1")
			ctx := agentrt.WithActor(context.Background(), "ada")
			var (
				out *agentrt.ControlOutcome
				err error
			)
			want := session.StatusCanceled
			if kind == session.ControlInterrupt {
				out, err = b.Interrupt(ctx, "s1", "newer input")
				want = session.StatusInterrupted
			} else {
				out, err = b.Cancel(ctx, "s1", "newer input")
			}
			if err != nil {
				t.Fatal(err)
			}
			if !out.Acted || out.Status != want || out.Control.By != "ada" || out.Control.Kind != kind {
				t.Fatalf("outcome %+v, want acted, status %s, by ada", out, want)
			}
			res, err := h.Wait(context.Background())
			if err != nil || res.Status != want {
				t.Fatalf("the run in the other runner: %+v %v, want %s", res, err, want)
			}
			c := controlEvent(t, store, "s1")
			if c == nil || c.ID != out.Control.ID || c.Reason != "newer input" || c.By != "ada" {
				t.Fatalf("control event %+v, want the request %+v", c, out.Control)
			}
			// The request is gone with the lease: nothing is left for the
			// next run to trip over.
			if s, _ := store.GetSession(context.Background(), "s1"); s.Control != nil || s.Lease != nil {
				t.Errorf("after the run: control %+v, lease %+v", s.Control, s.Lease)
			}
			if kind == session.ControlCancel {
				if res.Err == nil || !strings.Contains(res.Err.Message, "by ada: newer input") {
					t.Errorf("error event %+v, want who and why", res.Err)
				}
			}
		})
	}
}

func TestCancelInThisRunner(t *testing.T) {
	e := newEnv(t, nil, agentrt.Config{}, slowAgent())
	h := startInModel(t, e.r, "s1")
	out, err := e.r.Cancel(context.Background(), "s1", "")
	if err != nil || !out.Acted || out.Status != session.StatusCanceled {
		t.Fatalf("Cancel: %+v %v", out, err)
	}
	if res, _ := h.Wait(context.Background()); res.Status != session.StatusCanceled {
		t.Fatalf("run: %+v", res)
	}
	if c := controlEvent(t, e.store, "s1"); c == nil || c.Kind != session.ControlCancel {
		t.Fatalf("control event %+v", c)
	}
	// Nothing runs any more.
	if _, err := e.r.Cancel(context.Background(), "s1", ""); errCode(err) != agentrt.CodeNotRunning {
		t.Fatalf("Cancel of a canceled session: %v, want not_running", err)
	}
	if _, err := e.r.Cancel(context.Background(), "nope", ""); errCode(err) != agentrt.CodeNotFound {
		t.Fatalf("Cancel of an unknown session: %v, want not_found", err)
	}
}

// approvalAgent's model asks for the calculator, which needs approval,
// then answers.
func approvalAgent() *agentrt.Agent {
	a := calcAgent(scripted.New("m",
		scripted.Reply{ToolCalls: []scripted.Call{scripted.ToolCall("calculator", `{"expression":"1+1"}`)}},
		scripted.Reply{Text: "done"}), nil)
	reg, err := tool.NewRegistry(tool.WithMeta(builtin.Calculator(), tool.Meta{Approval: tool.ApprovalAsk}))
	if err != nil {
		panic(err)
	}
	a.Tools = reg
	return a
}

// A waiting run has nobody running it: the requester stops it itself,
// and its requests are withdrawn.
func TestControlWaitingSession(t *testing.T) {
	for _, kind := range []session.ControlKind{session.ControlCancel, session.ControlInterrupt} {
		t.Run(string(kind), func(t *testing.T) {
			store := memstore.New()
			a, b := twoRunners(t, store, approvalAgent)
			res, err := a.Send(context.Background(), "s1", agentrt.Input{Text: "1+1", Agent: "calc"})
			if res == nil || res.Status != session.StatusWaiting {
				t.Fatalf("first turn: %+v %v", res, err)
			}
			control := b.Cancel
			want := session.StatusCanceled
			if kind == session.ControlInterrupt {
				control, want = b.Interrupt, session.StatusInterrupted
			}
			out, err := control(context.Background(), "s1", "changed my mind")
			if err != nil || !out.Acted || out.Status != want {
				t.Fatalf("%s: %+v %v", kind, out, err)
			}
			st, err := a.Load(context.Background(), "s1")
			if err != nil {
				t.Fatal(err)
			}
			if len(st.Requests) != 0 {
				t.Errorf("requests left: %+v", st.Requests)
			}
			var withdrawn bool
			for _, e := range storedLog(t, store, "s1") {
				if d, ok := e.Data.(*session.InputResolved); ok && d.Decision == session.DecisionWithdrawn {
					withdrawn = true
				}
			}
			if !withdrawn {
				t.Error("no request was withdrawn")
			}
			// The next turn starts afresh.
			if kind == session.ControlInterrupt {
				if _, err := a.Start(context.Background(), "s1", agentrt.Input{Text: "again"}); err != nil {
					t.Fatalf("a turn after the interruption: %v", err)
				}
			}
		})
	}
}

// A run whose process died is stopped by the requester, which takes its
// lease over.
func TestCancelRunOfADeadProcess(t *testing.T) {
	store := memstore.New()
	ctx := context.Background()
	if err := store.CreateSession(ctx, &session.Session{ID: "s1", Agent: "calc", Status: session.StatusIdle}); err != nil {
		t.Fatal(err)
	}
	host, _ := os.Hostname()
	dead := fmt.Sprintf("%s:%d:dead", host, 1<<30) // no such process
	l, err := store.Acquire(ctx, "s1", dead, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	started := &session.Event{V: 1, Seq: 1, SessionID: "s1", RunID: "r1", Turn: 1, Type: session.TypeRunStarted, Time: time.Now(),
		Data: &session.RunStarted{Input: "go"}}
	if err := store.Commit(ctx, &session.Commit{SessionID: "s1", Events: []*session.Event{started}, Status: session.StatusRunning, Turn: 1, Fence: l.Token}); err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, store, agentrt.Config{}, slowAgent())
	out, err := e.r.Cancel(ctx, "s1", "stuck")
	if err != nil || !out.Acted || out.Status != session.StatusCanceled {
		t.Fatalf("Cancel: %+v %v", out, err)
	}
}

// A session stepped by another runner is stopped between its steps.
func TestCancelSteppedSession(t *testing.T) {
	store := memstore.New()
	a, b := twoRunners(t, store, func() *agentrt.Agent { return calcAgent(scripted.New("m", scripted.Reply{Text: "hi"}), nil) })
	if _, err := a.CreateSession(context.Background(), "calc", "s1", nil); err != nil {
		t.Fatal(err)
	}
	st, err := a.Begin(context.Background(), "s1", agentrt.Input{Text: "go"})
	if err != nil {
		t.Fatal(err)
	}
	out, err := b.Cancel(context.Background(), "s1", "")
	if err != nil || !out.Acted || out.Status != session.StatusCanceled {
		t.Fatalf("Cancel: %+v %v", out, err)
	}
	if _, err := a.Step(context.Background(), st); err == nil {
		t.Fatal("a step after the cancellation went through")
	}
}

// stubbornTool finishes a while after its context ends, ignoring it.
func stubbornTool(ran *atomic.Int32, started chan<- struct{}, finish <-chan struct{}) tool.Tool {
	return tool.Must(tool.New("stubborn", "ignores its context", func(_ context.Context, in struct {
		N int `json:"n"`
	}) (string, error) {
		ran.Add(1)
		started <- struct{}{}
		<-finish
		return fmt.Sprintf("finished %d", in.N), nil
	}))
}

// A run canceled while tools run stores the results the tools came
// back with, so resuming does not run them again.
func TestCancelKeepsResultsInHand(t *testing.T) {
	for _, n := range []int{1, 3} {
		t.Run(fmt.Sprintf("calls=%d", n), func(t *testing.T) {
			var ran atomic.Int32
			started, finish := make(chan struct{}, n), make(chan struct{})
			var calls []scripted.Call
			for i := range n {
				calls = append(calls, scripted.ToolCall("stubborn", map[string]any{"n": i}))
			}
			store := memstore.New()
			m := scripted.New("m", scripted.Reply{ToolCalls: calls})
			e := newEnv(t, store, agentrt.Config{}, calcAgent(m, registry(t, stubbornTool(&ran, started, finish))))
			id := e.session(t, "calc")
			ctx, cancel := context.WithCancel(context.Background())
			go func() {
				for range n {
					<-started
				}
				cancel()
				close(finish) // the tools finish after the cancel
			}()
			res, err := agentrt.Collect(e.r.Run(ctx, id, agentrt.Input{Text: "go"}))
			if err != nil || res.Status != session.StatusCanceled {
				t.Fatalf("run: %v %+v", err, res)
			}
			if got := len(toolResults(storedLog(t, store, id))); got != n {
				t.Fatalf("%d results stored, want %d", got, n)
			}
			e2 := newEnv(t, store, agentrt.Config{}, calcAgent(scripted.New("m", scripted.Reply{Text: "ok",
				Expect: &scripted.Expect{LastToolResultContains: "finished"}}), registry(t, stubbornTool(&ran, started, finish))))
			if res := e2.resume(t, id); res.Status != session.StatusDone {
				t.Fatalf("resume: %+v", res)
			}
			if got := ran.Load(); got != int32(n) {
				t.Errorf("tools ran %d times, want %d", got, n)
			}
		})
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
	// In the call: the model took its first reply (an interrupt between
	// model_started's commit and the call would leave it untaken, for the
	// next turn to wait an hour on).
	for deadline := time.Now().Add(30 * time.Second); m.Calls() < 1; {
		if time.Now().After(deadline) {
			t.Fatal("the model was not called")
		}
		time.Sleep(time.Millisecond) // polls the model's count; orders nothing
	}
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

// ListSessions hides the agents' rule logs and pages across them, in one
// tenant or all.
func TestListSessionsHidesRuleLogs(t *testing.T) {
	e := newEnv(t, nil, agentrt.Config{}, approvalAgent())
	ctx := context.Background()
	for _, id := range []string{"a", "b", "c"} {
		if _, err := e.r.CreateSession(ctx, "calc", id, nil); err != nil {
			t.Fatal(err)
		}
	}
	// A standing decision for the agent makes its rule log.
	if res, _ := e.r.Send(ctx, "a", agentrt.Input{Text: "go"}); res.Status != session.StatusWaiting {
		t.Fatalf("run: %+v", res)
	}
	st, _ := e.r.Load(ctx, "a")
	if _, err := e.r.Resolve(ctx, "a", st.Requests[0].ID, agentrt.Resolution{Decision: session.DecisionApprove,
		Always: &agentrt.Always{Scope: session.RuleAgent}}); err != nil {
		t.Fatal(err)
	}
	var ids []string
	opts := session.ListOptions{Limit: 2, AllTenants: true}
	for {
		page, last, err := e.r.ListSessions(ctx, opts)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range page {
			ids = append(ids, s.ID)
		}
		if last == nil {
			break
		}
		opts.After, opts.AfterTenant = last.ID, last.Tenant
	}
	if strings.Join(ids, ",") != "c,b,a" {
		t.Fatalf("listed %v, want c,b,a without the rule log", ids)
	}
	if _, err := e.store.GetSession(ctx, "_rules.calc"); err != nil {
		t.Fatalf("the rule log: %v", err)
	}
}
