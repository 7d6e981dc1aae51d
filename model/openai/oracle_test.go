package openai_test

import (
	"context"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/modeltest"
)

// reply is what the oracle compares: the parts of a reply both clients
// can say something about.
type reply struct {
	Text   string // content, then refusal
	Calls  []oracleCall
	Finish string
	Usage  model.Usage // input, output, cached; no cost
}

type oracleCall struct{ ID, Name, Args string }

// sdkLimits are the cases the official SDK's accumulator cannot assemble,
// and why. For these only its finish reason and usage are compared; the
// chunks the SDK decoded, assembled by deltaReply, still check the rest.
var sdkLimits = map[string]string{
	// Ollama and some other servers send each call whole, all under
	// index 0: the accumulator glues them into one call
	// ("get_weatherget_time", both argument objects end to end).
	"stream-whole-calls-under-one-index": "calls sent whole under one index are merged",
	// One chunk has another id ("x") than the first: the accumulator
	// refuses it (AddChunk returns false) and loses its text.
	"stream-utf8-escapes-crlf": "a chunk with a different completion id is rejected",
}

// TestOracle checks that every successful conformance case assembles to
// what the official SDK makes of the same bytes. Differences allowed on
// purpose: the SDK keeps invalid UTF-8 as it came, where we (and
// encoding/json) replace it (see replaceInvalid); finish reasons are
// compared raw, which works because ours spell OpenAI's.
func TestOracle(t *testing.T) {
	var cases []modeltest.Case
	for _, c := range modeltest.Cases(modeltest.OpenAI) {
		if c.Want != nil { // the SDK's errors are not ours to compare
			cases = append(cases, c)
		}
	}
	for _, c := range append(cases, oracleExtras...) {
		t.Run(c.Name, func(t *testing.T) {
			t.Parallel()
			srv := modeltest.Serve(t, c)
			ours := ourReply(t, c, srv.URL+"/v1")
			client := sdk.NewClient(
				option.WithBaseURL(srv.URL+"/v1"),
				option.WithAPIKey("sk-test"),
				option.WithMaxRetries(0),
			)
			params := sdk.ChatCompletionNewParams{
				Model:    "gpt-4o",
				Messages: []sdk.ChatCompletionMessageParamUnion{sdk.UserMessage("What's the weather in Paris?")},
			}
			if c.Generate {
				cc, err := client.Chat.Completions.New(context.Background(), params)
				if err != nil {
					t.Fatalf("SDK: %v", err)
				}
				compare(t, "the SDK's reply", completionReply(t, cc), ours)
				return
			}
			acc, deltas, ok := streamReply(t, client, params)
			// The chunks as the SDK decoded them, assembled here: checks
			// our JSON decoding on every case, whatever the accumulator
			// makes of them.
			compare(t, "the SDK's chunks", deltas, ours)
			if why, limited := sdkLimits[c.Name]; limited {
				t.Logf("the SDK's accumulator cannot assemble this case (%s): only its finish reason and usage are compared", why)
				compare(t, "the SDK's accumulator", reply{Finish: acc.Finish, Usage: acc.Usage}, reply{Finish: ours.Finish, Usage: ours.Usage})
				return
			}
			if !ok {
				t.Fatalf("the SDK's accumulator rejected a chunk of %s; if that is a known limit, add it to sdkLimits", c.File)
			}
			compare(t, "the SDK's accumulator", acc, ours)
		})
	}
}

// oracleExtras cover what the conformance files do not: refusals, cached
// tokens, text and calls in one reply.
var oracleExtras = []modeltest.Case{
	{Name: "extra-stream-refusal-cached", File: "extra.sse", Data: []byte(
		chunkLine(`{"role":"assistant","content":null,"refusal":""}`, "null") +
			chunkLine(`{"refusal":"I can't "}`, "null") +
			chunkLine(`{"refusal":"help with that."}`, "null") +
			chunkLine(`{}`, `"stop"`) +
			`data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[],"usage":{"prompt_tokens":1200,"completion_tokens":7,"total_tokens":1207,"prompt_tokens_details":{"cached_tokens":1024}}}` + "\n\n" +
			"data: [DONE]\n\n")},
	{Name: "extra-stream-text-then-call", File: "extra.sse", Data: []byte(
		chunkLine(`{"role":"assistant","content":"Checking"}`, "null") +
			chunkLine(`{"content":" \"now\"\u2028…"}`, "null") +
			chunkLine(`{"tool_calls":[{"index":0,"id":"call_x","type":"function","function":{"name":"lookup","arguments":""}}]}`, "null") +
			chunkLine(`{"tool_calls":[{"index":0,"function":{"arguments":"{\"q\":"}}]}`, "null") +
			chunkLine(`{"tool_calls":[{"index":0,"function":{"arguments":"\"\\u00e9\\n\"}"}}]}`, "null") +
			chunkLine(`{}`, `"tool_calls"`) +
			"data: [DONE]\n\n")},
	{Name: "extra-generate-refusal-cached", File: "extra.json", Generate: true, Data: []byte(`{"id":"c2","object":"chat.completion","created":1,"model":"gpt-4o",
		"choices":[{"index":0,"message":{"role":"assistant","content":null,"refusal":"No."},"finish_reason":"stop"}],
		"usage":{"prompt_tokens":2048,"completion_tokens":2,"total_tokens":2050,"prompt_tokens_details":{"cached_tokens":1920}}}`)},
	{Name: "extra-generate-length", File: "extra.json", Generate: true, Data: []byte(`{"id":"c3","object":"chat.completion","created":1,"model":"gpt-4o",
		"choices":[{"index":0,"message":{"role":"assistant","content":"Once upon a"},"finish_reason":"length"}],
		"usage":{"prompt_tokens":5,"completion_tokens":3,"total_tokens":8}}`)},
}

