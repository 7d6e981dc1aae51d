package agentrt_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/model/scripted"
	"github.com/agentrt/agentrt/session"
	"github.com/agentrt/agentrt/session/memstore"
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
		t.Errorf("slow after that: %+v %v", o, err)
	}
}

// A parent canceled while the step that begins its sub-agent's turn (for
// the engine to run) is under way passes the cancellation on to that
// child, as it does once the step is over: the child's turn, let go of
// for an engine that will never run it, is not left running.
func TestReviewParentCanceledDuringDeferringStep(t *testing.T) {
	ctx := context.Background()
	inner := memstore.New()
	store := &releaseGate{Store: inner, begun: make(chan string, 1)}
	boss, calc := delegation(t, scripted.New("boss", delegate("compute 6*7")), scripted.New("calc-model", scripted.Reply{Text: "42"}))
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

// releaseGate is a store whose release of a lease of a session whose id
// begins with prefix (once armed) waits for the releaser's context to
// end — the step's, canceled with its run.
type releaseGate struct {
	*memstore.Store
	mu     sync.Mutex
	prefix string
	begun  chan string
}

func (s *releaseGate) arm(prefix string) {
	s.mu.Lock()
	s.prefix = prefix
	s.mu.Unlock()
}

func (s *releaseGate) Release(ctx context.Context, l session.Lease) error {
	s.mu.Lock()
	hit := s.prefix != "" && strings.HasPrefix(l.SessionID, s.prefix)
	if hit {
		s.prefix = ""
	}
	s.mu.Unlock()
	if hit {
		s.begun <- l.SessionID
		<-ctx.Done()
	}
	return s.Store.Release(context.WithoutCancel(ctx), l)
}
