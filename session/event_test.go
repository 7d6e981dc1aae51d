package session_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/session"
)

func TestEventJSONRoundTrip(t *testing.T) {
	usage := model.Usage{InputTokens: 120, OutputTokens: 34, CachedTokens: 8, CostUSD: 0.00125}
	calls := []model.ToolCall{{ID: "call_1", Name: "search", Arguments: json.RawMessage(`{"q":"go iterators"}`)}}
	tests := []session.Data{
		&session.RunStarted{Input: "hello", Source: "cli"},
		&session.RunFinished{Status: "done", Usage: usage},
		&session.RunFinished{Status: "paused", Usage: usage, Reason: "max_rounds"},
		&session.RunResumed{Reason: "approval", From: session.StatusWaiting},
		&session.RoundStarted{Round: 2, MaxRounds: 8},
		&session.ModelStarted{Model: "gpt-x", Attempt: 1},
		&session.Token{Text: "hel", Pulse: true},
		&session.ToolCallDelta{Index: 1, CallID: "call_1", Name: "search", Arguments: `{"q":`},
		&session.ToolCallDelta{Index: 1, Arguments: `"go"}`},
		&session.ModelFinished{Model: "gpt-x", Content: "let me look", ToolCalls: calls, Usage: usage, FinishReason: model.FinishToolCalls, LatencyMS: 812},
		&session.ToolCall{CallID: "call_1", Name: "search", Arguments: json.RawMessage(`{"q":"go iterators"}`)},
		&session.ToolResult{CallID: "call_1", Name: "search", OK: true, Result: json.RawMessage(`{"hits":[1,2,3]}`), LatencyMS: 40},
		&session.ToolResult{CallID: "call_2", Name: "rm", Error: "denied by policy"},
		&session.InputRequired{RequestID: "req_1", Kind: session.RequestApproval, Calls: calls, Question: "run search?"},
		&session.InputResolved{RequestID: "req_1", Kind: session.RequestApproval, Decision: session.DecisionEdit, By: "ana", Reason: "narrower", Arguments: json.RawMessage(`{"q":"iter.Seq2"}`)},
		&session.InputRequired{RequestID: "req_2", Kind: session.RequestSelect, Question: "which?", Options: []string{"a", "b"}, Multi: true},
		&session.InputResolved{RequestID: "req_2", Kind: session.RequestSelect, Decision: session.DecisionAnswer, Selected: []string{"b"}},
		&session.InputResolved{RequestID: "req_3", Kind: session.RequestConfirm, Decision: session.DecisionDone, Result: json.RawMessage(`{"charged":true}`)},
		&session.Interrupted{Reason: "new input", MergedInputs: 2},
		&session.RunStarted{Input: "sub", Parent: &session.ParentRef{SessionID: "p1", CallID: "call_9"}},
		&session.ToolCall{CallID: "call_1", Name: "search", Arguments: json.RawMessage(`{}`), Attempt: 2},
		&session.Final{Text: "done", Usage: usage},
		&session.Error{Code: "timeout", Message: "model timed out", Recoverable: true},
		&session.Raw{T: "team_note", JSON: json.RawMessage(`{"plan":[{"tool":"search"}],"n":1.5}`)},
	}
	for _, d := range tests {
		t.Run(string(d.EventType()), func(t *testing.T) {
			in := &session.Event{
				V:         session.SchemaVersion,
				Seq:       7,
				SessionID: "s1",
				RunID:     "r1",
				Turn:      3,
				Type:      d.EventType(),
				Time:      time.Date(2026, 3, 1, 12, 30, 15, 123456789, time.UTC),
				Agent:     "assistant",
				Data:      d,
			}
			b, err := json.Marshal(in)
			if err != nil {
				t.Fatal(err)
			}
			var out session.Event
			if err := json.Unmarshal(b, &out); err != nil {
				t.Fatalf("Unmarshal(%s): %v", b, err)
			}
			if diff := cmp.Diff(in, &out); diff != "" {
				t.Errorf("round trip mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestEventUnknownTypeIsRaw(t *testing.T) {
	const in = `{"v":1,"seq":3,"session_id":"s1","turn":1,"type":"team_ping","time":"2026-03-01T12:00:00Z","data":{"child":"c1","round":3}}`
	var e session.Event
	if err := json.Unmarshal([]byte(in), &e); err != nil {
		t.Fatal(err)
	}
	raw, ok := e.Data.(*session.Raw)
	if !ok {
		t.Fatalf("Data is %T, want *session.Raw", e.Data)
	}
	want := &session.Raw{T: "team_ping", JSON: json.RawMessage(`{"child":"c1","round":3}`)}
	if diff := cmp.Diff(want, raw); diff != "" {
		t.Errorf("Raw mismatch (-want +got):\n%s", diff)
	}
	out, err := json.Marshal(&e)
	if err != nil {
		t.Fatal(err)
	}
	if string(out) != in {
		t.Errorf("re-marshaled event:\n got %s\nwant %s", out, in)
	}
}

func TestEventNewerSchemaRejected(t *testing.T) {
	in := `{"v":2,"seq":1,"session_id":"s1","turn":1,"type":"final","time":"2026-03-01T12:00:00Z","data":{"text":"x"}}`
	var e session.Event
	err := json.Unmarshal([]byte(in), &e)
	if err == nil {
		t.Fatal("Unmarshal of a v2 event succeeded, want an error")
	}
	if !strings.Contains(err.Error(), "v2") {
		t.Errorf("error %q does not name the event's schema version", err)
	}
}

func TestEventMalformedData(t *testing.T) {
	in := `{"v":1,"seq":42,"session_id":"s1","turn":1,"type":"tool_result","time":"2026-03-01T12:00:00Z","data":{"ok":"yes"}}`
	var e session.Event
	err := json.Unmarshal([]byte(in), &e)
	if err == nil {
		t.Fatal("Unmarshal of malformed data succeeded, want an error")
	}
	for _, want := range []string{"42", "tool_result"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not contain %q", err, want)
		}
	}
}

// Logs written before the one human-request model hold approval_required
// and approval_resolved events: they read as input_* of kind approval.
func TestLegacyApprovalEvents(t *testing.T) {
	for _, tc := range []struct {
		json string
		want session.Data
	}{
		{`{"v":1,"seq":4,"session_id":"s","turn":1,"type":"approval_required","time":"2026-01-01T00:00:00Z","data":{"request_id":"req_1","calls":[{"id":"c1","name":"rm","arguments":{}}],"question":"Allow rm?"}}`,
			&session.InputRequired{RequestID: "req_1", Kind: session.RequestApproval, Question: "Allow rm?",
				Calls: []model.ToolCall{{ID: "c1", Name: "rm", Arguments: json.RawMessage(`{}`)}}}},
		{`{"v":1,"seq":5,"session_id":"s","turn":1,"type":"approval_resolved","time":"2026-01-01T00:00:00Z","data":{"request_id":"req_1","decision":"reject","by":"ana"}}`,
			&session.InputResolved{RequestID: "req_1", Kind: session.RequestApproval, Decision: session.DecisionReject, By: "ana"}},
	} {
		var e session.Event
		if err := json.Unmarshal([]byte(tc.json), &e); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(tc.want, e.Data); diff != "" {
			t.Errorf("payload (-want +got):\n%s", diff)
		}
		if e.Type != tc.want.EventType() {
			t.Errorf("type %q, want %q", e.Type, tc.want.EventType())
		}
	}
}

type planned struct {
	Steps []string `json:"steps"`
}

func (*planned) EventType() session.Type { return "team_note" }

// As gives a custom payload the same way whether the event was made in
// this process or read back from a store as Raw.
func TestAs(t *testing.T) {
	live := &session.Event{Type: "team_note", Data: &planned{Steps: []string{"a"}}}
	b, err := json.Marshal(live)
	if err != nil {
		t.Fatal(err)
	}
	var stored session.Event
	if err := json.Unmarshal(b, &stored); err != nil {
		t.Fatal(err)
	}
	for _, e := range []*session.Event{live, &stored} {
		p, ok, err := session.As[planned](e)
		if err != nil || !ok {
			t.Fatalf("As: %v, %v", ok, err)
		}
		if diff := cmp.Diff([]string{"a"}, p.Steps); diff != "" {
			t.Error(diff)
		}
	}
	if _, ok, _ := session.As[planned](&session.Event{Type: "other", Data: &session.Raw{T: "other", JSON: json.RawMessage(`{}`)}}); ok {
		t.Error("As took an event of another type")
	}
	if _, _, err := session.As[planned](&session.Event{Type: "team_note", Data: &session.Raw{T: "team_note", JSON: json.RawMessage(`{"steps":1}`)}}); err == nil || !strings.Contains(err.Error(), "team_note") {
		t.Errorf("As of a bad payload: %v", err)
	}
}

// A tool_call_delta always carries its arguments fragment, empty or not;
// the call's id and name only on the fragment they came with.
func TestToolCallDeltaJSON(t *testing.T) {
	for _, tc := range []struct {
		d    session.ToolCallDelta
		want string
	}{
		{session.ToolCallDelta{Index: 0, CallID: "call_1", Name: "search"}, `{"index":0,"call_id":"call_1","name":"search","arguments":""}`},
		{session.ToolCallDelta{Index: 2, Arguments: `{"q":"go`}, `{"index":2,"arguments":"{\"q\":\"go"}`},
	} {
		b, err := json.Marshal(&tc.d)
		if err != nil {
			t.Fatal(err)
		}
		if string(b) != tc.want {
			t.Errorf("got %s, want %s", b, tc.want)
		}
		d, err := session.DecodeData(session.TypeToolCallDelta, b)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(&tc.d, d); diff != "" {
			t.Errorf("decoded (-want +got):\n%s", diff)
		}
	}
}
