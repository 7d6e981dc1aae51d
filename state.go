package agentrt

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/session"
)

// StateVersion is the version of the serialised State.
const StateVersion = 1

// runMessages is the room State.Apply makes in Messages when a run starts:
// the input, and the answer after three rounds of tool calls.
const runMessages = 8

// State is a session's runtime state. It is a pure fold of the session's
// event log (Apply), so it can be rebuilt from any prefix of the log; a
// snapshot of it is stored when a run stops so loading is quick.
//
// A State belongs to one goroutine at a time: the Runner owns it while a
// run is in progress.
type State struct {
	V         int            `json:"v"`
	SessionID string         `json:"session_id"`
	Agent     string         `json:"agent"`
	Seq       int64          `json:"seq"`
	Status    session.Status `json:"status"`
	Turn      int            `json:"turn"`
	RunID     string         `json:"run_id,omitempty"`
	// Engine is the engine the run runs on (run_started's, or its last
	// run_resumed's): "" for the process that started it.
	Engine string `json:"engine,omitempty"`
	// TurnID is the turn the current run belongs to (its run_started's;
	// see session.RunStarted.TurnID).
	TurnID string `json:"turn_id,omitempty"`
	// Input is the current turn's input (its run_started's), and Source
	// where it came from.
	Input  string `json:"input,omitempty"`
	Source string `json:"source,omitempty"`
	// Overrides change the agent for the current run only.
	Overrides *session.Overrides `json:"overrides,omitempty"`
	// Model is the model the session's calls use instead of the agent's
	// (its last model_changed); empty: the agent's.
	Model string `json:"model,omitempty"`
	// ClientTools are the tools the client declared for the current run
	// (its run_started's): their calls go back to the client.
	ClientTools []model.ToolSpec `json:"client_tools,omitempty"`
	// Round is the number of model rounds in the current run; RoundBase
	// is the round at which the run was last resumed from a pause, so the
	// round limit applies per resume.
	Round     int `json:"round"`
	RoundBase int `json:"round_base,omitempty"`
	// Attempt is the last model attempt in the current round; InModel is
	// true between model_started and model_finished.
	Attempt  int             `json:"attempt,omitempty"`
	InModel  bool            `json:"in_model,omitempty"`
	Messages []model.Message `json:"messages"`
	// Calls are the tool calls of the last assistant message until all
	// have results.
	Calls []CallState `json:"calls,omitempty"`
	// RepeatedCallIDs are the call ids the model has given more than
	// one call of the session (model_finished.renamed_call_ids): a call
	// with one gets an id of its own (see callIDTaken).
	RepeatedCallIDs []string       `json:"repeated_call_ids,omitempty"`
	Requests        []HumanRequest `json:"requests,omitempty"`
	Usage           model.Usage    `json:"usage"`
	RunUsage        model.Usage    `json:"run_usage"`
	Final           string         `json:"final,omitempty"`
	// Steered are the ids of the input steered into the current run from
	// another process that it took (input_steered's steer): a steering
	// request still kept for a new owner of the session is not taken twice.
	Steered []string `json:"steered,omitempty"`
	// LastError is the last error event of the current run.
	LastError *session.Error `json:"last_error,omitempty"`
	// Recoveries counts the times the run was resumed after its process
	// stopped (run_resumed, reason recovered) since it last made progress
	// (a model reply or a tool result): a session that keeps crashing its
	// process is stopped after Config.MaxRecoveries.
	Recoveries int `json:"recoveries,omitempty"`
	// PolicyJSON is the policy's own state as of the snapshot (see
	// PolicyState); Load decodes it.
	PolicyJSON json.RawMessage `json:"policy,omitempty"`
	// Rules are the session's standing decisions (an "always" answer of
	// scope session), not revoked.
	Rules []session.Rule `json:"rules,omitempty"`

	// Steps counts the tool calls the run has started; StepBase, UsageBase
	// and RunSince are where the turn's limits count from: the run's start,
	// or its last resume after a pause (see Limits).
	Steps     int         `json:"steps,omitempty"`
	StepBase  int         `json:"step_base,omitempty"`
	UsageBase model.Usage `json:"usage_base"`
	RunSince  time.Time   `json:"run_since"`

	// Parent is the session and call a sub-agent's run works for (its
	// run_started's); nil for a session of its own.
	Parent *session.ParentRef `json:"parent,omitempty"`

	// LoopCalls are the tool calls of the current turn, in the order of
	// their results, as the loop detectors see them; LoopWarned the
	// detectors that warned in it (see LoopDetection).
	LoopCalls  []LoopCall `json:"loop_calls,omitempty"`
	LoopWarned []string   `json:"loop_warned,omitempty"`

	policy PolicyState
	// agentRules are the agent's standing decisions, from its rule log
	// (not the session's): read on first need from rulesFrom, which the
	// runner sets (with the context of the run) when it takes the session.
	agentRules []session.Rule
	rulesFrom  *Runner
	rulesCtx   context.Context
	// SnapshotSeq is the seq of the session's newest stored snapshot, as
	// far as this state knows (Load sets it; commits that write one update
	// it). It is bookkeeping, not part of the snapshot.
	SnapshotSeq int64 `json:"-"`
}

