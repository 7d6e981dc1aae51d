package anthropic_test

import (
	"context"
	"testing"

	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/modeltest"
)

// TestStreamOddities runs streams too small to keep as files: what
// proxies and newer API versions may send.
func TestStreamOddities(t *testing.T) {
	t.Parallel()
	const start = `{"type":"message_start","message":{"usage":{"input_tokens":7,"cache_read_input_tokens":3,"output_tokens":1}}}`
	cases := []modeltest.Case{
		{Name: "no event names", File: "x.sse", Data: []byte(
			"data: " + start + "\n\n" +
				`data: {"index":0,"type":"content_block_start","content_block":{"text":"Hi","type":"text"}}` + "\n\n" +
				`data: {"delta":{"text":" you","type":"text_delta"},"type":"content_block_delta","index":0}` + "\n\n" +
				`data: {"usage":{"output_tokens":2},"type":"message_delta","delta":{"stop_reason":"stop_sequence"}}` + "\n\n" +
				`data: {"type":"message_stop"}` + "\n\n"),
			Want: want("Hi you", model.FinishStop, model.Usage{InputTokens: 10, CachedTokens: 3, OutputTokens: 2})},
		{Name: "message_stop without message_delta", File: "x.sse", Data: []byte(
			"event: message_start\ndata: " + start + "\n\n" +
				"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n" +
				"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"ok\"}}\n\n" +
				"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"),
			Want: want("ok", model.FinishStop, model.Usage{InputTokens: 10, CachedTokens: 3, OutputTokens: 1})},
		{Name: "server tool and unknown events skipped", File: "x.sse", Data: []byte(
			"event: message_start\ndata: " + start + "\n\n" +
				"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"server_tool_use\",\"id\":\"srvtoolu_1\",\"name\":\"web_search\",\"input\":{}}}\n\n" +
				"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"query\\\": \\\"go\\\"}\"}}\n\n" +
				"event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n" +
				"event: something_new\ndata: {\"type\":\"something_new\",\"x\":[1,2]}\n\n" +
				"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":\"tool_use\",\"id\":\"toolu_1\",\"name\":\"get_weather\",\"input\":{}}}\n\n" +
				"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"city\\\":\\\"Oslo\\\"}\"}}\n\n" +
				"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"tool_use\"},\"usage\":{\"output_tokens\":9}}\n\n" +
				"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"),
			Want: want("", model.FinishToolCalls, model.Usage{InputTokens: 10, CachedTokens: 3, OutputTokens: 9},
				model.ToolCall{ID: "toolu_1", Name: "get_weather", Arguments: []byte(`{"city":"Oslo"}`)})},
		{Name: "malformed event", File: "x.sse", Data: []byte(
			"event: message_start\ndata: " + start + "\n\n" +
				"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"o\n\n"),
			WantErr: model.CodeServer, WantErrText: "malformed stream event"},
		{Name: "input for a block that did not start", File: "x.sse", Data: []byte(
			"event: message_start\ndata: " + start + "\n\n" +
				"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":3,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{}\"}}\n\n"),
			WantErr: model.CodeServer, WantErrText: "content block 3"},
		{Name: "rate limit error event", File: "x.sse", Data: []byte(
			"event: message_start\ndata: " + start + "\n\n" +
				"event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"rate_limit_error\",\"message\":\"slow down\"}}\n\n"),
			WantErr: model.CodeRateLimited, WantRecoverable: true, WantErrText: "slow down"},
	}
	for _, c := range cases {
		c.Format = modeltest.Anthropic
		t.Run(c.Name, func(t *testing.T) {
			t.Parallel()
			modeltest.RunCase(t, c, newModel)
		})
	}
}

func want(text string, finish model.FinishReason, u model.Usage, calls ...model.ToolCall) *model.Response {
	r := &model.Response{Usage: u, FinishReason: finish}
	r.Message.Role = model.RoleAssistant
	if text != "" {
		r.Message.Parts = []model.Part{{Type: model.PartText, Text: text}}
	}
	r.Message.ToolCalls = calls
	return r
}

// TestErrorEventAfterText checks that an error event mid-stream comes
// after the text streamed before it, marked Streamed.
func TestErrorEventAfterText(t *testing.T) {
	t.Parallel()
	var c modeltest.Case
	for _, x := range modeltest.Cases(modeltest.Anthropic) {
		if x.Name == "stream-error-event-overloaded" {
			c = x
		}
	}
	srv := modeltest.Serve(t, c)
	var text string
	var last error
	for ch, err := range newModel(t, srv.URL+"/v1").Stream(context.Background(), modeltest.Request()) {
		text += ch.Text
		last = err
	}
	me, ok := model.AsError(last)
	if !ok || !me.Streamed || me.Status != 0 || me.Provider != "anthropic" || me.Model != "claude-sonnet-4-5" {
		t.Errorf("error %#v, want a streamed *model.Error naming the model", last)
	}
	if text != "Let me" {
		t.Errorf("text %q before the error, want %q", text, "Let me")
	}
}
