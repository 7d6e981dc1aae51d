package agentrt_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/model/scripted"
	"github.com/agentrt/agentrt/session"
	"github.com/agentrt/agentrt/session/memstore"
	"github.com/agentrt/agentrt/session/storetest"
	"github.com/agentrt/agentrt/tool"
)

// countTool counts its runs by argument.
type countTool struct {
	mu   sync.Mutex
	runs map[string]int
}

func (c *countTool) tool() tool.Tool {
	return tool.Must(tool.New("count", "counts", func(_ context.Context, in struct {
		K string `json:"k"`
	}) (string, error) {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.runs[in.K]++
		return "counted " + in.K, nil
	}))
}

// faultTurn is the script of the turn the sweeps run: two calls in
// parallel, one more, then the answer.
func faultTurn() []scripted.Reply {
	call := func(k string) scripted.Call { return scripted.ToolCall("count", map[string]any{"k": k}) }
	return []scripted.Reply{
		{ToolCalls: []scripted.Call{call("a"), call("b")}},
		{ToolCalls: []scripted.Call{call("c")}},
		{Text: "counted"},
	}
}

// TestEveryCommitFailure fails each commit of a turn in turn (and, in a
// second pass, every commit from it on) and checks what a failed store
// must leave: an error from Run, no event lost or duplicated, a session
// that resumes on a healthy store to the end, and no call whose result was
// stored run again.
func TestEveryCommitFailure(t *testing.T) {
	// A healthy run counts the commits.
	var probe storetest.Faults
	{
		c := &countTool{runs: map[string]int{}}
		e := newEnv(t, storetest.Faulty(memstore.New(), &probe), agentrt.Config{}, calcAgent(scripted.New("m", faultTurn()...), registry(t, c.tool())))
		if res := e.run(t, e.session(t, "calc"), "go"); res.Status != session.StatusDone {
			t.Fatalf("healthy run: %+v", res)
		}
	}
	total := probe.Commits()
	for _, following := range []bool{false, true} {
		for n := 1; n <= total; n++ {
			t.Run(fmt.Sprintf("commit=%d/following=%v", n, following), func(t *testing.T) {
				var faults storetest.Faults
				mem := memstore.New()
				c := &countTool{runs: map[string]int{}}
				e := newEnv(t, storetest.Faulty(mem, &faults), agentrt.Config{SnapshotEvery: 3}, calcAgent(scripted.New("m", faultTurn()...), registry(t, c.tool())))
				id := e.session(t, "calc")
				faults.FailCommit(n, following)
				_, err := agentrt.Collect(e.r.Run(context.Background(), id, agentrt.Input{Text: "go"}))
				if !errors.Is(err, storetest.ErrInjected) {
					t.Fatalf("run: %v, want the injected failure", err)
				}
				before := storedLog(t, mem, id)
				stored := map[string]bool{}
				for _, r := range toolResults(before) {
					stored[strings.TrimPrefix(string(r.Result), `"counted `)] = true
				}
				if len(before) > 0 {
					// The model's script goes on where the log stopped.
					e2 := newEnv(t, mem, agentrt.Config{SnapshotEvery: 3}, calcAgent(scripted.New("m", remaining(before)...), registry(t, c.tool())))
					if res := e2.resume(t, id); res.Status != session.StatusDone || res.Text != "counted" {
						t.Fatalf("resume: %+v", res)
					}
				} else {
					// Nothing was stored: the turn never began.
					e2 := newEnv(t, mem, agentrt.Config{}, calcAgent(scripted.New("m", faultTurn()...), registry(t, c.tool())))
					if res := e2.run(t, id, "go"); res.Status != session.StatusDone {
						t.Fatalf("run again: %+v", res)
					}
				}
				log := storedLog(t, mem, id)
				if rs := toolResults(log); len(rs) != 3 {
					t.Errorf("%d tool results, want 3", len(rs))
				}
				c.mu.Lock()
				defer c.mu.Unlock()
				for k, runs := range c.runs {
					if stored[k+`"`] && runs != 1 {
						t.Errorf("%s ran %d times though its result was stored", k, runs)
					}
					if runs > 2 {
						t.Errorf("%s ran %d times", k, runs)
					}
				}
			})
		}
	}
}

