package scripted_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/model/scripted"
)

func userRequest(text string) *model.Request {
	return &model.Request{Messages: []model.Message{model.TextMessage(model.RoleUser, text)}}
}

// collect ranges over one call's stream.
func collect(t *testing.T, m model.Model, ctx context.Context, req *model.Request) ([]model.Chunk, error) {
	t.Helper()
	var chunks []model.Chunk
	for c, err := range m.Stream(ctx, req) {
		if err != nil {
			return chunks, err
		}
		chunks = append(chunks, c)
	}
	return chunks, nil
}

func generate(t *testing.T, m model.Model, req *model.Request) *model.Response {
	t.Helper()
	resp, err := model.Generate(t.Context(), m, req)
	if err != nil {
		t.Fatalf("Generate: %v", err)
	}
	return resp
}

func TestRepliesInOrder(t *testing.T) {
	t.Parallel()
	m := scripted.New("order",
		scripted.Reply{Text: "one"},
		scripted.Reply{Text: "two"},
		scripted.Reply{Text: "three"},
	)
	if got := m.Name(); got != "order" {
		t.Errorf("Name() = %q, want order", got)
	}
	for i, want := range []string{"one", "two", "three"} {
		if got := generate(t, m, userRequest("go")).Message.Text(); got != want {
			t.Errorf("call %d: text %q, want %q", i+1, got, want)
		}
		if got := m.Calls(); got != i+1 {
			t.Errorf("call %d: Calls() = %d", i+1, got)
		}
	}
	if got := m.Remaining(); got != 0 {
		t.Errorf("Remaining() = %d, want 0", got)
	}
}

func TestDefaultName(t *testing.T) {
	t.Parallel()
	if got := scripted.New("").Name(); got != "scripted" {
		t.Errorf("Name() = %q, want scripted", got)
	}
}

func TestStreamStartsNoWorkUntilRanged(t *testing.T) {
	t.Parallel()
	m := scripted.New("lazy", scripted.Reply{Text: "a"}, scripted.Reply{Text: "b"})
	_ = m.Stream(t.Context(), userRequest("x")) // never ranged
	if got := m.Calls(); got != 0 {
		t.Fatalf("Calls() = %d after an unranged Stream, want 0", got)
	}
	if got := generate(t, m, userRequest("x")).Message.Text(); got != "a" {
		t.Errorf("text %q, want a", got)
	}
}

