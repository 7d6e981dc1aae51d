package agentrt

import (
	"context"
	"encoding/json"
	"errors"
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

// Merge appends o's hooks to h, keeping priority order.
func (h *Hooks) Merge(o *Hooks) {
	for _, x := range o.beforeModel {
		h.BeforeModel(x.priority, x.fn)
	}
	for _, x := range o.afterModel {
		h.AfterModel(x.priority, x.fn)
	}
	for _, x := range o.beforeTool {
		h.BeforeTool(x.priority, x.fn)
	}
	for _, x := range o.afterTool {
		h.AfterTool(x.priority, x.fn)
	}
	for _, x := range o.turnStart {
		h.TurnStart(x.priority, x.fn)
	}
	for _, x := range o.turnEnd {
		h.TurnEnd(x.priority, x.fn)
	}
}

func (h *Hooks) sort() {
	sortHooks(h.beforeModel)
	sortHooks(h.afterModel)
	sortHooks(h.beforeTool)
	sortHooks(h.afterTool)
	sortHooks(h.turnStart)
	sortHooks(h.turnEnd)
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

func (s hookSet) beforeModel(ctx context.Context, info HookInfo, req *model.Request) (*model.Request, error) {
	for _, h := range s.h.beforeModel {
		r, err := h.fn(ctx, info, req)
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
		r, err := h.fn(ctx, info, resp)
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
// the answer to the question it asked about the call, as info.Answer.
// asker is the index of the hook that asked (out.Ask), if any.
func (s hookSet) beforeTool(ctx context.Context, info HookInfo, call model.ToolCall, answers map[int]*session.InputResolved) (out ToolDecision, asker int) {
	for i, h := range s.h.beforeTool {
		info.Answer = answers[i]
		d := h.fn(ctx, info, call)
		if d.Arguments != nil {
			call.Arguments = d.Arguments
			out.Arguments = d.Arguments
		}
		if d.Block {
			out.Block, out.Reason = true, d.Reason
			return out, 0
		}
		if d.Ask != nil {
			out.Ask = d.Ask
			return out, i
		}
	}
	return out, 0
}

func (s hookSet) afterTool(ctx context.Context, info HookInfo, call model.ToolCall, res tool.Result) tool.Result {
	for _, h := range s.h.afterTool {
		res = h.fn(ctx, info, call, res)
	}
	return res
}

func (s hookSet) turnStart(ctx context.Context, info HookInfo, input string) error {
	for _, h := range s.h.turnStart {
		if err := h.fn(ctx, info, input); err != nil {
			return hookErr(err, "turn-start hook")
		}
	}
	return nil
}

func (s hookSet) turnEnd(ctx context.Context, info HookInfo, st session.Status, u model.Usage) {
	for _, h := range s.h.turnEnd {
		h.fn(ctx, info, st, u)
	}
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
