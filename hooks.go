package agentrt

import (
	"context"
	"encoding/json"
	"sort"

	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/session"
	"github.com/agentrt/agentrt/tool"
)

// HookInfo tells a hook where it runs.
type HookInfo struct {
	SessionID string
	RunID     string
	Agent     string
	Turn      int
	Round     int
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
// Hooks of one kind run in descending priority, then in the order they
// were added. Add hooks before the agent is registered with a Runner; the
// runner reads them concurrently afterwards.
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

// hookSet is the runner's and the agent's hooks together: runner hooks
// first at equal priority.
type hookSet struct{ runner, agent *Hooks }

func (s hookSet) beforeModel(ctx context.Context, info HookInfo, req *model.Request) (*model.Request, error) {
	for _, hs := range [2]*Hooks{s.runner, s.agent} {
		for _, h := range hs.beforeModel {
			r, err := h.fn(ctx, info, req)
			if err != nil {
				return nil, hookErr(err, "before-model hook")
			}
			if r != nil {
				req = r
			}
		}
	}
	return req, nil
}

func (s hookSet) afterModel(ctx context.Context, info HookInfo, resp *model.Response) (*model.Response, error) {
	for _, hs := range [2]*Hooks{s.runner, s.agent} {
		for _, h := range hs.afterModel {
			r, err := h.fn(ctx, info, resp)
			if err != nil {
				return nil, hookErr(err, "after-model hook")
			}
			if r != nil {
				resp = r
			}
		}
	}
	return resp, nil
}

func (s hookSet) beforeTool(ctx context.Context, info HookInfo, call model.ToolCall) ToolDecision {
	var out ToolDecision
	for _, hs := range [2]*Hooks{s.runner, s.agent} {
		for _, h := range hs.beforeTool {
			d := h.fn(ctx, info, call)
			if d.Arguments != nil {
				call.Arguments = d.Arguments
				out.Arguments = d.Arguments
			}
			if d.Block {
				out.Block, out.Reason = true, d.Reason
				return out
			}
		}
	}
	return out
}

func (s hookSet) afterTool(ctx context.Context, info HookInfo, call model.ToolCall, res tool.Result) tool.Result {
	for _, hs := range [2]*Hooks{s.runner, s.agent} {
		for _, h := range hs.afterTool {
			res = h.fn(ctx, info, call, res)
		}
	}
	return res
}

func (s hookSet) turnStart(ctx context.Context, info HookInfo, input string) error {
	for _, hs := range [2]*Hooks{s.runner, s.agent} {
		for _, h := range hs.turnStart {
			if err := h.fn(ctx, info, input); err != nil {
				return hookErr(err, "turn-start hook")
			}
		}
	}
	return nil
}

func (s hookSet) turnEnd(ctx context.Context, info HookInfo, st session.Status, u model.Usage) {
	for _, hs := range [2]*Hooks{s.runner, s.agent} {
		for _, h := range hs.turnEnd {
			h.fn(ctx, info, st, u)
		}
	}
}

// rewritesRequests reports whether a before-model hook could change the
// request (and so the runner's reused message buffer).
func (s hookSet) rewritesRequests() bool {
	return len(s.runner.beforeModel)+len(s.agent.beforeModel) > 0
}

func (s hookSet) empty() bool {
	return len(s.runner.beforeTool)+len(s.agent.beforeTool)+len(s.runner.afterTool)+len(s.agent.afterTool) == 0
}

func hookErr(err error, what string) error {
	if _, ok := err.(*Error); ok {
		return err
	}
	return &Error{Kind: FailHook, Msg: what + " stopped the run", Err: err}
}
