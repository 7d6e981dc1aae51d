package agentrt_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
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

// finishWith returns a finish executor that answers with text.
func finishWith(text string) agentrt.Executor {
	return func(ctx context.Context, x *agentrt.Exec, ins agentrt.Instruction) error {
		ins.Text = text
		return agentrt.Finish(ctx, x, ins)
	}
}

func TestExecutorPriority(t *testing.T) {
	for _, tc := range []struct {
		name          string
		config, agent agentrt.Executor
		want          string
	}{
		{"built-in", nil, nil, "model says"},
		{"config overrides built-in", finishWith("config"), nil, "config"},
		{"agent overrides config", finishWith("config"), finishWith("agent"), "agent"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := calcAgent(scripted.New("m", scripted.Reply{Text: "model says"}), nil)
			cfg := agentrt.Config{}
			if tc.config != nil {
				cfg.Executors = map[agentrt.Kind]agentrt.Executor{agentrt.KindFinish: tc.config}
			}
			if tc.agent != nil {
				a.Executors = map[agentrt.Kind]agentrt.Executor{agentrt.KindFinish: tc.agent}
			}
			e := newEnv(t, nil, cfg, a)
			res := e.run(t, e.session(t, "calc"), "hi")
			if res.Text != tc.want {
				t.Errorf("final %q, want %q", res.Text, tc.want)
			}
		})
	}
}

// A custom instruction: a policy that greets first through its own
// executor, then defers to React.
func TestCustomInstruction(t *testing.T) {
	const greet agentrt.Kind = "greet"
	a := calcAgent(scripted.New("m", scripted.Reply{Text: "hello back", Expect: &scripted.Expect{LastUserContains: "hi"}}), nil)
	a.Policy = agentrt.PolicyFunc(func(ctx context.Context, ag *agentrt.Agent, s *agentrt.State) (agentrt.Instruction, error) {
		if s.Round == 0 {
			return agentrt.Instruction{Kind: greet, Payload: json.RawMessage(`{"who":"you"}`)}, nil
		}
		return agentrt.React{}.Next(ctx, ag, s)
	})
	var greeted int
	a.Executors = map[agentrt.Kind]agentrt.Executor{greet: func(ctx context.Context, x *agentrt.Exec, ins agentrt.Instruction) error {
		greeted++
		// Record a custom event; the state folds unknown events as no-ops.
		x.Emit(&session.Raw{T: "greeting", JSON: ins.Payload})
		// Go on with the model on the next step: pretend round 0 is over.
		return agentrt.CallModel(ctx, x, ins)
	}}
	e := newEnv(t, nil, agentrt.Config{}, a)
	id := e.session(t, "calc")
	res := e.run(t, id, "hi")
	if res.Status != session.StatusDone || res.Text != "hello back" || greeted != 1 {
		t.Fatalf("status %s text %q greeted %d err %+v", res.Status, res.Text, greeted, res.Err)
	}
	if res.Events[1].Type != "greeting" {
		t.Errorf("second event %s, want greeting", res.Events[1].Type)
	}
	// The custom event survives the store round trip as Raw.
	log := storedLog(t, e.store, id)
	if raw, ok := log[1].Data.(*session.Raw); !ok || string(raw.JSON) != `{"who":"you"}` {
		t.Errorf("stored custom event = %#v", log[1].Data)
	}
}

func TestUnknownInstructionFails(t *testing.T) {
	a := calcAgent(scripted.New("m"), nil)
	a.Policy = agentrt.PolicyFunc(func(context.Context, *agentrt.Agent, *agentrt.State) (agentrt.Instruction, error) {
		return agentrt.Instruction{Kind: "teleport"}, nil
	})
	e := newEnv(t, nil, agentrt.Config{}, a)
	res := e.run(t, e.session(t, "calc"), "hi")
	if res.Status != session.StatusFailed || res.Err == nil || res.Err.Code != "no_executor" || res.Err.Recoverable {
		t.Fatalf("status %s err %+v", res.Status, res.Err)
	}
}

