package a2a_test

import (
	"errors"
	"fmt"
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"

	spec "github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/agentrt/agentrt/session"
	"github.com/agentrt/agentrt/session/memstore"
)

// replicas are two servers on one store, as two processes on one
// database: a and b.
func replicas(t *testing.T) (a, b *fixture) {
	t.Helper()
	st := memstore.New()
	return newFixture(t, options{store: st}), newFixture(t, options{store: st})
}

// A task is found on a replica that did not run it (and so after a
// restart): waiting for an approval, answered there, and then completed
// on the replica that asked, which held it as waiting.
func TestTaskOnAnotherReplica(t *testing.T) {
	a, b := replicas(t)
	ca, cb := a.client(t, ""), b.client(t, "")
	res, err := ca.SendMessage(t.Context(), &spec.SendMessageRequest{Message: text(`call deploy {"env":"prod"}`)})
	if err != nil {
		t.Fatal(err)
	}
	asked := res.(*spec.Task)
	if asked.Status.State != spec.TaskStateInputRequired {
		t.Fatalf("task %s: want input-required", asked.Status.State)
	}
	got, err := cb.GetTask(t.Context(), &spec.GetTaskRequest{ID: asked.ID})
	if err != nil {
		t.Fatalf("GetTask on the other replica: %v", err)
	}
	// The same task, as the log has it: the question, where it stands,
	// the history (the message the client sent is rebuilt from the input).
	if diff := cmp.Diff(asked.Status, got.Status); diff != "" {
		t.Errorf("the status on the other replica (-asking +other):\n%s", diff)
	}
	if len(got.History) != len(asked.History) || got.History[0].ID != asked.History[0].ID || got.History[0].Parts[0].Text() != `call deploy {"env":"prod"}` {
		t.Errorf("history on the other replica %+v, want %d messages starting with the client's", got.History, len(asked.History))
	}

	m := text("approve")
	m.TaskID, m.ContextID = asked.ID, asked.ContextID
	res, err = cb.SendMessage(t.Context(), &spec.SendMessageRequest{Message: m})
	if err != nil {
		t.Fatalf("the answer on the other replica: %v", err)
	}
	done := res.(*spec.Task)
	if done.ID != asked.ID || done.Status.State != spec.TaskStateCompleted || artifactText(done) != `echo: "deployed to prod"` {
		t.Fatalf("after approve: %s %s %q; want %s completed", done.ID, done.Status.State, artifactText(done), asked.ID)
	}
	for name, c := range map[string]*fixture{"asking": a, "answering": b} {
		got, err := c.client(t, "").GetTask(t.Context(), &spec.GetTaskRequest{ID: asked.ID})
		if err != nil || got.Status.State != spec.TaskStateCompleted || artifactText(got) != `echo: "deployed to prod"` {
			t.Errorf("GetTask on the %s replica: %v %v; want completed with the answer", name, got, err)
		}
	}
	list, err := ca.ListTasks(t.Context(), &spec.ListTasksRequest{ContextID: asked.ContextID, IncludeArtifacts: true})
	if err != nil || len(list.Tasks) != 1 || list.Tasks[0].Status.State != spec.TaskStateCompleted {
		t.Errorf("ListTasks on the asking replica: %+v %v; want the completed task", list, err)
	}
}

// What a replica derives from the log is what the replica that ran the
// task holds: a completed task, a failed one, one that waits.
func TestDerivedTaskIsTheLiveOne(t *testing.T) {
	a, b := replicas(t)
	ca, cb := a.client(t, ""), b.client(t, "")
	for _, msg := range []string{"one two three", "fail", `call deploy {"env":"dev"}`} {
		res, err := ca.SendMessage(t.Context(), &spec.SendMessageRequest{Message: text(msg)})
		if err != nil {
			t.Fatal(err)
		}
		live := res.(*spec.Task)
		derived, err := cb.GetTask(t.Context(), &spec.GetTaskRequest{ID: live.ID})
		if err != nil {
			t.Fatalf("%q: %v", msg, err)
		}
		// The client's message is rebuilt from the input: its text and id.
		live.History[0] = &spec.Message{ID: live.History[0].ID, Role: live.History[0].Role, Parts: live.History[0].Parts,
			TaskID: live.ID, ContextID: live.ContextID}
		if diff := cmp.Diff(live, derived); diff != "" {
			t.Errorf("%q: the task derived on the other replica (-live +derived):\n%s", msg, diff)
		}
	}
}