// CallApproval is where a call stands with the people who decide on it.
type CallApproval string

// Approval states of a call.
const (
	CallUndecided CallApproval = ""
	CallPending   CallApproval = "pending"  // waiting for a human
	CallApproved  CallApproval = "approved" // approved (possibly with edited arguments)
	CallRejected  CallApproval = "rejected" // a human said no
	// CallRetry: a person said a call whose outcome was in doubt (it was
	// running when its process stopped) may run again.
	CallRetry CallApproval = "retry"
)

// CallState tracks one tool call of the current batch.
type CallState struct {
	Call     model.ToolCall `json:"call"`
	Approval CallApproval   `json:"approval,omitempty"`
	Reason   string         `json:"reason,omitempty"`
	// Started is true once its tool_call event is committed; Attempts
	// counts those events (a call that was running when its process
	// stopped runs again as the next attempt).
	Started  bool                `json:"started,omitempty"`
	Attempts int                 `json:"attempts,omitempty"`
	Done     bool                `json:"done,omitempty"`
	Result   *session.ToolResult `json:"result,omitempty"`
	// Answers are the person's answers to the questions BeforeTool hooks
	// asked about this call, by the asking hook's index; each hook sees
	// its own as HookInfo.Answer.
	Answers map[int]*session.InputResolved `json:"answers,omitempty"`
}

// stampRequest sets when request id was asked, for a request folded before
// its event had a time (emitted, not yet committed).
func (s *State) stampRequest(id string, t time.Time) {
	for i := range s.Requests {
		if s.Requests[i].ID == id && s.Requests[i].Asked.IsZero() {
			s.Requests[i].Asked = t
		}
	}
}

// HumanRequest is a pending request for a person: an approval of tool
// calls, a free-text prompt, a choice among options, or the confirmation
// of a call whose outcome is in doubt.
type HumanRequest struct {
	ID       string              `json:"id"`
	Kind     session.RequestKind `json:"kind"`
	Question string              `json:"question,omitempty"`
	Options  []string            `json:"options,omitempty"`
	Multi    bool                `json:"multi,omitempty"`
	// CallID is the call of a request about one call; Calls lists every
	// call the request is about.
	CallID string   `json:"call_id,omitempty"`
	Calls  []string `json:"calls,omitempty"`
	// Asked is when the request was made; Expires, when set, when it
	// gets its default decision.
	Asked   time.Time  `json:"asked"`
	Expires *time.Time `json:"expires,omitempty"`
	// Hook is true for a question a BeforeTool hook asked about the call;
	// HookIndex is which hook (see session.InputRequired).
	Hook      bool `json:"hook,omitempty"`
	HookIndex int  `json:"hook_index,omitempty"`
	// Child is the sub-agent's request this one stands for.
	Child *session.ChildRequest `json:"child,omitempty"`
	// Metadata is what the asker attached (see
	// session.InputRequired.Metadata).
	Metadata map[string]any `json:"metadata,omitempty"`
}

