package agentrt_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/model/scripted"
	"github.com/agentrt/agentrt/session"
	"github.com/agentrt/agentrt/session/memstore"
	"github.com/agentrt/agentrt/tool"
)

func calcAgent(m model.Model, tools *tool.Registry) *agentrt.Agent {
	return &agentrt.Agent{Name: "calc", SystemPrompt: "You calculate.", Model: m, Tools: tools}
}

func TestRunThinkActLoop(t *testing.T) {
	m := scripted.New("m",
		scripted.Reply{ToolCalls: []scripted.Call{scripted.ToolCall("calculator", `{"expression":"21*2+5"}`)}},
		scripted.Reply{Text: "21*2+5 = 47", Chunks: 3, Expect: &scripted.Expect{LastToolResultContains: "47"}},
	).Record()
	e := newEnv(t, nil, agentrt.Config{}, calcAgent(m, registry(t)))
	id := e.session(t, "calc")
	var tokens []string
	var committed []*session.Event
	for ev, err := range e.r.Run(context.Background(), id, agentrt.Input{Text: "what is 21*2+5"}) {
		if err != nil {
			t.Fatal(err)
		}
		if ev.Seq == 0 {
			if tok, ok := ev.Data.(*session.Token); ok { // not a tool_call_delta
				tokens = append(tokens, tok.Text)
			}
			continue
		}
		committed = append(committed, ev)
	}
	want := []session.Type{
		session.TypeRunStarted,
		session.TypeRoundStarted, session.TypeModelStarted, session.TypeModelFinished,
		session.TypeToolCall, session.TypeToolResult,
		session.TypeRoundStarted, session.TypeModelStarted, session.TypeModelFinished,
		session.TypeFinal, session.TypeRunFinished,
	}
	if diff := cmp.Diff(want, types(committed)); diff != "" {
		t.Errorf("event types (-want +got):\n%s", diff)
	}
	if got := strings.Join(tokens, ""); got != "21*2+5 = 47" || len(tokens) != 3 {
		t.Errorf("tokens = %q, want 3 chunks of %q", tokens, "21*2+5 = 47")
	}
	stored := storedLog(t, e.store, id)
	if diff := cmp.Diff(types(committed), types(stored)); diff != "" {
		t.Errorf("stored log differs from yielded events:\n%s", diff)
	}
	res := toolResults(stored)
	if len(res) != 1 || !res[0].OK || !strings.Contains(string(res[0].Result), "47") {
		t.Errorf("tool result = %+v", res)
	}
	fin := committed[len(committed)-1].Data.(*session.RunFinished)
	if fin.Status != "done" {
		t.Errorf("status = %s", fin.Status)
	}
	s, err := e.store.GetSession(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if s.Status != session.StatusDone || s.Turn != 1 || s.LastSeq != int64(len(stored)) || s.Usage.Total() == 0 {
		t.Errorf("session row = %+v", s)
	}
	// Each request held the system prompt, the whole history so far and
	// the tools.
	reqs := m.Requests()
	if len(reqs) != 2 {
		t.Fatalf("model calls = %d", len(reqs))
	}
	var roles [][]model.Role
	for _, r := range reqs {
		var rs []model.Role
		for _, msg := range r.Messages {
			rs = append(rs, msg.Role)
		}
		roles = append(roles, rs)
		if len(r.Tools) != 1 || r.Tools[0].Name != "calculator" {
			t.Errorf("tools = %+v", r.Tools)
		}
	}
	wantRoles := [][]model.Role{
		{model.RoleUser},
		{model.RoleUser, model.RoleAssistant, model.RoleTool},
	}
	for _, r := range reqs {
		if r.System != "You calculate." {
			t.Errorf("system prompt = %q", r.System)
		}
	}
	if diff := cmp.Diff(wantRoles, roles); diff != "" {
		t.Errorf("request histories (-want +got):\n%s", diff)
	}
}

func TestEventsCarryEnvelope(t *testing.T) {
	m := scripted.New("m", scripted.Reply{Text: "hi"})
	e := newEnv(t, nil, agentrt.Config{}, calcAgent(m, nil))
	id := e.session(t, "calc")
	res := e.run(t, id, "hello")
	for _, ev := range res.Events {
		if ev.V != 1 || ev.SessionID != id || ev.RunID == "" || ev.Turn != 1 || ev.Agent != "calc" || ev.Time.IsZero() {
			t.Errorf("bad envelope: %+v", ev)
		}
	}
	b, err := json.Marshal(res.Events[0])
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{`"v":1`, `"seq":1`, `"type":"run_started"`, `"data":{"input":"hello"`} {
		if !strings.Contains(string(b), k) {
			t.Errorf("event JSON %s lacks %s", b, k)
		}
	}
}

type failIn struct {
	N int `json:"n"`
}

func TestToolFailuresAreData(t *testing.T) {
	panics := tool.Must(tool.New("panics", "always panics", func(context.Context, failIn) (string, error) {
		panic("boom")
	}))
	fails := tool.Must(tool.New("fails", "always fails", func(context.Context, failIn) (string, error) {
		return "", errors.New("disk on fire")
	}))
	needs := tool.Must(tool.New("needs", "needs n", func(_ context.Context, in struct {
		N int `json:"n"`
	}) (int, error) {
		return in.N, nil
	}))
	m := scripted.New("m",
		scripted.Reply{ToolCalls: []scripted.Call{
			scripted.ToolCall("panics", `{"n":1}`),
			scripted.ToolCall("no_such_tool", `{}`),
			{Name: "calculator", Arguments: `{"expression": "1+`, Verbatim: true},
			scripted.ToolCall("needs", `{}`),
			scripted.ToolCall("fails", `{"n":1}`),
			scripted.ToolCall("calculator", `{"expression":"1/0"}`),
		}},
		scripted.Reply{Text: "I saw the failures."},
	)
	e := newEnv(t, nil, agentrt.Config{}, calcAgent(m, registry(t, panics, fails, needs)))
	id := e.session(t, "calc")
	res := e.run(t, id, "try everything")
	if res.Status != session.StatusDone || res.Text != "I saw the failures." {
		t.Fatalf("status %s text %q err %+v", res.Status, res.Text, res.Err)
	}
	results := toolResults(res.Events)
	if len(results) != 6 {
		t.Fatalf("got %d tool results", len(results))
	}
	want := map[string]string{
		"panics":       "panic",
		"no_such_tool": "unknown tool",
		"calculator":   "",
		"needs":        "n",
		"fails":        "disk on fire",
	}
	byCall := map[string]*session.ToolResult{}
	for _, r := range results {
		if r.OK {
			t.Errorf("%s: ok, want failure", r.Name)
		}
		byCall[r.CallID] = r
		if w := want[r.Name]; w != "" && !strings.Contains(strings.ToLower(r.Error), w) {
			t.Errorf("%s: error %q does not mention %q", r.Name, r.Error, w)
		}
	}
	if r := byCall["call_1_3"]; r == nil || !strings.Contains(r.Error, "not valid JSON") {
		t.Errorf("invalid JSON arguments: %+v", r)
	}
	if r := byCall["call_1_6"]; r == nil || !strings.Contains(strings.ToLower(r.Error), "division by zero") {
		t.Errorf("division by zero: %+v", r)
	}
	// The model got every result, in call order, as tool messages.
	st, err := e.r.Load(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, msg := range st.Messages {
		if msg.Role == model.RoleTool {
			ids = append(ids, msg.ToolCallID)
			if !msg.IsError {
				t.Errorf("tool message %s not marked as error", msg.ToolCallID)
			}
		}
	}
	if diff := cmp.Diff([]string{"call_1_1", "call_1_2", "call_1_3", "call_1_4", "call_1_5", "call_1_6"}, ids); diff != "" {
		t.Errorf("tool messages out of call order:\n%s", diff)
	}
}

func TestToolCallsRunConcurrently(t *testing.T) {
	// a waits until b has started: run one after the other, they would
	// deadlock (and the test time out).
	bStarted := make(chan struct{})
	a := tool.Must(tool.New("a", "waits for b", func(ctx context.Context, _ struct{}) (string, error) {
		select {
		case <-bStarted:
			return "a done", nil
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}))
	b := tool.Must(tool.New("b", "starts", func(context.Context, struct{}) (string, error) {
		close(bStarted)
		return "b done", nil
	}))
	m := scripted.New("m",
		scripted.Reply{ToolCalls: []scripted.Call{scripted.ToolCall("a", nil), scripted.ToolCall("b", nil)}},
		scripted.Reply{Text: "both"},
	)
	e := newEnv(t, nil, agentrt.Config{}, calcAgent(m, registry(t, a, b)))
	id := e.session(t, "calc")
	res := e.run(t, id, "go")
	if res.Status != session.StatusDone {
		t.Fatalf("status %s: %+v", res.Status, res.Err)
	}
	// Results are committed as the calls complete, in whatever order;
	// the messages the model sees are in call order.
	if rs := toolResults(res.Events); len(rs) != 2 || !rs[0].OK || !rs[1].OK {
		t.Errorf("results = %+v", rs)
	}
	st, _ := e.r.Load(context.Background(), id)
	var names []string
	for _, msg := range st.Messages {
		if msg.Role == model.RoleTool {
			names = append(names, msg.Name)
		}
	}
	if diff := cmp.Diff([]string{"a", "b"}, names); diff != "" {
		t.Errorf("tool messages (-want +got):\n%s", diff)
	}
}

func askTool(t testing.TB, runs *atomic.Int32) tool.Tool {
	return tool.WithMeta(tool.Must(tool.New("deploy", "deploys", func(_ context.Context, in struct {
		Env string `json:"env"`
	}) (string, error) {
		runs.Add(1)
		return "deployed to " + in.Env, nil
	})), tool.Meta{Approval: tool.ApprovalAsk})
}

func TestApproval(t *testing.T) {
	for _, tc := range []struct {
		name     string
		res      agentrt.Resolution
		wantRuns int32
		want     string
	}{
		{"approve", agentrt.Resolution{Decision: "approve", By: "ops"}, 1, "deployed to prod"},
		{"edit", agentrt.Resolution{Decision: "edit", Arguments: []byte(`{"env":"staging"}`)}, 1, "deployed to staging"},
		{"reject", agentrt.Resolution{Decision: "reject", Reason: "not today"}, 0, "rejected this call: not today"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var runs atomic.Int32
			m := scripted.New("m",
				scripted.Reply{ToolCalls: []scripted.Call{scripted.ToolCall("deploy", `{"env":"prod"}`)}},
				scripted.Reply{Text: "ok", Expect: &scripted.Expect{LastToolResultContains: tc.want}},
			)
			e := newEnv(t, nil, agentrt.Config{}, calcAgent(m, registry(t, askTool(t, &runs))))
			id := e.session(t, "calc")
			res := e.run(t, id, "deploy")
			if res.Status != session.StatusWaiting {
				t.Fatalf("status %s, want waiting", res.Status)
			}
			var req *session.InputRequired
			for _, ev := range res.Events {
				if d, ok := ev.Data.(*session.InputRequired); ok {
					req = d
				}
			}
			if req == nil || len(req.Calls) != 1 || req.Calls[0].Name != "deploy" || runs.Load() != 0 {
				t.Fatalf("approval_required = %+v, runs %d", req, runs.Load())
			}
			// Running or resuming before the decision is refused.
			if _, err := agentrt.Collect(e.r.Resume(context.Background(), id)); err == nil || !strings.Contains(err.Error(), req.RequestID) {
				t.Errorf("resume while waiting: %v", err)
			}
			if _, err := agentrt.Collect(e.r.Run(context.Background(), id, agentrt.Input{Text: "again"})); err == nil {
				t.Error("run while waiting: no error")
			}
			if _, err := e.r.Resolve(context.Background(), id, req.RequestID, tc.res); err != nil {
				t.Fatal(err)
			}
			res = e.resume(t, id)
			if res.Status != session.StatusDone || res.Text != "ok" {
				t.Fatalf("after %s: status %s text %q err %+v", tc.name, res.Status, res.Text, res.Err)
			}
			if runs.Load() != tc.wantRuns {
				t.Errorf("tool ran %d times, want %d", runs.Load(), tc.wantRuns)
			}
			storedLog(t, e.store, id)
		})
	}
}

func TestApprovalPolicyDenyAndAutoMixed(t *testing.T) {
	var runs atomic.Int32
	m := scripted.New("m",
		scripted.Reply{ToolCalls: []scripted.Call{
			scripted.ToolCall("calculator", `{"expression":"1+1"}`),
			scripted.ToolCall("deploy", `{"env":"prod"}`),
		}},
		scripted.Reply{Text: "done"},
	)
	a := calcAgent(m, registry(t, askTool(t, &runs)))
	a.Approval = agentrt.ApprovalPolicy{Deny: []string{"dep*"}}
	e := newEnv(t, nil, agentrt.Config{}, a)
	id := e.session(t, "calc")
	res := e.run(t, id, "go")
	if res.Status != session.StatusDone || runs.Load() != 0 {
		t.Fatalf("status %s runs %d", res.Status, runs.Load())
	}
	byName := map[string]*session.ToolResult{}
	for _, r := range toolResults(res.Events) {
		byName[r.Name] = r
	}
	if c, d := byName["calculator"], byName["deploy"]; c == nil || d == nil || !c.OK || d.OK || !strings.Contains(d.Error, "denied by policy") {
		t.Errorf("results = %+v", byName)
	}
}

func TestBadInputChangesNothing(t *testing.T) {
	var runs atomic.Int32
	m := scripted.New("m", scripted.Reply{ToolCalls: []scripted.Call{scripted.ToolCall("deploy", `{"env":"prod"}`)}})
	e := newEnv(t, nil, agentrt.Config{}, calcAgent(m, registry(t, askTool(t, &runs))))
	ctx := context.Background()
	id := e.session(t, "calc")
	res := e.run(t, id, "deploy")
	rid := res.Events[len(res.Events)-2].Data.(*session.InputRequired).RequestID
	before := storedLog(t, e.store, id)

	check := func(name string, err error, code string) {
		t.Helper()
		var re *agentrt.Error
		if !errors.As(err, &re) || re.ErrorCode() != code {
			t.Errorf("%s: error %v, want code %s", name, err, code)
		}
	}
	_, err := agentrt.Collect(e.r.Run(ctx, id, agentrt.Input{Text: "  "}))
	check("empty input", err, "empty_input")
	_, err = agentrt.Collect(e.r.Run(ctx, "nope", agentrt.Input{Text: "hi"}))
	check("unknown session", err, "not_found")
	if !errors.Is(err, session.ErrNotFound) {
		t.Errorf("unknown session error does not wrap ErrNotFound: %v", err)
	}
	_, err = e.r.CreateSession(ctx, "nobody", "", nil)
	check("unknown agent", err, "unknown_agent")
	_, err = e.r.Resolve(ctx, id, "req_nope", agentrt.Resolution{Decision: "approve"})
	check("unknown request", err, "unknown_request")
	_, err = e.r.Resolve(ctx, id, rid, agentrt.Resolution{Decision: "maybe"})
	check("bad decision", err, "bad_decision")
	_, err = e.r.Resolve(ctx, id, rid, agentrt.Resolution{Decision: "edit", Arguments: []byte(`{"env":`)})
	check("bad edit JSON", err, "bad_arguments")
	_, err = e.r.Resolve(ctx, id, rid, agentrt.Resolution{Decision: "edit", Arguments: []byte(`[1]`)})
	check("edit not an object", err, "bad_arguments")
	_, err = e.r.Resolve(ctx, id, rid, agentrt.Resolution{Decision: "edit"})
	check("edit without arguments", err, "bad_arguments")
	_, err = e.r.CreateSession(ctx, "calc", id, nil)
	check("duplicate session", err, "session_exists")

	after := storedLog(t, e.store, id)
	if diff := cmp.Diff(before, after); diff != "" {
		t.Errorf("bad input changed the log:\n%s", diff)
	}
}

func TestModelErrorFailsRecoverablyAndRetries(t *testing.T) {
	m := scripted.New("m",
		scripted.Reply{Error: "upstream 503"},
		scripted.Reply{Text: "second try"},
	)
	e := newEnv(t, nil, agentrt.Config{}, calcAgent(m, nil))
	id := e.session(t, "calc")
	res := e.run(t, id, "hi")
	if res.Status != session.StatusFailed || res.Err == nil || !res.Err.Recoverable || !strings.Contains(res.Err.Message, "upstream 503") {
		t.Fatalf("status %s err %+v", res.Status, res.Err)
	}
	res = e.resume(t, id)
	if res.Status != session.StatusDone || res.Text != "second try" {
		t.Fatalf("retry: status %s text %q", res.Status, res.Text)
	}
	// The retry is a second attempt of the same round.
	var attempts []int
	for _, ev := range storedLog(t, e.store, id) {
		if d, ok := ev.Data.(*session.ModelStarted); ok {
			attempts = append(attempts, d.Attempt)
		}
	}
	if diff := cmp.Diff([]int{1, 2}, attempts); diff != "" {
		t.Errorf("attempts (-want +got):\n%s", diff)
	}
}

func TestMaxRoundsPausesAndResumes(t *testing.T) {
	call := scripted.Reply{ToolCalls: []scripted.Call{scripted.ToolCall("calculator", `{"expression":"1+1"}`)}}
	m := scripted.New("m", call, call, call, scripted.Reply{Text: "finally"})
	a := calcAgent(m, registry(t))
	a.Limits.MaxRounds = 2
	e := newEnv(t, nil, agentrt.Config{}, a)
	id := e.session(t, "calc")
	res := e.run(t, id, "loop")
	if res.Status != session.StatusPaused || m.Calls() != 2 {
		t.Fatalf("status %s after %d calls", res.Status, m.Calls())
	}
	last := res.Events[len(res.Events)-1].Data.(*session.RunFinished)
	if last.Reason != "max_rounds" {
		t.Errorf("reason %q", last.Reason)
	}
	res = e.resume(t, id)
	if res.Status != session.StatusDone || res.Text != "finally" {
		t.Fatalf("resume: status %s text %q", res.Status, res.Text)
	}
}

func TestTurnsAccumulateUsage(t *testing.T) {
	u := &model.Usage{InputTokens: 10, OutputTokens: 5}
	m := scripted.New("m", scripted.Reply{Text: "one", Usage: u}, scripted.Reply{Text: "two", Usage: u})
	e := newEnv(t, nil, agentrt.Config{}, calcAgent(m, nil))
	id := e.session(t, "calc")
	r1 := e.run(t, id, "first")
	r2 := e.run(t, id, "second")
	if r1.Usage.InputTokens != 10 || r2.Usage.InputTokens != 10 {
		t.Errorf("run usage %+v %+v", r1.Usage, r2.Usage)
	}
	s, _ := e.store.GetSession(context.Background(), id)
	if s.Turn != 2 || s.Usage.InputTokens != 20 || s.Usage.OutputTokens != 10 {
		t.Errorf("session = %+v", s)
	}
	st, _ := e.r.Load(context.Background(), id)
	if len(st.Messages) != 4 || st.Messages[2].Text() != "second" {
		t.Errorf("history = %+v", st.Messages)
	}
}

func TestReplayEqualsSnapshot(t *testing.T) {
	for _, every := range []int{1, 4, 0} {
		t.Run(fmt.Sprintf("every=%d", every), func(t *testing.T) {
			m := scripted.New("m",
				scripted.Reply{ToolCalls: []scripted.Call{scripted.ToolCall("calculator", `{"expression":"2*3"}`)}},
				scripted.Reply{Text: "6"},
				scripted.Reply{Text: "again"},
			)
			store := memstore.New()
			e := newEnv(t, store, agentrt.Config{SnapshotEvery: every}, calcAgent(m, registry(t)))
			id := e.session(t, "calc")
			e.run(t, id, "2*3?")
			e.run(t, id, "once more")
			log := storedLog(t, store, id)
			snap, err := store.LoadSnapshot(context.Background(), id)
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case every == 0 && snap != nil:
				t.Errorf("default cadence: a snapshot after only %d events", len(log))
			case every == 1 && (snap == nil || snap.Seq != int64(len(log))):
				t.Errorf("every commit: snapshot %+v, want seq %d", snap, len(log))
			case every == 4 && (snap == nil || int64(len(log))-snap.Seq >= 4):
				t.Errorf("every 4: snapshot %+v with %d events", snap, len(log))
			}
			fromSnap, err := e.r.Load(context.Background(), id)
			if err != nil {
				t.Fatal(err)
			}
			replayed := agentrt.NewState(id, "calc")
			for _, ev := range log {
				if err := replayed.Apply(ev); err != nil {
					t.Fatal(err)
				}
			}
			if diff := cmp.Diff(fromSnap, replayed, cmpopts.EquateEmpty(), cmpopts.IgnoreFields(agentrt.State{}, "SnapshotSeq", "PolicyJSON"), cmpopts.IgnoreUnexported(agentrt.State{})); diff != "" {
				t.Errorf("replayed state differs from snapshot (-snap +replay):\n%s", diff)
			}
		})
	}
	if _, err := agentrt.NewRunner(agentrt.Config{Store: memstore.New(), SnapshotEvery: -1}); err == nil {
		t.Error("negative SnapshotEvery accepted")
	}
}

func TestCancelAndResume(t *testing.T) {
	store := memstore.New()
	slow := scripted.New("m", scripted.Reply{Text: "slow", Delay: 1 << 40})
	e := newEnv(t, store, agentrt.Config{}, calcAgent(slow, nil))
	id := e.session(t, "calc")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var status session.Status
	for ev, err := range e.r.Run(ctx, id, agentrt.Input{Text: "hi"}) {
		if err != nil {
			t.Fatal(err)
		}
		if ev.Type == session.TypeModelStarted {
			cancel() // the model is waiting on its delay
		}
		if d, ok := ev.Data.(*session.RunFinished); ok {
			status = d.Status
		}
	}
	if status != "canceled" {
		t.Fatalf("status %q, want canceled", status)
	}
	// Another runner (as after a restart) resumes it with a faster model.
	e2 := newEnv(t, store, agentrt.Config{}, calcAgent(scripted.New("m", scripted.Reply{Text: "fast"}), nil))
	r := e2.resume(t, id)
	if r.Status != session.StatusDone || r.Text != "fast" {
		t.Fatalf("resume: %+v", r)
	}
	var attempts []int
	for _, ev := range storedLog(t, store, id) {
		if d, ok := ev.Data.(*session.ModelStarted); ok {
			attempts = append(attempts, d.Attempt)
		}
	}
	if diff := cmp.Diff([]int{1, 2}, attempts); diff != "" {
		t.Errorf("attempts (-want +got):\n%s", diff)
	}
}

func TestConsumerBreakCancels(t *testing.T) {
	m := scripted.New("m", scripted.Reply{Text: "hello there", Chunks: 2}, scripted.Reply{Text: "again"})
	e := newEnv(t, nil, agentrt.Config{}, calcAgent(m, nil))
	id := e.session(t, "calc")
	for range e.r.Run(context.Background(), id, agentrt.Input{Text: "hi"}) {
		break
	}
	s, _ := e.store.GetSession(context.Background(), id)
	if s.Status != session.StatusCanceled {
		t.Fatalf("status %s, want canceled", s.Status)
	}
	storedLog(t, e.store, id)
}

func TestStepByStep(t *testing.T) {
	m := scripted.New("m",
		scripted.Reply{ToolCalls: []scripted.Call{scripted.ToolCall("calculator", `{"expression":"1+2"}`)}},
		scripted.Reply{Text: "3"},
	)
	e := newEnv(t, nil, agentrt.Config{}, calcAgent(m, registry(t)))
	id := e.session(t, "calc")
	ctx := context.Background()
	st, err := e.r.Begin(ctx, id, agentrt.Input{Text: "1+2"})
	if err != nil {
		t.Fatal(err)
	}
	var steps [][]session.Type
	for st.Status == session.StatusRunning {
		evs, err := e.r.Step(ctx, st)
		if err != nil {
			t.Fatal(err)
		}
		steps = append(steps, types(evs))
	}
	want := [][]session.Type{
		{session.TypeRoundStarted, session.TypeModelStarted, session.TypeModelFinished},
		{session.TypeToolCall, session.TypeToolResult},
		{session.TypeRoundStarted, session.TypeModelStarted, session.TypeModelFinished},
		{session.TypeFinal, session.TypeRunFinished},
	}
	if diff := cmp.Diff(want, steps); diff != "" {
		t.Errorf("steps (-want +got):\n%s", diff)
	}
	if st.Final != "3" || st.Status != session.StatusDone {
		t.Errorf("final %q status %s", st.Final, st.Status)
	}
	if _, err := e.r.Step(ctx, st); err == nil {
		t.Error("step on a finished run: no error")
	}
}

func TestSanitize(t *testing.T) {
	u := model.TextMessage(model.RoleUser, "q")
	call := func(id string) model.ToolCall {
		return model.ToolCall{ID: id, Name: "t", Arguments: json.RawMessage(`{}`)}
	}
	res := func(id string) model.Message { return model.Message{Role: model.RoleTool, ToolCallID: id} }
	for _, tc := range []struct {
		name    string
		in, out []model.Message
	}{
		{"consistent", []model.Message{u, {Role: model.RoleAssistant, ToolCalls: []model.ToolCall{call("a")}}, res("a")},
			[]model.Message{u, {Role: model.RoleAssistant, ToolCalls: []model.ToolCall{call("a")}}, res("a")}},
		{"dangling call dropped", []model.Message{u, {Role: model.RoleAssistant, ToolCalls: []model.ToolCall{call("a"), call("b")}}, res("b")},
			[]model.Message{u, {Role: model.RoleAssistant, ToolCalls: []model.ToolCall{call("b")}}, res("b")}},
		{"empty assistant dropped", []model.Message{u, {Role: model.RoleAssistant, ToolCalls: []model.ToolCall{call("a")}}, u},
			[]model.Message{u, u}},
		{"orphan tool row dropped", []model.Message{u, res("x"), model.TextMessage(model.RoleAssistant, "hi")},
			[]model.Message{u, model.TextMessage(model.RoleAssistant, "hi")}},
		{"text kept without calls", []model.Message{u, {Role: model.RoleAssistant, Parts: []model.Part{{Type: "text", Text: "t"}}, ToolCalls: []model.ToolCall{call("a")}}},
			[]model.Message{u, {Role: model.RoleAssistant, Parts: []model.Part{{Type: "text", Text: "t"}}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := agentrt.AppendSanitized(nil, tc.in)
			if diff := cmp.Diff(tc.out, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			if c, same := agentrt.Consistent(tc.in), cmp.Equal(tc.in, tc.out); c != same {
				t.Errorf("Consistent = %v, but sanitising changes it: %v", c, !same)
			}
		})
	}
}

// Snapshots keep their cadence whichever way a run is driven: Run, or
// Start and Step with the state held by the caller.
func TestSnapshotCadence(t *testing.T) {
	for _, drive := range []string{"run", "step"} {
		t.Run(drive, func(t *testing.T) {
			call := scripted.Reply{ToolCalls: []scripted.Call{scripted.ToolCall("calculator", `{"expression":"1+1"}`)}}
			m := scripted.New("m", call, call, call, scripted.Reply{Text: "done"})
			rs := &recordingStore{Store: memstore.New()}
			e := newEnv(t, rs, agentrt.Config{SnapshotEvery: 4}, calcAgent(m, registry(t)))
			id := e.session(t, "calc")
			ctx := context.Background()
			if drive == "run" {
				e.run(t, id, "go")
			} else {
				st, err := e.r.Begin(ctx, id, agentrt.Input{Text: "go"})
				if err != nil {
					t.Fatal(err)
				}
				for st.Status == session.StatusRunning {
					if _, err := e.r.Step(ctx, st); err != nil {
						t.Fatal(err)
					}
				}
			}
			var last, seq int64
			snaps := 0
			for _, c := range rs.commits {
				seq += int64(len(c.events))
				if c.snapshot == nil {
					continue
				}
				snaps++
				if seq-last < 4 {
					t.Errorf("snapshot at seq %d only %d events after the one at %d", seq, seq-last, last)
				}
				last = seq
			}
			if snaps == 0 || snaps > int(seq/4) {
				t.Errorf("%d snapshots for %d events with SnapshotEvery 4", snaps, seq)
			}
		})
	}
}

// Runner.DeleteSession deletes a session and what the runner keeps of it;
// a session running in this runner is busy, an unknown one not found.
func TestRunnerDeleteSession(t *testing.T) {
	g := newGate()
	e := newEnv(t, nil, agentrt.Config{}, calcAgent(scripted.New("m", gateCall(), scripted.Reply{Text: "done"}), registry(t, g.tool())))
	id := e.session(t, "calc")
	ctx := context.Background()
	run, err := e.r.Start(ctx, id, agentrt.Input{Text: "go"})
	if err != nil {
		t.Fatal(err)
	}
	<-g.started
	if err := e.r.DeleteSession(ctx, id, false); agentrt.AsError(err).Code != "busy" {
		t.Fatalf("delete while running: %v, want busy", err)
	}
	close(g.release)
	if _, err := run.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	if err := e.r.DeleteSession(ctx, id, false); err != nil {
		t.Fatal(err)
	}
	if _, err := e.r.Load(ctx, id); agentrt.AsError(err).Code != "not_found" {
		t.Fatalf("load after delete: %v", err)
	}
	if err := e.r.DeleteSession(ctx, id, false); agentrt.AsError(err).Code != "not_found" {
		t.Fatalf("second delete: %v, want not_found", err)
	}
}

// A session named with its agent that ran here and was then deleted by
// another process (straight in the store) is created anew by the next
// turn, as a session that never existed is.
func TestSendRecreatesSessionDeletedElsewhere(t *testing.T) {
	e := newEnv(t, nil, agentrt.Config{}, calcAgent(scripted.New("m", scripted.Reply{Text: "one"}, scripted.Reply{Text: "two"}), registry(t)))
	ctx := context.Background()
	if _, err := e.r.Send(ctx, "chat", agentrt.Input{Text: "hi", Agent: "calc"}); err != nil {
		t.Fatal(err)
	}
	if err := e.store.DeleteSession(ctx, "chat"); err != nil {
		t.Fatal(err)
	}
	res, err := e.r.Send(ctx, "chat", agentrt.Input{Text: "hi again", Agent: "calc"})
	if err != nil || res.Text != "two" {
		t.Fatalf("second send: %+v %v", res, err)
	}
	if log := storedLog(t, e.store, "chat"); len(log) == 0 || log[0].Type != session.TypeRunStarted {
		t.Fatalf("log of the new session: %v", types(log))
	}
}

// Two calls with the same id in one reply (some OpenAI-compatible
// servers repeat ids) each run once, and a policy that finds nothing to
// do fails the run instead of spinning.
func TestDuplicateCallIDs(t *testing.T) {
	var seen []string
	var mu sync.Mutex
	calc := tool.Must(tool.New("calculator", "evaluates", func(_ context.Context, in struct {
		Expression string `json:"expression"`
	}) (string, error) {
		mu.Lock()
		seen = append(seen, in.Expression)
		mu.Unlock()
		return in.Expression + " done", nil
	}))
	reg, err := tool.NewRegistry(calc)
	if err != nil {
		t.Fatal(err)
	}
	m := scripted.New("m",
		scripted.Reply{ToolCalls: []scripted.Call{
			{ID: "same", Name: "calculator", Arguments: `{"expression":"1+1"}`},
			{ID: "same", Name: "calculator", Arguments: `{"expression":"2+2"}`},
		}},
		scripted.Reply{Text: "both", Expect: &scripted.Expect{LastToolResultContains: "2+2 done"}},
	)
	e := newEnv(t, nil, agentrt.Config{}, calcAgent(m, reg))
	id := e.session(t, "calc")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := agentrt.Collect(e.r.Run(ctx, id, agentrt.Input{Text: "go"}))
	if err != nil || res.Status != session.StatusDone {
		t.Fatalf("run: %v %+v", err, res)
	}
	mu.Lock()
	defer mu.Unlock()
	if diff := cmp.Diff([]string{"1+1", "2+2"}, seen, cmpopts.SortSlices(func(a, b string) bool { return a < b })); diff != "" {
		t.Errorf("calls run (-want +got):\n%s", diff)
	}
	var ids []string
	for _, r := range toolResults(res.Events) {
		ids = append(ids, r.CallID)
	}
	if len(ids) != 2 || ids[0] == ids[1] {
		t.Errorf("result ids %v, want two distinct", ids)
	}

	// A policy that keeps choosing what changes nothing.
	stuck := calcAgent(scripted.New("m"), nil)
	stuck.Name = "stuck"
	stuck.Policy = agentrt.PolicyFunc(func(context.Context, *agentrt.Agent, *agentrt.State) (agentrt.Instruction, error) {
		return agentrt.Instruction{Kind: agentrt.KindCallTools}, nil
	})
	e = newEnv(t, nil, agentrt.Config{}, stuck)
	id = e.session(t, "stuck")
	res, err = agentrt.Collect(e.r.Run(ctx, id, agentrt.Input{Text: "go"}))
	if err != nil || res.Status != session.StatusFailed || res.Err == nil || res.Err.Code != "no_progress" {
		t.Fatalf("stuck policy: %v %+v", err, res)
	}
}

// An agent with NoStream asks for whole replies.
func TestNoStream(t *testing.T) {
	a := calcAgent(model.Unstreamed(scripted.New("m", scripted.Reply{Text: "whole reply", Chunks: 3})), nil)
	a.NoStream = true
	e := newEnv(t, nil, agentrt.Config{}, a)
	id := e.session(t, "calc")
	var tokens int
	var mode string
	for ev, err := range e.r.Run(context.Background(), id, agentrt.Input{Text: "hi"}) {
		if err != nil {
			t.Fatal(err)
		}
		switch d := ev.Data.(type) {
		case *session.Token:
			tokens++
		case *session.ModelStarted:
			mode = d.Mode
		}
	}
	if tokens != 1 || mode != "generate" {
		t.Errorf("%d tokens, mode %q; want 1 and generate", tokens, mode)
	}
}

// Input.Agent creates the session on first use, and refuses another
// agent's session; Input.Parent is recorded in run_started.
func TestInputAgentAndParent(t *testing.T) {
	other := calcAgent(scripted.New("m"), nil)
	other.Name = "other"
	e := newEnv(t, nil, agentrt.Config{}, calcAgent(scripted.New("m", scripted.Reply{Text: "hi"}), nil), other)
	parent := &session.ParentRef{SessionID: "p", CallID: "call_1"}
	res, err := agentrt.Collect(e.r.Run(context.Background(), "fresh", agentrt.Input{Text: "hello", Agent: "calc", Parent: parent}))
	if err != nil || res.Status != session.StatusDone {
		t.Fatalf("run: %+v %v", res, err)
	}
	if d := res.Events[0].Data.(*session.RunStarted); d.Parent == nil || *d.Parent != *parent {
		t.Errorf("run_started parent %+v", d.Parent)
	}
	_, err = agentrt.Collect(e.r.Run(context.Background(), "fresh", agentrt.Input{Text: "hello", Agent: "other"}))
	if errCode(err) != "wrong_agent" || !strings.Contains(err.Error(), `belongs to agent "calc"`) {
		t.Errorf("another agent's session: %v", err)
	}
}

func TestSendAndAsk(t *testing.T) {
	m := scripted.New("m",
		scripted.Reply{Text: "5"},
		scripted.Reply{Error: "boom"},
		scripted.Reply{Text: "four"},
		scripted.Reply{ToolCalls: []scripted.Call{scripted.ToolCall("deploy", `{"env":"prod"}`)}},
	)
	var runs atomic.Int32
	e := newEnv(t, nil, agentrt.Config{}, calcAgent(m, registry(t, askTool(t, &runs))))
	ctx := context.Background()
	res, err := e.r.Send(ctx, "chat", agentrt.Input{Text: "2+3?", Agent: "calc"})
	if err != nil || res.Text != "5" {
		t.Fatalf("Send: %+v %v", res, err)
	}
	_, err = e.r.Send(ctx, "chat", agentrt.Input{Text: "again"})
	var re *agentrt.RunError
	if !errors.As(err, &re) || re.Status != session.StatusFailed || re.Event == nil || !strings.Contains(err.Error(), "boom") {
		t.Fatalf("a failed turn: %v", err)
	}
	// A throwaway session is gone afterwards.
	res, err = e.r.Ask(ctx, "calc", "2+2?")
	if err != nil || res.Text != "four" {
		t.Fatalf("Ask: %+v %v", res, err)
	}
	if _, err := e.store.GetSession(ctx, res.SessionID); !errors.Is(err, session.ErrNotFound) {
		t.Errorf("the throwaway session is still there: %v", err)
	}
	// Unless it waits for a person: then it is kept, to be continued.
	_, err = e.r.Ask(ctx, "calc", "deploy")
	if !errors.As(err, &re) || re.Status != session.StatusWaiting || len(re.Requests) != 1 {
		t.Fatalf("Ask of a turn that waits: %v", err)
	}
	if _, err := e.store.GetSession(ctx, re.SessionID); err != nil {
		t.Errorf("the waiting session was deleted: %v", err)
	}
}
