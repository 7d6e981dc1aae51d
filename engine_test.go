package agentrt_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/gateway"
	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/model/scripted"
	"github.com/agentrt/agentrt/session"
	"github.com/agentrt/agentrt/session/memstore"
	"github.com/agentrt/agentrt/tool"
)

// stepEngine is an engine whose "worker" is another runner on the same
// store: each run it is handed is stepped there, one StepSession and one
// LetGo at a time, as a workflow's activities would, until it stops.
type stepEngine struct {
	worker *agentrt.Runner
	mu     sync.Mutex
	handed chan agentrt.Drive // each drive, as it comes
	drives []agentrt.Drive
	wg     sync.WaitGroup
	hold   chan struct{} // when set, each step waits for it
	fail   error         // when set, Drive fails
	keep   bool          // the worker keeps the session between steps (no LetGo), as a Temporal worker does
}

func (e *stepEngine) Drive(_ context.Context, d agentrt.Drive) error {
	e.mu.Lock()
	e.drives = append(e.drives, d)
	fail := e.fail
	e.mu.Unlock()
	select {
	case e.handed <- d:
	default:
	}
	if fail != nil {
		return fail
	}
	e.wg.Go(func() {
		ctx := session.WithTenant(context.Background(), d.Tenant)
		for {
			if e.hold != nil {
				<-e.hold
			}
			_, err := e.worker.StepSession(ctx, d.SessionID)
			if !e.keep {
				e.worker.LetGo(ctx, d.SessionID)
			}
			if err != nil {
				return // not running any more (stopped, or stopped elsewhere)
			}
			s, err := e.worker.Store().GetSession(ctx, d.SessionID)
			if err != nil || s.Status != session.StatusRunning {
				return
			}
		}
	})
	return nil
}

// next is the next run handed over (10 s at most).
func (e *stepEngine) next(t *testing.T) agentrt.Drive {
	t.Helper()
	select {
	case d := <-e.handed:
		return d
	case <-time.After(10 * time.Second):
		t.Fatal("no run was handed to the engine")
		return agentrt.Drive{}
	}
}

func (e *stepEngine) driven() []agentrt.Drive {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]agentrt.Drive(nil), e.drives...)
}

// engineEnv is a runner handing its runs to a stepEngine over store, the
// worker a runner of the same agents.
func engineEnv(t *testing.T, replies ...scripted.Reply) (*agentrt.Runner, *stepEngine, *memstore.Store) {
	t.Helper()
	store := memstore.New()
	deploy := tool.WithMeta(tool.Must(tool.New("deploy", "deploys", func(_ context.Context, in struct {
		Env string `json:"env"`
	}) (string, error) {
		return "deployed to " + in.Env, nil
	})), tool.Meta{Approval: tool.ApprovalAsk})
	reg, err := tool.NewRegistry(deploy)
	if err != nil {
		t.Fatal(err)
	}
	agents := []*agentrt.Agent{{Name: "assistant", Model: scripted.New("m", replies...), Tools: reg}}
	r, eng := newEngine(t, store, agents, agentrt.Config{}, false)
	return r, eng, store
}

// newEngine is a runner of agents over store handing its runs to a
// stepEngine, whose worker is a runner of wcfg (with the store, the
// agents and owner "worker"), keeping sessions between steps if keep.
func newEngine(t *testing.T, store session.Store, agents []*agentrt.Agent, wcfg agentrt.Config, keep bool) (*agentrt.Runner, *stepEngine) {
	t.Helper()
	wcfg.Store, wcfg.Agents, wcfg.Owner = store, agents, "worker"
	worker, err := agentrt.NewRunner(wcfg)
	if err != nil {
		t.Fatal(err)
	}
	eng := &stepEngine{worker: worker, handed: make(chan agentrt.Drive, 16), keep: keep}
	r, err := agentrt.NewRunner(agentrt.Config{Store: store, Agents: agents, Owner: "serve", Engine: eng})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = r.Close(context.Background())
		eng.wg.Wait()
		_ = worker.Close(context.Background())
	})
	return r, eng
}

