package agentrt_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/model/scripted"
	"github.com/agentrt/agentrt/session"
)

// A fork copies the log up to a seq and runs on its own; a fork of a
// waiting session keeps its pending request.
func TestFork(t *testing.T) {
	var runs atomic.Int32
	m := scripted.New("m",
		scripted.Reply{ToolCalls: []scripted.Call{scripted.ToolCall("deploy", `{"env":"prod"}`)}},
		scripted.Reply{Text: "deployed"},
	)
	e := newEnv(t, nil, agentrt.Config{}, calcAgent(m, registry(t, askTool(t, &runs))))
	ctx := context.Background()
	id := e.session(t, "calc")
	res := e.run(t, id, "deploy")
	if res.Status != session.StatusWaiting {
		t.Fatalf("run: %+v", res)
	}
	last := res.Events[len(res.Events)-1].Seq
	f, err := e.r.Fork(ctx, id, last, agentrt.ForkOptions{ID: "fork1"})
	if err != nil {
		t.Fatal(err)
	}
	if f.Status != session.StatusWaiting || f.LastSeq != last || f.Metadata["forked_from"] != id {
		t.Fatalf("fork: %+v", f)
	}
	st, err := e.r.Load(ctx, "fork1")
	if err != nil || len(st.Requests) != 1 {
		t.Fatalf("the fork's pending requests: %+v %v", st, err)
	}
	// The fork is resolved and finished on its own; the original waits on.
	if _, err := e.r.Resolve(ctx, "fork1", st.Requests[0].ID, agentrt.Resolution{Decision: "approve"}); err != nil {
		t.Fatal(err)
	}
	if res := e.resume(t, "fork1"); res.Status != session.StatusDone || res.Text != "deployed" {
		t.Fatalf("fork resumed: %+v", res)
	}
	if s, _ := e.store.GetSession(ctx, id); s.Status != session.StatusWaiting {
		t.Errorf("the original is %s", s.Status)
	}
	// A fork earlier in the log: before the model's reply, mid-run.
	early, err := e.r.Fork(ctx, id, 3, agentrt.ForkOptions{})
	if err != nil || early.Status != session.StatusRunning || early.LastSeq != 3 {
		t.Fatalf("early fork: %+v %v", early, err)
	}
	for _, bad := range []int64{0, -1, last + 1} {
		if _, err := e.r.Fork(ctx, id, bad, agentrt.ForkOptions{}); errCode(err) != "bad_seq" || !strings.Contains(err.Error(), "cannot fork at") {
			t.Errorf("fork at %d: %v", bad, err)
		}
	}
	if _, err := e.r.Fork(ctx, "nope", 1, agentrt.ForkOptions{}); errCode(err) != "not_found" {
		t.Errorf("fork of an unknown session: %v", err)
	}
	if _, err := e.r.Fork(ctx, id, 1, agentrt.ForkOptions{ID: "fork1"}); errCode(err) != "session_exists" {
		t.Errorf("fork onto an existing id: %v", err)
	}
	storedLog(t, e.store, "fork1")
}

// models is a ModelSet of models by their names.
type models map[string]model.Model

func (ms models) Names() []string { return slices.Sorted(maps.Keys(ms)) }

func (ms models) Model(name string) (model.Model, error) {
	if m, ok := ms[name]; ok {
		return m, nil
	}
	return nil, fmt.Errorf("no model %q", name)
}

// A fork may change the model: its log ends with model_changed, and its
// turns (and what the inspector says they were sent) go to that model,
// without the agent's fallbacks; the original keeps the agent's.
func TestForkWithAnotherModel(t *testing.T) {
	one := scripted.New("one", scripted.Reply{Text: "one says hi"}, scripted.Reply{Text: "one again"})
	two := scripted.New("two", scripted.Reply{Text: "two says hi"})
	fallback := scripted.New("fallback", scripted.Reply{Text: "the fallback"})
	a := &agentrt.Agent{Name: "calc", SystemPrompt: "You calculate.", Model: one, Fallbacks: []model.Model{fallback},
		Models: models{"one": one, "two": two}}
	plain := &agentrt.Agent{Name: "plain", Model: scripted.New("p", scripted.Reply{Text: "p"})}
	e := newEnv(t, nil, agentrt.Config{}, a, plain)
	ctx := context.Background()
	id := e.session(t, "calc")
	if res := e.run(t, id, "hi"); res.Text != "one says hi" {
		t.Fatalf("run: %+v", res)
	}
	f, err := e.r.Fork(ctx, id, 1, agentrt.ForkOptions{ID: "f2", Model: "two"})
	if err != nil {
		t.Fatal(err)
	}
	if f.LastSeq != 2 {
		t.Fatalf("fork: %+v", f)
	}
	evs := storedLog(t, e.store, "f2")
	changed, ok := evs[len(evs)-1].Data.(*session.ModelChanged)
	if !ok || *changed != (session.ModelChanged{Model: "two", Was: "one"}) {
		t.Fatalf("the fork's last event: %+v", evs[len(evs)-1])
	}
	if st, _ := e.r.Load(ctx, "f2"); st.Model != "two" {
		t.Fatalf("the fork's state: model %q", st.Model)
	}
	// The fork's first event is the original's run_started: resume runs
	// its turn on the model it changed to.
	res := e.resume(t, "f2")
	if res.Text != "two says hi" {
		t.Fatalf("the fork's turn: %+v", res)
	}
	for _, ev := range storedLog(t, e.store, "f2") {
		if ms, ok := ev.Data.(*session.ModelStarted); ok {
			if ms.Model != "two" {
				t.Errorf("the fork called %s", ms.Model)
			}
			sent, err := e.r.SentRequest(ctx, "f2", ev.Seq)
			if err != nil || sent.Model != "two" {
				t.Errorf("what the fork's call was sent: %+v %v", sent, err)
			}
		}
	}
	// The original goes on with the agent's model.
	if res := e.run(t, id, "again"); res.Text != "one again" {
		t.Errorf("the original: %+v", res)
	}
	// Models the agent cannot change to are refused, and nothing is made.
	for _, bad := range []struct{ agent, session, model string }{
		{"calc", id, "three"},
		{"plain", e.session(t, "plain"), "two"},
	} {
		if bad.agent == "plain" {
			e.run(t, bad.session, "x")
		}
		_, err := e.r.Fork(ctx, bad.session, 1, agentrt.ForkOptions{ID: "bad", Model: bad.model})
		if errCode(err) != agentrt.CodeUnknownModel || !strings.Contains(err.Error(), bad.model) {
			t.Errorf("fork of %s with model %s: %v", bad.agent, bad.model, err)
		}
		if _, err := e.store.GetSession(ctx, "bad"); err == nil {
			t.Errorf("a refused fork was made")
		}
	}
}
