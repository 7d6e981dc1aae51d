package a2a

import (
	"encoding/json"
	"fmt"
	"iter"
	"strings"

	spec "github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"

	"github.com/agentrt/agentrt/session"
)

// translator turns the events of one turn of a session into the events of
// its A2A task:
//
//	run_started, run_resumed  → WORKING (once)
//	token                     → the answer artifact, appended
//	tool_call, tool_result    → WORKING with a data part naming the call
//	input_required            → collected; the run's run_finished (waiting)
//	                            → INPUT_REQUIRED with the questions
//	run_finished done         → the answer artifact replaced by the final
//	                            answer, then COMPLETED
//	run_finished failed       → FAILED with the error's message
//	run_finished canceled     → CANCELED
//
// An interrupted run is not the end: the turn goes on in a new run.
type translator struct {
	ec *a2asrv.ExecutorContext
	// canceled reports a CancelTask of the task in progress.
	canceled func(spec.TaskID) (<-chan struct{}, bool)
	// runID is the run followed; "" takes the first run_started.
	runID string
	// restart: the run followed was interrupted; the next run_started
	// is the turn's.
	restart  bool
	working  bool
	artifact spec.ArtifactID
	final    string
	errMsg   string
	lastSeq  int64
	requests []*session.InputRequired
}

func (x *executor) newTranslator(ec *a2asrv.ExecutorContext) *translator {
	return &translator{ec: ec, canceled: x.canceled}
}

// follow translates events until the turn's end (or input-required),
// yielding the task's events. A stream error fails the task.
func (t *translator) follow(events iter.Seq2[*session.Event, error], yield func(spec.Event, error) bool) {
	for ev, err := range events {
		if err != nil {
			yield(failed(t.ec, "following the session: "+err.Error()), nil)
			return
		}
		if !t.mine(ev) {
			continue
		}
		if ev.Seq != 0 {
			t.lastSeq = ev.Seq
		}
		out, end := t.translate(ev)
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

// mine reports whether ev is of the followed turn: the run followed, or
// the run that restarts it after an interruption.
func (t *translator) mine(ev *session.Event) bool {
	if ev.Type == session.TypeRunStarted && ev.RunID != t.runID && (t.runID == "" || t.restart) {
		t.runID, t.restart = ev.RunID, false
		return true
	}
	return t.runID != "" && ev.RunID == t.runID
}

func (t *translator) translate(ev *session.Event) (out []spec.Event, end bool) {
	switch d := ev.Data.(type) {
	case *session.RunStarted, *session.RunResumed:
		if !t.working {
			t.working = true
			out = append(out, spec.NewStatusUpdateEvent(t.ec, spec.TaskStateWorking, nil))
		}
	case *session.Token:
		if d.Pulse || d.Text == "" {
			return nil, false
		}
		if t.artifact == "" {
			a := spec.NewArtifactEvent(t.ec, spec.NewTextPart(d.Text))
			a.Artifact.Name = "answer"
			t.artifact = a.Artifact.ID
			return []spec.Event{a}, false
		}
		return []spec.Event{spec.NewArtifactUpdateEvent(t.ec, t.artifact, spec.NewTextPart(d.Text))}, false
	case *session.ToolCall:
		call := map[string]any{"type": "tool_call", "call_id": d.CallID, "name": d.Name, "arguments": plain(d.Arguments)}
		if d.Blocked != "" {
			call["blocked"] = d.Blocked
		}
		out = append(out, t.working2(call))
	case *session.ToolResult:
		res := map[string]any{"type": "tool_result", "call_id": d.CallID, "name": d.Name, "ok": d.OK}
		if d.Error != "" {
			res["error"] = d.Error
		}
		out = append(out, t.working2(res))
	case *session.InputRequired:
		t.requests = append(t.requests, d)
	case *session.Final:
		t.final = d.Text
	case *session.Error:
		t.errMsg = d.Message
	case *session.RunFinished:
		return t.finished(d)
	}
	return out, false
}

// working2 is a WORKING update carrying a data part (a tool call or
// result), so that a streaming client sees what the agent does.
func (t *translator) working2(data map[string]any) spec.Event {
	msg := spec.NewMessageForTask(spec.MessageRoleAgent, t.ec, spec.NewDataPart(data))
	return spec.NewStatusUpdateEvent(t.ec, spec.TaskStateWorking, msg)
}

func (t *translator) finished(d *session.RunFinished) ([]spec.Event, bool) {
	switch d.Status {
	case session.StatusInterrupted:
		// The turn goes on in a new run.
		t.working, t.restart = false, true
		t.requests = nil
		return nil, false
	case session.StatusDone:
		var out []spec.Event
		if t.final != "" || t.artifact == "" {
			id := t.artifact
			if id == "" {
				id = spec.NewArtifactID()
			}
			// Tokens are best effort, and text before a tool call is not
			// the answer: the final answer replaces what was streamed.
			a := spec.NewArtifactUpdateEvent(t.ec, id, spec.NewTextPart(t.final))
			a.Append, a.LastChunk = false, true
			a.Artifact.Name = "answer"
			out = append(out, a)
		}
		return append(out, spec.NewStatusUpdateEvent(t.ec, spec.TaskStateCompleted, nil)), true
	case session.StatusWaiting:
		return []spec.Event{spec.NewStatusUpdateEvent(t.ec, spec.TaskStateInputRequired, t.question())}, true
	case session.StatusCanceled:
		if done, ok := t.canceled(t.ec.TaskID); ok {
			// CancelTask's own event ends the task (see executor.canceling).
			<-done
			return nil, true
		}
		return []spec.Event{spec.NewStatusUpdateEvent(t.ec, spec.TaskStateCanceled, nil)}, true
	default:
		msg := t.errMsg
		if msg == "" {
			msg = fmt.Sprintf("the run ended %s", d.Status)
			if d.Reason != "" {
				msg += " (" + d.Reason + ")"
			}
		}
		return []spec.Event{failed(t.ec, msg)}, true
	}
}

// question is the INPUT_REQUIRED message: what the run asks, in words
// (an approval names the call and its arguments) and as data (the
// requests, as the REST API lists them), with where the task stands in
// the log for the answer that resumes it.
func (t *translator) question() *spec.Message {
	var lines []string
	for _, r := range t.requests {
		lines = append(lines, describe(r))
	}
	if len(lines) == 0 {
		lines = append(lines, "The agent waits for an answer.")
	}
	msg := spec.NewMessageForTask(spec.MessageRoleAgent, t.ec,
		spec.NewTextPart(strings.Join(lines, "\n")),
		spec.NewDataPart(map[string]any{"requests": plain(t.requests)}))
	// Task metadata holds JSON's own types only (a2a-go's store checks).
	ids := make([]any, 0, len(t.requests))
	for _, r := range t.requests {
		ids = append(ids, r.RequestID)
	}
	msg.Metadata = map[string]any{MetaSession: t.ec.ContextID, MetaRun: t.runID, MetaSeq: float64(t.lastSeq), MetaRequests: ids}
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
