package a2a

import (
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"slices"
	"strconv"
	"strings"
	"time"

	spec "github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/session"
)

// translator turns the events of one turn of a session into the events of
// its A2A task:
//
//	run_started, run_resumed  → WORKING (once)
//	token                     → the answer artifact, appended (the tokens
//	                            of one batch as one chunk)
//	tool_call, tool_result    → WORKING with a data part naming the call
//	input_required            → collected; the run's run_finished (waiting)
//	                            → INPUT_REQUIRED with the questions
//	run_finished done         → the answer artifact replaced by the final
//	                            answer, then COMPLETED
//	run_finished paused       → INPUT_REQUIRED saying why, and that a
//	                            message on the task resumes the run
//	run_finished failed       → FAILED with the error's message
//	run_finished canceled     → CANCELED
//
// An interrupted run is not the end: the turn goes on in a new run.
//
// What it makes from stored events depends on those events only (ids and
// times come from the log), so that the task a live stream built and the
// task derived from the log later, in any process, are the same; only
// the streamed chunks (tokens are not stored) and the messages a client
// sent are not in the log.
type translator struct {
	info spec.TaskInfo
	// canceled reports a CancelTask of the task in progress in this
	// process (nil: none can be).
	canceled func(spec.TaskID) (<-chan struct{}, bool)
	// runID is the run followed; "" takes the first run_started (that
	// names input, when set).
	runID string
	// input is the id of the gateway input the turn answers.
	input string
	// quiet: the events are a stream of the handler's own, which may end
	// without a terminal state (follow).
	quiet bool
	// restart: the run followed was interrupted; the next run_started
	// is the turn's.
	restart bool
	// lastSeq is the seq of the last event of the turn translated.
	lastSeq  int64
	working  bool
	streamed bool // a chunk of the answer artifact went out
	final    string
	errMsg   string
	requests []*session.InputRequired
}

// answerID is the id of a task's answer artifact: one a task, streamed
// into and replaced by the final answer.
const answerID spec.ArtifactID = "answer"

// follow translates batches of events until the turn's end (or
// input-required), yielding the task's events. A stream error fails the
// task, but, when the events are the handler's own stream (quiet), for
// one that says only that this process stopped following the turn
// (leftOff): then the events end without a terminal state, and the client
// learns how the task goes on from GetTask or SubscribeToTask, on any
// replica. An execution of a2a-go's must end with a terminal or
// interrupting event (its consumer waits for one), so there such an
// error fails the task still: in this process's memory, and in the
// stream of the client, as the process goes away (shutdown) or the
// client fell behind.
func (t *translator) follow(batches iter.Seq2[[]*session.Event, error], yield func(spec.Event, error) bool) {
	var out []spec.Event
	for evs, err := range batches {
		if err != nil {
			if !t.quiet || !leftOff(err) {
				yield(failed(t.info, "following the session: "+publicText(err)), nil)
			}
			return
		}
		var end bool
		out, end = t.batch(out[:0], evs)
		for _, o := range out {
			if !yield(o, nil) {
				return
			}
		}
		if end {
			return
		}
	}
}

// leftOff reports whether err ended a turn's stream for the stream's
// sake, not the turn's: the server is shutting down (the run goes on in
// another process), or the stream fell behind the log.
func leftOff(err error) bool {
	var e *agentrt.Error
	return errors.As(err, &e) && (e.Code == agentrt.CodeShuttingDown || e.Code == agentrt.CodeWatchBehind)
}

// batch appends to out the task's events for evs, in order, up to the
// turn's end or input-required (end true; the events after it are left).
// The tokens of evs that come one after another make one chunk.
func (t *translator) batch(out []spec.Event, evs []*session.Event) (_ []spec.Event, end bool) {
	var text strings.Builder
	flush := func() {
		if text.Len() > 0 {
			out = append(out, t.chunk(text.String()))
			text.Reset()
		}
	}
	for _, ev := range evs {
		if !t.mine(ev) {
			continue
		}
		if d, ok := ev.Data.(*session.Token); ok {
			if !d.Pulse {
				text.WriteString(d.Text)
			}
			continue
		}
		flush()
		var evOut []spec.Event
		evOut, end = t.translate(ev)
		out = append(out, evOut...)
		if end {
			return out, true
		}
	}
	flush()
	return out, false
}

// single is a sequence of events as batches of one.
func single(events iter.Seq2[*session.Event, error]) iter.Seq2[[]*session.Event, error] {
	return func(yield func([]*session.Event, error) bool) {
		var one [1]*session.Event
		for ev, err := range events {
			one[0] = ev
			if err != nil {
				yield(nil, err)
				return
			}
			if !yield(one[:], nil) {
				return
			}
		}
	}
}