func TestHooks(t *testing.T) {
	var order []string
	deploy := tool.Must(tool.New("echo", "echoes", func(_ context.Context, in struct {
		S string `json:"s"`
	}) (string, error) {
		return in.S, nil
	}))
	m := scripted.New("m",
		scripted.Reply{ToolCalls: []scripted.Call{
			scripted.ToolCall("calculator", `{"expression":"1+1"}`),
			scripted.ToolCall("echo", `{"s":"original"}`),
		}},
		scripted.Reply{Text: "done", Expect: &scripted.Expect{LastToolResultContains: "REWRITTEN"}},
	).Record()
	a := calcAgent(m, registry(t, deploy))
	a.Hooks.BeforeModel(1, func(_ context.Context, info agentrt.HookInfo, req *model.Request) (*model.Request, error) {
		order = append(order, "agent-before-model-low")
		return nil, nil
	})
	a.Hooks.BeforeModel(5, func(_ context.Context, info agentrt.HookInfo, req *model.Request) (*model.Request, error) {
		order = append(order, "agent-before-model-high")
		r := *req
		r.Messages = append(append([]model.Message(nil), req.Messages...), model.TextMessage(model.RoleUser, "(injected)"))
		return &r, nil
	})
	a.Hooks.BeforeTool(0, func(_ context.Context, _ agentrt.HookInfo, c model.ToolCall) agentrt.ToolDecision {
		switch c.Name {
		case "calculator":
			return agentrt.ToolDecision{Block: true, Reason: "no maths today"}
		case "echo":
			return agentrt.ToolDecision{Arguments: json.RawMessage(`{"s":"rewritten"}`)}
		}
		return agentrt.ToolDecision{}
	})
	a.Hooks.AfterTool(0, func(_ context.Context, _ agentrt.HookInfo, c model.ToolCall, r tool.Result) tool.Result {
		if c.Name == "echo" {
			r.Output = json.RawMessage(strings.ToUpper(string(r.Output)))
		}
		return r
	})
	var ended session.Status
	a.Hooks.TurnEnd(0, func(_ context.Context, _ agentrt.HookInfo, st session.Status, _ model.Usage) { ended = st })
	cfg := agentrt.Config{}
	cfg.Hooks.BeforeModel(5, func(context.Context, agentrt.HookInfo, *model.Request) (*model.Request, error) {
		order = append(order, "runner-before-model")
		return nil, nil
	})
	cfg.Hooks.TurnStart(0, func(_ context.Context, info agentrt.HookInfo, input string) error {
		order = append(order, "turn-start:"+input)
		return nil
	})
	e := newEnv(t, nil, cfg, a)
	id := e.session(t, "calc")
	res := e.run(t, id, "go")
	if res.Status != session.StatusDone {
		t.Fatalf("status %s err %+v", res.Status, res.Err)
	}
	wantOrder := []string{"turn-start:go",
		"runner-before-model", "agent-before-model-high", "agent-before-model-low",
		"runner-before-model", "agent-before-model-high", "agent-before-model-low"}
	if diff := cmp.Diff(wantOrder, order); diff != "" {
		t.Errorf("hook order (-want +got):\n%s", diff)
	}
	if ended != session.StatusDone {
		t.Errorf("turn end saw %s", ended)
	}
	reqs := m.Requests()
	if last := reqs[0].Messages[len(reqs[0].Messages)-1]; last.Text() != "(injected)" {
		t.Errorf("before-model hook did not replace the request: last message %+v", last)
	}
	rs := toolResults(res.Events)
	for _, r := range rs {
		switch r.Name {
		case "calculator":
			if r.OK || !strings.Contains(r.Error, "no maths today") {
				t.Errorf("blocked call: %+v", r)
			}
		case "echo":
			if !r.OK || string(r.Result) != `"REWRITTEN"` {
				t.Errorf("rewritten call: %+v", r)
			}
		}
	}
	// The tool_call event records the arguments the tool really got.
	for _, ev := range res.Events {
		if d, ok := ev.Data.(*session.ToolCall); ok && d.Name == "echo" && string(d.Arguments) != `{"s":"rewritten"}` {
			t.Errorf("tool_call arguments %s", d.Arguments)
		}
	}
}

