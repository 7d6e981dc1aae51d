package agentrt

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"

	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/session"
	"github.com/agentrt/agentrt/tool"
)

// HookInfo tells a hook where it runs.
type HookInfo struct {
	Tenant    string
	SessionID string
	RunID     string
	Agent     string
	Turn      int
	Round     int
	// Answer, for a BeforeTool hook, is the person's answer to the
	// question this hook asked about this call (ToolDecision.Ask); nil
	// otherwise. A hook is known by its place among the agent's BeforeTool
	// hooks: change them while a question waits and the answer may reach
	// another.
	Answer *session.InputResolved
}

// BeforeModelFunc may inspect or replace the request; returning a nil
// request keeps req. An error ends the run (kind hook_blocked unless the
// error is already an *Error).
type BeforeModelFunc func(ctx context.Context, info HookInfo, req *model.Request) (*model.Request, error)

// AfterModelFunc may inspect or replace the model's response.
type AfterModelFunc func(ctx context.Context, info HookInfo, resp *model.Response) (*model.Response, error)

// ToolDecision is what a BeforeToolFunc decides about one call.
type ToolDecision struct {
	// Block, when true, skips the call; the model gets a failed tool
	// result saying Reason.
	Block  bool
	Reason string
	// Arguments, when not nil, replace the call's arguments.
	Arguments json.RawMessage
	// Ask, when not nil, asks a person before the call runs: an approval
	// (a rejection blocks the call), a prompt or a select. The call waits,
	// and its run with it, until the request is answered; then the
	// BeforeTool hooks run again for it, the asking hook with
	// HookInfo.Answer set; another hook may then ask its own question.
	// Asking again about a call the hook's question was answered for
	// blocks the call.
	Ask *Ask
}

// BeforeToolFunc runs before each tool call.
type BeforeToolFunc func(ctx context.Context, info HookInfo, call model.ToolCall) ToolDecision

// AfterToolFunc may rewrite a tool's result before the model sees it.
type AfterToolFunc func(ctx context.Context, info HookInfo, call model.ToolCall, res tool.Result) tool.Result

// TurnStartFunc runs when a run starts or resumes; an error ends it.
type TurnStartFunc func(ctx context.Context, info HookInfo, input string) error

// CompactionFunc runs after the history was compacted, with the
// compaction event.
type CompactionFunc func(ctx context.Context, info HookInfo, c *session.Compaction)

// AgentEndFunc runs when the agent has its answer, before the final
// event, or when the run ends at a limit (status
// paused) or fails; text is the answer, or what went wrong.
type AgentEndFunc func(ctx context.Context, info HookInfo, status session.Status, text string)

// PlanStepFunc runs after each step of a plan, with its outcome.
type PlanStepFunc func(ctx context.Context, info HookInfo, step *session.PlanStepFinished)

// TurnEndFunc runs when a run stops, whatever its status.
type TurnEndFunc func(ctx context.Context, info HookInfo, status session.Status, usage model.Usage)

type hook[F any] struct {
	priority int
	seq      int
	fn       F
}

// Hooks are typed callbacks around model calls, tool calls and turns.
// Hooks of one kind run in descending priority; at equal priority the
// runner's (Config.Hooks) run before the agent's, and hooks of one set in
// the order they were added. Add hooks before the agent is registered with
// a Runner; the runner reads them concurrently afterwards.
//
// BeforeTool and AfterTool hooks run on the goroutines of the calls, which
// for the calls of one model reply are concurrent: they must be safe for
// concurrent use.
type Hooks struct {
	beforeModel []hook[BeforeModelFunc]
	afterModel  []hook[AfterModelFunc]
	beforeTool  []hook[BeforeToolFunc]
	afterTool   []hook[AfterToolFunc]
	turnStart   []hook[TurnStartFunc]
	turnEnd     []hook[TurnEndFunc]
	compaction  []hook[CompactionFunc]
	agentEnd    []hook[AgentEndFunc]
	planStep    []hook[PlanStepFunc]
	n           int
}

func add[F any](h *Hooks, list *[]hook[F], priority int, fn F) {
	h.n++
	*list = append(*list, hook[F]{priority: priority, seq: h.n, fn: fn})
	sortHooks(*list)
}

func sortHooks[F any](l []hook[F]) {
	sort.SliceStable(l, func(i, j int) bool {
		if l[i].priority != l[j].priority {
			return l[i].priority > l[j].priority
		}
		return l[i].seq < l[j].seq
	})
}

// BeforeModel adds a hook run before each model call.
func (h *Hooks) BeforeModel(priority int, fn BeforeModelFunc) { add(h, &h.beforeModel, priority, fn) }

