package agentrt

import (
	"errors"
	"fmt"
	"path"
	"strings"
	"sync/atomic"
	"time"

	"github.com/agentrt/agentrt/memory"
	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/tool"
)

// Agent is everything the runner needs to run one kind of agent. Build it
// directly or with the agent package's Builder. Once given to New, an
// Agent must not be changed: the runner reads it concurrently and derives
// tables from it (the tools' specs and approval policies).
type Agent struct {
	Name string
	// Description says in a sentence or two what the agent is for: what
	// a parent agent sees of it as a sub-agent tool, and what the
	// protocol adapters show of it (an A2A agent card, an MCP tool).
	Description string
	// SystemPrompt is sent first in every model request (the agent
	// package renders a Profile and instructions into it).
	SystemPrompt string
	Model        model.Model
	// Fallbacks are tried in order, each with its own retries, when Model
	// fails for good (PRODUCT's fallback_models).
	Fallbacks []model.Model
	// Models are the models a session of the agent may change to
	// (session.ModelChanged: a fork made to compare models); nil: the
	// agent's sessions keep its model.
	Models ModelSet
	// Retry says how failed model calls are retried.
	Retry RetryPolicy
	// NoStream asks the model for whole replies (model.Generator) rather
	// than streams, for models that can; the reply's text then arrives as
	// one token event.
	NoStream bool
	// Tools the agent may call. Nil means none.
	Tools    *tool.Registry
	Approval ApprovalPolicy
	Limits   Limits
	// LoopDetection stops a model that repeats itself.
	LoopDetection LoopDetection
	// Compaction keeps the history the model sees within bounds.
	Compaction Compaction
	// Memory, when set, gives the agent a "retrieve" tool over it: a
	// full-text search of what it remembers.
	Memory memory.Store
	// RememberTurns writes each finished turn's question and answer to
	// Memory; off by default.
	RememberTurns bool
	// Policy decides the next instruction; nil means React.
	Policy Policy
	// Executors override the runner's and the built-in executors.
	Executors map[Kind]Executor
	Hooks     Hooks

	// profile and instructions, when the Builder made the agent, are what
	// SystemPrompt was rendered from: a run's profile overrides are
	// rendered with them.
	profile      Profile
	instructions string
	built        bool

	// derived is what init and later reads work out from the tools, for
	// the registry's current generation (see agentTools). A pointer, so
	// that copying an Agent copies no atomic value.
	derived *atomic.Pointer[agentTools]
}

// agentTools is what an agent works out from its tools, for one
// generation of its registry (tool.Registry.Generation): the specs sent
// to the model, each tool's approval, the tools that must not run twice
// blindly, those that ask a person and those that delegate. It is
// immutable. The registry may change while the agent runs (an MCP
// server's tools come and go): a read that finds another generation works
// the table out again, so a turn neither re-reads nor re-sorts the tools
// while they stay the same.
type agentTools struct {
	reg       *tool.Registry
	gen       uint64
	specs     []model.ToolSpec
	approvals map[string]tool.Approval
	once      map[string]bool
	askUser   map[string]bool
	delegates map[string]bool
}

var noTools = &agentTools{}

// toolView returns the agent's agentTools for its registry as it is now.
func (a *Agent) toolView() *agentTools {
	if a.Tools == nil {
		return noTools
	}
	// The generation is read before the tools: a table worked out from
	// tools newer than its generation says is worked out again next time,
	// never kept when stale.
	gen := a.Tools.Generation()
	if a.derived != nil {
		if t := a.derived.Load(); t != nil && t.reg == a.Tools && t.gen == gen {
			return t
		}
	}
	t := &agentTools{reg: a.Tools, gen: gen, approvals: make(map[string]tool.Approval),
		once: make(map[string]bool), askUser: make(map[string]bool), delegates: make(map[string]bool)}
	for _, d := range a.Tools.Definitions() {
		tl := a.tool(d.Name)
		t.specs = append(t.specs, model.ToolSpec{Name: d.Name, Description: d.Description, InputSchema: d.InputSchema})
		t.approvals[d.Name] = a.Approval.For(d.Name, tl)
		t.once[d.Name] = tool.MetaOf(tl).AtMostOnce
		t.askUser[d.Name] = tool.MetaOf(tl).AsksUser
		t.delegates[d.Name] = tool.MetaOf(tl).Delegates
	}
	if a.derived != nil {
		a.derived.Store(t) // two readers may both work it out: the same table
	}
	return t
}

// approvalFor returns the approval policy for a call of the named tool.
func (a *Agent) approvalFor(name string) tool.Approval {
	if ap, ok := a.toolView().approvals[name]; ok {
		return ap
	}
	// A tool the registry no longer holds, or never did: a call of it is
	// an unknown tool's, and the policy of its name applies.
	return a.Approval.For(name, a.tool(name))
}

