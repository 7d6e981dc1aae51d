package server_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	spec "github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/a2aproject/a2a-go/v2/a2aclient/agentcard"
	"github.com/google/go-cmp/cmp"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentrt/agentrt/server"
	"github.com/agentrt/agentrt/server/a2a"
	"github.com/agentrt/agentrt/server/agui"
	"github.com/agentrt/agentrt/server/mcp"
	"github.com/agentrt/agentrt/server/openai"
	"github.com/agentrt/agentrt/session"
)

// One log served four ways: a session started over the OpenAI-compatible
// API is continued over AG-UI (threadId), MCP (the tool's session) and A2A
// (contextId), and the REST API reads every turn in one log, in order.
// Another tenant's key reaches it through none of them.
func TestOneLogAcrossProtocols(t *testing.T) {
	const keyA, keyB = "key-acme", "key-rival"
	f := newFixture(t, options{keys: []server.Key{{Key: keyA, Tenant: "acme"}, {Key: keyB, Tenant: "rival"}}})
	if _, err := openai.Mount(f.srv, openai.Config{}); err != nil {
		t.Fatal(err)
	}
	if err := agui.Mount(f.srv); err != nil {
		t.Fatal(err)
	}
	if err := a2a.Mount(f.srv, a2a.Config{}); err != nil {
		t.Fatal(err)
	}
	if err := mcp.Mount(f.srv, mcp.Config{}); err != nil {
		t.Fatal(err)
	}

	// OpenAI: a new session, named in the answer's header.
	code, body, hdr := f.do(t, "POST", "/v1/chat/completions", keyA, map[string]any{
		"model": "assistant", "messages": []map[string]string{{"role": "user", "content": "one"}}})
	if code != http.StatusOK {
		t.Fatalf("chat completion: %d %s", code, body)
	}
	id := hdr.Get("Agentrt-Session")
	if id == "" {
		t.Fatalf("no Agentrt-Session header in the answer: %v", hdr)
	}
	if !strings.Contains(string(body), "echo: one") {
		t.Errorf("chat completion answer %s, want echo: one", body)
	}

	// AG-UI: the thread is the session.
	if text := aguiRun(t, f, keyA, id, "two"); text != "echo: two" {
		t.Errorf("AG-UI answer %q, want echo: two", text)
	}

	// MCP: the agent's tool with the session.
	if res := mcpCall(t, f, keyA, "three", id); res.IsError || !strings.Contains(structured(t, res), `"answer":"echo: three"`) ||
		!strings.Contains(structured(t, res), `"session_id":"`+id+`"`) {
		t.Errorf("MCP call: error %v, %s; want echo: three in session %s", res.IsError, structured(t, res), id)
	}

	// A2A: the context is the session.
	a2c := a2aClient(t, f, keyA)
	msg := spec.NewMessage(spec.MessageRoleUser, spec.NewTextPart("four"))
	msg.ContextID = id
	sent, err := a2c.SendMessage(t.Context(), &spec.SendMessageRequest{Message: msg})
	if err != nil {
		t.Fatal(err)
	}
	task, ok := sent.(*spec.Task)
	if !ok || task.Status.State != spec.TaskStateCompleted || task.ContextID != id {
		t.Fatalf("A2A SendMessage: %#v, want a completed task in context %s", sent, id)
	}

	// REST: one log, every turn in order.
	turns := restTurns(t, f, keyA, id)
	want := []string{"one", "echo: one", "two", "echo: two", "three", "echo: three", "four", "echo: four"}
	if diff := cmp.Diff(want, turns); diff != "" {
		t.Fatalf("the session's turns over REST (-want +got):\n%s", diff)
	}

	// Another tenant: not found over REST and OpenAI; over AG-UI, MCP and
	// A2A the same id names a session of its own tenant (ids are per
	// tenant), made on first use, which holds nothing of the first.
	if code, body, _ := f.do(t, "GET", "/v1/sessions/"+id+"/events", keyB, nil); code != http.StatusNotFound {
		t.Errorf("REST read by another tenant: %d %s, want 404", code, body)
	}
	code, body, _ = f.do(t, "POST", "/v1/chat/completions", keyB, map[string]any{
		"model": "assistant", "messages": []map[string]string{{"role": "user", "content": "spy"}}}, "Agentrt-Session", id)
	if code != http.StatusNotFound || !strings.Contains(string(body), `"error"`) {
		t.Errorf("OpenAI continue by another tenant: %d %s, want a 404 in OpenAI's error shape", code, body)
	}
	if snap := aguiReconnect(t, f, keyB, id); strings.Contains(snap, "echo: one") {
		t.Errorf("AG-UI reconnect by another tenant shows the first tenant's thread: %s", snap)
	}
	if res := mcpCall(t, f, keyB, "spy", id); res.IsError || !strings.Contains(structured(t, res), `"answer":"echo: spy"`) {
		t.Errorf("MCP call by another tenant: %s, want a turn of its own session", structured(t, res))
	}
	b2c := a2aClient(t, f, keyB)
	if got, err := b2c.GetTask(t.Context(), &spec.GetTaskRequest{ID: task.ID}); err == nil {
		t.Errorf("A2A GetTask of the first tenant's task by another tenant: %#v, want an error", got)
	}
	listed, err := b2c.ListTasks(t.Context(), &spec.ListTasksRequest{ContextID: id})
	if err != nil {
		t.Fatal(err)
	}
	if len(listed.Tasks) != 0 {
		t.Errorf("A2A ListTasks by another tenant lists %d of the first tenant's tasks", len(listed.Tasks))
	}
	if diff := cmp.Diff([]string{"spy", "echo: spy"}, restTurns(t, f, keyB, id)); diff != "" {
		t.Errorf("the other tenant's session of the same id holds (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want, restTurns(t, f, keyA, id)); diff != "" {
		t.Errorf("the first tenant's log changed after the other tenant's attempts (-want +got):\n%s", diff)
	}
}

// restTurns reads session id's log over REST: each turn's input and answer.
func restTurns(t *testing.T, f *fixture, key, id string) []string {
	t.Helper()
	code, body, _ := f.do(t, "GET", "/v1/sessions/"+id+"/events", key, nil)
	if code != http.StatusOK {
		t.Fatalf("GET events: %d %s", code, body)
	}
	var got struct{ Events []session.Event }
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatal(err)
	}
	var turns []string
	for _, e := range got.Events {
		switch d := e.Data.(type) {
		case *session.RunStarted:
			turns = append(turns, d.Input)
		case *session.ModelFinished:
			turns = append(turns, d.Content)
		}
	}
	return turns
}

