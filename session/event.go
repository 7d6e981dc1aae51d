package session

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/agentrt/agentrt/model"
)

// SchemaVersion is the version of the event wire schema ("v").
const SchemaVersion = 1

// Type names an event. The names are the wire contract of docs/events.md.
type Type string

// Event types.
const (
	TypeRunStarted    Type = "run_started"
	TypeRunFinished   Type = "run_finished"
	TypeRunResumed    Type = "run_resumed"
	TypeRoundStarted  Type = "round_started"
	TypeModelStarted  Type = "model_started"
	TypeToken         Type = "token"
	TypeToolCallDelta Type = "tool_call_delta"
	TypeModelFinished Type = "model_finished"
	TypeToolCall      Type = "tool_call"
	TypeToolResult    Type = "tool_result"
	TypeInputRequired Type = "input_required"
	TypeInputResolved Type = "input_resolved"
	TypeInterrupted   Type = "interrupted"
	TypeRuleAdded     Type = "rule_added"
	TypeRuleRevoked   Type = "rule_revoked"
	TypeLoopWarning   Type = "loop_warning"
	TypeCompaction    Type = "compaction"
	TypeControl       Type = "control"
	// TypeMessagesImported: a conversation the session starts from.
	TypeMessagesImported Type = "messages_imported"
	// TypeInputSteered: input given to the model at its next call, in a
	// turn that goes on (the gateway's steer policy).
	TypeInputSteered Type = "input_steered"
	// TypeModelChanged: the session's model calls use another model from
	// here on (a fork made to compare models).
	TypeModelChanged Type = "model_changed"

	TypeSubagentStarted    Type = "subagent_started"
	TypeSubagentProgress   Type = "subagent_progress"
	TypeSubagentCheckpoint Type = "subagent_checkpoint"
	TypeSubagentPaused     Type = "subagent_paused"
	TypeSubagentFinished   Type = "subagent_finished"
	TypeSubagentError      Type = "subagent_error"
	// TypeSubagentEvent is live only (Seq 0, never stored): an event of a
	// sub-agent's run, as it happens, shown to the parent's watchers.
	TypeSubagentEvent Type = "subagent_event"

	TypePlanCreated      Type = "plan_created"
	TypePlanStepStarted  Type = "plan_step_started"
	TypePlanStepFinished Type = "plan_step_finished"
	// TypeApprovalRequired and TypeApprovalResolved are the names logs
	// written before the one human-request model used for approvals. They
	// are read as input_required and input_resolved of kind approval.
	TypeApprovalRequired Type = "approval_required"
	TypeApprovalResolved Type = "approval_resolved"
	TypeFinal            Type = "final"
	TypeError            Type = "error"
)

// Event is one entry of a session's log: the same object on every surface
// (CLI --json, SSE, WebSocket, store).
//
// Seq is assigned when the event is committed: it starts at 1 and grows by
// one per session with no gaps. Live-only events (token, tool_call_delta)
// have Seq 0 and are never stored.
type Event struct {
	V         int       `json:"v"`
	Seq       int64     `json:"seq,omitempty"`
	SessionID string    `json:"session_id"`
	RunID     string    `json:"run_id,omitempty"`
	Turn      int       `json:"turn"`
	Type      Type      `json:"type"`
	Time      time.Time `json:"time"`
	Agent     string    `json:"agent,omitempty"`
	// Data is one of the typed payloads of this package (RunStarted,
	// ToolResult, ...), or Raw for a type this version does not know.
	Data Data `json:"data,omitempty"`
}

// Data is an event's typed payload.
type Data interface {
	EventType() Type
}

// Raw is the payload of an event type this package does not know, kept
// as it was so that nothing is lost.
type Raw struct {
	T    Type            `json:"-"`
	JSON json.RawMessage `json:"-"`
}

// EventType implements Data.
func (r *Raw) EventType() Type { return r.T }

// MarshalJSON implements json.Marshaler.
func (r *Raw) MarshalJSON() ([]byte, error) {
	if len(r.JSON) == 0 {
		return []byte("null"), nil
	}
	return r.JSON, nil
}

