package demo_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/model/demo"
)

var (
	// researcher is a sub-agent, as agentrt.SubAgent offers it.
	researcher = model.ToolSpec{Name: "researcher", InputSchema: json.RawMessage(`{"type":"object","properties":{"task":{"type":"string"},"continue_session":{"type":"string"}},"required":["task"]}`)}
	calculator = model.ToolSpec{Name: "calculator", InputSchema: json.RawMessage(`{"type":"object"}`)}
	clock      = model.ToolSpec{Name: "clock", InputSchema: json.RawMessage(`{"type":"object"}`)}
	askUser    = model.ToolSpec{Name: "ask_user", InputSchema: json.RawMessage(`{"type":"object"}`)}
)

func generate(t *testing.T, req *model.Request) *model.Response {
	t.Helper()
	resp, err := model.Generate(t.Context(), demo.New(), req)
	if err != nil {
		t.Fatalf("Generate: %v", err)
	}
	return resp
}

func TestName(t *testing.T) {
	t.Parallel()
	if got := demo.New().Name(); got != "demo" {
		t.Errorf("Name() = %q, want demo", got)
	}
}

func TestUserMessages(t *testing.T) {
	t.Parallel()
	both := []model.ToolSpec{calculator, clock}
	tests := []struct {
		input    string
		tools    []model.ToolSpec
		wantTool string // "" when the reply is the notice
		wantArgs string
	}{
		{"what is 21*2+5", both, "calculator", `{"expression":"21*2+5"}`},
		{"What is 21*2+5?", []model.ToolSpec{calculator}, "calculator", `{"expression":"21*2+5"}`},
		{"compute (3+4)*2", both, "calculator", `{"expression":"(3+4)*2"}`},
		{"2^10?", both, "calculator", `{"expression":"2^10"}`},
		{"What's 6 × 7?", both, "calculator", `{"expression":"6 * 7"}`},
		{"what is 10 ÷ 4", both, "calculator", `{"expression":"10 / 4"}`},
		{"and −3 + 5.5?", both, "calculator", `{"expression":"-3 + 5.5"}`},
		{"(please compute 3+4)", both, "calculator", `{"expression":"3+4"}`},
		{"What is 2+2.", both, "calculator", `{"expression":"2+2"}`},
		{"In 2024, what was 1.5*(2+ 2)/3?", both, "calculator", `{"expression":"1.5*(2+ 2)/3"}`},
		{"what is 21*2+5", []model.ToolSpec{clock}, "", ""},
		{"what time is it", both, "clock", `{}`},
		{"What’s the date today?", both, "clock", `{}`},
		{"what day is it", []model.ToolSpec{clock}, "clock", `{}`},
		{"what time is it", []model.ToolSpec{calculator}, "", ""},
		{"hello", both, "", ""},
		{"I have 3 apples and 4 pears", both, "", ""},
		{"is gpt-4 better than claude-3?", both, "", ""},
		{"upgrade to version 1.2.3", both, "", ""},
		{"please update the docs", both, "", ""},
		{"what is (2+3", both, "calculator", `{"expression":"2+3"}`},
		{"what is 2+", both, "", ""},
		{"what is 1e308*10", both, "calculator", `{"expression":"1e308*10"}`},
		{"what is sqrt(16)", both, "calculator", `{"expression":"sqrt(16)"}`},
		{"what is 10% of 250?", both, "calculator", `{"expression":"10/100*250"}`},
		{"ask me: what is your name?", []model.ToolSpec{calculator, askUser}, "ask_user", `{"question":"what is your name?"}`},
		{"Ask me: 2+2?", []model.ToolSpec{calculator, askUser}, "ask_user", `{"question":"2+2?"}`},
		{"ask me: what is your name?", both, "", ""},
		{"ask me:", []model.ToolSpec{askUser}, "", ""},
		{"ask researcher: what day is it", []model.ToolSpec{calculator, researcher}, "researcher", `{"task":"what day is it"}`},
		{"Ask researcher:  find the sum of 2+2 ", []model.ToolSpec{calculator, researcher}, "researcher", `{"task":"find the sum of 2+2"}`},
		{"ask researcher: what day is it", both, "clock", `{}`},                                             // no such sub-agent: the question itself
		{"ask clock: what day is it", both, "clock", `{}`},                                                  // no sub-agent: the question itself
		{"ask researcher:", []model.ToolSpec{researcher}, "", ""},                                           // no task
		{"repeat 3 times: what is 6*7", both, "calculator", `{"expression":"6*7"}`},                         // the first of three
		{"repeat three times: what is 6*7", both, "calculator", `{"expression":"6*7"}`},                     // not a count: the question as it is
		{"repeat 2 times: ask researcher: hi", []model.ToolSpec{researcher}, "researcher", `{"task":"hi"}`}, // any call
	}
	for _, tt := range tests {
		t.Run(tt.input, func(t *testing.T) {
			t.Parallel()
			resp := generate(t, &model.Request{
				Messages: []model.Message{
					model.TextMessage(model.RoleSystem, "You are helpful."),
					model.TextMessage(model.RoleUser, tt.input),
				},
				Tools: tt.tools,
			})
			if tt.wantTool == "" {
				if got := resp.Message.Text(); got != demo.Notice || len(resp.Message.ToolCalls) != 0 {
					t.Errorf("reply %q with calls %v, want the notice", got, resp.Message.ToolCalls)
				}
				if resp.FinishReason != model.FinishStop {
					t.Errorf("finish %q, want stop", resp.FinishReason)
				}
				return
			}
			want := []model.ToolCall{{ID: "demo_call_1", Name: tt.wantTool, Arguments: json.RawMessage(tt.wantArgs)}}
			if diff := cmp.Diff(want, resp.Message.ToolCalls); diff != "" {
				t.Errorf("tool calls (-want +got):\n%s", diff)
			}
			if resp.Message.Text() != "" {
				t.Errorf("text %q beside the tool call", resp.Message.Text())
			}
			if resp.FinishReason != model.FinishToolCalls {
				t.Errorf("finish %q, want tool_calls", resp.FinishReason)
			}
		})
	}
}

