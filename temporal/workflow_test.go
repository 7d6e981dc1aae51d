package temporal_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/gateway"
	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/model/scripted"
	"github.com/agentrt/agentrt/session"
	"github.com/agentrt/agentrt/session/memstore"
	"github.com/agentrt/agentrt/session/storetest"
	"github.com/agentrt/agentrt/temporal"
	"github.com/agentrt/agentrt/tool"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"
)

// drives is an agentrt.Engine that keeps the runs it is handed, for the
// test to signal its workflow with.
type drives chan agentrt.Drive

func (d drives) Drive(_ context.Context, dr agentrt.Drive) error {
	d <- dr
	return nil
}

// next is the next run handed over (10 s at most: the runner hands it
// over from a goroutine of its own).
func (d drives) next(t *testing.T) agentrt.Drive {
	t.Helper()
	select {
	case dr := <-d:
		return dr
	case <-time.After(10 * time.Second):
		t.Fatal("no run was handed to the engine")
		return agentrt.Drive{}
	}
}

// rig is a "serve" runner handing its runs to a test workflow
// environment, whose activities step them through a "worker" runner of
// the same store and agents.
type rig struct {
	serve, worker *agentrt.Runner
	store         *memstore.Store
	env           *testsuite.TestWorkflowEnvironment
	drives        drives
	deploys       atomic.Int32
}

func newRig(t *testing.T, expires time.Duration, replies ...scripted.Reply) *rig {
	t.Helper()
	return newRigOn(t, "worker-1", expires, replies...)
}

// newRigOn is newRig with the worker's own queue ("": none, so that each
// step lets go of its session and runs a batch whole).
func newRigOn(t *testing.T, queue string, expires time.Duration, replies ...scripted.Reply) *rig {
	t.Helper()
	return newRigWith(t, queue, expires, scripted.New("m", replies...))
}

// newRigWith is newRigOn with the agent's model m.
func newRigWith(t *testing.T, queue string, expires time.Duration, m model.Model) *rig {
	t.Helper()
	var s testsuite.WorkflowTestSuite
	s.SetLogger(log.NewStructuredLogger(slog.New(slog.DiscardHandler)))
	g := &rig{store: memstore.New(), env: s.NewTestWorkflowEnvironment(), drives: make(drives, 8)}
	deploy := tool.WithMeta(tool.Must(tool.New("deploy", "deploys", func(_ context.Context, in struct {
		Env string `json:"env"`
	}) (string, error) {
		g.deploys.Add(1)
		return "deployed to " + in.Env, nil
	})), tool.Meta{Approval: tool.ApprovalAsk})
	lookup := tool.Must(tool.New("lookup", "looks an order up", func(_ context.Context, in struct {
		Order string `json:"order"`
	}) (string, error) {
		return "order " + in.Order + " ships today", nil
	}))
	reg, err := tool.NewRegistry(deploy, lookup)
	if err != nil {
		t.Fatal(err)
	}
	a := &agentrt.Agent{Name: "assistant", Model: m, Tools: reg}
	if expires > 0 {
		a.Approval = agentrt.ApprovalPolicy{Expires: expires}
	}
	// Both runners read the workflow's clock: the expiry the timer waits
	// for is the one the runtime checks.
	now := func() time.Time { return g.env.Now() }
	g.worker, err = agentrt.NewRunner(agentrt.Config{Store: g.store, Agents: []*agentrt.Agent{a}, Owner: "worker", Now: now})
	if err != nil {
		t.Fatal(err)
	}
	g.serve, err = agentrt.NewRunner(agentrt.Config{Store: g.store, Agents: []*agentrt.Agent{a}, Owner: "serve", Engine: g.drives, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = g.serve.Close(context.Background())
		_ = g.worker.Close(context.Background())
	})
	temporal.Register(g.env, g.worker, temporal.Options{Queue: queue})
	return g
}

// start starts a turn of the assistant in session s1 with text, and
// returns the run handed to the engine.
func (g *rig) start(t *testing.T, text string) agentrt.Drive {
	t.Helper()
	if _, err := g.serve.Start(context.Background(), "s1", agentrt.Input{Agent: "assistant", Text: text}); err != nil {
		t.Fatal(err)
	}
	return g.drives.next(t)
}

