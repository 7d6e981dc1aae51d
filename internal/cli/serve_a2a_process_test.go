package cli_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	spec "github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/a2aproject/a2a-go/v2/a2aclient/agentcard"

	"github.com/agentrt/agentrt/internal/fakellm"
	"github.com/agentrt/agentrt/internal/pgtest"
	"github.com/agentrt/agentrt/internal/testenv"
)

// A2A tasks of agentrt serve live in the store, not in the process: a
// task is found, answered and followed after the server that made it was
// killed, and on another replica.

// carefulConfig is an assistant on the fake model (an arithmetic question
// gets a calculator call, then a sentence quoting the result) whose
// calculator needs an approval.
func carefulConfig(llm *fakellm.Server, extra string) string {
	return fmt.Sprintf(`%smodels:
  m: {provider: openai, model: fake, base_url: %q}
agents:
  assistant: {model: m, tools: [calculator], approval: {ask: [calculator]}}
`, extra, llm.URL+"/v1")
}

// a2aClient is a2a-go's client of agent "assistant" of the server at
// base, found through its card.
func a2aClient(t *testing.T, base string) *a2aclient.Client {
	t.Helper()
	card, err := agentcard.NewResolver(http.DefaultClient).Resolve(t.Context(), base+"/v1/a2a/assistant")
	if err != nil {
		t.Fatalf("the agent card of %s: %v", base, err)
	}
	c, err := a2aclient.NewFromCard(t.Context(), card)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Destroy() })
	return c
}

// approve is the message that answers task's approval.
func approve(task *spec.Task) *spec.Message {
	m := spec.NewMessage(spec.MessageRoleUser, spec.NewTextPart("approve"))
	m.TaskID, m.ContextID = task.ID, task.ContextID
	return m
}

// states follows events to their end and returns what they were: the
// task's state for a task, status: and its state for an update,
// artifact: and its text for an artifact. first, if not nil, is called
// after the first event.
func states(t *testing.T, events func(yield func(spec.Event, error) bool), first func()) []string {
	t.Helper()
	var got []string
	for ev, err := range events {
		if err != nil {
			t.Fatalf("after %v: %v", got, err)
		}
		switch e := ev.(type) {
		case *spec.Task:
			got = append(got, "task:"+string(e.Status.State))
		case *spec.TaskStatusUpdateEvent:
			got = append(got, "status:"+string(e.Status.State))
		case *spec.TaskArtifactUpdateEvent:
			var b strings.Builder
			for _, p := range e.Artifact.Parts {
				b.WriteString(p.Text())
			}
			got = append(got, "artifact:"+b.String())
		}
		if first != nil {
			first()
			first = nil
		}
	}
	return got
}

// answerText is the text of a task's artifacts.
func answerText(task *spec.Task) string {
	var b strings.Builder
	for _, a := range task.Artifacts {
		for _, p := range a.Parts {
			b.WriteString(p.Text())
		}
	}
	return b.String()
}