func TestAssembledReplyEqualsScript(t *testing.T) {
	t.Parallel()
	calc := scripted.ToolCall("calculator", `{"expression":"2+2"}`)
	clock := scripted.Call{ID: "my_id", Name: "clock", Arguments: map[string]string{"timezone": "Europe/Paris"}}
	tests := []struct {
		name       string
		reply      scripted.Reply
		wantChunks int
		want       model.Message
		wantFinish model.FinishReason
	}{
		{
			name:       "text in one chunk",
			reply:      scripted.Reply{Text: "Hello, world."},
			wantChunks: 1,
			want:       model.TextMessage(model.RoleAssistant, "Hello, world."),
			wantFinish: model.FinishStop,
		},
		{
			name:       "text in three chunks",
			reply:      scripted.Reply{Text: "Hello, world.", Chunks: 3},
			wantChunks: 3,
			want:       model.TextMessage(model.RoleAssistant, "Hello, world."),
			wantFinish: model.FinishStop,
		},
		{
			name:       "more chunks than runes",
			reply:      scripted.Reply{Text: "héé", Chunks: 10},
			wantChunks: 3,
			want:       model.TextMessage(model.RoleAssistant, "héé"),
			wantFinish: model.FinishStop,
		},
		{
			name:       "empty reply",
			reply:      scripted.Reply{Chunks: 4},
			wantChunks: 1,
			want:       model.Message{Role: model.RoleAssistant},
			wantFinish: model.FinishStop,
		},
		{
			name:       "tool calls in one chunk",
			reply:      scripted.Reply{Text: "Checking.", ToolCalls: []scripted.Call{calc, clock}},
			wantChunks: 1,
			want: model.Message{
				Role:  model.RoleAssistant,
				Parts: []model.Part{{Type: model.PartText, Text: "Checking."}},
				ToolCalls: []model.ToolCall{
					{ID: "call_1_1", Name: "calculator", Arguments: json.RawMessage(`{"expression":"2+2"}`)},
					{ID: "my_id", Name: "clock", Arguments: json.RawMessage(`{"timezone":"Europe/Paris"}`)},
				},
			},
			wantFinish: model.FinishToolCalls,
		},
		{
			name:       "tool calls split",
			reply:      scripted.Reply{Text: "Checking.", ToolCalls: []scripted.Call{calc, clock}, Chunks: 4},
			wantChunks: 4 + 2*4,
			want: model.Message{
				Role:  model.RoleAssistant,
				Parts: []model.Part{{Type: model.PartText, Text: "Checking."}},
				ToolCalls: []model.ToolCall{
					{ID: "call_1_1", Name: "calculator", Arguments: json.RawMessage(`{"expression":"2+2"}`)},
					{ID: "my_id", Name: "clock", Arguments: json.RawMessage(`{"timezone":"Europe/Paris"}`)},
				},
			},
			wantFinish: model.FinishToolCalls,
		},
		{
			name:       "no arguments",
			reply:      scripted.Reply{ToolCalls: []scripted.Call{{Name: "clock"}}, Chunks: 2},
			wantChunks: 2,
			want: model.Message{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{
				{ID: "call_1_1", Name: "clock", Arguments: json.RawMessage(`{}`)},
			}},
			wantFinish: model.FinishToolCalls,
		},
		{
			name:       "finish reason set",
			reply:      scripted.Reply{Text: "cut", FinishReason: model.FinishLength},
			wantChunks: 1,
			want:       model.TextMessage(model.RoleAssistant, "cut"),
			wantFinish: model.FinishLength,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m := scripted.New("m", tt.reply)
			chunks, err := collect(t, m, t.Context(), userRequest("hi"))
			if err != nil {
				t.Fatal(err)
			}
			if len(chunks) != tt.wantChunks {
				t.Errorf("%d chunks, want %d: %+v", len(chunks), tt.wantChunks, chunks)
			}
			for i, c := range chunks[:len(chunks)-1] {
				if c.Usage != nil || c.FinishReason != "" {
					t.Errorf("chunk %d of %d carries usage or finish: %+v", i+1, len(chunks), c)
				}
			}
			var a model.Assembler
			for _, c := range chunks {
				a.Add(c)
			}
			got, err := a.Response()
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got.Message); diff != "" {
				t.Errorf("assembled message (-want +got):\n%s", diff)
			}
			if got.FinishReason != tt.wantFinish {
				t.Errorf("finish %q, want %q", got.FinishReason, tt.wantFinish)
			}
			// model.Generate takes the same path and gets the same reply.
			resp := generate(t, scripted.New("m", tt.reply), userRequest("hi"))
			if diff := cmp.Diff(got, resp); diff != "" {
				t.Errorf("Generate differs from the assembled stream (-stream +Generate):\n%s", diff)
			}
		})
	}
}

func TestToolCallDeltasInterleaved(t *testing.T) {
	t.Parallel()
	m := scripted.New("split", scripted.Reply{
		ToolCalls: []scripted.Call{
			scripted.ToolCall("calculator", `{"expression":"21*2+5"}`),
			scripted.ToolCall("clock", `{"timezone":"UTC"}`),
		},
		Chunks: 3,
	})
	chunks, err := collect(t, m, t.Context(), userRequest("hi"))
	if err != nil {
		t.Fatal(err)
	}
	var got []model.ToolCallDelta
	for _, c := range chunks {
		if len(c.ToolCalls) != 1 {
			t.Fatalf("chunk with %d deltas, want 1: %+v", len(c.ToolCalls), c)
		}
		got = append(got, c.ToolCalls[0])
	}
	want := []model.ToolCallDelta{
		{Index: 0, ID: "call_1_1", Name: "calculator", Arguments: `{"expre`},
		{Index: 1, ID: "call_1_2", Name: "clock", Arguments: `{"time`},
		{Index: 0, Arguments: `ssion":"`},
		{Index: 1, Arguments: `zone":`},
		{Index: 0, Arguments: `21*2+5"}`},
		{Index: 1, Arguments: `"UTC"}`},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("deltas (-want +got):\n%s", diff)
	}
}

func TestDelay(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		m := scripted.New("slow", scripted.Reply{Text: "late", Delay: 2 * time.Second})
		start := time.Now()
		resp := generate(t, m, userRequest("hi"))
		if got := time.Since(start); got != 2*time.Second {
			t.Errorf("reply after %v, want 2s", got)
		}
		if resp.Message.Text() != "late" {
			t.Errorf("text %q", resp.Message.Text())
		}
	})
}