// asksUser reports whether calls of the named tool go to a person
// (tool.Meta.AsksUser).
func (a *Agent) asksUser(name string) bool {
	if v, ok := a.toolView().askUser[name]; ok {
		return v
	}
	t := a.tool(name)
	return t != nil && tool.MetaOf(t).AsksUser
}

// delegates reports whether calls of the named tool delegate to an agent
// outside the runtime and report it (tool.Meta.Delegates).
func (a *Agent) delegates(name string) bool {
	if v, ok := a.toolView().delegates[name]; ok {
		return v
	}
	t := a.tool(name)
	return t != nil && tool.MetaOf(t).Delegates
}

// atMostOnce reports whether calls of the named tool must not be repeated
// blindly (tool.Meta.AtMostOnce).
func (a *Agent) atMostOnce(name string) bool {
	if once, ok := a.toolView().once[name]; ok {
		return once
	}
	t := a.tool(name)
	return t != nil && tool.MetaOf(t).AtMostOnce
}

// Limits bound a run. Reaching one pauses the run (status paused, the
// reason naming the limit, an error event saying it in words) so that a
// person can raise it and resume; see budget.go. Zero means no limit,
// except MaxRounds.
type Limits struct {
	// MaxRounds is the number of model calls in one run before it pauses;
	// zero means 10.
	MaxRounds int
	// MaxSteps is the number of tool calls a turn runs.
	MaxSteps int
	// MaxTokens and MaxCostUSD bound what a turn's model calls use
	// (input and output tokens; the cost needs priced models), checked
	// before each model call with the request's estimated size.
	MaxTokens  int64
	MaxCostUSD float64
	// SessionMaxTokens and SessionMaxCostUSD bound the same over the
	// session's whole life: a resume does not renew them.
	SessionMaxTokens  int64
	SessionMaxCostUSD float64
	// MaxTurnDuration bounds a turn's wall-clock time, from its start or
	// its last resume, checked before each model call and batch of tool
	// calls.
	MaxTurnDuration time.Duration
}

// DefaultMaxRounds is the round limit when Limits.MaxRounds is zero.
const DefaultMaxRounds = 10

func (l Limits) maxRounds() int {
	if l.MaxRounds <= 0 {
		return DefaultMaxRounds
	}
	return l.MaxRounds
}

// RetryPolicy says how a failed model call is retried. Only failures a
// provider classified as recoverable (a *model.Error: rate limits,
// timeouts, server errors, cut streams) are retried; bad requests, auth
// failures and requests too large go straight to the next fallback model.
// A stream that breaks after it began is first retried once without
// streaming, when the model can (model.Generator).
type RetryPolicy struct {
	// MaxAttempts is the number of attempts per model, the first one
	// included; 0 means 3, 1 means no retries.
	MaxAttempts int
	// InitialDelay (0: 1 s) and MaxDelay (0: 30 s) bound the exponential
	// backoff between attempts (factor 2, ±50% jitter). A longer wait asked
	// for by the provider (retry-after) wins, up to MaxDelay.
	InitialDelay, MaxDelay time.Duration
}

func (p RetryPolicy) maxAttempts() int {
	if p.MaxAttempts <= 0 {
		return 3
	}
	return p.MaxAttempts
}

// ApprovalPolicy decides which tool calls need a human. Patterns are tool
// names or globs ("fs.*"). Deny wins over Ask, Ask over the tool's own
// Meta.Approval, which wins over Default.
type ApprovalPolicy struct {
	Default tool.Approval
	Ask     []string
	Deny    []string
	// Expires is how long a request for a person about a call waits
	// before it gets its default decision (an approval: reject; a
	// confirmation: failed), recorded by "system" with reason expired;
	// zero means never. ExpiresFor sets it per tool: the tool's own name
	// wins, else the longest glob that matches (the most specific; among
	// equally long ones, the first in byte order).
	Expires    time.Duration
	ExpiresFor map[string]time.Duration
	// AutoWhenDelegated approves the agent's ask calls without a person
	// when it runs as another agent's sub-agent; deny still denies.
	AutoWhenDelegated bool
}

// expiresFor returns how long a request about a call of the named tool
// waits, zero for ever.
func (p ApprovalPolicy) expiresFor(name string) time.Duration {
	if d, ok := p.ExpiresFor[name]; ok {
		return d
	}
	best, found := "", false
	for pat := range p.ExpiresFor {
		if !matchAny([]string{pat}, name) {
			continue
		}
		if !found || len(pat) > len(best) || (len(pat) == len(best) && pat < best) {
			best, found = pat, true
		}
	}
	if found {
		return p.ExpiresFor[best]
	}
	return p.Expires
}