// On SQLite: a task waits for an approval, the server is killed with
// SIGKILL and started again; the task is there, waiting, and the answer
// on its id continues it to its end, which a subscription follows.
func TestServeProcessA2ATaskAcrossRestart(t *testing.T) {
	t.Parallel()
	testenv.SkipShort(t, "runs agentrt serve")
	llm := fakellm.Start(t)
	e := newEnv(t, carefulConfig(llm, ""), nil)
	s1 := startServe(t, e, nil)
	res, err := a2aClient(t, s1.url).SendMessage(t.Context(), &spec.SendMessageRequest{
		Message: spec.NewMessage(spec.MessageRoleUser, spec.NewTextPart("what is 21*2+5"))})
	if err != nil {
		t.Fatal(err)
	}
	asked := res.(*spec.Task)
	if asked.Status.State != spec.TaskStateInputRequired || !strings.Contains(asked.Status.Message.Parts[0].Text(), "calculator") {
		t.Fatalf("task %s %+v: want input-required, asking about the calculator", asked.Status.State, asked.Status.Message)
	}
	kill(s1.child)

	s2 := startServe(t, e, nil)
	c := a2aClient(t, s2.url)
	got, err := c.GetTask(t.Context(), &spec.GetTaskRequest{ID: asked.ID})
	if err != nil {
		t.Fatalf("GetTask after the restart: %v", err)
	}
	if got.Status.State != spec.TaskStateInputRequired || got.Status.Message.Parts[0].Text() != asked.Status.Message.Parts[0].Text() {
		t.Fatalf("GetTask after the restart: %s %+v; want the task waiting with its question", got.Status.State, got.Status.Message)
	}
	if sub := states(t, c.SubscribeToTask(t.Context(), &spec.SubscribeToTaskRequest{ID: asked.ID}), nil); len(sub) != 1 || sub[0] != "task:"+string(spec.TaskStateInputRequired) {
		t.Errorf("SubscribeToTask of the waiting task: %v; want the task, waiting, and the end", sub)
	}

	// The answer; the model call it leads to waits until the
	// subscription has the task.
	arrived, release := llm.Hold()
	res, err = c.SendMessage(t.Context(), &spec.SendMessageRequest{Message: approve(asked), Config: &spec.SendMessageConfig{ReturnImmediately: true}})
	if err != nil {
		t.Fatalf("the answer after the restart: %v", err)
	}
	if res.(*spec.Task).ID != asked.ID {
		t.Fatalf("the answer went to task %s, want %s", res.(*spec.Task).ID, asked.ID)
	}
	<-arrived
	sub := states(t, c.SubscribeToTask(t.Context(), &spec.SubscribeToTaskRequest{ID: asked.ID}), release)
	if len(sub) < 2 || sub[0] != "task:"+string(spec.TaskStateWorking) || sub[len(sub)-1] != "status:"+string(spec.TaskStateCompleted) {
		t.Errorf("the subscription: %v; want the task working, then its updates to completed", sub)
	}
	done, err := c.GetTask(t.Context(), &spec.GetTaskRequest{ID: asked.ID})
	if err != nil || done.Status.State != spec.TaskStateCompleted || !strings.Contains(answerText(done), "47") {
		t.Fatalf("GetTask at the end: %v %v; want completed, the answer saying 47", done, err)
	}
	s2.stopOK()
}

// pushHook is a webhook on 127.0.0.1 that records the task states
// pushed to it.
type pushHook struct {
	*httptest.Server
	states chan spec.TaskState
}

func newPushHook(t *testing.T) *pushHook {
	t.Helper()
	h := &pushHook{states: make(chan spec.TaskState, 256)}
	h.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var sr spec.StreamResponse
		if err := json.NewDecoder(r.Body).Decode(&sr); err != nil {
			t.Errorf("a push: %v", err)
			return
		}
		switch e := sr.Event.(type) {
		case *spec.Task:
			h.states <- e.Status.State
		case *spec.TaskStatusUpdateEvent:
			h.states <- e.Status.State
		}
	}))
	t.Cleanup(h.Close)
	return h
}

// until reads the states pushed until want, and returns them; the test
// fails if want does not come within procTimeout (stderr says why).
func (h *pushHook) until(t *testing.T, want spec.TaskState, stderr func() string) []spec.TaskState {
	t.Helper()
	var got []spec.TaskState
	timeout := time.After(procTimeout)
	for {
		select {
		case s := <-h.states:
			if got = append(got, s); s == want {
				return got
			}
		case <-timeout:
			t.Fatalf("states pushed %v; no %s within %v; stderr:\n%s", got, want, procTimeout, stderr())
		}
	}
}

