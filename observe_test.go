package agentrt_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/model/scripted"
	"github.com/agentrt/agentrt/session"
	"github.com/agentrt/agentrt/session/memstore"
	"github.com/agentrt/agentrt/session/storetest"
)

// recorder is an Observer that keeps what it is told.
type recorder struct {
	mu     sync.Mutex
	events map[string][]*session.Event // by session
	infos  map[string][]agentrt.HookInfo
	ended  []ended
	// panicOn makes Committed panic on a commit with an event of this type.
	panicOn session.Type
}

type ended struct {
	info agentrt.HookInfo
	code string // the error's code, "" for nil
}

func newRecorder() *recorder {
	return &recorder{events: map[string][]*session.Event{}, infos: map[string][]agentrt.HookInfo{}}
}

func (r *recorder) Committed(_ context.Context, info agentrt.HookInfo, events []*session.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events[info.SessionID] = append(r.events[info.SessionID], events...)
	r.infos[info.SessionID] = append(r.infos[info.SessionID], info)
	for _, e := range events {
		if e.Type == r.panicOn {
			panic("observer panics on " + string(e.Type))
		}
	}
}

func (r *recorder) RunEnded(info agentrt.HookInfo, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	e := ended{info: info}
	if err != nil {
		e.code = errCode(err)
		if e.code == "" {
			e.code = err.Error()
		}
	}
	r.ended = append(r.ended, e)
}

func (r *recorder) log(id string) []*session.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.events[id]
}

func (r *recorder) ends() []ended {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]ended(nil), r.ended...)
}

// The observer sees every committed event of a turn, in order, before the
// caller does, and the run's end once.
func TestObserverSeesEveryCommit(t *testing.T) {
	obs := newRecorder()
	m := scripted.New("m", scripted.Reply{ToolCalls: []scripted.Call{scripted.ToolCall("calculator", `{"expression":"2+3"}`)}},
		scripted.Reply{Text: "5"})
	store := memstore.New()
	e := newEnv(t, store, agentrt.Config{Observer: obs}, calcAgent(m, registry(t)))
	id := e.session(t, "calc")
	for ev, err := range e.r.Run(context.Background(), id, agentrt.Input{Text: "2+3?"}) {
		if err != nil {
			t.Fatal(err)
		}
		if ev.Seq == 0 {
			continue
		}
		// Observed before it was yielded.
		if got := obs.log(id); len(got) == 0 || got[len(got)-1].Seq < ev.Seq {
			t.Fatalf("event %d (%s) yielded before the observer saw it", ev.Seq, ev.Type)
		}
	}
	want := storedLog(t, store, id)
	if diff := cmp.Diff(types(want), types(obs.log(id))); diff != "" {
		t.Errorf("observed events (-stored +observed):\n%s", diff)
	}
	for i, ev := range obs.log(id) {
		if ev.Seq != want[i].Seq || ev.Time.IsZero() {
			t.Errorf("observed event %d: seq %d time %v, want seq %d and a time", i, ev.Seq, ev.Time, want[i].Seq)
		}
	}
	obs.mu.Lock()
	for _, info := range obs.infos[id] {
		if info.Agent != "calc" || info.SessionID != id || info.RunID == "" {
			t.Errorf("commit info %+v", info)
		}
	}
	obs.mu.Unlock()
	if got := obs.ends(); len(got) != 1 || got[0].code != "" || got[0].info.SessionID != id || got[0].info.Agent != "calc" {
		t.Errorf("run ends %+v, want one without error", got)
	}
}