// RunStarted begins a turn.
type RunStarted struct {
	Input string `json:"input"`
	// Media are the images and files the input came with: blobs of the
	// store (session.Blobs), referenced, never held; the user message
	// has them after Input's text.
	Media  []model.Media `json:"media,omitempty"`
	Source string        `json:"source,omitempty"`
	// Parent points at the tool call that started this run, when the
	// session is a sub-agent's child session.
	Parent *ParentRef `json:"parent,omitempty"`
	// Overrides change the agent for this run only; the next run has the
	// agent as configured.
	Overrides *Overrides `json:"overrides,omitempty"`
	// Inputs are the ids of the inbox inputs this turn answers (the
	// gateway's, merged into Input), answered in this event's commit.
	Inputs []string `json:"inputs,omitempty"`
	// ClientTools are tools the client declared for this run: offered to
	// the model beside the agent's, a call of one is not run but handed
	// to the client as a client_tool request.
	ClientTools []model.ToolSpec `json:"client_tools,omitempty"`
	// TurnID names the turn the run belongs to. The gateway owns turns:
	// it gives each turn it starts an id, and a run that restarts a turn
	// interrupted by newer input (Interrupted.Inputs) keeps it. A run not
	// started by the gateway is a turn of its own: its TurnID is its run
	// id. Empty in logs written before turns had ids.
	//
	// Unlike the envelope's Turn, which counts the session's runs, a turn
	// restarted twice is three runs and one TurnID.
	TurnID string `json:"turn_id,omitempty"`
	// Engine names the engine that runs the run ("temporal"), when it
	// does not run in the process that started it (agentrt.Engine).
	Engine string `json:"engine,omitempty"`
}

// Overrides change an agent for one run: its plan's step cap, and fields
// of its profile (a JSON object of agentrt.Profile's fields).
type Overrides struct {
	MaxSteps int             `json:"max_steps,omitempty"`
	Profile  json.RawMessage `json:"profile,omitempty"`
}

// ModelChanged: the session's conversation calls (a turn's rounds, a
// plan's) use Model from here on instead of the agent's model and its
// fallbacks; Was is the model they used before. An empty Model goes back
// to the agent's.
type ModelChanged struct {
	Model string `json:"model"`
	Was   string `json:"was,omitempty"`
}

// ParentRef names the session and the tool call a child run works for.
type ParentRef struct {
	SessionID string `json:"session_id"`
	CallID    string `json:"call_id,omitempty"`
}

// LoopWarning says a loop detector found the run repeating itself:
// Detector ("repeat", "ping_pong" or "no_progress") counted Count (the
// warning threshold is Threshold). Reminder is the message the model sees
// next, as a user message.
type LoopWarning struct {
	Detector  string `json:"detector"`
	Detail    string `json:"detail"`
	Count     int    `json:"count"`
	Threshold int    `json:"threshold"`
	Reminder  string `json:"reminder"`
}

// Compaction replaces the first CompactedCount messages of the history the
// model sees with one system message holding Summary: written by a model
// call (its model_started and model_finished, purpose "compaction", come
// before), or, when that failed, cut from the messages themselves
// (Truncated). The messages stay in the log; only the State's view of
// the conversation changes. Reason is what set it off: "max_messages",
// "max_chars", "max_tokens" or "context_length".
type Compaction struct {
	CompactedCount int    `json:"compacted_count"`
	Summary        string `json:"summary"`
	Truncated      bool   `json:"truncated,omitempty"`
	Reason         string `json:"reason"`
	// Error says why the summariser's summary could not be used.
	Error string `json:"error,omitempty"`
}

// SubagentStarted: the tool call CallID delegates Task to Agent, which
// works in its own session ChildSession (a resumed delegation starts
// again with Resumed set).
type SubagentStarted struct {
	CallID       string `json:"call_id"`
	Agent        string `json:"agent"`
	ChildSession string `json:"child_session"`
	Task         string `json:"task,omitempty"`
	Resumed      bool   `json:"resumed,omitempty"`
}