// A task's push config survives a SIGKILL of the server that took it
// (SQLite): a task that waited for an approval, answered after the
// restart, and a task whose run was under way, which the restarted
// server resumes, are pushed to their ends by the restarted server.
func TestServeProcessA2APushAcrossRestart(t *testing.T) {
	t.Parallel()
	testenv.SkipShort(t, "runs agentrt serve")
	llm := fakellm.Start(t)
	e := newEnv(t, carefulConfig(llm, "server:\n  a2a: {allow_private_webhooks: true}\n"), nil)
	waiting, running := newPushHook(t), newPushHook(t)
	s1 := startServe(t, e, nil)
	c1 := a2aClient(t, s1.url)
	res, err := c1.SendMessage(t.Context(), &spec.SendMessageRequest{Message: spec.NewMessage(spec.MessageRoleUser, spec.NewTextPart("what is 21*2+5")),
		Config: &spec.SendMessageConfig{PushConfig: &spec.PushConfig{URL: waiting.URL, Token: "w"}}})
	if err != nil {
		t.Fatal(err)
	}
	asked := res.(*spec.Task)
	waiting.until(t, spec.TaskStateInputRequired, s1.stderrText)
	arrived, _ := llm.Hold()
	res, err = c1.SendMessage(t.Context(), &spec.SendMessageRequest{Message: spec.NewMessage(spec.MessageRoleUser, spec.NewTextPart("what is 2+2")),
		Config: &spec.SendMessageConfig{ReturnImmediately: true, PushConfig: &spec.PushConfig{URL: running.URL}}})
	if err != nil {
		t.Fatal(err)
	}
	underWay := res.(*spec.Task)
	<-arrived // its model call is under way
	running.until(t, spec.TaskStateWorking, s1.stderrText)
	kill(s1.child)

	s2 := startServe(t, e, nil)
	c2 := a2aClient(t, s2.url)
	cfgs, err := c2.ListTaskPushConfigs(t.Context(), &spec.ListTaskPushConfigRequest{TaskID: asked.ID})
	if err != nil || len(cfgs) != 1 || cfgs[0].URL != waiting.URL || cfgs[0].Token != "w" {
		t.Fatalf("the waiting task's push configs after the restart: %+v %v", cfgs, err)
	}
	if _, err := c2.SendMessage(t.Context(), &spec.SendMessageRequest{Message: approve(asked)}); err != nil {
		t.Fatalf("the answer after the restart: %v", err)
	}
	waiting.until(t, spec.TaskStateCompleted, s2.stderrText)
	// The run under way at the kill is resumed by the restarted server
	// (its recovery), and asks for its approval: pushed, then answered.
	running.until(t, spec.TaskStateInputRequired, s2.stderrText)
	if _, err := c2.SendMessage(t.Context(), &spec.SendMessageRequest{Message: approve(underWay)}); err != nil {
		t.Fatalf("the answer to the resumed task: %v", err)
	}
	running.until(t, spec.TaskStateCompleted, s2.stderrText)
	s2.stopOK()
}

// On Postgres, two servers: a task made on one is read, answered and
// followed on the other, and canceled from the replica that does not run
// it; its push config, made with it on the first, is pushed to its end
// after the answer on the other.
func TestServeProcessA2AReplicas(t *testing.T) {
	t.Parallel()
	testenv.SkipShort(t, "runs agentrt serve")
	dsn, _ := pgtest.Schema(t)
	llm := fakellm.Start(t)
	e := newEnvStore(t, dsn, carefulConfig(llm, "control_poll: 100ms\nserver:\n  a2a: {allow_private_webhooks: true}\n"), nil)
	reps := []*serveProc{startServe(t, e, nil), startServe(t, e, nil)}
	ca, cb := a2aClient(t, reps[0].url), a2aClient(t, reps[1].url)
	hook := newPushHook(t)

	res, err := ca.SendMessage(t.Context(), &spec.SendMessageRequest{Message: spec.NewMessage(spec.MessageRoleUser, spec.NewTextPart("what is 6*7")),
		Config: &spec.SendMessageConfig{PushConfig: &spec.PushConfig{URL: hook.URL}}})
	if err != nil {
		t.Fatal(err)
	}
	asked := res.(*spec.Task)
	if asked.Status.State != spec.TaskStateInputRequired {
		t.Fatalf("task %s: want input-required", asked.Status.State)
	}
	got, err := cb.GetTask(t.Context(), &spec.GetTaskRequest{ID: asked.ID})
	if err != nil || got.Status.State != spec.TaskStateInputRequired {
		t.Fatalf("GetTask on the other replica: %v %v; want it waiting", got, err)
	}

	// Answered on the second replica, followed on the first.
	arrived, release := llm.Hold()
	if _, err := cb.SendMessage(t.Context(), &spec.SendMessageRequest{Message: approve(asked), Config: &spec.SendMessageConfig{ReturnImmediately: true}}); err != nil {
		t.Fatalf("the answer on the other replica: %v", err)
	}
	<-arrived
	sub := states(t, ca.SubscribeToTask(t.Context(), &spec.SubscribeToTaskRequest{ID: asked.ID}), release)
	if len(sub) < 2 || sub[0] != "task:"+string(spec.TaskStateWorking) || sub[len(sub)-1] != "status:"+string(spec.TaskStateCompleted) ||
		!strings.Contains(sub[len(sub)-2], "42") {
		t.Errorf("the first replica's subscription: %v; want the task working, its answer, completed", sub)
	}
	stderrs := func() string { return reps[0].stderrText() + reps[1].stderrText() }
	hook.until(t, spec.TaskStateCompleted, stderrs)
	for i, c := range []*a2aclient.Client{ca, cb} {
		// The replica where a2a-go ran the answer holds the task as its
		// own follower last saw it: the run's last commit, made by the
		// other replica, reaches it a moment after the subscription
		// above saw it. Look until it has (the test's deadline bounds it).
		var done *spec.Task
		var err error
		for {
			done, err = c.GetTask(t.Context(), &spec.GetTaskRequest{ID: asked.ID})
			if err != nil || done.Status.State.Terminal() || t.Context().Err() != nil {
				break
			}
			runtime.Gosched()
		}
		if err != nil || done.Status.State != spec.TaskStateCompleted || !strings.Contains(answerText(done), "42") {
			t.Errorf("GetTask on replica %d: %v %v; want completed with the answer", i, done, err)
		}
	}

	// A task whose model call hangs on the first replica, canceled from
	// the second.
	arrived, release = llm.Hold()
	defer release()
	res, err = ca.SendMessage(t.Context(), &spec.SendMessageRequest{Message: spec.NewMessage(spec.MessageRoleUser, spec.NewTextPart("what is 2+2")),
		Config: &spec.SendMessageConfig{ReturnImmediately: true}})
	if err != nil {
		t.Fatal(err)
	}
	running := res.(*spec.Task)
	<-arrived
	canceled, err := cb.CancelTask(t.Context(), &spec.CancelTaskRequest{ID: running.ID})
	if err != nil || canceled.Status.State != spec.TaskStateCanceled {
		t.Fatalf("CancelTask on the other replica: %v %v", canceled, err)
	}
	if got := states(t, ca.SubscribeToTask(t.Context(), &spec.SubscribeToTaskRequest{ID: running.ID}), nil); len(got) == 0 || !strings.HasSuffix(got[len(got)-1], string(spec.TaskStateCanceled)) {
		t.Errorf("the running replica's subscription after the cancel: %v; want it ending canceled", got)
	}
	for _, r := range reps {
		r.stopOK()
	}
}

