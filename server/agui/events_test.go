package agui

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/session"
)

func ev(seq int64, d session.Data) *session.Event {
	return &session.Event{Seq: seq, Type: d.EventType(), Data: d}
}

// types runs evs through a translator and returns the AG-UI event types
// it sends, the terminal event's included.
func types(t *testing.T, evs []*session.Event, ints []Interrupt) ([]string, []Event) {
	t.Helper()
	tr := newTranslator("th", "r1")
	var all []Event
	for _, e := range evs {
		all = append(all, tr.event(e)...)
	}
	all = append(all, tr.finish(nil, waits{interrupts: ints})...)
	if again := tr.finish(nil, waits{interrupts: ints}); again != nil {
		t.Errorf("a second finish sent %v: want no second terminal event", again)
	}
	var out []string
	for _, e := range all {
		if e.Type != StateDelta {
			out = append(out, e.Type)
		}
	}
	return out, all
}

// A streamed reply and a streamed call: text, then the call with its
// arguments as they came, closed at the reply's end; the result; the
// answer; success.
func TestTranslateToolRun(t *testing.T) {
	evs := []*session.Event{
		ev(1, &session.RunStarted{Input: "hi"}),
		ev(2, &session.RoundStarted{Round: 1}),
		ev(3, &session.ModelStarted{Attempt: 1}),
		ev(0, &session.Token{Text: "let me "}),
		ev(0, &session.Token{Pulse: true}),
		ev(0, &session.ToolCallDelta{Index: 0, CallID: "c1", Name: "lookup", Arguments: `{"q"`}),
		ev(0, &session.ToolCallDelta{Index: 0, Arguments: `:"go"}`}),
		ev(4, &session.ModelFinished{Content: "let me look", ToolCalls: []model.ToolCall{{ID: "c1", Name: "lookup", Arguments: json.RawMessage(`{"q":"go"}`)}}}),
		ev(5, &session.ToolCall{CallID: "c1", Name: "lookup"}),
		ev(6, &session.ToolResult{CallID: "c1", Name: "lookup", OK: true, Result: json.RawMessage(`"found"`)}),
		ev(7, &session.RoundStarted{Round: 2}),
		ev(8, &session.ModelStarted{Attempt: 1}),
		ev(9, &session.ModelFinished{Content: "done"}),
		ev(10, &session.Final{Text: "done"}),
		ev(11, &session.RunFinished{Status: session.StatusDone}),
	}
	got, all := types(t, evs, nil)
	want := []string{StepStarted, TextMessageStart, TextMessageContent, TextMessageEnd, ToolCallStart, ToolCallArgs, ToolCallArgs,
		TextMessageStart, TextMessageContent, TextMessageEnd, ToolCallEnd, ToolCallResult,
		StepFinished, StepStarted, TextMessageStart, TextMessageContent, TextMessageEnd, StepFinished, RunFinished}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("events (-want +got):\n%s", diff)
	}
	last := all[len(all)-1]
	if last.Outcome.Type != "success" || last.Result != "done" {
		t.Errorf("terminal %+v: want success with the answer", last)
	}
	// The text the stream missed ("look", after the call began) comes
	// from the whole reply, in the same message.
	if all[8].MessageID != "msg-3" || all[8].Delta != "look" {
		t.Errorf("the rest of the reply: %+v; want \"look\" in msg-3", all[8])
	}
}

// A run canceled while a call streams and a round is open: the call, the
// text and the round are closed before the one terminal event.
func TestTranslateCanceledClosesWhatIsOpen(t *testing.T) {
	evs := []*session.Event{
		ev(1, &session.RunStarted{Input: "hi"}),
		ev(2, &session.RoundStarted{Round: 1}),
		ev(3, &session.ModelStarted{Attempt: 1}),
		ev(0, &session.Token{Text: "x"}),
		ev(0, &session.ToolCallDelta{Index: 0, CallID: "c1", Name: "lookup", Arguments: `{"q"`}),
		ev(4, &session.Error{Code: "canceled", Message: "canceled"}),
		ev(5, &session.RunFinished{Status: session.StatusCanceled}),
	}
	got, all := types(t, evs, nil)
	want := []string{StepStarted, TextMessageStart, TextMessageContent, TextMessageEnd, ToolCallStart, ToolCallArgs,
		ToolCallEnd, StepFinished, RunFinished}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("events (-want +got):\n%s", diff)
	}
	if o := all[len(all)-1].Outcome; o == nil || o.Type != "cancelled" {
		t.Errorf("outcome %+v; want cancelled", o)
	}
}

