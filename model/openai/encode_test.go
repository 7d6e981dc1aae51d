package openai_test

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/model/openai"
	"github.com/agentrt/agentrt/modeltest"
)

// sent is one request as the server saw it.
type sent struct {
	method, path string
	header       http.Header
	raw          []byte
	body         map[string]any
}

// wire answers every request with a minimal reply (streamed or not, as
// asked) and keeps what it was sent. Its client reaches it whatever host
// a URL names: plain connections go to a plain server, TLS ones to a TLS
// server, so that a base URL on api.openai.com stays local.
type wire struct {
	client *http.Client
	reqs   chan sent
}

func newWire(t *testing.T) *wire {
	t.Helper()
	w := &wire{reqs: make(chan sent, 8)}
	h := http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		s := sent{method: r.Method, path: r.URL.Path, header: r.Header.Clone()}
		var err error
		if s.raw, err = io.ReadAll(r.Body); err != nil || json.Unmarshal(s.raw, &s.body) != nil {
			t.Errorf("request body %q is not a JSON object (%v)", s.raw, err)
		}
		w.reqs <- s
		if strings.Contains(r.Header.Get("Accept"), "event-stream") {
			modeltest.WriteResponse(rw, "reply.sse", []byte("data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"ok\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n"))
			return
		}
		modeltest.WriteResponse(rw, "reply.json", []byte(`{"choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}]}`))
	})
	plain := httptest.NewServer(h)
	secure := httptest.NewTLSServer(h)
	t.Cleanup(plain.Close)
	t.Cleanup(secure.Close)
	tr := &http.Transport{
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, network, plain.Listener.Addr().String())
		},
		DialTLSContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			d := tls.Dialer{Config: &tls.Config{InsecureSkipVerify: true}} // the test server's certificate names no real host
			return d.DialContext(ctx, network, secure.Listener.Addr().String())
		},
	}
	t.Cleanup(tr.CloseIdleConnections)
	w.client = &http.Client{Transport: tr}
	return w
}

// model returns a Model for cfg that talks to w.
func (w *wire) model(t *testing.T, cfg openai.Config) *openai.Model {
	t.Helper()
	if cfg.Model == "" {
		cfg.Model = "gpt-test"
	}
	if cfg.BaseURL == "" {
		cfg.BaseURL = "http://llm.test/v1"
	}
	cfg.HTTPClient = w.client
	m, err := openai.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// send makes one call (streamed or not) and returns what the server got.
func (w *wire) send(t *testing.T, m *openai.Model, req *model.Request, stream bool) sent {
	t.Helper()
	var err error
	if stream {
		_, err = modeltest.Collect(m.Stream(context.Background(), req))
	} else {
		_, err = m.Generate(context.Background(), req)
	}
	if err != nil {
		t.Fatalf("call: %v", err)
	}
	select {
	case s := <-w.reqs:
		return s
	default:
		t.Fatal("the server got no request")
		return sent{}
	}
}

// capture sends req streamed with a model for cfg.
func capture(t *testing.T, cfg openai.Config, req *model.Request) sent {
	t.Helper()
	w := newWire(t)
	return w.send(t, w.model(t, cfg), req, true)
}

// decode unmarshals a JSON literal, for comparison with a decoded body.
func decode(t *testing.T, s string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("bad test JSON %s: %v", s, err)
	}
	return v
}

func checkJSON(t *testing.T, what string, got any, want string) {
	t.Helper()
	if diff := cmp.Diff(decode(t, want), got); diff != "" {
		t.Errorf("%s (-want +got):\n%s", what, diff)
	}
}

func user(text string) *model.Request {
	return &model.Request{Messages: []model.Message{model.TextMessage(model.RoleUser, text)}}
}