func TestToolChoice(t *testing.T) {
	t.Parallel()
	req := &model.Request{
		Messages: []model.Message{model.TextMessage(model.RoleUser, "what is 2+2")},
		Tools:    []model.ToolSpec{calculator, clock},
	}
	for _, tc := range []model.ToolChoice{{Mode: model.ToolChoiceNone}, {Mode: model.ToolChoiceTool, Name: "clock"}} {
		req.ToolChoice = tc
		if got := generate(t, req); len(got.Message.ToolCalls) != 0 {
			t.Errorf("tool choice %+v: called %v", tc, got.Message.ToolCalls)
		}
	}
	req.ToolChoice = model.ToolChoice{Mode: model.ToolChoiceTool, Name: "calculator"}
	if got := generate(t, req); len(got.Message.ToolCalls) != 1 {
		t.Errorf("tool choice calculator: no call")
	}
}

func TestNotice(t *testing.T) {
	t.Parallel()
	for _, want := range []string{"offline demo model", "not a language model",
		"OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY", "agentrt.yaml"} {
		if !strings.Contains(demo.Notice, want) {
			t.Errorf("Notice does not mention %q", want)
		}
	}
	for _, req := range []*model.Request{
		{},
		{Messages: []model.Message{model.TextMessage(model.RoleAssistant, "2+2")}},
	} {
		if got := generate(t, req).Message.Text(); got != demo.Notice {
			t.Errorf("reply to %+v: %q, want the notice", req, got)
		}
	}
}

// toolResult is the message the runtime adds after running a tool.
func toolResult(id, name, text string, isError bool) model.Message {
	return model.Message{
		Role: model.RoleTool, ToolCallID: id, Name: name, IsError: isError,
		Parts: []model.Part{{Type: model.PartText, Text: text}},
	}
}

