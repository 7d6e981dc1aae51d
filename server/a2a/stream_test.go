package a2a_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"iter"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	spec "github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/server/a2a"
	"github.com/agentrt/agentrt/session"
)

// An A2A stream that has nothing to say for a while (the turn waits on a
// tool) gets SSE keep-alive comments, so that proxies keep it open.
func TestStreamKeepAlive(t *testing.T) {
	f := newFixture(t, options{cfg: a2a.Config{KeepAlive: time.Millisecond}})
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "POST", f.http.URL+"/v1/a2a/assistant", strings.NewReader(
		`{"jsonrpc":"2.0","id":1,"method":"SendStreamingMessage","params":{"message":{"messageId":"m1","role":"ROLE_USER","parts":[{"text":"call gate {}"}]}}}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	<-f.started // the turn waits on the gate: the stream is idle
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if sc.Text() == ": keep-alive" {
			close(f.release)
			return
		}
	}
	t.Fatalf("the stream ended without a keep-alive comment: %v", sc.Err())
}

// Where @a2a-js/sdk's createFromUrl looks for the card when given an
// agent's URL without its trailing slash (/v1/a2a/.well-known/...): the
// card of the server's one agent; with several agents, which one the
// client was given is not known, and the answer is a 404 saying where
// their cards are.
func TestCardWithoutAgent(t *testing.T) {
	get := func(f *fixture) (int, string) {
		resp, err := http.Get(f.http.URL + "/v1/a2a/.well-known/agent-card.json")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	one := newFixture(t, options{})
	status, body := get(one)
	var card spec.AgentCard
	if err := json.Unmarshal([]byte(body), &card); status != http.StatusOK || err != nil || card.Name != "assistant" ||
		len(card.SupportedInterfaces) != 1 || card.SupportedInterfaces[0].URL != one.http.URL+"/v1/a2a/assistant" {
		t.Errorf("one agent: %d %s (%v); want the card of assistant", status, body, err)
	}
	two := newFixture(t, options{agents: []*agentrt.Agent{{Name: "writer", Model: echo}}})
	status, body = get(two)
	if status != http.StatusNotFound || !strings.Contains(body, "/v1/a2a/assistant/.well-known/agent-card.json") ||
		!strings.Contains(body, "/v1/a2a/writer/.well-known/agent-card.json") || !strings.Contains(body, "trailing slash") {
		t.Errorf("two agents: %d %s; want a 404 naming the agents' cards", status, body)
	}
}

// The wire of a streamed new task: SSE events, each an id line and a
// data line holding a JSON-RPC response with the request's id and one
// stream result (the task first, SUBMITTED, then its updates, the final
// status last), as a2a-go's server writes them. Timestamps and the task's
// id vary and are replaced; the answer's chunks depend on how the tokens
// were ready together, and the chunks appended to the first are merged
// into it.
func TestStreamWire(t *testing.T) {
	f := newFixture(t, options{})
	tests := []struct {
		name, body string
		want       []string
	}{{
		name: "completed",
		body: `{"jsonrpc":"2.0","id":1,"method":"SendStreamingMessage","params":{"message":{"messageId":"m1","contextId":"c1","role":"ROLE_USER","parts":[{"text":"hello there"}]}}}`,
		want: []string{
			`{"jsonrpc":"2.0","id":1,"result":{"task":{"id":"TASK","contextId":"c1","history":[{"messageId":"m1","contextId":"c1","parts":[{"text":"hello there"}],"role":"ROLE_USER","taskId":"TASK"}],"status":{"state":"TASK_STATE_SUBMITTED"}}}}`,
			`{"jsonrpc":"2.0","id":1,"result":{"statusUpdate":{"contextId":"c1","status":{"state":"TASK_STATE_WORKING","timestamp":"TIME"},"taskId":"TASK"}}}`,
			`{"jsonrpc":"2.0","id":1,"result":{"artifactUpdate":{"artifact":{"artifactId":"answer","name":"answer","parts":[{"text":"echo: hello there"}]},"contextId":"c1","taskId":"TASK"}}}`,
			`{"jsonrpc":"2.0","id":1,"result":{"artifactUpdate":{"artifact":{"artifactId":"answer","name":"answer","parts":[{"text":"echo: hello there"}]},"contextId":"c1","lastChunk":true,"taskId":"TASK"}}}`,
			`{"jsonrpc":"2.0","id":1,"result":{"statusUpdate":{"contextId":"c1","status":{"state":"TASK_STATE_COMPLETED","timestamp":"TIME"},"taskId":"TASK"}}}`,
		},
	}, {
		name: "failed",
		body: `{"jsonrpc":"2.0","id":"x","method":"SendStreamingMessage","params":{"message":{"messageId":"m3","contextId":"c3","role":"ROLE_USER","parts":[{"text":"fail"}]}}}`,
		want: []string{
			`{"jsonrpc":"2.0","id":"x","result":{"task":{"id":"TASK","contextId":"c3","history":[{"messageId":"m3","contextId":"c3","parts":[{"text":"fail"}],"role":"ROLE_USER","taskId":"TASK"}],"status":{"state":"TASK_STATE_SUBMITTED"}}}}`,
			`{"jsonrpc":"2.0","id":"x","result":{"statusUpdate":{"contextId":"c3","status":{"state":"TASK_STATE_WORKING","timestamp":"TIME"},"taskId":"TASK"}}}`,
			`{"jsonrpc":"2.0","id":"x","result":{"statusUpdate":{"contextId":"c3","status":{"message":{"messageId":"error-5","contextId":"c3","parts":[{"text":"model: bad_request: the model refused"}],"role":"ROLE_AGENT","taskId":"TASK"},"state":"TASK_STATE_FAILED","timestamp":"TIME"},"taskId":"TASK"}}}`,
		},
	}, {
		name: "bad message",
		body: `{"jsonrpc":"2.0","id":2,"method":"SendStreamingMessage","params":{"message":{"messageId":"m4","role":"ROLE_USER","parts":[]}}}`,
		want: []string{
			`{"jsonrpc":"2.0","id":2,"error":{"code":-32602,"message":"the message has no parts","data":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","domain":"a2a-protocol.org","metadata":{"timestamp":"TIME"},"reason":"INVALID_PARAMS"}]}}`,
		},
	}}
	taskID := regexp.MustCompile(`"task_[A-Za-z0-9_-]+"`)
	timestamp := regexp.MustCompile(`"timestamp":"[^"]+"`)
	eventID := regexp.MustCompile(`^id: [0-9a-f-]{36}$`)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, err := http.Post(f.http.URL+"/v1/a2a/assistant", "application/json", strings.NewReader(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
				t.Errorf("Content-Type %q; want text/event-stream", ct)
			}
			var got []string
			sc := bufio.NewScanner(resp.Body)
			sc.Buffer(nil, 1<<20)
			for sc.Scan() {
				if !eventID.MatchString(sc.Text()) {
					t.Fatalf("an SSE event that starts %q; want its id line", sc.Text())
				}
				if !sc.Scan() || !strings.HasPrefix(sc.Text(), "data: ") {
					t.Fatalf("an SSE event without its data line: %q", sc.Text())
				}
				data := strings.TrimPrefix(sc.Text(), "data: ")
				data = taskID.ReplaceAllString(data, `"TASK"`)
				got = append(got, timestamp.ReplaceAllString(data, `"timestamp":"TIME"`))
				if sc.Scan(); sc.Text() != "" {
					t.Fatalf("an SSE event not ended by a blank line: %q", sc.Text())
				}
			}
			if diff := cmp.Diff(tt.want, mergeChunks(got)); diff != "" {
				t.Errorf("stream (-want +got):\n%s", diff)
			}
		})
	}
}