// events are the types of session id's log.
func (g *rig) events(t *testing.T, id string) []session.Type {
	t.Helper()
	var out []session.Type
	for e, err := range g.store.Events(session.WithTenant(context.Background(), session.DefaultTenant), id, 0) {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, e.Type)
	}
	return out
}

// continuedAsNew checks that the workflow run ended by continuing as
// new (the turn over), and returns the next run's input.
func continuedAsNew(t *testing.T, env *testsuite.TestWorkflowEnvironment) temporal.SessionInput {
	t.Helper()
	if !env.IsWorkflowCompleted() {
		t.Fatal("the workflow run did not end")
	}
	var can *workflow.ContinueAsNewError
	if err := env.GetWorkflowError(); !errors.As(err, &can) {
		t.Fatalf("the workflow run ended with %v, want to continue as new", err)
	}
	var in temporal.SessionInput
	if err := json.Unmarshal(can.Input.Payloads[0].Data, &in); err != nil {
		t.Fatal(err)
	}
	return in
}

// A turn with tool calls: the workflow steps it, one activity a step (a
// model call, the tools, the model again, the answer) — the tool call an
// activity of its own on the worker holding the session — and continues
// as new when it ends; the handle of the runner that started it sees it
// done; what the activities carry is small whatever the conversation.
// Without a queue of the worker's own, the batch runs in its step.
func TestTurnWithTools(t *testing.T) {
	for _, tc := range []struct {
		queue string
		want  []string
	}{
		{"worker-1", []string{"agentrt.Step", "agentrt.Step", "agentrt.Tool", "agentrt.Step", "agentrt.Step"}},
		{"", []string{"agentrt.Step", "agentrt.Step", "agentrt.Step", "agentrt.Step"}},
	} {
		t.Run("queue="+tc.queue, func(t *testing.T) {
			g := newRigOn(t, tc.queue, 0,
				scripted.Reply{ToolCalls: []scripted.Call{scripted.ToolCall("lookup", `{"order":"42"}`)}},
				scripted.Reply{Text: "Order 42 ships today.", Expect: &scripted.Expect{LastToolResultContains: "ships today"}})
			h, err := g.serve.Start(context.Background(), "s1", agentrt.Input{Agent: "assistant", Text: "where is order 42?"})
			if err != nil {
				t.Fatal(err)
			}
			d := g.drives.next(t)
			var sizes []int
			var started []string
			var mu sync.Mutex
			g.env.SetOnActivityCompletedListener(func(info *activity.Info, result converter.EncodedValue, err error) {
				var r json.RawMessage
				_ = result.Get(&r)
				mu.Lock()
				sizes = append(sizes, len(r))
				mu.Unlock()
			})
			g.env.SetOnActivityStartedListener(func(info *activity.Info, ctx context.Context, args converter.EncodedValues) {
				mu.Lock()
				started = append(started, info.ActivityType.Name)
				mu.Unlock()
			})
			g.env.ExecuteWorkflow(temporal.WorkflowName, temporal.SessionInput{Tenant: d.Tenant, SessionID: d.SessionID, Next: &d})
			in := continuedAsNew(t, g.env)
			if in.Next != nil || in.Turns != 1 || in.SessionID != "s1" {
				t.Errorf("the next workflow run: %+v", in)
			}
			res, err := h.Wait(context.Background())
			if err != nil || res.Status != session.StatusDone || res.Text != "Order 42 ships today." {
				t.Fatalf("the run: %+v %v", res, err)
			}
			if diff := cmp.Diff(tc.want, started); diff != "" {
				t.Errorf("the activities (-want +got):\n%s", diff)
			}
			if got := g.events(t, "s1"); got[len(got)-1] != session.TypeRunFinished {
				t.Errorf("the log: %v", got)
			}
			for _, n := range sizes {
				if n > 512 {
					t.Errorf("an activity's result of %d bytes", n)
				}
			}
		})
	}
}

