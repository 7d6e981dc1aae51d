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
)

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

// Bug 1: a commit that fails while parallel calls run must not leave a
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

// Bug 2: a driver that steps while the status is running stops at a
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

// Bug 3: hooks run by priority first; the runner's before the agent's only
// at equal priority.
func TestHookOrderByPriority(t *testing.T) {
	var order []string
	hook := func(name string) agentrt.TurnStartFunc {
		return func(context.Context, agentrt.HookInfo, string) error {
			order = append(order, name)
			return nil
		}
	}
	a := calcAgent(scripted.New("m", scripted.Reply{Text: "hi"}), nil)
	a.Hooks.TurnStart(9, hook("agent-9"))
	a.Hooks.TurnStart(5, hook("agent-5"))
	a.Hooks.TurnStart(1, hook("agent-1"))
	a.Hooks.TurnStart(5, hook("agent-5b"))
	var cfg agentrt.Config
	cfg.Hooks.TurnStart(1, hook("runner-1"))
	cfg.Hooks.TurnStart(5, hook("runner-5"))
	cfg.Hooks.TurnStart(7, hook("runner-7"))
	e := newEnv(t, nil, cfg, a)
	e.run(t, e.session(t, "calc"), "go")
	want := []string{"agent-9", "runner-7", "runner-5", "agent-5", "agent-5b", "runner-1", "agent-1"}
	if diff := cmp.Diff(want, order); diff != "" {
		t.Errorf("order (-want +got):\n%s", diff)
	}
}

// Bug 4: a before-model hook that writes into the request's messages
// (their parts, their tool calls' arguments) cannot change the state: the
// state still equals the replay of its log.
func TestBeforeModelHookCannotChangeState(t *testing.T) {
	m := scripted.New("m",
		scripted.Reply{ToolCalls: []scripted.Call{scripted.ToolCall("calculator", `{"expression":"1+2"}`)}},
		scripted.Reply{Text: "3"},
	)
	a := calcAgent(m, registry(t))
	a.Hooks.BeforeModel(0, func(_ context.Context, _ agentrt.HookInfo, req *model.Request) (*model.Request, error) {
		for i := range req.Messages {
			msg := &req.Messages[i]
			for j := range msg.Parts {
				msg.Parts[j].Text = "tampered"
			}
			for j := range msg.ToolCalls {
				for k := range msg.ToolCalls[j].Arguments {
					msg.ToolCalls[j].Arguments[k] = ' '
				}
				msg.ToolCalls[j].Name = "tampered"
			}
		}
		return nil, nil
	})
	e := newEnv(t, nil, agentrt.Config{SnapshotEvery: 1000}, a)
	id := e.session(t, "calc")
	st, err := e.r.Begin(context.Background(), id, agentrt.Input{Text: "1+2"})
	if err != nil {
		t.Fatal(err)
	}
	for st.Status == session.StatusRunning {
		if _, err := e.r.Step(context.Background(), st); err != nil {
			t.Fatal(err)
		}
	}
	replayed := agentrt.NewState(id, "calc")
	for _, ev := range storedLog(t, e.store, id) {
		if err := replayed.Apply(ev); err != nil {
			t.Fatal(err)
		}
	}
	if diff := cmp.Diff(replayed, st, cmpopts.EquateEmpty(), cmpopts.IgnoreFields(agentrt.State{}, "SnapshotSeq", "PolicyJSON"), cmpopts.IgnoreUnexported(agentrt.State{})); diff != "" {
		t.Errorf("the hook changed the state (-replay +state):\n%s", diff)
	}
	if st.Messages[0].Text() != "1+2" {
		t.Errorf("first message %q", st.Messages[0].Text())
	}
}