func TestTurnStartHookCanRefuse(t *testing.T) {
	a := calcAgent(scripted.New("m"), nil)
	a.Hooks.TurnStart(0, func(context.Context, agentrt.HookInfo, string) error { return errors.New("quota exhausted") })
	e := newEnv(t, nil, agentrt.Config{}, a)
	id := e.session(t, "calc")
	_, err := agentrt.Collect(e.r.Run(context.Background(), id, agentrt.Input{Text: "hi"}))
	var re *agentrt.Error
	if !errors.As(err, &re) || re.Kind != agentrt.FailHook || !strings.Contains(err.Error(), "quota exhausted") {
		t.Fatalf("err = %v", err)
	}
	if log := storedLog(t, e.store, id); len(log) != 0 {
		t.Errorf("refused turn wrote %d events", len(log))
	}
}

func TestErrorKinds(t *testing.T) {
	for _, tc := range []struct {
		kind agentrt.ErrorKind
		want bool
	}{
		{agentrt.FailModel, true}, {agentrt.FailStore, true}, {agentrt.FailCanceled, true},
		{agentrt.FailConfig, false}, {agentrt.FailInput, false}, {agentrt.FailPolicy, false}, {agentrt.FailHook, false},
	} {
		if got := (&agentrt.Error{Kind: tc.kind}).IsRecoverable(); got != tc.want {
			t.Errorf("%s recoverable = %v", tc.kind, got)
		}
	}
	no := false
	if (&agentrt.Error{Kind: agentrt.FailModel, Recoverable: &no}).IsRecoverable() {
		t.Error("override ignored")
	}
	wrapped := errors.Join(errors.New("x"), &agentrt.Error{Kind: agentrt.FailModel})
	if !agentrt.IsRecoverable(wrapped) {
		t.Error("IsRecoverable does not see through wrapping")
	}
}

// A run that failed with tool calls unanswered leaves a history a provider
// would reject; the next request is sanitised.
func TestNextRunSanitisesABrokenHistory(t *testing.T) {
	m := scripted.New("m",
		scripted.Reply{ToolCalls: []scripted.Call{scripted.ToolCall("calculator", `{"expression":"1+1"}`)}},
		scripted.Reply{Text: "fresh start"},
	).Record()
	a := calcAgent(m, registry(t))
	a.Executors = map[agentrt.Kind]agentrt.Executor{agentrt.KindCallTools: func(context.Context, *agentrt.Exec, agentrt.Instruction) error {
		return errors.New("tool host unreachable")
	}}
	e := newEnv(t, nil, agentrt.Config{}, a)
	id := e.session(t, "calc")
	if res := e.run(t, id, "first"); res.Status != session.StatusFailed {
		t.Fatalf("first run: %s", res.Status)
	}
	if res := e.run(t, id, "second"); res.Status != session.StatusDone || res.Text != "fresh start" {
		t.Fatalf("second run: %s %q", res.Status, res.Text)
	}
	var roles []model.Role
	for _, msg := range m.Requests()[1].Messages {
		roles = append(roles, msg.Role)
		if len(msg.ToolCalls) > 0 {
			t.Errorf("a tool call without a result reached the model: %+v", msg)
		}
	}
	if diff := cmp.Diff([]model.Role{model.RoleUser, model.RoleUser}, roles); diff != "" {
		t.Errorf("request history (-want +got):\n%s", diff)
	}
	// The stored history itself is unchanged: sanitising is per request.
	st, err := e.r.Load(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if agentrt.Consistent(st.Messages) {
		t.Error("the state's history was rewritten")
	}
}

// A policy may call the model again while tool calls are unanswered; the
// request is then sanitised even though an earlier request of the same run
// found the history consistent.
func TestModelCallWithUnansweredCallsIsSanitised(t *testing.T) {
	m := scripted.New("m",
		scripted.Reply{ToolCalls: []scripted.Call{scripted.ToolCall("calculator", `{"expression":"1+1"}`)}},
		scripted.Reply{Text: "never mind"},
	).Record()
	a := calcAgent(m, registry(t))
	a.Policy = agentrt.PolicyFunc(func(ctx context.Context, ag *agentrt.Agent, s *agentrt.State) (agentrt.Instruction, error) {
		if len(s.Calls) > 0 {
			return agentrt.Instruction{Kind: agentrt.KindCallModel}, nil // skip the tools
		}
		return agentrt.React{}.Next(ctx, ag, s)
	})
	e := newEnv(t, nil, agentrt.Config{}, a)
	res := e.run(t, e.session(t, "calc"), "hi")
	if res.Status != session.StatusDone || res.Text != "never mind" {
		t.Fatalf("status %s text %q err %+v", res.Status, res.Text, res.Err)
	}
	reqs := m.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d model calls", len(reqs))
	}
	if !agentrt.Consistent(reqs[1].Messages) {
		t.Errorf("the second request holds a tool call without a result: %+v", reqs[1].Messages)
	}
}

