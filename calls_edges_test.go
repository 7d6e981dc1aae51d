package agentrt_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/model/scripted"
	"github.com/agentrt/agentrt/session"
	"github.com/agentrt/agentrt/session/memstore"
	"github.com/agentrt/agentrt/tool"
)

// reviewWait polls cond until it holds, for at most d.
func reviewWait(t *testing.T, d time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		ok, got := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %s", what, got)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// Bad input to RunCall and StepSessionCalls gets a clear error with a
// code, and changes nothing.
func TestReviewRunCallBadInput(t *testing.T) {
	g := newCallsRig(t, 0)
	ctx := context.Background()
	// Nothing held at all.
	if _, err := g.r.RunCall(ctx, "nope", "call_1"); agentrt.AsError(err).ErrorCode() != agentrt.CodeNotHeld {
		t.Errorf("RunCall of an unknown session: %v", err)
	}
	if _, _, err := g.r.StepSessionCalls(ctx, "nope"); agentrt.AsError(err).ErrorCode() != agentrt.CodeNotFound {
		t.Errorf("StepSessionCalls of an unknown session: %v", err)
	}
	calls := g.begin(t)
	if _, err := g.r.RunCall(ctx, "s", "call_unknown"); agentrt.AsError(err).ErrorCode() != agentrt.CodeNotHeld {
		t.Errorf("RunCall of an unknown call: %v", err)
	}
	// Another runner does not hold the calls.
	if _, err := g.other.RunCall(ctx, "s", calls[1].ID); agentrt.AsError(err).ErrorCode() != agentrt.CodeNotHeld {
		t.Errorf("RunCall in another runner: %v", err)
	}
	// Another tenant's session of the same id.
	tctx := session.WithTenant(ctx, "other-tenant")
	if _, err := g.r.RunCall(tctx, "s", calls[1].ID); agentrt.AsError(err).ErrorCode() != agentrt.CodeNotHeld {
		t.Errorf("RunCall for another tenant: %v", err)
	}
	close(g.gate)
	for _, c := range calls {
		if o, err := g.r.RunCall(ctx, "s", c.ID); err != nil || !o.Ran {
			t.Fatalf("RunCall %s: %+v %v", c.Name, o, err)
		}
	}
	// A call of a batch that is over.
	if _, err := g.r.RunCall(ctx, "s", calls[0].ID); agentrt.AsError(err).ErrorCode() != agentrt.CodeNotHeld {
		t.Errorf("RunCall of a call of an earlier batch: %v", err)
	}
	for range 2 {
		if _, _, err := g.r.StepSessionCalls(ctx, "s"); err != nil {
			t.Fatal(err)
		}
	}
	_, sess := g.log(t)
	if sess.Status != session.StatusDone {
		t.Fatalf("the session: %s", sess.Status)
	}
	if _, _, err := g.r.StepSessionCalls(ctx, "s"); agentrt.AsError(err).ErrorCode() != agentrt.CodeNotRunning {
		t.Errorf("StepSessionCalls of a session that is done: %v", err)
	}
}

// A RunCall whose caller's context is over before it begins (an engine's
// activity that timed out while queued) runs nothing, and says so with an
// error: the run itself goes on — the other calls of the batch run, and
// the session's next step gets every result.
func TestReviewRunCallCallerContextEndedKeepsRun(t *testing.T) {
	g := newCallsRig(t, 0)
	calls := g.begin(t)
	ctx := context.Background()
	done, cancel := context.WithCancel(ctx)
	cancel()
	o, err := g.r.RunCall(done, "s", calls[1].ID)
	if err == nil || o.Ran {
		t.Errorf("RunCall with a context that is over: %+v %v, want an error", o, err)
	}
	_, sess := g.log(t)
	if sess.Status != session.StatusRunning {
		t.Fatalf("one caller's context ended the run: %s", sess.Status)
	}
	close(g.gate)
	if o, err := g.r.RunCall(ctx, "s", calls[0].ID); err != nil || !o.Ran {
		types, sess := g.log(t)
		t.Errorf("slow after that: %+v %v; the session %s: %v", o, err, sess.Status, types)
	}
}

// A parent canceled while the step that begins its sub-agent's turn (for
// the engine to run) is under way passes the cancellation on to that
// child, as it does once the step is over: the child's turn, let go of
// for an engine that will never run it, is not left running.
func TestReviewParentCanceledDuringDeferringStep(t *testing.T) {
	ctx := context.Background()
	inner := memstore.New()
	store := &commitGate{Store: inner, begun: make(chan string, 1)}
	boss, calc := delegation(t, scripted.New("boss", delegate("compute 6*7")), scripted.New("calc-model", scripted.Reply{Text: "42"}))
	r := delegatingRunner(t, store, boss, calc)
	store.arm("p.")
	stepped := make(chan error, 1)
	go func() {
		_, _, err := r.StepSessionCalls(ctx, "p")
		stepped <- err
	}()
	child := <-store.begun // the child's turn is begun; its session is being let go of
	canceled := make(chan error, 1)
	go func() {
		_, err := r.Cancel(ctx, "p", "never mind")
		canceled <- err
	}()
	<-stepped
	if err := <-canceled; err != nil {
		t.Fatal(err)
	}
	tctx := session.WithTenant(ctx, session.DefaultTenant)
	reviewWait(t, 3*time.Second, "the child's run after its parent was canceled", func() (bool, string) {
		cs, err := inner.GetSession(tctx, child)
		if err != nil {
			return false, err.Error()
		}
		return cs.Status == session.StatusCanceled, string(cs.Status)
	})
}

// commitGate is a store whose first commit to a session whose id begins
// with prefix (once armed) waits for the committer's context to end —
// the step's, canceled with its run — then is stored all the same.
type commitGate struct {
	*memstore.Store
	mu     sync.Mutex
	prefix string
	begun  chan string
}

func (s *commitGate) arm(prefix string) {
	s.mu.Lock()
	s.prefix = prefix
	s.mu.Unlock()
}

func (s *commitGate) Commit(ctx context.Context, c *session.Commit) error {
	s.mu.Lock()
	hit := s.prefix != "" && strings.HasPrefix(c.SessionID, s.prefix)
	if hit {
		s.prefix = ""
	}
	s.mu.Unlock()
	if hit {
		s.begun <- c.SessionID
		<-ctx.Done()
	}
	return s.Store.Commit(context.WithoutCancel(ctx), c)
}

// A RunCall whose caller's context ends while its tool runs (the run goes
// on): the tool is canceled, nothing is stored — and the caller is told
// why with an error, not a nil error as for a run that stops. (The next
// step runs the call again, attempt 2, as after a crash.)
func TestReviewRunCallCallerContextEndsWhileToolRuns(t *testing.T) {
	g := newCallsRig(t, 0)
	calls := g.begin(t)
	ctx := context.Background()
	cctx, cancel := context.WithCancel(ctx)
	type res struct {
		o   agentrt.CallOutcome
		err error
	}
	done := make(chan res, 1)
	go func() {
		o, err := g.r.RunCall(cctx, "s", calls[0].ID)
		done <- res{o, err}
	}()
	<-g.started
	cancel()
	got := <-done
	if got.o.Ran || !errors.Is(got.err, context.Canceled) {
		t.Errorf("RunCall whose context ended while its tool ran: %+v %v, want context.Canceled", got.o, got.err)
	}
	if o, err := g.r.RunCall(ctx, "s", calls[1].ID); err != nil || !o.Ran {
		t.Errorf("quick: %+v %v", o, err)
	}
	if _, sess := g.log(t); sess.Status != session.StatusRunning {
		t.Errorf("the run after one caller's context ended: %s", sess.Status)
	}
}

// Input another process steered into a run (a steering control request
// for the owner of its lease) is delivered once: a worker that took it
// into a model call, then died (its lease lapsed), leaves the request in
// the store for the next owner — which must not give the same input to
// the model again.
func TestReviewSteerNotDeliveredTwiceAfterTakeover(t *testing.T) {
	ctx := context.Background()
	tctx := session.WithTenant(ctx, session.DefaultTenant)
	var mu sync.Mutex
	now := time.Now()
	clock := func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		return now
	}
	store := memstore.New(memstore.WithClock(clock))
	quick := tool.Must(tool.New("quick", "answers", func(context.Context, struct{}) (string, error) { return "quick done", nil }))
	reg, err := tool.NewRegistry(quick)
	if err != nil {
		t.Fatal(err)
	}
	// Two model calls: the first takes the steering, the second (after the
	// takeover) must not take it again.
	model := scripted.New("m",
		scripted.Reply{ToolCalls: []scripted.Call{scripted.ToolCall("quick", `{}`)}},
		scripted.Reply{Text: "done"})
	mk := func(owner string) *agentrt.Runner {
		r, err := agentrt.NewRunner(agentrt.Config{Store: store, Agents: []*agentrt.Agent{{Name: "a", Model: model, Tools: reg}},
			Owner: owner, LeaseTTL: time.Hour, ControlPoll: time.Hour, Now: clock})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = r.Close(ctx) })
		return r
	}
	a, b := mk("worker-a"), mk("worker-b")
	st, err := a.Begin(ctx, "s", agentrt.Input{Agent: "a", Text: "paint it"})
	if err != nil {
		t.Fatal(err)
	}
	sess, err := store.GetSession(tctx, "s")
	if err != nil || sess.Lease == nil {
		t.Fatalf("the session: %+v %v", sess, err)
	}
	// What Run.Steer of a remote handle sends to the session's owner.
	c := session.Control{ID: "ctl_1", Kind: session.ControlSteer, At: clock(), RunID: st.RunID,
		Steer: []session.Steered{{ID: "st_1", Text: "also the blue one"}}}
	if err := store.RequestControl(tctx, "s", *sess.Lease, c); err != nil {
		t.Fatal(err)
	}
	for range 2 { // the model call (it takes the steering), the tool
		if _, err := a.StepSession(ctx, "s"); err != nil {
			t.Fatal(err)
		}
	}
	if got := steered(t, store, "s"); len(got) != 1 {
		t.Fatalf("input_steered after the first model call: %+v", got)
	}
	// Worker a dies: its lease lapses; worker b takes the session over.
	mu.Lock()
	now = now.Add(2 * time.Hour)
	mu.Unlock()
	if _, err := b.StepSession(ctx, "s"); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, d := range steered(t, store, "s") {
		ids = append(ids, d.Steer+" "+d.Text)
	}
	if len(ids) != 1 {
		t.Errorf("the steered input was delivered %d times: %q", len(ids), ids)
	}
}