// PolicyState is a policy's own state: a fold of the session's events,
// like the State itself (a policy that plans keeps its plan here, in the
// log, rather than in memory). It is saved with the State's snapshots as
// JSON, so it must survive encoding/json, and rebuilt by applying the
// events after the snapshot.
//
// Apply sees every committed event, its payload typed for the events of
// package session and, for custom event types, either the executor's own
// payload (in the process that emitted it) or a *session.Raw (read back
// from the store): use session.As to read both the same way.
type PolicyState interface {
	Apply(e *session.Event) error
}

// StatefulPolicy is a Policy that keeps a PolicyState, which the runner
// creates for each session it loads and folds every event into.
type StatefulPolicy interface {
	Policy
	NewPolicyState() PolicyState
}

// NewState returns the state of a new, empty session.
func NewState(sessionID, agent string) *State {
	return &State{V: StateVersion, SessionID: sessionID, Agent: agent, Status: session.StatusIdle}
}

// Policy returns the policy's own state, or nil when the agent's policy
// keeps none.
func (s *State) Policy() PolicyState { return s.policy }

// Pending returns the pending human request with the given id, or nil.
func (s *State) Pending(id string) *HumanRequest {
	for i := range s.Requests {
		if s.Requests[i].ID == id {
			return &s.Requests[i]
		}
	}
	return nil
}

// callIDTaken reports whether a call of the session has id, or whether
// the model has given id to more than one call: a call with it gets one
// of its own (normalizeCalls). Calls compacted out of the history count
// only through RepeatedCallIDs.
func (s *State) callIDTaken(id string) bool {
	return slices.Contains(s.RepeatedCallIDs, id) || usedID(s.Messages, id)
}

func (s *State) call(id string) *CallState {
	for i := range s.Calls {
		if s.Calls[i].Call.ID == id {
			return &s.Calls[i]
		}
	}
	return nil
}

