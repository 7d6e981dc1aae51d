// Package fakellm is a local stand-in for an OpenAI-compatible server, for
// tests of what sits above the provider clients (the app, the CLI). It
// speaks the real Chat Completions wire format, streamed or not, and
// answers like the demo model: an arithmetic question gets a calculator
// call, then the tool's result gets a sentence quoting it.
package fakellm

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// Server is a fake OpenAI-compatible server.
type Server struct {
	*httptest.Server
	t        testing.TB
	o        Options
	mu       sync.Mutex
	requests []map[string]any // guarded by mu
	holds    []*hold          // requests to hold, first to come first; guarded by mu
}

// hold is a request Hold asked for: arrived closes when it comes, release
// lets it go on.
type hold struct {
	arrived, release chan struct{}
	once             sync.Once
}

// Options change how a Server answers (StartWith).
type Options struct {
	// ToolRounds, when set, scripts a turn of ToolRounds+1 model calls:
	// while the conversation since its last user message holds fewer than
	// ToolRounds tool results, the reply calls the tool "add" with
	// {"a": results, "b": 1}; then it answers in a sentence. (The
	// workload of the server's benchmarks: 4 model calls, 3 tool calls.)
	ToolRounds int
	// Delay is how long each request waits before its answer: a model's
	// time to its first token.
	Delay time.Duration
	// Forget: requests are not kept for Requests (a benchmark makes
	// millions).
	Forget bool
}

// Start starts a server on 127.0.0.1, closed when the test ends. Its base
// URL for clients is URL + "/v1".
func Start(t testing.TB) *Server { return StartWith(t, Options{}) }

// StartWith is Start with options.
func StartWith(t testing.TB, o Options) *Server {
	s := &Server{t: t, o: o}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/chat/completions", s.chat)
	s.Server = httptest.NewServer(mux)
	t.Cleanup(s.Close)
	return s
}

// Hold makes the next request the server receives wait, before any byte
// of its answer is written, until release is called or its client goes
// away (a process killed during the call). arrived is closed once the
// request came and was recorded: a test knows the model call is under
// way. Held requests are released when the test ends, so that the
// server can close.
func (s *Server) Hold() (arrived <-chan struct{}, release func()) {
	h := &hold{arrived: make(chan struct{}), release: make(chan struct{})}
	s.mu.Lock()
	s.holds = append(s.holds, h)
	s.mu.Unlock()
	release = func() { h.once.Do(func() { close(h.release) }) }
	s.t.Cleanup(release) // before Start's Close, which waits for the handlers
	return h.arrived, release
}

// Requests returns the decoded request bodies received so far.
func (s *Server) Requests() []map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]map[string]any(nil), s.requests...)
}

var arithmetic = regexp.MustCompile(`[0-9][0-9+\-*/(). ]*[0-9)]`)

type message struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