// A delegation whose child's turn nobody runs (the engine never got the
// step's answer: its activity timed out, its worker's reply was lost) is
// given up like any call nobody claims: the parent's session is not held
// busy for ever — Recover skips a sub-agent's session, leaving it to its
// parent's run, so nothing else would ever end that child's turn.
func TestReviewUncollectedChildNobodyRunsIsGivenUp(t *testing.T) {
	ctx := context.Background()
	store := memstore.New()
	boss, calc := delegation(t, scripted.New("boss", delegate("compute 6*7"),
		scripted.Reply{Text: "It is 42.", Expect: &scripted.Expect{LastToolResultContains: "42"}}),
		scripted.New("calc-model", scripted.Reply{Text: "42"}))
	const ttl = 100 * time.Millisecond
	mk := func(owner string) *agentrt.Runner {
		r, err := agentrt.NewRunner(agentrt.Config{Store: store, Agents: []*agentrt.Agent{boss, calc}, Owner: owner, LeaseTTL: ttl})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = r.Close(ctx) })
		return r
	}
	r, other := mk("worker-1"), mk("worker-2")
	if _, err := r.Begin(ctx, "p", agentrt.Input{Agent: "boss", Text: "6*7?"}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := r.StepSessionCalls(ctx, "p"); err != nil {
		t.Fatal(err)
	}
	_, calls, err := r.StepSessionCalls(ctx, "p")
	if err != nil || len(calls) != 1 || calls[0].Child == nil {
		t.Fatalf("the calls left: %+v %v", calls, err)
	}
	// The engine never learns of the call: nobody runs the child's turn
	// (another process's Recover leaves a sub-agent's session to its
	// parent's run). Within 20 lease TTLs the parent must be steppable
	// elsewhere.
	reviewWait(t, 20*ttl, "the parent's session stays held by a batch nobody will collect", func() (bool, string) {
		if _, err := other.Recover(ctx); err != nil {
			return false, err.Error()
		}
		_, err := other.StepSession(ctx, "p")
		if err != nil {
			// Recover may have taken it over and run it to its end.
			if st, lerr := other.Load(ctx, "p"); lerr == nil && st.Status == session.StatusDone {
				return true, ""
			}
			return false, err.Error()
		}
		return true, ""
	})
}

