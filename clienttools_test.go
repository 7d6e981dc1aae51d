package agentrt_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/model/scripted"
	"github.com/agentrt/agentrt/session"
	"github.com/agentrt/agentrt/session/sqlite"
)

var weatherSpec = model.ToolSpec{Name: "get_weather", Description: "The weather in a city.",
	InputSchema: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}}}`)}

// A tool the client declares for a run is offered to the model beside the
// agent's; its call is not run but handed to the client as a client_tool
// request, which survives the process: a runner over the same SQLite
// file, opened after the first closed, takes the client's result and the
// run goes on with it as the tool message.
func TestClientToolRoundTripAcrossRestart(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "agentrt.db")
	m := scripted.New("m",
		scripted.Reply{ToolCalls: []scripted.Call{scripted.ToolCall("get_weather", `{"city":"Oslo"}`)},
			Expect: &scripted.Expect{ToolsInclude: []string{"calculator", "get_weather"}}},
		scripted.Reply{Text: "Oslo: 3°C and rain.", Expect: &scripted.Expect{LastToolResultContains: "3C, rain", ToolsInclude: []string{"get_weather"}}},
	)
	open := func() *env {
		st, err := sqlite.Open(ctx, path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return newEnv(t, st, agentrt.Config{}, calcAgent(m, registry(t)))
	}
	e := open()
	id := e.session(t, "calc")
	res, err := agentrt.Collect(e.r.Run(ctx, id, agentrt.Input{Text: "weather in Oslo?", ClientTools: []model.ToolSpec{weatherSpec}}))
	if err != nil {
		t.Fatal(err)
	}
	st, err := e.r.Load(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != session.StatusWaiting || len(st.Requests) != 1 || st.Requests[0].Kind != session.RequestClientTool {
		t.Fatalf("after the call: %s, requests %+v", res.Status, st.Requests)
	}
	q := st.Requests[0]
	if len(st.Calls) != 1 || st.Calls[0].Call.ID != q.CallID || st.Calls[0].Call.Name != "get_weather" || string(st.Calls[0].Call.Arguments) != `{"city":"Oslo"}` {
		t.Fatalf("the request's call %s: %+v", q.CallID, st.Calls)
	}
	if n := len(toolResults(storedLog(t, e.store, id))); n != 0 {
		t.Fatalf("the client's tool ran in the runtime: %d results", n)
	}
	page, err := e.r.PendingRequests(ctx, session.RequestListOptions{Kind: session.RequestClientTool})
	if err != nil || len(page) != 1 || page[0].Request.RequestID != q.ID {
		t.Fatalf("pending client_tool requests: %+v, %v", page, err)
	}
	if err := e.r.Close(ctx); err != nil {
		t.Fatal(err)
	}

	e = open()
	if _, err := e.r.Resolve(ctx, id, q.ID, agentrt.Resolution{Decision: session.DecisionApprove}); errCode(err) != agentrt.CodeBadDecision {
		t.Fatalf("an approval of a client_tool request: %v, want code %s", err, agentrt.CodeBadDecision)
	}
	if _, err := e.r.Resolve(ctx, id, q.ID, agentrt.Resolution{Result: json.RawMessage(`{"oops`)}); errCode(err) != agentrt.CodeBadResult {
		t.Fatalf("a result that is not JSON: %v, want code %s", err, agentrt.CodeBadResult)
	}
	r, err := e.r.ResolveAndContinue(ctx, id, q.ID, agentrt.Resolution{Text: "3C, rain", By: "client"})
	if err != nil {
		t.Fatal(err)
	}
	if r.Run == nil {
		t.Fatal("the last answer did not continue the run")
	}
	res, err = r.Run.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != session.StatusDone || res.Text != "Oslo: 3°C and rain." {
		t.Fatalf("after the result: %s %q", res.Status, res.Text)
	}
	trs := toolResults(storedLog(t, e.store, id))
	if len(trs) != 1 || !trs[0].OK || string(trs[0].Result) != `"3C, rain"` || trs[0].Name != "get_weather" {
		t.Fatalf("tool results: %+v", trs)
	}
}

// The next run does not offer the last run's client tools: they are the
// run's, not the session's.
func TestClientToolsAreTheRunsOnly(t *testing.T) {
	m := scripted.New("m",
		scripted.Reply{Text: "one", Expect: &scripted.Expect{ToolsInclude: []string{"get_weather"}}},
		scripted.Reply{Text: "two"},
	).Record()
	e := newEnv(t, nil, agentrt.Config{}, calcAgent(m, registry(t)))
	id := e.session(t, "calc")
	if _, err := agentrt.Collect(e.r.Run(context.Background(), id, agentrt.Input{Text: "a", ClientTools: []model.ToolSpec{weatherSpec}})); err != nil {
		t.Fatal(err)
	}
	e.run(t, id, "b")
	reqs := m.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d model requests", len(reqs))
	}
	for _, sp := range reqs[1].Tools {
		if sp.Name == "get_weather" {
			t.Fatal("the second run offered the first run's client tool")
		}
	}
}

// A call the client's tool fails, by the client's say, is a failed tool
// result the model reads.
func TestClientToolFailed(t *testing.T) {
	m := scripted.New("m",
		scripted.Reply{ToolCalls: []scripted.Call{scripted.ToolCall("get_weather", `{"city":"Oslo"}`)}},
		scripted.Reply{Text: "no weather today", Expect: &scripted.Expect{LastToolResultContains: "offline"}},
	)
	e := newEnv(t, nil, agentrt.Config{}, calcAgent(m, registry(t)))
	ctx := context.Background()
	id := e.session(t, "calc")
	if _, err := agentrt.Collect(e.r.Run(ctx, id, agentrt.Input{Text: "weather?", ClientTools: []model.ToolSpec{weatherSpec}})); err != nil {
		t.Fatal(err)
	}
	st, _ := e.r.Load(ctx, id)
	if _, err := e.r.Resolve(ctx, id, st.Requests[0].ID, agentrt.Resolution{Decision: session.DecisionFailed, Reason: "offline"}); err != nil {
		t.Fatal(err)
	}
	if res := e.resume(t, id); res.Status != session.StatusDone || res.Text != "no weather today" {
		t.Fatalf("%s %q", res.Status, res.Text)
	}
	if trs := toolResults(storedLog(t, e.store, id)); len(trs) != 1 || trs[0].OK {
		t.Fatalf("tool results: %+v", trs)
	}
}

func TestClientToolsBadInput(t *testing.T) {
	for _, tc := range []struct {
		name  string
		specs []model.ToolSpec
	}{
		{"no name", []model.ToolSpec{{Name: " "}}},
		{"twice", []model.ToolSpec{weatherSpec, weatherSpec}},
		{"an agent tool's name", []model.ToolSpec{{Name: "calculator"}}},
		{"schema not an object", []model.ToolSpec{{Name: "x", InputSchema: json.RawMessage(`[1]`)}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, nil, agentrt.Config{}, calcAgent(scripted.New("m"), registry(t)))
			id := e.session(t, "calc")
			_, err := agentrt.Collect(e.r.Run(context.Background(), id, agentrt.Input{Text: "a", ClientTools: tc.specs}))
			if errCode(err) != agentrt.CodeBadClientTools {
				t.Fatalf("err %v, want code %s", err, agentrt.CodeBadClientTools)
			}
		})
	}
}