// mine reports whether ev is of the followed turn: the run followed, or
// the run that restarts it after an interruption.
func (t *translator) mine(ev *session.Event) bool {
	if ev.Type == session.TypeRunStarted && ev.RunID != t.runID && (t.runID == "" && t.answers(ev) || t.restart) {
		t.runID, t.restart = ev.RunID, false
	} else if t.runID == "" || ev.RunID != t.runID {
		return false
	}
	if ev.Seq != 0 {
		t.lastSeq = ev.Seq
	}
	return true
}

// answers reports whether run_started ev answers the turn's input.
func (t *translator) answers(ev *session.Event) bool {
	if t.input == "" {
		return true
	}
	rs, ok := ev.Data.(*session.RunStarted)
	return ok && slices.Contains(rs.Inputs, t.input)
}

// chunk is the next piece of the streamed answer: the first of a
// translator replaces what the artifact held (the text before a wait),
// the others append.
func (t *translator) chunk(text string) spec.Event {
	a := spec.NewArtifactUpdateEvent(t.info, answerID, spec.NewTextPart(text))
	a.Artifact.Name = "answer"
	a.Append = t.streamed
	t.streamed = true
	return a
}

func (t *translator) translate(ev *session.Event) (out []spec.Event, end bool) {
	switch d := ev.Data.(type) {
	case *session.RunStarted, *session.RunResumed:
		if !t.working {
			t.working = true
			out = append(out, t.status(ev, spec.TaskStateWorking, nil))
		}
	case *session.ToolCall:
		call := map[string]any{"type": "tool_call", "call_id": d.CallID, "name": d.Name, "arguments": plain(d.Arguments)}
		if d.Blocked != "" {
			call["blocked"] = d.Blocked
		}
		out = append(out, t.working2(ev, call))
	case *session.ToolResult:
		res := map[string]any{"type": "tool_result", "call_id": d.CallID, "name": d.Name, "ok": d.OK}
		if d.Error != "" {
			res["error"] = d.Error
		}
		out = append(out, t.working2(ev, res))
	case *session.InputRequired:
		t.requests = append(t.requests, d)
	case *session.Final:
		t.final = d.Text
	case *session.Error:
		t.errMsg = d.Message
	case *session.RunFinished:
		return t.finished(ev, d)
	}
	return out, false
}

// status is a status update made from event ev: its time is the event's.
func (t *translator) status(ev *session.Event, state spec.TaskState, msg *spec.Message) *spec.TaskStatusUpdateEvent {
	s := spec.NewStatusUpdateEvent(t.info, state, msg)
	if !ev.Time.IsZero() {
		at := ev.Time.UTC()
		s.Status.Timestamp = &at
	}
	return s
}

// message is an agent message made from event ev, its id named after the
// event's seq.
func (t *translator) message(ev *session.Event, kind string, parts ...*spec.Part) *spec.Message {
	msg := spec.NewMessageForTask(spec.MessageRoleAgent, t.info, parts...)
	msg.ID = kind + "-" + strconv.FormatInt(ev.Seq, 10)
	return msg
}

// working2 is a WORKING update carrying a data part (a tool call or
// result), so that a streaming client sees what the agent does.
func (t *translator) working2(ev *session.Event, data map[string]any) spec.Event {
	return t.status(ev, spec.TaskStateWorking, t.message(ev, "status", spec.NewDataPart(data)))
}

func (t *translator) finished(ev *session.Event, d *session.RunFinished) ([]spec.Event, bool) {
	switch d.Status {
	case session.StatusInterrupted:
		// The turn goes on in a new run.
		t.working, t.restart = false, true
		t.requests = nil
		return nil, false
	case session.StatusDone:
		var out []spec.Event
		if t.final != "" || !t.streamed {
			// Tokens are best effort, and text before a tool call is not
			// the answer: the final answer replaces what was streamed.
			a := spec.NewArtifactUpdateEvent(t.info, answerID, spec.NewTextPart(t.final))
			a.Append, a.LastChunk = false, true
			a.Artifact.Name = "answer"
			out = append(out, a)
		}
		return append(out, t.status(ev, spec.TaskStateCompleted, nil)), true
	case session.StatusWaiting:
		return []spec.Event{t.status(ev, spec.TaskStateInputRequired, t.question(ev))}, true
	case session.StatusPaused:
		// Not the task's end: the run goes on when resumed (a message on
		// the task, POST /v1/sessions/{id}/resume, agentrt resume).
		return []spec.Event{t.status(ev, spec.TaskStateInputRequired, t.pause(ev, d))}, true
	case session.StatusCanceled:
		if t.canceled != nil {
			if done, ok := t.canceled(t.info.TaskID); ok {
				// CancelTask's own event ends the task (see executor.canceling).
				<-done
				return nil, true
			}
		}
		return []spec.Event{t.status(ev, spec.TaskStateCanceled, nil)}, true
	default:
		msg := t.errMsg
		if msg == "" {
			msg = fmt.Sprintf("the run ended %s", d.Status)
			if d.Reason != "" {
				msg += " (" + d.Reason + ")"
			}
		}
		return []spec.Event{t.status(ev, spec.TaskStateFailed, t.message(ev, "error", spec.NewTextPart(msg)))}, true
	}
}