// aguiEvents posts a RunAgentInput and returns the events of its stream.
func aguiEvents(t *testing.T, f *fixture, key string, in map[string]any) []map[string]any {
	t.Helper()
	b, _ := json.Marshal(in)
	req, _ := http.NewRequestWithContext(t.Context(), "POST", f.http.URL+"/v1/agui/assistant", bytes.NewReader(b))
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("AG-UI run: %d %s", resp.StatusCode, b)
	}
	var evs []map[string]any
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var ev map[string]any
		if err := json.Unmarshal([]byte(data), &ev); err != nil {
			t.Fatalf("AG-UI event %s: %v", data, err)
		}
		evs = append(evs, ev)
	}
	return evs
}

// aguiRun runs a turn of thread id over AG-UI and returns its text.
func aguiRun(t *testing.T, f *fixture, key, id, text string) string {
	t.Helper()
	var b strings.Builder
	evs := aguiEvents(t, f, key, map[string]any{"threadId": id, "runId": "run-" + text, "state": map[string]any{},
		"messages": []map[string]any{{"id": "m-" + text, "role": "user", "content": text}},
		"tools":    []any{}, "context": []any{}, "forwardedProps": map[string]any{}})
	for _, ev := range evs {
		if ev["type"] == "TEXT_MESSAGE_CONTENT" {
			b.WriteString(ev["delta"].(string))
		}
	}
	if last := evs[len(evs)-1]["type"]; last != "RUN_FINISHED" {
		t.Errorf("the AG-UI run ended with %v, want RUN_FINISHED", last)
	}
	return b.String()
}

// aguiReconnect joins thread id with no new message and returns the
// stream's events as JSON.
func aguiReconnect(t *testing.T, f *fixture, key, id string) string {
	t.Helper()
	evs := aguiEvents(t, f, key, map[string]any{"threadId": id, "runId": "join", "state": map[string]any{},
		"messages": []any{}, "tools": []any{}, "context": []any{}, "forwardedProps": map[string]any{}})
	b, _ := json.Marshal(evs)
	return string(b)
}

// bearerTransport adds an API key to each request.
type bearerTransport struct{ key string }

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.key)
	return http.DefaultTransport.RoundTrip(r)
}

// mcpCall calls the agent's MCP tool over Streamable HTTP with key.
func mcpCall(t *testing.T, f *fixture, key, message, id string) *sdk.CallToolResult {
	t.Helper()
	c := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, nil)
	cs, err := c.Connect(t.Context(), &sdk.StreamableClientTransport{Endpoint: f.http.URL + "/v1/mcp",
		HTTPClient: &http.Client{Transport: bearerTransport{key}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.CallTool(t.Context(), &sdk.CallToolParams{Name: "assistant", Arguments: map[string]any{"message": message, "session": id}})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// structured is a tool result's structured content as JSON, or its text
// when it has none.
func structured(t *testing.T, res *sdk.CallToolResult) string {
	t.Helper()
	if res.StructuredContent != nil {
		b, err := json.Marshal(res.StructuredContent)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// a2aClient is an A2A client of the agent assistant with key.
func a2aClient(t *testing.T, f *fixture, key string) *a2aclient.Client {
	t.Helper()
	hc := &http.Client{Transport: bearerTransport{key}}
	card, err := agentcard.NewResolver(hc).Resolve(context.Background(), f.http.URL+"/v1/a2a/assistant")
	if err != nil {
		t.Fatal(err)
	}
	c, err := a2aclient.NewFromCard(t.Context(), card, a2aclient.WithJSONRPCTransport(hc))
	if err != nil {
		t.Fatal(err)
	}
	return c
}
