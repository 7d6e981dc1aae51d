package agentrt

import (
	"errors"
	"fmt"
	"strings"

	"github.com/agentrt/agentrt/memory"
	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/tool"
)

// Profile is an agent's persona, rendered into the system prompt.
type Profile struct {
	Name      string `json:"name,omitempty"`
	Role      string `json:"role,omitempty"`
	Goal      string `json:"goal,omitempty"`
	Backstory string `json:"backstory,omitempty"`
	Language  string `json:"language,omitempty"`
	Tone      string `json:"tone,omitempty"`
}

// Render returns the profile as system-prompt text; empty fields are left
// out, and an empty profile renders as "".
func (p Profile) Render() string {
	var b strings.Builder
	switch {
	case p.Name != "" && p.Role != "":
		fmt.Fprintf(&b, "You are %s, %s.\n", p.Name, p.Role)
	case p.Name != "":
		fmt.Fprintf(&b, "You are %s.\n", p.Name)
	case p.Role != "":
		fmt.Fprintf(&b, "You are %s.\n", p.Role)
	}
	if p.Goal != "" {
		fmt.Fprintf(&b, "Your goal: %s\n", p.Goal)
	}
	if p.Backstory != "" {
		fmt.Fprintf(&b, "Background: %s\n", p.Backstory)
	}
	if p.Language != "" {
		fmt.Fprintf(&b, "Answer in %s.\n", languageName(p.Language))
	}
	if p.Tone != "" {
		fmt.Fprintf(&b, "Tone: %s.\n", p.Tone)
	}
	return strings.TrimRight(b.String(), "\n")
}

func languageName(code string) string {
	switch strings.ToLower(code) {
	case "en":
		return "English"
	case "zh":
		return "Chinese"
	case "de":
		return "German"
	case "fr":
		return "French"
	case "es":
		return "Spanish"
	case "ja":
		return "Japanese"
	}
	return code
}

// RenderSystemPrompt joins a rendered profile and instructions.
func RenderSystemPrompt(p Profile, instructions string) string {
	parts := make([]string, 0, 2)
	if s := p.Render(); s != "" {
		parts = append(parts, s)
	}
	if s := strings.TrimSpace(instructions); s != "" {
		parts = append(parts, s)
	}
	return strings.Join(parts, "\n\n")
}

// Builder assembles an Agent from explicit dependencies: nothing is
// looked up globally. Errors are collected and
// returned by Build.
type Builder struct {
	a       Agent
	profile Profile
	instr   string
	tools   []tool.Tool
	reg     *tool.Registry
	filter  []string
	errs    []error
}

// NewAgent starts a Builder for an agent called name.
func NewAgent(name string) *Builder { return &Builder{a: Agent{Name: name}} }

// Profile sets the persona.
func (b *Builder) Profile(p Profile) *Builder { b.profile = p; return b }

// Instructions sets the instructions appended to the profile.
func (b *Builder) Instructions(s string) *Builder { b.instr = s; return b }

// Description says what the agent is for (Agent.Description).
func (b *Builder) Description(s string) *Builder { b.a.Description = s; return b }

// Model sets the model.
func (b *Builder) Model(m model.Model) *Builder { b.a.Model = m; return b }

// Fallbacks sets the models tried, in order, when the model fails for good.
func (b *Builder) Fallbacks(ms ...model.Model) *Builder { b.a.Fallbacks = ms; return b }

// Models sets the models a session may change to (Agent.Models).
func (b *Builder) Models(ms ModelSet) *Builder { b.a.Models = ms; return b }

// Retry sets how failed model calls are retried.
func (b *Builder) Retry(p RetryPolicy) *Builder { b.a.Retry = p; return b }

// Tools adds tools.
func (b *Builder) Tools(ts ...tool.Tool) *Builder { b.tools = append(b.tools, ts...); return b }

// Registry uses the tools of r (filtered by ToolFilter, if set).
func (b *Builder) Registry(r *tool.Registry) *Builder { b.reg = r; return b }

// ToolFilter keeps only the tools matching the patterns (names or globs);
// a pattern that matches nothing is a Build error.
func (b *Builder) ToolFilter(patterns ...string) *Builder { b.filter = patterns; return b }

// Approval sets the approval policy.
func (b *Builder) Approval(p ApprovalPolicy) *Builder { b.a.Approval = p; return b }

// MaxRounds sets the round limit of a run.
func (b *Builder) MaxRounds(n int) *Builder {
	if n < 0 {
		b.errs = append(b.errs, fmt.Errorf("max rounds %d is negative", n))
	}
	b.a.Limits.MaxRounds = n
	return b
}

// Limits sets every limit of a run, MaxRounds included (see Limits).
func (b *Builder) Limits(l Limits) *Builder { b.a.Limits = l; return b }

// Compaction sets when and how the history is compacted (see Compaction).
func (b *Builder) Compaction(c Compaction) *Builder { b.a.Compaction = c; return b }

// Memory gives the agent a memory and its "retrieve" tool; remember also
// writes each finished turn's question and answer to it.
func (b *Builder) Memory(m memory.Store, remember bool) *Builder {
	b.a.Memory, b.a.RememberTurns = m, remember
	return b
}

// LoopDetection sets the loop detectors' thresholds (see LoopDetection).
func (b *Builder) LoopDetection(l LoopDetection) *Builder { b.a.LoopDetection = l; return b }

// Policy sets the policy (default React).
func (b *Builder) Policy(p Policy) *Builder { b.a.Policy = p; return b }

// Executor overrides the executor of one instruction kind for this agent.
func (b *Builder) Executor(k Kind, e Executor) *Builder {
	if e == nil {
		b.errs = append(b.errs, fmt.Errorf("nil executor for %q", k))
		return b
	}
	if b.a.Executors == nil {
		b.a.Executors = make(map[Kind]Executor)
	}
	b.a.Executors[k] = e
	return b
}

// Hooks lets f add hooks to the agent.
func (b *Builder) Hooks(f func(h *Hooks)) *Builder { f(&b.a.Hooks); return b }

// Build returns the agent, or every problem found.
func (b *Builder) Build() (*Agent, error) {
	errs := append([]error(nil), b.errs...)
	if b.a.Name == "" {
		errs = append(errs, errors.New("agent has no name"))
	}
	if b.a.Model == nil {
		errs = append(errs, errors.New("agent has no model"))
	}
	reg := b.reg
	if len(b.tools) > 0 {
		all := b.tools
		if reg != nil {
			all = nil
			for _, n := range reg.Names() {
				t, _ := reg.Get(n)
				all = append(all, t)
			}
			all = append(all, b.tools...)
		}
		r, err := tool.NewRegistry(all...)
		if err != nil {
			errs = append(errs, err)
		}
		reg = r
	}
	if reg != nil && len(b.filter) > 0 {
		r, err := reg.Filter(b.filter)
		if err != nil {
			errs = append(errs, err)
		}
		reg = r
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("agent %q: %w", b.a.Name, err)
	}
	a := b.a
	a.Tools = reg
	a.SystemPrompt = RenderSystemPrompt(b.profile, b.instr)
	a.profile, a.instructions, a.built = b.profile, b.instr, true
	return &a, nil
}
