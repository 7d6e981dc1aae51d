package agentrt_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/model/scripted"
	"github.com/agentrt/agentrt/session"
	"github.com/agentrt/agentrt/session/memstore"
	"github.com/agentrt/agentrt/session/storetest"
	"github.com/agentrt/agentrt/tool"
)

// refusingTool counts its runs by argument; the run of the argument
// named by refuse makes the store refuse every write from then on (its
// commits and lease calls), as a disk that fills up does, before it
// returns. The first run of "late" returns only once its context ends:
// after the refused commit, which cancels the calls still running; with
// late set (made by the test), the refusing run waits for it to start.
type refusingTool struct {
	faults *storetest.Faults
	refuse string
	late   chan struct{} // closed when late's first run started

	mu   sync.Mutex
	runs map[string]int // guarded by mu
}

func (c *refusingTool) tool() tool.Tool {
	return tool.Must(tool.New("count", "counts", func(ctx context.Context, in struct {
		K string `json:"k"`
	}) (string, error) {
		c.mu.Lock()
		c.runs[in.K]++
		first := c.runs[in.K] == 1
		c.mu.Unlock()
		if in.K == c.refuse && first {
			if c.late != nil {
				<-c.late
			}
			c.faults.FailCommit(1, true)
			c.faults.FailLease(1, true)
		}
		if in.K == "late" && first {
			close(c.late)
			<-ctx.Done() // a result in hand after the refused commit
		}
		return "counted " + in.K, nil
	}))
}

func (c *refusingTool) counts() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]int, len(c.runs))
	for k, n := range c.runs {
		out[k] = n
	}
	return out
}

// A run in the background whose commit the store refuses (it fills up
// during a tool call) ends every stream that follows it here with an
// error saying so, makes WriteFailure report the store unavailable, and
// is resumed by this process once the store accepts writes again
// (run_resumed, reason store), to its end: the results it had in hand are
// recorded, not run again.
func TestStoreRefusalRevivesTheRun(t *testing.T) {
	call := func(k string) scripted.Call { return scripted.ToolCall("count", map[string]any{"k": k}) }
	for _, tc := range []struct {
		name   string
		calls  []scripted.Call
		refuse string
	}{
		// One call: its result waits for the next step's commit, which
		// the store refuses.
		{"one call", []scripted.Call{call("a")}, "a"},
		// Calls in parallel commit each result as it comes: b's commit is
		// refused (or a's, if a comes second), and late's result comes
		// after the refusal.
		{"parallel calls", []scripted.Call{call("a"), call("b"), call("late")}, "b"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var faults storetest.Faults
				mem := memstore.New()
				c := &refusingTool{faults: &faults, refuse: tc.refuse, runs: map[string]int{}}
				if len(tc.calls) > 1 {
					c.late = make(chan struct{})
				}
				m := scripted.New("m", scripted.Reply{ToolCalls: tc.calls}, scripted.Reply{Text: "counted"})
				e := newEnv(t, storetest.Faulty(mem, &faults), agentrt.Config{}, calcAgent(m, registry(t, c.tool())))
				id := e.session(t, "calc")
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a hang fails rather than stalls
				defer cancel()
				watched := make(chan []*session.Event, 1)
				watchErr := make(chan error, 1)
				subscribed := make(chan struct{})
				go func() {
					var evs []*session.Event
					for ev, err := range e.r.WatchSubscribed(ctx, id, 0, func() { close(subscribed) }) {
						if err != nil {
							watchErr <- err
							break
						}
						if ev.Seq != 0 {
							evs = append(evs, ev)
						}
					}
					watched <- evs
				}()
				<-subscribed
				h, err := e.r.Start(ctx, id, agentrt.Input{Text: "go"})
				if err != nil {
					t.Fatal(err)
				}
				if _, err := h.Wait(ctx); !errors.Is(err, storetest.ErrInjected) {
					t.Fatalf("Wait: %v, want the store's refusal", err)
				}

				// The watch ends, after what was stored, with why.
				var werr error
				select {
				case werr = <-watchErr:
				case <-ctx.Done():
					t.Fatal("the watcher of the session never heard that its run stopped")
				}
				evs := <-watched
				if errCode(werr) != agentrt.CodeEndNotStored || !agentrt.IsRecoverable(werr) || !errors.Is(werr, storetest.ErrInjected) {
					t.Fatalf("the watch ended with %v, want a recoverable end_not_stored wrapping the store's error", werr)
				}
				stored := storedLog(t, mem, id)
				if len(evs) != len(stored) {
					t.Errorf("the watch yielded %d events, the store holds %d", len(evs), len(stored))
				}
				if err := e.r.WriteFailure(); errCode(err) != agentrt.CodeStoreUnavailable {
					t.Errorf("WriteFailure while the store refuses writes: %v", err)
				}
				if s, _ := mem.GetSession(ctx, id); s.Status != session.StatusRunning {
					t.Fatalf("the store says %s", s.Status)
				}

				// The store accepts writes again: the run goes on here.
				last := stored[len(stored)-1].Seq
				faults.FailCommit(0, false)
				faults.FailLease(0, false)
				var resumed []*session.Event
				for ev, err := range e.r.Watch(ctx, id, last) {
					if err != nil {
						t.Fatalf("watching the resumed run: %v", err)
					}
					resumed = append(resumed, ev)
					if ev.Type == session.TypeRunFinished {
						break
					}
				}
				if len(resumed) == 0 || resumed[len(resumed)-1].Type != session.TypeRunFinished {
					t.Fatalf("the run was not resumed once the store accepted writes: %v", types(resumed))
				}
				if rs, ok := resumed[0].Data.(*session.RunResumed); !ok || rs.Reason != agentrt.ResumeStore {
					t.Fatalf("the run went on with %s %+v, want run_resumed with reason store", resumed[0].Type, resumed[0].Data)
				}
				if rf := resumed[len(resumed)-1].Data.(*session.RunFinished); rf.Status != session.StatusDone {
					t.Fatalf("the resumed run ended %s", rf.Status)
				}
				for k, n := range c.counts() {
					if n != 1 {
						t.Errorf("%s ran %d times, want once: its result was in hand", k, n)
					}
				}
				results := map[string]int{}
				for _, r := range toolResults(storedLog(t, mem, id)) {
					results[r.CallID]++
				}
				if len(results) != len(tc.calls) {
					t.Errorf("results of %d calls stored, want %d", len(results), len(tc.calls))
				}
				for call, n := range results {
					if n != 1 {
						t.Errorf("call %s has %d results", call, n)
					}
				}
				if err := e.r.WriteFailure(); err != nil {
					t.Errorf("WriteFailure after the store accepted writes: %v", err)
				}
				if err := e.r.Close(ctx); err != nil {
					t.Fatal(err)
				}
			})
		})
	}
}

