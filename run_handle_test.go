package agentrt_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/model/scripted"
	"github.com/agentrt/agentrt/session"
	"github.com/agentrt/agentrt/session/memstore"
	"github.com/agentrt/agentrt/session/storetest"
)

// A run whose last commit fails ends every stream it gave out, with the
// error, and reports what the store holds: running (resumable), not done.
func TestRunEndNotStored(t *testing.T) {
	var faults storetest.Faults
	mem := memstore.New()
	e := newEnv(t, storetest.Faulty(mem, &faults), agentrt.Config{}, calcAgent(scripted.New("m", scripted.Reply{Text: "hi"}), nil))
	ctx := context.Background()
	// 1 [run_started round_started model_started], 2 [model_finished
	// final run_finished]: the last fails.
	faults.FailCommit(2, false)
	h, err := e.r.Start(ctx, "s1", agentrt.Input{Text: "go", Agent: "calc"})
	if err != nil {
		t.Fatal(err)
	}
	var last error
	n := 0
	guard, cancel := context.WithTimeout(ctx, time.Minute) // a hang fails rather than stalls
	defer cancel()
	for ev, err := range h.Events(guard) {
		if err != nil {
			last = err
			break
		}
		n++
		if ev.Type == session.TypeRunFinished {
			t.Fatalf("a run_finished was streamed that the store does not hold")
		}
	}
	if !errors.Is(last, storetest.ErrInjected) {
		t.Fatalf("Events ended with %v after %d events, want the commit's error", last, n)
	}
	res, err := h.Wait(ctx)
	if !errors.Is(err, storetest.ErrInjected) {
		t.Fatalf("Wait: %v, want the commit's error", err)
	}
	if res.Status != session.StatusRunning || res.Err == nil || res.Err.Code != agentrt.CodeEndNotStored || res.Text != "" {
		t.Fatalf("Wait: %+v, want status running as stored, with end_not_stored", res)
	}
	if s, _ := mem.GetSession(ctx, "s1"); s.Status != session.StatusRunning {
		t.Fatalf("store says %s", s.Status)
	}
	// A stream asked for afterwards ends at once, the same way.
	for _, err := range h.Events(ctx) {
		if err != nil {
			if !errors.Is(err, storetest.ErrInjected) {
				t.Fatalf("late Events: %v", err)
			}
			return
		}
	}
	t.Fatal("late Events ended without the error")
}

// countingStore counts the commits made after a mark.
type countingStore struct {
	*memstore.Store
	marked atomic.Bool
	after  atomic.Int32
}

func (c *countingStore) Commit(ctx context.Context, cm *session.Commit) error {
	if c.marked.Load() {
		c.after.Add(1)
	}
	return c.Store.Commit(ctx, cm)
}

// Close waits for a run that had claimed its session and not yet started
// running (its turn-start hooks were running): nothing commits after
// Close returned.
func TestCloseWaitsForARunBeingStarted(t *testing.T) {
	store := &countingStore{Store: memstore.New()}
	inHook, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	a := calcAgent(scripted.New("m", scripted.Reply{Text: "hi"}), nil)
	a.Hooks.TurnStart(0, func(ctx context.Context, info agentrt.HookInfo, input string) error {
		if info.SessionID != "s1" {
			return nil
		}
		once.Do(func() { close(inHook) })
		<-release
		return nil
	})
	e := newEnv(t, store, agentrt.Config{}, a)
	ctx := context.Background()
	started := make(chan error, 1)
	go func() {
		h, err := e.r.Start(ctx, "s1", agentrt.Input{Text: "go", Agent: "calc"})
		if err == nil {
			_, err = h.Wait(ctx)
		}
		started <- err
	}()
	<-inHook
	closed := make(chan error, 1)
	go func() { closed <- e.r.Close(ctx) }()
	// Close has begun once the runner refuses new runs.
	for i := 0; ; i++ {
		_, err := e.r.CreateSession(ctx, "calc", fmt.Sprint("other", i), nil)
		if err != nil {
			t.Fatal(err)
		}
		h, err := e.r.Start(ctx, fmt.Sprint("other", i), agentrt.Input{Text: "go"})
		if errCode(err) == agentrt.CodeClosed {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		h.Wait(ctx)
	}
	close(release)
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	store.marked.Store(true)
	if err := <-started; err != nil {
		t.Fatal(err)
	}
	if n := store.after.Load(); n != 0 {
		t.Fatalf("%d commits after Close returned", n)
	}
	if s, _ := store.GetSession(ctx, "s1"); s.Lease != nil {
		t.Errorf("after Close the session is still leased: %+v", s.Lease)
	}
}

// A session driven step by step stays its runner's between steps (Recover
// elsewhere leaves it alone) and is let go of when its run ends; StepSession
// drives it by id.
func TestSteppingHoldsTheSession(t *testing.T) {
	store := memstore.New()
	mk := func(owner string) *agentrt.Runner {
		r, err := agentrt.NewRunner(agentrt.Config{Store: store, Owner: owner, Agents: []*agentrt.Agent{
			calcAgent(scripted.New("m", scripted.Reply{ToolCalls: []scripted.Call{scripted.ToolCall("calculator", `{"expression":"1+2"}`)}},
				scripted.Reply{Text: "3"}), registry(t)),
		}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { r.Close(context.Background()) })
		return r
	}
	a, b := mk("host-a:1:a"), mk("host-b:2:b")
	ctx := context.Background()
	if _, err := a.CreateSession(ctx, "calc", "s1", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Begin(ctx, "s1", agentrt.Input{Text: "1+2"}); err != nil {
		t.Fatal(err)
	}
	held := func(when string) {
		t.Helper()
		s, err := store.GetSession(ctx, "s1")
		if err != nil {
			t.Fatal(err)
		}
		if s.Lease == nil || s.Lease.Owner != "host-a:1:a" {
			t.Fatalf("%s: lease %+v, want the stepping runner's", when, s.Lease)
		}
		if runs, err := b.Recover(ctx); err != nil || len(runs) != 0 {
			t.Fatalf("%s: another runner recovered %d runs (%v)", when, len(runs), err)
		}
		if _, err := b.StepSession(ctx, "s1"); errCode(err) != agentrt.CodeLeaseHeld {
			t.Fatalf("%s: another runner stepped it: %v", when, err)
		}
	}
	held("after Begin")
	for i := 0; ; i++ {
		if i > 20 {
			t.Fatal("the run did not end")
		}
		evs, err := a.StepSession(ctx, "s1")
		if err != nil {
			t.Fatal(err)
		}
		if evs[len(evs)-1].Type == session.TypeRunFinished {
			break
		}
		held("between steps")
	}
	s, err := store.GetSession(ctx, "s1")
	if err != nil || s.Status != session.StatusDone || s.Lease != nil {
		t.Fatalf("after the last step: %+v %v, want done and let go of", s, err)
	}
	if _, err := a.StepSession(ctx, "s1"); errCode(err) != agentrt.CodeNotRunning {
		t.Fatalf("a step of a finished run: %v", err)
	}
	if _, ok := a.Active(ctx, "s1"); ok {
		t.Fatal("the finished session is still active")
	}
}
