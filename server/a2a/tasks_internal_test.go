package a2a

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	spec "github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv/taskstore"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/gateway"
	"github.com/agentrt/agentrt/internal/echomodel"
	"github.com/agentrt/agentrt/server"
	"github.com/agentrt/agentrt/session"
	"github.com/agentrt/agentrt/session/memstore"
	"github.com/agentrt/agentrt/tool"
)

// endpoint is agent "assistant"'s A2A endpoint (its handler and task
// store) on a server over a memstore; its tool "deploy" needs an
// approval; extra are more tools of the agent.
func endpoint(t *testing.T, extra ...tool.Tool) (*agentEndpoint, *agentrt.Runner) {
	t.Helper()
	deploy := tool.Must(tool.New("deploy", "deploys", func(ctx context.Context, in struct {
		Env string `json:"env"`
	}) (string, error) {
		return "deployed to " + in.Env, nil
	}))
	tools, err := tool.NewRegistry(append([]tool.Tool{deploy}, extra...)...)
	if err != nil {
		t.Fatal(err)
	}
	ag := &agentrt.Agent{Name: "assistant", Model: echomodel.Model{}, Tools: tools, Approval: agentrt.ApprovalPolicy{Ask: []string{"deploy"}}}
	r, err := agentrt.NewRunner(agentrt.Config{Store: memstore.New(), Agents: []*agentrt.Agent{ag}})
	if err != nil {
		t.Fatal(err)
	}
	gw, err := gateway.New(gateway.Config{Runner: r})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = gw.Run(ctx) })
	srv, err := server.New(server.Config{Runner: r, Gateway: gw, Heartbeat: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = srv.Shutdown(context.Background())
		cancel()
		wg.Wait()
		_ = r.Close(context.Background())
	})
	cfg := Config{Log: slog.New(slog.DiscardHandler), KeepAlive: time.Hour, PushTimeout: time.Second, PushPoll: time.Hour, PushLease: time.Hour,
		AllowPrivateWebhooks: true}
	// The pusher keeps push configs; nothing runs it here (its kicks
	// wait in its channel).
	var tasks *taskStore
	pushes := newPusher(srv, cfg, r.Store().(session.Records), func(string) *taskStore { return tasks }, cfg.Log)
	ep, err := newAgentEndpoint(srv, cfg, ag, pushes)
	if err != nil {
		t.Fatal(err)
	}
	tasks = ep.h.tasks
	return ep, r
}

