package telemetry_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/model/scripted"
	"github.com/agentrt/agentrt/session"
	"github.com/agentrt/agentrt/session/memstore"
	"github.com/agentrt/agentrt/session/storetest"
	"github.com/agentrt/agentrt/tool"
)

// span is what the tests read of an exported span: its name, its
// parent's name, its status and the attributes they name.
type span struct {
	Name, Parent string
	Status       string // "" for unset, else "error: description"
	Attrs        map[string]string
}

// tree returns the spans exported so far depth first: each span, then
// its children in the order they began (by name within one instant; a
// run's span and its first model call's begin in one commit). Each has
// the attributes whose keys are listed.
func tree(t *testing.T, spans tracetest.SpanStubs, keys ...string) []span {
	t.Helper()
	byID := map[string]tracetest.SpanStub{}
	children := map[string][]tracetest.SpanStub{} // by parent span id; "" for roots
	for _, s := range spans {
		byID[s.SpanContext.SpanID().String()] = s
	}
	for _, s := range spans {
		p := ""
		if s.Parent.IsValid() {
			p = s.Parent.SpanID().String()
			if _, ok := byID[p]; !ok {
				t.Errorf("span %s has a parent that was not exported", s.Name)
			}
			if s.Parent.TraceID() != s.SpanContext.TraceID() {
				t.Errorf("span %s is in another trace than its parent", s.Name)
			}
		}
		if s.EndTime.Before(s.StartTime) {
			t.Errorf("span %s ends (%v) before it starts (%v)", s.Name, s.EndTime, s.StartTime)
		}
		children[p] = append(children[p], s)
	}
	var out []span
	var walk func(parent string)
	walk = func(parent string) {
		kids := children[parent]
		slices.SortStableFunc(kids, func(a, b tracetest.SpanStub) int {
			if c := a.StartTime.Compare(b.StartTime); c != 0 {
				return c
			}
			return strings.Compare(a.Name, b.Name)
		})
		for _, s := range kids {
			v := span{Name: s.Name, Attrs: map[string]string{}}
			if parent != "" {
				v.Parent = byID[parent].Name
			}
			if s.Status.Code == codes.Error {
				v.Status = "error: " + s.Status.Description
			}
			for _, kv := range s.Attributes {
				if slices.Contains(keys, string(kv.Key)) {
					v.Attrs[string(kv.Key)] = kv.Value.String()
				}
			}
			out = append(out, v)
			walk(s.SpanContext.SpanID().String())
		}
	}
	walk("")
	return out
}

// The span tree of a turn: a run, its model calls and its tool calls as
// children, with the GenAI attributes; the failing and the denied call
// are errors.
func TestTraceOfATurn(t *testing.T) {
	rg := newRig(t, nil, agentrt.Config{}, toolsAgent(t, toolsScript()))
	id := rg.session(t, "calc")
	if res := rg.run(t, context.Background(), id, "2+3, then clean up"); res.Status != session.StatusDone {
		t.Fatalf("run: %+v", res)
	}
	keys := []string{"gen_ai.operation.name", "gen_ai.agent.name", "gen_ai.conversation.id", "gen_ai.request.model",
		"gen_ai.provider.name", "gen_ai.usage.input_tokens", "gen_ai.usage.output_tokens", "gen_ai.response.finish_reasons",
		"gen_ai.tool.name", "gen_ai.tool.call.id", "error.type", "agentrt.run.status", "agentrt.run.reason", "agentrt.tool.blocked"}
	chat := func(finish string) span {
		return span{Name: "chat m", Parent: "invoke_agent calc", Attrs: map[string]string{
			"gen_ai.operation.name": "chat", "gen_ai.request.model": "m", "gen_ai.provider.name": "openai",
			"gen_ai.usage.input_tokens": "10", "gen_ai.usage.output_tokens": "5", "gen_ai.response.finish_reasons": `["` + finish + `"]`}}
	}
	tool := func(name, callID, status string, extra ...string) span {
		s := span{Name: "execute_tool " + name, Parent: "invoke_agent calc", Status: status, Attrs: map[string]string{
			"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": name, "gen_ai.tool.call.id": callID}}
		for i := 0; i+1 < len(extra); i += 2 {
			s.Attrs[extra[i]] = extra[i+1]
		}
		return s
	}
	want := []span{
		{Name: "invoke_agent calc", Attrs: map[string]string{"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "calc",
			"gen_ai.conversation.id": id, "agentrt.run.reason": "new", "agentrt.run.status": "done",
			"gen_ai.usage.input_tokens": "30", "gen_ai.usage.output_tokens": "15"}},
		chat("tool_calls"),
		tool("calculator", "call_1_1", ""),
		tool("fail", "call_1_2", "error: disk full", "error.type", "error"),
		chat("tool_calls"),
		tool("rm", "call_2_1", "error: "+deniedReason(t, rg, id), "error.type", "denied", "agentrt.tool.blocked", deniedReason(t, rg, id)),
		chat("stop"),
	}
	if diff := cmp.Diff(want, tree(t, rg.spans.GetSpans(), keys...)); diff != "" {
		t.Errorf("spans (-want +got):\n%s", diff)
	}
}