func TestEncodeMessages(t *testing.T) {
	t.Parallel()
	req := &model.Request{
		System: "Be terse.",
		Messages: []model.Message{
			{Role: model.RoleUser, Parts: []model.Part{{Type: model.PartText, Text: "Weather in "}, {Type: model.PartText, Text: "Paris?"}}},
			{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{
				{ID: "call_1", Name: "get_weather", Arguments: json.RawMessage(`{"city": "Paris"}`)},
				{ID: "call_2", Name: "get_time"}, // no arguments: sent as {}
			}},
			{Role: model.RoleTool, ToolCallID: "call_1", Name: "get_weather", Parts: []model.Part{{Type: model.PartText, Text: `{"temp_c":21}`}}},
			{Role: model.RoleTool, ToolCallID: "call_2", Name: "get_time", IsError: true, Parts: []model.Part{{Type: model.PartText, Text: "no clock"}}},
			{Role: model.RoleAssistant, Parts: []model.Part{{Type: model.PartText, Text: "Let me check."}},
				ToolCalls: []model.ToolCall{{ID: "call_3", Name: "get_weather", Arguments: json.RawMessage(`{"city":"Lyon"}`)}}},
			{Role: model.RoleTool, ToolCallID: "call_3", Parts: []model.Part{{Type: model.PartText, Text: "rain"}}},
			model.TextMessage(model.RoleAssistant, "It rains in Lyon."),
			{Role: model.RoleAssistant}, // nothing at all: an empty text, not null
			model.TextMessage(model.RoleSystem, "Summary so far: weather."),
			model.TextMessage(model.RoleUser, "Thanks"),
		},
	}
	got := capture(t, openai.Config{}, req)
	checkJSON(t, "messages", got.body["messages"], `[
		{"role":"system","content":"Be terse."},
		{"role":"user","content":"Weather in Paris?"},
		{"role":"assistant","content":null,"tool_calls":[
			{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\": \"Paris\"}"}},
			{"id":"call_2","type":"function","function":{"name":"get_time","arguments":"{}"}}]},
		{"role":"tool","tool_call_id":"call_1","content":"{\"temp_c\":21}"},
		{"role":"tool","tool_call_id":"call_2","content":"no clock"},
		{"role":"assistant","content":"Let me check.","tool_calls":[
			{"id":"call_3","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Lyon\"}"}}]},
		{"role":"tool","tool_call_id":"call_3","content":"rain"},
		{"role":"assistant","content":"It rains in Lyon."},
		{"role":"assistant","content":""},
		{"role":"system","content":"Summary so far: weather."},
		{"role":"user","content":"Thanks"}
	]`)
	if got.body["model"] != "gpt-test" {
		t.Errorf("model %v, want gpt-test", got.body["model"])
	}
	if got.method != http.MethodPost || got.path != "/v1/chat/completions" {
		t.Errorf("%s %s, want POST /v1/chat/completions", got.method, got.path)
	}
}

func TestEncodeNoSystem(t *testing.T) {
	t.Parallel()
	got := capture(t, openai.Config{}, user("hi"))
	checkJSON(t, "messages", got.body["messages"], `[{"role":"user","content":"hi"}]`)
}

func TestEncodeModelOverride(t *testing.T) {
	t.Parallel()
	req := user("hi")
	req.Model = "gpt-other"
	if got := capture(t, openai.Config{}, req); got.body["model"] != "gpt-other" {
		t.Errorf("model %v, want the request's gpt-other", got.body["model"])
	}
}