// AfterModel adds a hook run after each successful model call.
func (h *Hooks) AfterModel(priority int, fn AfterModelFunc) { add(h, &h.afterModel, priority, fn) }

// BeforeTool adds a hook run before each tool call.
func (h *Hooks) BeforeTool(priority int, fn BeforeToolFunc) { add(h, &h.beforeTool, priority, fn) }

// AfterTool adds a hook run after each tool call.
func (h *Hooks) AfterTool(priority int, fn AfterToolFunc) { add(h, &h.afterTool, priority, fn) }

// TurnStart adds a hook run when a run starts or resumes.
func (h *Hooks) TurnStart(priority int, fn TurnStartFunc) { add(h, &h.turnStart, priority, fn) }

// TurnEnd adds a hook run when a run stops.
func (h *Hooks) TurnEnd(priority int, fn TurnEndFunc) { add(h, &h.turnEnd, priority, fn) }

// OnCompaction adds a hook run after each compaction.
func (h *Hooks) OnCompaction(priority int, fn CompactionFunc) { add(h, &h.compaction, priority, fn) }

// OnAgentEnd adds a hook run when the agent has its answer (before the
// final event), or ends at a limit or a failure.
func (h *Hooks) OnAgentEnd(priority int, fn AgentEndFunc) { add(h, &h.agentEnd, priority, fn) }

// OnPlanStepComplete adds a hook run after each step of a plan.
func (h *Hooks) OnPlanStepComplete(priority int, fn PlanStepFunc) { add(h, &h.planStep, priority, fn) }

// Merge appends o's hooks to h, keeping priority order.
func (h *Hooks) Merge(o *Hooks) {
	appendHooks(h, &h.beforeModel, o.beforeModel)
	appendHooks(h, &h.afterModel, o.afterModel)
	appendHooks(h, &h.beforeTool, o.beforeTool)
	appendHooks(h, &h.afterTool, o.afterTool)
	appendHooks(h, &h.turnStart, o.turnStart)
	appendHooks(h, &h.turnEnd, o.turnEnd)
	appendHooks(h, &h.compaction, o.compaction)
	appendHooks(h, &h.agentEnd, o.agentEnd)
	appendHooks(h, &h.planStep, o.planStep)
}

// appendHooks adds src's hooks to list, after h's own at equal priority.
func appendHooks[F any](h *Hooks, list *[]hook[F], src []hook[F]) {
	for _, x := range src {
		add(h, list, x.priority, x.fn)
	}
}

func (h *Hooks) sort() {
	sortHooks(h.beforeModel)
	sortHooks(h.afterModel)
	sortHooks(h.beforeTool)
	sortHooks(h.afterTool)
	sortHooks(h.turnStart)
	sortHooks(h.turnEnd)
	sortHooks(h.compaction)
	sortHooks(h.agentEnd)
	sortHooks(h.planStep)
}

// merged returns the hooks of runner and agent in one Hooks, in the order
// they run: higher priority first; at equal priority the runner's before
// the agent's; then in the order they were added.
func merged(runner, agent *Hooks) *Hooks {
	m := &Hooks{
		beforeModel: mergeHooks(runner.beforeModel, agent.beforeModel),
		afterModel:  mergeHooks(runner.afterModel, agent.afterModel),
		beforeTool:  mergeHooks(runner.beforeTool, agent.beforeTool),
		afterTool:   mergeHooks(runner.afterTool, agent.afterTool),
		turnStart:   mergeHooks(runner.turnStart, agent.turnStart),
		turnEnd:     mergeHooks(runner.turnEnd, agent.turnEnd),
		compaction:  mergeHooks(runner.compaction, agent.compaction),
		agentEnd:    mergeHooks(runner.agentEnd, agent.agentEnd),
		planStep:    mergeHooks(runner.planStep, agent.planStep),
	}
	return m
}

// mergeHooks merges two lists sorted by priority (each already in its
// running order), taking from a first at equal priority.
func mergeHooks[F any](a, b []hook[F]) []hook[F] {
	out := make([]hook[F], 0, len(a)+len(b))
	for len(a) > 0 && len(b) > 0 {
		if b[0].priority > a[0].priority {
			out, b = append(out, b[0]), b[1:]
		} else {
			out, a = append(out, a[0]), a[1:]
		}
	}
	return append(append(out, a...), b...)
}

// hookSet is the hooks a run calls: the runner's and the agent's, merged
// once per agent by NewRunner.
type hookSet struct{ h *Hooks }

// guard runs one hook, turning its panic into an error (code hook_panic)
// that fails the run: a hook that panics is an error event, not a crash.
func guard(what string, fn func()) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = &Error{Kind: FailHook, Code: CodeHookPanic, Msg: fmt.Sprintf("%s panicked: %v", what, p)}
		}
	}()
	fn()
	return nil
}

