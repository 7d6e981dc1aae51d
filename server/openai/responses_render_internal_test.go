package openai

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/session"
)

// logOf numbers data as a session's events after seq 10, a token (seq 0)
// where data is a *session.Token.
func logOf(data ...session.Data) []*session.Event {
	var out []*session.Event
	seq := int64(10)
	for _, d := range data {
		ev := &session.Event{SessionID: "s", RunID: "r", Type: d.EventType(), Data: d, Time: time.Unix(1700000000, 0)}
		if _, tok := d.(*session.Token); !tok {
			seq++
			ev.Seq = seq
		}
		out = append(out, ev)
	}
	return out
}

// render renders events (tokens seen from the reader's horizon on)
// after from, and returns the stream events and the response.
func render(events []*session.Event, horizon, from int64) ([]StreamEvent, *Response) {
	a := &Adapter{now: time.Now}
	rd := a.newRenderer(responseRef{session: "s", after: 10, input: "in"}, "resp_x", "assistant", "")
	rd.horizon, rd.from = horizon, from
	out := rd.start()
	for _, ev := range events {
		out = append(out, rd.see(ev)...)
	}
	return out, rd.response()
}

type shown struct {
	Type  string
	Seq   int64
	Delta string
}

func shownOf(evs []StreamEvent) []shown {
	var out []shown
	for _, e := range evs {
		s := shown{Type: strings.TrimPrefix(e.Type, "response."), Seq: e.SequenceNumber}
		if e.Delta != nil {
			s.Delta = *e.Delta
		}
		if e.Text != nil {
			s.Delta = "=" + *e.Text
		}
		out = append(out, s)
	}
	return out
}

func outputText(r *Response) []string {
	var out []string
	for _, it := range r.Output {
		switch it.Type {
		case "message":
			out = append(out, it.Content[0].Text)
		case "function_call":
			out = append(out, it.Name+it.Arguments)
		}
	}
	return out
}

