package agui

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/server"
	"github.com/agentrt/agentrt/session"
)

// AG-UI event types this adapter sends.
const (
	RunStarted         = "RUN_STARTED"
	RunFinished        = "RUN_FINISHED"
	RunError           = "RUN_ERROR"
	StepStarted        = "STEP_STARTED"
	StepFinished       = "STEP_FINISHED"
	TextMessageStart   = "TEXT_MESSAGE_START"
	TextMessageContent = "TEXT_MESSAGE_CONTENT"
	TextMessageEnd     = "TEXT_MESSAGE_END"
	ToolCallStart      = "TOOL_CALL_START"
	ToolCallArgs       = "TOOL_CALL_ARGS"
	ToolCallEnd        = "TOOL_CALL_END"
	ToolCallResult     = "TOOL_CALL_RESULT"
	StateSnapshot      = "STATE_SNAPSHOT"
	StateDelta         = "STATE_DELTA"
	MessagesSnapshot   = "MESSAGES_SNAPSHOT"
)

// Event is one AG-UI event as it goes on the wire: the fields of every
// type this adapter sends, each set only by the types that carry it.
type Event struct {
	Type            string `json:"type"`
	ThreadID        string `json:"threadId,omitempty"`
	RunID           string `json:"runId,omitempty"`
	MessageID       string `json:"messageId,omitempty"`
	Role            string `json:"role,omitempty"`
	ToolCallID      string `json:"toolCallId,omitempty"`
	ToolCallName    string `json:"toolCallName,omitempty"`
	ParentMessageID string `json:"parentMessageId,omitempty"`
	StepName        string `json:"stepName,omitempty"`
	// Delta is a text or an arguments fragment (a string), or a state
	// delta (a JSON Patch).
	Delta    any     `json:"delta,omitempty"`
	Content  *string `json:"content,omitempty"`
	Snapshot any     `json:"snapshot,omitempty"`
	// Messages is MESSAGES_SNAPSHOT's, sent even when empty (the
	// client's schema requires the list): omitzero leaves out only a nil
	// one, which the other types have.
	Messages []Message       `json:"messages,omitzero"`
	Result   any             `json:"result,omitempty"`
	Outcome  *Outcome        `json:"outcome,omitempty"`
	Message  string          `json:"message,omitempty"`
	Code     string          `json:"code,omitempty"`
	Metadata map[string]any  `json:"metadata,omitempty"`
	Raw      json.RawMessage `json:"-"`
}

// Outcome is why a run that did not fail ended: success, interrupt (with
// what it waits for) or cancelled.
type Outcome struct {
	Type       string      `json:"type"`
	Interrupts []Interrupt `json:"interrupts,omitempty"`
	// PendingToolCallIDs are the frontend calls a successful run left
	// for the client to answer in its next input.
	PendingToolCallIDs []string `json:"pendingToolCallIds,omitempty"`
}

// Interrupt is a human request of agentrt as AG-UI shows it: its id is
// the request's id, reason its kind (approval, confirm, prompt, select).
type Interrupt struct {
	ID             string         `json:"id"`
	Reason         string         `json:"reason"`
	Message        string         `json:"message,omitempty"`
	ToolCallID     string         `json:"toolCallId,omitempty"`
	ResponseSchema map[string]any `json:"responseSchema,omitempty"`
	ExpiresAt      string         `json:"expiresAt,omitempty"`
	Metadata       map[string]any `json:"metadata,omitempty"`
}

// Message is a message of a thread, as MESSAGES_SNAPSHOT carries it.
type Message struct {
	ID         string     `json:"id"`
	Role       string     `json:"role"`
	Content    *string    `json:"content,omitempty"`
	ToolCalls  []ToolCall `json:"toolCalls,omitempty"`
	ToolCallID string     `json:"toolCallId,omitempty"`
}

