package a2a

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	spec "github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv/taskstore"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/session"
)

// Metadata of the gateway input of an A2A task.
const (
	// metaAfter marks an input as an A2A task's, with the seq of the
	// session's log its turn comes after (the task id holds it too, so
	// that a listing rebuilds the id from the input alone).
	metaAfter = "a2a_after"
	// keyPrefix starts the input's idempotency key, the message's id after it.
	keyPrefix = "a2a:"
)

// taskAfter is the log position an A2A task's input names; ok is false
// for an input that is no A2A task's.
func taskAfter(in *session.InboxInput) (int64, bool) {
	v, ok := in.Metadata[metaAfter]
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(v, 10, 64)
	return n, err == nil && n >= 0
}

// taskInput is a task to derive: its id's parts and its input as stored.
type taskInput struct {
	ref taskRef
	in  *session.InboxInput
}

// derivedTask is a task as the store holds it, and where its derivation
// stopped, from which a follower of the task goes on.
type derivedTask struct {
	ref     taskRef
	task    *spec.Task
	version taskstore.TaskVersion
	// tr is the translator at the end of the log: its run and state.
	tr *translator
	// scanned is the seq of the last event of the session read.
	scanned int64
	// ended: the task ended (a terminal state); its derivation stopped at
	// its end.
	ended bool
}

// deriveTasks derives tasks of session sess from their inputs and the
// session's log, read once from the earliest position they name: each
// task starts submitted with its message; the run that answers its
// input, and those that restart it after an interruption, are translated
// into the task's updates as a live stream would have made them (tokens
// aside: the log keeps only the final answer), through waits for a
// person that were answered, to the turn's end or the log's. An input
// the gateway refused, with no run, fails its task.
func deriveTasks(ctx context.Context, st session.Store, sess *session.Session, tis []taskInput) ([]*derivedTask, error) {
	out := make([]*derivedTask, len(tis))
	from := int64(-1)
	for i, ti := range tis {
		info := spec.TaskInfo{TaskID: ti.ref.id(), ContextID: sess.ID}
		out[i] = &derivedTask{
			ref: ti.ref,
			task: &spec.Task{ID: info.TaskID, ContextID: sess.ID, Status: spec.TaskStatus{State: spec.TaskStateSubmitted},
				History: []*spec.Message{messageOf(ti.in, info)}},
			tr:      &translator{info: info, input: ti.in.ID},
			scanned: ti.ref.after,
		}
		if from < 0 || ti.ref.after < from {
			from = ti.ref.after
		}
	}
	open := len(out)
	var one [1]*session.Event
	var evs []spec.Event
	for ev, err := range st.Events(ctx, sess.ID, from) {
		if err != nil {
			return nil, &agentrt.Error{Kind: agentrt.FailStore, Msg: "the store could not be read (session " + sess.ID + ")", Err: err}
		}
		one[0] = ev
		for _, d := range out {
			if d.ended || ev.Seq <= d.ref.after {
				continue
			}
			d.scanned = ev.Seq
			var end bool
			evs, end = d.tr.batch(evs[:0], one[:])
			for _, e := range evs {
				apply(d.task, e)
			}
			if end {
				if d.task.Status.State.Terminal() {
					d.ended = true
					open--
				} else {
					d.tr.resumed() // it waits: its run may go on
				}
			}
		}
		if open == 0 {
			break
		}
	}
	for i, d := range out {
		base := max(d.ref.after, d.tr.lastSeq) + 1
		d.version = taskstore.TaskVersion(base << versionShift)
		if in := tis[i].in; d.tr.runID == "" && in.State == session.InputRefused {
			// The gateway refused it before any run: the task failed.
			msg := spec.NewMessageForTask(spec.MessageRoleAgent, d.tr.info, spec.NewTextPart("the input was refused: "+in.Reason))
			msg.ID = "refused-" + in.ID
			apply(d.task, &spec.TaskStatusUpdateEvent{TaskID: d.task.ID, ContextID: sess.ID,
				Status: spec.TaskStatus{State: spec.TaskStateFailed, Message: msg, Timestamp: at(in.At)}})
			d.version |= 1 << (versionShift - 1)
			d.ended = true
		}
	}
	return out, nil
}

// apply changes task t as a2a-go's task manager does with event e: a
// status update moves the status message before it into the history, an
// artifact update adds, replaces or extends its artifact.
func apply(t *spec.Task, e spec.Event) {
	switch e := e.(type) {
	case *spec.TaskStatusUpdateEvent:
		if t.Status.Message != nil {
			t.History = append(t.History, t.Status.Message)
		}
		if e.Metadata != nil {
			if t.Metadata == nil {
				t.Metadata = map[string]any{}
			}
			maps.Copy(t.Metadata, e.Metadata)
		}
		t.Status = e.Status
	case *spec.TaskArtifactUpdateEvent:
		i := slices.IndexFunc(t.Artifacts, func(a *spec.Artifact) bool { return a.ID == e.Artifact.ID })
		switch {
		case i < 0:
			t.Artifacts = append(t.Artifacts, e.Artifact)
		case !e.Append:
			t.Artifacts[i] = e.Artifact
		default:
			a := *t.Artifacts[i]
			a.Parts = append(slices.Clip(a.Parts), e.Artifact.Parts...)
			t.Artifacts[i] = &a
		}
	}
}

// messageOf is the user's message that input in holds: its parts, and
// the message's id from the input's key.
func messageOf(in *session.InboxInput, info spec.TaskInfo) *spec.Message {
	var parts []*spec.Part
	for _, p := range in.Parts {
		switch p.Type {
		case "text":
			parts = append(parts, spec.NewTextPart(p.Text))
		case "data":
			var v any
			if err := json.Unmarshal(p.Data, &v); err == nil {
				parts = append(parts, spec.NewDataPart(v))
			}
		}
	}
	m := spec.NewMessageForTask(spec.MessageRoleUser, info, parts...)
	m.ID = strings.TrimPrefix(in.Key, keyPrefix)
	if in.Key == "" {
		m.ID = "input-" + in.ID
	}
	return m
}

// inputMeta is the metadata of an A2A task's input that comes after seq
// after of its session.
func inputMeta(after int64) map[string]string {
	return map[string]string{metaAfter: strconv.FormatInt(after, 10)}
}

// refOf is the task of input in (an A2A task's, see taskAfter).
func refOf(in *session.InboxInput) (taskRef, error) {
	after, ok := taskAfter(in)
	if !ok {
		return taskRef{}, fmt.Errorf("input %s is no A2A task's", in.ID)
	}
	return taskRef{session: in.SessionID, after: after, input: in.ID, inboxSeq: in.Seq}, nil
}