// SubagentEvent carries, live, an event of a sub-agent's run (committed
// in the child's session, or live there: a token) to the watchers of the
// parent's run, marked with the call and the child's session. It is never
// stored: the child's log has the event.
type SubagentEvent struct {
	CallID       string `json:"call_id"`
	ChildSession string `json:"child_session"`
	Event        *Event `json:"event"`
}

// SubagentProgress: the child began round Round (throttled); a remote
// child (a tool's delegation) reports its State instead, with what it
// said (Message).
type SubagentProgress struct {
	CallID       string `json:"call_id"`
	ChildSession string `json:"child_session"`
	Round        int    `json:"round,omitempty"`
	State        string `json:"state,omitempty"`
	Message      string `json:"message,omitempty"`
}

// SubagentCheckpoint: the child has run Round rounds (every few), with
// Usage so far.
type SubagentCheckpoint struct {
	CallID       string      `json:"call_id"`
	ChildSession string      `json:"child_session"`
	Round        int         `json:"round"`
	Usage        model.Usage `json:"usage"`
}

// SubagentPaused: the child stopped at a limit (Reason); the call's result
// says so, and the parent can continue it.
type SubagentPaused struct {
	CallID       string      `json:"call_id"`
	ChildSession string      `json:"child_session"`
	Reason       string      `json:"reason"`
	Usage        model.Usage `json:"usage"`
}

// SubagentFinished: the child answered; its usage counts in the parent's.
type SubagentFinished struct {
	CallID       string      `json:"call_id"`
	ChildSession string      `json:"child_session"`
	Answer       string      `json:"answer"`
	Usage        model.Usage `json:"usage"`
}

// SubagentError: the child failed.
type SubagentError struct {
	CallID       string      `json:"call_id"`
	ChildSession string      `json:"child_session"`
	Code         string      `json:"code"`
	Message      string      `json:"message"`
	Usage        model.Usage `json:"usage"`
}

// PlanCreated records the plan a plan-and-execute run follows (the
// agentrt.Plan as JSON): written by the model (Source "model") or given
// by the caller ("caller").
type PlanCreated struct {
	Plan   json.RawMessage `json:"plan"`
	Source string          `json:"source"`
}

// PlanStepStarted: step Index (from 0) begins.
type PlanStepStarted struct {
	Index int    `json:"index"`
	Kind  string `json:"kind"`
	Tool  string `json:"tool,omitempty"`
	// Task, for a task step, is what the model is asked to do.
	Task string `json:"task,omitempty"`
}

// PlanStepFinished: step Index ended with Status (completed, failed,
// skipped) and what it observed: a result or an error, and how long it
// took.
type PlanStepFinished struct {
	Index       int         `json:"index"`
	Status      string      `json:"status"`
	Observation Observation `json:"observation"`
}

// Observation is what a plan step observed.
type Observation struct {
	OK        bool            `json:"ok"`
	Result    json.RawMessage `json:"result,omitempty"`
	Error     string          `json:"error,omitempty"`
	LatencyMS int64           `json:"latency_ms"`
}

// RunFinished ends a turn. Status is done, waiting, paused, failed,
// canceled or interrupted.
type RunFinished struct {
	Status Status      `json:"status"`
	Usage  model.Usage `json:"usage"`
	// Reason says why a run stopped early (e.g. "max_rounds").
	Reason string `json:"reason,omitempty"`
}

// RunResumed continues a run that stopped before it finished: after a
// crash (reason "recovered"), a human's decision ("approval") or a pause
// ("resume"). From is the status the run had.
type RunResumed struct {
	Reason string `json:"reason"`
	From   Status `json:"from"`
	// Engine names the engine that runs the run from here, as
	// RunStarted's does ("": the process that resumed it).
	Engine string `json:"engine,omitempty"`
}

// RoundStarted begins one think-act round.
type RoundStarted struct {
	Round     int `json:"round"`
	MaxRounds int `json:"max_rounds"`
}