// chunk is a chunk of the answer (not its last), as TestStreamWire
// normalizes it: before its text, whether it appends, its text, after it.
var chunk = regexp.MustCompile(`^(\{"jsonrpc":"2.0","id":[^,]+,"result":\{"artifactUpdate":\{)("append":true,)?("artifact":\{"artifactId":"answer","name":"answer","parts":\[\{"text":")([^"]*)("\}\]\},"contextId":"[^"]+","taskId":"TASK"\}\}\})$`)

// mergeChunks merges each chunk that appends into the chunk before it.
func mergeChunks(lines []string) []string {
	var out []string
	for _, l := range lines {
		m := chunk.FindStringSubmatch(l)
		if m != nil && m[2] != "" && len(out) > 0 {
			if p := chunk.FindStringSubmatch(out[len(out)-1]); p != nil {
				out[len(out)-1] = p[1] + p[2] + p[3] + p[4] + m[4] + p[5]
				continue
			}
		}
		out = append(out, l)
	}
	return out
}

// A new task streamed by SendStreamingMessage is found while it runs:
// GetTask has it working, SubscribeToTask follows it, and CancelTask
// cancels its run, which ends the stream and the subscription CANCELED.
func TestStreamedTaskGetSubscribeCancel(t *testing.T) {
	f := newFixture(t, options{})
	c := f.client(t, "")
	var states []spec.TaskState
	var task *spec.Task
	var subStates []spec.TaskState
	subDone := make(chan error, 1)
	for ev, err := range c.SendStreamingMessage(t.Context(), &spec.SendMessageRequest{Message: text("call gate {}")}) {
		if err != nil {
			t.Fatal(err)
		}
		switch e := ev.(type) {
		case *spec.Task:
			task = e
		case *spec.TaskStatusUpdateEvent:
			states = append(states, e.Status.State)
		}
		if len(states) != 2 { // WORKING, then WORKING with the gate's call
			continue
		}
		<-f.started
		got, err := c.GetTask(t.Context(), &spec.GetTaskRequest{ID: task.ID})
		if err != nil || got.Status.State != spec.TaskStateWorking {
			t.Fatalf("GetTask of the running task: %v %v; want it working", got, err)
		}
		sub := c.SubscribeToTask(t.Context(), &spec.SubscribeToTaskRequest{ID: task.ID})
		next, stop := iter.Pull2(sub)
		first, err, _ := next()
		if tk, ok := first.(*spec.Task); err != nil || !ok || tk.Status.State != spec.TaskStateWorking {
			t.Fatalf("SubscribeToTask's first event: %#v %v; want the task, working", first, err)
		}
		go func() {
			defer stop()
			for {
				ev, err, ok := next()
				if !ok || err != nil {
					subDone <- err
					return
				}
				if s, ok := ev.(*spec.TaskStatusUpdateEvent); ok {
					subStates = append(subStates, s.Status.State)
				}
			}
		}()
		canceled, err := c.CancelTask(t.Context(), &spec.CancelTaskRequest{ID: task.ID})
		if err != nil || canceled.Status.State != spec.TaskStateCanceled {
			t.Fatalf("CancelTask: %v %v; want the task canceled", canceled, err)
		}
	}
	if err := <-subDone; err != nil {
		t.Fatal(err)
	}
	if len(states) == 0 || states[len(states)-1] != spec.TaskStateCanceled {
		t.Errorf("stream's states %v: want canceled last", states)
	}
	if len(subStates) == 0 || subStates[len(subStates)-1] != spec.TaskStateCanceled {
		t.Errorf("subscription's states %v: want canceled last", subStates)
	}
	got, err := c.GetTask(t.Context(), &spec.GetTaskRequest{ID: task.ID})
	if err != nil || got.Status.State != spec.TaskStateCanceled {
		t.Errorf("GetTask after the cancel: %v %v; want canceled", got, err)
	}
	f.waitStatus(t, t.Context(), task.ContextID, session.StatusCanceled)
}

