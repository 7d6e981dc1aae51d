package a2a_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	spec "github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/gateway"
	"github.com/agentrt/agentrt/internal/sse"
	"github.com/agentrt/agentrt/server"
	"github.com/agentrt/agentrt/server/a2a"
	"github.com/agentrt/agentrt/session"
	"github.com/agentrt/agentrt/session/memstore"
	"github.com/agentrt/agentrt/tool"
)

// stepClock advances a millisecond a reading: a delegation's progress in
// one state is recorded once (at most every second).
func stepClock() func() time.Time {
	var mu sync.Mutex
	t := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	return func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		t = t.Add(time.Millisecond)
		return t
	}
}

// parent is a runner on store whose agent "boss" has the fixture's agent
// as its remote tool "helper"; its model is the echo model, so that the
// input `call helper {"task": …}` delegates the task.
func (f *fixture) parent(t *testing.T, store session.Store) *agentrt.Runner {
	t.Helper()
	helper, err := a2a.Remote("helper", f.http.URL+"/v1/a2a/assistant", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	tools, err := tool.NewRegistry(helper)
	if err != nil {
		t.Fatal(err)
	}
	r, err := agentrt.NewRunner(agentrt.Config{Store: store, Now: stepClock(),
		Agents: []*agentrt.Agent{{Name: "boss", Model: echo, Tools: tools}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close(context.Background()) })
	return r
}

// delegate runs a turn of session id of r that calls helper with args,
// and returns its events, live ones included.
func delegate(t *testing.T, r *agentrt.Runner, id, args string) []*session.Event {
	t.Helper()
	var out []*session.Event
	for ev, err := range r.Run(t.Context(), id, agentrt.Input{Agent: "boss", Text: "call helper " + args}) {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, ev)
	}
	return out
}

// delegationLog is what the events show of the delegations: the
// helper's calls, the subagent_* events (child "C" standing for child)
// and the calls' results, in order; a call's live subagent_event tokens
// are joined into one line, before the delegation's end.
func delegationLog(events []*session.Event, child string) []string {
	var out []string
	var live strings.Builder
	flush := func() {
		if live.Len() > 0 {
			out = append(out, "live "+live.String())
			live.Reset()
		}
	}
	c := func(s string) string {
		if s == child {
			return "C"
		}
		return s
	}
	for _, ev := range events {
		switch d := ev.Data.(type) {
		case *session.ToolCall:
			out = append(out, fmt.Sprintf("tool_call %s %s", d.Name, d.Arguments))
		case *session.SubagentStarted:
			out = append(out, fmt.Sprintf("subagent_started %s %s %q resumed=%v", d.Agent, c(d.ChildSession), d.Task, d.Resumed))
		case *session.SubagentProgress:
			out = append(out, fmt.Sprintf("subagent_progress %s %s", c(d.ChildSession), d.State))
		case *session.SubagentEvent:
			if tok, ok := d.Event.Data.(*session.Token); ok && c(d.ChildSession) == "C" && d.Event.SessionID == d.ChildSession {
				live.WriteString(tok.Text)
			}
			continue
		case *session.SubagentPaused:
			flush()
			out = append(out, fmt.Sprintf("subagent_paused %s %s", c(d.ChildSession), d.Reason))
		case *session.SubagentFinished:
			flush()
			out = append(out, fmt.Sprintf("subagent_finished %s %q", c(d.ChildSession), d.Answer))
		case *session.SubagentError:
			flush()
			out = append(out, fmt.Sprintf("subagent_error %s %s %q", c(d.ChildSession), d.Code, d.Message))
		case *session.ToolResult:
			if d.OK {
				out = append(out, fmt.Sprintf("tool_result ok %s", d.Result))
			} else {
				out = append(out, fmt.Sprintf("tool_result failed %q", d.Error))
			}
		default:
			continue
		}
	}
	return out
}

// childOf returns the child of the last subagent_started in events.
func childOf(t *testing.T, events []*session.Event) string {
	t.Helper()
	child := ""
	for _, ev := range events {
		if d, ok := ev.Data.(*session.SubagentStarted); ok {
			child = d.ChildSession
		}
	}
	if !strings.HasPrefix(child, a2a.RemoteChildPrefix) {
		t.Fatalf("no subagent_started naming a remote task (child %q)", child)
	}
	return child
}

// storedLog returns session id's log as the store has it.
func storedLog(t *testing.T, st session.Store, id string) []*session.Event {
	t.Helper()
	var out []*session.Event
	for ev, err := range st.Events(context.Background(), id, 0) {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, ev)
	}
	return out
}