// An approval answered three days later (skipped time) continues the run
// once, in the same workflow run: the answer's runner hands the run over
// again, and the workflow steps it.
func TestApprovalDaysLater(t *testing.T) {
	g := newRig(t, 0,
		scripted.Reply{ToolCalls: []scripted.Call{scripted.ToolCall("deploy", `{"env":"prod"}`)}},
		scripted.Reply{Text: "deployed", Expect: &scripted.Expect{LastToolResultContains: "deployed to prod"}})
	d := g.start(t, "deploy")
	var out *agentrt.Resolved
	g.env.RegisterDelayedCallback(func() {
		st, err := g.serve.Load(context.Background(), "s1")
		if err != nil || st.Status != session.StatusWaiting || len(st.Requests) != 1 {
			t.Errorf("three days later: %v %v", st, err)
			return
		}
		if out, err = g.serve.ResolveAndContinue(context.Background(), "s1", st.Requests[0].ID, agentrt.Resolution{Decision: "approve", By: "ana"}); err != nil {
			t.Error(err)
			return
		}
		g.env.SignalWorkflow(temporal.SignalDrive, g.drives.next(t))
	}, 72*time.Hour)
	g.env.ExecuteWorkflow(temporal.WorkflowName, temporal.SessionInput{Tenant: d.Tenant, SessionID: d.SessionID, Next: &d})
	continuedAsNew(t, g.env)
	if out == nil || out.Run == nil {
		t.Fatal("the answer did not continue the run")
	}
	res, err := out.Run.Wait(context.Background())
	if err != nil || res.Status != session.StatusDone || res.Text != "deployed" || g.deploys.Load() != 1 {
		t.Fatalf("after the answer: %+v %v (deployed %d times)", res, err, g.deploys.Load())
	}
}

// A request's deadline is a workflow timer: once it passes, the request
// gets its default decision (reject) and the run goes on, once.
func TestApprovalExpires(t *testing.T) {
	g := newRig(t, time.Hour,
		scripted.Reply{ToolCalls: []scripted.Call{scripted.ToolCall("deploy", `{"env":"prod"}`)}},
		scripted.Reply{Text: "not deployed", Expect: &scripted.Expect{LastToolResultContains: "expired"}})
	h, err := g.serve.Start(context.Background(), "s1", agentrt.Input{Agent: "assistant", Text: "deploy"})
	if err != nil {
		t.Fatal(err)
	}
	d := g.drives.next(t)
	g.env.ExecuteWorkflow(temporal.WorkflowName, temporal.SessionInput{Tenant: d.Tenant, SessionID: d.SessionID, Next: &d})
	continuedAsNew(t, g.env)
	if res, err := h.Wait(context.Background()); err != nil || res.Status != session.StatusWaiting {
		t.Fatalf("the first run: %+v %v", res, err)
	}
	st, err := g.worker.Load(context.Background(), "s1")
	if err != nil || st.Status != session.StatusDone || st.Final != "not deployed" || g.deploys.Load() != 0 {
		t.Fatalf("after the deadline: %+v %v (deployed %d times)", st, err, g.deploys.Load())
	}
}

// A run interrupted or canceled by a person (through any runner's
// control request) between two of its steps ends the turn: the next step
// finds the run stopped, and the workflow continues as new.
func TestStoppedBetweenSteps(t *testing.T) {
	for _, how := range []string{"interrupt", "cancel"} {
		t.Run(how, func(t *testing.T) {
			g := newRig(t, 0,
				scripted.Reply{ToolCalls: []scripted.Call{scripted.ToolCall("lookup", `{"order":"42"}`)}},
				scripted.Reply{Text: "never said"})
			h, err := g.serve.Start(context.Background(), "s1", agentrt.Input{Agent: "assistant", Text: "where is 42?"})
			if err != nil {
				t.Fatal(err)
			}
			d := g.drives.next(t)
			var once sync.Once
			g.env.SetOnActivityCompletedListener(func(*activity.Info, converter.EncodedValue, error) {
				once.Do(func() { // after the first step, before the second
					ctx := context.Background()
					var err error
					if how == "interrupt" {
						_, err = g.serve.Interrupt(ctx, "s1", "newer input")
					} else {
						_, err = g.serve.Cancel(ctx, "s1", "the person left")
					}
					if err != nil {
						t.Error(err)
					}
				})
			})
			g.env.ExecuteWorkflow(temporal.WorkflowName, temporal.SessionInput{Tenant: d.Tenant, SessionID: d.SessionID, Next: &d})
			continuedAsNew(t, g.env)
			res, err := h.Wait(context.Background())
			want := session.StatusInterrupted
			if how == "cancel" {
				want = session.StatusCanceled
			}
			if err != nil || res.Status != want {
				t.Fatalf("the run: %+v %v", res, err)
			}
		})
	}
}