// chunkLine is one streamed chunk with the given delta and finish reason.
func chunkLine(delta, finish string) string {
	return `data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{"index":0,"delta":` + delta + `,"finish_reason":` + finish + `}]}` + "\n\n"
}

func ourReply(t *testing.T, c modeltest.Case, baseURL string) reply {
	t.Helper()
	m := newModel(t, baseURL)
	var (
		resp *model.Response
		err  error
	)
	if c.Generate {
		resp, err = m.(model.Generator).Generate(context.Background(), modeltest.Request())
	} else {
		resp, err = modeltest.Collect(m.Stream(context.Background(), modeltest.Request()))
	}
	if err != nil {
		t.Fatal(err)
	}
	r := reply{Text: resp.Message.Text(), Finish: string(resp.FinishReason), Usage: resp.Usage}
	for _, tc := range resp.Message.ToolCalls {
		r.Calls = append(r.Calls, oracleCall{tc.ID, tc.Name, string(tc.Arguments)})
	}
	return r
}

// streamReply streams with the SDK and returns what its accumulator
// assembled, what deltaReply makes of the chunks it decoded, and whether
// the accumulator took every chunk.
func streamReply(t *testing.T, client sdk.Client, params sdk.ChatCompletionNewParams) (acc, deltas reply, ok bool) {
	t.Helper()
	stream := client.Chat.Completions.NewStreaming(context.Background(), params)
	defer stream.Close()
	var (
		a      sdk.ChatCompletionAccumulator
		chunks []sdk.ChatCompletionChunk
	)
	ok = true
	for stream.Next() {
		ch := stream.Current()
		chunks = append(chunks, ch)
		if !a.AddChunk(ch) {
			ok = false
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatalf("SDK: %v", err)
	}
	return completionReply(t, &a.ChatCompletion), deltaReply(chunks), ok
}

func compare(t *testing.T, what string, theirs, ours reply) {
	t.Helper()
	if diff := cmp.Diff(theirs, ours); diff != "" {
		t.Errorf("reply differs from %s (-sdk +ours):\n%s", what, diff)
	}
}

func completionReply(t *testing.T, cc *sdk.ChatCompletion) reply {
	t.Helper()
	if len(cc.Choices) != 1 {
		t.Fatalf("the SDK assembled %d choices, want 1", len(cc.Choices))
	}
	ch := cc.Choices[0]
	r := reply{Text: replaceInvalid(ch.Message.Content + ch.Message.Refusal), Finish: ch.FinishReason, Usage: usage(cc.Usage)}
	for _, tc := range ch.Message.ToolCalls {
		r.Calls = append(r.Calls, oracleCall{tc.ID, tc.Function.Name, tc.Function.Arguments})
	}
	return r
}

func usage(u sdk.CompletionUsage) model.Usage {
	return model.Usage{InputTokens: u.PromptTokens, OutputTokens: u.CompletionTokens, CachedTokens: u.PromptTokensDetails.CachedTokens}
}

// deltaReply assembles the chunks the SDK decoded the way a server that
// sends whole calls under one index means them: a fragment with a new id
// under an index already used starts a new call.
func deltaReply(chunks []sdk.ChatCompletionChunk) reply {
	var (
		r       reply
		text    strings.Builder
		refusal strings.Builder
		calls   []oracleCall
		index   []int64 // the wire index of each call
	)
	for _, ch := range chunks {
		if ch.JSON.Usage.Valid() {
			r.Usage = usage(ch.Usage)
		}
		for _, c := range ch.Choices {
			text.WriteString(c.Delta.Content)
			refusal.WriteString(c.Delta.Refusal)
			if c.FinishReason != "" {
				r.Finish = c.FinishReason
			}
			for _, d := range c.Delta.ToolCalls {
				i := len(calls) - 1
				for ; i >= 0 && index[i] != d.Index; i-- {
				}
				if i < 0 || (d.ID != "" && calls[i].ID != "" && d.ID != calls[i].ID) {
					calls = append(calls, oracleCall{})
					index = append(index, d.Index)
					i = len(calls) - 1
				}
				if d.ID != "" {
					calls[i].ID = d.ID
				}
				calls[i].Name += d.Function.Name
				calls[i].Args += d.Function.Arguments
			}
		}
	}
	r.Text = replaceInvalid(text.String() + refusal.String())
	for _, c := range calls {
		if c.Args == "" {
			c.Args = "{}"
		}
		r.Calls = append(r.Calls, c)
	}
	return r
}

// replaceInvalid replaces each byte of s that is not part of valid UTF-8
// by U+FFFD, as encoding/json's decoder (and ours) does; the SDK's decoder
// keeps such bytes as they came.
func replaceInvalid(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		b.WriteRune(r) // ranging yields RuneError once per bad byte
	}
	return b.String()
}