// ModelStarted begins one model call attempt.
type ModelStarted struct {
	Model   string `json:"model"`
	Attempt int    `json:"attempt"`
	// Mode is "generate" for an attempt that does not stream (after a
	// stream broke, or for an agent that does not stream); empty for a
	// streamed one.
	Mode string `json:"mode,omitempty"`
	// Purpose is empty for a turn of the conversation, whose reply
	// becomes the assistant's message; otherwise it names what an
	// executor asked the model for ("plan", "summary", ...), and the reply
	// is the executor's to use.
	Purpose string `json:"purpose,omitempty"`
}

// Token is a streamed text delta, or a waiting pulse.
type Token struct {
	Text  string `json:"text"`
	Pulse bool   `json:"pulse,omitempty"`
}

// ToolCallDelta is a fragment of a tool call as the model streams it,
// live-only like Token: a consumer can show a call taking shape before
// model_finished holds it whole. Fragments with the same Index (from 0,
// in the order the reply's calls began) belong to one call, and their
// Arguments, concatenated, are the call's arguments as the model sent
// them (model_finished has them after the runtime's checks, which may
// repair or replace them). CallID and Name are set on the fragment they
// came with, usually the call's first.
type ToolCallDelta struct {
	Index     int    `json:"index"`
	CallID    string `json:"call_id,omitempty"`
	Name      string `json:"name,omitempty"`
	Arguments string `json:"arguments"`
}

// ModelFinished is a model's whole reply.
type ModelFinished struct {
	Model        string             `json:"model,omitempty"`
	Content      string             `json:"content"`
	ToolCalls    []model.ToolCall   `json:"tool_calls,omitempty"`
	Usage        model.Usage        `json:"usage"`
	FinishReason model.FinishReason `json:"finish_reason"`
	LatencyMS    int64              `json:"latency_ms"`
	// Purpose is the model_started's (see there).
	Purpose string `json:"purpose,omitempty"`
	// RenamedCallIDs are the ids the model gave calls of this reply that
	// an earlier call of the reply or of the session had, and which the
	// calls therefore do not keep: the session remembers them as ids the
	// model repeats, so that a call with one is renamed even once the
	// call that had it first is compacted out of the history.
	RenamedCallIDs []string `json:"renamed_call_ids,omitempty"`
	// Sent is the request (model.Request, JSON) as the agent's
	// before-model hooks left it, when they changed it: what the model was
	// sent cannot be derived from the log then. SentDigest, instead, is
	// its SHA-256 (hex) when it was larger than the runner records.
	// Neither: no hook changed the request the log derives.
	Sent       json.RawMessage `json:"sent,omitempty"`
	SentDigest string          `json:"sent_digest,omitempty"`
}