// A call of a remote A2A agent is a delegation in the parent's log: the
// remote task as the child (a2a:ID), its states as progress, its answer
// streaming live as the child's tokens, then its answer. The log holds
// the durable events, in that order; the run's stream has the live ones.
func TestRemoteDelegationEvents(t *testing.T) {
	f := newFixture(t, options{})
	mem := memstore.New()
	r := f.parent(t, mem)
	events := delegate(t, r, "p1", `{"task":"hello"}`)
	child := childOf(t, events)
	want := []string{
		`tool_call helper {"task":"hello"}`,
		`subagent_started helper C "hello" resumed=false`,
		`subagent_progress C submitted`,
		`subagent_progress C working`,
		`live echo: hello`,
		`subagent_finished C "echo: hello"`,
		`tool_result ok "echo: hello"`,
	}
	if diff := cmp.Diff(want, delegationLog(events, child)); diff != "" {
		t.Errorf("the run's events (-want +got):\n%s", diff)
	}
	stored := delegationLog(storedLog(t, mem, "p1"), child)
	if diff := cmp.Diff(append(want[:4:4], want[5:]...), stored); diff != "" {
		t.Errorf("the stored log (-want +got):\n%s", diff)
	}
	// The child names the remote task, as the remote agent has it.
	task, err := f.client(t, "").GetTask(t.Context(), &spec.GetTaskRequest{ID: spec.TaskID(strings.TrimPrefix(child, a2a.RemoteChildPrefix))})
	if err != nil || task.Status.State != spec.TaskStateCompleted || task.ContextID != "p1" {
		t.Fatalf("the remote task %s: %+v, %v", child, task, err)
	}
}

// A remote task that fails is the delegation's error; one that asks
// something pauses the delegation, and the call that answers it (task_id)
// goes on with the same child, to its answer.
func TestRemoteDelegationFailsAndAsks(t *testing.T) {
	f := newFixture(t, options{})
	mem := memstore.New()
	r := f.parent(t, mem)

	events := delegate(t, r, "p1", `{"task":"fail"}`)
	child := childOf(t, events)
	msg := "the remote agent helper's task " + strings.TrimPrefix(child, a2a.RemoteChildPrefix) +
		" ended TASK_STATE_FAILED: model: bad_request: the model refused"
	want := []string{
		`tool_call helper {"task":"fail"}`,
		`subagent_started helper C "fail" resumed=false`,
		`subagent_progress C submitted`,
		`subagent_progress C working`,
		fmt.Sprintf("subagent_error C failed %q", msg),
		fmt.Sprintf("tool_result failed %q", msg),
	}
	if diff := cmp.Diff(want, delegationLog(storedLog(t, mem, "p1"), child)); diff != "" {
		t.Errorf("a failed remote task (-want +got):\n%s", diff)
	}

	events = delegate(t, r, "p2", `{"task":"call deploy {\"env\":\"qa\"}"}`)
	child = childOf(t, events)
	id := strings.TrimPrefix(child, a2a.RemoteChildPrefix)
	log := delegationLog(storedLog(t, mem, "p2"), child)
	want = []string{
		`tool_call helper {"task":"call deploy {\"env\":\"qa\"}"}`,
		`subagent_started helper C "call deploy {\"env\":\"qa\"}" resumed=false`,
		`subagent_progress C submitted`,
		`subagent_progress C working`,
		`subagent_paused C input_required`,
	}
	if len(log) != len(want)+1 || !strings.Contains(log[len(want)], `asks: Allow deploy with arguments {\"env\":\"qa\"}?`) ||
		!strings.Contains(log[len(want)], `task_id \"`+id+`\"`) {
		t.Fatalf("the question's result %q: want the question and the task id", log[len(log)-1])
	}
	if diff := cmp.Diff(want, log[:len(want)]); diff != "" {
		t.Errorf("a remote task that asks (-want +got):\n%s", diff)
	}

	events = delegate(t, r, "p2", `{"task":"approve","task_id":"`+id+`"}`)
	want = []string{
		`tool_call helper {"task":"approve","task_id":"` + id + `"}`,
		`subagent_started helper C "approve" resumed=true`,
		`subagent_progress C working`,
		`live echo: "deployed to qa"`,
		`subagent_finished C "echo: \"deployed to qa\""`,
		`tool_result ok "echo: \"deployed to qa\""`,
	}
	if diff := cmp.Diff(want, delegationLog(events, child)); diff != "" {
		t.Errorf("the answer's call (-want +got):\n%s", diff)
	}
}

// crashStore fails the first commit that crash picks, as if its process
// died just before it: the run stops with what was committed before.
type crashStore struct {
	session.Store
	crash func(*session.Commit) bool

	mu      sync.Mutex
	crashed bool // guarded by mu
}