// SubscribeToTask on a replica that does not run the task follows it in
// the log: the task as it stands, then its updates to its end.
func TestSubscribeOnAnotherReplica(t *testing.T) {
	a, b := replicas(t)
	res, err := a.client(t, "").SendMessage(t.Context(), &spec.SendMessageRequest{Message: text("call gate {}"),
		Config: &spec.SendMessageConfig{ReturnImmediately: true}})
	if err != nil {
		t.Fatal(err)
	}
	task := res.(*spec.Task)
	<-a.started
	var states []string
	released := false
	for ev, err := range b.client(t, "").SubscribeToTask(t.Context(), &spec.SubscribeToTaskRequest{ID: task.ID}) {
		if err != nil {
			t.Fatal(err)
		}
		switch e := ev.(type) {
		case *spec.Task:
			states = append(states, "task:"+string(e.Status.State))
		case *spec.TaskStatusUpdateEvent:
			states = append(states, "status:"+string(e.Status.State))
		case *spec.TaskArtifactUpdateEvent:
			states = append(states, "artifact:"+e.Artifact.Parts[0].Text())
		}
		if !released {
			released = true
			close(a.release)
		}
	}
	want := []string{"task:" + string(spec.TaskStateWorking), "status:" + string(spec.TaskStateWorking),
		`artifact:echo: "passed"`, "status:" + string(spec.TaskStateCompleted)}
	if diff := cmp.Diff(want, states); diff != "" {
		t.Errorf("the other replica's subscription (-want +got):\n%s", diff)
	}
}