func TestDelayCanceled(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		m := scripted.New("slow",
			scripted.Reply{Text: "never seen", Delay: time.Minute},
			scripted.Reply{Text: "next"},
		)
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		start := time.Now()
		chunks, err := collect(t, m, ctx, userRequest("hi"))
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("err = %v, want context.DeadlineExceeded", err)
		}
		if got := time.Since(start); got != time.Second {
			t.Errorf("canceled after %v, want 1s", got)
		}
		if len(chunks) != 0 {
			t.Errorf("chunks before the error: %+v", chunks)
		}
		// The canceled call used its reply, as a real model call would.
		if got := generate(t, m, userRequest("again")).Message.Text(); got != "next" {
			t.Errorf("after cancel: text %q, want next", got)
		}
	})
}

func TestCanceledBeforeStart(t *testing.T) {
	t.Parallel()
	m := scripted.New("m", scripted.Reply{Text: "a"})
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := collect(t, m, ctx, userRequest("hi")); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if got := m.Calls(); got != 0 {
		t.Errorf("Calls() = %d, want 0: a call canceled before it starts takes no reply", got)
	}
}

func TestCanceledBetweenChunks(t *testing.T) {
	t.Parallel()
	m := scripted.New("m", scripted.Reply{Text: "abcdef", Chunks: 3})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var texts []string
	var err error
	for c, e := range m.Stream(ctx, userRequest("hi")) {
		if e != nil {
			err = e
			break
		}
		texts = append(texts, c.Text)
		cancel()
	}
	if !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
	if diff := cmp.Diff([]string{"ab"}, texts); diff != "" {
		t.Errorf("chunks before cancel (-want +got):\n%s", diff)
	}
}

func TestBreakEarly(t *testing.T) {
	t.Parallel()
	m := scripted.New("m", scripted.Reply{Text: "abcdef", Chunks: 3}, scripted.Reply{Text: "b"})
	for range m.Stream(t.Context(), userRequest("hi")) {
		break
	}
	if got := generate(t, m, userRequest("hi")).Message.Text(); got != "b" {
		t.Errorf("text %q, want b", got)
	}
}

func TestExhausted(t *testing.T) {
	t.Parallel()
	m := scripted.New("x", scripted.Reply{Text: "a"}, scripted.Reply{Text: "b"}, scripted.Reply{Text: "c"})
	for range 3 {
		generate(t, m, userRequest("hi"))
	}
	req := &model.Request{Messages: []model.Message{
		model.TextMessage(model.RoleUser, "what is 2+2?"),
		{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{
			{ID: "c1", Name: "calculator", Arguments: json.RawMessage(`{"expression":"2+2"}`)},
		}},
		{Role: model.RoleTool, ToolCallID: "c1", Name: "calculator", Parts: []model.Part{
			{Type: model.PartText, Text: `{"expression":"2+2","result":4}`},
		}},
	}}
	_, err := model.Generate(t.Context(), m, req)
	if !errors.Is(err, scripted.ErrExhausted) {
		t.Fatalf("err = %v, want ErrExhausted", err)
	}
	want := `scripted model "x": script has 3 replies, call 4 is beyond it; ` +
		`last message: tool calculator: "{\"expression\":\"2+2\",\"result\":4}"`
	if err.Error() != want {
		t.Errorf("error:\n got %s\nwant %s", err, want)
	}
	if got := m.Calls(); got != 4 {
		t.Errorf("Calls() = %d, want 4", got)
	}

	one := scripted.New("y", scripted.Reply{Text: "a"})
	generate(t, one, userRequest("hi"))
	_, err = model.Generate(t.Context(), one, userRequest(strings.Repeat("é", 300)))
	want = `scripted model "y": script has 1 reply, call 2 is beyond it; last message: user: "` +
		strings.Repeat("é", 200) + `"...`
	if err == nil || err.Error() != want {
		t.Errorf("error:\n got %v\nwant %s", err, want)
	}
}