// remaining returns the replies of faultTurn the model has not given yet
// in log.
func remaining(log []*session.Event) []scripted.Reply {
	n := 0
	for _, e := range log {
		if d, ok := e.Data.(*session.ModelFinished); ok && d.Purpose == "" {
			n++
		}
	}
	return faultTurn()[n:]
}

// Failed reads keep a run from starting, with a clear error, and write
// nothing; a watcher whose read fails ends saying where to resume.
func TestReadFailures(t *testing.T) {
	for n := 1; n <= 3; n++ {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			var faults storetest.Faults
			mem := memstore.New()
			c := &countTool{runs: map[string]int{}}
			e := newEnv(t, storetest.Faulty(mem, &faults), agentrt.Config{StateCache: -1} /* every read of a load */, calcAgent(scripted.New("m", faultTurn()...), registry(t, c.tool())))
			id := e.session(t, "calc")
			e.run(t, id, "go")
			before := storedLog(t, mem, id)
			faults.FailRead(n, true)
			_, err := agentrt.Collect(e.r.Run(context.Background(), id, agentrt.Input{Text: "again"}))
			if !errors.Is(err, storetest.ErrInjected) {
				t.Fatalf("run: %v", err)
			}
			faults.FailRead(0, false)
			if got := storedLog(t, mem, id); len(got) != len(before) {
				t.Errorf("a run that could not start wrote %d events", len(got)-len(before))
			}
		})
	}
	// A store that cannot follow: the watcher catches up by reading, and
	// a failed read ends it with where to resume.
	var faults storetest.Faults
	mem := memstore.New()
	e := newEnv(t, storetest.Faulty(plainStore{mem}, &faults), agentrt.Config{}, calcAgent(scripted.New("m", scripted.Reply{Text: "hi"}), nil))
	id := e.session(t, "calc")
	e.run(t, id, "go")
	faults.FailRead(2, false) // GetSession passes, the catch-up fails
	var last error
	for _, err := range e.r.Watch(context.Background(), id, 2) {
		last = err
	}
	if !errors.Is(last, storetest.ErrInjected) || !strings.Contains(last.Error(), "resume watching from seq 2") {
		t.Errorf("watch: %v", last)
	}
}

// slowTool counts the calls running at any moment; a call with "wait"
// set waits for its context to end (or for release).
type slowTool struct {
	running atomic.Int32
	ran     atomic.Int32
	release chan struct{}
}

func (s *slowTool) tool() tool.Tool {
	return tool.Must(tool.New("slow", "takes a while", func(ctx context.Context, in struct {
		N    int  `json:"n"`
		Wait bool `json:"wait,omitempty"`
	}) (int, error) {
		s.running.Add(1)
		defer s.running.Add(-1)
		s.ran.Add(1)
		if in.Wait {
			select {
			case <-ctx.Done():
				return 0, ctx.Err()
			case <-s.release:
			}
		}
		return in.N * 2, nil
	}))
}

func parallelReply(n, waiting int) scripted.Reply {
	var calls []scripted.Call
	for i := range n {
		calls = append(calls, scripted.ToolCall("slow", map[string]any{"n": i, "wait": i < waiting}))
	}
	return scripted.Reply{ToolCalls: calls}
}