// A runner with an engine commits a turn's start and hands the run over:
// the engine's worker steps it, and the handle follows it through the
// store — Wait, Events and Runner.Run see what the worker did.
func TestEngineRunsTheTurn(t *testing.T) {
	ctx := context.Background()
	r, eng, store := engineEnv(t, scripted.Reply{Text: "hello from the worker"}, scripted.Reply{Text: "and again"})
	h, err := r.Start(ctx, "s", agentrt.Input{Agent: "assistant", Text: "hi"})
	if err != nil {
		t.Fatal(err)
	}
	res, err := h.Wait(ctx)
	if err != nil || res.Status != session.StatusDone || res.Text != "hello from the worker" || res.RunID == "" {
		t.Fatalf("the run: %+v %v", res, err)
	}
	d := eng.driven()
	if len(d) != 1 || d[0].SessionID != "s" || d[0].RunID != res.RunID || d[0].Why != "start" || d[0].Seq != 1 {
		t.Fatalf("the engine was handed %+v", d)
	}
	// The worker made the model call: its events follow run_started.
	var types []session.Type
	for ev, err := range store.Events(session.WithTenant(ctx, session.DefaultTenant), "s", 0) {
		if err != nil {
			t.Fatal(err)
		}
		types = append(types, ev.Type)
	}
	if len(types) < 4 || types[0] != session.TypeRunStarted || types[len(types)-1] != session.TypeRunFinished {
		t.Errorf("the log: %v", types)
	}
	// Runner.Run yields the run's events as the worker commits them.
	got, err := agentrt.Collect(r.Run(ctx, "s", agentrt.Input{Agent: "assistant", Text: "again"}))
	if err != nil || got.Text != "and again" || got.Events[0].Type != session.TypeRunStarted || got.Events[len(got.Events)-1].Type != session.TypeRunFinished {
		t.Fatalf("Run: %+v %v", got, err)
	}
}

// An approval answered through the runner with an engine continues the
// run in the engine (Drive, why approval), once.
func TestEngineContinuesAfterAnApproval(t *testing.T) {
	ctx := context.Background()
	r, eng, _ := engineEnv(t,
		scripted.Reply{ToolCalls: []scripted.Call{scripted.ToolCall("deploy", `{"env":"prod"}`)}},
		scripted.Reply{Text: "deployed", Expect: &scripted.Expect{LastToolResultContains: "deployed to prod"}})
	h, err := r.Start(ctx, "s", agentrt.Input{Agent: "assistant", Text: "deploy"})
	if err != nil {
		t.Fatal(err)
	}
	res, err := h.Wait(ctx)
	if err != nil || res.Status != session.StatusWaiting {
		t.Fatalf("the run: %+v %v", res, err)
	}
	st, err := r.Load(ctx, "s")
	if err != nil || len(st.Requests) != 1 {
		t.Fatalf("the requests: %v", err)
	}
	out, err := r.ResolveAndContinue(ctx, "s", st.Requests[0].ID, agentrt.Resolution{Decision: "approve", By: "ana"})
	if err != nil || out.Run == nil {
		t.Fatalf("resolve: %+v %v", out, err)
	}
	res, err = out.Run.Wait(ctx)
	if err != nil || res.Status != session.StatusDone || res.Text != "deployed" {
		t.Fatalf("the run after the answer: %+v %v", res, err)
	}
	if d := eng.driven(); len(d) != 2 || d[1].Why != agentrt.ResumeApproval {
		t.Errorf("drives: %+v", d)
	}
}