// LetGoAll (a worker that stops) while a step takes a session: the step
// either runs, or fails with an error — it does not panic. (holdFor
// returns a nil hold and a nil error when the hold it just made is let go
// of before it takes it: LetGoAll, LetGo, a Cancel between steps.)
func TestReviewLetGoAllWhileStepping(t *testing.T) {
	ctx := context.Background()
	quick := tool.Must(tool.New("quick", "answers", func(context.Context, struct{}) (string, error) { return "quick done", nil }))
	reg, err := tool.NewRegistry(quick)
	if err != nil {
		t.Fatal(err)
	}
	const n = 300
	var replies []scripted.Reply
	for range n {
		replies = append(replies, scripted.Reply{ToolCalls: []scripted.Call{scripted.ToolCall("quick", `{}`)}})
	}
	r, err := agentrt.NewRunner(agentrt.Config{Store: memstore.New(), Owner: "w",
		Agents: []*agentrt.Agent{{Name: "a", Model: scripted.New("m", replies...), Tools: reg}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close(ctx) })
	for i := range n {
		id := fmt.Sprintf("s%d", i)
		if _, err := r.Begin(ctx, id, agentrt.Input{Agent: "a", Text: "go"}); err != nil {
			t.Fatal(err)
		}
		r.LetGo(ctx, id) // the next step makes a new hold
		panicked := make(chan any, 1)
		go func() {
			defer func() { panicked <- recover() }()
			_, _, _ = r.StepSessionCalls(ctx, id)
		}()
		for {
			r.LetGoAll()
			select {
			case v := <-panicked:
				if v != nil {
					t.Fatalf("StepSessionCalls panicked after %d steps: %v", i, v)
				}
			default:
				continue
			}
			break
		}
		r.LetGoAll()
	}
}

// doneSignal is a context that reports the first time its Done is asked
// for: Runner.Interrupt of a run of its own process asks for it only in
// Run.Wait, once the request has been handed to the run.
type doneSignal struct {
	context.Context
	once  sync.Once
	asked chan struct{}
}

func (c *doneSignal) Done() <-chan struct{} {
	c.once.Do(func() { close(c.asked) })
	return c.Context.Done()
}

// An interruption lets the calls in flight finish, and answers "not run"
// the calls that have not begun (Run.Interrupt): a call of the batch no
// RunCall had claimed when the interruption came is not run by a later
// RunCall.
func TestReviewRunCallAfterInterruptDoesNotRun(t *testing.T) {
	g := newCallsRig(t, 0)
	calls := g.begin(t)
	ctx := context.Background()
	slow := make(chan agentrt.CallOutcome, 1)
	go func() {
		o, _ := g.r.RunCall(ctx, "s", calls[0].ID)
		slow <- o
	}()
	<-g.started
	ictx := &doneSignal{Context: ctx, asked: make(chan struct{})}
	interrupted := make(chan error, 1)
	go func() {
		_, err := g.r.Interrupt(ictx, "s", "newer input")
		interrupted <- err
	}()
	<-ictx.asked // the run has the interruption
	o, err := g.r.RunCall(ctx, "s", calls[1].ID)
	close(g.gate)
	<-slow
	if err := <-interrupted; err != nil {
		t.Fatal(err)
	}
	types, sess := g.log(t)
	g.mu.Lock()
	ran := len(g.keys)
	g.mu.Unlock()
	if o.Ran || ran != 1 {
		t.Errorf("a call not begun when the run was interrupted ran: %+v %v (tools run %d times)\n%v", o, err, ran, types)
	}
	if sess.Status != session.StatusInterrupted {
		t.Errorf("the session: %s", sess.Status)
	}
}