// How each end of a turn shows: failed and paused as RUN_ERROR with a
// code, waiting as an interrupt outcome with its requests, interrupted as
// cancelled, and a stream that ended early as RUN_ERROR.
func TestTranslateEnds(t *testing.T) {
	ints := []Interrupt{interrupt(session.InputRequired{RequestID: "req_1", Kind: session.RequestApproval, Question: "Allow deploy?",
		Calls: []model.ToolCall{{ID: "c1", Name: "deploy", Arguments: json.RawMessage(`{"env":"prod"}`)}}})}
	for _, tc := range []struct {
		name   string
		evs    []*session.Event
		typ    string
		code   string
		result string
	}{
		{"failed", []*session.Event{ev(1, &session.Error{Code: "bad_request", Message: "no"}), ev(2, &session.RunFinished{Status: session.StatusFailed, Reason: "bad_request"})}, RunError, "bad_request", ""},
		{"paused", []*session.Event{ev(1, &session.RunFinished{Status: session.StatusPaused, Reason: "max_steps"})}, RunError, "max_steps", ""},
		{"waiting", []*session.Event{ev(1, &session.RunFinished{Status: session.StatusWaiting})}, RunFinished, "", "interrupt"},
		{"interrupted", []*session.Event{ev(1, &session.RunFinished{Status: session.StatusInterrupted})}, RunFinished, "", "cancelled"},
		{"cut short", nil, RunError, "stream_ended", ""},
		{"retried model error", []*session.Event{ev(1, &session.Error{Code: "server", Model: "m", Attempt: 1}), ev(2, &session.RunFinished{Status: session.StatusDone})}, RunFinished, "", "success"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, all := types(t, tc.evs, ints)
			last := all[len(all)-1]
			if last.Type != tc.typ || last.Code != tc.code {
				t.Fatalf("terminal %+v; want %s code %q", last, tc.typ, tc.code)
			}
			if tc.result != "" && (last.Outcome == nil || last.Outcome.Type != tc.result) {
				t.Fatalf("outcome %+v; want %s", last.Outcome, tc.result)
			}
			if tc.result == "interrupt" && !cmp.Equal(last.Outcome.Interrupts, ints) {
				t.Errorf("interrupts %+v; want %+v", last.Outcome.Interrupts, ints)
			}
		})
	}
}

// A resume entry's payload becomes the answer of its request; a payload
// that answers nothing is refused with a message saying what it needs.
func TestResolution(t *testing.T) {
	approval := session.InputRequired{RequestID: "r", Kind: session.RequestApproval}
	prompt := session.InputRequired{RequestID: "r", Kind: session.RequestPrompt}
	for _, tc := range []struct {
		q       session.InputRequired
		status  string
		payload string
		want    string // decision/text, or "error"
	}{
		{approval, "resolved", `{"approved":true}`, "approve"},
		{approval, "resolved", `{"approved":false,"reason":"no"}`, "reject"},
		{approval, "resolved", `{"arguments":{"env":"dev"}}`, "edit"},
		{approval, "resolved", ``, "approve"},
		{approval, "cancelled", ``, "reject"},
		{approval, "resolved", `{"reason":"hm"}`, "error"},
		{prompt, "resolved", `"blue"`, "text:blue"},
		{prompt, "resolved", `{"text":"red"}`, "text:red"},
		{prompt, "resolved", ``, "error"},
		{prompt, "cancelled", ``, "error"},
	} {
		res, err := resolution(tc.q, ResumeEntry{InterruptID: "r", Status: tc.status, Payload: json.RawMessage(tc.payload)})
		got := res.Decision
		if res.Text != "" {
			got = "text:" + res.Text
		}
		if err != nil {
			got = "error"
		}
		if got != tc.want {
			t.Errorf("%s %s %s: %q (%v); want %q", tc.q.Kind, tc.status, tc.payload, got, err, tc.want)
		}
	}
}