// Interrupting or canceling a run handed to the engine stops it through
// the store's control requests; an engine that does not take a run is an
// error of code engine, the run left running in the store.
func TestEngineControlsAndRefusal(t *testing.T) {
	ctx := context.Background()
	t.Run("interrupt", func(t *testing.T) {
		r, eng, _ := engineEnv(t, scripted.Reply{Text: "never said"})
		eng.hold = make(chan struct{})
		h, err := r.Start(ctx, "s", agentrt.Input{Agent: "assistant", Text: "hi"})
		if err != nil {
			t.Fatal(err)
		}
		h.Interrupt("newer input")
		res, err := h.Wait(ctx)
		close(eng.hold)
		if err != nil || res.Status != session.StatusInterrupted {
			t.Fatalf("the run: %+v %v", res, err)
		}
	})
	t.Run("refused", func(t *testing.T) {
		r, eng, store := engineEnv(t, scripted.Reply{Text: "never said"})
		eng.fail = errors.New("no workflow service")
		h, err := r.Start(ctx, "s", agentrt.Input{Agent: "assistant", Text: "hi"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := h.Wait(ctx); agentrt.AsError(err).ErrorCode() != agentrt.CodeEngine {
			t.Fatalf("wait: %v", err)
		}
		s, err := store.GetSession(session.WithTenant(ctx, session.DefaultTenant), "s")
		if err != nil || s.Status != session.StatusRunning || s.Lease != nil && s.Lease.Expires.After(time.Now()) && s.Lease.Owner == "serve" {
			t.Errorf("the session after the refusal: %+v %v", s, err)
		}
	})
}

// idleEngine takes runs and does nothing with them.
type idleEngine struct {
	mu     sync.Mutex
	drives []agentrt.Drive
	got    chan struct{}
}

func (e *idleEngine) Name() string { return "test-engine" }

func (e *idleEngine) Drive(_ context.Context, d agentrt.Drive) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.drives = append(e.drives, d)
	e.got <- struct{}{}
	return nil
}

// A run left unfinished by one engine is not continued by another behind
// anyone's back: Recover leaves it alone (a runner with an engine does
// not hand a local run over; one without does not run an engine's run),
// and Resume continues it where asked, recording the engine
// (run_resumed.engine).
func TestRecoverKeepsToItsEngine(t *testing.T) {
	ctx := context.Background()
	store := memstore.New()
	agents := []*agentrt.Agent{{Name: "assistant", Model: scripted.New("m", scripted.Reply{Text: "hi"}, scripted.Reply{Text: "hi again"})}}
	local, err := agentrt.NewRunner(agentrt.Config{Store: store, Agents: agents, Owner: "local"})
	if err != nil {
		t.Fatal(err)
	}
	defer local.Close(ctx)
	eng := &idleEngine{got: make(chan struct{}, 4)}
	onEngine, err := agentrt.NewRunner(agentrt.Config{Store: store, Agents: agents, Owner: "serve", Engine: eng})
	if err != nil {
		t.Fatal(err)
	}
	defer onEngine.Close(ctx)
	// A local run that stopped with its process: begun, never stepped.
	if _, err := local.Begin(ctx, "local-run", agentrt.Input{Agent: "assistant", Text: "hello"}); err != nil {
		t.Fatal(err)
	}
	local.LetGo(ctx, "local-run")
	// A run handed to the engine, which never stepped it.
	h, err := onEngine.Start(ctx, "engine-run", agentrt.Input{Agent: "assistant", Text: "hello"})
	if err != nil {
		t.Fatal(err)
	}
	_ = h
	<-eng.got // handed over from the run's goroutine
	recoverNone := func(r *agentrt.Runner) {
		t.Helper()
		runs, err := r.Recover(ctx)
		if err != nil || len(runs) != 0 {
			t.Fatalf("recover: %d runs, %v", len(runs), err)
		}
	}
	recoverNone(onEngine) // the local run is not handed over
	if len(eng.drives) != 1 {
		t.Errorf("the engine was handed %+v, want the run it started alone", eng.drives)
	}
	// Resumed on the engine where asked: handed over, and said so.
	if _, err := onEngine.StartResume(ctx, "local-run"); err != nil {
		t.Fatal(err)
	}
	<-eng.got
	for _, id := range []string{"local-run", "engine-run"} {
		st, err := local.Load(ctx, id)
		if err != nil || st.Engine != "test-engine" || st.Status != session.StatusRunning {
			t.Fatalf("%s: %+v %v", id, st, err)
		}
	}
	if d := eng.drives[len(eng.drives)-1]; len(eng.drives) != 2 || d.SessionID != "local-run" || d.Why != agentrt.ResumeRecovered {
		t.Errorf("the hand-over: %+v", eng.drives)
	}
	recoverNone(local) // the engine's runs are not run here
}

// The gateway's interrupt policy works on a run handed to an engine: newer
// input interrupts it (a control request through the store), and the turn
// starts again — its history holding the interrupted input, its run the
// newer one — handed over as a run of its own.
func TestEngineInterruptAndRestart(t *testing.T) {
	ctx := context.Background()
	r, eng, store := engineEnv(t, scripted.Reply{Text: "about both", Expect: &scripted.Expect{LastUserContains: "sorry, 43"}})
	eng.hold = make(chan struct{})
	g := runGateway(t, gateway.Config{Runner: r})
	if _, err := g.Submit(ctx, gateway.Input{Source: "chat", Agent: "assistant", Text: "order 42"}); err != nil {
		t.Fatal(err)
	}
	first := eng.next(t) // handed over; its first step held
	if _, err := g.Submit(ctx, gateway.Input{Source: "chat", Agent: "assistant", Text: "sorry, 43"}); err != nil {
		t.Fatal(err)
	}
	second := eng.next(t) // the restart, after the interruption
	close(eng.hold)
	if second.RunID == first.RunID {
		t.Fatalf("the restart is the same run: %+v", second)
	}
	tctx := session.WithTenant(ctx, session.DefaultTenant)
	deadline := time.Now().Add(20 * time.Second)
	for {
		s, err := store.GetSession(tctx, "chat")
		if err == nil && s.Status == session.StatusDone {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the restarted turn did not end: %+v %v", s, err)
		}
		time.Sleep(5 * time.Millisecond) // the engine's worker steps the run on its goroutine
	}
	var statuses []session.Status
	var input string
	for ev, err := range store.Events(tctx, "chat", 0) {
		if err != nil {
			t.Fatal(err)
		}
		switch d := ev.Data.(type) {
		case *session.RunFinished:
			statuses = append(statuses, d.Status)
		case *session.RunStarted:
			input = d.Input
		}
	}
	if len(statuses) != 2 || statuses[0] != session.StatusInterrupted || statuses[1] != session.StatusDone || input != "sorry, 43" {
		t.Errorf("the runs ended %v; the last began with %q", statuses, input)
	}
	// The restart's model call read both messages: the interrupted run's,
	// kept in the history, then the newer one.
	st, err := r.Load(ctx, "chat")
	if err != nil {
		t.Fatal(err)
	}
	var users []string
	for _, m := range st.Messages {
		if m.Role == model.RoleUser {
			users = append(users, m.Text())
		}
	}
	if !slices.Equal(users, []string{"order 42", "sorry, 43"}) || st.Final != "about both" {
		t.Errorf("the history's user messages %q, the answer %q", users, st.Final)
	}
}

// A worker's runner that has the engine too hands it the run of a
// sub-agent that a step delegates to: the sub-agent's session is driven
// as a session of its own (on Temporal, its own workflow), and the
// parent's step takes its answer.
func TestEngineSubagentHandedOver(t *testing.T) {
	ctx := context.Background()
	store := memstore.New()
	boss, calc := delegation(t, scripted.New("boss", delegate("compute 6*7"), scripted.Reply{Text: "It is 42.", Expect: &scripted.Expect{LastToolResultContains: "42"}}),
		scripted.New("calc-model", scripted.Reply{Text: "42"}))
	eng := &stepEngine{handed: make(chan agentrt.Drive, 16)}
	worker, err := agentrt.NewRunner(agentrt.Config{Store: store, Agents: []*agentrt.Agent{boss, calc}, Owner: "worker", Engine: eng})
	if err != nil {
		t.Fatal(err)
	}
	eng.worker = worker
	r, err := agentrt.NewRunner(agentrt.Config{Store: store, Agents: []*agentrt.Agent{boss, calc}, Owner: "serve", Engine: eng})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = r.Close(ctx)
		eng.wg.Wait()
		_ = worker.Close(ctx)
	}()
	h, err := r.Start(ctx, "p1", agentrt.Input{Agent: "boss", Text: "what is 6*7?"})
	if err != nil {
		t.Fatal(err)
	}
	res, err := h.Wait(ctx)
	if err != nil || res.Status != session.StatusDone || res.Text != "It is 42." {
		t.Fatalf("the run: %+v %v", res, err)
	}
	var sessions []string
	for _, d := range eng.driven() {
		sessions = append(sessions, d.SessionID)
	}
	if len(sessions) != 2 || sessions[0] != "p1" || !strings.HasPrefix(sessions[1], "p1.") {
		t.Errorf("the engine was handed %v, want the parent's run, then the sub-agent's", sessions)
	}
}