// A commit that fails while parallel calls run must not leave a
// goroutine behind (the pooled Exec was reset under them: a data race,
// then a crash). Every goroutine is joined before the step returns, and
// the session resumes on a healthy store without running a completed call
// twice. Run with -race.
func TestFailedCommitDuringParallelCalls(t *testing.T) {
	for n := 2; n <= 5; n++ {
		// The commits of a turn: run_started with model_started, then
		// model_finished with the tool_calls, then one per result. Fail
		// each of the results of the calls that do not wait (the others
		// wait until the failure cancels them).
		for failAt := 3; failAt <= 2+(n-n/2); failAt++ {
			for iter := range 5 {
				t.Run(fmt.Sprintf("calls=%d/fail=%d/%d", n, failAt, iter), func(t *testing.T) {
					var faults storetest.Faults
					mem := memstore.New()
					store := storetest.Faulty(mem, &faults)
					slow := &slowTool{release: make(chan struct{})}
					m := scripted.New("m", parallelReply(n, n/2), scripted.Reply{Text: "done"})
					e := newEnv(t, store, agentrt.Config{}, calcAgent(m, registry(t, slow.tool())))
					id := e.session(t, "calc")
					faults.FailCommit(failAt, false)
					_, err := agentrt.Collect(e.r.Run(context.Background(), id, agentrt.Input{Text: "go"}))
					if !errors.Is(err, storetest.ErrInjected) {
						t.Fatalf("run: %v, want the injected store failure", err)
					}
					if got := slow.running.Load(); got != 0 {
						t.Fatalf("%d tool calls still running after Run returned", got)
					}
					before := storedLog(t, mem, id)
					done := map[string]bool{}
					for _, r := range toolResults(before) {
						done[r.CallID] = true
					}
					// Resume on the healthy store: the calls without a result
					// run again, the others do not.
					close(slow.release)
					ran := slow.ran.Load()
					e2 := newEnv(t, mem, agentrt.Config{}, calcAgent(scripted.New("m", scripted.Reply{Text: "done"}), registry(t, slow.tool())))
					res := e2.resume(t, id)
					if res.Status != session.StatusDone {
						t.Fatalf("resume: %+v", res)
					}
					after := storedLog(t, mem, id)
					if got, want := slow.ran.Load()-ran, int32(n-len(done)); got != want {
						t.Errorf("resume ran %d calls, want %d (the ones without a result)", got, want)
					}
					if rs := toolResults(after); len(rs) != n {
						t.Errorf("%d tool results, want %d", len(rs), n)
					}
				})
			}
		}
	}
}

// A driver that steps while the status is running stops at a
// failed commit: Step returns the error.
func TestStepReturnsStoreError(t *testing.T) {
	var faults storetest.Faults
	store := storetest.Faulty(memstore.New(), &faults)
	m := scripted.New("m",
		scripted.Reply{ToolCalls: []scripted.Call{scripted.ToolCall("calculator", `{"expression":"1+2"}`)}},
		scripted.Reply{Text: "3"},
	)
	e := newEnv(t, store, agentrt.Config{}, calcAgent(m, registry(t)))
	id := e.session(t, "calc")
	ctx := context.Background()
	st, err := e.r.Begin(ctx, id, agentrt.Input{Text: "1+2"})
	if err != nil {
		t.Fatal(err)
	}
	faults.FailCommit(2, true)
	steps := 0
	for st.Status == session.StatusRunning {
		if steps++; steps > 10 {
			t.Fatal("the driver does not stop")
		}
		if _, err = e.r.Step(ctx, st); err != nil {
			break
		}
	}
	if !errors.Is(err, storetest.ErrInjected) {
		t.Fatalf("Step: %v, want the injected store failure", err)
	}
	// Reloaded on a healthy store, the session is where the store says.
	faults.FailCommit(0, false)
	st, err = e.r.Load(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	for st.Status == session.StatusRunning {
		if _, err := e.r.Step(ctx, st); err != nil {
			t.Fatal(err)
		}
	}
	if st.Status != session.StatusDone || st.Final != "3" {
		t.Errorf("after reload: %s %q", st.Status, st.Final)
	}
}