func TestExpect(t *testing.T) {
	t.Parallel()
	toolResult := model.Message{Role: model.RoleTool, ToolCallID: "c1", Name: "calculator", Parts: []model.Part{
		{Type: model.PartText, Text: `{"expression":"2+2","result":4}`},
	}}
	req := &model.Request{
		Messages: []model.Message{
			model.TextMessage(model.RoleUser, "what is 2+2?"),
			{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{{ID: "c1", Name: "calculator"}}},
			toolResult,
		},
		Tools: []model.ToolSpec{{Name: "calculator"}, {Name: "clock"}},
	}
	tests := []struct {
		name    string
		expect  scripted.Expect
		req     *model.Request
		wantErr string // "" when the request matches
	}{
		{
			name: "all match",
			expect: scripted.Expect{
				LastUserContains:       "2+2",
				LastToolResultContains: `"result":4`,
				ToolsInclude:           []string{"clock", "calculator"},
			},
			req: req,
		},
		{
			name:   "user text",
			expect: scripted.Expect{LastUserContains: "3+3"},
			req:    req,
			wantErr: `scripted model "m": reply 1 of 1: expected the last user message to contain "3+3"; ` +
				`it is user: "what is 2+2?"`,
		},
		{
			name:   "no user message",
			expect: scripted.Expect{LastUserContains: "3+3"},
			req:    &model.Request{Messages: []model.Message{model.TextMessage(model.RoleSystem, "be brief")}},
			wantErr: `scripted model "m": reply 1 of 1: expected the last user message to contain "3+3"; ` +
				`the request has no user message`,
		},
		{
			name:   "tool result",
			expect: scripted.Expect{LastToolResultContains: `"result":5`},
			req:    req,
			wantErr: `scripted model "m": reply 1 of 1: expected the last tool result to contain "\"result\":5"; ` +
				`it is tool calculator: "{\"expression\":\"2+2\",\"result\":4}"`,
		},
		{
			name:   "no tool result",
			expect: scripted.Expect{LastToolResultContains: "4"},
			req:    userRequest("hi"),
			wantErr: `scripted model "m": reply 1 of 1: expected the last tool result to contain "4"; ` +
				`the request has no tool result`,
		},
		{
			name:   "tools",
			expect: scripted.Expect{ToolsInclude: []string{"calculator", "search", "browser"}},
			req:    req,
			wantErr: `scripted model "m": reply 1 of 1: ` +
				`expected the request to offer tool "search"; it offers "calculator", "clock"; and ` +
				`expected the request to offer tool "browser"; it offers "calculator", "clock"`,
		},
		{
			name:    "no tools",
			expect:  scripted.Expect{ToolsInclude: []string{"calculator"}},
			req:     userRequest("hi"),
			wantErr: `scripted model "m": reply 1 of 1: expected the request to offer tool "calculator"; it offers no tools`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m := scripted.New("m", scripted.Reply{Text: "ok", Expect: &tt.expect})
			chunks, err := collect(t, m, t.Context(), tt.req)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			if !errors.Is(err, scripted.ErrUnexpected) {
				t.Fatalf("err = %v, want ErrUnexpected", err)
			}
			if err.Error() != tt.wantErr {
				t.Errorf("error:\n got %s\nwant %s", err, tt.wantErr)
			}
			if len(chunks) != 0 {
				t.Errorf("chunks streamed before the mismatch: %+v", chunks)
			}
		})
	}
}

func TestErrorReply(t *testing.T) {
	t.Parallel()
	m := scripted.New("m",
		scripted.Reply{Error: "upstream: 503 overloaded"},
		scripted.Reply{Text: "partial answer", Chunks: 2, Error: "connection reset"},
		scripted.Reply{Text: "recovered"},
	)
	chunks, err := collect(t, m, t.Context(), userRequest("hi"))
	if err == nil || err.Error() != "upstream: 503 overloaded" || len(chunks) != 0 {
		t.Errorf("reply 1: chunks %+v, err %v; want no chunks and the scripted error", chunks, err)
	}
	chunks, err = collect(t, m, t.Context(), userRequest("hi"))
	want := []model.Chunk{{Text: "partial"}, {Text: " answer"}}
	if diff := cmp.Diff(want, chunks); diff != "" || err == nil || err.Error() != "connection reset" {
		t.Errorf("reply 2: err %v; chunks (-want +got):\n%s", err, diff)
	}
	if got := generate(t, m, userRequest("hi")).Message.Text(); got != "recovered" {
		t.Errorf("reply 3: %q", got)
	}
}