// steerEnv is engineEnv with a tool that waits for gate, and a worker
// that looks for control requests every 5 ms.
func steerEnv(t *testing.T, keep bool, gate chan struct{}, replies ...scripted.Reply) (*agentrt.Runner, *stepEngine, *memstore.Store) {
	t.Helper()
	store := memstore.New()
	wait := tool.Must(tool.New("wait", "waits", func(ctx context.Context, _ struct{}) (string, error) {
		select {
		case <-gate:
			return "waited", nil
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}))
	reg, err := tool.NewRegistry(wait)
	if err != nil {
		t.Fatal(err)
	}
	agents := []*agentrt.Agent{{Name: "assistant", Model: scripted.New("m", replies...), Tools: reg}}
	r, eng := newEngine(t, store, agents, agentrt.Config{ControlPoll: 5 * time.Millisecond}, keep)
	return r, eng, store
}

// steered are the input_steered events of session s.
func steered(t *testing.T, store *memstore.Store, s string) []*session.InputSteered {
	t.Helper()
	var out []*session.InputSteered
	for e, err := range store.Events(session.WithTenant(context.Background(), session.DefaultTenant), s, 0) {
		if err != nil {
			t.Fatal(err)
		}
		if d, ok := e.Data.(*session.InputSteered); ok {
			out = append(out, d)
		}
	}
	return out
}

// Input steered into a run handed to the engine reaches its next model
// call, as for a run here: through the worker that holds the session (a
// steering control request) while a tool runs there, or recorded by the
// steering runner itself while nobody holds the session between steps.
// Input the run takes no more is not recorded.
func TestEngineSteer(t *testing.T) {
	replies := func() []scripted.Reply {
		return []scripted.Reply{
			{ToolCalls: []scripted.Call{scripted.ToolCall("wait", `{}`)}},
			{Text: "the blue one too", Expect: &scripted.Expect{LastUserContains: "also the blue one"}},
		}
	}
	t.Run("through the worker holding it", func(t *testing.T) {
		ctx := context.Background()
		gate := make(chan struct{})
		r, _, store := steerEnv(t, true, gate, replies()...)
		h, err := r.Start(ctx, "s", agentrt.Input{Agent: "assistant", Text: "paint it"})
		if err != nil {
			t.Fatal(err)
		}
		waitFor(t, r, "s", session.TypeToolCall)
		if !h.Steer("also the blue one", nil) {
			t.Fatal("the remote run refused the steering")
		}
		// The worker takes it from its control request while the tool runs.
		awaitSteerRequest(t, store, "s")
		close(gate)
		res, err := h.Wait(ctx)
		if err != nil || res.Status != session.StatusDone || res.Text != "the blue one too" {
			t.Fatalf("the run: %+v %v", res, err)
		}
		got := steered(t, store, "s")
		if len(got) != 1 || got[0].Text != "also the blue one" || got[0].Steer == "" {
			t.Fatalf("input_steered: %+v", got)
		}
	})
	t.Run("recorded here between steps", func(t *testing.T) {
		ctx := context.Background()
		gate := make(chan struct{})
		close(gate)
		r, eng, store := steerEnv(t, false, gate, replies()...)
		eng.hold = make(chan struct{})
		h, err := r.Start(ctx, "s", agentrt.Input{Agent: "assistant", Text: "paint it"})
		if err != nil {
			t.Fatal(err)
		}
		eng.hold <- struct{}{} // the model call
		eng.hold <- struct{}{} // the tool
		waitFor(t, r, "s", session.TypeToolResult)
		if !h.Steer("also the blue one", nil) {
			t.Fatal("the remote run refused the steering")
		}
		waitFor(t, r, "s", session.TypeInputSteered)
		go func() {
			for range 2 { // the model call, the answer
				eng.hold <- struct{}{}
			}
		}()
		res, err := h.Wait(ctx)
		if err != nil || res.Status != session.StatusDone || res.Text != "the blue one too" {
			t.Fatalf("the run: %+v %v", res, err)
		}
		if got := steered(t, store, "s"); len(got) != 1 || got[0].Steer == "" {
			t.Fatalf("input_steered: %+v", got)
		}
	})
	t.Run("too late", func(t *testing.T) {
		ctx := context.Background()
		gate := make(chan struct{})
		close(gate)
		r, eng, store := steerEnv(t, true, gate, scripted.Reply{Text: "done"})
		eng.hold = make(chan struct{})
		h, err := r.Start(ctx, "s", agentrt.Input{Agent: "assistant", Text: "hi"})
		if err != nil {
			t.Fatal(err)
		}
		eng.hold <- struct{}{} // the model call: its answer is all
		waitFor(t, r, "s", session.TypeModelFinished)
		h.Steer("one more thing", nil)
		awaitSteerRequest(t, store, "s")
		eng.hold <- struct{}{}
		if res, err := h.Wait(ctx); err != nil || res.Status != session.StatusDone || res.Text != "done" {
			t.Fatalf("the run: %+v %v", res, err)
		}
		if err := r.Close(ctx); err != nil { // the steering's goroutine ends
			t.Fatal(err)
		}
		if got := steered(t, store, "s"); len(got) != 0 {
			t.Fatalf("input steered into a run that made no more model calls: %+v", got)
		}
	})
}

// awaitSteerRequest waits until session s keeps a steering request for
// its lease's owner.
func awaitSteerRequest(t *testing.T, store *memstore.Store, s string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if st, _ := store.GetSession(session.WithTenant(context.Background(), session.DefaultTenant), s); st.Control != nil && st.Control.Kind == session.ControlSteer {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("no steering request for the worker")
		}
		time.Sleep(time.Millisecond) // polled: the store has no notification of it
	}
}