// A call_tools executor gets the calls as the human approved them: with
// the edited arguments, not the model's.
func TestCallToolsInstructionCarriesEditedArguments(t *testing.T) {
	var runs atomic.Int32
	m := scripted.New("m",
		scripted.Reply{ToolCalls: []scripted.Call{scripted.ToolCall("deploy", `{"env":"prod"}`)}},
		scripted.Reply{Text: "ok", Expect: &scripted.Expect{LastToolResultContains: "deployed to staging"}},
	)
	a := calcAgent(m, registry(t, askTool(t, &runs)))
	var seen []string
	a.Executors = map[agentrt.Kind]agentrt.Executor{agentrt.KindCallTools: func(ctx context.Context, x *agentrt.Exec, ins agentrt.Instruction) error {
		for _, c := range ins.Calls {
			seen = append(seen, string(c.Arguments))
		}
		return agentrt.CallTools(ctx, x, ins)
	}}
	e := newEnv(t, nil, agentrt.Config{}, a)
	id := e.session(t, "calc")
	res := e.run(t, id, "deploy")
	if res.Status != session.StatusWaiting {
		t.Fatalf("status %s, want waiting", res.Status)
	}
	st, err := e.r.Load(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.r.Resolve(context.Background(), id, st.Requests[0].ID, agentrt.Resolution{Decision: "edit", Arguments: []byte(`{"env":"staging"}`)}); err != nil {
		t.Fatal(err)
	}
	if res := e.resume(t, id); res.Status != session.StatusDone {
		t.Fatalf("after edit: status %s err %+v", res.Status, res.Err)
	}
	if diff := cmp.Diff([]string{`{"env":"staging"}`}, seen); diff != "" {
		t.Errorf("call_tools instruction arguments (-want +got):\n%s", diff)
	}
}

// A tool added to the agent's registry after the runner was made still
// gets its own approval policy: the registry runs it, so it must not run
// unasked.
func TestToolAddedLaterKeepsItsApproval(t *testing.T) {
	var runs atomic.Int32
	m := scripted.New("m",
		scripted.Reply{ToolCalls: []scripted.Call{scripted.ToolCall("deploy", `{"env":"prod"}`)}},
		scripted.Reply{Text: "ok"},
	)
	reg := registry(t)
	e := newEnv(t, nil, agentrt.Config{}, calcAgent(m, reg))
	if err := reg.Add(askTool(t, &runs)); err != nil {
		t.Fatal(err)
	}
	res := e.run(t, e.session(t, "calc"), "deploy")
	if res.Status != session.StatusWaiting || runs.Load() != 0 {
		t.Fatalf("status %s, tool ran %d times; want waiting, not run", res.Status, runs.Load())
	}
}

// Merge adds another set's hooks to a set: by priority, and after the
// set's own at equal priority.
func TestHooksMerge(t *testing.T) {
	var order []string
	mark := func(name string) agentrt.BeforeModelFunc {
		return func(_ context.Context, _ agentrt.HookInfo, req *model.Request) (*model.Request, error) {
			order = append(order, name)
			return req, nil
		}
	}
	var other agentrt.Hooks
	other.BeforeModel(9, mark("other-9"))
	other.BeforeModel(1, mark("other-1"))
	m := scripted.New("m", scripted.Reply{Text: "ok"})
	a := calcAgent(m, registry(t))
	a.Hooks.BeforeModel(1, mark("own-1"))
	a.Hooks.Merge(&other)
	e := newEnv(t, nil, agentrt.Config{}, a)
	e.run(t, e.session(t, "calc"), "hi")
	if got := strings.Join(order, " "); got != "other-9 own-1 other-1" {
		t.Errorf("hooks ran %q", got)
	}
}

// Hooks run by priority first; the runner's before the agent's only
// at equal priority.
func TestHookOrderByPriority(t *testing.T) {
	var order []string
	hook := func(name string) agentrt.TurnStartFunc {
		return func(context.Context, agentrt.HookInfo, string) error {
			order = append(order, name)
			return nil
		}
	}
	a := calcAgent(scripted.New("m", scripted.Reply{Text: "hi"}), nil)
	a.Hooks.TurnStart(9, hook("agent-9"))
	a.Hooks.TurnStart(5, hook("agent-5"))
	a.Hooks.TurnStart(1, hook("agent-1"))
	a.Hooks.TurnStart(5, hook("agent-5b"))
	var cfg agentrt.Config
	cfg.Hooks.TurnStart(1, hook("runner-1"))
	cfg.Hooks.TurnStart(5, hook("runner-5"))
	cfg.Hooks.TurnStart(7, hook("runner-7"))
	e := newEnv(t, nil, cfg, a)
	e.run(t, e.session(t, "calc"), "go")
	want := []string{"agent-9", "runner-7", "runner-5", "agent-5", "agent-5b", "runner-1", "agent-1"}
	if diff := cmp.Diff(want, order); diff != "" {
		t.Errorf("order (-want +got):\n%s", diff)
	}
}

// A before-model hook that writes into the request's messages
// (their parts, their tool calls' arguments) cannot change the state: the
// state still equals the replay of its log.
func TestBeforeModelHookCannotChangeState(t *testing.T) {
	m := scripted.New("m",
		scripted.Reply{ToolCalls: []scripted.Call{scripted.ToolCall("calculator", `{"expression":"1+2"}`)}},
		scripted.Reply{Text: "3"},
	)
	a := calcAgent(m, registry(t))
	a.Hooks.BeforeModel(0, func(_ context.Context, _ agentrt.HookInfo, req *model.Request) (*model.Request, error) {
		for i := range req.Messages {
			msg := &req.Messages[i]
			for j := range msg.Parts {
				msg.Parts[j].Text = "tampered"
			}
			for j := range msg.ToolCalls {
				for k := range msg.ToolCalls[j].Arguments {
					msg.ToolCalls[j].Arguments[k] = ' '
				}
				msg.ToolCalls[j].Name = "tampered"
			}
		}
		return nil, nil
	})
	e := newEnv(t, nil, agentrt.Config{SnapshotEvery: 1000}, a)
	id := e.session(t, "calc")
	st, err := e.r.Begin(context.Background(), id, agentrt.Input{Text: "1+2"})
	if err != nil {
		t.Fatal(err)
	}
	for st.Status == session.StatusRunning {
		if _, err := e.r.Step(context.Background(), st); err != nil {
			t.Fatal(err)
		}
	}
	replayed := agentrt.NewState(id, "calc")
	for _, ev := range storedLog(t, e.store, id) {
		if err := replayed.Apply(ev); err != nil {
			t.Fatal(err)
		}
	}
	if diff := cmp.Diff(replayed, st, cmpopts.EquateEmpty(), cmpopts.IgnoreFields(agentrt.State{}, "SnapshotSeq", "PolicyJSON"), cmpopts.IgnoreUnexported(agentrt.State{})); diff != "" {
		t.Errorf("the hook changed the state (-replay +state):\n%s", diff)
	}
	if st.Messages[0].Text() != "1+2" {
		t.Errorf("first message %q", st.Messages[0].Text())
	}
}

// tickPolicy keeps its own state, folded from its executor's custom
// events: it ticks three times, then finishes with the count.
type tickPolicy struct{}

type tickState struct {
	Ticks int `json:"ticks"`
}

type tick struct {
	N int `json:"n"`
}

func (*tick) EventType() session.Type { return "tick" }

func (s *tickState) Apply(e *session.Event) error {
	if t, ok, err := session.As[tick](e); err != nil {
		return err
	} else if ok {
		s.Ticks = t.N
	}
	return nil
}

func (tickPolicy) NewPolicyState() agentrt.PolicyState { return &tickState{} }

func (tickPolicy) Next(_ context.Context, _ *agentrt.Agent, s *agentrt.State) (agentrt.Instruction, error) {
	n := s.Policy().(*tickState).Ticks
	if n >= 3 {
		return agentrt.Instruction{Kind: agentrt.KindFinish, Text: strings.Repeat("tick ", n)}, nil
	}
	return agentrt.Instruction{Kind: "tick"}, nil
}

func TestPolicyState(t *testing.T) {
	a := calcAgent(scripted.New("m"), nil)
	a.Policy = tickPolicy{}
	a.Executors = map[agentrt.Kind]agentrt.Executor{"tick": func(_ context.Context, x *agentrt.Exec, _ agentrt.Instruction) error {
		x.Emit(&tick{N: x.State().Policy().(*tickState).Ticks + 1})
		return nil
	}}
	store := memstore.New()
	e := newEnv(t, store, agentrt.Config{SnapshotEvery: 2}, a)
	id := e.session(t, "calc")
	res := e.run(t, id, "go")
	if res.Status != session.StatusDone || res.Text != "tick tick tick " {
		t.Fatalf("run: %+v", res)
	}
	snap, err := store.LoadSnapshot(context.Background(), id)
	if err != nil || snap == nil || !strings.Contains(string(snap.Data), `"policy":{"ticks":3}`) {
		t.Fatalf("snapshot %s (%v) lacks the policy's state", snap.Data, err)
	}
	// Rebuilt from the snapshot and from the whole log, the same.
	st, err := e.r.Load(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	replayed := agentrt.NewState(id, "calc")
	if err := replayed.AttachPolicy(tickPolicy{}); err != nil {
		t.Fatal(err)
	}
	for _, ev := range storedLog(t, store, id) {
		if err := replayed.Apply(ev); err != nil {
			t.Fatal(err)
		}
	}
	if diff := cmp.Diff(replayed.Policy(), st.Policy()); diff != "" {
		t.Errorf("policy state (-replayed +loaded):\n%s", diff)
	}
}

// Any executor calls the model through Exec.Complete, with the retries,
// hooks and events of call_model, and the conversation is left as it was.
func TestExecComplete(t *testing.T) {
	m := scripted.New("m",
		scripted.Reply{Error: "overloaded", ErrorCode: model.CodeServer},
		scripted.Reply{Text: "1. look 2. leap", Expect: &scripted.Expect{LastUserContains: "plan for: go"}},
	).Record()
	a := calcAgent(m, nil)
	a.Retry = agentrt.RetryPolicy{InitialDelay: time.Millisecond, MaxDelay: time.Millisecond}
	var hooked atomic.Int32
	a.Hooks.BeforeModel(0, func(context.Context, agentrt.HookInfo, *model.Request) (*model.Request, error) {
		hooked.Add(1)
		return nil, nil
	})
	a.Policy = agentrt.PolicyFunc(func(_ context.Context, _ *agentrt.Agent, s *agentrt.State) (agentrt.Instruction, error) {
		return agentrt.Instruction{Kind: "plan"}, nil
	})
	a.Executors = map[agentrt.Kind]agentrt.Executor{"plan": func(ctx context.Context, x *agentrt.Exec, _ agentrt.Instruction) error {
		req := &model.Request{Messages: []model.Message{model.TextMessage(model.RoleUser, "plan for: "+x.State().Messages[0].Text())}}
		resp, err := x.Complete(ctx, agentrt.ModelCall{Request: req, Purpose: "plan"})
		if err != nil {
			return err
		}
		return agentrt.Finish(ctx, x, agentrt.Instruction{Text: resp.Message.Text()})
	}}
	e := newEnv(t, nil, agentrt.Config{}, a)
	id := e.session(t, "calc")
	res := e.run(t, id, "go")
	if res.Status != session.StatusDone || res.Text != "1. look 2. leap" {
		t.Fatalf("run: %+v", res)
	}
	want := []session.Type{session.TypeRunStarted, session.TypeModelStarted, session.TypeError, session.TypeModelStarted,
		session.TypeModelFinished, session.TypeFinal, session.TypeRunFinished}
	if diff := cmp.Diff(want, types(res.Events)); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	for _, ev := range res.Events {
		switch d := ev.Data.(type) {
		case *session.ModelStarted:
			if d.Purpose != "plan" {
				t.Errorf("model_started purpose %q", d.Purpose)
			}
		case *session.ModelFinished:
			if d.Purpose != "plan" {
				t.Errorf("model_finished purpose %q", d.Purpose)
			}
		}
	}
	st, _ := e.r.Load(context.Background(), id)
	if len(st.Messages) != 1 || st.Round != 0 {
		t.Errorf("the history changed: %d messages, round %d", len(st.Messages), st.Round)
	}
	if hooked.Load() != 1 {
		t.Errorf("before-model hook ran %d times", hooked.Load())
	}
}
