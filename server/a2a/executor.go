package a2a

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"mime"
	"strconv"
	"strings"
	"sync"

	spec "github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/gateway"
	"github.com/agentrt/agentrt/server"
	"github.com/agentrt/agentrt/session"
)

// Metadata keys the adapter sets on what it sends: where in the session's
// log a task stands, for a client that reads the log itself (GET
// /v1/sessions/{id}/events?after=seq) and for the answer that resumes it.
const (
	MetaSession  = "agentrt.session"
	MetaRun      = "agentrt.run_id"
	MetaSeq      = "agentrt.seq"
	MetaRequests = "agentrt.requests"
	// MetaPaused is the reason of a run that paused (a limit, such as
	// max_rounds): the task waits for a message that resumes it.
	MetaPaused = "agentrt.paused"
)

// executor runs an A2A task as a turn of a session of one agent.
type executor struct {
	srv   *server.Server
	agent string
	tasks *taskStore

	// canceling holds the tasks a CancelTask is stopping, each with a
	// channel closed once the cancel's CANCELED event is written. The
	// task's execution, which sees its run end canceled, waits for it and
	// ends without an event of its own: a2a-go takes the cancel's event
	// on the execution's queue, which closes when the execution ends.
	mu        sync.Mutex
	canceling map[spec.TaskID]chan struct{} // guarded by mu
}

// canceled reports a CancelTask of task id in progress, with the channel
// closed when it has written its event.
func (x *executor) canceled(id spec.TaskID) (<-chan struct{}, bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	ch, ok := x.canceling[id]
	return ch, ok
}

var (
	_ a2asrv.AgentExecutor         = (*executor)(nil)
	_ a2asrv.AgentExecutionCleaner = (*executor)(nil)
)