func TestUsage(t *testing.T) {
	t.Parallel()
	given := &model.Usage{InputTokens: 10, OutputTokens: 5, CostUSD: 0.25}
	m := scripted.New("m",
		scripted.Reply{Text: "fixed", Usage: given},
		scripted.Reply{Text: "twelve bytes"},
		scripted.Reply{Text: "fixed", Usage: given},
	)
	resp := generate(t, m, userRequest("hi"))
	if diff := cmp.Diff(*given, resp.Usage); diff != "" {
		t.Errorf("given usage (-want +got):\n%s", diff)
	}
	req := userRequest("sixteen bytes...")
	req.Tools = []model.ToolSpec{{Name: "calc", InputSchema: json.RawMessage(`{}`)}} // 6 bytes
	resp = generate(t, m, req)
	if diff := cmp.Diff(model.Usage{InputTokens: 6, OutputTokens: 3}, resp.Usage); diff != "" {
		t.Errorf("estimated usage (-want +got):\n%s", diff)
	}
	// Each call gets its own Usage: a caller that changes it changes
	// nothing in the script.
	for c, err := range m.Stream(t.Context(), userRequest("hi")) {
		if err != nil {
			t.Fatal(err)
		}
		c.Usage.CostUSD = 99
	}
	m.Reset()
	if got := generate(t, m, userRequest("hi")).Usage; got != *given {
		t.Errorf("usage after a caller changed a chunk's: %+v, want %+v", got, *given)
	}
}

func TestRecord(t *testing.T) {
	t.Parallel()
	m := scripted.New("m", scripted.Reply{Text: "a"}, scripted.Reply{Text: "b"}, scripted.Reply{Text: "c"})
	generate(t, m, userRequest("before"))
	if got := m.Requests(); got != nil {
		t.Errorf("Requests() with recording off = %v, want nil", got)
	}
	if m.Record() != m {
		t.Error("Record() does not return its model")
	}
	temp := 0.5
	req := &model.Request{
		Messages: []model.Message{
			model.TextMessage(model.RoleUser, "first"),
			{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{{ID: "1", Name: "t", Arguments: json.RawMessage(`{"a":1}`)}}},
		},
		Tools:       []model.ToolSpec{{Name: "t", InputSchema: json.RawMessage(`{"type":"object"}`)}},
		Temperature: &temp,
	}
	generate(t, m, req)
	want := &model.Request{
		Messages: []model.Message{
			model.TextMessage(model.RoleUser, "first"),
			{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{{ID: "1", Name: "t", Arguments: json.RawMessage(`{"a":1}`)}}},
		},
		Tools:       []model.ToolSpec{{Name: "t", InputSchema: json.RawMessage(`{"type":"object"}`)}},
		Temperature: &temp,
	}
	// The caller reuses its request: the recording must not change.
	req.Messages[0].Parts[0].Text = "changed"
	req.Messages[1].ToolCalls[0].Arguments[1] = 'X'
	req.Tools[0].InputSchema[2] = 'X'
	*req.Temperature = 1
	req.Messages = append(req.Messages, model.TextMessage(model.RoleUser, "second"))
	generate(t, m, req)

	got := m.Requests()
	if len(got) != 2 {
		t.Fatalf("%d requests recorded, want 2", len(got))
	}
	want.Temperature = new(float64)
	*want.Temperature = 0.5
	if diff := cmp.Diff(want, got[0]); diff != "" {
		t.Errorf("first request (-want +got):\n%s", diff)
	}
	if n := len(got[1].Messages); n != 3 {
		t.Errorf("second request has %d messages, want 3", n)
	}
	m.Reset()
	if got := m.Requests(); len(got) != 0 {
		t.Errorf("Requests() after Reset = %v, want none", got)
	}
}

func TestReset(t *testing.T) {
	t.Parallel()
	m := scripted.New("m", scripted.Reply{Text: "a"}, scripted.Reply{Text: "b"})
	generate(t, m, userRequest("hi"))
	if got := m.Remaining(); got != 1 {
		t.Errorf("Remaining() = %d, want 1", got)
	}
	m.Reset()
	if m.Calls() != 0 || m.Remaining() != 2 {
		t.Errorf("after Reset: Calls() = %d, Remaining() = %d", m.Calls(), m.Remaining())
	}
	if got := generate(t, m, userRequest("hi")).Message.Text(); got != "a" {
		t.Errorf("after Reset: %q, want a", got)
	}
}

