package model_test

import (
	"context"
	"encoding/json"
	"errors"
	"iter"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/agentrt/agentrt/model"
)

func assemble(t *testing.T, a *model.Assembler, chunks ...model.Chunk) *model.Response {
	t.Helper()
	for _, c := range chunks {
		a.Add(c)
	}
	r, err := a.Response()
	if err != nil {
		t.Fatalf("Response: %v", err)
	}
	return r
}

func TestAssembler(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		chunks []model.Chunk
		want   *model.Response
	}{
		{
			name:   "text across chunks",
			chunks: []model.Chunk{{Text: "Hel"}, {Text: "lo, "}, {}, {Text: "wörld"}, {FinishReason: model.FinishStop}},
			want: &model.Response{
				Message:      model.TextMessage(model.RoleAssistant, "Hello, wörld"),
				FinishReason: model.FinishStop,
			},
		},
		{
			name: "tool calls interleaved by index",
			chunks: []model.Chunk{
				{Text: "Let me check."},
				{ToolCalls: []model.ToolCallDelta{{Index: 0, ID: "a", Name: "calculator"}}},
				{ToolCalls: []model.ToolCallDelta{{Index: 1, ID: "b", Name: "clock", Arguments: `{"time`}}},
				{ToolCalls: []model.ToolCallDelta{{Index: 0, Arguments: `{"expression":`}}},
				// One chunk may carry fragments of several calls.
				{ToolCalls: []model.ToolCallDelta{{Index: 1, Arguments: `zone":"UTC"}`}, {Index: 0, Arguments: `"2+2"}`}}},
			},
			want: &model.Response{
				Message: model.Message{
					Role:  model.RoleAssistant,
					Parts: []model.Part{{Type: model.PartText, Text: "Let me check."}},
					ToolCalls: []model.ToolCall{
						{ID: "a", Name: "calculator", Arguments: json.RawMessage(`{"expression":"2+2"}`)},
						{ID: "b", Name: "clock", Arguments: json.RawMessage(`{"timezone":"UTC"}`)},
					},
				},
				FinishReason: model.FinishToolCalls,
			},
		},
		{
			name: "sparse indexes",
			chunks: []model.Chunk{
				{ToolCalls: []model.ToolCallDelta{{Index: 3, ID: "x", Name: "t", Arguments: `{}`}}},
				{ToolCalls: []model.ToolCallDelta{{Index: 7, ID: "y", Name: "t", Arguments: `{}`}}},
			},
			want: &model.Response{
				Message: model.Message{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{
					{ID: "x", Name: "t", Arguments: json.RawMessage(`{}`)},
					{ID: "y", Name: "t", Arguments: json.RawMessage(`{}`)},
				}},
				FinishReason: model.FinishToolCalls,
			},
		},
		{
			name: "empty and malformed arguments",
			chunks: []model.Chunk{
				{ToolCalls: []model.ToolCallDelta{{Index: 0, ID: "a", Name: "clock"}}},
				{ToolCalls: []model.ToolCallDelta{{Index: 1, ID: "b", Name: "calculator", Arguments: `{"expression":`}}},
			},
			want: &model.Response{
				Message: model.Message{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{
					{ID: "a", Name: "clock", Arguments: json.RawMessage(`{}`)},
					{ID: "b", Name: "calculator", Arguments: json.RawMessage(`{"expression":`)},
				}},
				FinishReason: model.FinishToolCalls,
			},
		},
		{
			name: "usage: the last one wins",
			chunks: []model.Chunk{
				{Text: "a", Usage: &model.Usage{InputTokens: 10}},
				{Text: "b"},
				{Usage: &model.Usage{InputTokens: 10, OutputTokens: 2, CachedTokens: 4, CostUSD: 0.5}},
			},
			want: &model.Response{
				Message:      model.TextMessage(model.RoleAssistant, "ab"),
				Usage:        model.Usage{InputTokens: 10, OutputTokens: 2, CachedTokens: 4, CostUSD: 0.5},
				FinishReason: model.FinishStop,
			},
		},
		{
			name:   "no finish reason: stop",
			chunks: []model.Chunk{{Text: "done"}},
			want: &model.Response{
				Message:      model.TextMessage(model.RoleAssistant, "done"),
				FinishReason: model.FinishStop,
			},
		},
		{
			name: "given finish reason kept beside tool calls",
			chunks: []model.Chunk{
				{ToolCalls: []model.ToolCallDelta{{Index: 0, ID: "a", Name: "t", Arguments: `{"q":"tru`}}},
				{FinishReason: model.FinishLength},
			},
			want: &model.Response{
				Message: model.Message{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{
					{ID: "a", Name: "t", Arguments: json.RawMessage(`{"q":"tru`)},
				}},
				FinishReason: model.FinishLength,
			},
		},
		{
			name:   "last finish reason wins",
			chunks: []model.Chunk{{Text: "x", FinishReason: model.FinishLength}, {FinishReason: model.FinishContentFilter}},
			want: &model.Response{
				Message:      model.TextMessage(model.RoleAssistant, "x"),
				FinishReason: model.FinishContentFilter,
			},
		},
		{
			name:   "one empty chunk: an empty reply, not an error",
			chunks: []model.Chunk{{}},
			want: &model.Response{
				Message:      model.Message{Role: model.RoleAssistant},
				FinishReason: model.FinishStop,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var a model.Assembler
			got := assemble(t, &a, tt.chunks...)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("response (-want +got):\n%s", diff)
			}
		})
	}
}

func TestAssemblerText(t *testing.T) {
	t.Parallel()
	var a model.Assembler
	for _, s := range []string{"", "a", "ab", "abc"} {
		if got := a.Text(); got != s {
			t.Errorf("Text() = %q, want %q", got, s)
		}
		a.Add(model.Chunk{Text: string(rune('a' + len(s)))})
	}
}

