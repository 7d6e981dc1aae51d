package openai_test

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	oa "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/agentrt/agentrt/server"
	"github.com/agentrt/agentrt/session"
)

// client is openai-go's client of the fixture's server.
func (f *fixture) client(key string) *oa.Client {
	if key == "" {
		key = "unused"
	}
	c := oa.NewClient(option.WithBaseURL(f.http.URL+"/v1/"), option.WithAPIKey(key), option.WithMaxRetries(0))
	return &c
}

func userMsg(text string) oa.ChatCompletionNewParams {
	return oa.ChatCompletionNewParams{Model: "assistant", Messages: []oa.ChatCompletionMessageParamUnion{oa.UserMessage(text)}}
}

// Each agent is a model: GET /v1/models lists them, and a model that is
// no agent is openai-go's 404 with code model_not_found.
func TestModelsAreTheAgents(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	c := f.client("")
	page, err := c.Models.List(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, m := range page.Data {
		ids = append(ids, m.ID)
	}
	if diff := cmp.Diff([]string{"assistant", "writer"}, ids); diff != "" {
		t.Errorf("models (-want +got):\n%s", diff)
	}
	m, err := c.Models.Get(t.Context(), "writer")
	if err != nil || m.ID != "writer" || m.OwnedBy != "agentrt" {
		t.Errorf("get writer: %+v %v", m, err)
	}
	_, err = c.Chat.Completions.New(t.Context(), oa.ChatCompletionNewParams{Model: "gpt-4o",
		Messages: []oa.ChatCompletionMessageParamUnion{oa.UserMessage("hi")}})
	var apiErr *oa.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusNotFound || apiErr.Code != "model_not_found" ||
		apiErr.Param != "model" || apiErr.Type != "not_found_error" {
		t.Fatalf("unknown model: %v; want 404 model_not_found", err)
	}
}

// A chat completion without a session header starts a new session,
// answers with the agent's reply, and names the session; with the header
// it continues that session, whose history the server keeps.
func TestChatCompletionSessions(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	c := f.client("")
	var resp *http.Response
	got, err := c.Chat.Completions.New(t.Context(), userMsg("hello there"), option.WithResponseInto(&resp))
	if err != nil {
		t.Fatal(err)
	}
	id := sessionOf(t, resp)
	if len(got.Choices) != 1 || got.Choices[0].Message.Content != "echo: hello there" || got.Choices[0].FinishReason != "stop" {
		t.Fatalf("answer %+v; want echo: hello there, stop", got.Choices)
	}
	if got.Usage.PromptTokens != 10 || got.Usage.CompletionTokens != 5 || got.Usage.TotalTokens != 15 || got.Model != "assistant" ||
		!strings.HasPrefix(got.ID, "chatcmpl-") {
		t.Errorf("answer %s %s usage %+v", got.ID, got.Model, got.Usage)
	}

	// The same session: only the new input is sent to it.
	p := userMsg("and again")
	p.Messages = append([]oa.ChatCompletionMessageParamUnion{oa.UserMessage("hello there"), oa.AssistantMessage("echo: hello there")}, p.Messages...)
	got, err = c.Chat.Completions.New(t.Context(), p, option.WithHeader("Agentrt-Session", id), option.WithResponseInto(&resp))
	if err != nil {
		t.Fatal(err)
	}
	if sessionOf(t, resp) != id || got.Choices[0].Message.Content != "echo: and again" {
		t.Fatalf("continued: session %s answer %q", sessionOf(t, resp), got.Choices[0].Message.Content)
	}
	ss, err := f.r.Store().GetSession(t.Context(), id)
	if err != nil || ss.Turn != 2 {
		t.Fatalf("session %s: %+v %v; want its second turn", id, ss, err)
	}

	// No header and a history: a new session that starts from it.
	got, err = c.Chat.Completions.New(t.Context(), p, option.WithResponseInto(&resp))
	if err != nil {
		t.Fatal(err)
	}
	other := sessionOf(t, resp)
	if other == id || got.Choices[0].Message.Content != "echo: and again" {
		t.Fatalf("without the header: session %s (the first was %s), answer %q", other, id, got.Choices[0].Message.Content)
	}
	var types []session.Type
	for ev, err := range f.r.Store().Events(t.Context(), other, 0) {
		if err != nil {
			t.Fatal(err)
		}
		types = append(types, ev.Type)
	}
	if len(types) == 0 || types[0] != session.TypeMessagesImported {
		t.Errorf("new session's log %v: want the history imported first", types)
	}
}

// A streamed completion gives the reply token by token, a last chunk with
// finish_reason, and with include_usage a chunk of usage and no choices;
// openai-go's accumulator assembles it to what the non-streamed one says.
func TestChatCompletionStream(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	c := f.client("")
	p := userMsg("stream this please")
	p.StreamOptions = oa.ChatCompletionStreamOptionsParam{IncludeUsage: oa.Bool(true)}
	var resp *http.Response
	st := c.Chat.Completions.NewStreaming(t.Context(), p, option.WithResponseInto(&resp))
	acc := oa.ChatCompletionAccumulator{}
	var deltas, finishes int
	var usageChunk bool
	for st.Next() {
		ch := st.Current()
		acc.AddChunk(ch)
		if len(ch.Choices) == 0 {
			usageChunk = ch.Usage.TotalTokens == 15
			continue
		}
		if ch.Choices[0].Delta.Content != "" {
			deltas++
		}
		if ch.Choices[0].FinishReason != "" {
			finishes++
		}
	}
	if err := st.Err(); err != nil {
		t.Fatal(err)
	}
	sessionOf(t, resp)
	if got := acc.Choices[0].Message.Content; got != "echo: stream this please" || acc.Choices[0].FinishReason != "stop" {
		t.Errorf("assembled %q %q", got, acc.Choices[0].FinishReason)
	}
	if deltas != 4 || finishes != 1 || !usageChunk {
		t.Errorf("%d text deltas, %d finish chunks, usage chunk %v; want 4 tokens, one finish, the usage", deltas, finishes, usageChunk)
	}
}

// The agent's own tools run on the server: the client sees the answer
// made from the tool's result, not the call.
func TestChatCompletionServerTool(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	got, err := f.client("").Chat.Completions.New(t.Context(), userMsg(`call weather {"city":"Oslo"}`))
	if err != nil {
		t.Fatal(err)
	}
	if m := got.Choices[0].Message; !strings.Contains(m.Content, "sunny in Oslo") || len(m.ToolCalls) != 0 {
		t.Errorf("answer %+v; want the tool's result in the text and no tool call", m)
	}
}

// A run that waits for a person's approval answers with the question as
// the assistant's text and the request in the answer's agentrt field; the
// next message to the session, "approve", answers it and the run goes on,
// streamed to that request.
func TestChatCompletionWaitsForApproval(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	c := f.client("")
	var resp *http.Response
	got, err := c.Chat.Completions.New(t.Context(), userMsg(`call deploy {"env":"prod"}`), option.WithResponseInto(&resp))
	if err != nil {
		t.Fatal(err)
	}
	id := sessionOf(t, resp)
	text := got.Choices[0].Message.Content
	if !strings.Contains(text, "Allow deploy") || !strings.Contains(text, "approve or reject") || got.Choices[0].FinishReason != "stop" {
		t.Fatalf("waiting answer %q", text)
	}
	ext := got.JSON.ExtraFields["agentrt"].Raw()
	if !strings.Contains(ext, `"status":"waiting"`) || !strings.Contains(ext, `"kind":"approval"`) || !strings.Contains(ext, `"request_id":"req_`) {
		t.Errorf("agentrt field %s: want the waiting approval", ext)
	}

	// A reply that is no decision is refused, and the request still waits.
	_, err = c.Chat.Completions.New(t.Context(), userMsg("maybe later"), option.WithHeader("Agentrt-Session", id))
	var apiErr *oa.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusBadRequest || !strings.Contains(apiErr.Message, "approve or reject") {
		t.Fatalf("an unclear answer: %v; want 400 saying what to reply", err)
	}

	p := userMsg("approve")
	p.StreamOptions = oa.ChatCompletionStreamOptionsParam{IncludeUsage: oa.Bool(true)}
	st := c.Chat.Completions.NewStreaming(t.Context(), p, option.WithHeader("Agentrt-Session", id))
	acc := oa.ChatCompletionAccumulator{}
	for st.Next() {
		acc.AddChunk(st.Current())
	}
	if err := st.Err(); err != nil {
		t.Fatal(err)
	}
	if got := acc.Choices[0].Message.Content; !strings.Contains(got, "deployed to prod") {
		t.Errorf("after approval: %q; want the deploy's result", got)
	}
	ss, err := f.r.Store().GetSession(t.Context(), id)
	if err != nil || ss.Status != session.StatusDone {
		t.Errorf("session after approval: %+v %v", ss, err)
	}
}

// A turn that fails is an error in OpenAI's shape: a 500 server_error
// not streamed, and an error event that openai-go raises when streamed.
func TestChatCompletionFailedRun(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	c := f.client("")
	_, err := c.Chat.Completions.New(t.Context(), userMsg("fail"))
	var apiErr *oa.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusInternalServerError || apiErr.Type != "server_error" ||
		!strings.Contains(apiErr.Message, "the model refuses") {
		t.Fatalf("failed run: %v; want a 500 server_error with the model's message", err)
	}
	st := c.Chat.Completions.NewStreaming(t.Context(), userMsg("fail"))
	for st.Next() {
	}
	if err := st.Err(); err == nil || !strings.Contains(err.Error(), "the model refuses") {
		t.Fatalf("failed streamed run: %v; want the run's error", err)
	}
}

// Bad requests are 400s in OpenAI's shape naming the parameter; another
// tenant's session is not found.
func TestChatCompletionBadRequests(t *testing.T) {
	t.Parallel()
	f := newFixture(t, server.Key{Key: "key-a", Tenant: "a"}, server.Key{Key: "key-b", Tenant: "b"})
	var resp *http.Response
	if _, err := f.client("key-a").Chat.Completions.New(t.Context(), userMsg("mine"), option.WithResponseInto(&resp)); err != nil {
		t.Fatal(err)
	}
	id := sessionOf(t, resp)
	n := oa.ChatCompletionNewParams{Model: "assistant", N: oa.Int(2), Messages: []oa.ChatCompletionMessageParamUnion{oa.UserMessage("x")}}
	for _, tc := range []struct {
		name   string
		params oa.ChatCompletionNewParams
		opts   []option.RequestOption
		key    string
		status int
		param  string
		code   string
	}{
		{"two choices", n, nil, "key-a", 400, "n", "malformed_request"},
		{"ends with the assistant", oa.ChatCompletionNewParams{Model: "assistant",
			Messages: []oa.ChatCompletionMessageParamUnion{oa.UserMessage("x"), oa.AssistantMessage("y")}}, nil, "key-a", 400, "messages[1].role", "malformed_request"},
		{"a tool of the agent's name", withTools(userMsg("x"), "weather"), nil, "key-a", 400, "tools", "bad_client_tools"},
		{"a tool declared twice", withTools(userMsg("x"), "local_time", "local_time"), nil, "key-a", 400, "tools", "bad_client_tools"},
		{"another tenant's session", userMsg("theirs"), []option.RequestOption{option.WithHeader("Agentrt-Session", id)}, "key-b", 404, "", "not_found"},
		{"another agent's session", oa.ChatCompletionNewParams{Model: "writer", Messages: []oa.ChatCompletionMessageParamUnion{oa.UserMessage("x")}},
			[]option.RequestOption{option.WithHeader("Agentrt-Session", id)}, "key-a", 400, "model", "malformed_request"},
	} {
		_, err := f.client(tc.key).Chat.Completions.New(t.Context(), tc.params, tc.opts...)
		var apiErr *oa.Error
		if !errors.As(err, &apiErr) || apiErr.StatusCode != tc.status || apiErr.Param != tc.param || apiErr.Code != tc.code || apiErr.Message == "" {
			t.Errorf("%s: %v; want %d %s param %q", tc.name, err, tc.status, tc.code, tc.param)
		}
	}
}

// withTools is p with client function tools of these names.
func withTools(p oa.ChatCompletionNewParams, names ...string) oa.ChatCompletionNewParams {
	for _, n := range names {
		p.Tools = append(p.Tools, oa.ChatCompletionToolUnionParam{OfFunction: &oa.ChatCompletionFunctionToolParam{
			Function: oa.FunctionDefinitionParam{Name: n, Parameters: oa.FunctionParameters{"type": "object"}}}})
	}
	return p
}

// A session started over the OpenAI API is the REST API's too: the
// request it waits for is in GET /v1/sessions/{id} and answered through
// POST /v1/sessions/{id}/requests/{rid}, and the next chat completion
// goes on from the run that answer continued.
func TestChatCompletionSessionOverREST(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	c := f.client("")
	var resp *http.Response
	got, err := c.Chat.Completions.New(t.Context(), userMsg(`call deploy {"env":"staging"}`), option.WithResponseInto(&resp))
	if err != nil {
		t.Fatal(err)
	}
	id := sessionOf(t, resp)
	var ext struct {
		Requests []session.InputRequired `json:"requests"`
	}
	if err := json.Unmarshal([]byte(got.JSON.ExtraFields["agentrt"].Raw()), &ext); err != nil || len(ext.Requests) != 1 {
		t.Fatalf("agentrt field: %v %+v", err, ext)
	}
	rid := ext.Requests[0].RequestID
	rest := func(method, path, body string) []byte {
		t.Helper()
		req, _ := http.NewRequestWithContext(t.Context(), method, f.http.URL+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		if res.StatusCode >= 300 {
			t.Fatalf("%s %s: %d %s", method, path, res.StatusCode, b)
		}
		return b
	}
	if b := rest("GET", "/v1/sessions/"+id, ""); !strings.Contains(string(b), rid) {
		t.Fatalf("GET /v1/sessions/%s: %s; want request %s", id, b, rid)
	}
	rest("POST", "/v1/sessions/"+id+"/requests/"+rid, `{"decision":"approve"}`)
	got, err = c.Chat.Completions.New(t.Context(), userMsg("and now?"), option.WithHeader("Agentrt-Session", id))
	if err != nil {
		t.Fatal(err)
	}
	if got.Choices[0].Message.Content != "echo: and now?" {
		t.Errorf("after the REST answer: %q", got.Choices[0].Message.Content)
	}
	var types []session.Type
	for ev, err := range f.r.Store().Events(t.Context(), id, 0) {
		if err != nil {
			t.Fatal(err)
		}
		if ev.Type == session.TypeToolResult || ev.Type == session.TypeInputResolved {
			types = append(types, ev.Type)
		}
	}
	if diff := cmp.Diff([]session.Type{session.TypeInputResolved, session.TypeToolResult}, types); diff != "" {
		t.Errorf("the log's answer and tool result (-want +got):\n%s", diff)
	}
}