// deniedReason is the Blocked of the session's denied call, as stored.
func deniedReason(t *testing.T, rg *rig, id string) string {
	t.Helper()
	for e, err := range rg.store.Events(context.Background(), id, 0) {
		if err != nil {
			t.Fatal(err)
		}
		if d, ok := e.Data.(*session.ToolCall); ok && d.Blocked != "" {
			return d.Blocked
		}
	}
	t.Fatal("no denied call in the log")
	return ""
}

// A failed model attempt is an error span with the provider's code; its
// fallback's is not. A failure that ends the run makes the run's span an
// error too.
func TestTraceOfModelFailures(t *testing.T) {
	bad := func(name string) model.Model {
		return scripted.New(name, scripted.Reply{ErrorCode: model.CodeAuth, Error: "bad key"})
	}
	keys := []string{"error.type", "gen_ai.request.model", "agentrt.run.status"}
	t.Run("fallback", func(t *testing.T) {
		rg := newRig(t, nil, agentrt.Config{}, &agentrt.Agent{Name: "calc", Model: bad("m1"), Fallbacks: []model.Model{scripted.New("m2", reply("fine"))}})
		if res := rg.run(t, context.Background(), rg.session(t, "calc"), "hi"); res.Status != session.StatusDone {
			t.Fatalf("run: %+v", res)
		}
		got := tree(t, rg.spans.GetSpans(), keys...)
		want := []span{
			{Name: "invoke_agent calc", Attrs: map[string]string{"agentrt.run.status": "done"}},
			{Name: "chat m1", Parent: "invoke_agent calc", Status: "error: " + errMessage(got, "chat m1"),
				Attrs: map[string]string{"gen_ai.request.model": "m1", "error.type": "auth"}},
			{Name: "chat m2", Parent: "invoke_agent calc", Attrs: map[string]string{"gen_ai.request.model": "m2"}},
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("spans (-want +got):\n%s", diff)
		}
		if msg := errMessage(got, "chat m1"); !strings.Contains(msg, "bad key") {
			t.Errorf("the failed attempt's status %q does not say why", msg)
		}
	})
	t.Run("run fails", func(t *testing.T) {
		rg := newRig(t, nil, agentrt.Config{}, &agentrt.Agent{Name: "calc", Model: bad("m1")})
		if res := rg.run(t, context.Background(), rg.session(t, "calc"), "hi"); res.Status != session.StatusFailed {
			t.Fatalf("run: %+v", res)
		}
		got := tree(t, rg.spans.GetSpans(), keys...)
		want := []span{
			{Name: "invoke_agent calc", Status: "error: " + errMessage(got, "invoke_agent calc"),
				Attrs: map[string]string{"agentrt.run.status": "failed", "error.type": "auth"}},
			{Name: "chat m1", Parent: "invoke_agent calc", Status: "error: " + errMessage(got, "chat m1"),
				Attrs: map[string]string{"gen_ai.request.model": "m1", "error.type": "auth"}},
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("spans (-want +got):\n%s", diff)
		}
		for _, name := range []string{"invoke_agent calc", "chat m1"} {
			if msg := errMessage(got, name); !strings.Contains(msg, "bad key") {
				t.Errorf("%s: status %q does not say why", name, msg)
			}
		}
	})
}

// errMessage is the status description of the named span ("" if none).
func errMessage(spans []span, name string) string {
	for _, s := range spans {
		if s.Name == name {
			return strings.TrimPrefix(s.Status, "error: ")
		}
	}
	return ""
}