// Apply folds one committed event into s. Events must come in seq order;
// unknown event types are skipped (they may carry custom executors' data).
func (s *State) Apply(e *session.Event) error {
	if e.Seq != 0 {
		if e.Seq != s.Seq+1 {
			return fmt.Errorf("agentrt: event seq %d applied to state at seq %d", e.Seq, s.Seq)
		}
		s.Seq = e.Seq
	}
	switch d := e.Data.(type) {
	case *session.RunStarted:
		s.Turn = e.Turn
		s.RunID = e.RunID
		s.Engine = d.Engine
		s.TurnID = cmp.Or(d.TurnID, e.RunID)
		s.Parent = d.Parent
		s.Input, s.Source = d.Input, d.Source
		s.Overrides = d.Overrides
		s.ClientTools = d.ClientTools
		s.Status = session.StatusRunning
		s.Round, s.RoundBase, s.Attempt, s.InModel = 0, 0, 0, false
		s.RunUsage = model.Usage{}
		s.Final = ""
		s.Steered = nil
		s.LastError = nil
		s.Recoveries = 0
		s.Calls = nil
		s.LoopCalls, s.LoopWarned = s.LoopCalls[:0], s.LoopWarned[:0]
		s.Steps, s.StepBase, s.UsageBase, s.RunSince = 0, 0, model.Usage{}, e.Time
		// A run adds a few messages: make room for them at once rather
		// than as the slice fills.
		s.Messages = slices.Grow(s.Messages, runMessages)
		msg := model.TextMessage(model.RoleUser, d.Input)
		if d.Input == "" && len(d.Media) > 0 {
			msg.Parts = nil // a photo without a word: the message is the photo
		}
		for i := range d.Media {
			m := d.Media[i]
			typ := model.PartFile
			if strings.HasPrefix(m.Type, "image/") {
				typ = model.PartImage
			}
			msg.Parts = append(msg.Parts, model.Part{Type: typ, Media: &m})
		}
		s.Messages = append(s.Messages, msg)
	case *session.RunResumed:
		if d.From == session.StatusPaused {
			s.RoundBase = s.Round
			s.StepBase, s.UsageBase = s.Steps, s.RunUsage
		}
		s.RunSince = e.Time
		s.Engine = d.Engine
		switch d.Reason {
		case ResumeRecovered:
			s.Recoveries++
		case ResumeStore:
			// The store stopped the run, not a crash; nor is it progress.
		default:
			s.Recoveries = 0
		}
		if d.Reason == ResumeRetry {
			// A person tries the run again: the loop counts start again.
			s.LoopCalls, s.LoopWarned = s.LoopCalls[:0], s.LoopWarned[:0]
		}
		s.Status = session.StatusRunning
		s.LastError = nil
	case *session.ModelChanged:
		s.Model = d.Model
	case *session.RoundStarted:
		s.Round = d.Round
		s.Attempt = 0
	case *session.ModelStarted:
		if d.Purpose == "" {
			s.Attempt = d.Attempt
			s.InModel = true
		}
	case *session.ModelFinished:
		s.Usage.Add(d.Usage)
		s.RunUsage.Add(d.Usage)
		s.Recoveries = 0
		if d.Purpose != "" {
			break // a call for an executor's own use, not a turn of the conversation
		}
		s.InModel = false
		m := model.Message{Role: model.RoleAssistant, ToolCalls: d.ToolCalls}
		if d.Content != "" {
			m.Parts = []model.Part{{Type: model.PartText, Text: d.Content}}
		}
		s.Messages = append(s.Messages, m)
		s.Calls = s.Calls[:0]
		for _, c := range d.ToolCalls {
			s.Calls = append(s.Calls, CallState{Call: c})
		}
		for _, id := range d.RenamedCallIDs {
			if !slices.Contains(s.RepeatedCallIDs, id) {
				s.RepeatedCallIDs = append(s.RepeatedCallIDs, id)
			}
		}
	case *session.ToolCall:
		if c := s.call(d.CallID); c != nil {
			// A blocked call does not run: stopping before its result is
			// no doubt about whether it took effect.
			c.Started = d.Blocked == ""
			if c.Started {
				s.Steps++
			}
			c.Attempts = max(c.Attempts+1, d.Attempt)
			c.Call.Arguments = d.Arguments
			if c.Approval == CallRetry {
				c.Approval = CallApproved // a retry that stops again is in doubt again
			}
		}
	case *session.ToolResult:
		c := s.call(d.CallID)
		if c == nil {
			return fmt.Errorf("agentrt: tool_result for unknown call %q", d.CallID)
		}
		c.Done = true
		c.Result = d
		s.Recoveries = 0
		if s.LoopCalls == nil {
			s.LoopCalls = make([]LoopCall, 0, 8)
		}
		s.LoopCalls = append(s.LoopCalls, loopCallOf(c.Call.Name, c.Call.Arguments, d))
		s.flushCalls()
	case *session.InputRequired:
		ids := make([]string, len(d.Calls))
		for i, call := range d.Calls {
			ids[i] = call.ID
			if c := s.call(call.ID); c != nil {
				c.Approval = CallPending
			}
		}
		r := HumanRequest{ID: d.RequestID, Kind: d.Kind, Question: d.Question, Options: d.Options, Multi: d.Multi, Calls: ids, Asked: e.Time, Expires: d.Expires, Hook: d.Hook, HookIndex: d.HookIndex, Child: d.Child, Metadata: d.Metadata}
		if len(ids) == 1 {
			r.CallID = ids[0]
		}
		s.Requests = append(s.Requests, r)
	case *session.InputResolved:
		r := s.Pending(d.RequestID)
		if r == nil {
			return fmt.Errorf("agentrt: input_resolved for unknown request %q", d.RequestID)
		}
		for _, id := range r.Calls {
			c := s.call(id)
			if c == nil {
				continue
			}
			c.Reason = d.Reason
			if r.Hook {
				answer := *d
				if c.Answers == nil {
					c.Answers = make(map[int]*session.InputResolved, 1)
				}
				c.Answers[r.HookIndex] = &answer
			}
			switch d.Decision {
			case session.DecisionApprove, session.DecisionEdit:
				c.Approval = CallApproved
				if len(d.Arguments) > 0 {
					c.Call.Arguments = d.Arguments
				}
			case session.DecisionRetry:
				c.Approval = CallRetry
			case session.DecisionDone, session.DecisionFailed, session.DecisionAnswer:
				// The person's verdict, or answer, is the tool_result
				// committed with this event.
				c.Approval = CallApproved
			default:
				c.Approval = CallRejected
			}
			if r.Child != nil {
				// The answer went to the sub-agent: its call goes on, and
				// the sub-agent takes the decision.
				c.Approval = CallApproved
			}
		}
		s.removeRequest(d.RequestID)
		if d.Rule != nil && d.Rule.Scope == session.RuleSession {
			s.Rules = append(s.Rules, *d.Rule)
		}
	case *session.MessagesImported:
		s.Messages = append(s.Messages, d.Messages...)
	case *session.InputSteered:
		s.Messages = append(s.Messages, model.TextMessage(model.RoleUser, d.Text))
		if d.Steer != "" {
			s.Steered = append(s.Steered, d.Steer)
		}
	case *session.RuleRevoked:
		s.Rules = slices.DeleteFunc(s.Rules, func(r session.Rule) bool { return r.ID == d.RuleID })
	case *session.Compaction:
		if d.CompactedCount <= 0 || d.CompactedCount > len(s.Messages) {
			return fmt.Errorf("agent: compaction of %d messages of %d", d.CompactedCount, len(s.Messages))
		}
		msgs := make([]model.Message, 0, 1+len(s.Messages)-d.CompactedCount+runMessages)
		msgs = append(msgs, summaryMessage(d.Summary))
		s.Messages = append(msgs, s.Messages[d.CompactedCount:]...)
	case *session.PlanStepStarted:
		if d.Kind == "task" {
			// The think-act loop carries it out: the model is told.
			s.Messages = append(s.Messages, model.TextMessage(model.RoleUser,
				fmt.Sprintf("Step %d of the plan: %s\nDo it with your tools, then say what you found.", d.Index+1, d.Task)))
		}
	case *session.SubagentFinished:
		s.Usage.Add(d.Usage)
		s.RunUsage.Add(d.Usage)
	case *session.SubagentPaused:
		s.Usage.Add(d.Usage)
		s.RunUsage.Add(d.Usage)
	case *session.SubagentError:
		s.Usage.Add(d.Usage)
		s.RunUsage.Add(d.Usage)
	case *session.LoopWarning:
		s.LoopWarned = append(s.LoopWarned, d.Detector)
		s.Messages = append(s.Messages, model.TextMessage(model.RoleUser, d.Reminder))
	case *session.Final:
		s.Final = d.Text
	case *session.Error:
		s.LastError = d
	case *session.RunFinished:
		// InModel stays: a run that stopped during a model call retries it
		// as the next attempt of the same round.
		s.Status = d.Status
	}
	if s.policy != nil {
		if err := s.policy.Apply(e); err != nil {
			return fmt.Errorf("agentrt: policy state: event %d (%s): %w", e.Seq, e.Type, err)
		}
	}
	return nil
}