// ToolCall is an assistant message's call.
type ToolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// Message ids are made from the log, so that the ids a stream gives and
// the ids a later MESSAGES_SNAPSHOT gives are the same: an assistant
// message is named by its model_started's seq, a user message by the
// event that holds it, a tool message by its call.
func assistantID(seq int64) string  { return "msg-" + strconv.FormatInt(seq, 10) }
func userID(seq int64) string       { return "user-" + strconv.FormatInt(seq, 10) }
func resultID(callID string) string { return "result-" + callID }
func finalID(seq int64) string      { return "final-" + strconv.FormatInt(seq, 10) }

func ptr(s string) *string { return &s }

// openCall is a tool call of the current model attempt, by its index.
type openCall struct {
	id, name string
	args     strings.Builder
	started  bool
	ended    bool
}

// translator turns a turn's session events into AG-UI events, keeping
// what is open (a text message, tool calls, steps) so that everything it
// opened is closed before the run's terminal event, and a terminal event
// is sent once.
//
// A translator is used by one goroutine.
type translator struct {
	threadID, runID string

	// The current model attempt: its message (open while text streams),
	// whether it is a quiet call (a plan, a summary) that shows nothing,
	// and its calls by index.
	msgID    string
	msgOpen  bool
	msgText  strings.Builder
	quiet    bool
	calls    map[int]*openCall
	callSeen map[string]bool // call ids started, over the run
	answered map[string]bool // frontend calls whose results the client sent

	round string         // the open round's step name
	plan  map[int]string // open plan steps' names, by index

	lastText string // the last conversation reply's text
	status   session.Status
	reason   string
	errMsg   string
	errCode  string
	finalRes string
	done     bool // a terminal event was sent
}

func newTranslator(threadID, runID string) *translator {
	return &translator{threadID: threadID, runID: runID, calls: map[int]*openCall{}, callSeen: map[string]bool{}, answered: map[string]bool{}, plan: map[int]string{}}
}

// started is the run's first event.
func (t *translator) started() Event {
	return Event{Type: RunStarted, ThreadID: t.threadID, RunID: t.runID}
}

// event translates one session event (committed, or live with seq 0).
func (t *translator) event(ev *session.Event) []Event {
	var out []Event
	switch d := ev.Data.(type) {
	case *session.RunStarted:
		// A turn that restarts after newer input interrupted it starts
		// over within the same AG-UI run.
		t.status, t.errMsg, t.errCode = "", "", ""
	case *session.RoundStarted:
		out = t.closeMessage(out)
		out = t.closeRound(out)
		t.round = fmt.Sprintf("round %d", d.Round)
		out = append(out, Event{Type: StepStarted, StepName: t.round})
	case *session.ModelStarted:
		// A retried attempt streams again: what the last one opened is
		// closed, and this one is a message of its own.
		out = t.closeMessage(out)
		t.msgID, t.quiet = assistantID(ev.Seq), d.Purpose != ""
		t.msgText.Reset()
		clear(t.calls)
	case *session.Token:
		if t.quiet || d.Pulse || d.Text == "" {
			break
		}
		out = t.text(out, d.Text)
	case *session.ToolCallDelta:
		if t.quiet {
			break
		}
		out = t.callDelta(out, d)
	case *session.ModelFinished:
		if d.Purpose != "" {
			break
		}
		out = t.finishReply(out, d)
	case *session.ToolResult:
		if t.answered[d.CallID] {
			break // the client's own tool message holds it
		}
		content := string(d.Result)
		if !d.OK {
			content = "error: " + d.Error
		}
		// Sent also for a call an earlier stream showed (an approved
		// call runs in the run that continues after the interrupt).
		out = t.closeMessage(out)
		out = append(out, Event{Type: ToolCallResult, MessageID: resultID(d.CallID), ToolCallID: d.CallID, Role: "tool", Content: ptr(content)})
	case *session.PlanStepStarted:
		name := fmt.Sprintf("plan step %d: %s", d.Index+1, d.Kind)
		if d.Tool != "" {
			name += " " + d.Tool
		}
		if old, ok := t.plan[d.Index]; ok {
			out = append(out, Event{Type: StepFinished, StepName: old})
		}
		t.plan[d.Index] = name
		out = append(out, Event{Type: StepStarted, StepName: name})
		out = append(out, Event{Type: StateDelta, Delta: []patch{{Op: "add", Path: "/plan_step", Value: d.Index}}})
	case *session.PlanStepFinished:
		if name, ok := t.plan[d.Index]; ok {
			delete(t.plan, d.Index)
			out = append(out, Event{Type: StepFinished, StepName: name})
		}
	case *session.PlanCreated:
		out = append(out, Event{Type: StateDelta, Delta: []patch{{Op: "add", Path: "/plan", Value: d.Plan}}})
	case *session.Final:
		t.finalRes = d.Text
		if d.Text != "" && d.Text != t.lastText {
			// An answer no model reply streamed (a plan's reply step).
			out = t.closeMessage(out)
			id := finalID(ev.Seq)
			out = append(out, Event{Type: TextMessageStart, MessageID: id, Role: "assistant"},
				Event{Type: TextMessageContent, MessageID: id, Delta: d.Text},
				Event{Type: TextMessageEnd, MessageID: id})
			t.lastText = d.Text
		}
	case *session.Error:
		if d.Model == "" && d.Attempt == 0 {
			t.errMsg, t.errCode = d.Message, d.Code
		}
	case *session.RunFinished:
		t.status, t.reason = d.Status, d.Reason
		out = append(out, Event{Type: StateDelta, Delta: []patch{{Op: "add", Path: "/status", Value: d.Status}}})
	}
	return out
}