// text is a message's text: its content, a string, or the text of its
// content parts (an image or a file counts as "[image]", "[file]").
func (m message) text() string {
	var s string
	if json.Unmarshal(m.Content, &s) == nil {
		return s
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	_ = json.Unmarshal(m.Content, &parts)
	var out []string
	for _, p := range parts {
		switch p.Type {
		case "text":
			out = append(out, p.Text)
		case "image_url":
			out = append(out, "[image]")
		default:
			out = append(out, "["+p.Type+"]")
		}
	}
	return strings.Join(out, " ")
}

func (s *Server) chat(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Model    string    `json:"model"`
		Messages []message `json:"messages"`
		Stream   bool      `json:"stream"`
	}
	var raw map[string]any
	dec := json.NewDecoder(r.Body)
	if err := dec.Decode(&raw); err != nil {
		http.Error(w, `{"error":{"message":"bad JSON","type":"invalid_request_error"}}`, http.StatusBadRequest)
		return
	}
	b, _ := json.Marshal(raw)
	_ = json.Unmarshal(b, &req)
	s.mu.Lock()
	if !s.o.Forget {
		s.requests = append(s.requests, raw)
	}
	var h *hold
	if len(s.holds) > 0 {
		h, s.holds = s.holds[0], s.holds[1:]
	}
	s.mu.Unlock()
	if h != nil {
		close(h.arrived)
		select {
		case <-h.release:
		case <-r.Context().Done():
			return // the client went away: nobody reads an answer
		}
	}
	if len(req.Messages) == 0 {
		http.Error(w, `{"error":{"message":"messages is empty","type":"invalid_request_error"}}`, http.StatusBadRequest)
		return
	}
	if s.o.Delay > 0 {
		t := time.NewTimer(s.o.Delay)
		select {
		case <-t.C:
		case <-r.Context().Done():
			t.Stop()
			return
		}
	}
	last := req.Messages[len(req.Messages)-1]
	text := last.text()
	var content, callID, callName, callArgs string
	callID = "call_fake1"
	results := toolResults(req.Messages)
	switch {
	case s.o.ToolRounds > 0 && results < s.o.ToolRounds:
		callID, callName = fmt.Sprintf("call_fake%d", results+1), "add"
		callArgs = fmt.Sprintf(`{"a":%d,"b":1}`, results)
	case s.o.ToolRounds > 0:
		content = fmt.Sprintf("Done: %d tools called.", results)
	case last.Role == "tool":
		content = "The answer is " + strings.Trim(extractResult(text), `"`) + "."
	case arithmetic.MatchString(text):
		callName = "calculator"
		args, _ := json.Marshal(map[string]string{"expression": strings.TrimSpace(arithmetic.FindString(text))})
		callArgs = string(args)
	default:
		content = "You said: " + text
	}
	if !req.Stream {
		writeCompletion(w, req.Model, content, callID, callName, callArgs)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	flusher := w.(http.Flusher)
	send := func(v any) {
		b, _ := json.Marshal(v)
		fmt.Fprintf(w, "data: %s\n\n", b)
		flusher.Flush()
	}
	chunk := func(delta map[string]any, finish any) map[string]any {
		return map[string]any{"id": "chatcmpl-fake", "object": "chat.completion.chunk", "model": req.Model,
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}}
	}
	send(chunk(map[string]any{"role": "assistant", "content": ""}, nil))
	finish := "stop"
	if callName != "" {
		finish = "tool_calls"
		send(chunk(map[string]any{"tool_calls": []any{map[string]any{"index": 0, "id": callID, "type": "function",
			"function": map[string]any{"name": callName, "arguments": ""}}}}, nil))
		half := len(callArgs) / 2
		for _, part := range []string{callArgs[:half], callArgs[half:]} {
			send(chunk(map[string]any{"tool_calls": []any{map[string]any{"index": 0, "function": map[string]any{"arguments": part}}}}, nil))
		}
	} else {
		for _, word := range strings.SplitAfter(content, " ") {
			send(chunk(map[string]any{"content": word}, nil))
		}
	}
	send(chunk(map[string]any{}, finish))
	send(map[string]any{"id": "chatcmpl-fake", "object": "chat.completion.chunk", "choices": []any{},
		"usage": map[string]any{"prompt_tokens": 20, "completion_tokens": 10, "total_tokens": 30}})
	fmt.Fprint(w, "data: [DONE]\n\n")
}

// toolResults counts the tool results after the last user message.
func toolResults(msgs []message) int {
	n := 0
	for i := len(msgs) - 1; i >= 0 && msgs[i].Role != "user"; i-- {
		if msgs[i].Role == "tool" {
			n++
		}
	}
	return n
}

// extractResult returns the "result" of a calculator's tool result, or
// the whole text.
func extractResult(text string) string {
	var v struct {
		Result json.RawMessage `json:"result"`
	}
	if json.Unmarshal([]byte(text), &v) == nil && len(v.Result) > 0 {
		return string(v.Result)
	}
	return text
}

func writeCompletion(w http.ResponseWriter, modelName, content, callID, callName, callArgs string) {
	msg := map[string]any{"role": "assistant", "content": content}
	finish := "stop"
	if callName != "" {
		finish = "tool_calls"
		msg["content"] = nil
		msg["tool_calls"] = []any{map[string]any{"id": callID, "type": "function",
			"function": map[string]any{"name": callName, "arguments": callArgs}}}
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"id": "chatcmpl-fake", "object": "chat.completion", "model": modelName,
		"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}},
		"usage":   map[string]any{"prompt_tokens": 20, "completion_tokens": 10, "total_tokens": 30}})
}
