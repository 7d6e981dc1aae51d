package agentrt_test

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/model/scripted"
	"github.com/agentrt/agentrt/session"
	"github.com/agentrt/agentrt/session/memstore"
	"github.com/agentrt/agentrt/session/storetest"
	"github.com/agentrt/agentrt/tool"
)

// funcModel answers each request with what its function says: a model
// whose reply depends on the conversation, not on the order of calls
// (several sub-agents share one).
type funcModel struct {
	name string
	fn   func(ctx context.Context, req *model.Request) (model.Chunk, error)
}

func (m funcModel) Name() string { return m.name }

func (m funcModel) Stream(ctx context.Context, req *model.Request) iter.Seq2[model.Chunk, error] {
	return func(yield func(model.Chunk, error) bool) {
		c, err := m.fn(ctx, req)
		if err != nil {
			yield(model.Chunk{}, err)
			return
		}
		if !yield(c, nil) {
			return
		}
		yield(model.Chunk{FinishReason: c.FinishReason}, nil)
	}
}

func lastOf(req *model.Request) model.Message { return req.Messages[len(req.Messages)-1] }

// A child session whose first commit never happened (the store failed, or
// the process died) is started when the parent goes on, not reported as
// a delegation with nothing to resume.
func TestDelegationToAChildThatNeverCommitted(t *testing.T) {
	var faults storetest.Faults
	mem := memstore.New()
	b, c := delegation(t, scripted.New("boss", delegate("compute 6*7"), scripted.Reply{Text: "It is 42."}),
		scripted.New("calc-model", scripted.Reply{Text: "42"}))
	e := newEnv(t, storetest.Faulty(mem, &faults), agentrt.Config{}, b, c)
	id := e.session(t, "boss")
	// Parent: 1 [run_started … model_started], 2 [model_finished
	// tool_call], 3 [subagent_started]; the child's first commit (4)
	// fails, after its session was created.
	faults.FailCommit(4, false)
	if _, err := agentrt.Collect(e.r.Run(context.Background(), id, agentrt.Input{Text: "go"})); !errors.Is(err, storetest.ErrInjected) {
		t.Fatalf("run: %v", err)
	}
	started := eventsOf[session.SubagentStarted](storedLog(t, mem, id))
	if len(started) != 1 {
		t.Fatalf("subagent_started: %+v", started)
	}
	child, err := mem.GetSession(context.Background(), started[0].ChildSession)
	if err != nil || child.LastSeq != 0 || child.Status != session.StatusIdle {
		t.Fatalf("child after the failure: %+v %v, want created and empty", child, err)
	}
	res := e.resume(t, id)
	if res.Status != session.StatusDone || res.Text != "It is 42." {
		t.Fatalf("resume: %s %q %+v", res.Status, res.Text, res.Err)
	}
	if fin := eventsOf[session.SubagentFinished](storedLog(t, mem, id)); len(fin) != 1 || fin[0].Answer != "42" {
		t.Errorf("subagent_finished %+v", fin)
	}
}

// An interruption of the parent's run reaches the sub-agent working for
// it: the child stops at its next safe point instead of running all its
// rounds first, and the parent's turn ends interrupted.
func TestInterruptReachesSubagent(t *testing.T) {
	for _, how := range []string{"handle", "runner"} {
		t.Run(how, func(t *testing.T) {
			b, c := delegation(t, scripted.New("boss", delegate("think long")),
				scripted.New("calc-model", scripted.Reply{Text: "never", Delay: time.Hour}))
			store := memstore.New()
			e := newEnv(t, store, agentrt.Config{}, b, c)
			ctx := context.Background()
			h, err := e.r.Start(ctx, "p1", agentrt.Input{Text: "go", Agent: "boss"})
			if err != nil {
				t.Fatal(err)
			}
			// The child's round has begun (its model call is about to
			// start, or under way) once the parent recorded its progress.
			// (Not once the child's model_started shows in the parent's
			// live stream: live events published before Events subscribed
			// are not replayed, and the test waited for ever when that
			// happened.)
			for ev, err := range h.Events(ctx) {
				if err != nil {
					t.Fatal(err)
				}
				if ev.Type == session.TypeSubagentProgress {
					break
				}
			}
			if how == "handle" {
				h.Interrupt("newer input")
			} else if _, err := e.r.Interrupt(ctx, "p1", "newer input"); err != nil {
				t.Fatal(err)
			}
			res, err := h.Wait(ctx)
			if err != nil || res.Status != session.StatusInterrupted {
				t.Fatalf("parent: %+v %v", res, err)
			}
			started := eventsOf[session.SubagentStarted](storedLog(t, store, "p1"))
			child, err := store.GetSession(ctx, started[0].ChildSession)
			if err != nil || child.Status != session.StatusInterrupted {
				t.Fatalf("child: %+v %v, want interrupted", child, err)
			}
			results := toolResults(storedLog(t, store, "p1"))
			if len(results) != 1 || results[0].OK || !strings.Contains(results[0].Error, "interrupted") {
				t.Errorf("the delegation's result: %+v", results)
			}
		})
	}
}

