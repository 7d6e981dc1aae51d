package a2a_test

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	spec "github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/agentrt/agentrt/server"
	"github.com/agentrt/agentrt/session"
)

// The card names the agent, says what it is for, lists its tools as
// skills, and points a2a-go's client at the JSON-RPC endpoint.
func TestCard(t *testing.T) {
	f := newFixture(t, options{})
	card := f.card(t, "assistant", "")
	if card.Name != "assistant" || card.Description != "Answers questions and deploys the service." {
		t.Errorf("card %q: %q", card.Name, card.Description)
	}
	var skills []string
	for _, s := range card.Skills {
		skills = append(skills, s.Name)
	}
	if !cmp.Equal(skills, []string{"assistant", "gate", "deploy"}) {
		t.Errorf("skills %v: want the agent's and one per tool", skills)
	}
	if !card.Capabilities.Streaming || !card.Capabilities.PushNotifications {
		t.Errorf("capabilities %+v: want streaming and push notifications", card.Capabilities)
	}
	want := []*spec.AgentInterface{{URL: f.http.URL + "/v1/a2a/assistant", ProtocolBinding: spec.TransportProtocolJSONRPC, ProtocolVersion: spec.Version}}
	if diff := cmp.Diff(want, card.SupportedInterfaces); diff != "" {
		t.Errorf("interfaces (-want +got):\n%s", diff)
	}
	resp, err := http.Get(f.http.URL + "/v1/a2a/nobody/.well-known/agent-card.json")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound || !strings.Contains(string(body), `no agent \"nobody\" (agents: assistant)`) {
		t.Errorf("an unknown agent's card: %d %s", resp.StatusCode, body)
	}
}