// For returns the approval policy for a call of the named tool.
func (p ApprovalPolicy) For(name string, t tool.Tool) tool.Approval {
	if matchAny(p.Deny, name) {
		return tool.ApprovalDeny
	}
	if matchAny(p.Ask, name) {
		return tool.ApprovalAsk
	}
	if t != nil {
		if a := tool.MetaOf(t).Approval; a != "" {
			return a
		}
	}
	if p.Default != "" {
		return p.Default
	}
	return tool.ApprovalAuto
}

func matchAny(patterns []string, name string) bool {
	for _, p := range patterns {
		if p == name {
			return true
		}
		if ok, _ := path.Match(p, name); ok {
			return true
		}
	}
	return false
}

func (a *Agent) init() error {
	if a.Name == "" {
		return fmt.Errorf("agent has no name")
	}
	if a.Model == nil {
		return fmt.Errorf("agent %q has no model", a.Name)
	}
	for i, m := range a.Fallbacks {
		if m == nil {
			return fmt.Errorf("agent %q: fallback model %d is nil", a.Name, i+1)
		}
	}
	if a.Retry.MaxAttempts < 0 || a.Retry.InitialDelay < 0 || a.Retry.MaxDelay < 0 {
		return fmt.Errorf("agent %q: negative retry policy %+v", a.Name, a.Retry)
	}
	for _, p := range append(append([]string(nil), a.Approval.Ask...), a.Approval.Deny...) {
		if _, err := path.Match(p, ""); err != nil {
			return fmt.Errorf("agent %q: bad approval pattern %q: %w", a.Name, p, err)
		}
	}
	if a.RememberTurns && a.Memory == nil {
		return fmt.Errorf("agent %q: RememberTurns needs a Memory", a.Name)
	}
	if err := a.withRetrieve(); err != nil {
		return fmt.Errorf("agent %q: retrieve tool: %w", a.Name, err)
	}
	if err := a.Limits.check(); err != nil {
		return fmt.Errorf("agent %q: %w", a.Name, err)
	}
	if err := a.Compaction.check(); err != nil {
		return fmt.Errorf("agent %q: %w", a.Name, err)
	}
	if err := a.LoopDetection.check(); err != nil {
		return fmt.Errorf("agent %q: %w", a.Name, err)
	}
	switch a.Approval.Default {
	case "", tool.ApprovalAuto, tool.ApprovalAsk, tool.ApprovalDeny:
	default:
		return fmt.Errorf("agent %q: approval default %q is not auto, ask or deny", a.Name, a.Approval.Default)
	}
	a.derived = new(atomic.Pointer[agentTools])
	a.toolView()
	a.Hooks.sort()
	return nil
}

// ToolSpecs returns the tool descriptions sent to the model: those of the
// agent's tools as they are now (a registry whose tools change while the
// agent runs gives the next model request the new list). The slice is
// shared: do not modify it.
func (a *Agent) ToolSpecs() []model.ToolSpec { return a.toolView().specs }

// resolveTool maps a tool name as a model wrote it to one of the agent's
// tools: the name itself, without a
// "functions." prefix, or differing only in case when one tool matches.
func (a *Agent) resolveTool(name string) (string, bool) {
	if a.Tools == nil {
		return "", false
	}
	name = strings.TrimSpace(name)
	if _, ok := a.Tools.Get(name); ok {
		return name, true
	}
	if n, ok := strings.CutPrefix(name, "functions."); ok {
		if _, ok := a.Tools.Get(n); ok {
			return n, true
		}
		name = n
	}
	found := ""
	specs := a.ToolSpecs()
	for i := range specs {
		if strings.EqualFold(specs[i].Name, name) {
			if found != "" {
				return "", false // ambiguous
			}
			found = specs[i].Name
		}
	}
	return found, found != ""
}

func (a *Agent) tool(name string) tool.Tool {
	if a.Tools == nil {
		return nil
	}
	t, _ := a.Tools.Get(name)
	return t
}

// ModelSet is a set of models found by name: the models of a config.
type ModelSet interface {
	// Names are the models' names, sorted.
	Names() []string
	// Model returns the model called name, or an error saying why not.
	Model(name string) (model.Model, error)
}

// modelNamed is the model called name that a session of the agent may
// change to: its own model, or one of Models.
func (a *Agent) modelNamed(name string) (model.Model, error) {
	if a.Model != nil && a.Model.Name() == name {
		return a.Model, nil
	}
	if a.Models == nil {
		return nil, &Error{Kind: FailInput, Code: CodeUnknownModel,
			Msg: fmt.Sprintf("agent %s cannot change its model (to %q): it has no other models", a.Name, name)}
	}
	m, err := a.Models.Model(name)
	if err == nil && m == nil {
		err = errors.New("no such model")
	}
	if err != nil {
		return nil, &Error{Kind: FailInput, Code: CodeUnknownModel,
			Msg: fmt.Sprintf("agent %s cannot change its model to %q", a.Name, name), Err: err}
	}
	return m, nil
}