func (s hookSet) beforeModel(ctx context.Context, info HookInfo, req *model.Request) (*model.Request, error) {
	for _, h := range s.h.beforeModel {
		var r *model.Request
		var err error
		if perr := guard("a before-model hook", func() { r, err = h.fn(ctx, info, req) }); perr != nil {
			return nil, perr
		}
		if err != nil {
			return nil, hookErr(err, "before-model hook")
		}
		if r != nil {
			req = r
		}
	}
	return req, nil
}

func (s hookSet) afterModel(ctx context.Context, info HookInfo, resp *model.Response) (*model.Response, error) {
	for _, h := range s.h.afterModel {
		var r *model.Response
		var err error
		if perr := guard("an after-model hook", func() { r, err = h.fn(ctx, info, resp) }); perr != nil {
			return nil, perr
		}
		if err != nil {
			return nil, hookErr(err, "after-model hook")
		}
		if r != nil {
			resp = r
		}
	}
	return resp, nil
}

// beforeTool runs the BeforeTool hooks for call; hook i sees answers[i],
// the answer to the question it asked about this call, as info.Answer.
// asker is the index of the hook that asked (out.Ask), if any; err a
// hook's panic.
func (s hookSet) beforeTool(ctx context.Context, info HookInfo, call model.ToolCall, answers map[int]*session.InputResolved) (out ToolDecision, asker int, err error) {
	for i, h := range s.h.beforeTool {
		info.Answer = answers[i]
		var d ToolDecision
		if err := guard("a before-tool hook", func() { d = h.fn(ctx, info, call) }); err != nil {
			return ToolDecision{}, 0, err
		}
		if d.Arguments != nil {
			call.Arguments = d.Arguments
			out.Arguments = d.Arguments
		}
		if d.Block {
			out.Block, out.Reason = true, d.Reason
			return out, 0, nil
		}
		if d.Ask != nil {
			out.Ask = d.Ask
			return out, i, nil
		}
	}
	return out, 0, nil
}

// afterTool runs the AfterTool hooks, on the call's goroutine: a hook's
// panic makes the result a failure saying so, which the model sees.
func (s hookSet) afterTool(ctx context.Context, info HookInfo, call model.ToolCall, res tool.Result) tool.Result {
	for _, h := range s.h.afterTool {
		if err := guard("an after-tool hook", func() { res = h.fn(ctx, info, call, res) }); err != nil {
			return tool.Result{Error: err.Error(), Err: err, Latency: res.Latency}
		}
	}
	return res
}

func (s hookSet) turnStart(ctx context.Context, info HookInfo, input string) error {
	for _, h := range s.h.turnStart {
		var err error
		if perr := guard("a turn-start hook", func() { err = h.fn(ctx, info, input) }); perr != nil {
			return perr
		}
		if err != nil {
			return hookErr(err, "turn-start hook")
		}
	}
	return nil
}

// turnEnd runs the TurnEnd hooks after the run's last commit: a panic can
// no longer be recorded, and is dropped.
func (s hookSet) turnEnd(ctx context.Context, info HookInfo, st session.Status, u model.Usage) {
	for _, h := range s.h.turnEnd {
		_ = guard("a turn-end hook", func() { h.fn(ctx, info, st, u) })
	}
}

func (s hookSet) onCompaction(ctx context.Context, info HookInfo, c *session.Compaction) error {
	for _, h := range s.h.compaction {
		if err := guard("a compaction hook", func() { h.fn(ctx, info, c) }); err != nil {
			return err
		}
	}
	return nil
}

func (s hookSet) agentEnd(ctx context.Context, info HookInfo, st session.Status, text string) error {
	for _, h := range s.h.agentEnd {
		if err := guard("an agent-end hook", func() { h.fn(ctx, info, st, text) }); err != nil {
			return err
		}
	}
	return nil
}

func (s hookSet) planStep(ctx context.Context, info HookInfo, d *session.PlanStepFinished) error {
	for _, h := range s.h.planStep {
		if err := guard("a plan-step hook", func() { h.fn(ctx, info, d) }); err != nil {
			return err
		}
	}
	return nil
}

// rewritesRequests reports whether a before-model hook could change the
// request (and so the runner's reused message buffer).
func (s hookSet) rewritesRequests() bool { return len(s.h.beforeModel) > 0 }

func (s hookSet) empty() bool { return len(s.h.beforeTool)+len(s.h.afterTool) == 0 }

func hookErr(err error, what string) error {
	var re *Error
	if errors.As(err, &re) {
		return err
	}
	return &Error{Kind: FailHook, Msg: what + " stopped the run", Err: err}
}