// SendMessage runs a turn of a session (the task's contextId) and answers
// with the completed task, its artifact the agent's answer; the session is
// the REST API's as well; the next message in the context is the next
// turn of the same session.
func TestSendMessage(t *testing.T) {
	f := newFixture(t, options{})
	c := f.client(t, "")
	res, err := c.SendMessage(t.Context(), &spec.SendMessageRequest{Message: text("hello there")})
	if err != nil {
		t.Fatal(err)
	}
	task, ok := res.(*spec.Task)
	if !ok {
		t.Fatalf("result %T: want a task", res)
	}
	if task.Status.State != spec.TaskStateCompleted || artifactText(task) != "echo: hello there" {
		t.Fatalf("task %s %q: want completed, echo: hello there", task.Status.State, artifactText(task))
	}
	s, err := f.r.Store().GetSession(t.Context(), task.ContextID)
	if err != nil {
		t.Fatalf("the task's context is no session: %v", err)
	}
	if s.Agent != "assistant" || s.Status != session.StatusDone {
		t.Errorf("session %s: agent %s status %s", s.ID, s.Agent, s.Status)
	}
	m := text("again")
	m.ContextID = task.ContextID
	res, err = c.SendMessage(t.Context(), &spec.SendMessageRequest{Message: m})
	if err != nil {
		t.Fatal(err)
	}
	next := res.(*spec.Task)
	if next.ID == task.ID || next.ContextID != task.ContextID || artifactText(next) != "echo: again" {
		t.Errorf("second message: task %s in %s %q; want a new task in %s", next.ID, next.ContextID, artifactText(next), task.ContextID)
	}
	got, err := c.GetTask(t.Context(), &spec.GetTaskRequest{ID: task.ID})
	if err != nil || got.Status.State != spec.TaskStateCompleted || artifactText(got) != "echo: hello there" {
		t.Errorf("GetTask: %v %v", got, err)
	}
	list, err := c.ListTasks(t.Context(), &spec.ListTasksRequest{ContextID: task.ContextID, IncludeArtifacts: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Tasks) != 2 {
		t.Errorf("ListTasks of the context: %d tasks, want 2", len(list.Tasks))
	}
}

// A streamed turn: the task, WORKING, the answer's tokens as artifact
// chunks, the final answer replacing them, COMPLETED last.
func TestSendStreamingMessage(t *testing.T) {
	f := newFixture(t, options{})
	c := f.client(t, "")
	var kinds []string
	var streamed strings.Builder
	var final string
	for ev, err := range c.SendStreamingMessage(t.Context(), &spec.SendMessageRequest{Message: text("one two three")}) {
		if err != nil {
			t.Fatal(err)
		}
		switch e := ev.(type) {
		case *spec.Task:
			kinds = append(kinds, "task:"+string(e.Status.State))
		case *spec.TaskStatusUpdateEvent:
			kinds = append(kinds, "status:"+string(e.Status.State))
		case *spec.TaskArtifactUpdateEvent:
			if e.LastChunk {
				kinds = append(kinds, "final")
				final = e.Artifact.Parts[0].Text()
				continue
			}
			if len(kinds) == 0 || kinds[len(kinds)-1] != "chunk" {
				kinds = append(kinds, "chunk")
			}
			streamed.WriteString(e.Artifact.Parts[0].Text())
		}
	}
	want := []string{"task:" + string(spec.TaskStateSubmitted), "status:" + string(spec.TaskStateWorking), "chunk", "final", "status:" + string(spec.TaskStateCompleted)}
	if diff := cmp.Diff(want, kinds); diff != "" {
		t.Errorf("stream (-want +got):\n%s", diff)
	}
	if streamed.String() != "echo: one two three" || final != "echo: one two three" {
		t.Errorf("streamed %q, final %q", streamed.String(), final)
	}
}

// A call that needs an approval turns the task to INPUT_REQUIRED, showing
// the call and its arguments; "approve" on the same task runs it and the
// task completes with the answer. A reply that is no decision leaves the
// task waiting, saying what to answer.
func TestApprovalIsInputRequired(t *testing.T) {
	f := newFixture(t, options{})
	c := f.client(t, "")
	res, err := c.SendMessage(t.Context(), &spec.SendMessageRequest{Message: text(`call deploy {"env":"prod"}`)})
	if err != nil {
		t.Fatal(err)
	}
	task := res.(*spec.Task)
	if task.Status.State != spec.TaskStateInputRequired {
		t.Fatalf("task %s: want input-required", task.Status.State)
	}
	q := task.Status.Message
	if q == nil || !strings.Contains(q.Parts[0].Text(), `deploy {"env":"prod"}`) || !strings.Contains(q.Parts[0].Text(), "approve or reject") {
		t.Fatalf("question %+v: want the call, its arguments and how to answer", q)
	}
	data, _ := json.Marshal(q.Parts[1].Data())
	if !strings.Contains(string(data), `"kind":"approval"`) {
		t.Errorf("question's data %s: want the request", data)
	}

	m := text("maybe")
	m.TaskID, m.ContextID = task.ID, task.ContextID
	res, err = c.SendMessage(t.Context(), &spec.SendMessageRequest{Message: m})
	if err != nil {
		t.Fatal(err)
	}
	if tk := res.(*spec.Task); tk.Status.State != spec.TaskStateInputRequired ||
		!strings.Contains(tk.Status.Message.Parts[0].Text(), `answer approve or reject (got "maybe")`) {
		t.Fatalf("after %q: %s %+v; want still input-required, saying what to answer", "maybe", tk.Status.State, tk.Status.Message)
	}

	m = text("approve")
	m.TaskID, m.ContextID = task.ID, task.ContextID
	res, err = c.SendMessage(t.Context(), &spec.SendMessageRequest{Message: m})
	if err != nil {
		t.Fatal(err)
	}
	done := res.(*spec.Task)
	if done.ID != task.ID || done.Status.State != spec.TaskStateCompleted || artifactText(done) != `echo: "deployed to prod"` {
		t.Fatalf("after approve: task %s %s %q; want %s completed, echo: \"deployed to prod\"", done.ID, done.Status.State, artifactText(done), task.ID)
	}
}

// An approval answered over the REST API instead: the A2A task goes on
// with the run it continued and ends as the run does, and a message on
// the ended task is refused.
func TestApprovalAnsweredElsewhere(t *testing.T) {
	f := newFixture(t, options{})
	c := f.client(t, "")
	res, err := c.SendMessage(t.Context(), &spec.SendMessageRequest{Message: text(`call deploy {"env":"dev"}`)})
	if err != nil {
		t.Fatal(err)
	}
	task := res.(*spec.Task)
	rid := task.Status.Message.Metadata["agentrt.requests"].([]any)[0].(string)
	req, _ := http.NewRequest("POST", f.http.URL+"/v1/sessions/"+task.ContextID+"/requests/"+rid, strings.NewReader(`{"decision":"approve"}`))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("REST answer: %d", resp.StatusCode)
	}
	f.waitStatus(t, t.Context(), task.ContextID, session.StatusDone)
	got, err := c.GetTask(t.Context(), &spec.GetTaskRequest{ID: task.ID})
	if err != nil {
		t.Fatal(err)
	}
	if got.Status.State != spec.TaskStateCompleted || artifactText(got) != `echo: "deployed to dev"` {
		t.Fatalf("task %s %q; want completed, echo: \"deployed to dev\"", got.Status.State, artifactText(got))
	}
	m := text("approve")
	m.TaskID = task.ID
	if _, err := c.SendMessage(t.Context(), &spec.SendMessageRequest{Message: m}); !errors.Is(err, spec.ErrInvalidParams) {
		t.Errorf("a message on the completed task: %v; want invalid params", err)
	}
}