// A new task streamed to INPUT_REQUIRED is answered by a message on it,
// streamed too (through a2a-go, which runs the answer): the task goes on
// in that stream and completes, as GetTask shows.
func TestStreamedTaskAnswered(t *testing.T) {
	f := newFixture(t, options{})
	c := f.client(t, "")
	last := func(req *spec.SendMessageRequest) (*spec.Task, spec.TaskState) {
		t.Helper()
		var task *spec.Task
		var state spec.TaskState
		for ev, err := range c.SendStreamingMessage(t.Context(), req) {
			if err != nil {
				t.Fatal(err)
			}
			switch e := ev.(type) {
			case *spec.Task:
				task, state = e, e.Status.State
			case *spec.TaskStatusUpdateEvent:
				state = e.Status.State
			}
		}
		return task, state
	}
	task, state := last(&spec.SendMessageRequest{Message: text(`call deploy {"env":"prod"}`)})
	if task == nil || state != spec.TaskStateInputRequired {
		t.Fatalf("stream of the new task ended %s; want input-required", state)
	}
	got, err := c.GetTask(t.Context(), &spec.GetTaskRequest{ID: task.ID})
	if err != nil || got.Status.State != spec.TaskStateInputRequired {
		t.Fatalf("GetTask of the waiting task: %v %v", got, err)
	}
	m := text("approve")
	m.TaskID, m.ContextID = task.ID, task.ContextID
	if _, state := last(&spec.SendMessageRequest{Message: m}); state != spec.TaskStateCompleted {
		t.Fatalf("stream of the answer ended %s; want completed", state)
	}
	got, err = c.GetTask(t.Context(), &spec.GetTaskRequest{ID: task.ID})
	if err != nil || got.Status.State != spec.TaskStateCompleted || artifactText(got) != `echo: "deployed to prod"` {
		t.Errorf("GetTask after the answer: %v %v; want completed with the answer", got, err)
	}
}