// The new input is the user messages that end the conversation.
func TestNewInput(t *testing.T) {
	msg := func(role, content string) InputMessage {
		return InputMessage{ID: role, Role: role, Content: json.RawMessage(content)}
	}
	for _, tc := range []struct {
		msgs []InputMessage
		want string
		err  bool
	}{
		{[]InputMessage{msg("user", `"a"`), msg("assistant", `"b"`), msg("user", `"c"`), msg("user", `[{"type":"text","text":"d"}]`)}, "c\n\nd", false},
		{[]InputMessage{msg("user", `"a"`), msg("assistant", `"b"`)}, "", false},
		{nil, "", false},
		{[]InputMessage{msg("user", `[{"type":"image","source":{}}]`)}, "", true},
		{[]InputMessage{msg("user", `[{"type":"image","source":{"type":"file","value":"file-abc"}}]`)}, "", true},
		{[]InputMessage{msg("user", `[{"type":"binary","mimeType":"image/png","data":"eA=="}]`)}, "", true},
		{[]InputMessage{msg("user", `[{"type":"text","text":"see"},{"type":"image","source":{"type":"data","value":"eA==","mimeType":"image/png"}}]`)}, "see", false},
	} {
		got, media, err := newInput(tc.msgs)
		if got != tc.want || (err != nil) != tc.err {
			t.Errorf("newInput: %q, %v; want %q (error %v)", got, err, tc.want, tc.err)
		}
		if tc.want == "see" && (len(media) != 1 || media[0].Kind != "image" || media[0].Base64 != "eA==" || media[0].Type != "image/png") {
			t.Errorf("newInput's media: %+v, want the image's data source", media)
		}
	}
}

// A run waiting for the client's tools alone ends with success and the
// calls pending; one that also waits for a person ends with the
// interrupts, the calls left for a later run's end to name.
func TestFinishWaitingForClientTools(t *testing.T) {
	for _, tc := range []struct {
		name string
		w    waits
		want Outcome
	}{
		{"client tools", waits{calls: []string{"c1", "c2"}}, Outcome{Type: "success", PendingToolCallIDs: []string{"c1", "c2"}}},
		{"and a person", waits{calls: []string{"c1"}, interrupts: []Interrupt{{ID: "req_1", Reason: "approval"}}},
			Outcome{Type: "interrupt", Interrupts: []Interrupt{{ID: "req_1", Reason: "approval"}}}},
		{"nothing left", waits{}, Outcome{Type: "success"}},
	} {
		tr := newTranslator("th", "r1")
		tr.event(ev(1, &session.RunFinished{Status: session.StatusWaiting}))
		out := tr.finish(nil, tc.w)
		last := out[len(out)-1]
		if last.Type != RunFinished || last.Outcome == nil {
			t.Fatalf("%s: terminal %+v", tc.name, last)
		}
		if diff := cmp.Diff(tc.want, *last.Outcome); diff != "" {
			t.Errorf("%s: outcome (-want +got):\n%s", tc.name, diff)
		}
	}
}

// A stream that fails (its follower could not read the log) ends with
// RUN_ERROR carrying the failure's code and the server's sentence for it,
// not what the store said underneath.
func TestRunErrorSaysNoInternals(t *testing.T) {
	err := &agentrt.Error{Kind: agentrt.FailStore, Msg: "read the session's events",
		Err: errors.New("sqlite: step: disk I/O error (5386)")}
	tr := newTranslator("t", "r")
	got := tr.finish(failureOf(fmt.Errorf("follow the turn: %w", err)), waits{})
	want := []Event{{Type: RunError, Code: agentrt.CodeStore, Message: "follow the turn: read the session's events"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("RUN_ERROR (-want +got):\n%s", diff)
	}
}