// waitFor waits until session s's log has an event of type ty.
func waitFor(t *testing.T, r *agentrt.Runner, s string, ty session.Type) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for ctx.Err() == nil {
		for e, err := range r.Watch(ctx, s, 0) {
			if agentrt.AsError(err).ErrorCode() == agentrt.CodeNotFound {
				time.Sleep(time.Millisecond) // not created yet (the gateway's turn begins)
				break
			}
			if err != nil {
				t.Fatalf("waiting for %s: %v", ty, err)
			}
			if e.Type == ty {
				return
			}
		}
	}
	t.Fatalf("no %s in session %s", ty, s)
}

// The gateway's steer policy over an engine: input from the source while
// its turn runs on the engine's worker goes to the turn's next model call
// there, answered by that turn (no second run).
func TestEngineGatewaySteer(t *testing.T) {
	ctx := context.Background()
	gate := make(chan struct{})
	r, _, store := steerEnv(t, true, gate,
		scripted.Reply{ToolCalls: []scripted.Call{scripted.ToolCall("wait", `{}`)}},
		scripted.Reply{Text: "red and blue", Expect: &scripted.Expect{LastUserContains: "and the blue one"}})
	g := runGateway(t, gateway.Config{Runner: r, Policy: gateway.Steer})
	if _, err := g.Submit(ctx, gateway.Input{Source: "chat", Agent: "assistant", Text: "paint it red"}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, r, "chat", session.TypeToolCall)
	in, err := g.Submit(ctx, gateway.Input{Source: "chat", Agent: "assistant", Text: "and the blue one"})
	if err != nil {
		t.Fatal(err)
	}
	awaitSteerRequest(t, store, "chat")
	close(gate)
	waitFor(t, r, "chat", session.TypeRunFinished)
	tctx := session.WithTenant(ctx, session.DefaultTenant)
	runs := 0
	var steers []*session.InputSteered
	for ev, err := range store.Events(tctx, "chat", 0) {
		if err != nil {
			t.Fatal(err)
		}
		switch d := ev.Data.(type) {
		case *session.RunStarted:
			runs++
		case *session.InputSteered:
			steers = append(steers, d)
		case *session.RunFinished:
			if d.Status != session.StatusDone {
				t.Errorf("the turn ended %s", d.Status)
			}
		}
	}
	if runs != 1 || len(steers) != 1 || !slices.Equal(steers[0].Inputs, []string{in.ID}) || steers[0].TurnID == "" {
		t.Fatalf("%d runs, input_steered %+v (input %s)", runs, steers, in.ID)
	}
}

// runGateway runs a gateway of cfg until the test ends.
func runGateway(t *testing.T, cfg gateway.Config) *gateway.Gateway {
	t.Helper()
	g, err := gateway.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = g.Run(ctx) })
	t.Cleanup(func() { cancel(); wg.Wait() })
	return g
}