func TestEncodeTools(t *testing.T) {
	t.Parallel()
	req := user("hi")
	req.Tools = []model.ToolSpec{
		{Name: "get_weather", Description: "Current weather", InputSchema: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`)},
		{Name: "ping"}, // no schema: an object without properties
	}
	got := capture(t, openai.Config{}, req)
	checkJSON(t, "tools", got.body["tools"], `[
		{"type":"function","function":{"name":"get_weather","description":"Current weather",
			"parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}},
		{"type":"function","function":{"name":"ping","parameters":{"type":"object","properties":{}}}}
	]`)
	if _, ok := got.body["tool_choice"]; ok {
		t.Errorf("tool_choice %v sent, want none for the zero ToolChoice", got.body["tool_choice"])
	}
}

func TestEncodeToolChoice(t *testing.T) {
	t.Parallel()
	tests := []struct {
		choice model.ToolChoice
		want   string
	}{
		{model.ToolChoice{Mode: model.ToolChoiceAuto}, `"auto"`},
		{model.ToolChoice{Mode: model.ToolChoiceNone}, `"none"`},
		{model.ToolChoice{Mode: model.ToolChoiceRequired}, `"required"`},
		{model.ToolChoice{Mode: model.ToolChoiceTool, Name: "get_weather"}, `{"type":"function","function":{"name":"get_weather"}}`},
	}
	for _, tt := range tests {
		t.Run(string(tt.choice.Mode), func(t *testing.T) {
			t.Parallel()
			req := user("hi")
			req.Tools = []model.ToolSpec{{Name: "get_weather"}}
			req.ToolChoice = tt.choice
			checkJSON(t, "tool_choice", capture(t, openai.Config{}, req).body["tool_choice"], tt.want)
		})
	}
	t.Run("without tools", func(t *testing.T) {
		t.Parallel()
		// OpenAI rejects a tool_choice without tools: none is sent.
		req := user("hi")
		req.ToolChoice = model.ToolChoice{Mode: model.ToolChoiceRequired}
		if got := capture(t, openai.Config{}, req).body; got["tool_choice"] != nil || got["tools"] != nil {
			t.Errorf("tools %v, tool_choice %v sent without tools", got["tools"], got["tool_choice"])
		}
	})
}

func TestEncodeMaxTokens(t *testing.T) {
	t.Parallel()
	yes, no := true, false
	tests := []struct {
		name    string
		cfg     openai.Config
		wantKey string
	}{
		{"compatible server", openai.Config{BaseURL: "http://localhost:11434/v1"}, "max_tokens"},
		{"openai by default", openai.Config{BaseURL: ""}, "max_completion_tokens"},
		{"openai explicit", openai.Config{BaseURL: "https://api.openai.com/v1"}, "max_completion_tokens"},
		{"openai overridden", openai.Config{BaseURL: "https://api.openai.com/v1", MaxCompletionTokens: &no}, "max_tokens"},
		{"compatible overridden", openai.Config{BaseURL: "https://openrouter.ai/api/v1", MaxCompletionTokens: &yes}, "max_completion_tokens"},
		{"a host merely like openai's", openai.Config{BaseURL: "https://api.openai.com.proxy.test/v1"}, "max_tokens"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			w := newWire(t)
			m := w.model(t, tt.cfg)
			if tt.cfg.BaseURL == "" {
				// w.model fills in a local URL; New's default is the point here.
				cfg := tt.cfg
				cfg.Model, cfg.HTTPClient = "gpt-test", w.client
				var err error
				if m, err = openai.New(cfg); err != nil {
					t.Fatal(err)
				}
			}
			req := user("hi")
			req.MaxTokens = 256
			got := w.send(t, m, req, true).body
			other := "max_tokens"
			if tt.wantKey == other {
				other = "max_completion_tokens"
			}
			if got[tt.wantKey] != 256.0 || got[other] != nil {
				t.Errorf("%s=%v %s=%v, want only %s=256", tt.wantKey, got[tt.wantKey], other, got[other], tt.wantKey)
			}
		})
	}
	t.Run("zero is not sent", func(t *testing.T) {
		t.Parallel()
		got := capture(t, openai.Config{}, user("hi")).body
		if got["max_tokens"] != nil || got["max_completion_tokens"] != nil {
			t.Errorf("a token limit was sent for MaxTokens 0: %v", got)
		}
	})
}

func TestEncodeTemperature(t *testing.T) {
	t.Parallel()
	for _, temp := range []float64{0, 0.7, 1, 2, 1e-7} {
		req := user("hi")
		req.Temperature = &temp
		got := capture(t, openai.Config{}, req)
		if v, ok := got.body["temperature"]; !ok || v != temp {
			t.Errorf("temperature %v (present %v) in %s, want %v", v, ok, got.raw, temp)
		}
	}
	if got := capture(t, openai.Config{}, user("hi")); got.body["temperature"] != nil {
		t.Errorf("temperature %v sent without one", got.body["temperature"])
	}
}

func TestEncodeResponseFormat(t *testing.T) {
	t.Parallel()
	schema := json.RawMessage(`{"type":"object","properties":{"a":{"type":"integer"}}}`)
	tests := []struct {
		name string
		rf   model.ResponseFormat
		want string
	}{
		{"json_schema", model.ResponseFormat{Type: "json_schema", Name: "answer", Schema: schema, Strict: true},
			`{"type":"json_schema","json_schema":{"name":"answer","schema":{"type":"object","properties":{"a":{"type":"integer"}}},"strict":true}}`},
		{"json_schema unnamed, not strict", model.ResponseFormat{Type: "json_schema", Schema: schema},
			`{"type":"json_schema","json_schema":{"name":"response","schema":{"type":"object","properties":{"a":{"type":"integer"}}}}}`},
		{"json_object", model.ResponseFormat{Type: "json_object"}, `{"type":"json_object"}`},
		{"text", model.ResponseFormat{Type: "text"}, `{"type":"text"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			req := user("hi")
			req.ResponseFormat = &tt.rf
			checkJSON(t, "response_format", capture(t, openai.Config{}, req).body["response_format"], tt.want)
		})
	}
}

func TestEncodeStream(t *testing.T) {
	t.Parallel()
	w := newWire(t)
	streamed := w.send(t, w.model(t, openai.Config{}), user("hi"), true).body
	if streamed["stream"] != true {
		t.Errorf("stream %v, want true", streamed["stream"])
	}
	checkJSON(t, "stream_options", streamed["stream_options"], `{"include_usage":true}`)

	noUsage := w.send(t, w.model(t, openai.Config{NoStreamUsage: true}), user("hi"), true).body
	if noUsage["stream"] != true || noUsage["stream_options"] != nil {
		t.Errorf("NoStreamUsage: stream %v, stream_options %v; want true and none", noUsage["stream"], noUsage["stream_options"])
	}

	whole := w.send(t, w.model(t, openai.Config{}), user("hi"), false).body
	if whole["stream"] != nil || whole["stream_options"] != nil {
		t.Errorf("Generate: stream %v, stream_options %v; want neither", whole["stream"], whole["stream_options"])
	}
}

func TestEncodeHeaders(t *testing.T) {
	t.Parallel()
	w := newWire(t)
	m := w.model(t, openai.Config{APIKey: "sk-secret", Organization: "org-1", Project: "proj-1",
		Headers: map[string]string{"X-Title": "agentrt", "http-referer": "https://example.test"}})
	for _, stream := range []bool{true, false} {
		h := w.send(t, m, user("hi"), stream).header
		accept := "application/json"
		if stream {
			accept = "text/event-stream"
		}
		want := map[string]string{
			"Authorization":       "Bearer sk-secret",
			"Openai-Organization": "org-1",
			"Openai-Project":      "proj-1",
			"X-Title":             "agentrt",
			"Http-Referer":        "https://example.test",
			"Accept":              accept,
			"Content-Type":        "application/json",
		}
		for k, v := range want {
			if got := h.Values(k); len(got) != 1 || got[0] != v {
				t.Errorf("stream=%v: header %s: %q, want [%q]", stream, k, got, v)
			}
		}
	}

	h := w.send(t, w.model(t, openai.Config{}), user("hi"), true).header
	for _, k := range []string{"Authorization", "Openai-Organization", "Openai-Project"} {
		if v, ok := h[k]; ok {
			t.Errorf("header %s: %q sent without its setting", k, v)
		}
	}
}

// awkward are strings an encoder gets wrong: quotes, backslashes, control
// characters, invalid UTF-8, separators JavaScript chokes on, HTML.
var awkward = []string{
	`say "hi" \ back\slash`,
	"line\nbreak\r\ncrlf\ttab",
	"\x00\x01\x07\x08\x0b\x0c\x1b\x1f\x7f",
	"bad \xff\xfe utf-8 \xc3 cut \xe2\x82",
	"sep\u2028ara\u2029tors",
	"<script>&amp;</script>",
	"emoji 😀, é, 日本語, \ufffd",
	"\"\\/\b\f",
	"",
}

// roundTrip is what encoding/json makes of s, there and back.
func roundTrip(t *testing.T, s string) string {
	t.Helper()
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	var back string
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	return back
}

func TestEncodeStrings(t *testing.T) {
	t.Parallel()
	for _, s := range awkward {
		t.Run("", func(t *testing.T) {
			t.Parallel()
			req := &model.Request{
				System: "s" + s, // an empty system prompt is not sent
				Messages: []model.Message{
					model.TextMessage(model.RoleUser, s),
					{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{{ID: s, Name: s, Arguments: json.RawMessage(s)}}},
					{Role: model.RoleTool, ToolCallID: "id" + s, Parts: []model.Part{{Type: model.PartText, Text: s}}},
				},
				Tools:          []model.ToolSpec{{Name: s, Description: "d" + s}},
				ToolChoice:     model.ToolChoice{Mode: model.ToolChoiceTool, Name: "t" + s},
				ResponseFormat: &model.ResponseFormat{Type: "json_schema", Name: "n" + s, Schema: json.RawMessage(`{}`)},
			}
			got := capture(t, openai.Config{}, req)
			if !json.Valid(got.raw) {
				t.Fatalf("body is not valid JSON: %q", got.raw)
			}
			var v struct {
				Messages []struct {
					Content    *string `json:"content"`
					ToolCallID string  `json:"tool_call_id"`
					ToolCalls  []struct {
						ID       string `json:"id"`
						Function struct{ Name, Arguments string }
					} `json:"tool_calls"`
				}
				Tools []struct {
					Function struct{ Name, Description string }
				}
				ToolChoice struct {
					Function struct{ Name string }
				} `json:"tool_choice"`
				ResponseFormat struct {
					JSONSchema struct{ Name string } `json:"json_schema"`
				} `json:"response_format"`
			}
			if err := json.Unmarshal(got.raw, &v); err != nil {
				t.Fatal(err)
			}
			want := roundTrip(t, s)
			args := want
			if s == "" {
				args = "{}"
			}
			c := v.Messages[2].ToolCalls[0]
			for _, g := range []struct{ what, got, want string }{
				{"system", *v.Messages[0].Content, roundTrip(t, "s"+s)},
				{"user", *v.Messages[1].Content, want},
				{"call id", c.ID, want},
				{"call name", c.Function.Name, want},
				{"call arguments", c.Function.Arguments, args},
				{"tool_call_id", v.Messages[3].ToolCallID, roundTrip(t, "id"+s)},
				{"tool result", *v.Messages[3].Content, want},
				{"tool name", v.Tools[0].Function.Name, want},
				{"tool description", v.Tools[0].Function.Description, roundTrip(t, "d"+s)},
				{"tool choice", v.ToolChoice.Function.Name, roundTrip(t, "t"+s)},
				{"schema name", v.ResponseFormat.JSONSchema.Name, roundTrip(t, "n"+s)},
			} {
				if g.got != g.want {
					t.Errorf("%s: %q, want %q", g.what, g.got, g.want)
				}
			}
			if strings.ContainsRune(s, '\u2028') && strings.ContainsRune(string(got.raw), '\u2028') {
				t.Errorf("U+2028 sent unescaped: %q", got.raw)
			}
		})
	}
}

func TestEncodeBadInput(t *testing.T) {
	t.Parallel()
	valid := func() *model.Request { return user("hi") }
	tests := []struct {
		name string
		req  func() *model.Request
		want string
	}{
		{"unknown role", func() *model.Request {
			return &model.Request{Messages: []model.Message{model.TextMessage("developer", "hi")}}
		}, `unknown role "developer"`},
		{"empty role", func() *model.Request {
			return &model.Request{Messages: []model.Message{model.TextMessage("", "hi")}}
		}, "unknown role"},
		{"tool message without tool_call_id", func() *model.Request {
			r := valid()
			r.Messages = append(r.Messages, model.Message{Role: model.RoleTool, Name: "x", Parts: []model.Part{{Type: model.PartText, Text: "r"}}})
			return r
		}, "message 1: a tool message without tool_call_id"},
		{"invalid tool schema", func() *model.Request {
			r := valid()
			r.Tools = []model.ToolSpec{{Name: "t", InputSchema: json.RawMessage(`{"type":`)}}
			return r
		}, `tool "t": input schema is not valid JSON`},
		{"unknown tool choice", func() *model.Request {
			r := valid()
			r.Tools = []model.ToolSpec{{Name: "t"}}
			r.ToolChoice = model.ToolChoice{Mode: "any"}
			return r
		}, `unknown tool choice "any"`},
		{"unknown response format", func() *model.Request {
			r := valid()
			r.ResponseFormat = &model.ResponseFormat{Type: "xml"}
			return r
		}, `unknown response format "xml"`},
		{"empty response format type", func() *model.Request {
			r := valid()
			r.ResponseFormat = &model.ResponseFormat{}
			return r
		}, "unknown response format"},
		{"json_schema without a schema", func() *model.Request {
			r := valid()
			r.ResponseFormat = &model.ResponseFormat{Type: "json_schema"}
			return r
		}, "schema is not valid JSON"},
		{"json_schema with a bad schema", func() *model.Request {
			r := valid()
			r.ResponseFormat = &model.ResponseFormat{Type: "json_schema", Schema: json.RawMessage(`{x}`)}
			return r
		}, "schema is not valid JSON"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			w := newWire(t)
			m := w.model(t, openai.Config{})
			_, err := modeltest.Collect(m.Stream(context.Background(), tt.req()))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Stream: error %v, want one saying %q", err, tt.want)
			}
			_, err = m.Generate(context.Background(), tt.req())
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Generate: error %v, want one saying %q", err, tt.want)
			}
			select {
			case s := <-w.reqs:
				t.Errorf("a request was sent: %s", s.raw)
			default:
			}
		})
	}
}