// patch is one JSON Patch operation.
type patch struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value,omitempty"`
}

func (t *translator) text(out []Event, s string) []Event {
	if !t.msgOpen {
		if t.msgID == "" {
			t.msgID = "msg-" + t.runID
		}
		t.msgOpen = true
		out = append(out, Event{Type: TextMessageStart, MessageID: t.msgID, Role: "assistant"})
	}
	t.msgText.WriteString(s)
	return append(out, Event{Type: TextMessageContent, MessageID: t.msgID, Delta: s})
}

func (t *translator) callDelta(out []Event, d *session.ToolCallDelta) []Event {
	c := t.calls[d.Index]
	if c == nil {
		c = &openCall{}
		t.calls[d.Index] = c
	}
	if c.ended {
		return out
	}
	if d.CallID != "" && c.id == "" {
		c.id = d.CallID
	}
	if d.Name != "" && c.name == "" {
		c.name = d.Name
	}
	c.args.WriteString(d.Arguments)
	if !c.started {
		if c.id == "" || c.name == "" || t.callSeen[c.id] {
			return out // wait for the piece that names it
		}
		// A call's text ends where the call begins: a message's parts
		// arrive in order.
		out = t.endText(out)
		c.started = true
		t.callSeen[c.id] = true
		out = append(out, Event{Type: ToolCallStart, ToolCallID: c.id, ToolCallName: c.name, ParentMessageID: t.msgID})
		if s := c.args.String(); s != "" {
			out = append(out, Event{Type: ToolCallArgs, ToolCallID: c.id, Delta: s})
		}
		return out
	}
	if d.Arguments != "" {
		out = append(out, Event{Type: ToolCallArgs, ToolCallID: c.id, Delta: d.Arguments})
	}
	return out
}

// finishReply completes the attempt's message with its whole reply:
// text the stream missed (a watcher joins after the first tokens, an
// attempt that does not stream) and calls it did not show.
func (t *translator) finishReply(out []Event, d *session.ModelFinished) []Event {
	if rest, ok := strings.CutPrefix(d.Content, t.msgText.String()); ok && rest != "" {
		out = t.text(out, rest)
	}
	if d.Content != "" {
		t.lastText = d.Content
	}
	out = t.endText(out)
	for i, c := range d.ToolCalls {
		oc := t.calls[i]
		if oc != nil && oc.started && !oc.ended {
			oc.ended = true
			out = append(out, Event{Type: ToolCallEnd, ToolCallID: oc.id})
			continue
		}
		if t.callSeen[c.ID] {
			continue
		}
		t.callSeen[c.ID] = true
		out = append(out, Event{Type: ToolCallStart, ToolCallID: c.ID, ToolCallName: c.Name, ParentMessageID: t.msgID})
		if len(c.Arguments) > 0 {
			out = append(out, Event{Type: ToolCallArgs, ToolCallID: c.ID, Delta: string(c.Arguments)})
		}
		out = append(out, Event{Type: ToolCallEnd, ToolCallID: c.ID})
	}
	return t.closeCalls(out)
}

