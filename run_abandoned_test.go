package agentrt_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/model/scripted"
	"github.com/agentrt/agentrt/session"
	"github.com/agentrt/agentrt/session/memstore"
	"github.com/agentrt/agentrt/tool"
	"github.com/agentrt/agentrt/tool/builtin"
)

// stallStore holds the next commit, or the next Acquire, once armed,
// until gate is closed; entered is closed when it holds one. While it
// holds, the first GetSession of anyone else closes read.
type stallStore struct {
	*memstore.Store
	mu            sync.Mutex
	commit, acq   bool // armed; guarded by mu
	holding, seen bool // guarded by mu
	entered       chan struct{}
	read          chan struct{}
	gate          chan struct{}
}

func newStallStore() *stallStore {
	return &stallStore{Store: memstore.New(), entered: make(chan struct{}), read: make(chan struct{}), gate: make(chan struct{})}
}

func (s *stallStore) hold(armed *bool) {
	s.mu.Lock()
	if !*armed {
		s.mu.Unlock()
		return
	}
	*armed, s.holding = false, true
	s.mu.Unlock()
	close(s.entered)
	<-s.gate
	s.mu.Lock()
	s.holding = false
	s.mu.Unlock()
}

func (s *stallStore) Commit(ctx context.Context, c *session.Commit) error {
	s.hold(&s.commit)
	return s.Store.Commit(ctx, c)
}

func (s *stallStore) Acquire(ctx context.Context, id, owner string, ttl time.Duration) (session.Lease, error) {
	s.hold(&s.acq)
	return s.Store.Acquire(ctx, id, owner, ttl)
}

func (s *stallStore) GetSession(ctx context.Context, id string) (*session.Session, error) {
	s.mu.Lock()
	if s.holding && !s.seen {
		s.seen = true
		close(s.read)
	}
	s.mu.Unlock()
	return s.Store.GetSession(ctx, id)
}

func (s *stallStore) arm(commit, acquire bool) {
	s.mu.Lock()
	s.commit, s.acq = commit, acquire
	s.mu.Unlock()
}

// twoApprovalsAgent asks a person about each of its two calculator calls.
func twoApprovalsAgent(t *testing.T) *agentrt.Agent {
	a := calcAgent(scripted.New("m",
		scripted.Reply{ToolCalls: []scripted.Call{
			{ID: "c1", Name: "calculator", Arguments: `{"expression":"1+1"}`},
			{ID: "c2", Name: "calculator", Arguments: `{"expression":"2+2"}`},
		}},
		scripted.Reply{Text: "done"}).ByConversation(), nil)
	reg, err := tool.NewRegistry(tool.WithMeta(builtin.Calculator(), tool.Meta{Approval: tool.ApprovalAsk}))
	if err != nil {
		t.Fatal(err)
	}
	a.Tools = reg
	return a
}

