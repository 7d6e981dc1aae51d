package agentrt_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/model/scripted"
	"github.com/agentrt/agentrt/session"
	"github.com/agentrt/agentrt/tool"
)

func specNames(specs []model.ToolSpec) []string {
	out := make([]string, len(specs))
	for i, s := range specs {
		out[i] = s.Name
	}
	return out
}

func echoTool(t *testing.T, name string) tool.Tool {
	t.Helper()
	return tool.Must(tool.New(name, "echoes its text", func(_ context.Context, in struct {
		Text string `json:"text"`
	}) (string, error) {
		return name + ": " + in.Text, nil
	}))
}

// The agent's registry changes while the runner runs (as an MCP server's
// tools come and go): a tool added after NewRunner is in the next model
// request and runs; a removed one leaves the request, and a call of it is
// a failed tool result the model reads, not a failed run.
func TestToolsAddedAndRemovedWhileRunning(t *testing.T) {
	reg := registry(t) // the calculator
	m := scripted.New("s",
		scripted.Reply{Text: "nothing to call yet"},
		scripted.Reply{ToolCalls: []scripted.Call{scripted.ToolCall("late.echo", `{"text":"hi"}`)}},
		scripted.Reply{Text: "called it"},
		scripted.Reply{ToolCalls: []scripted.Call{scripted.ToolCall("late.echo", `{"text":"again"}`)}},
		scripted.Reply{Text: "it is gone"},
	).Record()
	a, err := agentrt.NewAgent("a").Model(m).Registry(reg).Build()
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, nil, agentrt.Config{}, a)
	id := e.session(t, "a")

	if res := e.run(t, id, "one"); res.Status != session.StatusDone {
		t.Fatalf("turn 1: %s %s", res.Status, res.Reason)
	}
	if err := reg.Add(echoTool(t, "late.echo")); err != nil {
		t.Fatal(err)
	}
	res := e.run(t, id, "two")
	if res.Status != session.StatusDone {
		t.Fatalf("turn 2: %s %s", res.Status, res.Reason)
	}
	if trs := toolResults(res.Events); len(trs) != 1 || !trs[0].OK || !strings.Contains(string(trs[0].Result), "late.echo: hi") {
		t.Fatalf("turn 2's call of the added tool: %+v", trs)
	}
	if err := reg.Replace([]string{"late.echo"}); err != nil {
		t.Fatal(err)
	}
	res = e.run(t, id, "three")
	if res.Status != session.StatusDone {
		t.Fatalf("turn 3: %s %s (a call of a removed tool must not fail the run)", res.Status, res.Reason)
	}
	trs := toolResults(res.Events)
	if len(trs) != 1 || trs[0].OK || !strings.Contains(trs[0].Error, `unknown tool "late.echo"`) {
		t.Fatalf("turn 3's call of the removed tool: %+v, want an unknown tool error", trs)
	}

	reqs := m.Requests()
	if len(reqs) != 5 {
		t.Fatalf("%d model requests, want 5", len(reqs))
	}
	for i, want := range [][]string{
		{"calculator"},
		{"calculator", "late.echo"},
		{"calculator", "late.echo"},
		{"calculator"},
		{"calculator"},
	} {
		if got := specNames(reqs[i].Tools); !slices.Equal(got, want) {
			t.Errorf("request %d offers %v, want %v", i+1, got, want)
		}
	}
}

// A tool that appears after NewRunner gets the agent's approval policy,
// and its Meta, like one that was there from the start.
func TestLateToolsFollowTheApprovalPolicy(t *testing.T) {
	reg := registry(t)
	m := scripted.New("s",
		scripted.Reply{ToolCalls: []scripted.Call{scripted.ToolCall("fs.write", `{"text":"x"}`)}},
		scripted.Reply{ToolCalls: []scripted.Call{scripted.ToolCall("fs.delete", `{"text":"x"}`)}},
		scripted.Reply{Text: "done"},
	)
	a, err := agentrt.NewAgent("a").Model(m).Registry(reg).
		Approval(agentrt.ApprovalPolicy{Ask: []string{"fs.write"}, Deny: []string{"fs.delete"}}).Build()
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, nil, agentrt.Config{}, a)
	if err := reg.Add(echoTool(t, "fs.write"), echoTool(t, "fs.delete")); err != nil {
		t.Fatal(err)
	}
	id := e.session(t, "a")
	res := e.run(t, id, "write")
	if res.Status != session.StatusWaiting {
		t.Fatalf("a call of a late tool the policy asks about: %s %s, want waiting", res.Status, res.Reason)
	}
	if _, err := e.r.Resolve(context.Background(), id, pendingRequest(t, e, id), agentrt.Resolution{Decision: session.DecisionReject}); err != nil {
		t.Fatal(err)
	}
	res = e.resume(t, id)
	if res.Status != session.StatusDone {
		t.Fatalf("after the rejection: %s %s", res.Status, res.Reason)
	}
	trs := toolResults(res.Events)
	if len(trs) == 0 || trs[len(trs)-1].Name != "fs.delete" || trs[len(trs)-1].OK {
		t.Fatalf("a call of a late tool the policy denies: %+v, want a failed result", trs)
	}
}

func pendingRequest(t *testing.T, e *env, id string) string {
	t.Helper()
	st, err := e.r.Load(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Requests) != 1 {
		t.Fatalf("%d pending requests, want 1", len(st.Requests))
	}
	return st.Requests[0].ID
}

// While the tools stay the same, the agent hands out the same specs: a
// turn does not read or rebuild the tool list. A change gives new ones.
func TestToolSpecsAreKeptWhileTheToolsStay(t *testing.T) {
	reg := registry(t)
	a, err := agentrt.NewAgent("a").Model(scripted.New("s")).Registry(reg).Build()
	if err != nil {
		t.Fatal(err)
	}
	newEnv(t, nil, agentrt.Config{}, a)
	s1, s2 := a.ToolSpecs(), a.ToolSpecs()
	if len(s1) != 1 || &s1[0] != &s2[0] {
		t.Fatalf("two reads with no change in between gave different specs: %v %v", s1, s2)
	}
	if err := reg.Add(echoTool(t, "late")); err != nil {
		t.Fatal(err)
	}
	s3 := a.ToolSpecs()
	if got := specNames(s3); !slices.Equal(got, []string{"calculator", "late"}) {
		t.Fatalf("after Add: %v", got)
	}
	if s4 := a.ToolSpecs(); &s3[0] != &s4[0] {
		t.Error("the specs were rebuilt with no change")
	}
}

// BenchmarkToolSpecs is what a model request pays for the agent's tool
// list when the tools have not changed.
func BenchmarkToolSpecs(b *testing.B) {
	reg := registry(b)
	a, err := agentrt.NewAgent("a").Model(scripted.New("s")).Registry(reg).Build()
	if err != nil {
		b.Fatal(err)
	}
	newEnv(b, nil, agentrt.Config{}, a)
	b.ReportAllocs()
	for b.Loop() {
		if len(a.ToolSpecs()) != 1 {
			b.Fatal("no specs")
		}
	}
}
