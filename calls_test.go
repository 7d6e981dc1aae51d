package agentrt_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/model/scripted"
	"github.com/agentrt/agentrt/session"
	"github.com/agentrt/agentrt/session/memstore"
	"github.com/agentrt/agentrt/tool"
)

// callsRig is a runner whose agent calls slow (gated), quick and denied
// in one batch, then answers.
type callsRig struct {
	r, other *agentrt.Runner
	store    *memstore.Store
	gate     chan struct{} // slow returns once it is closed, or its context ends
	started  chan struct{} // slow began
	mu       sync.Mutex
	keys     []tool.CallInfo // each tool run's call info, in order
	slowErr  error           // how slow's context ended, if it did
}

func newCallsRig(t *testing.T, ttl time.Duration) *callsRig {
	t.Helper()
	g := &callsRig{store: memstore.New(), gate: make(chan struct{}), started: make(chan struct{}, 4)}
	note := func(ctx context.Context) {
		info, _ := tool.CallInfoFrom(ctx)
		g.mu.Lock()
		g.keys = append(g.keys, info)
		g.mu.Unlock()
	}
	slow := tool.Must(tool.New("slow", "waits", func(ctx context.Context, _ struct{}) (string, error) {
		note(ctx)
		g.started <- struct{}{}
		select {
		case <-g.gate:
			return "slow done", nil
		case <-ctx.Done():
			g.mu.Lock()
			g.slowErr = ctx.Err()
			g.mu.Unlock()
			return "", ctx.Err()
		}
	}))
	quick := tool.Must(tool.New("quick", "answers", func(ctx context.Context, _ struct{}) (string, error) {
		note(ctx)
		return "quick done", nil
	}))
	denied := tool.WithMeta(tool.Must(tool.New("denied", "never runs", func(ctx context.Context, _ struct{}) (string, error) {
		note(ctx)
		return "ran", nil
	})), tool.Meta{Approval: tool.ApprovalDeny})
	reg, err := tool.NewRegistry(slow, quick, denied)
	if err != nil {
		t.Fatal(err)
	}
	agents := func() []*agentrt.Agent {
		return []*agentrt.Agent{{Name: "a", Tools: reg, Model: scripted.New("m",
			scripted.Reply{ToolCalls: []scripted.Call{
				scripted.ToolCall("slow", `{}`), scripted.ToolCall("quick", `{}`), scripted.ToolCall("denied", `{}`)}},
			scripted.Reply{Text: "all done"})}}
	}
	mk := func(owner string) *agentrt.Runner {
		r, err := agentrt.NewRunner(agentrt.Config{Store: g.store, Agents: agents(), Owner: owner, LeaseTTL: ttl})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = r.Close(context.Background()) })
		return r
	}
	g.r, g.other = mk("worker-1"), mk("worker-2")
	return g
}

// runSlow runs slow's call id on a goroutine of its own, once the tool
// has begun: its outcome comes on the channel.
func (g *callsRig) runSlow(id string) <-chan agentrt.CallOutcome {
	done := make(chan agentrt.CallOutcome, 1)
	go func() {
		o, _ := g.r.RunCall(context.Background(), "s", id)
		done <- o
	}()
	<-g.started
	return done
}