var errCrash = errors.New("the process died")

func (s *crashStore) Commit(ctx context.Context, c *session.Commit) error {
	s.mu.Lock()
	crash := !s.crashed && s.crash(c)
	s.crashed = s.crashed || crash
	s.mu.Unlock()
	if crash {
		return errCrash
	}
	return s.Store.Commit(ctx, c)
}

// atProgress picks the commit of a delegation's progress in state.
func atProgress(state string) func(*session.Commit) bool {
	return func(c *session.Commit) bool {
		for _, ev := range c.Events {
			if d, ok := ev.Data.(*session.SubagentProgress); ok && d.State == state {
				return true
			}
		}
		return false
	}
}

// A call whose process stopped mid-delegation runs again on resume and
// goes on with the remote task its first attempt started (the child its
// subagent_started recorded) rather than begin another: the task had
// answered meanwhile (GetTask), or is still under way (it is followed to
// its end). The remote agent ran the task once.
func TestRemoteDelegationResumedAfterCrash(t *testing.T) {
	for _, tc := range []struct {
		name string
		// settled: the remote task answered before the resume.
		settled bool
	}{{"answered meanwhile", true}, {"still working", false}} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, options{})
			mem := memstore.New()
			crashing := f.parent(t, &crashStore{Store: mem, crash: atProgress("working")})
			var runErr error
			for _, err := range crashing.Run(t.Context(), "p1", agentrt.Input{Agent: "boss", Text: `call helper {"task":"call gate {}"}`}) {
				if err != nil {
					runErr = err
				}
			}
			if !errors.Is(runErr, errCrash) {
				t.Fatalf("the first run: %v, want it stopped by the crash", runErr)
			}
			<-f.started // the remote task goes on without its caller
			child := childOf(t, storedLog(t, mem, "p1"))

			r := f.parent(t, mem)
			var events []*session.Event
			if tc.settled {
				close(f.release)
				awaitTask(t, f, strings.TrimPrefix(child, a2a.RemoteChildPrefix))
				res, err := agentrt.Collect(r.Resume(t.Context(), "p1"))
				if err != nil || res.Status != session.StatusDone {
					t.Fatalf("resume: %+v, %v", res, err)
				}
			} else {
				ctx, cancel := context.WithCancel(t.Context())
				defer cancel()
				resumed := make(chan struct{})
				var wg sync.WaitGroup
				wg.Go(func() {
					// The gate opens once the call went on with the task.
					defer close(f.release)
					for ev, err := range r.Watch(ctx, "p1", 0) {
						if d, ok := ev.Data.(*session.SubagentStarted); err == nil && ok && d.Resumed {
							close(resumed)
							return
						}
					}
				})
				res, err := agentrt.Collect(r.Resume(t.Context(), "p1"))
				cancel()
				wg.Wait()
				if err != nil || res.Status != session.StatusDone {
					t.Fatalf("resume: %+v, %v", res, err)
				}
				select {
				case <-resumed:
				default:
					t.Fatal("the resumed call never recorded that it went on with the task")
				}
			}
			events = storedLog(t, mem, "p1")
			var log []string
			for _, l := range delegationLog(events, child) {
				// A task still working may be seen submitted or working
				// by the resumed call (a subscription shows the task as
				// a2a-go's store has it): its progress is left out.
				if !strings.HasPrefix(l, "subagent_progress") || tc.settled {
					log = append(log, l)
				}
			}
			want := []string{
				`tool_call helper {"task":"call gate {}"}`,
				`subagent_started helper C "call gate {}" resumed=false`,
				`subagent_progress C submitted`,
				`tool_call helper {"task":"call gate {}"}`, // attempt 2
				`subagent_started helper C "call gate {}" resumed=true`,
				`subagent_finished C "echo: \"passed\""`,
				`tool_result ok "echo: \"passed\""`,
			}
			if !tc.settled {
				want = append(want[:2:2], want[3:]...)
			}
			if diff := cmp.Diff(want, log); diff != "" {
				t.Errorf("the parent's log (-want +got):\n%s", diff)
			}
			turns := 0
			for _, ev := range storedLog(t, f.r.Store(), "p1") {
				if ev.Type == session.TypeRunStarted {
					turns++
				}
			}
			if turns != 1 || len(f.started) != 0 {
				t.Errorf("the remote agent ran %d turns and %d more gate calls: want the one task", turns, len(f.started))
			}
		})
	}
}