func (t *translator) endText(out []Event) []Event {
	if t.msgOpen {
		t.msgOpen = false
		out = append(out, Event{Type: TextMessageEnd, MessageID: t.msgID})
	}
	return out
}

func (t *translator) closeCalls(out []Event) []Event {
	for i := 0; len(t.calls) > 0; i++ {
		c, ok := t.calls[i]
		if !ok {
			continue
		}
		delete(t.calls, i)
		if c.started && !c.ended {
			out = append(out, Event{Type: ToolCallEnd, ToolCallID: c.id})
		}
	}
	return out
}

// closeMessage closes the attempt's text and calls.
func (t *translator) closeMessage(out []Event) []Event {
	return t.closeCalls(t.endText(out))
}

func (t *translator) closeRound(out []Event) []Event {
	if t.round != "" {
		out = append(out, Event{Type: StepFinished, StepName: t.round})
		t.round = ""
	}
	return out
}

// closeAll closes everything open, in the reverse of the order it
// opens: the message's parts, the round, the plan's steps.
func (t *translator) closeAll(out []Event) []Event {
	out = t.closeMessage(out)
	out = t.closeRound(out)
	for i := 0; len(t.plan) > 0; i++ {
		if name, ok := t.plan[i]; ok {
			delete(t.plan, i)
			out = append(out, Event{Type: StepFinished, StepName: name})
		}
	}
	return out
}

// finish closes what is open and ends the run by how the turn ended:
// done is success (the answer as the result), waiting an interrupt
// outcome with w's interrupts (a success naming w's calls as pending
// when it waits for the client's tools alone), canceled and interrupted a
// cancelled outcome,
// failed and paused RUN_ERROR with the code. err, when set, is a failure
// of the stream itself (the input refused, the follower behind), which
// ends the run as RUN_ERROR whatever the turn did. It returns nothing
// after the first terminal event.
func (t *translator) finish(err *failure, w waits) []Event {
	if t.done {
		return nil
	}
	t.done = true
	out := t.closeAll(nil)
	if err != nil {
		return append(out, Event{Type: RunError, Message: err.msg, Code: err.code})
	}
	switch t.status {
	case session.StatusDone:
		return append(out, Event{Type: RunFinished, ThreadID: t.threadID, RunID: t.runID, Result: t.finalRes, Outcome: &Outcome{Type: "success"}})
	case session.StatusWaiting:
		if len(w.interrupts) == 0 {
			// Waiting for the client's tools, which AG-UI calls a finished
			// run with calls left pending; or answered meanwhile, elsewhere,
			// and the run goes on without this stream: nothing is asked of
			// this client.
			return append(out, Event{Type: RunFinished, ThreadID: t.threadID, RunID: t.runID, Outcome: &Outcome{Type: "success", PendingToolCallIDs: w.calls}})
		}
		// A person's answer comes first; the client's calls stay pending
		// and a later input's run ends naming them.
		return append(out, Event{Type: RunFinished, ThreadID: t.threadID, RunID: t.runID, Outcome: &Outcome{Type: "interrupt", Interrupts: w.interrupts}})
	case session.StatusIdle:
		// A thread that has not run yet (a client joining it before its
		// first input): nothing failed, and nothing is asked.
		return append(out, Event{Type: RunFinished, ThreadID: t.threadID, RunID: t.runID, Outcome: &Outcome{Type: "success"}})
	case session.StatusCanceled, session.StatusInterrupted:
		return append(out, Event{Type: RunFinished, ThreadID: t.threadID, RunID: t.runID, Outcome: &Outcome{Type: "cancelled"}})
	case session.StatusPaused:
		return append(out, Event{Type: RunError, Code: t.reason,
			Message: "the run paused (" + t.reason + "); POST /v1/sessions/" + t.threadID + "/resume continues it"})
	case session.StatusFailed:
		msg, code := t.errMsg, t.errCode
		if msg == "" {
			msg = "the run failed"
		}
		if code == "" {
			code = t.reason
		}
		return append(out, Event{Type: RunError, Message: msg, Code: code})
	default:
		return append(out, Event{Type: RunError, Code: "stream_ended", Message: "the run's stream ended before the run did; reconnect to the thread to follow it"})
	}
}

