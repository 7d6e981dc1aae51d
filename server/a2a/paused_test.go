package a2a_test

import (
	"context"
	"strings"
	"testing"

	spec "github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/session/memstore"
	"github.com/agentrt/agentrt/tool"
)

// brief is an agent whose runs pause after one round: a message that
// calls its tool ("call deploy {...}") pauses at max_rounds before the
// model answers the tool's result.
func brief(t *testing.T) *agentrt.Agent {
	t.Helper()
	deploy := tool.Must(tool.New("deploy", "deploys the service", func(ctx context.Context, in struct {
		Env string `json:"env"`
	}) (string, error) {
		return "deployed to " + in.Env, nil
	}))
	tools, err := tool.NewRegistry(deploy)
	if err != nil {
		t.Fatal(err)
	}
	return &agentrt.Agent{Name: "brief", Model: echo, Tools: tools, Limits: agentrt.Limits{MaxRounds: 1}}
}

// A run paused at max_rounds can be resumed: its task is INPUT_REQUIRED,
// not FAILED, saying why and that "continue" goes on, here and on a
// replica that reads it from the log; another answer leaves it waiting;
// "continue" on the task resumes the run, which the task follows to its
// end.
func TestPausedTaskResumes(t *testing.T) {
	st := memstore.New()
	a := newFixture(t, options{store: st, agents: []*agentrt.Agent{brief(t)}})
	b := newFixture(t, options{store: st, agents: []*agentrt.Agent{brief(t)}})
	c := a.agentClient(t, "brief", "")
	res, err := c.SendMessage(t.Context(), &spec.SendMessageRequest{Message: text(`call deploy {"env":"prod"}`)})
	if err != nil {
		t.Fatal(err)
	}
	paused := res.(*spec.Task)
	says := func(task *spec.Task, want ...string) bool {
		if task.Status.State != spec.TaskStateInputRequired || task.Status.Message == nil {
			return false
		}
		for _, w := range want {
			if !strings.Contains(task.Status.Message.Parts[0].Text(), w) {
				return false
			}
		}
		return true
	}
	if !says(paused, "limits.max_rounds", "Reply continue on this task", "/v1/sessions/"+paused.ContextID+"/resume") ||
		paused.Status.Message.Metadata["agentrt.paused"] != "max_rounds" {
		t.Fatalf("the paused task: %s %+v; want input-required, saying it stopped at max_rounds and how to go on", paused.Status.State, paused.Status.Message)
	}
	got, err := b.agentClient(t, "brief", "").GetTask(t.Context(), &spec.GetTaskRequest{ID: paused.ID})
	if err != nil || !says(got, "limits.max_rounds") {
		t.Fatalf("GetTask on a replica: %v %v; want it input-required at max_rounds", got, err)
	}

	on := func(s string) *spec.Message {
		m := text(s)
		m.TaskID, m.ContextID = paused.ID, paused.ContextID
		return m
	}
	res, err = c.SendMessage(t.Context(), &spec.SendMessageRequest{Message: on("maybe")})
	if err != nil {
		t.Fatal(err)
	}
	if still := res.(*spec.Task); !says(still, "reply continue", `"maybe"`) {
		t.Fatalf("after %q: %s %+v; want still input-required, saying what to answer", "maybe", still.Status.State, still.Status.Message)
	}
	res, err = c.SendMessage(t.Context(), &spec.SendMessageRequest{Message: on("continue")})
	if err != nil {
		t.Fatal(err)
	}
	done := res.(*spec.Task)
	if done.ID != paused.ID || done.Status.State != spec.TaskStateCompleted || artifactText(done) != `echo: "deployed to prod"` {
		t.Fatalf("after continue: %s %s %q; want the same task completed with the answer", done.ID, done.Status.State, artifactText(done))
	}
}