// server.a2a in agentrt.yaml reaches the A2A endpoints: the cards give
// public_url as the agents' endpoint, and allow_private_webhooks lets a
// task's push notifications go to 127.0.0.1.
func TestServeProcessA2AConfig(t *testing.T) {
	t.Parallel()
	testenv.SkipShort(t, "runs agentrt serve")
	e := newEnv(t, demoConfig+"server:\n  a2a: {public_url: \"https://agents.example.com/\", allow_private_webhooks: true}\n", nil)
	s := startServe(t, e, nil)
	card, err := agentcard.NewResolver(http.DefaultClient).Resolve(t.Context(), s.url+"/v1/a2a/assistant")
	if err != nil {
		t.Fatal(err)
	}
	if len(card.SupportedInterfaces) != 1 || card.SupportedInterfaces[0].URL != "https://agents.example.com/v1/a2a/assistant" {
		t.Fatalf("the card's interfaces %+v: want https://agents.example.com/v1/a2a/assistant", card.SupportedInterfaces)
	}
	pushed := make(chan string, 16)
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		pushed <- string(b)
	}))
	defer hook.Close()
	// The card names the public URL, which does not lead here: the client
	// is made from a card naming this server.
	card.SupportedInterfaces[0].URL = s.url + "/v1/a2a/assistant"
	c, err := a2aclient.NewFromCard(t.Context(), card)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Destroy()
	res, err := c.SendMessage(t.Context(), &spec.SendMessageRequest{Message: spec.NewMessage(spec.MessageRoleUser, spec.NewTextPart("what is 2+3")),
		Config: &spec.SendMessageConfig{PushConfig: &spec.PushConfig{URL: hook.URL}}})
	if err != nil {
		t.Fatal(err)
	}
	if task := res.(*spec.Task); task.Status.State != spec.TaskStateCompleted {
		t.Fatalf("task %s %+v: want completed (its pushes to 127.0.0.1 allowed)", task.Status.State, task.Status.Message)
	}
	// A refused webhook is only logged: without a notification the test
	// would wait, so it gives up after procTimeout.
	timeout := time.After(procTimeout)
	for done := false; !done; {
		select {
		case b := <-pushed:
			done = strings.Contains(b, string(spec.TaskStateCompleted))
		case <-timeout:
			t.Fatalf("no push notification of the completed task reached 127.0.0.1 in %v; stderr:\n%s", procTimeout, s.stderrText())
		}
	}
	s.stopOK()
}
