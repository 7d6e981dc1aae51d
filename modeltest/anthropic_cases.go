package modeltest

import (
	"time"

	"github.com/agentrt/agentrt/model"
)

// anthropicCases are the Messages API cases. Usage is agentrt's: input
// counts cache writes and reads too, CachedTokens the reads.
func anthropicCases() []Case {
	return []Case{
		// Recorded.
		{Name: "stream-text", Format: Anthropic, File: "anthropic-messages-stream-text.sse",
			Want: text("Hello there!", model.FinishStop, model.Usage{InputTokens: 11, OutputTokens: 6})},
		{Name: "stream-text-then-tool-use", Format: Anthropic, File: "anthropic-messages-stream-text-then-tool-use.sse",
			Want: calls("I'll check the current weather in Paris for you.", model.FinishToolCalls, model.Usage{InputTokens: 377, OutputTokens: 65},
				call("toolu_01NRLabsLyVHZPKxbKvkfSMn", "get_weather", `{"location": "Paris"}`))},

		// Written by hand: failure modes and what real replies also hold.
		{Name: "generate-text-and-tool-use", Format: Anthropic, File: "synthetic-anthropic-message-text-and-tool-use.json", Generate: true,
			Want: calls("I'll look up the weather in New York.", model.FinishToolCalls,
				model.Usage{InputTokens: 412 + 1024, CachedTokens: 1024, OutputTokens: 71},
				call("toolu_01A09q90qw90lq917835lq9", "get_weather", `{"city":"New York"}`))},
		{Name: "stream-cut-before-message-stop", Format: Anthropic, File: "synthetic-anthropic-stream-cut-no-message-stop.sse",
			WantErr: model.CodeStreamIncomplete, WantRecoverable: true, WantErrText: "message_stop"},
		{Name: "stream-error-event-overloaded", Format: Anthropic, File: "synthetic-anthropic-stream-error-event-overloaded.sse",
			WantErr: model.CodeServer, WantRecoverable: true, WantErrText: "Overloaded"},
		{Name: "stream-max-tokens-in-tool-input", Format: Anthropic, File: "synthetic-anthropic-stream-max-tokens-in-tool-input.sse",
			// Kept as it came: the runtime tells the model its arguments
			// were cut off; nothing is guessed.
			Want: calls("I'll write the file.", model.FinishLength, model.Usage{InputTokens: 50, OutputTokens: 16},
				call("toolu_01LenA7kVzq3Jx8bZkYd2Wm", "write_file", `{"path": "notes.txt", "content": "The quick brown`))},
		{Name: "stream-cache-usage", Format: Anthropic, File: "synthetic-anthropic-stream-cache-usage.sse",
			Want: text("Done.", model.FinishStop, model.Usage{InputTokens: 12 + 1500 + 9000, CachedTokens: 9000, OutputTokens: 4})},
		{Name: "stream-two-tool-use-blocks", Format: Anthropic, File: "synthetic-anthropic-stream-two-tool-use-blocks.sse",
			Want: calls("I'll check both.", model.FinishToolCalls, model.Usage{InputTokens: 420, OutputTokens: 96},
				call("toolu_01WxQ3dGm5wK8pYtTz4RbN", "get_weather", `{"city": "Paris"}`),
				call("toolu_01SkR7uJn2vL9qXeUa6PcM", "get_stock_price", `{"ticker": "AAPL"}`))},
		{Name: "stream-thinking-skipped", Format: Anthropic, File: "synthetic-anthropic-stream-thinking-then-text-and-empty-tool-input.sse",
			Want: calls("Let me check the time.", model.FinishToolCalls, model.Usage{InputTokens: 88, OutputTokens: 61},
				call("toolu_01TmK4hB8sYw2NcVx5QeLr", "get_time", `{}`))},
		{Name: "error-529-overloaded", Format: Anthropic, File: "synthetic-anthropic-error-529-overloaded.json",
			WantErr: model.CodeServer, WantRecoverable: true, WantErrText: "Overloaded"},
		{Name: "generate-error-529-overloaded", Format: Anthropic, File: "synthetic-anthropic-error-529-overloaded.json", Generate: true,
			WantErr: model.CodeServer, WantRecoverable: true, WantErrText: "Overloaded"},
		{Name: "error-429-retry-after", Format: Anthropic, File: "synthetic-anthropic-error-429-rate-limit-retry-after.json",
			WantErr: model.CodeRateLimited, WantRecoverable: true, WantRetryAfter: 20 * time.Second, WantErrText: "rate limit"},
		{Name: "error-401-authentication", Format: Anthropic, File: "synthetic-anthropic-error-401-authentication.json",
			WantErr: model.CodeAuth, WantErrText: "invalid x-api-key"},
		{Name: "error-400-prompt-too-long", Format: Anthropic, File: "synthetic-anthropic-error-400-prompt-too-long.json",
			WantErr: model.CodeContextLength, WantErrText: "prompt is too long"},
		{Name: "error-413-request-too-large", Format: Anthropic, File: "synthetic-anthropic-error-413-request-too-large.json",
			WantErr: model.CodeContextLength, WantErrText: "maximum allowed number of bytes"},
		{Name: "error-502-html", Format: Anthropic, File: "synthetic-anthropic-error-502-html-proxy.json",
			WantErr: model.CodeServer, WantRecoverable: true, WantErrText: "502: Bad gateway"},
	}
}