func TestAssemblerEmptyStream(t *testing.T) {
	t.Parallel()
	var a model.Assembler
	if r, err := a.Response(); err == nil {
		t.Errorf("Response() of no chunks = %+v, want an error", r)
	}
	a.Add(model.Chunk{Text: "x"})
	a.Reset()
	if r, err := a.Response(); err == nil {
		t.Errorf("Response() after Reset = %+v, want an error", r)
	}
}

func TestAssemblerReset(t *testing.T) {
	t.Parallel()
	var a model.Assembler
	first := assemble(t, &a,
		model.Chunk{Text: "first "},
		model.Chunk{Text: "reply"},
		model.Chunk{ToolCalls: []model.ToolCallDelta{{Index: 0, ID: "a", Name: "calculator", Arguments: `{"expression":"1+1"}`}}},
		model.Chunk{Usage: &model.Usage{InputTokens: 1, OutputTokens: 2}, FinishReason: model.FinishLength},
	)
	want := &model.Response{
		Message: model.Message{
			Role:      model.RoleAssistant,
			Parts:     []model.Part{{Type: model.PartText, Text: "first reply"}},
			ToolCalls: []model.ToolCall{{ID: "a", Name: "calculator", Arguments: json.RawMessage(`{"expression":"1+1"}`)}},
		},
		Usage:        model.Usage{InputTokens: 1, OutputTokens: 2},
		FinishReason: model.FinishLength,
	}

	a.Reset()
	if got := a.Text(); got != "" {
		t.Errorf("Text() after Reset = %q", got)
	}
	// The reused assembler knows nothing of the first reply: no text, call,
	// usage or finish reason leaks into the second.
	second := assemble(t, &a,
		model.Chunk{Text: "2nd"},
		model.Chunk{ToolCalls: []model.ToolCallDelta{{Index: 0, ID: "b", Name: "clock", Arguments: `{}`}}},
	)
	wantSecond := &model.Response{
		Message: model.Message{
			Role:      model.RoleAssistant,
			Parts:     []model.Part{{Type: model.PartText, Text: "2nd"}},
			ToolCalls: []model.ToolCall{{ID: "b", Name: "clock", Arguments: json.RawMessage(`{}`)}},
		},
		FinishReason: model.FinishToolCalls,
	}
	if diff := cmp.Diff(wantSecond, second); diff != "" {
		t.Errorf("second response (-want +got):\n%s", diff)
	}
	// Reusing the assembler must not change a response it returned before.
	if diff := cmp.Diff(want, first); diff != "" {
		t.Errorf("first response changed by reuse (-want +got):\n%s", diff)
	}

	a.Reset()
	third := assemble(t, &a, model.Chunk{Text: "3"})
	if diff := cmp.Diff(model.TextMessage(model.RoleAssistant, "3"), third.Message); diff != "" {
		t.Errorf("third message (-want +got):\n%s", diff)
	}
	if third.FinishReason != model.FinishStop || third.Usage != (model.Usage{}) {
		t.Errorf("third: finish %q, usage %+v", third.FinishReason, third.Usage)
	}
}

// chunks is a Model that streams fixed chunks, then err if set.
type chunks struct {
	list []model.Chunk
	err  error
}

func (chunks) Name() string { return "chunks" }

func (m chunks) Stream(context.Context, *model.Request) iter.Seq2[model.Chunk, error] {
	return func(yield func(model.Chunk, error) bool) {
		for _, c := range m.list {
			if !yield(c, nil) {
				return
			}
		}
		if m.err != nil {
			yield(model.Chunk{}, m.err)
		}
	}
}

// whole is a Model that also implements Generator.
type whole struct{ chunks }

func (whole) Generate(context.Context, *model.Request) (*model.Response, error) {
	return &model.Response{Message: model.TextMessage(model.RoleAssistant, "whole"), FinishReason: model.FinishStop}, nil
}

func TestGenerate(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	resp, err := model.Generate(ctx, chunks{list: []model.Chunk{{Text: "a"}, {Text: "b"}}}, &model.Request{})
	if err != nil || resp.Message.Text() != "ab" {
		t.Errorf("Generate = %+v, %v; want ab", resp, err)
	}

	broken := errors.New("connection reset")
	_, err = model.Generate(ctx, chunks{list: []model.Chunk{{Text: "a"}}, err: broken}, &model.Request{})
	if !errors.Is(err, broken) {
		t.Errorf("Generate of a broken stream: err = %v, want %v", err, broken)
	}

	if _, err := model.Generate(ctx, chunks{}, &model.Request{}); err == nil {
		t.Error("Generate of an empty stream: no error")
	}

	resp, err = model.Generate(ctx, whole{chunks{list: []model.Chunk{{Text: "streamed"}}}}, &model.Request{})
	if err != nil || resp.Message.Text() != "whole" {
		t.Errorf("Generate of a Generator = %+v, %v; want its own Generate's reply", resp, err)
	}
}

func TestUnstreamed(t *testing.T) {
	want := &model.Response{
		Message: model.Message{Role: model.RoleAssistant, Parts: []model.Part{{Type: model.PartText, Text: "hi"}},
			ToolCalls: []model.ToolCall{{ID: "c1", Name: "add", Arguments: json.RawMessage(`{"a":1}`)}}},
		Usage: model.Usage{InputTokens: 3, OutputTokens: 4}, FinishReason: model.FinishToolCalls,
	}
	var a model.Assembler
	a.Add(model.ResponseChunk(want))
	got, err := a.Response()
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}