// A run on the caller's goroutine whose commit the store refuses ends the
// watchers of its session here too; it is the caller's to resume, not
// this process's.
func TestStoreRefusalEndsWatchersOfAForegroundRun(t *testing.T) {
	var faults storetest.Faults
	mem := memstore.New()
	c := &refusingTool{faults: &faults, refuse: "a", runs: map[string]int{}}
	m := scripted.New("m", scripted.Reply{ToolCalls: []scripted.Call{scripted.ToolCall("count", map[string]any{"k": "a"})}}, scripted.Reply{Text: "counted"})
	e := newEnv(t, storetest.Faulty(mem, &faults), agentrt.Config{}, calcAgent(m, registry(t, c.tool())))
	id := e.session(t, "calc")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	subscribed := make(chan struct{})
	watchErr := make(chan error, 1)
	go func() {
		for _, err := range e.r.WatchSubscribed(ctx, id, 0, func() { close(subscribed) }) {
			if err != nil {
				watchErr <- err
				return
			}
		}
		watchErr <- nil
	}()
	<-subscribed
	if _, err := agentrt.Collect(e.r.Run(ctx, id, agentrt.Input{Text: "go"})); !errors.Is(err, storetest.ErrInjected) {
		t.Fatalf("run: %v", err)
	}
	if err := <-watchErr; errCode(err) != agentrt.CodeEndNotStored {
		t.Fatalf("the watch ended with %v, want end_not_stored", err)
	}
	faults.FailCommit(0, false)
	faults.FailLease(0, false)
	// Nothing resumes it here: a resume by the caller does, without
	// running the call again being this process's doing.
	res := e.resume(t, id)
	if res.Status != session.StatusDone {
		t.Fatalf("the caller's resume: %+v", res)
	}
	n := 0
	for _, ev := range storedLog(t, mem, id) {
		if ev.Type == session.TypeRunResumed {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d run_resumed events, want the caller's only", n)
	}
}

// With no run to resume, the runner finds out by a write of its own that
// the store accepts writes again: WriteFailure clears without a commit.
func TestWriteFailureClearsByItself(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var faults storetest.Faults
		mem := memstore.New()
		e := newEnv(t, storetest.Faulty(mem, &faults), agentrt.Config{}, calcAgent(scripted.New("m", scripted.Reply{Text: "hi"}), nil))
		id := e.session(t, "calc")
		ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
		defer cancel()
		// The turn's first commit is refused: nothing was stored, nothing
		// is to resume.
		faults.FailCommit(1, true)
		faults.FailLease(2, true) // the run's own lease is taken; then none
		h, err := e.r.Start(ctx, id, agentrt.Input{Text: "go"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := h.Wait(ctx); !errors.Is(err, storetest.ErrInjected) {
			t.Fatalf("Wait: %v", err)
		}
		if errCode(e.r.WriteFailure()) != agentrt.CodeStoreUnavailable {
			t.Fatalf("WriteFailure: %v", e.r.WriteFailure())
		}
		// The runner keeps trying, with a backoff.
		time.Sleep(time.Minute)
		synctest.Wait()
		if errCode(e.r.WriteFailure()) != agentrt.CodeStoreUnavailable {
			t.Fatalf("WriteFailure while the store still refuses writes: %v", e.r.WriteFailure())
		}
		tried := faults.LeaseCalls()
		faults.FailCommit(0, false)
		faults.FailLease(0, false)
		time.Sleep(10 * time.Second) // more than the backoff's longest wait (5 s, give or take a fifth)
		synctest.Wait()
		if err := e.r.WriteFailure(); err != nil {
			t.Fatalf("WriteFailure still says %v after the store accepts writes", err)
		}
		if faults.LeaseCalls() == tried {
			t.Error("no write tried")
		}
		if s, err := mem.GetSession(ctx, id); err != nil || s.Status != session.StatusIdle {
			t.Errorf("the session is %+v (%v), want idle: its turn never began", s, err)
		}
		if err := e.r.Close(ctx); err != nil {
			t.Fatal(err)
		}
	})
}

// Close stops the revivals: a run the store stopped is not resumed after
// it, and stays running in the store for Recover.
func TestCloseStopsRevivals(t *testing.T) {
	var faults storetest.Faults
	mem := memstore.New()
	c := &refusingTool{faults: &faults, refuse: "a", runs: map[string]int{}}
	m := scripted.New("m", scripted.Reply{ToolCalls: []scripted.Call{scripted.ToolCall("count", map[string]any{"k": "a"})}}, scripted.Reply{Text: "counted"})
	e := newEnv(t, storetest.Faulty(mem, &faults), agentrt.Config{}, calcAgent(m, registry(t, c.tool())))
	id := e.session(t, "calc")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	h, err := e.r.Start(ctx, id, agentrt.Input{Text: "go"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.Wait(ctx); !errors.Is(err, storetest.ErrInjected) {
		t.Fatalf("Wait: %v", err)
	}
	if err := e.r.Close(ctx); err != nil {
		t.Fatal(err)
	}
	faults.FailCommit(0, false)
	faults.FailLease(0, false)
	before := faults.Commits()
	if s, _ := mem.GetSession(ctx, id); s.Status != session.StatusRunning {
		t.Fatalf("after Close the session is %s, want running", s.Status)
	}
	if n := faults.Commits() - before; n != 0 {
		t.Errorf("%d commits after Close", n)
	}
	if got := fmt.Sprint(c.counts()); got != "map[a:1]" {
		t.Errorf("tool runs: %s", got)
	}
}

// hangingLeases is a memory store whose Acquire, once told to, waits for
// its context to end: a database that stopped answering.
type hangingLeases struct {
	*memstore.Store
	hang atomic.Bool
}

func (h *hangingLeases) Acquire(ctx context.Context, id, owner string, ttl time.Duration) (session.Lease, error) {
	if h.hang.Load() {
		<-ctx.Done()
		return session.Lease{}, ctx.Err()
	}
	return h.Store.Acquire(ctx, id, owner, ttl)
}

// Close does not wait for a revival stuck on a store that stopped
// answering: the try is canceled.
func TestCloseDoesNotWaitForARevival(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var faults storetest.Faults
		hl := &hangingLeases{Store: memstore.New()}
		c := &refusingTool{faults: &faults, refuse: "a", runs: map[string]int{}}
		m := scripted.New("m", scripted.Reply{ToolCalls: []scripted.Call{scripted.ToolCall("count", map[string]any{"k": "a"})}}, scripted.Reply{Text: "counted"})
		e := newEnv(t, storetest.Faulty(hl, &faults), agentrt.Config{}, calcAgent(m, registry(t, c.tool())))
		id := e.session(t, "calc")
		ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
		defer cancel()
		h, err := e.r.Start(ctx, id, agentrt.Input{Text: "go"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := h.Wait(ctx); !errors.Is(err, storetest.ErrInjected) {
			t.Fatalf("Wait: %v", err)
		}
		hl.hang.Store(true)
		faults.FailLease(0, false)
		time.Sleep(time.Second) // the revival tries, and waits on the store
		synctest.Wait()
		start := time.Now()
		if err := e.r.Close(ctx); err != nil {
			t.Fatal(err)
		}
		if waited := time.Since(start); waited > 0 {
			t.Errorf("Close waited %v for the revival's try", waited)
		}
	})
}
