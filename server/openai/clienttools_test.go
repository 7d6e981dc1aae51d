package openai_test

import (
	"errors"
	"net/http"
	"testing"

	oa "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/param"

	"github.com/agentrt/agentrt/server/openai"
)

var clockTool = oa.ChatCompletionToolUnionParam{OfFunction: &oa.ChatCompletionFunctionToolParam{Function: oa.FunctionDefinitionParam{
	Name: "local_time", Description: param.NewOpt("the time on the client's machine"),
	Parameters: oa.FunctionParameters{"type": "object", "properties": map[string]any{"tz": map[string]any{"type": "string"}}}}}}

// A tool the client sends is the client's: openai-go gets its call as
// tool_calls with finish_reason tool_calls, runs it, and sends the whole
// history back with the tool message; the run goes on with the result
// and the agent answers. Then again streamed, continued by the session
// header rather than the history.
func TestClientToolRoundTripOpenAIGo(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	c := f.client("")
	ctx := t.Context()
	params := userMsg(`call local_time {"tz":"UTC"}`)
	params.Tools = []oa.ChatCompletionToolUnionParam{clockTool}
	var resp *http.Response
	first, err := c.Chat.Completions.New(ctx, params, option.WithResponseInto(&resp))
	if err != nil {
		t.Fatal(err)
	}
	ch := first.Choices[0]
	if ch.FinishReason != "tool_calls" || len(ch.Message.ToolCalls) != 1 || ch.Message.ToolCalls[0].Function.Name != "local_time" ||
		ch.Message.ToolCalls[0].Function.Arguments != `{"tz":"UTC"}` {
		t.Fatalf("first answer: %+v", ch)
	}
	id := resp.Header.Get(openai.SessionHeader)
	call := ch.Message.ToolCalls[0]
	params.Messages = append(params.Messages, ch.Message.ToParam(), oa.ToolMessage("12:00 UTC", call.ID))
	second, err := c.Chat.Completions.New(ctx, params, option.WithResponseInto(&resp))
	if err != nil {
		t.Fatal(err)
	}
	if got := second.Choices[0]; got.FinishReason != "stop" || got.Message.Content != `echo: "12:00 UTC"` {
		t.Fatalf("after the tool's result: %q, %q", got.FinishReason, got.Message.Content)
	}
	if got := resp.Header.Get(openai.SessionHeader); got != id {
		t.Fatalf("the history continued session %s, not %s", got, id)
	}

	// Streamed, in the same session, continued through the header.
	next := userMsg(`call local_time {"tz":"CET"}`)
	next.Tools = params.Tools
	hdr := option.WithHeader(openai.SessionHeader, id)
	s := c.Chat.Completions.NewStreaming(ctx, next, hdr)
	var acc oa.ChatCompletionAccumulator
	for s.Next() {
		acc.AddChunk(s.Current())
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	ch = acc.Choices[0]
	if ch.FinishReason != "tool_calls" || len(ch.Message.ToolCalls) != 1 || ch.Message.ToolCalls[0].Function.Arguments != `{"tz":"CET"}` {
		t.Fatalf("streamed call: %+v", ch)
	}
	cont := oa.ChatCompletionNewParams{Model: "assistant", Messages: []oa.ChatCompletionMessageParamUnion{oa.ToolMessage("13:00 CET", ch.Message.ToolCalls[0].ID)}}
	s = c.Chat.Completions.NewStreaming(ctx, cont, hdr)
	acc = oa.ChatCompletionAccumulator{}
	for s.Next() {
		acc.AddChunk(s.Current())
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	if got := acc.Choices[0]; got.FinishReason != "stop" || got.Message.Content != `echo: "13:00 CET"` {
		t.Fatalf("streamed answer: %q, %q", got.FinishReason, got.Message.Content)
	}

	// A tool message no run waits for, and a tool that is not a function.
	_, err = c.Chat.Completions.New(ctx, oa.ChatCompletionNewParams{Model: "assistant",
		Messages: []oa.ChatCompletionMessageParamUnion{oa.ToolMessage("x", "call_nobody")}})
	var e *oa.Error
	if !errors.As(err, &e) || e.StatusCode != http.StatusNotFound || e.Code != "unknown_request" {
		t.Fatalf("a tool result nobody waits for: %v", err)
	}
}