// A push config made while a new task streams gets the task's updates
// from then on, to its end.
func TestStreamedTaskPushes(t *testing.T) {
	f := newFixture(t, options{})
	c := f.client(t, "")
	got := make(chan spec.TaskState, 64)
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var sr spec.StreamResponse
		b, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(b, &sr); err != nil {
			t.Errorf("notification %s: %v", b, err)
		}
		if tok := r.Header.Get("A2A-Notification-Token"); tok != "tok" {
			t.Errorf("notification token %q; want tok", tok)
		}
		switch e := sr.Event.(type) {
		case *spec.Task:
			got <- e.Status.State
		case *spec.TaskStatusUpdateEvent:
			got <- e.Status.State
		}
	}))
	defer hook.Close()
	var last spec.TaskState
	var working int
	for ev, err := range c.SendStreamingMessage(t.Context(), &spec.SendMessageRequest{Message: text("call gate {}")}) {
		if err != nil {
			t.Fatal(err)
		}
		s, ok := ev.(*spec.TaskStatusUpdateEvent)
		if !ok {
			continue
		}
		last = s.Status.State
		if working++; working != 2 { // WORKING, then WORKING with the gate's call
			continue
		}
		<-f.started
		if _, err := c.CreateTaskPushConfig(t.Context(), &spec.PushConfig{TaskID: s.TaskID, URL: hook.URL, Token: "tok"}); err != nil {
			t.Fatal(err)
		}
		close(f.release)
	}
	if last != spec.TaskStateCompleted {
		t.Fatalf("the stream ended %s; want completed", last)
	}
	// The pusher follows the task on its own: its pushes may come after
	// the stream's end.
	var pushed []spec.TaskState
	for len(pushed) == 0 || pushed[len(pushed)-1] != spec.TaskStateCompleted {
		select {
		case s := <-got:
			pushed = append(pushed, s)
		case <-t.Context().Done():
			t.Fatalf("states pushed %v; want completed last", pushed)
		}
	}
}

// A message on a task that asks nothing (it works, streamed by the
// adapter) is refused, and the task goes on: it is not failed by an
// execution a2a-go would begin for the message beside its run.
func TestMessageOnWorkingTaskRefused(t *testing.T) {
	f := newFixture(t, options{})
	c := f.client(t, "")
	var task *spec.Task
	var last spec.TaskState
	for ev, err := range c.SendStreamingMessage(t.Context(), &spec.SendMessageRequest{Message: text("call gate {}")}) {
		if err != nil {
			t.Fatal(err)
		}
		switch e := ev.(type) {
		case *spec.Task:
			task = e
		case *spec.TaskStatusUpdateEvent:
			last = e.Status.State
			if last != spec.TaskStateWorking || task == nil || f.started == nil {
				continue
			}
			// Working, as the stream (and a2a-go's task store) has it,
			// and the tool runs: the task cannot end meanwhile.
			<-f.started
			f.started = nil
			m := text("and another thing")
			m.TaskID, m.ContextID = task.ID, task.ContextID
			if res, err := c.SendMessage(t.Context(), &spec.SendMessageRequest{Message: m}); !errors.Is(err, spec.ErrInvalidParams) {
				t.Errorf("SendMessage on the working task: %v %v; want invalid params", res, err)
			}
			for _, err := range c.SendStreamingMessage(t.Context(), &spec.SendMessageRequest{Message: m}) {
				if !errors.Is(err, spec.ErrInvalidParams) {
					t.Errorf("SendStreamingMessage on the working task: %v; want invalid params", err)
				}
				break
			}
			if got, err := c.GetTask(t.Context(), &spec.GetTaskRequest{ID: task.ID}); err != nil || got.Status.State != spec.TaskStateWorking {
				t.Errorf("GetTask after the refused messages: %v %v; want working", got, err)
			}
			close(f.release)
		}
	}
	if last != spec.TaskStateCompleted {
		t.Fatalf("the stream ended %s; want completed", last)
	}
	if got, err := c.GetTask(t.Context(), &spec.GetTaskRequest{ID: task.ID}); err != nil || got.Status.State != spec.TaskStateCompleted {
		t.Errorf("GetTask at the end: %v %v; want completed", got, err)
	}
}
