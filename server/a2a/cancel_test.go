package a2a_test

import (
	"errors"
	"strings"
	"testing"

	spec "github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/agentrt/agentrt/gateway"
)

// CancelTask cancels the task's own run, not whatever runs in its
// session: a task whose input waits behind another task's turn (queue
// policy) is not cancelable, and the turn that runs goes on; each task
// then ends as its run does.
func TestCancelTaskOfAQueuedInput(t *testing.T) {
	f := newFixture(t, options{policy: gateway.Queue})
	c := f.client(t, "")
	res, err := c.SendMessage(t.Context(), &spec.SendMessageRequest{Message: text("call gate {}"), Config: &spec.SendMessageConfig{ReturnImmediately: true}})
	if err != nil {
		t.Fatal(err)
	}
	running := res.(*spec.Task)
	<-f.started
	m := text("after the gate")
	m.ContextID = running.ContextID
	res, err = c.SendMessage(t.Context(), &spec.SendMessageRequest{Message: m, Config: &spec.SendMessageConfig{ReturnImmediately: true}})
	if err != nil {
		t.Fatal(err)
	}
	queued := res.(*spec.Task)
	if _, err := c.CancelTask(t.Context(), &spec.CancelTaskRequest{ID: queued.ID}); !errors.Is(err, spec.ErrTaskNotCancelable) ||
		!strings.Contains(err.Error(), "waits for a turn") {
		t.Fatalf("CancelTask of the queued task: %v; want not cancelable, its input waiting", err)
	}
	// (Its state may still read submitted: a2a-go applies the run's first
	// update on a goroutine of its own.)
	got, err := c.GetTask(t.Context(), &spec.GetTaskRequest{ID: running.ID})
	close(f.release)
	if err != nil || got.Status.State.Terminal() {
		t.Fatalf("the running task after the refused cancel: %v %v; want it going on", got, err)
	}
	for _, task := range []*spec.Task{running, queued} {
		for ev, err := range c.SubscribeToTask(t.Context(), &spec.SubscribeToTaskRequest{ID: task.ID}) {
			if err != nil {
				t.Fatal(err)
			}
			if s, ok := ev.(*spec.Task); ok && s.Status.State.Terminal() && s.Status.State != spec.TaskStateCompleted {
				t.Errorf("task %q ended %s; want completed", task.History[0].Parts[0].Text(), s.Status.State)
			}
			if s, ok := ev.(*spec.TaskStatusUpdateEvent); ok && s.Status.State.Terminal() && s.Status.State != spec.TaskStateCompleted {
				t.Errorf("task %q ended %s; want completed", task.History[0].Parts[0].Text(), s.Status.State)
			}
		}
	}
}