func (s *State) removeRequest(id string) {
	for i := range s.Requests {
		if s.Requests[i].ID == id {
			s.Requests = append(s.Requests[:i], s.Requests[i+1:]...)
			return
		}
	}
}

// flushCalls appends the batch's tool messages, in call order, once every
// call of the batch has a result.
func (s *State) flushCalls() {
	for i := range s.Calls {
		if !s.Calls[i].Done {
			return
		}
	}
	for _, c := range s.Calls {
		r := c.Result
		text := string(r.Result)
		if !r.OK {
			text = r.Error
		}
		s.Messages = append(s.Messages, model.Message{
			Role: model.RoleTool, ToolCallID: r.CallID, Name: r.Name, IsError: !r.OK,
			Parts: []model.Part{{Type: model.PartText, Text: text}},
		})
	}
	s.Calls = s.Calls[:0]
}

// MarshalSnapshot serialises s, its policy's state included, for
// session.Snapshot. (A snapshot is written once every Config.SnapshotEvery
// events, so encoding/json's cost is spread thin.)
func (s *State) MarshalSnapshot() ([]byte, error) {
	if s.policy != nil {
		b, err := json.Marshal(s.policy)
		if err != nil {
			return nil, fmt.Errorf("agentrt: policy state: %w", err)
		}
		s.PolicyJSON = b
	}
	return json.Marshal(s)
}