func TestToolResults(t *testing.T) {
	t.Parallel()
	call := func(id, name string) model.ToolCall {
		return model.ToolCall{ID: id, Name: name, Arguments: json.RawMessage(`{}`)}
	}
	tests := []struct {
		name    string
		calls   []model.ToolCall
		results []model.Message
		want    string
	}{
		{
			name:    "calculator",
			calls:   []model.ToolCall{call("c1", "calculator")},
			results: []model.Message{toolResult("c1", "calculator", `{"expression":"21*2+5","result":47}`, false)},
			want:    "21*2+5 = 47",
		},
		{
			name:    "ask_user answer",
			calls:   []model.ToolCall{call("c1", "ask_user")},
			results: []model.Message{toolResult("c1", "ask_user", `{"answer":"Ada"}`, false)},
			want:    "You answered: Ada",
		},
		{
			name:    "ask_user selection",
			calls:   []model.ToolCall{call("c1", "ask_user")},
			results: []model.Message{toolResult("c1", "ask_user", `{"selected":["red","blue"]}`, false)},
			want:    "You chose: red, blue",
		},
		{
			name:    "fraction",
			calls:   []model.ToolCall{call("c1", "calculator")},
			results: []model.Message{toolResult("c1", "calculator", `{"expression":"10 / 4","result":2.5}`, false)},
			want:    "10 / 4 = 2.5",
		},
		{
			name:  "clock",
			calls: []model.ToolCall{call("c1", "clock")},
			results: []model.Message{toolResult("c1", "clock",
				`{"time":"2025-06-01T14:30:00+02:00","timezone":"Europe/Paris","date":"2025-06-01","weekday":"Sunday","unix":1748781000}`, false)},
			want: "It is 2025-06-01T14:30:00+02:00 (Sunday).",
		},
		{
			name:    "failed with text",
			calls:   []model.ToolCall{call("c1", "calculator")},
			results: []model.Message{toolResult("c1", "calculator", "division by zero", true)},
			want:    `The calculator tool failed: "division by zero".`,
		},
		{
			name:    "failed with JSON",
			calls:   []model.ToolCall{call("c1", "clock")},
			results: []model.Message{toolResult("c1", "clock", `{"error":"unknown time zone Mars/Olympus"}`, true)},
			want:    `The clock tool failed: "unknown time zone Mars/Olympus".`,
		},
		{
			name:    "name from the call",
			calls:   []model.ToolCall{call("c1", "calculator")},
			results: []model.Message{toolResult("c1", "", `{"expression":"2^10","result":1024}`, false)},
			want:    "2^10 = 1024",
		},
		{
			name:  "two results",
			calls: []model.ToolCall{call("c1", "calculator"), call("c2", "clock")},
			results: []model.Message{
				toolResult("c1", "calculator", `{"expression":"1+1","result":2}`, false),
				toolResult("c2", "clock", `{"time":"2025-06-01T12:00:00Z","weekday":"Sunday"}`, false),
			},
			want: "1+1 = 2 It is 2025-06-01T12:00:00Z (Sunday).",
		},
		{
			name:    "another tool",
			calls:   []model.ToolCall{call("c1", "search")},
			results: []model.Message{toolResult("c1", "search", `{"hits":3}`, false)},
			want:    `The search tool returned: {"hits":3}`,
		},
		{
			name:    "a sub-agent's answer",
			calls:   []model.ToolCall{call("c1", "researcher")},
			results: []model.Message{toolResult("c1", "researcher", `{"answer":"It is Sunday.","session":"d1.abc.c1"}`, false)},
			want:    "researcher answered: It is Sunday.",
		},
		{
			name:    "unexpected calculator output",
			calls:   []model.ToolCall{call("c1", "calculator")},
			results: []model.Message{toolResult("c1", "calculator", `"47"`, false)},
			want:    `The calculator tool returned: "47"`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			msgs := []model.Message{
				model.TextMessage(model.RoleUser, "question"),
				{Role: model.RoleAssistant, ToolCalls: tt.calls},
			}
			resp := generate(t, &model.Request{Messages: append(msgs, tt.results...)})
			if got := resp.Message.Text(); got != tt.want {
				t.Errorf("answer %q, want %q", got, tt.want)
			}
			if resp.FinishReason != model.FinishStop {
				t.Errorf("finish %q, want stop", resp.FinishReason)
			}
		})
	}
}

// TestConversation plays a whole calculator turn as the runtime would.
func TestConversation(t *testing.T) {
	t.Parallel()
	req := &model.Request{
		Messages: []model.Message{model.TextMessage(model.RoleUser, "what is 21*2+5")},
		Tools:    []model.ToolSpec{calculator, clock},
	}
	first := generate(t, req)
	if len(first.Message.ToolCalls) != 1 {
		t.Fatalf("first reply: %+v, want a tool call", first.Message)
	}
	call := first.Message.ToolCalls[0]
	var in struct{ Expression string }
	if err := json.Unmarshal(call.Arguments, &in); err != nil || in.Expression != "21*2+5" {
		t.Fatalf("calculator arguments %s", call.Arguments)
	}
	req.Messages = append(req.Messages, first.Message,
		toolResult(call.ID, call.Name, `{"expression":"21*2+5","result":47}`, false))
	final := generate(t, req)
	if got := final.Message.Text(); !strings.Contains(got, "47") {
		t.Errorf("final answer %q does not contain 47", got)
	}

	// A second question in the same conversation gets the next call ID.
	req.Messages = append(req.Messages, final.Message, model.TextMessage(model.RoleUser, "what time is it?"))
	next := generate(t, req)
	if len(next.Message.ToolCalls) != 1 || next.Message.ToolCalls[0].ID != "demo_call_2" {
		t.Errorf("second call %+v, want one with ID demo_call_2", next.Message.ToolCalls)
	}
}