// awaitTask waits until the fixture's task id has ended, as a2a-go's
// task store has it: its execution's subscription ends with it.
func awaitTask(t *testing.T, f *fixture, id string) {
	t.Helper()
	c := f.client(t, "")
	for range c.SubscribeToTask(t.Context(), &spec.SubscribeToTaskRequest{ID: spec.TaskID(id)}) {
	}
	task, err := c.GetTask(t.Context(), &spec.GetTaskRequest{ID: spec.TaskID(id)})
	if err != nil || !task.Status.State.Terminal() {
		t.Fatalf("task %s: %+v, %v; want it ended", id, task, err)
	}
}

// serve serves runner r's REST API on 127.0.0.1 and returns its URL.
func serve(t *testing.T, r *agentrt.Runner) string {
	t.Helper()
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
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(func() {
		hs.CloseClientConnections()
		_ = srv.Shutdown(context.Background())
		hs.Close()
		cancel()
		wg.Wait()
	})
	return hs.URL
}

// The REST event stream of the parent session (GET
// /v1/sessions/{id}/events as server-sent events, which follows the
// session as a watcher) shows a remote delegation as it happens: its
// durable events and the remote answer's live tokens.
func TestRemoteDelegationEventStream(t *testing.T) {
	f := newFixture(t, options{})
	r := f.parent(t, memstore.New())
	url := serve(t, r)
	if _, err := agentrt.Collect(r.Run(t.Context(), "p1", agentrt.Input{Agent: "boss", Text: "hi"})); err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequestWithContext(t.Context(), "GET", url+"/v1/sessions/p1/events", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	rd := sse.NewReader(resp.Body, 1<<20)
	// next returns the stream's events up to the end of turn turn.
	next := func(turn int) []*session.Event {
		var out []*session.Event
		for {
			name, data, err := rd.Next()
			if err != nil {
				t.Fatalf("the stream after %d events: %v", len(out), err)
			}
			if len(data) == 0 {
				continue
			}
			var ev session.Event
			if err := json.Unmarshal(data, &ev); err != nil {
				t.Fatalf("event %s %s: %v", name, data, err)
			}
			out = append(out, &ev)
			if ev.Type == session.TypeRunFinished && ev.Turn == turn {
				return out
			}
		}
	}
	next(1) // the stream follows the session from here on
	delegate(t, r, "p1", `{"task":"hello"}`)
	events := next(2)
	want := []string{
		`tool_call helper {"task":"hello"}`,
		`subagent_started helper C "hello" resumed=false`,
		`subagent_progress C submitted`,
		`subagent_progress C working`,
		`live echo: hello`,
		`subagent_finished C "echo: hello"`,
		`tool_result ok "echo: hello"`,
	}
	if diff := cmp.Diff(want, delegationLog(events, childOf(t, events))); diff != "" {
		t.Errorf("the event stream (-want +got):\n%s", diff)
	}
}

// noStreaming serves the fixture's card for agent "assistant" saying that
// it does not stream, and returns the URL to give a2a.Remote; the card
// still points the client at the fixture's endpoint.
func (f *fixture) noStreaming(t *testing.T) string {
	t.Helper()
	card := f.card(t, "assistant", "")
	card.Capabilities.Streaming = false
	b, err := json.Marshal(card)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/.well-known/agent-card.json" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(b)
	}))
	t.Cleanup(hs.Close)
	return hs.URL
}