// A sub-agent's run is observed like any other, with its own session and
// agent; a run that waits for a person and is resumed is two runs.
func TestObserverSeesSubagentsAndResumptions(t *testing.T) {
	obs := newRecorder()
	boss := scripted.New("boss", delegate("compute 6*7"), scripted.Reply{Text: "It is 42."})
	calc := scripted.New("calc-model", scripted.Reply{ToolCalls: []scripted.Call{scripted.ToolCall("calculator", `{"expression":"6*7"}`)}},
		scripted.Reply{Text: "42"})
	b, c := delegation(t, boss, calc)
	c.Approval = agentrt.ApprovalPolicy{Ask: []string{"calculator"}}
	store := memstore.New()
	e := newEnv(t, store, agentrt.Config{Observer: obs}, b, c)
	id := e.session(t, "boss")
	if res := e.run(t, id, "what is 6*7?"); res.Status != session.StatusWaiting {
		t.Fatalf("run: %s", res.Status)
	}
	started := eventsOf[session.SubagentStarted](storedLog(t, store, id))
	if len(started) != 1 {
		t.Fatalf("subagent_started: %+v", started)
	}
	child := started[0].ChildSession
	st, err := e.r.Load(context.Background(), id)
	if err != nil || len(st.Requests) != 1 {
		t.Fatalf("load: %v %+v", err, st)
	}
	if _, err := e.r.Resolve(context.Background(), id, st.Requests[0].ID, agentrt.Resolution{Decision: session.DecisionApprove, By: "ana"}); err != nil {
		t.Fatal(err)
	}
	if res := e.resume(t, id); res.Status != session.StatusDone {
		t.Fatalf("resume: %s", res.Status)
	}
	for _, s := range []string{id, child} {
		if diff := cmp.Diff(types(storedLog(t, store, s)), types(obs.log(s))); diff != "" {
			t.Errorf("session %s: observed events (-stored +observed):\n%s", s, diff)
		}
	}
	var got []string
	for _, en := range obs.ends() {
		if en.code != "" {
			t.Errorf("run of %s ended with %s", en.info.Agent, en.code)
		}
		got = append(got, en.info.Agent)
	}
	// The child stops waiting before its parent; on resumption the parent
	// resumes the child, which finishes first.
	if diff := cmp.Diff([]string{"calc", "boss", "calc", "boss"}, got); diff != "" {
		t.Errorf("run ends by agent (-want +got):\n%s", diff)
	}
}

// A run whose session was taken over by another process stops without
// storing its end: the observer is told why.
func TestObserverSeesLeaseLost(t *testing.T) {
	obs := newRecorder()
	clock := storetest.NewClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	store := memstore.New(memstore.WithClock(clock.Now))
	g := newGate()
	a := newEnv(t, store, agentrt.Config{LeaseTTL: time.Hour, Owner: "a:1:a", Observer: obs},
		calcAgent(scripted.New("m", gateCall(), scripted.Reply{Text: "from a"}), registry(t, g.tool())))
	id := a.session(t, "calc")
	h, err := a.r.Start(context.Background(), id, agentrt.Input{Text: "go"})
	if err != nil {
		t.Fatal(err)
	}
	wait(t, g.started)
	clock.Advance(2 * time.Hour)
	g2 := newGate()
	close(g2.release)
	b := newEnv(t, store, agentrt.Config{LeaseTTL: time.Hour, Owner: "b:2:b"},
		calcAgent(scripted.New("m", scripted.Reply{Text: "from b"}), registry(t, g2.tool())))
	if res := b.resume(t, id); res.Status != session.StatusDone {
		t.Fatalf("b's resume: %+v", res)
	}
	close(g.release)
	if _, err := h.Wait(context.Background()); errCode(err) != agentrt.CodeLeaseLost {
		t.Fatalf("a's run: %v, want lease_lost", err)
	}
	if got := obs.ends(); len(got) != 1 || got[0].code != agentrt.CodeLeaseLost || got[0].info.SessionID != id {
		t.Errorf("run ends %+v, want one with lease_lost", got)
	}
}

