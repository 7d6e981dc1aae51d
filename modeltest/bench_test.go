package modeltest_test

// The provider benchmarks: one complete response per iteration, served
// from loopback by a handler that flushes every event, read by our client
// and by "the floor", a minimal client on net/http, a buffered line reader
// and encoding/json into just the fields it needs, in the same run.
//
//	go test -run '^$' -bench 'BenchmarkProvider' -benchmem -count 10 ./modeltest/

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/model/anthropic"
	"github.com/agentrt/agentrt/model/openai"
	"github.com/agentrt/agentrt/modeltest"
)

// tokens400 returns a synthetic stream of 400 one-token chunks in the
// provider's format, shaped like the recorded ones.
func tokens400(f modeltest.Format) []byte {
	var b bytes.Buffer
	if f == modeltest.Anthropic {
		b.WriteString("event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_bench\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"claude-sonnet-4-20250514\",\"content\":[],\"stop_reason\":null,\"stop_sequence\":null,\"usage\":{\"input_tokens\":25,\"cache_creation_input_tokens\":0,\"cache_read_input_tokens\":0,\"output_tokens\":1,\"service_tier\":\"standard\"}}}\n\n")
		b.WriteString("event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n")
		for i := range 400 {
			fmt.Fprintf(&b, "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\" tok%d\"}}\n\n", i)
		}
		b.WriteString("event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n")
		b.WriteString("event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":400}}\n\n")
		b.WriteString("event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n")
		return b.Bytes()
	}
	const head = `{"id":"chatcmpl-bench","object":"chat.completion.chunk","created":1727346168,"model":"gpt-4o-2024-08-06","system_fingerprint":"fp_5050236cbd","choices":[{"index":0,"delta":`
	b.WriteString("data: " + head + `{"role":"assistant","content":"","refusal":null},"logprobs":null,"finish_reason":null}]}` + "\n\n")
	for i := range 400 {
		fmt.Fprintf(&b, "data: %s{\"content\":\" tok%d\"},\"logprobs\":null,\"finish_reason\":null}]}\n\n", head, i)
	}
	b.WriteString("data: " + head + `{},"logprobs":null,"finish_reason":"stop"}]}` + "\n\n")
	b.WriteString(`data: {"id":"chatcmpl-bench","object":"chat.completion.chunk","created":1727346168,"model":"gpt-4o-2024-08-06","system_fingerprint":"fp_5050236cbd","choices":[],"usage":{"prompt_tokens":25,"completion_tokens":400,"total_tokens":425}}` + "\n\n")
	b.WriteString("data: [DONE]\n\n")
	return b.Bytes()
}

func benchServer(b *testing.B, data []byte) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		modeltest.WriteResponse(w, "x.sse", data)
	}))
	b.Cleanup(srv.Close)
	return srv
}

