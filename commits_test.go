package agentrt_test

import (
	"context"
	"iter"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/model/scripted"
	"github.com/agentrt/agentrt/session"
	"github.com/agentrt/agentrt/session/memstore"
	"github.com/agentrt/agentrt/session/storetest"
	"github.com/agentrt/agentrt/tool"
)

// commitLog records the events of each commit.
type commitLog struct {
	session.Store
	commits [][]session.Type
}

func (c *commitLog) Commit(ctx context.Context, cm *session.Commit) error {
	err := c.Store.Commit(ctx, cm)
	if err == nil {
		c.commits = append(c.commits, types(cm.Events))
	}
	return err
}

// durableModel checks, at every call, that the store already holds
// everything that came before the call: the session's last stored event
// is the call's model_started.
type durableModel struct {
	model.Model
	t     *testing.T
	store session.Store
	id    *string
}

func (m durableModel) Stream(ctx context.Context, req *model.Request) iter.Seq2[model.Chunk, error] {
	log := storedLog(m.t, m.store, *m.id)
	if last := log[len(log)-1]; last.Type != session.TypeModelStarted {
		m.t.Errorf("model called when the store's last event is %s (seq %d), want model_started", last.Type, last.Seq)
	}
	if n := len(req.Messages); n > 0 && req.Messages[n-1].Role == model.RoleTool {
		if rs := toolResults(log); len(rs) == 0 || rs[len(rs)-1].CallID != req.Messages[n-1].ToolCallID {
			m.t.Errorf("model called with a tool result the store does not hold")
		}
	}
	return m.Model.Stream(ctx, req)
}

// A run commits lazily: a step's events wait for the next commit, which
// every built-in executor makes before its side effect. A turn of three
// tool rounds commits 8 times (it was 15), and at each model call and each
// tool call the store already holds everything before it.
func TestLazyCommits(t *testing.T) {
	store := &commitLog{Store: memstore.New()}
	var id string
	calls := 0
	add := tool.Must(tool.New("add", "adds", func(ctx context.Context, in struct{ A, B int }) (int, error) {
		calls++
		log := storedLog(t, store, id)
		last := log[len(log)-1]
		info, _ := tool.CallInfoFrom(ctx)
		if tc, ok := last.Data.(*session.ToolCall); !ok || tc.CallID != info.CallID {
			t.Errorf("tool called when the store's last event is %s, want its tool_call", last.Type)
		}
		return in.A + in.B, nil
	}))
	call := scripted.Reply{ToolCalls: []scripted.Call{scripted.ToolCall("add", `{"A":1,"B":2}`)}}
	m := durableModel{Model: scripted.New("m", call, call, call, scripted.Reply{Text: "9"}), t: t, store: store, id: &id}
	e := newEnv(t, store, agentrt.Config{}, calcAgent(m, registry(t, add)))
	id = e.session(t, "calc")
	if res := e.run(t, id, "add thrice"); res.Status != session.StatusDone || calls != 3 {
		t.Fatalf("run: %s after %d calls", res.Status, calls)
	}
	tool := []session.Type{session.TypeToolResult, session.TypeRoundStarted, session.TypeModelStarted}
	call2 := []session.Type{session.TypeModelFinished, session.TypeToolCall}
	want := [][]session.Type{
		{session.TypeRunStarted, session.TypeRoundStarted, session.TypeModelStarted},
		call2, tool, call2, tool, call2, tool,
		{session.TypeModelFinished, session.TypeFinal, session.TypeRunFinished},
	}
	if diff := cmp.Diff(want, store.commits); diff != "" {
		t.Errorf("commits (-want +got):\n%s", diff)
	}
}

// A policy of the caller's, or an executor of the caller's, finds every
// event before it committed: it may have effects the runner knows nothing
// of.
func TestCustomStepsFindEverythingCommitted(t *testing.T) {
	for _, custom := range []string{"policy", "executor"} {
		t.Run(custom, func(t *testing.T) {
			store := &commitLog{Store: memstore.New()}
			var id string
			check := func(what string) {
				log := storedLog(t, store, id)
				if last := log[len(log)-1]; last.Type != session.TypeModelFinished && last.Type != session.TypeToolResult && last.Type != session.TypeRunStarted {
					t.Errorf("%s found the store's last event %s", what, last.Type)
				}
			}
			call := scripted.Reply{ToolCalls: []scripted.Call{scripted.ToolCall("calculator", `{"expression":"1+2"}`)}}
			a := calcAgent(scripted.New("m", call, scripted.Reply{Text: "3"}), registry(t))
			switch custom {
			case "policy":
				a.Policy = agentrt.PolicyFunc(func(ctx context.Context, a *agentrt.Agent, s *agentrt.State) (agentrt.Instruction, error) {
					if s.Seq > 1 {
						check("the policy")
					}
					return agentrt.React{}.Next(ctx, a, s)
				})
			case "executor":
				a.Executors = map[agentrt.Kind]agentrt.Executor{agentrt.KindCallTools: func(ctx context.Context, x *agentrt.Exec, ins agentrt.Instruction) error {
					check("the executor")
					return agentrt.CallTools(ctx, x, ins)
				}}
			}
			e := newEnv(t, store, agentrt.Config{}, a)
			id = e.session(t, "calc")
			if res := e.run(t, id, "1+2"); res.Status != session.StatusDone {
				t.Fatalf("run: %s", res.Status)
			}
		})
	}
}

// A run's last commit releases its session's lease (session.Commit.Release):
// the run makes one lease call, its Acquire, and the session is free at
// once. When that commit fails, the lease is released on its own.
func TestLastCommitReleasesLease(t *testing.T) {
	for _, failLast := range []bool{false, true} {
		t.Run(map[bool]string{false: "ok", true: "last commit fails"}[failLast], func(t *testing.T) {
			var faults storetest.Faults
			mem := memstore.New()
			call := scripted.Reply{ToolCalls: []scripted.Call{scripted.ToolCall("calculator", `{"expression":"1+2"}`)}}
			e := newEnv(t, storetest.Faulty(mem, &faults), agentrt.Config{}, calcAgent(scripted.New("m", call, scripted.Reply{Text: "3"}), registry(t)))
			id := e.session(t, "calc")
			if failLast {
				faults.FailCommit(4, false) // run_started.., model_finished+tool_call, tool_result.., the last
			}
			res, err := agentrt.Collect(e.r.Run(context.Background(), id, agentrt.Input{Text: "1+2"}))
			if failLast != (err != nil) {
				t.Fatalf("run: %+v, %v", res, err)
			}
			if got, want := faults.LeaseCalls(), map[bool]int{false: 1, true: 2}[failLast]; got != want {
				t.Errorf("%d lease calls, want %d", got, want)
			}
			if _, err := mem.Acquire(context.Background(), id, "someone else", time.Minute); err != nil {
				t.Errorf("the session is still leased after the run: %v", err)
			}
		})
	}
}