// CancelTask on a replica that does not run the task cancels its run;
// both replicas then have it canceled. A task that ended is not
// cancelable.
func TestCancelOnAnotherReplica(t *testing.T) {
	a, b := replicas(t)
	ca, cb := a.client(t, ""), b.client(t, "")
	res, err := ca.SendMessage(t.Context(), &spec.SendMessageRequest{Message: text("call gate {}"),
		Config: &spec.SendMessageConfig{ReturnImmediately: true}})
	if err != nil {
		t.Fatal(err)
	}
	task := res.(*spec.Task)
	<-a.started
	// The running replica's subscription: once it has the task, the
	// other replica cancels it.
	var last spec.TaskState
	for ev, err := range ca.SubscribeToTask(t.Context(), &spec.SubscribeToTaskRequest{ID: task.ID}) {
		if err != nil {
			t.Fatal(err)
		}
		switch e := ev.(type) {
		case *spec.Task:
			got, err := cb.CancelTask(t.Context(), &spec.CancelTaskRequest{ID: task.ID})
			if err != nil || got.Status.State != spec.TaskStateCanceled {
				t.Fatalf("CancelTask on the other replica: %v %v", got, err)
			}
		case *spec.TaskStatusUpdateEvent:
			last = e.Status.State
		}
	}
	if last != spec.TaskStateCanceled {
		t.Errorf("the running replica's subscription ended %s, want canceled", last)
	}
	for name, c := range map[string]*fixture{"running": a, "canceling": b} {
		if got, err := c.client(t, "").GetTask(t.Context(), &spec.GetTaskRequest{ID: task.ID}); err != nil || got.Status.State != spec.TaskStateCanceled {
			t.Errorf("GetTask on the %s replica: %v %v; want canceled", name, got, err)
		}
	}
	a.waitStatus(t, t.Context(), task.ContextID, session.StatusCanceled)

	res, err = ca.SendMessage(t.Context(), &spec.SendMessageRequest{Message: text("hello")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cb.CancelTask(t.Context(), &spec.CancelTaskRequest{ID: res.(*spec.Task).ID}); !errors.Is(err, spec.ErrTaskNotCancelable) {
		t.Errorf("CancelTask of a completed task: %v; want not cancelable", err)
	}
}

// A message sent again (the same message id) is its task again: no
// second turn; over SendStreamingMessage, the task as it stands.
func TestRetriedMessageIsItsTask(t *testing.T) {
	f := newFixture(t, options{})
	c := f.client(t, "")
	m := text("hello there")
	res, err := c.SendMessage(t.Context(), &spec.SendMessageRequest{Message: m})
	if err != nil {
		t.Fatal(err)
	}
	first := res.(*spec.Task)
	res, err = c.SendMessage(t.Context(), &spec.SendMessageRequest{Message: m})
	if err != nil {
		t.Fatal(err)
	}
	if again := res.(*spec.Task); again.ID != first.ID || again.Status.State != spec.TaskStateCompleted || artifactText(again) != "echo: hello there" {
		t.Errorf("the message again: task %s %s %q; want %s, completed", again.ID, again.Status.State, artifactText(again), first.ID)
	}
	var evs []spec.Event
	for ev, err := range c.SendStreamingMessage(t.Context(), &spec.SendMessageRequest{Message: m}) {
		if err != nil {
			t.Fatal(err)
		}
		evs = append(evs, ev)
	}
	if len(evs) != 1 || evs[0].(*spec.Task).ID != first.ID {
		t.Errorf("the message again, streamed: %v; want the completed task alone", evs)
	}
	other := text("something else")
	other.ID = m.ID
	if _, err := c.SendMessage(t.Context(), &spec.SendMessageRequest{Message: other}); !errors.Is(err, spec.ErrInvalidParams) {
		t.Errorf("another message with the id: %v; want invalid params", err)
	}
	runs := 0
	for ev, err := range f.r.Store().Events(t.Context(), first.ContextID, 0) {
		if err != nil {
			t.Fatal(err)
		}
		if ev.Type == session.TypeRunStarted {
			runs++
		}
	}
	if runs != 1 {
		t.Errorf("the session ran %d turns, want 1", runs)
	}
}

// A task goes with its session: once the session is deleted, the task is
// not found, also on the server that ran it.
func TestTaskOfADeletedSession(t *testing.T) {
	f := newFixture(t, options{})
	c := f.client(t, "")
	res, err := c.SendMessage(t.Context(), &spec.SendMessageRequest{Message: text("hello")})
	if err != nil {
		t.Fatal(err)
	}
	task := res.(*spec.Task)
	req, _ := http.NewRequest("DELETE", f.http.URL+"/v1/sessions/"+task.ContextID, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		t.Fatalf("DELETE the session: %d", resp.StatusCode)
	}
	if _, err := c.GetTask(t.Context(), &spec.GetTaskRequest{ID: task.ID}); !errors.Is(err, spec.ErrTaskNotFound) {
		t.Errorf("GetTask of a deleted session's task: %v; want not found", err)
	}
}

// Task ids name a task's input: an id the adapter did not make, or one
// naming nothing stored, is no task.
func TestUnknownTaskIDs(t *testing.T) {
	f := newFixture(t, options{})
	c := f.client(t, "")
	res, err := c.SendMessage(t.Context(), &spec.SendMessageRequest{Message: text("hello")})
	if err != nil {
		t.Fatal(err)
	}
	real := res.(*spec.Task).ID
	for _, id := range []spec.TaskID{"nope", "task_!!", spec.TaskID(string(real) + "A"), spec.TaskID(string(real)[:len(real)-4])} {
		if _, err := c.GetTask(t.Context(), &spec.GetTaskRequest{ID: id}); !errors.Is(err, spec.ErrTaskNotFound) {
			t.Errorf("GetTask %q: %v; want task not found", id, err)
		}
		m := text("approve")
		m.TaskID = id
		if _, err := c.SendMessage(t.Context(), &spec.SendMessageRequest{Message: m}); !errors.Is(err, spec.ErrTaskNotFound) {
			t.Errorf("a message on task %q: %v; want task not found", id, err)
		}
	}
}

// ListTasks pages through a context's tasks, newest first, filters them
// by state, and lists the tenant's across contexts.
func TestListTasks(t *testing.T) {
	f := newFixture(t, options{})
	c := f.client(t, "")
	var ids []spec.TaskID
	ctxID := "ctx-list"
	for i := range 5 {
		msg := fmt.Sprintf("turn %d", i)
		if i == 3 {
			msg = `call deploy {"env":"prod"}`
		}
		m := text(msg)
		m.ContextID = ctxID
		res, err := c.SendMessage(t.Context(), &spec.SendMessageRequest{Message: m})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, res.(*spec.Task).ID)
		if i == 3 {
			// Answer it, so that the next message is a turn of its own.
			a := text("reject")
			a.TaskID, a.ContextID = ids[3], ctxID
			if _, err := c.SendMessage(t.Context(), &spec.SendMessageRequest{Message: a}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, err := c.SendMessage(t.Context(), &spec.SendMessageRequest{Message: text("elsewhere")}); err != nil {
		t.Fatal(err)
	}
	var got []spec.TaskID
	req := &spec.ListTasksRequest{ContextID: ctxID, PageSize: 2}
	for {
		page, err := c.ListTasks(t.Context(), req)
		if err != nil {
			t.Fatal(err)
		}
		if page.TotalSize != 5 {
			t.Errorf("total %d, want 5", page.TotalSize)
		}
		for _, tk := range page.Tasks {
			got = append(got, tk.ID)
		}
		if page.NextPageToken == "" {
			break
		}
		req.PageToken = page.NextPageToken
	}
	want := []spec.TaskID{ids[4], ids[3], ids[2], ids[1], ids[0]}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the context's tasks, page by page (-want +got):\n%s", diff)
	}
	done, err := c.ListTasks(t.Context(), &spec.ListTasksRequest{ContextID: ctxID, Status: spec.TaskStateCompleted})
	if err != nil || done.TotalSize != 5 {
		t.Errorf("completed tasks: %+v %v; want 5", done, err)
	}
	all, err := c.ListTasks(t.Context(), &spec.ListTasksRequest{})
	if err != nil || all.TotalSize != 6 {
		t.Errorf("the tenant's tasks: %+v %v; want 6", all, err)
	}
	if _, err := c.ListTasks(t.Context(), &spec.ListTasksRequest{PageToken: "bad"}); !errors.Is(err, spec.ErrInvalidParams) {
		t.Errorf("a bad page token: %v; want invalid params", err)
	}
	none, err := c.ListTasks(t.Context(), &spec.ListTasksRequest{ContextID: "no-such-context"})
	if err != nil || len(none.Tasks) != 0 {
		t.Errorf("an unknown context: %+v %v; want no task", none, err)
	}
}