// UnmarshalState decodes a snapshot written by MarshalSnapshot. The
// policy's state stays in PolicyJSON until AttachPolicy decodes it.
func UnmarshalState(b []byte) (*State, error) {
	var s State
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("agentrt: bad state snapshot: %w", err)
	}
	if s.V > StateVersion {
		return nil, fmt.Errorf("agentrt: state snapshot v%d is newer than this build (v%d)", s.V, StateVersion)
	}
	return &s, nil
}

// AttachPolicy gives s the state of policy p, if p keeps one: a new one,
// filled from PolicyJSON when the snapshot s came from holds one. Events
// applied afterwards fold into it too.
func (s *State) AttachPolicy(p Policy) error {
	sp, ok := p.(StatefulPolicy)
	if !ok {
		return nil
	}
	ps := sp.NewPolicyState()
	if ps == nil {
		return nil
	}
	if len(s.PolicyJSON) > 0 {
		if err := json.Unmarshal(s.PolicyJSON, ps); err != nil {
			return fmt.Errorf("agentrt: policy state in snapshot: %w", err)
		}
	}
	s.policy = ps
	return nil
}

// readAgentRules reads the agent's standing decisions the first time they
// are needed; a failure reads as none.
func (s *State) readAgentRules() {
	if s.rulesFrom != nil {
		s.agentRules, _ = s.rulesFrom.agentRules(context.WithoutCancel(s.rulesCtx), s.Agent)
		s.rulesFrom, s.rulesCtx = nil, nil
	}
}

// RuleFor returns the standing decision that covers call, if any: the
// session's rules first, then the agent's.
func (s *State) RuleFor(call model.ToolCall) *session.Rule {
	s.readAgentRules()
	for _, rules := range [2][]session.Rule{s.Rules, s.agentRules} {
		for i := range rules {
			if ruleMatches(&rules[i], call) {
				return &rules[i]
			}
		}
	}
	return nil
}

// AgentRules returns the agent's standing decisions as the runner found
// them when it took the session.
func (s *State) AgentRules() []session.Rule {
	s.readAgentRules()
	return s.agentRules
}

func ruleMatches(r *session.Rule, call model.ToolCall) bool {
	if r.Tool != call.Name {
		return false
	}
	if len(r.Arguments) == 0 {
		return true
	}
	return jsonEqual(r.Arguments, call.Arguments)
}

// jsonEqual reports whether a and b hold equal JSON values.
func jsonEqual(a, b json.RawMessage) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	xb, _ := json.Marshal(x)
	yb, _ := json.Marshal(y)
	return string(xb) == string(yb)
}

// LastAssistant returns the last assistant message, if any.
func (s *State) LastAssistant() (model.Message, bool) {
	for i := len(s.Messages) - 1; i >= 0; i-- {
		if s.Messages[i].Role == model.RoleAssistant {
			return s.Messages[i], true
		}
	}
	return model.Message{}, false
}