// A step whose activity fails — here the store refuses the commit of the
// tool's result, as a worker that dies after the tool ran would leave it —
// is tried again, and the tool runs again with the same idempotency key:
// the retry goes on from the log, where the call started and has no
// result.
func TestStepRetriedWithTheSameKey(t *testing.T) {
	for _, queue := range []string{"", "worker-1"} {
		t.Run("queue="+queue, func(t *testing.T) { stepRetried(t, queue) })
	}
}

// stepRetried is TestStepRetriedWithTheSameKey with the worker's own
// queue: with one, the tool call's activity fails (tried once) and the
// next step runs the call again; without, the step is tried again.
func stepRetried(t *testing.T, queue string) {
	var s testsuite.WorkflowTestSuite
	s.SetLogger(log.NewStructuredLogger(slog.New(slog.DiscardHandler)))
	env := s.NewTestWorkflowEnvironment()
	store := memstore.New()
	faults := &storetest.Faults{}
	var mu sync.Mutex
	var keys []string
	charge := tool.Must(tool.New("charge", "charges a card", func(ctx context.Context, _ struct{}) (string, error) {
		info, _ := tool.CallInfoFrom(ctx)
		mu.Lock()
		keys = append(keys, info.IdempotencyKey)
		first := len(keys) == 1
		mu.Unlock()
		if first {
			faults.FailCommit(1, false) // the commit of this call's result
		}
		return "charged", nil
	}))
	reg, err := tool.NewRegistry(charge)
	if err != nil {
		t.Fatal(err)
	}
	a := &agentrt.Agent{Name: "assistant", Tools: reg, Model: scripted.New("m",
		scripted.Reply{ToolCalls: []scripted.Call{scripted.ToolCall("charge", `{}`)}},
		scripted.Reply{Text: "charged once", Expect: &scripted.Expect{LastToolResultContains: "charged"}})}
	now := func() time.Time { return env.Now() }
	worker, err := agentrt.NewRunner(agentrt.Config{Store: storetest.Faulty(store, faults), Agents: []*agentrt.Agent{a}, Owner: "worker", Now: now})
	if err != nil {
		t.Fatal(err)
	}
	dr := make(drives, 4)
	serve, err := agentrt.NewRunner(agentrt.Config{Store: store, Agents: []*agentrt.Agent{a}, Owner: "serve", Engine: dr, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = serve.Close(context.Background())
		_ = worker.Close(context.Background())
	})
	temporal.Register(env, worker, temporal.Options{Queue: queue})
	var attempts []int32
	env.SetOnActivityStartedListener(func(info *activity.Info, _ context.Context, _ converter.EncodedValues) {
		attempts = append(attempts, info.Attempt)
	})
	if res := turnOn(t, env, serve, dr, "s1", agentrt.Input{Agent: "assistant", Text: "charge me"}); res.Text != "charged once" {
		t.Fatalf("the run: %+v", res)
	}
	if len(keys) != 2 || keys[0] != keys[1] || keys[0] == "" {
		t.Errorf("the tool ran with keys %q, want twice with one key", keys)
	}
	retried := false
	for _, n := range attempts {
		retried = retried || n > 1
	}
	if !retried && queue == "" {
		t.Errorf("no step was tried again: attempts %v", attempts)
	}
}

// A delegation to a sub-agent runs as a child workflow of the sub-agent's
// session (a workflow id of its own), which ends with the child's turn;
// an activity then records its answer as the parent's call's result.
func TestSubagentChildWorkflow(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	s.SetLogger(log.NewStructuredLogger(slog.New(slog.DiscardHandler)))
	env := s.NewTestWorkflowEnvironment()
	store := memstore.New()
	agents := bossAndCalc(t)
	serve, dr := engineRunners(t, env, store, agents, agentrt.Config{})
	var children []string
	env.SetOnChildWorkflowStartedListener(func(info *workflow.Info, _ workflow.Context, args converter.EncodedValues) {
		var in temporal.SessionInput
		_ = args.Get(&in)
		children = append(children, info.WorkflowExecution.ID+" "+fmt.Sprint(in.Child))
	})
	if res := turnOn(t, env, serve, dr, "p1", agentrt.Input{Agent: "boss", Text: "what is 6*7?"}); res.Text != "It is 42." {
		t.Fatalf("the run: %+v", res)
	}
	if len(children) != 1 || !strings.HasPrefix(children[0], temporal.WorkflowID(session.DefaultTenant, "p1.")) || !strings.HasSuffix(children[0], " true") {
		t.Errorf("the child workflows: %v", children)
	}
	select {
	case extra := <-dr:
		t.Errorf("the sub-agent's run was handed to the engine as a workflow of its own: %+v", extra)
	default:
	}
}