// resumed readies the translator for the rest of a turn that waited for
// a person (INPUT_REQUIRED): what the run does once answered, as a new
// follower of the task would see it.
func (t *translator) resumed() {
	t.working, t.streamed = false, false
	t.final, t.errMsg, t.requests = "", "", nil
}

// question is the INPUT_REQUIRED message: what the run asks, in words
// (an approval names the call and its arguments) and as data (the
// requests, as the REST API lists them), with where the task stands in
// the log for the answer that resumes it.
func (t *translator) question(ev *session.Event) *spec.Message {
	var lines []string
	for _, r := range t.requests {
		lines = append(lines, describe(r))
	}
	if len(lines) == 0 {
		lines = append(lines, "The agent waits for an answer.")
	}
	msg := t.message(ev, "question", spec.NewTextPart(strings.Join(lines, "\n")),
		spec.NewDataPart(map[string]any{"requests": plain(t.requests)}))
	// Task metadata holds JSON's own types only (a2a-go's store checks).
	ids := make([]any, 0, len(t.requests))
	for _, r := range t.requests {
		ids = append(ids, r.RequestID)
	}
	msg.Metadata = map[string]any{MetaSession: t.info.ContextID, MetaRun: t.runID, MetaSeq: float64(t.lastSeq), MetaRequests: ids}
	return msg
}

// pause is the INPUT_REQUIRED message of a run that paused (run_finished
// ev, d): why (a limit, in the words of its error event when it had
// one) and how the task goes on, with where it stands in the log, as a
// question's message has, and the pause's reason (MetaPaused).
func (t *translator) pause(ev *session.Event, d *session.RunFinished) *spec.Message {
	why := t.errMsg
	if why == "" {
		switch d.Reason {
		case "max_rounds":
			why = "The run stopped at its round limit (limits.max_rounds) before it had an answer."
		case "":
			why = "The run paused."
		default:
			why = fmt.Sprintf("The run paused (%s).", d.Reason)
		}
	} else if !strings.HasSuffix(why, ".") {
		why += "."
	}
	text := why + " Reply continue on this task to let it go on (the session's resume: POST /v1/sessions/" + t.info.ContextID +
		"/resume), or send a message without a task id for a new turn."
	msg := t.message(ev, "paused", spec.NewTextPart(text))
	msg.Metadata = map[string]any{MetaSession: t.info.ContextID, MetaRun: t.runID, MetaSeq: float64(t.lastSeq),
		MetaRequests: []any{}, MetaPaused: d.Reason}
	return msg
}

// describe says in words what a request asks and how to answer it.
func describe(r *session.InputRequired) string {
	switch r.Kind {
	case session.RequestApproval:
		var calls []string
		for _, c := range r.Calls {
			calls = append(calls, fmt.Sprintf("%s %s", c.Name, c.Arguments))
		}
		q := r.Question
		if q == "" {
			q = "Approve the call?"
		}
		return fmt.Sprintf("%s [%s] Reply approve or reject (request %s).", q, strings.Join(calls, "; "), r.RequestID)
	case session.RequestSelect:
		return fmt.Sprintf("%s Options: %s (request %s).", r.Question, strings.Join(r.Options, ", "), r.RequestID)
	case session.RequestConfirm:
		return fmt.Sprintf("%s Reply done, failed or retry (request %s).", r.Question, r.RequestID)
	default:
		return fmt.Sprintf("%s (request %s)", r.Question, r.RequestID)
	}
}

// plain is v as JSON's own types (maps, slices, strings, float64s), as
// the task store keeps data parts.
func plain(v any) any {
	b, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	var out any
	_ = json.Unmarshal(b, &out)
	return out
}

// failed is a FAILED update saying msg (a failure of the adapter's own,
// not of the run).
func failed(info spec.TaskInfoProvider, msg string) *spec.TaskStatusUpdateEvent {
	return spec.NewStatusUpdateEvent(info, spec.TaskStateFailed,
		spec.NewMessageForTask(spec.MessageRoleAgent, info, spec.NewTextPart(msg)))
}

// at is t as a status timestamp.
func at(t time.Time) *time.Time {
	u := t.UTC()
	return &u
}