// A commit that is no run's — a person's answer, a standing decision
// written to the agent's rule log — is observed with its session's
// tenant.
func TestObserverSeesWritesOutsideRuns(t *testing.T) {
	obs := newRecorder()
	m := scripted.New("m", scripted.Reply{ToolCalls: []scripted.Call{scripted.ToolCall("calculator", `{"expression":"2+3"}`)}},
		scripted.Reply{Text: "5"})
	a := calcAgent(m, registry(t))
	a.Approval = agentrt.ApprovalPolicy{Ask: []string{"calculator"}}
	e := newEnv(t, nil, agentrt.Config{Observer: obs}, a)
	ctx := session.WithTenant(context.Background(), "acme")
	s, err := e.r.CreateSession(ctx, "calc", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := agentrt.Collect(e.r.Run(ctx, s.ID, agentrt.Input{Text: "2+3?"}))
	if err != nil || res.Status != session.StatusWaiting {
		t.Fatalf("run: %+v %v", res, err)
	}
	st, err := e.r.Load(ctx, s.ID)
	if err != nil || len(st.Requests) != 1 {
		t.Fatalf("load: %v %+v", err, st)
	}
	if _, err := e.r.Resolve(ctx, s.ID, st.Requests[0].ID, agentrt.Resolution{Decision: session.DecisionApprove, By: "ana",
		Always: &agentrt.Always{Scope: "agent"}}); err != nil {
		t.Fatal(err)
	}
	obs.mu.Lock()
	defer obs.mu.Unlock()
	var resolved, ruled bool
	for id, evs := range obs.events {
		for _, ev := range evs {
			switch ev.Type {
			case session.TypeInputResolved:
				resolved = id == s.ID
			case session.TypeRuleAdded:
				ruled = true
			}
		}
		for _, info := range obs.infos[id] {
			if info.Tenant != "acme" {
				t.Errorf("a commit to %s observed with tenant %q, want acme", id, info.Tenant)
			}
		}
	}
	if !resolved || !ruled {
		t.Errorf("observed the answer %v, the rule %v; want both", resolved, ruled)
	}
}

// An observer that panics does not stop the run: what it was told is
// already stored.
func TestObserverPanicIsDropped(t *testing.T) {
	obs := newRecorder()
	obs.panicOn = session.TypeToolResult
	m := scripted.New("m", scripted.Reply{ToolCalls: []scripted.Call{scripted.ToolCall("calculator", `{"expression":"2+3"}`)}},
		scripted.Reply{Text: "5"})
	e := newEnv(t, nil, agentrt.Config{Observer: obs}, calcAgent(m, registry(t)))
	id := e.session(t, "calc")
	if res := e.run(t, id, "2+3?"); res.Status != session.StatusDone || res.Text != "5" {
		t.Fatalf("run: %+v", res)
	}
	if got := obs.ends(); len(got) != 1 {
		t.Errorf("run ends %+v", got)
	}
}

// noopObserver observes nothing: the cost of the seam itself.
type noopObserver struct{}

func (noopObserver) Committed(context.Context, agentrt.HookInfo, []*session.Event) {}
func (noopObserver) RunEnded(agentrt.HookInfo, error)                              {}

// BenchmarkObserver is the benchmark turn (4 model calls, 3 tool calls,
// 8 commits) with no observer and with one that does nothing: with none,
// a commit pays one nil check.
func BenchmarkObserver(b *testing.B) {
	for _, c := range []struct {
		name string
		obs  agentrt.Observer
	}{{"none", nil}, {"noop", noopObserver{}}} {
		b.Run(c.name, func(b *testing.B) {
			ctx := context.Background()
			a, m := benchAgent(b)
			store := memstore.New()
			r, err := agentrt.NewRunner(agentrt.Config{Store: store, Agents: []*agentrt.Agent{a}, Observer: c.obs})
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				m.Reset()
				s, err := r.CreateSession(ctx, "bench", "", nil)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := agentrt.Collect(r.Run(ctx, s.ID, agentrt.Input{Text: "add 1+2, 3+4 and 5+6"})); err != nil {
					b.Fatal(err)
				}
				// Forgotten at once, so that the store does not grow.
				if err := r.DeleteSession(ctx, s.ID, true); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