// "repeat N times:" makes the same call N times in the turn, then
// answers; a loop warning stops it at once, and it says so.
func TestRepeat(t *testing.T) {
	t.Parallel()
	play := func(t *testing.T, text string, warnAfter int) (calls int, answer string) {
		t.Helper()
		req := &model.Request{
			Messages: []model.Message{model.TextMessage(model.RoleUser, "what is 1+1"),
				model.TextMessage(model.RoleAssistant, "1+1 = 2"), // an earlier turn does not count
				model.TextMessage(model.RoleUser, text)},
			Tools: []model.ToolSpec{calculator, clock},
		}
		for range 60 {
			resp := generate(t, req)
			if len(resp.Message.ToolCalls) == 0 {
				return calls, resp.Message.Text()
			}
			c := resp.Message.ToolCalls[0]
			if string(c.Arguments) != `{"expression":"6*7"}` {
				t.Fatalf("call %d: %s %s", calls+1, c.Name, c.Arguments)
			}
			calls++
			req.Messages = append(req.Messages, resp.Message, toolResult(c.ID, c.Name, `{"expression":"6*7","result":42}`, false))
			if calls == warnAfter {
				req.Messages = append(req.Messages, model.TextMessage(model.RoleUser,
					"[loop warning] calculator was called 4 times in this turn with the same arguments. Repeating it will not help: use what you have, try something different, or answer now."))
			}
		}
		t.Fatal("it never answered")
		return 0, ""
	}
	if calls, answer := play(t, "repeat 5 times: what is 6*7", 0); calls != 5 || answer != "6*7 = 42" {
		t.Errorf("repeat 5 times: %d calls, answer %q", calls, answer)
	}
	if calls, answer := play(t, "repeat 8 times: what is 6*7", 4); calls != 4 || answer != "6*7 = 42 (I was repeating myself, so I stopped.)" {
		t.Errorf("repeat 8 times, warned after 4: %d calls, answer %q", calls, answer)
	}
	if calls, _ := play(t, "repeat 1000 times: what is 6*7", 0); calls != 50 {
		t.Errorf("repeat 1000 times: %d calls, want at most 50", calls)
	}
}

func TestStreamsWordByWord(t *testing.T) {
	t.Parallel()
	req := &model.Request{Messages: []model.Message{model.TextMessage(model.RoleUser, "hello there")}}
	var chunks []model.Chunk
	for c, err := range demo.New().Stream(t.Context(), req) {
		if err != nil {
			t.Fatal(err)
		}
		chunks = append(chunks, c)
	}
	if len(chunks) < 10 {
		t.Fatalf("%d chunks, want the notice word by word", len(chunks))
	}
	var text strings.Builder
	for i, c := range chunks {
		text.WriteString(c.Text)
		if strings.Count(strings.TrimSpace(c.Text), " ") > 0 {
			t.Errorf("chunk %d %q holds more than a word", i, c.Text)
		}
		last := i == len(chunks)-1
		if (c.Usage != nil) != last || (c.FinishReason != "") != last {
			t.Errorf("chunk %d of %d: usage %v, finish %q", i+1, len(chunks), c.Usage, c.FinishReason)
		}
	}
	if text.String() != demo.Notice {
		t.Errorf("chunks join to %q, want the notice", text.String())
	}
	u := chunks[len(chunks)-1].Usage
	if want := (model.Usage{InputTokens: 3, OutputTokens: int64(len(demo.Notice)+3) / 4}); *u != want {
		t.Errorf("usage %+v, want %+v", *u, want)
	}
}

func TestToolCallChunk(t *testing.T) {
	t.Parallel()
	req := &model.Request{
		Messages: []model.Message{model.TextMessage(model.RoleUser, "what is 2+2")},
		Tools:    []model.ToolSpec{calculator},
	}
	var chunks []model.Chunk
	for c, err := range demo.New().Stream(t.Context(), req) {
		if err != nil {
			t.Fatal(err)
		}
		chunks = append(chunks, c)
	}
	want := []model.Chunk{{
		ToolCalls:    []model.ToolCallDelta{{ID: "demo_call_1", Name: "calculator", Arguments: `{"expression":"2+2"}`}},
		Usage:        &model.Usage{InputTokens: 10, OutputTokens: 8},
		FinishReason: model.FinishToolCalls,
	}}
	if diff := cmp.Diff(want, chunks); diff != "" {
		t.Errorf("chunks (-want +got):\n%s", diff)
	}
}

func TestCanceled(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err := model.Generate(ctx, demo.New(), &model.Request{})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}

	// Canceled mid-stream: the stream stops with ctx's error.
	ctx, cancel = context.WithCancel(t.Context())
	defer cancel()
	n := 0
	for _, err = range demo.New().Stream(ctx, &model.Request{}) {
		if err != nil {
			break
		}
		n++
		cancel()
	}
	if n != 1 || !errors.Is(err, context.Canceled) {
		t.Errorf("after cancel: %d chunks and err %v, want 1 and context.Canceled", n, err)
	}
}

func TestZeroValue(t *testing.T) {
	t.Parallel()
	var m demo.Model
	if resp, err := model.Generate(t.Context(), &m, &model.Request{}); err != nil || resp.Message.Text() != demo.Notice {
		t.Errorf("zero Model: %v, %v", resp, err)
	}
}