// A reply the model wrote before calling a tool is a message of its own;
// the answer after the tool's result another; a turn whose final answer
// no reply said (a plan's summary, written by a call of the executor's
// own, whose tokens are not a reply) ends with a message of that answer.
func TestRenderMessages(t *testing.T) {
	evs := logOf(
		&session.RunStarted{Inputs: []string{"in"}},
		&session.ModelStarted{},
		&session.Token{Text: "let me look"},
		&session.ModelFinished{Content: "let me look", ToolCalls: []model.ToolCall{{ID: "c1", Name: "weather"}}},
		&session.ToolCall{CallID: "c1", Name: "weather"},
		&session.ToolResult{CallID: "c1", Name: "weather", OK: true},
		&session.ModelStarted{Purpose: "summary"},
		&session.Token{Text: "sunny"},
		&session.ModelFinished{Content: "sunny", Purpose: "summary"},
		&session.Final{Text: "sunny"},
		&session.RunFinished{Status: session.StatusDone},
	)
	out, r := render(evs, 10, -1)
	want := []shown{
		{"created", 0, ""}, {"in_progress", 1, ""},
		{"output_item.added", 2, ""}, {"content_part.added", 3, ""}, {"output_text.delta", 14, "let me look"},
		{"output_text.done", 15, "=let me look"}, {"content_part.done", 16, ""}, {"output_item.done", 17, ""},
		{"output_item.added", 18, ""}, {"content_part.added", 19, ""}, {"output_text.delta", 24, "sunny"},
		{"output_text.done", 25, "=sunny"}, {"content_part.done", 26, ""}, {"output_item.done", 27, ""},
		{"completed", 28, ""},
	}
	if diff := cmp.Diff(want, shownOf(out)); diff != "" {
		t.Errorf("the stream (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"let me look", "sunny"}, outputText(r)); diff != "" {
		t.Errorf("the output (-want +got):\n%s", diff)
	}
	// From the log, the same numbers.
	var stored []*session.Event
	for _, ev := range evs {
		if ev.Seq != 0 {
			stored = append(stored, ev)
		}
	}
	again, _ := render(stored, 10, -1)
	if diff := cmp.Diff(shownOf(out), shownOf(again)); diff != "" {
		t.Errorf("read from the log (-live +log):\n%s", diff)
	}
}

// A model call retried after it streamed part of its reply: the client
// has the first attempt's tokens, which cannot be taken back; the next
// attempt's are not sent on top of them, the done events carry the
// stored reply, and the numbers still grow.
func TestRenderRetriedCall(t *testing.T) {
	evs := logOf(
		&session.RunStarted{Inputs: []string{"in"}},
		&session.ModelStarted{Attempt: 1},
		&session.Token{Text: "a long half "},
		&session.Error{Code: "server", Recoverable: true, Model: "m", Attempt: 1},
		&session.ModelStarted{Attempt: 2, Mode: "generate"},
		&session.Token{Text: "short"},
		&session.ModelFinished{Content: "short"},
		&session.Final{Text: "short"},
		&session.RunFinished{Status: session.StatusDone},
	)
	out, r := render(evs, 10, -1)
	want := []shown{
		{"created", 0, ""}, {"in_progress", 1, ""},
		{"output_item.added", 2, ""}, {"content_part.added", 3, ""}, {"output_text.delta", 15, "a long half "},
		{"output_text.done", 16, "=short"}, {"content_part.done", 17, ""}, {"output_item.done", 18, ""},
		{"completed", 19, ""},
	}
	if diff := cmp.Diff(want, shownOf(out)); diff != "" {
		t.Errorf("the stream (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"short"}, outputText(r)); diff != "" {
		t.Errorf("the output (-want +got):\n%s", diff)
	}
}

// A reader that joined while a model call streamed (its model_started at
// or before the horizon) sends the call's text when the reply is stored,
// numbered as its last token; resumed after a token, the rest of it.
func TestRenderJoinedHalfWay(t *testing.T) {
	evs := logOf(
		&session.RunStarted{Inputs: []string{"in"}},
		&session.ModelStarted{},
		&session.Token{Text: "three"},
		&session.ModelFinished{Content: "one two three"},
		&session.RunFinished{Status: session.StatusDone},
	)
	// "one " ends at byte 4: number 2+1+4 = 7.
	out, _ := render(evs, 12, 7)
	want := []shown{
		{"output_text.delta", 16, "two three"},
		{"output_text.done", 17, "=one two three"}, {"content_part.done", 18, ""}, {"output_item.done", 19, ""},
		{"completed", 20, ""},
	}
	if diff := cmp.Diff(want, shownOf(out)); diff != "" {
		t.Errorf("the stream (-want +got):\n%s", diff)
	}
}

// A run that waits for the client's function calls and for a person:
// a function_call item each call, then a message with the question.
func TestRenderWaiting(t *testing.T) {
	q := session.InputRequired{RequestID: "q1", Kind: session.RequestApproval, Question: "Deploy?"}
	evs := logOf(
		&session.RunStarted{Inputs: []string{"in"}, ClientTools: []model.ToolSpec{{Name: "local_time"}}},
		&session.ModelStarted{},
		&session.ModelFinished{ToolCalls: []model.ToolCall{{ID: "c1", Name: "local_time", Arguments: []byte(`{}`)}}},
		&session.InputRequired{RequestID: "q0", Kind: session.RequestClientTool, Calls: []model.ToolCall{{ID: "c1", Name: "local_time", Arguments: []byte(`{}`)}}},
		&q,
		&session.RunFinished{Status: session.StatusWaiting},
	)
	out, r := render(evs, 10, -1)
	const question = "Deploy?\nReply approve or reject."
	const l = int64(len(question))
	want := []shown{
		{"created", 0, ""}, {"in_progress", 1, ""},
		{"output_item.added", 2, ""}, {"function_call_arguments.delta", 3, "{}"}, {"function_call_arguments.done", 4, ""},
		{"output_item.done", 5, ""},
		{"output_item.added", 6, ""}, {"content_part.added", 7, ""}, {"output_text.delta", 7 + l, question},
		{"output_text.done", 8 + l, "=" + question}, {"content_part.done", 9 + l, ""}, {"output_item.done", 10 + l, ""},
		{"completed", 11 + l, ""},
	}
	if diff := cmp.Diff(want, shownOf(out)); diff != "" {
		t.Errorf("the stream (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"local_time{}", question}, outputText(r)); diff != "" {
		t.Errorf("the output (-want +got):\n%s", diff)
	}
	if len(r.Tools) != 1 || r.Tools[0].Name != "local_time" || r.Status != "completed" {
		t.Errorf("tools %+v, status %s", r.Tools, r.Status)
	}
}

// A response whose turn was interrupted by newer input, which then went
// to another turn's run (handed over), ends cancelled there: without, it
// stayed in progress until the stream's end.
func TestRenderHandedOver(t *testing.T) {
	evs := logOf(
		&session.RunStarted{Input: "hi", Inputs: []string{"in"}, TurnID: "turn_1"},
		&session.Interrupted{Reason: "newer input from source x", Inputs: []string{"in2"}, Source: "x"},
		&session.RunFinished{Status: session.StatusInterrupted},
		&session.InputSteered{Inputs: []string{"in2"}, TurnID: "turn_2"},
	)
	evs[3].RunID = "r2"
	out, resp := render(evs, 0, 0)
	if len(out) == 0 || out[len(out)-1].Type != "response.failed" {
		t.Fatalf("stream events %v, want the last response.failed", shownOf(out))
	}
	if resp.Status != "cancelled" {
		t.Fatalf("status %q, want cancelled", resp.Status)
	}
}