// A run handed over within a second of the turn's end (a client that
// sends its next message the moment it has the answer) is received by the
// ending workflow run and carried into the next (SessionInput.Next): it
// does not signal a run as it continues as new.
func TestNextTurnWithinSettle(t *testing.T) {
	g := newRig(t, 0, scripted.Reply{Text: "one"})
	d := g.start(t, "hi")
	next := agentrt.Drive{Tenant: d.Tenant, SessionID: d.SessionID, RunID: "run-2", Why: "start"}
	g.env.RegisterDelayedCallback(func() { g.env.SignalWorkflow(temporal.SignalDrive, next) }, 500*time.Millisecond)
	g.env.ExecuteWorkflow(temporal.WorkflowName, temporal.SessionInput{Tenant: d.Tenant, SessionID: d.SessionID, Next: &d})
	in := continuedAsNew(t, g.env)
	if in.Next == nil || in.Next.RunID != "run-2" || in.Turns != 1 {
		t.Fatalf("the next workflow run's input: %+v", in)
	}
}

// turnOn starts a turn of session id through serve, runs its workflow in
// env with the run dr was handed, and returns the turn's result, which
// must be done.
func turnOn(t *testing.T, env *testsuite.TestWorkflowEnvironment, serve *agentrt.Runner, dr drives, id string, in agentrt.Input) *agentrt.Result {
	t.Helper()
	h, err := serve.Start(context.Background(), id, in)
	if err != nil {
		t.Fatal(err)
	}
	d := dr.next(t)
	env.ExecuteWorkflow(temporal.WorkflowName, temporal.SessionInput{Tenant: d.Tenant, SessionID: d.SessionID, Next: &d})
	continuedAsNew(t, env)
	res, err := h.Wait(context.Background())
	if err != nil || res.Status != session.StatusDone {
		t.Fatalf("the run: %+v %v", res, err)
	}
	return res
}

// The gateway's interrupt policy on Temporal: newer input from the
// source while the turn's model call runs in an activity interrupts the
// run there (a control request the worker acts on); the workflow's turn
// ends interrupted; the gateway restarts the turn, which a workflow run
// steps with both messages in its history.
func TestInterruptAndRestartMergedInput(t *testing.T) {
	// The model answers what the last message says, slowly for the first.
	g := newRigWith(t, "worker-1", 0, modelFunc(func(ctx context.Context, req *model.Request) (string, error) {
		last := req.Messages[len(req.Messages)-1].Text()
		if last == "order 42" {
			select {
			case <-ctx.Done():
				return "", ctx.Err()
			case <-time.After(3 * time.Second):
			}
		}
		return "about " + last, nil
	}))
	gw, err := gateway.New(gateway.Config{Runner: g.serve})
	if err != nil {
		t.Fatal(err)
	}
	gctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = gw.Run(gctx) })
	defer func() { cancel(); wg.Wait() }()
	ctx := context.Background()
	if _, err := gw.Submit(ctx, gateway.Input{Source: "chat", Agent: "assistant", Text: "order 42"}); err != nil {
		t.Fatal(err)
	}
	d := g.drives.next(t)
	g.env.SetTestTimeout(time.Minute) // the model call runs, for real, until the interruption reaches it
	var once sync.Once
	g.env.SetOnActivityStartedListener(func(*activity.Info, context.Context, converter.EncodedValues) {
		once.Do(func() { // the first step: the model call, 3 s
			if _, err := gw.Submit(ctx, gateway.Input{Source: "chat", Agent: "assistant", Text: "sorry, 43"}); err != nil {
				t.Error(err)
			}
		})
	})
	g.env.ExecuteWorkflow(temporal.WorkflowName, temporal.SessionInput{Tenant: d.Tenant, SessionID: d.SessionID, Next: &d})
	continuedAsNew(t, g.env)
	// The restart: handed over again, stepped by the session's next
	// workflow run.
	d2 := g.drives.next(t)
	if d2.RunID == d.RunID {
		t.Fatalf("the restart is the same run: %+v", d2)
	}
	var s testsuite.WorkflowTestSuite
	s.SetLogger(log.NewStructuredLogger(slog.New(slog.DiscardHandler)))
	env2 := s.NewTestWorkflowEnvironment()
	env2.SetTestTimeout(time.Minute)
	temporal.Register(env2, g.worker, temporal.Options{Queue: "worker-1"})
	env2.ExecuteWorkflow(temporal.WorkflowName, temporal.SessionInput{Tenant: d2.Tenant, SessionID: d2.SessionID, Next: &d2})
	continuedAsNew(t, env2)
	st, err := g.serve.Load(ctx, d.SessionID)
	if err != nil {
		t.Fatal(err)
	}
	var users []string
	for _, m := range st.Messages {
		if m.Role == model.RoleUser {
			users = append(users, m.Text())
		}
	}
	var statuses []session.Status
	for e, err := range g.store.Events(session.WithTenant(ctx, session.DefaultTenant), d.SessionID, 0) {
		if err != nil {
			t.Fatal(err)
		}
		if f, ok := e.Data.(*session.RunFinished); ok {
			statuses = append(statuses, f.Status)
		}
	}
	if diff := cmp.Diff([]string{"order 42", "sorry, 43"}, users); diff != "" || st.Final != "about sorry, 43" ||
		!slices.Equal(statuses, []session.Status{session.StatusInterrupted, session.StatusDone}) {
		t.Errorf("the history's user messages (-want +got):\n%s\nthe answer %q, the runs %v", diff, st.Final, statuses)
	}
}