func BenchmarkProvider(b *testing.B) {
	recorded := func(name string) []byte {
		data, err := fs.ReadFile(modeltest.Files(), name)
		if err != nil {
			b.Fatal(err)
		}
		return data
	}
	for _, bc := range []struct {
		name string
		f    modeltest.Format
		data []byte
	}{
		{"openai-400-tokens", modeltest.OpenAI, tokens400(modeltest.OpenAI)},
		{"openai-parallel-tool-calls", modeltest.OpenAI, recorded("openai-chat-stream-tool-calls-parallel.sse")},
		{"anthropic-400-tokens", modeltest.Anthropic, tokens400(modeltest.Anthropic)},
		{"anthropic-text-then-tool-use", modeltest.Anthropic, recorded("anthropic-messages-stream-text-then-tool-use.sse")},
	} {
		srv := benchServer(b, bc.data)
		client := &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
		b.Cleanup(client.CloseIdleConnections)
		var ours model.Model
		var err error
		if bc.f == modeltest.Anthropic {
			ours, err = anthropic.New(anthropic.Config{BaseURL: srv.URL + "/v1", Model: "claude-sonnet-4-5", APIKey: "k", HTTPClient: client})
		} else {
			ours, err = openai.New(openai.Config{BaseURL: srv.URL + "/v1", Model: "gpt-4o", APIKey: "k", HTTPClient: client})
		}
		if err != nil {
			b.Fatal(err)
		}
		want, err := modeltest.Collect(ours.Stream(context.Background(), modeltest.Request()))
		if err != nil {
			b.Fatal(err)
		}
		b.Run(bc.name+"/floor", func(b *testing.B) {
			fl := &floor{client: client, format: bc.f, url: srv.URL + "/v1"}
			text, n, err := fl.do(context.Background(), modeltest.Request())
			if err != nil || text != want.Message.Text() || n != len(want.Message.ToolCalls) {
				b.Fatalf("floor assembled %q and %d calls (%v), want %q and %d", text, n, err, want.Message.Text(), len(want.Message.ToolCalls))
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, _, err := fl.do(context.Background(), modeltest.Request()); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(bc.name+"/agentrt", func(b *testing.B) {
			var a model.Assembler
			b.ReportAllocs()
			for b.Loop() {
				a.Reset()
				for c, err := range ours.Stream(context.Background(), modeltest.Request()) {
					if err != nil {
						b.Fatal(err)
					}
					a.Add(c)
				}
				if _, err := a.Response(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// floor is the minimal client: encoding/json for the request and for each
// event into just the fields it needs, bufio for the lines.
type floor struct {
	client *http.Client
	format modeltest.Format
	url    string
}

type floorMessage struct {
	Role       string          `json:"role"`
	Content    any             `json:"content"`
	ToolCalls  []floorCallReq  `json:"tool_calls,omitempty"`
	ToolCallID string          `json:"tool_call_id,omitempty"`
	Input      json.RawMessage `json:"-"`
}

type floorCallReq struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// body encodes req as the provider's request, the plain way.
func (f *floor) body(req *model.Request) ([]byte, error) {
	if f.format == modeltest.Anthropic {
		type block struct {
			Type      string          `json:"type"`
			Text      string          `json:"text,omitempty"`
			ID        string          `json:"id,omitempty"`
			Name      string          `json:"name,omitempty"`
			Input     json.RawMessage `json:"input,omitempty"`
			ToolUseID string          `json:"tool_use_id,omitempty"`
			Content   string          `json:"content,omitempty"`
		}
		type msg struct {
			Role    string  `json:"role"`
			Content []block `json:"content"`
		}
		var msgs []msg
		for _, m := range req.Messages {
			switch m.Role {
			case model.RoleUser:
				msgs = append(msgs, msg{"user", []block{{Type: "text", Text: m.Text()}}})
			case model.RoleAssistant:
				var bs []block
				for _, c := range m.ToolCalls {
					bs = append(bs, block{Type: "tool_use", ID: c.ID, Name: c.Name, Input: c.Arguments})
				}
				msgs = append(msgs, msg{"assistant", bs})
			case model.RoleTool:
				msgs = append(msgs, msg{"user", []block{{Type: "tool_result", ToolUseID: m.ToolCallID, Content: m.Text()}}})
			}
		}
		type tool struct {
			Name        string          `json:"name"`
			Description string          `json:"description,omitempty"`
			InputSchema json.RawMessage `json:"input_schema"`
		}
		var tools []tool
		for _, t := range req.Tools {
			tools = append(tools, tool{t.Name, t.Description, t.InputSchema})
		}
		return json.Marshal(struct {
			Model     string  `json:"model"`
			System    string  `json:"system"`
			Messages  []msg   `json:"messages"`
			Tools     []tool  `json:"tools"`
			MaxTokens int     `json:"max_tokens"`
			Stream    bool    `json:"stream"`
			Temp      float64 `json:"temperature"`
		}{"claude-sonnet-4-5", req.System, msgs, tools, req.MaxTokens, true, *req.Temperature})
	}
	msgs := []floorMessage{{Role: "system", Content: req.System}}
	for _, m := range req.Messages {
		fm := floorMessage{Role: string(m.Role), Content: m.Text(), ToolCallID: m.ToolCallID}
		for _, c := range m.ToolCalls {
			var fc floorCallReq
			fc.ID, fc.Type, fc.Function.Name, fc.Function.Arguments = c.ID, "function", c.Name, string(c.Arguments)
			fm.ToolCalls = append(fm.ToolCalls, fc)
		}
		msgs = append(msgs, fm)
	}
	type fn struct {
		Name        string          `json:"name"`
		Description string          `json:"description,omitempty"`
		Parameters  json.RawMessage `json:"parameters"`
	}
	type tool struct {
		Type     string `json:"type"`
		Function fn     `json:"function"`
	}
	var tools []tool
	for _, t := range req.Tools {
		tools = append(tools, tool{"function", fn{t.Name, t.Description, t.InputSchema}})
	}
	return json.Marshal(struct {
		Model         string          `json:"model"`
		Messages      []floorMessage  `json:"messages"`
		Tools         []tool          `json:"tools"`
		MaxTokens     int             `json:"max_tokens"`
		Temperature   float64         `json:"temperature"`
		Stream        bool            `json:"stream"`
		StreamOptions map[string]bool `json:"stream_options"`
	}{"gpt-4o", msgs, tools, req.MaxTokens, *req.Temperature, true, map[string]bool{"include_usage": true}})
}

// do makes one call and returns the text and the number of tool calls.
func (f *floor) do(ctx context.Context, req *model.Request) (string, int, error) {
	body, err := f.body(req)
	if err != nil {
		return "", 0, err
	}
	path := "/chat/completions"
	if f.format == modeltest.Anthropic {
		path = "/messages"
	}
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, f.url+path, bytes.NewReader(body))
	if err != nil {
		return "", 0, err
	}
	hr.Header.Set("Content-Type", "application/json")
	hr.Header.Set("Authorization", "Bearer k")
	resp, err := f.client.Do(hr)
	if err != nil {
		return "", 0, err
	}
	defer resp.Body.Close()
	br := bufio.NewReaderSize(resp.Body, 4096)
	var text strings.Builder
	args := map[int]*strings.Builder{}
	// One value per stream, decoded into again and again: encoding/json
	// reuses its slices; only the strings are new each time.
	var c openAIChunk
	var e anthropicEvent
	for {
		line, err := br.ReadSlice('\n')
		if err != nil {
			if err == io.EOF {
				break
			}
			return "", 0, err
		}
		data, ok := bytes.CutPrefix(line, []byte("data: "))
		if !ok {
			continue
		}
		data = bytes.TrimSpace(data)
		if f.format == modeltest.OpenAI {
			if string(data) == "[DONE]" {
				break
			}
			// encoding/json decodes into the elements it finds past
			// the length without zeroing them: clear them first.
			clear(c.Choices[:cap(c.Choices)])
			c.Choices, c.Usage = c.Choices[:0], nil
			if err := json.Unmarshal(data, &c); err != nil {
				return "", 0, err
			}
			for _, ch := range c.Choices {
				text.WriteString(ch.Delta.Content)
				for _, tc := range ch.Delta.ToolCalls {
					sb := args[tc.Index]
					if sb == nil {
						sb = new(strings.Builder)
						args[tc.Index] = sb
					}
					sb.WriteString(tc.Function.Arguments)
				}
			}
			continue
		}
		e = anthropicEvent{}
		if err := json.Unmarshal(data, &e); err != nil {
			return "", 0, err
		}
		switch e.Type {
		case "content_block_start":
			if e.ContentBlock.Type == "tool_use" {
				args[e.Index] = new(strings.Builder)
			}
		case "content_block_delta":
			text.WriteString(e.Delta.Text)
			if sb := args[e.Index]; sb != nil {
				sb.WriteString(e.Delta.PartialJSON)
			}
		}
		if e.Type == "message_stop" {
			break
		}
	}
	return text.String(), len(args), nil
}

type openAIChunk struct {
	Choices []struct {
		Delta struct {
			Content   string `json:"content"`
			ToolCalls []struct {
				Index    int    `json:"index"`
				ID       string `json:"id"`
				Function struct {
					Name      string `json:"name"`
					Arguments string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"delta"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
	Usage *struct {
		PromptTokens     int `json:"prompt_tokens"`
		CompletionTokens int `json:"completion_tokens"`
	} `json:"usage"`
}

type anthropicEvent struct {
	Type  string `json:"type"`
	Index int    `json:"index"`
	Delta struct {
		Type        string `json:"type"`
		Text        string `json:"text"`
		PartialJSON string `json:"partial_json"`
		StopReason  string `json:"stop_reason"`
	} `json:"delta"`
	ContentBlock struct {
		Type string `json:"type"`
		ID   string `json:"id"`
		Name string `json:"name"`
	} `json:"content_block"`
}