// begin starts a turn and steps it to its batch: the calls it left.
func (g *callsRig) begin(t *testing.T) []agentrt.DeferredCall {
	t.Helper()
	ctx := context.Background()
	if _, err := g.r.Begin(ctx, "s", agentrt.Input{Agent: "a", Text: "go"}); err != nil {
		t.Fatal(err)
	}
	if _, calls, err := g.r.StepSessionCalls(ctx, "s"); err != nil || calls != nil {
		t.Fatalf("the model step: %v %v", calls, err) // the model call leaves nothing
	}
	events, calls, err := g.r.StepSessionCalls(ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	// The denied call is answered in the step; the others wait, not yet
	// announced.
	var got []string
	for _, e := range events {
		switch d := e.Data.(type) {
		case *session.ToolCall:
			got = append(got, "call "+d.Name+" blocked="+d.Blocked)
		case *session.ToolResult:
			got = append(got, "result "+d.Name+" "+d.Error)
		}
	}
	want := []string{"call denied blocked=calls to denied are denied by policy", "result denied calls to denied are denied by policy"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the step's events (-want +got):\n%s", diff)
	}
	if len(calls) != 2 || calls[0].Name != "slow" || calls[1].Name != "quick" || calls[0].Attempt != 1 {
		t.Fatalf("the calls left: %+v", calls)
	}
	return calls
}

func (g *callsRig) log(t *testing.T) (types []string, last *session.Session) {
	t.Helper()
	ctx := session.WithTenant(context.Background(), session.DefaultTenant)
	for e, err := range g.store.Events(ctx, "s", 0) {
		if err != nil {
			t.Fatal(err)
		}
		s := string(e.Type)
		switch d := e.Data.(type) {
		case *session.ToolCall:
			s += " " + d.Name
		case *session.ToolResult:
			s += " " + d.Name
		}
		types = append(types, s)
	}
	sess, err := g.store.GetSession(ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	return types, sess
}

// Each call of a batch runs in a RunCall of its own, concurrently: one
// commits its result while another still runs; each is announced as it
// begins and carries its idempotency key; a call runs once (a second
// RunCall of it is not_held); once all have ended, the next step calls
// the model with every result.
func TestRunCallEachCall(t *testing.T) {
	g := newCallsRig(t, 0)
	calls := g.begin(t)
	ctx := context.Background()
	var wg sync.WaitGroup
	var slow agentrt.CallOutcome
	var slowErr error
	wg.Go(func() { slow, slowErr = g.r.RunCall(ctx, "s", calls[0].ID) })
	<-g.started
	quick, err := g.r.RunCall(ctx, "s", calls[1].ID)
	if err != nil || !quick.Ran || !quick.OK {
		t.Fatalf("quick: %+v %v", quick, err)
	}
	// quick's result is stored while slow runs; the session is busy.
	types, sess := g.log(t)
	if types[len(types)-1] != "tool_result quick" || sess.Status != session.StatusRunning {
		t.Fatalf("while slow runs: %v (%s)", types, sess.Status)
	}
	if _, err := g.other.StepSession(ctx, "s"); agentrt.AsError(err).ErrorCode() != agentrt.CodeLeaseHeld {
		t.Fatalf("another runner stepped the session while its calls ran: %v", err)
	}
	if _, err := g.r.StepSession(ctx, "s"); agentrt.AsError(err).ErrorCode() != agentrt.CodeBusy {
		t.Fatalf("a step while the calls ran: %v", err)
	}
	close(g.gate)
	wg.Wait()
	if slowErr != nil || !slow.Ran || !slow.OK {
		t.Fatalf("slow: %+v %v", slow, slowErr)
	}
	if _, err := g.r.RunCall(ctx, "s", calls[1].ID); agentrt.AsError(err).ErrorCode() != agentrt.CodeNotHeld {
		t.Fatalf("a call run twice: %v", err)
	}
	for range 2 { // the model call, then the answer
		if _, err := g.r.StepSession(ctx, "s"); err != nil {
			t.Fatal(err)
		}
	}
	types, sess = g.log(t)
	want := []string{"run_started", "round_started", "model_started", "model_finished",
		"tool_call denied", "tool_result denied",
		"tool_call slow", "tool_call quick", "tool_result quick", "tool_result slow",
		"round_started", "model_started", "model_finished", "final", "run_finished"}
	if diff := cmp.Diff(want, types); diff != "" || sess.Status != session.StatusDone {
		t.Errorf("the log (-want +got):\n%s\nstatus %s", diff, sess.Status)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.keys) != 2 || g.keys[0].CallID != calls[0].ID || g.keys[0].SessionID != "s" || g.keys[0].Attempt != 1 {
		t.Errorf("the tools' call info: %+v", g.keys)
	}
}

// A cancellation while a call runs reaches the tool's context; the run
// ends canceled once the calls have ended, and the session is let go of.
func TestRunCallCanceled(t *testing.T) {
	g := newCallsRig(t, 0)
	calls := g.begin(t)
	ctx := context.Background()
	done := g.runSlow(calls[0].ID)
	out, err := g.other.Cancel(ctx, "s", "stop it")
	if err != nil || !out.Acted || out.Status != session.StatusCanceled {
		t.Fatalf("Cancel: %+v %v", out, err)
	}
	if o := <-done; o.Ran {
		t.Errorf("the canceled call says it ran: %+v", o)
	}
	g.mu.Lock()
	slowErr := g.slowErr
	g.mu.Unlock()
	if !errors.Is(slowErr, context.Canceled) {
		t.Errorf("the tool's context: %v", slowErr)
	}
	// quick was never claimed: not begun, nor announced.
	if _, err := g.r.RunCall(ctx, "s", calls[1].ID); agentrt.AsError(err).ErrorCode() != agentrt.CodeNotHeld {
		t.Errorf("a call of a canceled run: %v", err)
	}
	types, sess := g.log(t)
	for _, ty := range types {
		if ty == "tool_call quick" {
			t.Errorf("the unclaimed call was announced: %v", types)
		}
	}
	if sess.Status != session.StatusCanceled || sess.Lease != nil && sess.Lease.Owner != "" {
		t.Errorf("the session: %s, lease %+v", sess.Status, sess.Lease)
	}
}

// An interruption while calls run lets them finish, stores their results,
// then ends the turn interrupted (as for a batch run in one step).
func TestRunCallInterrupted(t *testing.T) {
	g := newCallsRig(t, 0)
	calls := g.begin(t)
	ctx := context.Background()
	done := g.runSlow(calls[0].ID)
	if _, err := g.r.RunCall(ctx, "s", calls[1].ID); err != nil {
		t.Fatal(err)
	}
	interrupted := make(chan error, 1)
	go func() {
		_, err := g.other.Interrupt(ctx, "s", "newer input")
		interrupted <- err
	}()
	// The interruption waits for the call in flight, which is not canceled.
	select {
	case err := <-interrupted:
		t.Fatalf("the interruption ended while a call ran: %v", err)
	case <-time.After(50 * time.Millisecond):
	}
	close(g.gate)
	if o := <-done; !o.Ran || !o.OK {
		t.Errorf("slow: %+v", o)
	}
	if err := <-interrupted; err != nil {
		t.Fatal(err)
	}
	types, sess := g.log(t)
	if sess.Status != session.StatusInterrupted || types[len(types)-4] != "tool_result slow" {
		t.Errorf("the log: %v (%s)", types, sess.Status)
	}
}

// Calls no RunCall claims are given up — at once by LetGoAll, or after a
// lease TTL — and the session's next step, in any runner, runs them, not
// announced before: their first attempt.
func TestUnclaimedCallsGivenUp(t *testing.T) {
	t.Run("LetGoAll", func(t *testing.T) {
		g := newCallsRig(t, 0)
		g.begin(t)
		g.r.LetGoAll()
		close(g.gate)
		if _, err := g.other.StepSession(context.Background(), "s"); err != nil {
			t.Fatal(err)
		}
		g.checkRanInOneStep(t)
	})
	t.Run("ttl", func(t *testing.T) {
		g := newCallsRig(t, 300*time.Millisecond)
		g.begin(t)
		close(g.gate)
		deadline := time.Now().Add(10 * time.Second)
		for {
			_, err := g.other.StepSession(context.Background(), "s")
			if err == nil {
				break
			}
			if agentrt.AsError(err).ErrorCode() != agentrt.CodeLeaseHeld || time.Now().After(deadline) {
				t.Fatal(err)
			}
			time.Sleep(20 * time.Millisecond) // the lease is given up after a TTL: looked at again
		}
		g.checkRanInOneStep(t)
	})
}

func (g *callsRig) checkRanInOneStep(t *testing.T) {
	t.Helper()
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.keys) != 2 || g.keys[0].Attempt != 1 || g.keys[1].Attempt != 1 {
		t.Errorf("the calls' runs: %+v", g.keys)
	}
	types, _ := g.log(t)
	n := 0
	for _, ty := range types {
		if ty == "tool_call slow" || ty == "tool_call quick" {
			n++
		}
	}
	if n != 2 {
		t.Errorf("the calls were announced %d times: %v", n, types)
	}
}

// A fresh delegation to a sub-agent in a step that leaves its calls: the
// call is announced and the child's turn begun (and let go of) in the
// step, for an engine to run; RunCall, once that turn ended, records its
// answer as the call's result. A child that waits for a person makes its
// requests the parent's.
func TestRunCallCollectsChild(t *testing.T) {
	for _, tc := range []struct {
		name   string
		calc   []scripted.Reply
		parent session.Status
	}{
		{"answered", []scripted.Reply{{Text: "42"}}, session.StatusDone},
		{"waiting", []scripted.Reply{{ToolCalls: []scripted.Call{scripted.ToolCall("deploy", `{}`)}}}, session.StatusWaiting},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			deploy := tool.WithMeta(tool.Must(tool.New("deploy", "deploys", func(context.Context, struct{}) (string, error) { return "ok", nil })),
				tool.Meta{Approval: tool.ApprovalAsk})
			boss, calc := delegation(t, scripted.New("boss", delegate("compute 6*7"),
				scripted.Reply{Text: "It is 42.", Expect: &scripted.Expect{LastToolResultContains: "42"}}),
				scripted.New("calc-model", tc.calc...), deploy)
			r, store, calls := delegatingBatch(t, boss, calc)
			if calls[0].Child.Agent != "calc" || calls[0].Child.RunID == "" {
				t.Fatalf("the calls left: %+v", calls)
			}
			child := calls[0].Child.SessionID
			// The child's turn is begun and let go of: any process steps it.
			cs, err := store.GetSession(session.WithTenant(ctx, session.DefaultTenant), child)
			if err != nil || cs.Status != session.StatusRunning || cs.Lease != nil && cs.Lease.Owner != "" {
				t.Fatalf("the child's session: %+v %v", cs, err)
			}
			// An engine runs the child's turn elsewhere.
			other, err := agentrt.NewRunner(agentrt.Config{Store: store, Agents: []*agentrt.Agent{boss, calc}, Owner: "engine"})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = other.Close(ctx) })
			for {
				if _, err := other.StepSession(ctx, child); err != nil {
					break // its turn is over
				}
			}
			other.LetGo(ctx, child)
			out, err := r.RunCall(ctx, "p", calls[0].ID)
			if err != nil {
				t.Fatal(err)
			}
			st, err := r.Load(ctx, "p")
			if err != nil {
				t.Fatal(err)
			}
			if tc.parent == session.StatusWaiting {
				if _, err := r.StepSession(ctx, "p"); err != nil { // the policy: wait
					t.Fatal(err)
				}
				if st, err = r.Load(ctx, "p"); err != nil {
					t.Fatal(err)
				}
				if out.Ran || st.Status != session.StatusWaiting || len(st.Requests) != 1 || st.Requests[0].Child == nil {
					t.Fatalf("the parent: %s, requests %+v, outcome %+v", st.Status, st.Requests, out)
				}
				return
			}
			if !out.Ran || !out.OK {
				t.Fatalf("the collected call: %+v", out)
			}
			for st.Status == session.StatusRunning {
				if _, err := r.StepSession(ctx, "p"); err != nil {
					t.Fatal(err)
				}
				if st, err = r.Load(ctx, "p"); err != nil {
					t.Fatal(err)
				}
			}
			if st.Status != session.StatusDone || st.Final != "It is 42." {
				t.Fatalf("the parent: %s %q", st.Status, st.Final)
			}
		})
	}
}