// Bug 5: two calls with the same id in one reply (some OpenAI-compatible
// servers repeat ids) each run once, and a policy that finds nothing to
// do fails the run instead of spinning.
func TestDuplicateCallIDs(t *testing.T) {
	var seen []string
	var mu sync.Mutex
	calc := tool.Must(tool.New("calculator", "evaluates", func(_ context.Context, in struct {
		Expression string `json:"expression"`
	}) (string, error) {
		mu.Lock()
		seen = append(seen, in.Expression)
		mu.Unlock()
		return in.Expression + " done", nil
	}))
	reg, err := tool.NewRegistry(calc)
	if err != nil {
		t.Fatal(err)
	}
	m := scripted.New("m",
		scripted.Reply{ToolCalls: []scripted.Call{
			{ID: "same", Name: "calculator", Arguments: `{"expression":"1+1"}`},
			{ID: "same", Name: "calculator", Arguments: `{"expression":"2+2"}`},
		}},
		scripted.Reply{Text: "both", Expect: &scripted.Expect{LastToolResultContains: "2+2 done"}},
	)
	e := newEnv(t, nil, agentrt.Config{}, calcAgent(m, reg))
	id := e.session(t, "calc")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := agentrt.Collect(e.r.Run(ctx, id, agentrt.Input{Text: "go"}))
	if err != nil || res.Status != session.StatusDone {
		t.Fatalf("run: %v %+v", err, res)
	}
	mu.Lock()
	defer mu.Unlock()
	if diff := cmp.Diff([]string{"1+1", "2+2"}, seen, cmpopts.SortSlices(func(a, b string) bool { return a < b })); diff != "" {
		t.Errorf("calls run (-want +got):\n%s", diff)
	}
	var ids []string
	for _, r := range toolResults(res.Events) {
		ids = append(ids, r.CallID)
	}
	if len(ids) != 2 || ids[0] == ids[1] {
		t.Errorf("result ids %v, want two distinct", ids)
	}

	// A policy that keeps choosing what changes nothing.
	stuck := calcAgent(scripted.New("m"), nil)
	stuck.Name = "stuck"
	stuck.Policy = agentrt.PolicyFunc(func(context.Context, *agentrt.Agent, *agentrt.State) (agentrt.Instruction, error) {
		return agentrt.Instruction{Kind: agentrt.KindCallTools}, nil
	})
	e = newEnv(t, nil, agentrt.Config{}, stuck)
	id = e.session(t, "stuck")
	res, err = agentrt.Collect(e.r.Run(ctx, id, agentrt.Input{Text: "go"}))
	if err != nil || res.Status != session.StatusFailed || res.Err == nil || res.Err.Code != "no_progress" {
		t.Fatalf("stuck policy: %v %+v", err, res)
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

// Bug 6: a run canceled while tools run stores the results the tools came
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

// callRecorder records the CallInfo of every call.
type callRecorder struct {
	mu    sync.Mutex
	infos []tool.CallInfo
}

func (c *callRecorder) tool(name string, meta tool.Meta, fail *atomic.Bool) tool.Tool {
	return tool.WithMeta(tool.Must(tool.New(name, "charges a card", func(ctx context.Context, in struct {
		Cents int `json:"cents"`
	}) (string, error) {
		info, _ := tool.CallInfoFrom(ctx)
		c.mu.Lock()
		c.infos = append(c.infos, info)
		c.mu.Unlock()
		return fmt.Sprintf("charged %d", in.Cents), nil
	})), meta)
}

// Bug 8: every call carries a stable idempotency key and its attempt; a
// call in flight when its run stopped runs again with the same key (at
// least once), unless its tool is AtMostOnce: then a person says whether
// it took effect.
func TestIdempotencyKeyAndAtMostOnce(t *testing.T) {
	charge := scripted.Reply{ToolCalls: []scripted.Call{scripted.ToolCall("charge", `{"cents":500}`)}}
	// setup runs a turn whose tool result cannot be stored: the tool ran,
	// the store failed (as if the process died right after the call).
	setup := func(t *testing.T, meta tool.Meta) (*memstore.Store, *callRecorder, string) {
		var faults storetest.Faults
		mem := memstore.New()
		rec := &callRecorder{}
		e := newEnv(t, storetest.Faulty(mem, &faults), agentrt.Config{}, calcAgent(scripted.New("m", charge), registry(t, rec.tool("charge", meta, nil))))
		id := e.session(t, "calc")
		faults.FailCommit(3, false) // model_started, model_finished with tool_call, then the result
		if _, err := agentrt.Collect(e.r.Run(context.Background(), id, agentrt.Input{Text: "pay"})); !errors.Is(err, storetest.ErrInjected) {
			t.Fatalf("run: %v", err)
		}
		if len(rec.infos) != 1 {
			t.Fatalf("%d calls, want 1", len(rec.infos))
		}
		return mem, rec, id
	}
	t.Run("at least once", func(t *testing.T) {
		mem, rec, id := setup(t, tool.Meta{})
		e := newEnv(t, mem, agentrt.Config{}, calcAgent(scripted.New("m", scripted.Reply{Text: "paid"}), registry(t, rec.tool("charge", tool.Meta{}, nil))))
		if res := e.resume(t, id); res.Status != session.StatusDone {
			t.Fatalf("resume: %+v", res)
		}
		if len(rec.infos) != 2 {
			t.Fatalf("%d calls, want 2", len(rec.infos))
		}
		first, second := rec.infos[0], rec.infos[1]
		if first.IdempotencyKey == "" || first.IdempotencyKey != second.IdempotencyKey || first.SessionID != id {
			t.Errorf("keys %q and %q, want one stable key", first.IdempotencyKey, second.IdempotencyKey)
		}
		if first.Attempt != 1 || second.Attempt != 2 {
			t.Errorf("attempts %d, %d, want 1, 2", first.Attempt, second.Attempt)
		}
	})
	for _, tc := range []struct {
		decision string
		res      agentrt.Resolution
		runs     int
		want     string
	}{
		{"done", agentrt.Resolution{Decision: "done", Result: json.RawMessage(`{"receipt":"r-17"}`), By: "ana"}, 1, `"r-17"`},
		{"failed", agentrt.Resolution{Decision: "failed", Reason: "card declined", By: "ana"}, 1, "card declined"},
		{"retry", agentrt.Resolution{Decision: "retry", By: "ana"}, 2, "charged 500"},
	} {
		t.Run("at most once/"+tc.decision, func(t *testing.T) {
			meta := tool.Meta{AtMostOnce: true}
			mem, rec, id := setup(t, meta)
			m := scripted.New("m", scripted.Reply{Text: "settled", Expect: &scripted.Expect{LastToolResultContains: tc.want}})
			e := newEnv(t, mem, agentrt.Config{}, calcAgent(m, registry(t, rec.tool("charge", meta, nil))))
			res := e.resume(t, id)
			if res.Status != session.StatusWaiting {
				t.Fatalf("resume: %+v, want waiting for a person", res)
			}
			if len(rec.infos) != 1 {
				t.Fatalf("the tool ran again before a person decided")
			}
			var req *session.InputRequired
			for _, ev := range res.Events {
				if d, ok := ev.Data.(*session.InputRequired); ok {
					req = d
				}
			}
			if req == nil || req.Kind != session.RequestConfirm || len(req.Calls) != 1 || !strings.Contains(req.Question, "charge") {
				t.Fatalf("request %+v, want a confirm about the charge", req)
			}
			if _, err := e.r.Resolve(context.Background(), id, req.RequestID, tc.res); err != nil {
				t.Fatal(err)
			}
			res = e.resume(t, id)
			if res.Status != session.StatusDone {
				t.Fatalf("after %s: %+v", tc.decision, res)
			}
			if len(rec.infos) != tc.runs {
				t.Errorf("the tool ran %d times, want %d", len(rec.infos), tc.runs)
			}
			if tc.runs == 2 && rec.infos[1].Attempt != 2 {
				t.Errorf("the retry is attempt %d, want 2", rec.infos[1].Attempt)
			}
			storedLog(t, mem, id)
		})
	}
}

// A resolution of a confirm request that is not done, failed or retry is
// refused, as is a result that is not JSON; nothing is written.
func TestConfirmBadInput(t *testing.T) {
	var faults storetest.Faults
	mem := memstore.New()
	rec := &callRecorder{}
	meta := tool.Meta{AtMostOnce: true}
	charge := scripted.Reply{ToolCalls: []scripted.Call{scripted.ToolCall("charge", `{"cents":5}`)}}
	e := newEnv(t, storetest.Faulty(mem, &faults), agentrt.Config{}, calcAgent(scripted.New("m", charge), registry(t, rec.tool("charge", meta, nil))))
	id := e.session(t, "calc")
	faults.FailCommit(3, false)
	agentrt.Collect(e.r.Run(context.Background(), id, agentrt.Input{Text: "pay"}))
	e = newEnv(t, mem, agentrt.Config{}, calcAgent(scripted.New("m"), registry(t, rec.tool("charge", meta, nil))))
	res := e.resume(t, id)
	rid := res.Events[len(res.Events)-2].Data.(*session.InputRequired).RequestID
	before := storedLog(t, mem, id)
	for _, tc := range []struct {
		res  agentrt.Resolution
		code string
	}{
		{agentrt.Resolution{Decision: "approve"}, "bad_decision"},
		{agentrt.Resolution{Decision: "done", Result: json.RawMessage(`{"a":`)}, "bad_result"},
		{agentrt.Resolution{Decision: ""}, "bad_decision"},
	} {
		_, err := e.r.Resolve(context.Background(), id, rid, tc.res)
		var re *agentrt.Error
		if !errors.As(err, &re) || re.ErrorCode() != tc.code {
			t.Errorf("%+v: %v, want %s", tc.res, err, tc.code)
		}
	}
	if diff := cmp.Diff(before, storedLog(t, mem, id)); diff != "" {
		t.Errorf("bad input changed the log:\n%s", diff)
	}
}