// A sub-agent's run is a child of its parent's tool call, in the same
// trace; a run started with a context that carries a span (an HTTP
// request's) is that span's child.
func TestTraceOfASubagent(t *testing.T) {
	reg, err := tool.NewRegistry(agentrt.SubAgent("calc", ""))
	if err != nil {
		t.Fatal(err)
	}
	boss := &agentrt.Agent{Name: "boss", Model: scripted.New("boss-m", reply("", "calc", `{"task":"6*7"}`), reply("It is 42.")), Tools: reg}
	calc := toolsAgent(t, scripted.New("calc-m", reply("", "calculator", `{"expression":"6*7"}`), reply("42")))
	rg := newRig(t, nil, agentrt.Config{}, boss, calc)
	// The caller's span, as an HTTP server's middleware would start it.
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(rg.spans))
	ctx, req := tp.Tracer("test").Start(context.Background(), "POST /v1/sessions/{id}/messages")
	if res := rg.run(t, ctx, rg.session(t, "boss"), "6*7?"); res.Status != session.StatusDone {
		t.Fatalf("run: %+v", res)
	}
	req.End()
	want := []span{
		{Name: "POST /v1/sessions/{id}/messages"},
		{Name: "invoke_agent boss", Parent: "POST /v1/sessions/{id}/messages"},
		{Name: "chat boss-m", Parent: "invoke_agent boss"},
		{Name: "execute_tool calc", Parent: "invoke_agent boss"},
		{Name: "invoke_agent calc", Parent: "execute_tool calc"},
		{Name: "chat calc-m", Parent: "invoke_agent calc"},
		{Name: "execute_tool calculator", Parent: "invoke_agent calc"},
		{Name: "chat calc-m", Parent: "invoke_agent calc"},
		{Name: "chat boss-m", Parent: "invoke_agent boss"},
	}
	got := tree(t, rg.spans.GetSpans())
	for i := range got {
		got[i].Attrs = nil
	}
	if diff := cmp.Diff(want, got, cmp.Comparer(func(a, b map[string]string) bool { return len(a) == len(b) })); diff != "" {
		t.Errorf("spans (-want +got):\n%s", diff)
	}
}