// failure is an error that ends a stream, as RUN_ERROR shows it.
type failure struct{ code, msg string }

// failureOf is err as RUN_ERROR says it: its code and the sentence the
// HTTP API would answer (server.StatusOf), without what a store or a
// library said underneath.
func failureOf(err error) *failure {
	_, d := server.StatusOf(err)
	return &failure{code: d.Code, msg: d.Message}
}

// interrupt is a pending request as an AG-UI interrupt. Its metadata
// carries the request whole under "agentrt"; responseSchema says what a
// resume entry's payload holds for it.
func interrupt(q session.InputRequired) Interrupt {
	in := Interrupt{ID: q.RequestID, Reason: string(q.Kind), Message: q.Question}
	if len(q.Calls) == 1 {
		in.ToolCallID = q.Calls[0].ID
	}
	if q.Expires != nil {
		in.ExpiresAt = q.Expires.UTC().Format("2006-01-02T15:04:05Z07:00")
	}
	calls := make([]map[string]any, 0, len(q.Calls))
	for _, c := range q.Calls {
		calls = append(calls, map[string]any{"id": c.ID, "name": c.Name, "arguments": json.RawMessage(orNull(c.Arguments))})
	}
	meta := map[string]any{"kind": q.Kind, "calls": calls}
	if len(q.Options) > 0 {
		meta["options"], meta["multi"] = q.Options, q.Multi
	}
	if len(q.Metadata) > 0 {
		meta["metadata"] = q.Metadata
	}
	in.Metadata = map[string]any{"agentrt": meta}
	in.ResponseSchema = responseSchema(q)
	return in
}

func orNull(b json.RawMessage) json.RawMessage {
	if len(b) == 0 {
		return json.RawMessage("null")
	}
	return b
}

// responseSchema is the JSON Schema of a resume payload for q.
func responseSchema(q session.InputRequired) map[string]any {
	switch q.Kind {
	case session.RequestApproval:
		return map[string]any{"type": "object", "properties": map[string]any{
			"decision":  map[string]any{"enum": []string{"approve", "reject", "edit"}},
			"approved":  map[string]any{"type": "boolean"},
			"arguments": map[string]any{"type": "object"},
			"reason":    map[string]any{"type": "string"},
		}}
	case session.RequestConfirm:
		return map[string]any{"type": "object", "required": []string{"decision"}, "properties": map[string]any{
			"decision": map[string]any{"enum": []string{"done", "failed", "retry"}},
			"result":   map[string]any{},
			"reason":   map[string]any{"type": "string"},
		}}
	case session.RequestSelect:
		items := map[string]any{"enum": q.Options}
		return map[string]any{"type": "object", "required": []string{"selected"}, "properties": map[string]any{
			"selected": map[string]any{"type": "array", "items": items},
		}}
	default:
		return map[string]any{"type": "object", "required": []string{"text"}, "properties": map[string]any{
			"text": map[string]any{"type": "string"},
		}}
	}
}

// callArgs renders a call's arguments as the string AG-UI carries.
func callArgs(c model.ToolCall) string {
	if len(c.Arguments) == 0 {
		return "{}"
	}
	return string(c.Arguments)
}