// callRemote calls tool helper (a2a.Remote of url) as attempt attempt of
// call callID of session s1, with a Delegation whose earlier child is
// previous, and returns the result and what the call reported.
func callRemote(t *testing.T, url, callID string, attempt int, previous, args string) (string, []tool.DelegationReport, error) {
	t.Helper()
	helper, err := a2a.Remote("helper", url, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	var reports []tool.DelegationReport
	ctx := tool.WithCallInfo(t.Context(), tool.CallInfo{SessionID: "s1", CallID: callID, Attempt: attempt})
	ctx = tool.WithDelegation(ctx, tool.NewDelegation(previous, func(r tool.DelegationReport) { reports = append(reports, r) }))
	out, err := helper.Call(ctx, json.RawMessage(args))
	var s string
	_ = json.Unmarshal(out, &s)
	return s, reports, err
}

// gateTask starts a task of the fixture's agent that waits at its gate
// tool, and returns its id once the gate call began.
func gateTask(t *testing.T, f *fixture) string {
	t.Helper()
	var id string
	for ev, err := range f.client(t, "").SendStreamingMessage(t.Context(), &spec.SendMessageRequest{Message: text("call gate {}")}) {
		if err != nil {
			t.Fatal(err)
		}
		id = string(ev.TaskInfo().TaskID)
		break // the task goes on without its client
	}
	<-f.started
	return id
}

// A remote agent whose card says it does not stream is sent the message
// with SendMessage: the delegation starts and ends with its answer. A
// call that runs again goes on with its earlier task by looking it up
// until it settles; one whose earlier task the agent no longer knows
// sends the message again.
func TestRemoteDelegationWithoutStreaming(t *testing.T) {
	f := newFixture(t, options{})
	url := f.noStreaming(t)
	out, reports, err := callRemote(t, url, "c1", 1, "", `{"task":"hello"}`)
	if err != nil || out != "echo: hello" || len(reports) != 2 {
		t.Fatalf("call: %q, %v, %+v", out, err, reports)
	}
	child := reports[0].Child
	want := []tool.DelegationReport{
		{Kind: tool.DelegationStarted, Agent: "helper", Child: child, Task: "hello"},
		{Kind: tool.DelegationFinished, Answer: "echo: hello"},
	}
	if diff := cmp.Diff(want, reports); diff != "" || !strings.HasPrefix(child, a2a.RemoteChildPrefix) {
		t.Errorf("reports (-want +got):\n%s", diff)
	}

	// The earlier attempt's task is unknown: the message goes again.
	out, reports, err = callRemote(t, url, "c2", 2, a2a.RemoteChildPrefix+"gone", `{"task":"again"}`)
	if err != nil || out != "echo: again" || len(reports) != 2 || reports[0].Child == a2a.RemoteChildPrefix+"gone" || reports[0].Resumed {
		t.Fatalf("a call whose earlier task is gone: %q, %v, %+v", out, err, reports)
	}

	// The earlier attempt's task is still working: it is looked up until
	// it answers. The gate opens once the call has seen the task under
	// way (a progress report), so that it waits.
	id := gateTask(t, f)
	helper, err := a2a.Remote("helper", url, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []tool.DelegationReport
	working := make(chan struct{})
	var once sync.Once
	ctx := tool.WithCallInfo(t.Context(), tool.CallInfo{SessionID: "s1", CallID: "c3", Attempt: 2})
	ctx = tool.WithDelegation(ctx, tool.NewDelegation(a2a.RemoteChildPrefix+id, func(r tool.DelegationReport) {
		if r.Kind == tool.DelegationProgress {
			// The task as it stands (submitted or working): the call
			// waits for it.
			once.Do(func() { close(working) })
			return
		}
		got = append(got, r)
	}))
	var wg sync.WaitGroup
	wg.Go(func() {
		<-working
		close(f.release)
	})
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	res, err := helper.Call(ctx, json.RawMessage(`{"task":"call gate {}"}`))
	once.Do(func() { close(working) }) // never reported: the gate opens all the same
	wg.Wait()
	if err != nil || string(res) != `"echo: \"passed\""` {
		t.Fatalf("the resumed call: %s, %v", res, err)
	}
	want = []tool.DelegationReport{
		{Kind: tool.DelegationStarted, Agent: "helper", Child: a2a.RemoteChildPrefix + id, Task: "call gate {}", Resumed: true},
		{Kind: tool.DelegationFinished, Answer: `echo: "passed"`},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the resumed call's reports (-want +got):\n%s", diff)
	}
}

// A call that answers a remote agent's question and runs again after a
// crash that came before its answer reached the task (the task still
// asks, and its history lacks the answer) sends the answer, and records
// that it goes on with the task.
func TestRemoteDelegationAnswerResent(t *testing.T) {
	f := newFixture(t, options{})
	q := text(`call deploy {"env":"qa"}`)
	q.ContextID = "s1" // the calling session's, as callRemote's call has it
	res, err := f.client(t, "").SendMessage(t.Context(), &spec.SendMessageRequest{Message: q})
	if err != nil {
		t.Fatal(err)
	}
	task, ok := res.(*spec.Task)
	if !ok || task.Status.State != spec.TaskStateInputRequired {
		t.Fatalf("the question: %+v", res)
	}
	id := string(task.ID)
	out, reports, err := callRemote(t, f.http.URL+"/v1/a2a/assistant", "c1", 2, a2a.RemoteChildPrefix+id,
		`{"task":"approve","task_id":"`+id+`"}`)
	if err != nil || out != `echo: "deployed to qa"` {
		t.Fatalf("the answer: %q, %v", out, err)
	}
	if len(reports) < 2 || reports[0] != (tool.DelegationReport{Kind: tool.DelegationStarted, Agent: "helper",
		Child: a2a.RemoteChildPrefix + id, Task: "approve", Resumed: true}) || reports[len(reports)-1].Kind != tool.DelegationFinished {
		t.Errorf("reports %+v: want the task resumed, to its answer", reports)
	}
}
