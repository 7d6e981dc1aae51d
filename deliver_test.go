package agentrt_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/model/scripted"
	"github.com/agentrt/agentrt/session"
	"github.com/agentrt/agentrt/session/memstore"
)

// A turn of a source the runner delivers to owes its question, the answer
// to it and its final answer, each in the commit that records it; a turn
// of another source owes nothing; a failed turn owes its end.
func TestDeliverOwesMessages(t *testing.T) {
	var runs atomic.Int32
	m := scripted.New("m",
		scripted.Reply{ToolCalls: []scripted.Call{scripted.ToolCall("deploy", `{"env":"prod"}`)}},
		scripted.Reply{Text: "deployed"},
		scripted.Reply{Text: "hello"},
	)
	store := memstore.New()
	e := newEnv(t, store, agentrt.Config{Deliver: func(src string) bool { return strings.HasPrefix(src, "chat:") }},
		calcAgent(m, registry(t, askTool(t, &runs))))
	ctx := context.Background()
	id := e.session(t, "calc")
	for _, err := range e.r.Run(ctx, id, agentrt.Input{Text: "deploy", Source: "chat:42"}) {
		if err != nil {
			t.Fatal(err)
		}
	}
	st, err := e.r.Load(ctx, id)
	if err != nil || len(st.Requests) != 1 {
		t.Fatalf("the turn's request: %+v %v", st, err)
	}
	rs, err := e.r.ResolveAndContinue(ctx, id, st.Requests[0].ID, agentrt.Resolution{Decision: "approve"})
	if err != nil {
		t.Fatal(err)
	}
	if rs.Run != nil {
		<-rs.Run.Done()
	}
	owed := func(id string) []string {
		t.Helper()
		items, err := store.OutboxOf(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		log := storedLog(t, store, id)
		for _, it := range items {
			if it.Source != "chat:42" || string(log[it.Seq-1].Type) != it.Kind {
				t.Errorf("item %+v: its event is %s", it, log[it.Seq-1].Type)
			}
			out = append(out, it.Kind)
		}
		return out
	}
	if diff := cmp.Diff([]string{"input_required", "input_resolved", "final"}, owed(id)); diff != "" {
		t.Errorf("owed (-want +got):\n%s", diff)
	}
	// Another source's turn owes nothing.
	other := e.session(t, "calc")
	for _, err := range e.r.Run(ctx, other, agentrt.Input{Text: "hi", Source: "api"}) {
		if err != nil {
			t.Fatal(err)
		}
	}
	if got := owed(other); len(got) != 0 {
		t.Errorf("a turn of source api owes %v", got)
	}
}

// A failed turn owes its end, for the person to hear it failed.
func TestDeliverOwesAFailure(t *testing.T) {
	m := scripted.New("m", scripted.Reply{Error: "the key is refused", ErrorCode: model.CodeAuth})
	store := memstore.New()
	e := newEnv(t, store, agentrt.Config{Deliver: func(string) bool { return true }}, calcAgent(m, registry(t)))
	id := e.session(t, "calc")
	for range e.r.Run(context.Background(), id, agentrt.Input{Text: "hi", Source: "chat:1"}) {
	}
	items, err := store.OutboxOf(context.Background(), id)
	if err != nil || len(items) != 1 || items[0].Kind != "run_finished" {
		t.Fatalf("a failed turn owes %+v %v, want its run_finished", items, err)
	}
}

// Deliver needs a store with an outbox.
func TestDeliverNeedsAnOutbox(t *testing.T) {
	_, err := agentrt.NewRunner(agentrt.Config{Store: struct{ session.Store }{memstore.New()}, Deliver: func(string) bool { return true },
		Agents: []*agentrt.Agent{calcAgent(scripted.New("m"), nil)}})
	if err == nil || !strings.Contains(err.Error(), "outbox") {
		t.Errorf("a runner that delivers over a store without an outbox: %v", err)
	}
}