func TestNewBadConfig(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		cfg  openai.Config
		want string
	}{
		{"no model", openai.Config{}, "no model name"},
		{"blank model", openai.Config{Model: " \t"}, "no model name"},
		{"ftp", openai.Config{Model: "m", BaseURL: "ftp://example.test/v1"}, "base URL"},
		{"no scheme", openai.Config{Model: "m", BaseURL: "api.openai.com/v1"}, "base URL"},
		{"host:port without scheme", openai.Config{Model: "m", BaseURL: "localhost:11434"}, "base URL"},
		{"no host", openai.Config{Model: "m", BaseURL: "http:///v1"}, "base URL"},
		{"only a scheme", openai.Config{Model: "m", BaseURL: "https://"}, "base URL"},
		{"garbage", openai.Config{Model: "m", BaseURL: "::not a url::"}, "base URL"},
		{"control character", openai.Config{Model: "m", BaseURL: "http://host\x7f/v1"}, "base URL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m, err := openai.New(tt.cfg)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("New(%+v) = %v, %v; want an error saying %q", tt.cfg, m, err, tt.want)
			}
		})
	}
}

func TestNewName(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ cfg openai.Config }{{openai.Config{Model: "gpt-4o"}}, {openai.Config{Model: "gpt-4o", Name: "fast"}}} {
		m, err := openai.New(tt.cfg)
		if err != nil {
			t.Fatal(err)
		}
		want := tt.cfg.Name
		if want == "" {
			want = tt.cfg.Model
		}
		if m.Name() != want {
			t.Errorf("Name() = %q, want %q", m.Name(), want)
		}
	}
}

func TestEncodeBaseURLSlash(t *testing.T) {
	t.Parallel()
	w := newWire(t)
	if got := w.send(t, w.model(t, openai.Config{BaseURL: "http://llm.test/v1/"}), user("hi"), true); got.path != "/v1/chat/completions" {
		t.Errorf("path %s, want /v1/chat/completions", got.path)
	}
}