// CancelTask cancels the session's run; the task and the session end
// canceled. SubscribeToTask follows a running task from its current state.
func TestCancelAndSubscribe(t *testing.T) {
	f := newFixture(t, options{})
	c := f.client(t, "")
	res, err := c.SendMessage(t.Context(), &spec.SendMessageRequest{Message: text("call gate {}"),
		Config: &spec.SendMessageConfig{ReturnImmediately: true}})
	if err != nil {
		t.Fatal(err)
	}
	task := res.(*spec.Task)
	<-f.started
	sub := c.SubscribeToTask(t.Context(), &spec.SubscribeToTaskRequest{ID: task.ID})
	var first spec.Event
	var states []spec.TaskState
	for ev, err := range sub {
		if err != nil {
			t.Fatal(err)
		}
		if first == nil {
			first = ev
			if _, err := c.CancelTask(t.Context(), &spec.CancelTaskRequest{ID: task.ID}); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if s, ok := ev.(*spec.TaskStatusUpdateEvent); ok {
			states = append(states, s.Status.State)
		}
	}
	// The first event is the task as a2a-go's task manager has it when
	// the subscription starts: working, or still submitted when the
	// run's first update has not reached the manager yet (it applies
	// them on its own goroutine).
	if tk, ok := first.(*spec.Task); !ok || tk.Status.State != spec.TaskStateWorking && tk.Status.State != spec.TaskStateSubmitted {
		t.Errorf("subscription's first event %#v: want the task, working (or submitted)", first)
	}
	if len(states) == 0 || states[len(states)-1] != spec.TaskStateCanceled {
		t.Errorf("subscription's states %v: want canceled last", states)
	}
	got, err := c.GetTask(t.Context(), &spec.GetTaskRequest{ID: task.ID})
	if err != nil || got.Status.State != spec.TaskStateCanceled {
		t.Errorf("GetTask after cancel: %v %v", got, err)
	}
	f.waitStatus(t, t.Context(), task.ContextID, session.StatusCanceled)
}

// A failed turn is a FAILED task saying why.
func TestFailedTurn(t *testing.T) {
	f := newFixture(t, options{})
	res, err := f.client(t, "").SendMessage(t.Context(), &spec.SendMessageRequest{Message: text("fail")})
	if err != nil {
		t.Fatal(err)
	}
	task := res.(*spec.Task)
	if task.Status.State != spec.TaskStateFailed || task.Status.Message == nil || !strings.Contains(task.Status.Message.Parts[0].Text(), "the model refused") {
		t.Errorf("task %s %+v: want failed, saying the model refused", task.Status.State, task.Status.Message)
	}
}

// Push notifications go to the task's webhook (here on 127.0.0.1), the
// last with the completed task.
func TestPushNotifications(t *testing.T) {
	f := newFixture(t, options{})
	got := make(chan []byte, 64)
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if tok := r.Header.Get("A2A-Notification-Token"); tok != "tok" {
			t.Errorf("notification token %q; want tok", tok)
		}
		got <- b
	}))
	defer hook.Close()
	c := f.client(t, "")
	res, err := c.SendMessage(t.Context(), &spec.SendMessageRequest{Message: text("call gate {}"),
		Config: &spec.SendMessageConfig{ReturnImmediately: true, PushConfig: &spec.PushConfig{URL: hook.URL, Token: "tok"}}})
	if err != nil {
		t.Fatal(err)
	}
	task := res.(*spec.Task)
	cfgs, err := c.ListTaskPushConfigs(t.Context(), &spec.ListTaskPushConfigRequest{TaskID: task.ID})
	if err != nil || len(cfgs) != 1 || cfgs[0].URL != hook.URL {
		t.Fatalf("ListTaskPushConfigs: %v %v", cfgs, err)
	}
	<-f.started
	close(f.release)
	for b := range got {
		var sr spec.StreamResponse
		if err := json.Unmarshal(b, &sr); err != nil {
			t.Fatalf("notification %s: %v", b, err)
		}
		var state spec.TaskState
		switch e := sr.Event.(type) {
		case *spec.Task:
			state = e.Status.State
		case *spec.TaskStatusUpdateEvent:
			state = e.Status.State
		}
		if state == spec.TaskStateCompleted {
			break
		}
	}
}

