package anthropic_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	sdk "github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"
	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/modeltest"
)

// sdkFinish is what our client must make of each stop reason the
// oracle reports.
var sdkFinish = map[sdk.StopReason]model.FinishReason{
	"end_turn":      model.FinishStop,
	"stop_sequence": model.FinishStop,
	"pause_turn":    model.FinishStop,
	"max_tokens":    model.FinishLength,
	"tool_use":      model.FinishToolCalls,
	"refusal":       model.FinishContentFilter,
}

// oracleCall is a tool call as both sides see it; Input is decoded so
// that the comparison is of JSON values, not of their spelling.
type oracleCall struct {
	ID, Name string
	Input    any
}

type oracleReply struct {
	Text   string
	Calls  []oracleCall
	Finish model.FinishReason
	Usage  model.Usage
}

// TestOracle streams every successful recorded or synthetic stream with
// the official SDK too, and checks that both clients assemble the same
// reply.
func TestOracle(t *testing.T) {
	n := 0
	for _, c := range modeltest.Cases(modeltest.Anthropic) {
		if c.Generate || c.WantErr != "" || !strings.HasSuffix(c.File, ".sse") {
			continue
		}
		n++
		t.Run(c.Name, func(t *testing.T) {
			t.Parallel()
			srv := modeltest.Serve(t, c)
			want := sdkReply(t, srv.URL)
			resp, err := modeltest.Collect(newModel(t, srv.URL+"/v1").Stream(context.Background(), modeltest.Request()))
			if err != nil {
				t.Fatal(err)
			}
			got := oracleReply{Text: resp.Message.Text(), Finish: resp.FinishReason, Usage: resp.Usage}
			for _, tc := range resp.Message.ToolCalls {
				oc := oracleCall{ID: tc.ID, Name: tc.Name}
				if err := json.Unmarshal(tc.Arguments, &oc.Input); err != nil {
					// Cut off (max_tokens): we keep the fragment, the SDK
					// empties it. That difference is by design.
					oc.Input = map[string]any{}
				}
				got.Calls = append(got.Calls, oc)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("%s: ours differs from the SDK's (-sdk +ours):\n%s", c.File, diff)
			}
		})
	}
	if n < 5 {
		t.Errorf("only %d streams checked against the SDK", n)
	}
}

// sdkReply streams from the server at base with the official SDK and
// returns what it accumulated.
func sdkReply(t *testing.T, base string) oracleReply {
	t.Helper()
	client := sdk.NewClient(option.WithoutEnvironmentDefaults(), option.WithoutOpenTelemetry(),
		option.WithBaseURL(base+"/"), option.WithAPIKey("sk-ant-test"), option.WithMaxRetries(0))
	stream := client.Messages.NewStreaming(context.Background(), sdk.MessageNewParams{
		Model:     "claude-sonnet-4-5",
		MaxTokens: 256,
		Messages:  []sdk.MessageParam{sdk.NewUserMessage(sdk.NewTextBlock("What's the weather in Paris?"))},
	})
	defer stream.Close()
	var msg sdk.Message
	for stream.Next() {
		if err := msg.Accumulate(stream.Current()); err != nil {
			t.Fatalf("SDK: %v", err)
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatalf("SDK: %v", err)
	}
	var r oracleReply
	for _, b := range msg.Content {
		switch b.Type {
		case "text":
			r.Text += b.Text
		case "tool_use":
			oc := oracleCall{ID: b.ID, Name: b.Name}
			if err := json.Unmarshal(b.Input, &oc.Input); err != nil {
				t.Fatalf("SDK tool input %q: %v", b.Input, err)
			}
			r.Calls = append(r.Calls, oc)
		}
	}
	finish, ok := sdkFinish[msg.StopReason]
	if !ok {
		t.Fatalf("SDK stop reason %q: not in the table", msg.StopReason)
	}
	r.Finish = finish
	u := msg.Usage
	r.Usage = model.Usage{
		InputTokens:  u.InputTokens + u.CacheCreationInputTokens + u.CacheReadInputTokens,
		CachedTokens: u.CacheReadInputTokens,
		OutputTokens: u.OutputTokens,
	}
	return r
}