// Delegations of one reply run at once, each in a child session of its
// own; the parent's watchers see the children's events as they happen.
func TestConcurrentDelegationsAndTheirEvents(t *testing.T) {
	// Each child's tool waits until both children are in it: run one after
	// the other, the first would wait in vain (and fail after a minute).
	var arrived sync.WaitGroup
	arrived.Add(2)
	both := make(chan struct{})
	go func() { arrived.Wait(); close(both) }()
	meet := tool.Must(tool.New("meet", "waits for the other", func(ctx context.Context, in struct{}) (string, error) {
		arrived.Done()
		select {
		case <-both:
			return "met", nil
		case <-time.After(time.Minute):
			return "", errors.New("alone: the other delegation did not run at the same time")
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}))
	child := funcModel{"calc-model", func(_ context.Context, req *model.Request) (model.Chunk, error) {
		if last := lastOf(req); last.Role == model.RoleTool {
			return model.Chunk{Text: "answer to " + req.Messages[0].Text() + ": " + last.Text(), FinishReason: model.FinishStop}, nil
		}
		return model.Chunk{ToolCalls: []model.ToolCallDelta{{ID: "m1", Name: "meet", Arguments: "{}"}}, FinishReason: model.FinishToolCalls}, nil
	}}
	boss := scripted.New("boss",
		scripted.Reply{ToolCalls: []scripted.Call{
			{ID: "c1", Name: "calc", Arguments: `{"task":"one"}`},
			{ID: "c2", Name: "calc", Arguments: `{"task":"two"}`},
		}},
		scripted.Reply{Text: "both answered"})
	reg, err := tool.NewRegistry(agentrt.SubAgent("calc", ""))
	if err != nil {
		t.Fatal(err)
	}
	b := &agentrt.Agent{Name: "boss", Model: boss, Tools: reg}
	c := calcAgent(child, registry(t, meet))
	store := memstore.New()
	e := newEnv(t, store, agentrt.Config{}, b, c)
	ctx := context.Background()
	var nested []*session.SubagentEvent
	var res *agentrt.Result
	for ev, err := range e.r.Run(ctx, "p1", agentrt.Input{Text: "go", Agent: "boss"}) {
		if err != nil {
			t.Fatal(err)
		}
		if se, ok := ev.Data.(*session.SubagentEvent); ok {
			if ev.Seq != 0 || ev.SessionID != "p1" {
				t.Errorf("a sub-agent's event came as seq %d of session %s, want live in p1", ev.Seq, ev.SessionID)
			}
			nested = append(nested, se)
		}
		if fin, ok := ev.Data.(*session.RunFinished); ok {
			res = &agentrt.Result{Status: fin.Status}
		}
	}
	if res == nil || res.Status != session.StatusDone {
		t.Fatalf("parent: %+v", res)
	}
	log := storedLog(t, store, "p1")
	fins := eventsOf[session.SubagentFinished](log)
	if len(fins) != 2 || fins[0].ChildSession == fins[1].ChildSession {
		t.Fatalf("subagent_finished %+v, want two children", fins)
	}
	for _, f := range fins {
		if !strings.HasSuffix(f.Answer, `: "met"`) {
			t.Errorf("child %s answered %q", f.ChildSession, f.Answer)
		}
	}
	// Each child's whole run, live, marked with its session.
	seen := map[string][]session.Type{}
	for _, se := range nested {
		if se.Event.SessionID != se.ChildSession {
			t.Errorf("nested event of %s marked %s", se.Event.SessionID, se.ChildSession)
		}
		seen[se.ChildSession] = append(seen[se.ChildSession], se.Event.Type)
	}
	for _, f := range fins {
		types := seen[f.ChildSession]
		if len(types) == 0 || types[0] != session.TypeRunStarted || types[len(types)-1] != session.TypeRunFinished {
			t.Errorf("child %s's events seen by the parent: %v", f.ChildSession, types)
		}
	}
}

// A child that another runner is running when the parent goes on (a
// person resumed it, say) is not run twice: the parent waits for that run
// and takes its answer, once.
func TestDelegationAttachesToTheChildsRun(t *testing.T) {
	var faults storetest.Faults
	mem := memstore.New()
	g := newGate()
	bossModel := func() *scripted.Model {
		return scripted.New("boss", delegate("wait"), scripted.Reply{Text: "done"})
	}
	b, c := delegation(t, bossModel(), scripted.New("calc-model", gateCall(), scripted.Reply{Text: "waited"}), g.tool())
	e := newEnv(t, storetest.Faulty(mem, &faults), agentrt.Config{Owner: "host-a:1:a"}, b, c)
	// Parent: 1 [run_started … model_started], 2 [… tool_call], 3
	// [subagent_started]; child: 4 [run_started … model_started], 5
	// [progress, parent], 6 [… tool_call], and its result (7) fails: both
	// runs stop, running.
	faults.FailCommit(7, false)
	go func() { <-g.started; g.release <- struct{}{} }()
	if _, err := agentrt.Collect(e.r.Run(context.Background(), "p1", agentrt.Input{Text: "go", Agent: "boss"})); !errors.Is(err, storetest.ErrInjected) {
		t.Fatalf("run: %v", err)
	}
	childID := eventsOf[session.SubagentStarted](storedLog(t, mem, "p1"))[0].ChildSession
	if s, _ := mem.GetSession(context.Background(), childID); s.Status != session.StatusRunning {
		t.Fatalf("child after the failure: %s", s.Status)
	}

	// Another runner resumes the child, which blocks in its tool.
	g2 := newGate()
	b2, c2 := delegation(t, scripted.New("boss", scripted.Reply{Text: "done"}), scripted.New("calc-model", scripted.Reply{Text: "waited"}), g2.tool())
	other := newEnv(t, mem, agentrt.Config{Owner: "host-b:2:b"}, b2, c2)
	h, err := other.r.StartResume(context.Background(), childID)
	if err != nil {
		t.Fatal(err)
	}
	wait(t, g2.started)
	// The parent goes on in the first runner while the child runs there.
	b3, c3 := delegation(t, scripted.New("boss", scripted.Reply{Text: "done"}), scripted.New("calc-model", scripted.Reply{Text: "not this one"}), g.tool())
	third := newEnv(t, mem, agentrt.Config{Owner: "host-c:3:c"}, b3, c3)
	resumed := make(chan *agentrt.Result, 1)
	go func() {
		res, err := agentrt.Collect(third.r.Resume(context.Background(), "p1"))
		if err != nil {
			t.Error(err)
		}
		resumed <- res
	}()
	close(g2.release)
	res := wait(t, resumed)
	if res == nil || res.Status != session.StatusDone {
		t.Fatalf("parent: %+v", res)
	}
	if cres, err := h.Wait(context.Background()); err != nil || cres.Status != session.StatusDone || cres.Text != "waited" {
		t.Fatalf("child's run: %+v %v", cres, err)
	}
	fins := eventsOf[session.SubagentFinished](storedLog(t, mem, "p1"))
	if len(fins) != 1 || fins[0].Answer != "waited" {
		t.Fatalf("subagent_finished %+v, want the child's answer once", fins)
	}
	clog := storedLog(t, mem, childID)
	if n := len(eventsOf[session.RunResumed](clog)); n != 1 {
		t.Errorf("the child was resumed %d times: %s", n, fmt.Sprint(types(clog)))
	}
}