// ToolCall announces that a call is being processed: it runs next, or —
// when denied, rejected or blocked by a hook — gets a failed tool_result
// without running. Attempt is 2 or more when the call runs again because
// the process running it stopped before its result was stored.
type ToolCall struct {
	CallID    string          `json:"call_id"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
	Attempt   int             `json:"attempt,omitempty"`
	// Rule names the standing decision that approved (or rejected) the
	// call without asking.
	Rule string `json:"rule,omitempty"`
	// Blocked, when set, says why the call does not run (rejected, denied,
	// blocked by a hook or a rule); its failed tool_result follows.
	Blocked string `json:"blocked,omitempty"`
}

// ToolResult is a tool call's outcome; unknown tools and blocked calls get one too.
type ToolResult struct {
	CallID    string          `json:"call_id"`
	Name      string          `json:"name"`
	OK        bool            `json:"ok"`
	Result    json.RawMessage `json:"result,omitempty"`
	Error     string          `json:"error,omitempty"`
	LatencyMS int64           `json:"latency_ms"`
}

// RequestKind is the kind of a human request.
type RequestKind string

// Human request kinds.
const (
	// RequestApproval asks whether tool calls may run (approve, reject,
	// or edit their arguments).
	RequestApproval RequestKind = "approval"
	// RequestPrompt asks a free-text question.
	RequestPrompt RequestKind = "prompt"
	// RequestSelect asks for a choice among Options (several if Multi).
	RequestSelect RequestKind = "select"
	// RequestConfirm asks whether a call of a tool that must not be
	// repeated blindly completed before the process running it stopped:
	// mark it done (with its result), failed, or retry it.
	RequestConfirm RequestKind = "confirm"
	// RequestClientTool hands a call of a tool the client declared for
	// the run (RunStarted.ClientTools) to the client, which runs it and
	// answers with its result; the runtime never runs it.
	RequestClientTool RequestKind = "client_tool"
)

// InputRequired asks a human for a decision or an answer. The run waits
// until every pending request is resolved.
type InputRequired struct {
	RequestID string      `json:"request_id"`
	Kind      RequestKind `json:"kind"`
	Question  string      `json:"question"`
	// Options are the choices of a select request; Multi allows several.
	Options []string `json:"options,omitempty"`
	Multi   bool     `json:"multi,omitempty"`
	// Calls are the tool calls an approval or confirm request is about.
	Calls []model.ToolCall `json:"calls,omitempty"`
	// Expires, when set, is when the request gets its default decision
	// if nobody has answered (an approval is rejected, a confirmation
	// marked failed), by "system" with reason expired.
	Expires *time.Time `json:"expires,omitempty"`
	// Hook is true when a BeforeTool hook asked, about Calls: the answer
	// goes back to the hook when the call comes up again (HookInfo.Answer),
	// not to the model.
	Hook bool `json:"hook,omitempty"`
	// HookIndex is the asking hook's place among the agent's BeforeTool
	// hooks (in the order they run): its answer goes to that hook only.
	HookIndex int `json:"hook_index,omitempty"`
	// Child, when set, is the request of a sub-agent's session this one
	// stands for: answering it here answers it there.
	Child *ChildRequest `json:"child,omitempty"`
	// Metadata is what the asker attached for whoever answers: a user
	// interface's hints (a placeholder, a default, a field's kind), a
	// ticket number. The runtime keeps it and does not read it.
	Metadata map[string]any `json:"metadata,omitempty"`
}

// ChildRequest names a request of a sub-agent's session.
type ChildRequest struct {
	SessionID string `json:"session_id"`
	RequestID string `json:"request_id"`
}

// Decisions a human can give: approve, reject and edit answer an approval
// request; done, failed and retry a confirm request; answer a prompt or a
// select request.
const (
	DecisionApprove = "approve"
	DecisionReject  = "reject"
	DecisionEdit    = "edit"
	DecisionDone    = "done"
	DecisionFailed  = "failed"
	DecisionRetry   = "retry"
	DecisionAnswer  = "answer"
	// DecisionWithdrawn: nobody answered; the run the request belonged to
	// was interrupted or canceled (by "system", the reason says how). A
	// withdrawn request's calls are not run.
	DecisionWithdrawn = "withdrawn"
)

// InputResolved records a human's decision on a request. Arguments, when
// set, replace the call's arguments (decision edit); Text is a prompt's
// answer; Selected a select request's choices; Result the result a person
// gave a call they marked done.
type InputResolved struct {
	RequestID string          `json:"request_id"`
	Kind      RequestKind     `json:"kind,omitempty"`
	Decision  string          `json:"decision"`
	By        string          `json:"by,omitempty"`
	Reason    string          `json:"reason,omitempty"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
	Text      string          `json:"text,omitempty"`
	Selected  []string        `json:"selected,omitempty"`
	Result    json.RawMessage `json:"result,omitempty"`
	// Rule, when the person answered "always", is the standing decision
	// made with this one.
	Rule *Rule `json:"rule,omitempty"`
	// Inputs are the gateway inbox inputs the answer came as (a chat
	// message answering a prompt), marked answered in its commit.
	Inputs []string `json:"inputs,omitempty"`
}