// A run that lost its session to another process ends its span as an
// error saying so, and the call it was making with it.
func TestTraceOfALostLease(t *testing.T) {
	clock := storetest.NewClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	store := memstore.New(memstore.WithClock(clock.Now))
	started, release := make(chan struct{}, 1), make(chan struct{})
	a := newRig(t, store, agentrt.Config{LeaseTTL: time.Hour, Owner: "a:1:a"}, gateAgent(t, scripted.New("m", reply("", "gate", `{}`), reply("from a")), started, release))
	id := a.session(t, "calc")
	h, err := a.r.Start(context.Background(), id, agentrt.Input{Text: "go"})
	if err != nil {
		t.Fatal(err)
	}
	<-started
	clock.Advance(2 * time.Hour)
	open := make(chan struct{})
	close(open)
	b := newRig(t, store, agentrt.Config{LeaseTTL: time.Hour, Owner: "b:2:b"}, gateAgent(t, scripted.New("m", reply("from b")), make(chan struct{}, 1), open))
	if res, err := agentrt.Collect(b.r.Resume(context.Background(), id)); err != nil || res.Status != session.StatusDone {
		t.Fatalf("b's resume: %+v %v", res, err)
	}
	close(release)
	if _, err := h.Wait(context.Background()); agentrt.AsError(err).ErrorCode() != agentrt.CodeLeaseLost {
		t.Fatalf("a's run: %v, want lease_lost", err)
	}
	got := tree(t, a.spans.GetSpans(), "error.type", "agentrt.run.status")
	want := []span{
		{Name: "invoke_agent calc", Status: "error: " + errMessage(got, "invoke_agent calc"),
			Attrs: map[string]string{"error.type": "lease_lost", "agentrt.run.status": "not_stored"}},
		{Name: "chat m", Parent: "invoke_agent calc", Attrs: map[string]string{}},
		{Name: "execute_tool gate", Parent: "invoke_agent calc", Status: "error: the run stopped (not_stored) before the call had a result",
			Attrs: map[string]string{"error.type": "canceled"}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("a's spans (-want +got):\n%s", diff)
	}
	if msg := errMessage(got, "invoke_agent calc"); !strings.Contains(msg, "taken over") {
		t.Errorf("the run's status %q does not say it was taken over", msg)
	}
	// b's trace is of a recovered run.
	gotB := tree(t, b.spans.GetSpans(), "agentrt.run.reason")
	if len(gotB) == 0 || gotB[0].Name != "invoke_agent calc" || gotB[0].Attrs["agentrt.run.reason"] != "recovered" {
		t.Errorf("b's spans: %+v", gotB)
	}
}

// Spans carry the events' times: a model call's span lasts from its
// model_started to its model_finished, as stored.
func TestSpansTakeTheEventsTimes(t *testing.T) {
	rg := newRig(t, nil, agentrt.Config{}, toolsAgent(t, scripted.New("m", reply("hello"))))
	id := rg.session(t, "calc")
	rg.run(t, context.Background(), id, "hi")
	var started, finished, runStart, runEnd time.Time
	for e, err := range rg.store.Events(context.Background(), id, 0) {
		if err != nil {
			t.Fatal(err)
		}
		switch e.Type {
		case session.TypeModelStarted:
			started = e.Time
		case session.TypeModelFinished:
			finished = e.Time
		case session.TypeRunStarted:
			runStart = e.Time
		case session.TypeRunFinished:
			runEnd = e.Time
		}
	}
	got := map[string][2]time.Time{}
	for _, s := range rg.spans.GetSpans() {
		got[s.Name] = [2]time.Time{s.StartTime, s.EndTime}
	}
	want := map[string][2]time.Time{"invoke_agent calc": {runStart, runEnd}, "chat m": {started, finished}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("span times (-want +got):\n%s", diff)
	}
	if !finished.After(started) {
		t.Errorf("model_finished %v is not after model_started %v", finished, started)
	}
}

// Without a provider for a model, the attribute is left out rather than
// guessed.
func TestNoProviderNoAttribute(t *testing.T) {
	rg := newRig(t, nil, agentrt.Config{}, toolsAgent(t, scripted.New("unpriced", reply("hello"))))
	rg.run(t, context.Background(), rg.session(t, "calc"), "hi")
	for _, s := range rg.spans.GetSpans() {
		for _, kv := range s.Attributes {
			if kv.Key == attribute.Key("gen_ai.provider.name") {
				t.Errorf("%s has gen_ai.provider.name %q", s.Name, kv.Value.String())
			}
		}
	}
	if n := len(rg.spans.GetSpans()); n != 2 {
		t.Errorf("%d spans, want 2", n)
	}
}

// A sub-agent's run resumed with its parent's (after a person answered
// the child's question) is again a child of the parent's call.
func TestTraceOfAResumedSubagent(t *testing.T) {
	reg, err := tool.NewRegistry(agentrt.SubAgent("calc", ""))
	if err != nil {
		t.Fatal(err)
	}
	boss := &agentrt.Agent{Name: "boss", Model: scripted.New("boss-m", reply("", "calc", `{"task":"6*7"}`), reply("It is 42.")), Tools: reg}
	calc := toolsAgent(t, scripted.New("calc-m", reply("", "calculator", `{"expression":"6*7"}`), reply("42")))
	calc.Approval.Ask = []string{"calculator"}
	rg := newRig(t, nil, agentrt.Config{}, boss, calc)
	id := rg.session(t, "boss")
	if res := rg.run(t, context.Background(), id, "6*7?"); res.Status != session.StatusWaiting {
		t.Fatalf("run: %+v", res)
	}
	st, err := rg.r.Load(context.Background(), id)
	if err != nil || len(st.Requests) != 1 {
		t.Fatalf("load: %v %+v", err, st)
	}
	if _, err := rg.r.Resolve(context.Background(), id, st.Requests[0].ID, agentrt.Resolution{Decision: session.DecisionApprove, By: "ana"}); err != nil {
		t.Fatal(err)
	}
	rg.spans.Reset() // the resumption's spans only
	if res, err := agentrt.Collect(rg.r.Resume(context.Background(), id)); err != nil || res.Status != session.StatusDone {
		t.Fatalf("resume: %+v %v", res, err)
	}
	got := tree(t, rg.spans.GetSpans(), "agentrt.run.reason")
	for i := range got {
		if got[i].Name != "invoke_agent boss" && got[i].Name != "invoke_agent calc" {
			got[i].Attrs = nil
		}
	}
	want := []span{
		{Name: "invoke_agent boss", Attrs: map[string]string{"agentrt.run.reason": "approval"}},
		{Name: "execute_tool calc", Parent: "invoke_agent boss"},
		{Name: "invoke_agent calc", Parent: "execute_tool calc", Attrs: map[string]string{"agentrt.run.reason": "approval"}},
		{Name: "execute_tool calculator", Parent: "invoke_agent calc"},
		{Name: "chat calc-m", Parent: "invoke_agent calc"},
		{Name: "chat boss-m", Parent: "invoke_agent boss"},
	}
	if diff := cmp.Diff(want, got, cmp.Comparer(func(a, b map[string]string) bool { return cmp.Equal(nonEmpty(a), nonEmpty(b)) })); diff != "" {
		t.Errorf("spans of the resumption (-want +got):\n%s", diff)
	}
}

// nonEmpty is m, or nil when m is empty.
func nonEmpty(m map[string]string) map[string]string {
	if len(m) == 0 {
		return nil
	}
	return m
}