// A parent canceled while its sub-agent's turn runs elsewhere (begun by
// the step, for an engine) passes the cancellation on to the child's run.
func TestRunCallChildCanceledWithParent(t *testing.T) {
	ctx := context.Background()
	boss, calc := delegation(t, scripted.New("boss", delegate("compute 6*7")), scripted.New("calc-model", scripted.Reply{Text: "42"}))
	r, store, calls := delegatingBatch(t, boss, calc)
	out, err := r.Cancel(ctx, "p", "never mind")
	if err != nil || !out.Acted || out.Status != session.StatusCanceled {
		t.Fatalf("Cancel: %+v %v", out, err)
	}
	tctx := session.WithTenant(ctx, session.DefaultTenant)
	deadline := time.Now().Add(10 * time.Second)
	for {
		cs, err := store.GetSession(tctx, calls[0].Child.SessionID)
		if err == nil && cs.Status == session.StatusCanceled {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the child's run: %+v %v", cs, err)
		}
		time.Sleep(time.Millisecond) // passed on by a goroutine of the parent's runner
	}
}

// delegatingBatch begins a turn of boss in session "p" and steps it to
// its batch, one delegation to calc, which it returns (with the runner
// and its store).
func delegatingBatch(t *testing.T, boss, calc *agentrt.Agent) (*agentrt.Runner, *memstore.Store, []agentrt.DeferredCall) {
	t.Helper()
	store := memstore.New()
	r := delegatingRunner(t, store, boss, calc)
	_, calls, err := r.StepSessionCalls(context.Background(), "p")
	if err != nil || len(calls) != 1 || calls[0].Child == nil {
		t.Fatalf("the calls left: %+v %v", calls, err)
	}
	return r, store, calls
}

// delegatingRunner is a runner over store that has begun a turn of boss
// in session "p" and made its model call: its next step is the batch.
func delegatingRunner(t *testing.T, store session.Store, boss, calc *agentrt.Agent) *agentrt.Runner {
	t.Helper()
	ctx := context.Background()
	r, err := agentrt.NewRunner(agentrt.Config{Store: store, Agents: []*agentrt.Agent{boss, calc}, Owner: "worker"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close(ctx) })
	if _, err := r.Begin(ctx, "p", agentrt.Input{Agent: "boss", Text: "6*7?"}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := r.StepSessionCalls(ctx, "p"); err != nil {
		t.Fatal(err)
	}
	return r
}