func TestConcurrentUse(t *testing.T) {
	t.Parallel()
	const n = 64
	replies := make([]scripted.Reply, n)
	for i := range replies {
		replies[i] = scripted.Reply{
			Text:      fmt.Sprintf("reply %d", i),
			ToolCalls: []scripted.Call{scripted.ToolCall("t", `{"i":1}`)},
			Chunks:    1 + i%3,
		}
	}
	m := scripted.New("m", replies...).Record()
	var wg sync.WaitGroup
	got := make([]string, n)
	for i := range n {
		wg.Go(func() {
			resp, err := model.Generate(t.Context(), m, userRequest("hi"))
			if err != nil {
				t.Error(err)
				return
			}
			got[i] = resp.Message.Text()
			_ = m.Calls()
			_ = m.Remaining()
		})
	}
	wg.Wait()
	seen := map[string]bool{}
	for _, text := range got {
		seen[text] = true
	}
	for i := range n {
		if !seen[fmt.Sprintf("reply %d", i)] {
			t.Errorf("reply %d was not played", i)
		}
	}
	if len(m.Requests()) != n {
		t.Errorf("%d requests recorded, want %d", len(m.Requests()), n)
	}
	if _, err := model.Generate(t.Context(), m, userRequest("hi")); !errors.Is(err, scripted.ErrExhausted) {
		t.Errorf("call %d: err = %v, want ErrExhausted", n+1, err)
	}
}

func TestArguments(t *testing.T) {
	t.Parallel()
	type in struct {
		Expression string `json:"expression"`
	}
	tests := []struct {
		name string
		call scripted.Call
		want string
	}{
		{"string", scripted.ToolCall("c", ` {"a": 1} `), `{"a": 1}`},
		{"bytes", scripted.ToolCall("c", []byte(`{"a":1}`)), `{"a":1}`},
		{"raw", scripted.ToolCall("c", json.RawMessage(`{"a":1}`)), `{"a":1}`},
		{"struct", scripted.ToolCall("c", in{"2<3"}), `{"expression":"2\u003c3"}`},
		{"map", scripted.ToolCall("c", map[string]int{"b": 2, "a": 1}), `{"a":1,"b":2}`},
		{"nil", scripted.ToolCall("c", nil), `{}`},
		{"verbatim", scripted.Call{Name: "c", Arguments: `{"a":`, Verbatim: true}, `{"a":`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m := scripted.New("m", scripted.Reply{ToolCalls: []scripted.Call{tt.call}})
			resp := generate(t, m, userRequest("hi"))
			if got := string(resp.Message.ToolCalls[0].Arguments); got != tt.want {
				t.Errorf("arguments %s, want %s", got, tt.want)
			}
		})
	}
}

func TestNewPanicsOnMalformedReply(t *testing.T) {
	t.Parallel()
	tests := []struct {
		reply scripted.Reply
		want  string
	}{
		{scripted.Reply{ToolCalls: []scripted.Call{{Arguments: `{}`}}}, `reply 2: tool call 1: no name`},
		{scripted.Reply{ToolCalls: []scripted.Call{scripted.ToolCall("c", `{"a":`)}}, `reply 2: tool call 1 (c): arguments: not valid JSON: {"a": (set Verbatim to send it anyway)`},
		{scripted.Reply{ToolCalls: []scripted.Call{scripted.ToolCall("c", `[1]`)}}, `arguments: [1] is not a JSON object`},
		{scripted.Reply{ToolCalls: []scripted.Call{scripted.ToolCall("c", 42)}}, `arguments: 42 is not a JSON object`},
		{scripted.Reply{ToolCalls: []scripted.Call{scripted.ToolCall("c", func() {})}}, `arguments: json: unsupported type`},
		{scripted.Reply{Chunks: -1}, `reply 2: chunks is -1, want 0 or more`},
		{scripted.Reply{Delay: -time.Second}, `reply 2: delay is -1s, want 0 or more`},
	}
	for _, tt := range tests {
		func() {
			defer func() {
				r := recover()
				err, ok := r.(error)
				if !ok || !strings.Contains(err.Error(), tt.want) || !strings.HasPrefix(err.Error(), `scripted model "m": `) {
					t.Errorf("panic %v, want an error containing %q", r, tt.want)
				}
			}()
			scripted.New("m", scripted.Reply{Text: "fine"}, tt.reply)
		}()
	}
}

func TestNilRequest(t *testing.T) {
	t.Parallel()
	m := scripted.New("m", scripted.Reply{Text: "a", Expect: &scripted.Expect{LastUserContains: "x"}})
	if _, err := collect(t, m, t.Context(), nil); !errors.Is(err, scripted.ErrUnexpected) {
		t.Errorf("err = %v, want ErrUnexpected", err)
	}
	want := `scripted model "m": script has 1 reply, call 2 is beyond it; last message: none`
	if _, err := collect(t, m, t.Context(), nil); err == nil || err.Error() != want {
		t.Errorf("error:\n got %v\nwant %s", err, want)
	}
}