// modelFunc is a model that answers with what its function returns.
type modelFunc func(context.Context, *model.Request) (string, error)

func (modelFunc) Name() string { return "func" }

func (f modelFunc) Stream(ctx context.Context, req *model.Request) iter.Seq2[model.Chunk, error] {
	return func(yield func(model.Chunk, error) bool) {
		text, err := f(ctx, req)
		if err != nil {
			yield(model.Chunk{}, err)
			return
		}
		yield(model.Chunk{Text: text, FinishReason: model.FinishStop}, nil)
	}
}

// engineRunners are a "serve" runner of agents over store handing its
// runs to dr, and a "worker" runner (wcfg, with an engine of its own for
// its sub-agents) whose activities env runs, on queue worker-1; both read
// env's clock.
func engineRunners(t *testing.T, env *testsuite.TestWorkflowEnvironment, store session.Store, agents []*agentrt.Agent, wcfg agentrt.Config) (*agentrt.Runner, drives) {
	t.Helper()
	now := func() time.Time { return env.Now() }
	dr := make(drives, 4)
	wcfg.Store, wcfg.Agents, wcfg.Owner, wcfg.Engine, wcfg.EngineName, wcfg.Now = store, agents, "worker", dr, temporal.EngineName, now
	worker, err := agentrt.NewRunner(wcfg)
	if err != nil {
		t.Fatal(err)
	}
	serve, err := agentrt.NewRunner(agentrt.Config{Store: store, Agents: agents, Owner: "serve", Engine: dr, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = serve.Close(context.Background())
		_ = worker.Close(context.Background())
	})
	temporal.Register(env, worker, temporal.Options{Queue: "worker-1"})
	return serve, dr
}

// bossAndCalc are an agent that delegates "compute 6*7" to its sub-agent
// calc, then says the answer, and calc, which answers 42.
func bossAndCalc(t *testing.T) []*agentrt.Agent {
	t.Helper()
	reg, err := tool.NewRegistry(agentrt.SubAgent("calc", "computes"))
	if err != nil {
		t.Fatal(err)
	}
	boss := &agentrt.Agent{Name: "boss", Tools: reg, Model: scripted.New("boss",
		scripted.Reply{ToolCalls: []scripted.Call{scripted.ToolCall("calc", `{"task":"compute 6*7"}`)}},
		scripted.Reply{Text: "It is 42.", Expect: &scripted.Expect{LastToolResultContains: "42"}})}
	calc := &agentrt.Agent{Name: "calc", Model: scripted.New("calc", scripted.Reply{Text: "42"})}
	return []*agentrt.Agent{boss, calc}
}
