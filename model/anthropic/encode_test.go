package anthropic_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/model/anthropic"
	"github.com/agentrt/agentrt/modeltest"
)

// captured is a request as the server saw it.
type captured struct {
	path   string
	header http.Header
	body   []byte
}

// captureServer answers every request with a one-word reply (streamed
// when the request asks) and hands the request over on the channel.
func captureServer(t *testing.T) (*httptest.Server, <-chan captured) {
	t.Helper()
	ch := make(chan captured, 8)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		ch <- captured{path: r.URL.Path, header: r.Header.Clone(), body: body}
		var v struct {
			Stream bool `json:"stream"`
		}
		_ = json.Unmarshal(body, &v)
		if v.Stream {
			modeltest.WriteResponse(w, "reply.sse", []byte("event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":1,\"output_tokens\":1}}}\n\n"+
				"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n"+
				"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"ok\"}}\n\n"+
				"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":2}}\n\n"+
				"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"))
			return
		}
		modeltest.WriteResponse(w, "reply.json", []byte(`{"type":"message","content":[{"type":"text","text":"ok"}],"stop_reason":"end_turn","usage":{"input_tokens":1,"output_tokens":2}}`))
	}))
	t.Cleanup(srv.Close)
	return srv, ch
}

func user(s string) model.Message { return model.TextMessage(model.RoleUser, s) }

