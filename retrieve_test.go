package agentrt_test

import (
	"context"
	"strings"
	"testing"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/memory"
	"github.com/agentrt/agentrt/model/scripted"
	"github.com/agentrt/agentrt/session"
	"github.com/agentrt/agentrt/session/memstore"
)

func retrieveCall(args string) scripted.Reply {
	return scripted.Reply{ToolCalls: []scripted.Call{scripted.ToolCall("retrieve", args)}}
}

// An agent with memory gets a retrieve tool: a search of what it
// remembers — its own items and its session's, not another session's.
func TestRetrieveTool(t *testing.T) {
	ctx := context.Background()
	mem := memory.NewInMemory()
	for _, it := range []memory.Item{
		{Text: "The user's favourite colour is teal.", Scope: memory.Scope{Agent: "calc"}},
		{Text: "In this session the colour to use is orange.", Scope: memory.Scope{Agent: "calc", Session: "s1"}},
		{Text: "Another session's colour: purple.", Scope: memory.Scope{Agent: "calc", Session: "s2"}},
	} {
		if _, err := mem.Add(ctx, it); err != nil {
			t.Fatal(err)
		}
	}
	m := scripted.New("m", retrieveCall(`{"query":"colour"}`), retrieveCall(`{"query":"  "}`), retrieveCall(`{"query":"colour","limit":30}`), scripted.Reply{Text: "teal"})
	a := calcAgent(m, registry(t))
	a.Memory = mem
	e := newEnv(t, nil, agentrt.Config{}, a)
	if _, err := e.r.CreateSession(ctx, "calc", "s1", nil); err != nil {
		t.Fatal(err)
	}
	res := e.run(t, "s1", "what colour?")
	rs := toolResults(res.Events)
	if len(rs) != 3 || !rs[0].OK {
		t.Fatalf("results %+v", rs)
	}
	got := string(rs[0].Result)
	if !strings.Contains(got, "teal") || !strings.Contains(got, "orange") || strings.Contains(got, "purple") {
		t.Errorf("retrieved %s", got)
	}
	if rs[1].OK || rs[1].Error != "the query is empty: say what to look for" {
		t.Errorf("empty query: %+v", rs[1])
	}
	if rs[2].OK || rs[2].Error != "limit 30: want 1 to 20" {
		t.Errorf("limit 30: %+v", rs[2])
	}
	if _, ok := a.Tools.Get("calculator"); !ok {
		t.Error("the agent lost its other tools")
	}
}

// With RememberTurns, a finished turn's question and answer are written
// to memory, where another session of the agent finds them.
func TestRememberTurns(t *testing.T) {
	ctx := context.Background()
	mem := memory.NewInMemory()
	m := scripted.New("m", scripted.Reply{Text: "Noted: you live in Lisbon."}, retrieveCall(`{"query":"where does the user live"}`), scripted.Reply{Text: "Lisbon"})
	a := calcAgent(m, registry(t))
	a.Memory, a.RememberTurns = mem, true
	e := newEnv(t, nil, agentrt.Config{}, a)
	e.run(t, e.session(t, "calc"), "I live in Lisbon")
	items, err := mem.List(ctx, memory.Scope{Agent: "calc"}, 0)
	if err != nil || len(items) != 1 || items[0].Text != "Q: I live in Lisbon\nA: Noted: you live in Lisbon." || items[0].Metadata["session"] == "" {
		t.Fatalf("memory %+v %v", items, err)
	}
	res := e.run(t, e.session(t, "calc"), "where do I live?")
	if rs := toolResults(res.Events); len(rs) != 1 || !strings.Contains(string(rs[0].Result), "Lisbon") {
		t.Fatalf("another session retrieved %+v", rs)
	}

	b := calcAgent(scripted.New("m"), registry(t))
	b.RememberTurns = true
	if _, err := agentrt.NewRunner(agentrt.Config{Store: memstore.New(), Agents: []*agentrt.Agent{b}}); err == nil ||
		!strings.Contains(err.Error(), `agent "calc": RememberTurns needs a Memory`) {
		t.Errorf("RememberTurns without Memory: %v", err)
	}
	_ = session.StatusDone
}