// A handle found while its session was claimed (Active, a control
// request, a delegation attaching to it) ends when the use that claimed
// the session ends, even if no run came of it: here ResolveAndContinue
// answers one of two requests, so the run does not go on. Runner.Cancel,
// made meanwhile, found that handle and waits for it: it must see it end,
// look again, and cancel the waiting run.
func TestCancelDuringAResolutionThatLeavesTheRunWaiting(t *testing.T) {
	st := newStallStore()
	e := newEnv(t, st, agentrt.Config{}, twoApprovalsAgent(t))
	ctx := t.Context()
	res, err := e.r.Send(ctx, "s1", agentrt.Input{Text: "go", Agent: "calc"})
	if res == nil || res.Status != session.StatusWaiting {
		t.Fatalf("first turn: %+v %v", res, err)
	}
	state, err := e.r.Load(ctx, "s1")
	if err != nil || len(state.Requests) != 2 {
		t.Fatalf("requests: %+v %v", state, err)
	}

	st.arm(true, false) // the resolution's commit waits
	resolved := make(chan error, 1)
	go func() {
		out, err := e.r.ResolveAndContinue(ctx, "s1", state.Requests[0].ID, agentrt.Resolution{Decision: session.DecisionApprove})
		if err == nil && (out.Pending != 1 || out.Run != nil) {
			t.Errorf("resolution: %+v, want one request pending and no run", out)
		}
		resolved <- err
	}()
	<-st.entered
	h, ok := e.r.Active(ctx, "s1")
	if !ok {
		t.Fatal("no handle while the resolution holds the session")
	}
	type outcome struct {
		out *agentrt.ControlOutcome
		err error
	}
	canceled := make(chan outcome, 1)
	go func() {
		out, err := e.r.Cancel(ctx, "s1", "changed my mind")
		canceled <- outcome{out, err}
	}()
	<-st.read // Cancel found the resolution's handle
	close(st.gate)
	if err := wait(t, resolved); err != nil {
		t.Fatalf("resolution: %v", err)
	}
	select {
	case <-h.Done():
	default:
		t.Fatal("the handle of the resolution that ended is not done")
	}
	got := wait(t, canceled)
	if got.err != nil || !got.out.Acted || got.out.Status != session.StatusCanceled {
		t.Fatalf("Cancel: %+v %v, want the waiting run canceled", got.out, got.err)
	}
}

// A Start that claims its session and then finds it leased elsewhere
// returns lease_held; the handle Active gave out meanwhile is done too.
func TestHandleOfAStartThatFailedIsDone(t *testing.T) {
	st := newStallStore()
	other, err := agentrt.NewRunner(agentrt.Config{Store: st.Store, Agents: []*agentrt.Agent{slowAgent()}, Owner: "host-b:2:b"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { other.Close(context.Background()) })
	startInModel(t, other, "s1")

	e := newEnv(t, st, agentrt.Config{Owner: "host-a:1:a"}, slowAgent())
	ctx := t.Context()
	st.arm(false, true) // the lease's acquisition waits
	started := make(chan error, 1)
	go func() {
		_, err := e.r.Start(ctx, "s1", agentrt.Input{Text: "again"})
		started <- err
	}()
	<-st.entered
	h, ok := e.r.Active(ctx, "s1")
	if !ok {
		t.Fatal("no handle while the start holds the session")
	}
	close(st.gate)
	if err := wait(t, started); errCode(err) != agentrt.CodeLeaseHeld {
		t.Fatalf("Start: %v, want lease_held", err)
	}
	select {
	case <-h.Done():
	default:
		t.Fatal("the handle of the start that failed is not done: whoever waits on it waits for ever")
	}
}

// A handle found while its run begins (Active) may be read at once: its
// run id and the point its events start from are set under its lock
// (under -race, they were written as Active's caller read them).
func TestHandleReadWhileItsRunBegins(t *testing.T) {
	st := newStallStore()
	e := newEnv(t, st, agentrt.Config{}, calcAgent(scripted.New("m", scripted.Reply{Text: "hi"}), nil))
	ctx := t.Context()
	if _, err := e.r.CreateSession(ctx, "calc", "s1", nil); err != nil {
		t.Fatal(err)
	}
	st.arm(false, true) // the lease's acquisition waits
	started := make(chan *agentrt.Run, 1)
	go func() {
		h, err := e.r.Start(ctx, "s1", agentrt.Input{Text: "go"})
		if err != nil {
			t.Error(err)
		}
		started <- h
	}()
	<-st.entered
	h, ok := e.r.Active(ctx, "s1")
	if !ok {
		t.Fatal("no handle while the start holds the session")
	}
	close(st.gate)
	_ = h.ID()
	if got := wait(t, started); got != h {
		t.Fatal("Start returned another handle than Active")
	}
	res, err := h.Wait(ctx)
	if err != nil || res.Status != session.StatusDone || h.ID() != res.RunID {
		t.Fatalf("Wait: %+v %v; ID %q", res, err, h.ID())
	}
}