// Rule is a standing decision about tool calls: later calls it matches
// are approved (or rejected) without asking. Scope "session" holds in
// its session; "agent" in every session of the agent (of the tenant),
// kept in the agent's rule log. A rule matches calls of Tool, and, when
// Arguments is set, only calls with those arguments (as JSON values).
type Rule struct {
	ID        string          `json:"id"`
	Scope     string          `json:"scope"`
	Agent     string          `json:"agent,omitempty"`
	Tool      string          `json:"tool"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
	Decision  string          `json:"decision"`
	By        string          `json:"by,omitempty"`
	Reason    string          `json:"reason,omitempty"`
	Time      time.Time       `json:"time"`
	// Session is the session whose request the rule was made on.
	Session string `json:"session,omitempty"`
}

// Rule scopes.
const (
	RuleSession = "session"
	RuleAgent   = "agent"
)

// RuleAdded records a standing decision in an agent's rule log.
type RuleAdded struct {
	Rule Rule `json:"rule"`
}

// RuleRevoked ends a standing decision, in its session's log or its
// agent's rule log.
type RuleRevoked struct {
	RuleID string `json:"rule_id"`
	By     string `json:"by,omitempty"`
	Reason string `json:"reason,omitempty"`
}

// Interrupted records that a run was stopped at a safe point because
// newer input arrived (or a caller asked); the run ends with status
// interrupted.
type Interrupted struct {
	Reason string `json:"reason"`
	// Inputs are the inbox inputs that interrupted the run (the gateway's
	// interrupt policy): the turn that restarts it answers them, merged;
	// MergedInputs is how many.
	Inputs       []string `json:"inputs,omitempty"`
	MergedInputs int      `json:"merged_inputs,omitempty"`
	// Source is the source of Inputs (the run's: the gateway restarts a
	// turn for newer input from the turn's own source), so that a reader
	// of the log can find them in the inbox.
	Source string `json:"source,omitempty"`
}

// Final is a turn's answer.
type Final struct {
	Text  string      `json:"text"`
	Usage model.Usage `json:"usage"`
}

// Error reports a failure that ends or interrupts a run.
type Error struct {
	Code        string `json:"code"`
	Message     string `json:"message"`
	Recoverable bool   `json:"recoverable"`
	// Model and Attempt name the failed model call, for an error the run
	// goes on after (a retry or a fallback follows); RetryInMS is the wait
	// before the next attempt.
	Model     string `json:"model,omitempty"`
	Attempt   int    `json:"attempt,omitempty"`
	RetryInMS int64  `json:"retry_in_ms,omitempty"`
	// Stack is the goroutine's stack, for a failure that was a panic.
	Stack string `json:"stack,omitempty"`
}

// MessagesImported is a conversation a session starts from (held
// elsewhere before: another system, an earlier export): its messages
// come first in the session's history, as if its turns had run here.
type MessagesImported struct {
	Messages []model.Message `json:"messages"`
	// Source says where they came from; optional.
	Source string `json:"source,omitempty"`
}

// InputSteered is input that came while the turn ran and is given to the
// model at its next call, as a user message, without stopping the turn.
type InputSteered struct {
	Text string `json:"text"`
	// Inputs are the inbox inputs it answers (see RunStarted.Inputs).
	Inputs []string `json:"inputs,omitempty"`
	// TurnID is the turn that answers them: the run's (RunStarted.TurnID).
	TurnID string `json:"turn_id,omitempty"`
	// Steer is the id of the steering it delivers, when it came from
	// another process (Control.Steer): that process watches for it.
	Steer string `json:"steer,omitempty"`
}

// ControlKind is what a control request asks of a run.
type ControlKind string

// Control kinds.
const (
	// ControlCancel stops the run: work in flight is canceled, results
	// in hand are stored, the run ends canceled (resumable).
	ControlCancel ControlKind = "cancel"
	// ControlInterrupt stops the run at its next safe point and ends the
	// turn interrupted, its history coherent for the next turn.
	ControlInterrupt ControlKind = "interrupt"
	// ControlSteer gives the run text for its next model call
	// (Control.Steer), without stopping it: the owner of a run another
	// process steers (a run handed to an engine) is asked so. It never
	// replaces a cancellation or an interruption kept for the owner.
	ControlSteer ControlKind = "steer"
)

// Steered is input steered into a run from another process: the model's
// next message, recorded as input_steered (with Steer set to ID) when the
// run makes its next model call.
type Steered struct {
	ID     string   `json:"id"`
	Text   string   `json:"text"`
	Inputs []string `json:"inputs,omitempty"`
}

// Control is a request to stop a session's run, made from any process:
// the payload of the control event with which the run that acts on it
// records who asked, why and when, before it stops.
type Control struct {
	ID     string      `json:"id"`
	Kind   ControlKind `json:"kind"`
	Reason string      `json:"reason,omitempty"`
	By     string      `json:"by,omitempty"`
	At     time.Time   `json:"at"`
	// RunID, when set, names the run the request is for: a run of
	// another id (the session's next) does not act on it.
	RunID string `json:"run_id,omitempty"`
	// Inputs, for an interruption by newer input, are those inputs (the
	// gateway's inbox inputs), which the run's interrupted event records.
	Inputs []string `json:"inputs,omitempty"`
	// Steer, for a steering, is the input not yet delivered, in order
	// (every request carries all of it: a request replaces the last).
	Steer []Steered `json:"steer,omitempty"`
}

func (*RunStarted) EventType() Type    { return TypeRunStarted }
func (*RunFinished) EventType() Type   { return TypeRunFinished }
func (*RunResumed) EventType() Type    { return TypeRunResumed }
func (*RoundStarted) EventType() Type  { return TypeRoundStarted }
func (*ModelStarted) EventType() Type  { return TypeModelStarted }
func (*Token) EventType() Type         { return TypeToken }
func (*ToolCallDelta) EventType() Type { return TypeToolCallDelta }
func (*ModelFinished) EventType() Type { return TypeModelFinished }
func (*ToolCall) EventType() Type      { return TypeToolCall }
func (*ToolResult) EventType() Type    { return TypeToolResult }
func (*InputRequired) EventType() Type { return TypeInputRequired }
func (*InputResolved) EventType() Type { return TypeInputResolved }
func (*Interrupted) EventType() Type   { return TypeInterrupted }
func (*RuleAdded) EventType() Type     { return TypeRuleAdded }
func (*RuleRevoked) EventType() Type   { return TypeRuleRevoked }
func (*Final) EventType() Type         { return TypeFinal }
func (*LoopWarning) EventType() Type   { return TypeLoopWarning }
func (*Compaction) EventType() Type    { return TypeCompaction }
func (*SubagentStarted) EventType() Type {
	return TypeSubagentStarted
}
func (*SubagentProgress) EventType() Type   { return TypeSubagentProgress }
func (*SubagentCheckpoint) EventType() Type { return TypeSubagentCheckpoint }
func (*SubagentPaused) EventType() Type     { return TypeSubagentPaused }
func (*SubagentFinished) EventType() Type   { return TypeSubagentFinished }
func (*SubagentError) EventType() Type      { return TypeSubagentError }
func (*SubagentEvent) EventType() Type      { return TypeSubagentEvent }
func (*PlanCreated) EventType() Type        { return TypePlanCreated }
func (*PlanStepStarted) EventType() Type    { return TypePlanStepStarted }
func (*PlanStepFinished) EventType() Type   { return TypePlanStepFinished }
func (*Error) EventType() Type              { return TypeError }
func (*Control) EventType() Type            { return TypeControl }
func (*MessagesImported) EventType() Type   { return TypeMessagesImported }
func (*InputSteered) EventType() Type       { return TypeInputSteered }
func (*ModelChanged) EventType() Type       { return TypeModelChanged }

// newData returns an empty payload for t, or nil for an unknown type.
func newData(t Type) Data {
	switch t {
	case TypeRunStarted:
		return new(RunStarted)
	case TypeRunFinished:
		return new(RunFinished)
	case TypeRunResumed:
		return new(RunResumed)
	case TypeRoundStarted:
		return new(RoundStarted)
	case TypeModelStarted:
		return new(ModelStarted)
	case TypeToken:
		return new(Token)
	case TypeToolCallDelta:
		return new(ToolCallDelta)
	case TypeModelFinished:
		return new(ModelFinished)
	case TypeToolCall:
		return new(ToolCall)
	case TypeToolResult:
		return new(ToolResult)
	case TypeInputRequired, TypeApprovalRequired:
		return new(InputRequired)
	case TypeInputResolved, TypeApprovalResolved:
		return new(InputResolved)
	case TypeInterrupted:
		return new(Interrupted)
	case TypeRuleAdded:
		return new(RuleAdded)
	case TypeRuleRevoked:
		return new(RuleRevoked)
	case TypeFinal:
		return new(Final)
	case TypeLoopWarning:
		return new(LoopWarning)
	case TypeCompaction:
		return new(Compaction)
	case TypeSubagentStarted:
		return new(SubagentStarted)
	case TypeSubagentProgress:
		return new(SubagentProgress)
	case TypeSubagentCheckpoint:
		return new(SubagentCheckpoint)
	case TypeSubagentPaused:
		return new(SubagentPaused)
	case TypeSubagentFinished:
		return new(SubagentFinished)
	case TypeSubagentError:
		return new(SubagentError)
	case TypeSubagentEvent:
		return new(SubagentEvent)
	case TypePlanCreated:
		return new(PlanCreated)
	case TypePlanStepStarted:
		return new(PlanStepStarted)
	case TypePlanStepFinished:
		return new(PlanStepFinished)
	case TypeError:
		return new(Error)
	case TypeControl:
		return new(Control)
	case TypeMessagesImported:
		return new(MessagesImported)
	case TypeInputSteered:
		return new(InputSteered)
	case TypeModelChanged:
		return new(ModelChanged)
	}
	return nil
}

// UnmarshalJSON decodes an event, giving Data the payload type that Type names.
func (e *Event) UnmarshalJSON(b []byte) error {
	type plain Event
	var w struct {
		plain
		Data json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*e = Event(w.plain)
	if w.V > SchemaVersion {
		return fmt.Errorf("session: event schema v%d is newer than this build (v%d)", w.V, SchemaVersion)
	}
	d, err := DecodeData(e.Type, w.Data)
	if err != nil {
		return fmt.Errorf("session: event %d (%s): %w", e.Seq, e.Type, err)
	}
	e.Data = d
	e.Type = d.EventType() // a legacy approval_* type reads as input_*
	return nil
}

// DecodeData decodes the payload of an event of type t.
func DecodeData(t Type, raw json.RawMessage) (Data, error) {
	d := newData(t)
	if d == nil {
		return &Raw{T: t, JSON: append(json.RawMessage(nil), raw...)}, nil
	}
	if len(raw) == 0 || string(raw) == "null" {
		return d, nil
	}
	if err := json.Unmarshal(raw, d); err != nil {
		return nil, err
	}
	switch t {
	case TypeApprovalRequired:
		d.(*InputRequired).Kind = RequestApproval
	case TypeApprovalResolved:
		d.(*InputResolved).Kind = RequestApproval
	}
	return d, nil
}

// As returns e's payload as a *T: the payload itself when it is one, or,
// for a type this package does not know (a custom executor's or policy's
// event, read back from a store as Raw), the payload decoded into a new T.
// It reports false when the payload is neither.
func As[T any](e *Event) (*T, bool, error) {
	if d, ok := any(e.Data).(*T); ok {
		return d, true, nil
	}
	if d, ok := e.Data.(*Raw); ok {
		var v T
		if dt, ok := any(&v).(Data); ok && dt.EventType() != d.T {
			return nil, false, nil
		}
		if err := json.Unmarshal(d.JSON, &v); err != nil {
			return nil, false, fmt.Errorf("session: event %d (%s): %w", e.Seq, d.T, err)
		}
		return &v, true, nil
	}
	return nil, false, nil
}