// Another tenant's task is not found, and bad input is an A2A error.
func TestTenantsAndBadInput(t *testing.T) {
	f := newFixture(t, options{keys: []server.Key{{Key: "key-a", Tenant: "a"}, {Key: "key-b", Tenant: "b"}}})
	a, b := f.client(t, "key-a"), f.client(t, "key-b")
	res, err := a.SendMessage(t.Context(), &spec.SendMessageRequest{Message: text("mine")})
	if err != nil {
		t.Fatal(err)
	}
	task := res.(*spec.Task)
	if _, err := b.GetTask(t.Context(), &spec.GetTaskRequest{ID: task.ID}); !errors.Is(err, spec.ErrTaskNotFound) {
		t.Errorf("tenant b's GetTask of tenant a's task: %v; want task not found", err)
	}
	if _, err := b.CancelTask(t.Context(), &spec.CancelTaskRequest{ID: task.ID}); !errors.Is(err, spec.ErrTaskNotFound) {
		t.Errorf("tenant b's CancelTask of tenant a's task: %v; want task not found", err)
	}
	if l, err := b.ListTasks(t.Context(), &spec.ListTasksRequest{}); err != nil || len(l.Tasks) != 0 {
		t.Errorf("tenant b's ListTasks: %v %v; want none", l, err)
	}
	file := spec.NewMessage(spec.MessageRoleUser, spec.NewFileURLPart("https://example.com/x.pdf", "application/pdf"))
	if _, err := a.SendMessage(t.Context(), &spec.SendMessageRequest{Message: file}); !errors.Is(err, spec.ErrInvalidParams) ||
		!strings.Contains(err.Error(), "fetches no URLs") {
		t.Errorf("a file part by a URL the server does not fetch: %v; want invalid params", err)
	}
	bad := text("hi")
	bad.ContextID = "no spaces allowed"
	if _, err := a.SendMessage(t.Context(), &spec.SendMessageRequest{Message: bad}); !errors.Is(err, spec.ErrInvalidParams) {
		t.Errorf("a contextId that is no session id: %v; want invalid params", err)
	}
	resp, err := http.Post(f.http.URL+"/v1/a2a/assistant", "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("no key: %d, want 401", resp.StatusCode)
	}
}