// Execute follows a new task's turn (the message the handler stored as
// the turn's input, on the task it made for it), or answers the human
// requests a task waits for (a message on a task in INPUT_REQUIRED), and
// translates the session's events into the task's. ctx keeps the
// request's values (tenant, actor) but not its end: a client that goes
// away never stops a turn.
func (x *executor) Execute(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[spec.Event, error] {
	return func(yield func(spec.Event, error) bool) {
		st := ec.StoredTask
		switch {
		case st == nil:
			yield(nil, rpcError(spec.ErrInvalidRequest, "task %s is not one this server made", ec.TaskID))
		case st.Status.State == spec.TaskStateSubmitted && len(st.History) > 0 && st.History[0].ID == ec.Message.ID:
			x.start(ctx, ec, yield)
		case st.Status.State == spec.TaskStateInputRequired:
			x.answer(ctx, ec, yield)
		default:
			yield(nil, notWaiting(ec.TaskID, st.Status.State))
		}
	}
}

// notWaiting is the error of a message on task id, in state, which asks
// nothing.
func notWaiting(id spec.TaskID, state spec.TaskState) error {
	return rpcError(spec.ErrInvalidParams, "task %s is %s: a message on a task answers what it asks while it is input-required (SubscribeToTask follows it); send a message without a task id (same contextId) for a new turn",
		id, state)
}

// start follows a new task's turn: the task as submitted, then its
// updates, from the turn the handler subscribed to before it stored the
// input, or, if the request that made the task ended before this
// execution began, from the log.
func (x *executor) start(ctx context.Context, ec *a2asrv.ExecutorContext, yield func(spec.Event, error) bool) {
	ref, _ := parseTaskID(ec.TaskID)
	turn := x.tasks.start(ec.TaskID)
	if turn == nil {
		// The same input again: the gateway stores nothing, and the turn
		// follows the input's run from the start of the log.
		text, parts, media, err := inputOf(ec.Message)
		var files []gateway.File
		if err == nil {
			files, err = x.files(ctx, media)
		}
		if err == nil {
			turn, err = x.srv.SubmitTurn(ctx, x.input(ec.ContextID, ec.Message, text, parts, files, ref.after))
		}
		if err != nil {
			yield(nil, err)
			return
		}
	}
	defer turn.Close()
	if !yield(ec.StoredTask, nil) {
		return
	}
	tr := &translator{info: ec.TaskInfo(), canceled: x.canceled, input: ref.input}
	tr.follow(turn.EventBatches(), yield)
}

// input is the gateway input of a message m that starts a task in
// context (session) contextID, whose log had after events.
func (x *executor) input(contextID string, m *spec.Message, text string, parts []session.InputPart, files []gateway.File, after int64) gateway.Input {
	return gateway.Input{Source: contextID, Session: contextID, Agent: x.agent, Text: text, Parts: parts, Files: files,
		Metadata: inputMeta(after), Key: keyPrefix + m.ID}
}

// Cleanup implements a2asrv.AgentExecutionCleaner: a task whose
// execution ended without storing its end is read from the log again.
func (x *executor) Cleanup(ctx context.Context, ec *a2asrv.ExecutorContext, result spec.SendMessageResult, err error) {
	x.tasks.settle(ec.TaskID)
}

// session makes sure session id exists, for this agent, in ctx's tenant,
// and returns it.
func (x *executor) session(ctx context.Context, id string) (*session.Session, error) {
	st := x.srv.Runner().Store()
	s, err := st.GetSession(ctx, id)
	if errors.Is(err, session.ErrNotFound) {
		s, err = x.srv.Runner().CreateSession(ctx, x.agent, id, map[string]string{"created_by": "a2a"})
		if err != nil {
			// Another request may have made it meanwhile.
			if s2, gerr := st.GetSession(ctx, id); gerr == nil {
				s, err = s2, nil
			}
		}
	}
	if err != nil {
		return nil, err
	}
	if s.Agent != x.agent {
		return nil, rpcError(spec.ErrInvalidParams, "contextId %s is a session of agent %q, not %q: send it to that agent, or use another contextId", id, s.Agent, x.agent)
	}
	return s, nil
}

// answer resolves the session's pending requests with the message, or
// resumes the run that paused, and follows the run it continues.
func (x *executor) answer(ctx context.Context, ec *a2asrv.ExecutorContext, yield func(spec.Event, error) bool) {
	r := x.srv.Runner()
	id := ec.ContextID
	runID, after := position(ec.StoredTask)
	if m := ec.StoredTask.Status.Message; m != nil && m.Metadata[MetaPaused] != nil {
		x.resume(ctx, ec, yield)
		return
	}
	pending, err := r.PendingRequests(ctx, session.RequestListOptions{SessionID: id, Limit: 100})
	if err != nil {
		yield(nil, err)
		return
	}
	ans, err := answerOf(ec.Message)
	if err != nil {
		yield(nil, err)
		return
	}
	var problems []string
	for _, p := range pending {
		if ans.requestID != "" && p.Request.RequestID != ans.requestID {
			continue
		}
		res, err := ans.resolution(&p.Request)
		if err != nil {
			problems = append(problems, err.Error())
			continue
		}
		res.By = agentrt.ActorOf(ctx)
		if _, err := r.ResolveAndContinue(ctx, id, p.Request.RequestID, res); err != nil &&
			agentrt.AsError(err).ErrorCode() != agentrt.CodeAlreadyResolved {
			problems = append(problems, fmt.Sprintf("request %s: %s", p.Request.RequestID, publicText(err)))
		}
	}
	if len(problems) > 0 {
		// The task still waits: say what was wrong with the answer.
		msg := spec.NewMessageForTask(spec.MessageRoleAgent, ec, spec.NewTextPart(strings.Join(problems, "; ")))
		msg.Metadata = ec.StoredTask.Status.Message.Metadata
		ev := spec.NewStatusUpdateEvent(ec, spec.TaskStateInputRequired, msg)
		yield(ev, nil)
		return
	}
	// Follow the run the answer continued (here, or wherever the last
	// answer was given) from where the task stopped.
	tr := &translator{info: ec.TaskInfo(), canceled: x.canceled, runID: runID, lastSeq: after}
	tr.follow(single(r.Watch(ctx, id, after)), yield)
}

// resume resumes the run of a task that paused (its status message says
// why), when the message says to go on, and follows it; any other
// message leaves the task waiting, saying what to answer.
func (x *executor) resume(ctx context.Context, ec *a2asrv.ExecutorContext, yield func(spec.Event, error) bool) {
	r := x.srv.Runner()
	id := ec.ContextID
	runID, after := position(ec.StoredTask)
	still := func(text string) {
		msg := spec.NewMessageForTask(spec.MessageRoleAgent, ec, spec.NewTextPart(text))
		msg.Metadata = ec.StoredTask.Status.Message.Metadata
		yield(spec.NewStatusUpdateEvent(ec, spec.TaskStateInputRequired, msg), nil)
	}
	ans, err := answerOf(ec.Message)
	if err != nil {
		yield(nil, err)
		return
	}
	switch strings.ToLower(strings.Trim(ans.text, " .!")) {
	case "continue", "resume", "go on", "yes", "ok":
	default:
		still(fmt.Sprintf("The run paused: reply continue on this task to let it go on (got %q), or send a message without a task id for a new turn.", ans.text))
		return
	}
	if _, err := r.StartResume(ctx, id); err != nil {
		e := agentrt.AsError(err)
		if e.Kind != agentrt.FailState {
			yield(nil, err)
			return
		}
		// Resumed meanwhile, elsewhere (or it is no longer paused): the
		// log says how it goes on, which the task follows.
	}
	tr := &translator{info: ec.TaskInfo(), canceled: x.canceled, runID: runID, lastSeq: after}
	tr.follow(single(r.Watch(ctx, id, after)), yield)
}

// position is where a waiting task stopped in its session's log: its run
// and the last seq it had.
func position(t *spec.Task) (runID string, seq int64) {
	if t.Status.Message == nil {
		return "", 0
	}
	md := t.Status.Message.Metadata
	runID, _ = md[MetaRun].(string)
	switch v := md[MetaSeq].(type) {
	case float64:
		seq = int64(v)
	case int64:
		seq = v
	case string:
		seq, _ = strconv.ParseInt(v, 10, 64)
	}
	return runID, seq
}

// Cancel cancels the task's run (Runner.CancelRun: that run, not
// whatever runs in the session when the request lands — the session's
// next turn, another task's), and the task with it. A task whose run is
// not running (it ended, or the task's input is not taken up yet) is
// left as it is: the task is not cancelable.
func (x *executor) Cancel(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[spec.Event, error] {
	return func(yield func(spec.Event, error) bool) {
		done := make(chan struct{})
		x.mu.Lock()
		if x.canceling == nil {
			x.canceling = map[spec.TaskID]chan struct{}{}
		}
		x.canceling[ec.TaskID] = done
		x.mu.Unlock()
		defer func() {
			x.mu.Lock()
			delete(x.canceling, ec.TaskID)
			x.mu.Unlock()
			close(done)
		}()
		runID, err := x.taskRun(ctx, ec.TaskID)
		if err != nil {
			yield(nil, err)
			return
		}
		out, err := x.srv.Runner().CancelRun(ctx, ec.ContextID, runID, "A2A CancelTask "+string(ec.TaskID))
		switch {
		case err == nil && (out.Acted || out.Status == session.StatusCanceled):
			yield(spec.NewStatusUpdateEvent(ec, spec.TaskStateCanceled, nil), nil)
		case err == nil:
			yield(nil, rpcError(spec.ErrTaskNotCancelable, "task %s: its run ended %s before it could be canceled", ec.TaskID, out.Status))
		case agentrt.AsError(err).ErrorCode() == agentrt.CodeNotRunning:
			// The log says how the task stands (ended, or its input not
			// taken up yet): GetTask shows it.
			yield(nil, rpcError(spec.ErrTaskNotCancelable, "task %s: %s", ec.TaskID, publicText(err)))
		default:
			yield(nil, err)
		}
	}
}

// taskRun is the run of task id's turn as the log has it: the one in
// progress (a turn restarted after an interruption goes on in another),
// or the one that ended it. A task whose input no run has taken up yet
// has none: it is not cancelable.
func (x *executor) taskRun(ctx context.Context, id spec.TaskID) (string, error) {
	ref, ok := parseTaskID(id)
	if !ok {
		return "", spec.ErrTaskNotFound
	}
	d, err := x.tasks.derive(ctx, ref)
	if err != nil {
		return "", err
	}
	if d.tr.runID == "" {
		return "", rpcError(spec.ErrTaskNotCancelable, "task %s: its input waits for a turn (the session's run answers another input first): it can be canceled once it runs", id)
	}
	return d.tr.runID, nil
}

// inputOf is a message's parts as a gateway input: its text parts joined
// as the text, its data parts as data parts, its files (raw bytes, or a
// url the server fetches) as files, read by files.
func inputOf(m *spec.Message) (string, []session.InputPart, []server.MediaRef, error) {
	var texts []string
	var parts []session.InputPart
	var media []server.MediaRef
	for i, p := range m.Parts {
		switch c := p.Content.(type) {
		case spec.Text:
			texts = append(texts, string(c))
		case spec.Data:
			b, err := json.Marshal(c.Value)
			if err != nil {
				return "", nil, nil, rpcError(spec.ErrInvalidParams, "a data part of the message is not JSON: %v", err)
			}
			parts = append(parts, session.InputPart{Type: "data", Data: b})
		case spec.Raw:
			media = append(media, server.MediaRef{Where: fmt.Sprintf("part %d", i), Data: []byte(c), Type: p.MediaType, Name: p.Filename})
			if c == nil {
				media[len(media)-1].Data = []byte{}
			}
		case spec.URL:
			media = append(media, server.MediaRef{Where: fmt.Sprintf("part %d", i), URL: string(c), Type: p.MediaType, Name: p.Filename})
		default:
			return "", nil, nil, rpcError(spec.ErrUnsupportedContentType, "%s: this agent takes text, data and file parts", partKind(p))
		}
	}
	text := strings.Join(texts, "\n")
	if text == "" && len(parts) == 0 && len(media) == 0 {
		return "", nil, nil, rpcError(spec.ErrInvalidParams, "the message has no text, data or file part")
	}
	return text, parts, media, nil
}

// files reads a message's file parts (decoded, or fetched): a part that
// cannot be read refuses the message (invalid params; a media type that
// is none, content type not supported).
func (x *executor) files(ctx context.Context, media []server.MediaRef) ([]gateway.File, error) {
	for _, ref := range media {
		if ref.Type != "" {
			if _, _, err := mime.ParseMediaType(ref.Type); err != nil {
				return nil, rpcError(spec.ErrUnsupportedContentType, "%s: mediaType %q is not a media type", ref.Where, ref.Type)
			}
		}
	}
	files, _, err := x.srv.ClientFiles(ctx, media)
	return files, err
}