// The task store's versions follow the task wherever it changes: an
// update based on a task that has moved on in the log since it was read
// (its request answered elsewhere) is refused with
// ErrConcurrentModification, as a2a-go's task manager expects; one based
// on the task as it stands is taken, and the version grows.
func TestTaskVersions(t *testing.T) {
	ep, r := endpoint(t)
	ctx := t.Context()
	res, err := ep.h.SendMessage(ctx, &spec.SendMessageRequest{Message: spec.NewMessage(spec.MessageRoleUser, spec.NewTextPart(`call deploy {"env":"prod"}`))})
	if err != nil {
		t.Fatal(err)
	}
	task := res.(*spec.Task)
	tasks := ep.h.tasks
	read, err := tasks.Get(ctx, task.ID)
	if err != nil || read.Task.Status.State != spec.TaskStateInputRequired {
		t.Fatalf("Get: %v %v", read, err)
	}
	if _, err := tasks.Update(ctx, &taskstore.UpdateRequest{Task: read.Task, PrevVersion: read.Version - 1}); !errors.Is(err, taskstore.ErrConcurrentModification) {
		t.Errorf("an update on an older version: %v; want concurrent modification", err)
	}

	// Answered elsewhere: the log moves on, the task held here is stale.
	rid := task.Status.Message.Metadata[MetaRequests].([]any)[0].(string)
	if _, err := r.Resolve(ctx, task.ContextID, rid, agentrt.Resolution{Decision: "reject"}); err != nil {
		t.Fatal(err)
	}
	if _, err := tasks.Update(ctx, &taskstore.UpdateRequest{Task: read.Task, PrevVersion: read.Version}); !errors.Is(err, taskstore.ErrConcurrentModification) {
		t.Errorf("an update on the task as it was before the answer: %v; want concurrent modification", err)
	}
	now, err := tasks.Get(ctx, task.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !now.Version.After(read.Version) {
		t.Errorf("version %d after the answer, was %d: want it greater", now.Version, read.Version)
	}
	next, err := tasks.Update(ctx, &taskstore.UpdateRequest{Task: now.Task, PrevVersion: now.Version, Event: spec.NewMessage(spec.MessageRoleUser, spec.NewTextPart("x"))})
	if err != nil || next != now.Version+1 {
		t.Errorf("an update on the current version %d: %d %v; want %d", now.Version, next, err, now.Version+1)
	}
	if _, err := tasks.Update(ctx, &taskstore.UpdateRequest{Task: now.Task, PrevVersion: now.Version}); !errors.Is(err, taskstore.ErrConcurrentModification) {
		t.Errorf("a second update on the same version: %v; want concurrent modification", err)
	}

	if _, err := tasks.Create(ctx, &spec.Task{ID: "mine", ContextID: "c"}); !errors.Is(err, spec.ErrInvalidRequest) {
		t.Errorf("Create: %v; want it refused (tasks are made as their input is stored)", err)
	}
	other := session.WithTenant(ctx, "other")
	if _, err := tasks.Get(other, task.ID); !errors.Is(err, spec.ErrTaskNotFound) {
		t.Errorf("another tenant's Get: %v; want not found", err)
	}
	if _, err := tasks.Update(other, &taskstore.UpdateRequest{Task: now.Task}); !errors.Is(err, spec.ErrTaskNotFound) {
		t.Errorf("another tenant's Update: %v; want not found", err)
	}
}

// The tokens of one batch go out as one chunk of the answer, in order
// around the events between them; the first chunk of a follower replaces
// the artifact, the next ones append.
func TestTokensOfABatchAreOneChunk(t *testing.T) {
	tr := &translator{info: spec.TaskInfo{TaskID: "t", ContextID: "c"}}
	tok := func(s string) *session.Event {
		return &session.Event{Type: session.TypeToken, RunID: "r", Data: &session.Token{Text: s}}
	}
	batch := []*session.Event{
		{Seq: 1, Type: session.TypeRunStarted, RunID: "r", Data: &session.RunStarted{}},
		tok("one "), tok("two "), {Type: session.TypeToken, RunID: "r", Data: &session.Token{Pulse: true}},
		{Seq: 2, Type: session.TypeToolCall, RunID: "r", Data: &session.ToolCall{CallID: "c1", Name: "gate"}},
		tok("three "), tok("four"), tok("!"),
		{Type: session.TypeToken, RunID: "other", Data: &session.Token{Text: "not mine"}},
	}
	out, end := tr.batch(nil, batch)
	if end {
		t.Fatal("the batch ended the turn")
	}
	var got []string
	for _, ev := range out {
		switch e := ev.(type) {
		case *spec.TaskStatusUpdateEvent:
			got = append(got, "status:"+string(e.Status.State))
		case *spec.TaskArtifactUpdateEvent:
			got = append(got, "chunk:"+e.Artifact.Parts[0].Text()+map[bool]string{true: "+", false: "="}[e.Append])
		}
	}
	want := []string{"status:" + string(spec.TaskStateWorking), "chunk:one two =", "status:" + string(spec.TaskStateWorking), "chunk:three four!+"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the batch's events (-want +got):\n%s", diff)
	}
}

// A streamed message that starts a task is streamed by the handler from
// its turn, not through a2a-go's task manager (which copies the task
// through gob several times an event): the store takes no update from
// the manager, and holds the task as the stream left it, as the manager
// would have. A message with a push config is streamed the same way (the
// pusher, not a2a-go, sends its notifications), its config kept.
func TestNewTaskStreamBypassesTaskManager(t *testing.T) {
	ep, _ := endpoint(t)
	stream := func(req *spec.SendMessageRequest) []spec.Event {
		t.Helper()
		var evs []spec.Event
		for ev, err := range ep.h.SendStreamingMessage(t.Context(), req) {
			if err != nil {
				t.Fatal(err)
			}
			evs = append(evs, ev)
		}
		return evs
	}
	msg := spec.NewMessage(spec.MessageRoleUser, spec.NewTextPart("one two"))
	evs := stream(&spec.SendMessageRequest{Message: msg})
	if n := ep.h.tasks.updates.Load(); n != 0 {
		t.Errorf("a2a-go's task manager made %d updates of a new streamed task; want none", n)
	}
	if len(evs) < 3 {
		t.Fatalf("stream: %d events; want the task, its updates and its end", len(evs))
	}
	first, ok := evs[0].(*spec.Task)
	if !ok || first.Status.State != spec.TaskStateSubmitted || len(first.History) != 1 || first.History[0].ID != msg.ID {
		t.Fatalf("first event %#v: want the task, submitted, with the message", evs[0])
	}
	last, ok := evs[len(evs)-1].(*spec.TaskStatusUpdateEvent)
	if !ok || last.Status.State != spec.TaskStateCompleted {
		t.Fatalf("last event %#v: want COMPLETED", evs[len(evs)-1])
	}
	got, err := ep.h.GetTask(t.Context(), &spec.GetTaskRequest{ID: first.ID})
	if err != nil {
		t.Fatal(err)
	}
	if got.Status.State != spec.TaskStateCompleted || len(got.Artifacts) != 1 || got.Artifacts[0].Parts[0].Text() != "echo: one two" {
		t.Errorf("GetTask after the stream: %+v; want COMPLETED with the answer", got)
	}

	push := &spec.SendMessageRequest{Message: spec.NewMessage(spec.MessageRoleUser, spec.NewTextPart("three")),
		Config: &spec.SendMessageConfig{PushConfig: &spec.PushConfig{URL: "http://127.0.0.1:1/hook"}}}
	evs = stream(push)
	if n := ep.h.tasks.updates.Load(); n != 0 {
		t.Errorf("a message with a push config: a2a-go's task manager made %d updates; want none", n)
	}
	cfgs, err := ep.h.ListTaskPushConfigs(t.Context(), &spec.ListTaskPushConfigRequest{TaskID: evs[0].(*spec.Task).ID})
	if err != nil || len(cfgs.Configs) != 1 || cfgs.Configs[0].URL != "http://127.0.0.1:1/hook" {
		t.Errorf("the task's push configs: %+v %v; want the message's", cfgs, err)
	}
}

// The end of the request that made a task (release) forgets the task
// only while its turn is still untaken: an entry that a2a-go's execution
// of an answer made meanwhile (the client answered the task's question
// as soon as it read it, before that request's handler returned) stays,
// so that the answer's updates are not refused as concurrent ones.
func TestReleaseKeepsAnotherEntry(t *testing.T) {
	ep, _ := endpoint(t)
	s := ep.h.tasks
	id := spec.TaskID("task_x")
	answering := &entry{task: &spec.Task{ID: id, Status: spec.TaskStatus{State: spec.TaskStateWorking}}, version: 7}
	s.mu.Lock()
	s.tasks[id] = answering
	s.mu.Unlock()
	s.release(id)
	s.mu.Lock()
	got := s.tasks[id]
	s.mu.Unlock()
	if got != answering {
		t.Errorf("after release, the entry at %s is %+v; want the answer's, kept", id, got)
	}
}