func TestEncode(t *testing.T) {
	t.Parallel()
	temp := 0.5
	weather := model.ToolSpec{Name: "get_weather", Description: "Current weather", InputSchema: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}}}`)}
	noSchema := model.ToolSpec{Name: "now"}
	tests := []struct {
		name string
		cfg  anthropic.Config
		req  model.Request
		want string
	}{
		{
			name: "minimal: max_tokens defaults",
			req:  model.Request{Messages: []model.Message{user("Hi")}},
			want: `{"model":"claude-test","max_tokens":4096,"messages":[{"role":"user","content":[{"type":"text","text":"Hi"}]}]}`,
		},
		{
			name: "configured max_tokens, request's model",
			cfg:  anthropic.Config{DefaultMaxTokens: 1000},
			req:  model.Request{Model: "claude-other", Messages: []model.Message{user("Hi")}},
			want: `{"model":"claude-other","max_tokens":1000,"messages":[{"role":"user","content":[{"type":"text","text":"Hi"}]}]}`,
		},
		{
			name: "request's max_tokens and temperature",
			req:  model.Request{MaxTokens: 77, Temperature: &temp, Messages: []model.Message{user("Hi")}},
			want: `{"model":"claude-test","max_tokens":77,"temperature":0.5,"messages":[{"role":"user","content":[{"type":"text","text":"Hi"}]}]}`,
		},
		{
			name: "system prompt and system messages joined",
			req: model.Request{System: "Say \"hi\".\n", Messages: []model.Message{
				model.TextMessage(model.RoleSystem, "Summary:\tearlier turns"),
				user("Hi"),
				model.TextMessage(model.RoleSystem, ""),
				model.TextMessage(model.RoleSystem, "Be brief <always> & kind"),
			}},
			want: `{"model":"claude-test","max_tokens":4096,"system":"Say \"hi\".\n\n\nSummary:\tearlier turns\n\nBe brief <always> & kind",
				"messages":[{"role":"user","content":[{"type":"text","text":"Hi"}]}]}`,
		},
		{
			name: "system messages only",
			req:  model.Request{Messages: []model.Message{model.TextMessage(model.RoleSystem, "S"), user("Hi")}},
			want: `{"model":"claude-test","max_tokens":4096,"system":"S","messages":[{"role":"user","content":[{"type":"text","text":"Hi"}]}]}`,
		},
		{
			name: "tool calls and results: one user turn after the calls",
			req: model.Request{Messages: []model.Message{
				user("Weather in Paris and the time?"),
				{Role: model.RoleAssistant, Parts: []model.Part{{Type: model.PartText, Text: ""}, {Type: model.PartText, Text: "Checking."}}, ToolCalls: []model.ToolCall{
					{ID: "toolu_1", Name: "get_weather", Arguments: json.RawMessage(` {"city":"Paris"} `)},
					{ID: "toolu_2", Name: "now"},
					{ID: "toolu_3", Name: "write", Arguments: json.RawMessage(`{"path":"a.txt","content":"cut sh`)},
				}},
				{Role: model.RoleTool, ToolCallID: "toolu_1", Name: "get_weather", Parts: []model.Part{{Type: model.PartText, Text: `{"temp_c":21}`}}},
				{Role: model.RoleTool, ToolCallID: "toolu_2", Name: "now"},
				{Role: model.RoleTool, ToolCallID: "toolu_3", Name: "write", IsError: true, Parts: []model.Part{{Type: model.PartText, Text: "arguments cut off"}}},
				user("Thanks."),
				{Role: model.RoleAssistant}, // nothing said: left out
				user("And tomorrow?"),
			}},
			want: `{"model":"claude-test","max_tokens":4096,"messages":[
				{"role":"user","content":[{"type":"text","text":"Weather in Paris and the time?"}]},
				{"role":"assistant","content":[
					{"type":"text","text":"Checking."},
					{"type":"tool_use","id":"toolu_1","name":"get_weather","input":{"city":"Paris"}},
					{"type":"tool_use","id":"toolu_2","name":"now","input":{}},
					{"type":"tool_use","id":"toolu_3","name":"write","input":{}}]},
				{"role":"user","content":[
					{"type":"tool_result","tool_use_id":"toolu_1","content":"{\"temp_c\":21}"},
					{"type":"tool_result","tool_use_id":"toolu_2"},
					{"type":"tool_result","tool_use_id":"toolu_3","content":"arguments cut off","is_error":true},
					{"type":"text","text":"Thanks."},
					{"type":"text","text":"And tomorrow?"}]}]}`,
		},
		{
			name: "tools, default choice",
			req:  model.Request{Messages: []model.Message{user("Hi")}, Tools: []model.ToolSpec{weather, noSchema}},
			want: `{"model":"claude-test","max_tokens":4096,"messages":[{"role":"user","content":[{"type":"text","text":"Hi"}]}],
				"tools":[{"name":"get_weather","description":"Current weather","input_schema":{"type":"object","properties":{"city":{"type":"string"}}}},
					{"name":"now","input_schema":{"type":"object","properties":{}}}]}`,
		},
		{
			name: "tool choice auto",
			req:  model.Request{Messages: []model.Message{user("Hi")}, Tools: []model.ToolSpec{noSchema}, ToolChoice: model.ToolChoice{Mode: model.ToolChoiceAuto}},
			want: `{"model":"claude-test","max_tokens":4096,"messages":[{"role":"user","content":[{"type":"text","text":"Hi"}]}],
				"tools":[{"name":"now","input_schema":{"type":"object","properties":{}}}],"tool_choice":{"type":"auto"}}`,
		},
		{
			name: "tool choice none",
			req:  model.Request{Messages: []model.Message{user("Hi")}, Tools: []model.ToolSpec{noSchema}, ToolChoice: model.ToolChoice{Mode: model.ToolChoiceNone}},
			want: `{"model":"claude-test","max_tokens":4096,"messages":[{"role":"user","content":[{"type":"text","text":"Hi"}]}],
				"tools":[{"name":"now","input_schema":{"type":"object","properties":{}}}],"tool_choice":{"type":"none"}}`,
		},
		{
			name: "tool choice required is any",
			req:  model.Request{Messages: []model.Message{user("Hi")}, Tools: []model.ToolSpec{noSchema}, ToolChoice: model.ToolChoice{Mode: model.ToolChoiceRequired}},
			want: `{"model":"claude-test","max_tokens":4096,"messages":[{"role":"user","content":[{"type":"text","text":"Hi"}]}],
				"tools":[{"name":"now","input_schema":{"type":"object","properties":{}}}],"tool_choice":{"type":"any"}}`,
		},
		{
			name: "tool choice by name",
			req:  model.Request{Messages: []model.Message{user("Hi")}, Tools: []model.ToolSpec{noSchema}, ToolChoice: model.ToolChoice{Mode: model.ToolChoiceTool, Name: "now"}},
			want: `{"model":"claude-test","max_tokens":4096,"messages":[{"role":"user","content":[{"type":"text","text":"Hi"}]}],
				"tools":[{"name":"now","input_schema":{"type":"object","properties":{}}}],"tool_choice":{"type":"tool","name":"now"}}`,
		},
		{
			name: "tool choice without tools is left out",
			req:  model.Request{Messages: []model.Message{user("Hi")}, ToolChoice: model.ToolChoice{Mode: model.ToolChoiceRequired}},
			want: `{"model":"claude-test","max_tokens":4096,"messages":[{"role":"user","content":[{"type":"text","text":"Hi"}]}]}`,
		},
		{
			name: "json_schema response format as output_config",
			req: model.Request{Messages: []model.Message{user("Hi")},
				ResponseFormat: &model.ResponseFormat{Type: "json_schema", Name: "x", Schema: json.RawMessage(`{"type":"object"}`)}},
			want: `{"model":"claude-test","max_tokens":4096,"messages":[{"role":"user","content":[{"type":"text","text":"Hi"}]}],
				"output_config":{"format":{"type":"json_schema","schema":{"type":"object"}}}}`,
		},
		{
			name: "text response format sends nothing",
			req:  model.Request{Messages: []model.Message{user("Hi")}, ResponseFormat: &model.ResponseFormat{Type: "text"}},
			want: `{"model":"claude-test","max_tokens":4096,"messages":[{"role":"user","content":[{"type":"text","text":"Hi"}]}]}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv, reqs := captureServer(t)
			cfg := tt.cfg
			cfg.Model, cfg.BaseURL = "claude-test", srv.URL+"/v1"
			m, err := anthropic.New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := m.Generate(context.Background(), &tt.req); err != nil {
				t.Fatal(err)
			}
			got := <-reqs
			if diff := cmp.Diff(decodeJSON(t, []byte(tt.want)), decodeJSON(t, got.body)); diff != "" {
				t.Errorf("request body (-want +got):\n%s\nbody: %s", diff, got.body)
			}
		})
	}
}

func decodeJSON(t *testing.T, b []byte) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
	return v
}

func TestEncodeStream(t *testing.T) {
	t.Parallel()
	srv, reqs := captureServer(t)
	m, err := anthropic.New(anthropic.Config{Model: "claude-test", BaseURL: srv.URL + "/v1/"})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := modeltest.Collect(m.Stream(context.Background(), &model.Request{Messages: []model.Message{user("Hi")}}))
	if err != nil {
		t.Fatal(err)
	}
	if resp.Message.Text() != "ok" {
		t.Errorf("reply %q, want ok", resp.Message.Text())
	}
	got := <-reqs
	want := `{"model":"claude-test","max_tokens":4096,"messages":[{"role":"user","content":[{"type":"text","text":"Hi"}]}],"stream":true}`
	if diff := cmp.Diff(decodeJSON(t, []byte(want)), decodeJSON(t, got.body)); diff != "" {
		t.Errorf("request body (-want +got):\n%s", diff)
	}
	if got.path != "/v1/messages" {
		t.Errorf("path %q, want /v1/messages", got.path)
	}
	if a := got.header.Get("Accept"); a != "text/event-stream" {
		t.Errorf("Accept %q", a)
	}
}

func TestHeaders(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		cfg  anthropic.Config
		want map[string]string // "" means absent
	}{
		{"defaults", anthropic.Config{APIKey: "sk-ant-xyz"},
			map[string]string{"X-Api-Key": "sk-ant-xyz", "Anthropic-Version": "2023-06-01", "Content-Type": "application/json", "Accept": "application/json", "Authorization": ""}},
		{"no key", anthropic.Config{},
			map[string]string{"X-Api-Key": "", "Anthropic-Version": "2023-06-01"}},
		{"version and extra headers", anthropic.Config{APIKey: "k", Version: "2099-01-01",
			Headers: map[string]string{"anthropic-beta": "prompt-caching-2024-07-31", "X-Trace": "t1"}},
			map[string]string{"X-Api-Key": "k", "Anthropic-Version": "2099-01-01", "Anthropic-Beta": "prompt-caching-2024-07-31", "X-Trace": "t1"}},
		{"headers override ours", anthropic.Config{APIKey: "k", Headers: map[string]string{"anthropic-version": "2023-01-01"}},
			map[string]string{"Anthropic-Version": "2023-01-01"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv, reqs := captureServer(t)
			cfg := tt.cfg
			cfg.Model, cfg.BaseURL = "claude-test", srv.URL+"/v1"
			m, err := anthropic.New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := m.Generate(context.Background(), &model.Request{Messages: []model.Message{user("Hi")}}); err != nil {
				t.Fatal(err)
			}
			got := <-reqs
			if got.path != "/v1/messages" {
				t.Errorf("path %q, want /v1/messages", got.path)
			}
			for k, want := range tt.want {
				if v := got.header.Get(k); v != want {
					t.Errorf("header %s = %q, want %q", k, v, want)
				}
			}
		})
	}
}

func TestEncodeBadInput(t *testing.T) {
	t.Parallel()
	tool := model.ToolSpec{Name: "now"}
	tests := []struct {
		name string
		req  model.Request
		want string
	}{
		{"unknown role", model.Request{Messages: []model.Message{{Role: "developer", Parts: []model.Part{{Text: "x"}}}}}, `unknown role "developer"`},
		{"tool message without id", model.Request{Messages: []model.Message{user("Hi"), {Role: model.RoleTool, Parts: []model.Part{{Text: "x"}}}}}, "message 1: a tool message without tool_call_id"},
		{"tool call without id", model.Request{Messages: []model.Message{{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{{Name: "now"}}}}}, "without an id"},
		{"invalid schema", model.Request{Messages: []model.Message{user("Hi")}, Tools: []model.ToolSpec{{Name: "t", InputSchema: json.RawMessage(`{"type":`)}}}, `tool "t": input schema is not valid JSON`},
		{"unknown tool choice", model.Request{Messages: []model.Message{user("Hi")}, Tools: []model.ToolSpec{tool}, ToolChoice: model.ToolChoice{Mode: "some"}}, `unknown tool choice "some"`},
		{"tool choice without a name", model.Request{Messages: []model.Message{user("Hi")}, Tools: []model.ToolSpec{tool}, ToolChoice: model.ToolChoice{Mode: model.ToolChoiceTool}}, "without a tool name"},
		{"json_object", model.Request{Messages: []model.Message{user("Hi")}, ResponseFormat: &model.ResponseFormat{Type: "json_object"}}, "json_object"},
		{"invalid response schema", model.Request{Messages: []model.Message{user("Hi")}, ResponseFormat: &model.ResponseFormat{Type: "json_schema", Schema: json.RawMessage(`{`)}}, "not valid JSON"},
		{"unknown response format", model.Request{Messages: []model.Message{user("Hi")}, ResponseFormat: &model.ResponseFormat{Type: "yaml"}}, `unknown response format "yaml"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv, reqs := captureServer(t)
			m, err := anthropic.New(anthropic.Config{Model: "claude-test", BaseURL: srv.URL + "/v1"})
			if err != nil {
				t.Fatal(err)
			}
			_, genErr := m.Generate(context.Background(), &tt.req)
			_, streamErr := modeltest.Collect(m.Stream(context.Background(), &tt.req))
			for _, err := range []error{genErr, streamErr} {
				if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.HasPrefix(err.Error(), "anthropic: ") {
					t.Errorf("error %v, want one saying %q", err, tt.want)
				}
			}
			select {
			case got := <-reqs:
				t.Errorf("a request was sent: %s", got.body)
			default:
			}
		})
	}
}

func TestNew(t *testing.T) {
	t.Parallel()
	for _, cfg := range []anthropic.Config{
		{},
		{Model: "  "},
		{Model: "m", BaseURL: "api.anthropic.com/v1"},
		{Model: "m", BaseURL: "ftp://api.anthropic.com/v1"},
		{Model: "m", BaseURL: "https:///v1"},
		{Model: "m", BaseURL: "http://[::1"},
		{Model: "m", DefaultMaxTokens: -1},
	} {
		if _, err := anthropic.New(cfg); err == nil {
			t.Errorf("New(%+v) succeeded", cfg)
		}
	}
	m, err := anthropic.New(anthropic.Config{Model: "claude-x"})
	if err != nil {
		t.Fatal(err)
	}
	if m.Name() != "claude-x" {
		t.Errorf("Name %q", m.Name())
	}
	m, err = anthropic.New(anthropic.Config{Model: "claude-x", Name: "main"})
	if err != nil {
		t.Fatal(err)
	}
	if m.Name() != "main" {
		t.Errorf("Name %q", m.Name())
	}
}
