package a2a

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"slices"
	"strings"

	spec "github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	"github.com/a2aproject/a2a-go/v2/a2asrv/taskstore"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/gateway"
	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/server"
	"github.com/agentrt/agentrt/session"
)

// handler is one agent's A2A request handler: a2a-go's, with what makes
// its tasks durable.
//
//   - A message that starts a task is stored as the gateway's input
//     before a2a-go sees it, and the task gets an id that names that
//     input (taskRef): a2a-go then runs it as a message on that task,
//     which the task store knows from the start. A message a client sends
//     again (the same message id) is that task again: its state, or with
//     SendStreamingMessage its stream, as SubscribeToTask gives it.
//   - SubscribeToTask of a task this process does not run (another
//     replica runs it, or it ran before a restart) follows the session's
//     log from where the task stands, where a2a-go knows only the tasks it
//     runs.
type handler struct {
	a2asrv.RequestHandler
	srv   *server.Server
	x     *executor
	tasks *taskStore
	// pushes keeps the tasks' push configs and pushes their updates
	// (a2a-go does neither); nil when the store keeps no records.
	pushes *pusher
	log    *slog.Logger
}

// SendMessage implements a2asrv.RequestHandler.
func (h *handler) SendMessage(ctx context.Context, req *spec.SendMessageRequest) (spec.SendMessageResult, error) {
	req, id, dup, err := h.accept(ctx, req)
	if err != nil {
		return nil, err
	}
	if dup {
		st, err := h.tasks.Get(ctx, id)
		if err != nil {
			return nil, err
		}
		return st.Task, nil
	}
	if id != "" {
		defer h.tasks.release(id)
	}
	return h.RequestHandler.SendMessage(ctx, req)
}

// SendStreamingMessage implements a2asrv.RequestHandler.
func (h *handler) SendStreamingMessage(ctx context.Context, req *spec.SendMessageRequest) iter.Seq2[spec.Event, error] {
	return func(yield func(spec.Event, error) bool) {
		req, id, dup, err := h.accept(ctx, req)
		if err != nil {
			yield(nil, err)
			return
		}
		if dup {
			h.follow(ctx, id)(yield)
			return
		}
		if id != "" {
			defer h.tasks.release(id)
			if direct(req) {
				h.stream(ctx, id)(yield)
				return
			}
		}
		h.RequestHandler.SendStreamingMessage(ctx, req)(yield)
	}
}

// accept takes a message (see answerable and newTask) and its push
// config: the config is checked before anything is stored, and stored
// for the message's task (the new one, or the one it answers); the
// request returned, which a2a-go gets, has none (a2a-go keeps no configs
// here). An answer to a task has the pusher look at the task at once:
// its run goes on.
func (h *handler) accept(ctx context.Context, req *spec.SendMessageRequest) (_ *spec.SendMessageRequest, id spec.TaskID, dup bool, err error) {
	if err := h.answerable(ctx, req); err != nil {
		return nil, "", false, err
	}
	var pc *spec.PushConfig
	if req != nil && req.Config != nil && req.Config.PushConfig != nil {
		if h.pushes == nil {
			return nil, "", false, noPushes()
		}
		pc = req.Config.PushConfig
		if err := h.pushes.check(ctx, pc); err != nil {
			return nil, "", false, err
		}
		r, c := *req, *req.Config
		c.PushConfig = nil
		r.Config = &c
		req = &r
	}
	req, id, dup, err = h.newTask(ctx, req)
	if err != nil || dup || h.pushes == nil {
		return req, id, dup, err
	}
	var onTask spec.TaskID // the task the message answers, if any
	if id == "" && req != nil && req.Message != nil {
		onTask = req.Message.TaskID
	}
	switch {
	case pc != nil && id != "":
		// A new task's config: its updates from its turn's start.
		ref, _ := parseTaskID(id)
		if _, err := h.pushes.save(ctx, id, pc, ref.after); err != nil {
			h.tasks.release(id)
			return nil, "", false, err
		}
	case pc != nil && onTask != "":
		// A config with an answer: the updates from the answer on.
		ref, _ := parseTaskID(onTask)
		sess, err := h.srv.Runner().Store().GetSession(ctx, ref.session)
		if err != nil {
			return nil, "", false, &agentrt.Error{Kind: agentrt.FailStore, Msg: "the store could not be read (session " + ref.session + ")", Err: err}
		}
		if _, err := h.pushes.save(ctx, onTask, pc, sess.LastSeq); err != nil {
			return nil, "", false, err
		}
	case onTask != "":
		// An answer: if the task has push configs, its run goes on, and
		// so do its pushes, at once.
		h.pushes.kick(session.TenantOf(ctx), onTask)
	}
	return req, id, false, nil
}

// noPushes is the error of a push method on a server whose store keeps
// no push configs.
func noPushes() error {
	return rpcError(spec.ErrPushNotificationNotSupported, "this server keeps no push configs (its store keeps no records)")
}

// answerable refuses, before a2a-go sees it, a message on a task that
// it cannot take, in words of the adapter's own: a message with no id,
// parts or role, or with another task's contextId; one on a task that
// has ended; one on a task that asks nothing (working, submitted), for
// which a2a-go would begin an execution of the task — beside the run
// that goes on, which a2a-go does not know of when the handler streams
// the task itself or another replica runs it — and the executor's
// refusal (notWaiting) would fail the task, here, while its run goes
// on. A message on a task that waits, or is not found, is a2a-go's to
// take or refuse.
func (h *handler) answerable(ctx context.Context, req *spec.SendMessageRequest) error {
	if req == nil || req.Message == nil || req.Message.TaskID == "" {
		return nil
	}
	m := req.Message
	if err := checkMessage(m); err != nil {
		return err
	}
	st, err := h.tasks.Get(ctx, m.TaskID)
	if err != nil {
		return nil
	}
	t := st.Task
	switch s := t.Status.State; {
	case m.ContextID != "" && m.ContextID != t.ContextID:
		return rpcError(spec.ErrInvalidParams, "task %s is of context %s, not %s: leave contextId out, or give the task's", m.TaskID, t.ContextID, m.ContextID)
	case s.Terminal():
		return rpcError(spec.ErrInvalidParams, "task %s has ended (%s): send a message without a task id (same contextId %s) for a new turn", m.TaskID, s, t.ContextID)
	case s == spec.TaskStateInputRequired, s == spec.TaskStateAuthRequired:
		return nil
	default:
		return notWaiting(m.TaskID, s)
	}
}

// checkMessage refuses what a2a-go would refuse of message m, in words
// of the adapter's own.
func checkMessage(m *spec.Message) error {
	switch {
	case m.ID == "":
		return rpcError(spec.ErrInvalidParams, "the message has no messageId")
	case len(m.Parts) == 0:
		return rpcError(spec.ErrInvalidParams, "the message has no parts")
	case m.Role == "":
		return rpcError(spec.ErrInvalidParams, "the message has no role (ROLE_USER)")
	}
	return nil
}

// direct reports whether the stream of new task req is the handler's own
// (stream): what a2a-go would do for it besides streaming the task's
// events (a shortened history) is asked for in its configuration.
func direct(req *spec.SendMessageRequest) bool {
	c := req.Config
	return c == nil || c.HistoryLength == nil
}

// stream yields new task id, then its updates, as the handler's own
// stream of it (streamBatches) gives them.
func (h *handler) stream(ctx context.Context, id spec.TaskID) iter.Seq2[spec.Event, error] {
	return func(yield func(spec.Event, error) bool) {
		err := h.streamBatches(ctx, id, func(evs []spec.Event) bool {
			for _, ev := range evs {
				if !yield(ev, nil) {
					return false
				}
			}
			return true
		})
		if err != nil {
			yield(nil, err)
		}
	}
}

// streamBatches gives emit new task id, then its updates from the turn
// the handler subscribed to before it stored the task's input, to the
// turn's end or its wait for a person, as a2a-go's execution of the task
// would stream them, without a2a-go's task manager: it copies the task
// (through gob) two or three times an event, most of a streamed turn's
// cost. The updates come in the turn's batches (what was ready
// together), so that a writer flushes once a batch; emit returns false to
// stop. The task store holds the task as it goes, as the manager would
// have stored it, so that GetTask, SubscribeToTask and CancelTask find
// it; a CancelTask (a2a-go's, with no execution of the task to stop)
// cancels the run, and the stream ends CANCELED with it. (Its push
// notifications are the pusher's, which follows the task whether or not
// its client stays.) The error is for a task whose turn is gone (nothing
// was emitted).
func (h *handler) streamBatches(ctx context.Context, id spec.TaskID, emit func([]spec.Event) bool) error {
	ref, _ := parseTaskID(id)
	task, turn := h.tasks.begin(id)
	if turn == nil {
		return &agentrt.Error{Kind: agentrt.FailInternal, Msg: fmt.Sprintf("task %s: its turn is gone", id)}
	}
	defer turn.Close()
	ended := false
	defer func() {
		if !ended {
			// The client left first: the log says how the task goes on.
			h.tasks.settle(id)
		}
	}()
	if !emit([]spec.Event{shallow(task)}) {
		return nil
	}
	tr := &translator{info: spec.TaskInfo{TaskID: id, ContextID: task.ContextID}, input: ref.input}
	var out []spec.Event
	for evs, err := range turn.EventBatches() {
		if err != nil {
			if leftOff(err) {
				// Not the task's end (translator.follow): the stream
				// ends, and the log says how the task goes on.
				return nil
			}
			// Following the turn failed: so does the task, as its
			// translator says.
			out, ended = append(out[:0], failed(tr.info, "following the session: "+publicText(err))), true
		} else {
			out, ended = tr.batch(out[:0], evs)
		}
		for _, ev := range out {
			apply(task, ev)
			h.tasks.progress(id, task, ev)
		}
		if len(out) > 0 && !emit(out) {
			return nil
		}
		if ended {
			return nil
		}
	}
	return nil
}

// GetTask implements a2asrv.RequestHandler: a task this process runs is
// read as its stream here has it, unless the log has it ended already —
// a client whose subscription (or another replica) showed the end, then
// asked, got the task still working — then as the log has it.
func (h *handler) GetTask(ctx context.Context, req *spec.GetTaskRequest) (*spec.Task, error) {
	t, err := h.RequestHandler.GetTask(ctx, req)
	if err != nil || t.Status.State.Terminal() || !h.tasks.running(ctx, req.ID) {
		return t, err
	}
	ref, ok := parseTaskID(req.ID)
	if !ok {
		return t, nil
	}
	d, derr := h.tasks.derive(ctx, ref)
	if derr != nil || !d.task.Status.State.Terminal() {
		return t, nil
	}
	all := -1 // a2a-go's GetTask gives the whole history unless asked for less
	n := req.HistoryLength
	if n == nil {
		n = &all
	}
	return trimmed(d.task, &spec.ListTasksRequest{HistoryLength: n, IncludeArtifacts: true}), nil
}

// CancelTask implements a2asrv.RequestHandler: a task that has ended is
// refused in the adapter's words; any other is a2a-go's to cancel (its
// executor's Cancel cancels the run).
func (h *handler) CancelTask(ctx context.Context, req *spec.CancelTaskRequest) (*spec.Task, error) {
	if req != nil {
		st, err := h.tasks.Get(ctx, req.ID)
		if err != nil {
			return nil, err
		}
		if s := st.Task.Status.State; s.Terminal() && s != spec.TaskStateCanceled {
			return nil, rpcError(spec.ErrTaskNotCancelable, "task %s has ended (%s): only a task in progress can be canceled", req.ID, s)
		}
	}
	return h.RequestHandler.CancelTask(ctx, req)
}

// CreateTaskPushConfig implements a2asrv.RequestHandler: config c,
// checked, is stored for its task (of ctx's tenant), whose updates are
// pushed from then on (a task that has ended has none).
func (h *handler) CreateTaskPushConfig(ctx context.Context, c *spec.PushConfig) (*spec.PushConfig, error) {
	if h.pushes == nil {
		return nil, noPushes()
	}
	if c == nil {
		return nil, rpcError(spec.ErrInvalidParams, "the push config is empty")
	}
	st, err := h.tasks.Get(ctx, c.TaskID)
	if err != nil {
		return nil, err
	}
	if err := h.pushes.check(ctx, c); err != nil {
		return nil, err
	}
	sess, err := h.srv.Runner().Store().GetSession(ctx, st.Task.ContextID)
	if err != nil {
		return nil, &agentrt.Error{Kind: agentrt.FailStore, Msg: "the store could not be read (session " + st.Task.ContextID + ")", Err: err}
	}
	return h.pushes.save(ctx, c.TaskID, c, sess.LastSeq)
}

// GetTaskPushConfig implements a2asrv.RequestHandler.
func (h *handler) GetTaskPushConfig(ctx context.Context, req *spec.GetTaskPushConfigRequest) (*spec.PushConfig, error) {
	cfgs, err := h.listPush(ctx, req.TaskID)
	if err != nil {
		return nil, err
	}
	for _, c := range cfgs {
		if c.ID == req.ID {
			return c, nil
		}
	}
	return nil, pushConfigError(req.TaskID, req.ID)
}

// ListTaskPushConfigs implements a2asrv.RequestHandler.
func (h *handler) ListTaskPushConfigs(ctx context.Context, req *spec.ListTaskPushConfigRequest) (*spec.ListTaskPushConfigResponse, error) {
	cfgs, err := h.listPush(ctx, req.TaskID)
	if err != nil {
		return nil, err
	}
	return &spec.ListTaskPushConfigResponse{Configs: cfgs}, nil
}

// DeleteTaskPushConfig implements a2asrv.RequestHandler: a config the
// task does not have is no error.
func (h *handler) DeleteTaskPushConfig(ctx context.Context, req *spec.DeleteTaskPushConfigRequest) error {
	if h.pushes == nil {
		return noPushes()
	}
	if _, err := h.tasks.Get(ctx, req.TaskID); err != nil {
		return err
	}
	return h.pushes.deleteConfig(ctx, req.TaskID, req.ID)
}

// listPush is the push configs of task id, a task of ctx's tenant.
func (h *handler) listPush(ctx context.Context, id spec.TaskID) ([]*spec.PushConfig, error) {
	if h.pushes == nil {
		return nil, noPushes()
	}
	if _, err := h.tasks.Get(ctx, id); err != nil {
		return nil, err
	}
	return h.pushes.configs(ctx, id)
}

// SubscribeToTask implements a2asrv.RequestHandler: a2a-go's subscription
// to a task this process runs, else the task followed in the log.
func (h *handler) SubscribeToTask(ctx context.Context, req *spec.SubscribeToTaskRequest) iter.Seq2[spec.Event, error] {
	return func(yield func(spec.Event, error) bool) {
		if req == nil || !h.tasks.running(ctx, req.ID) {
			if req == nil {
				yield(nil, spec.ErrInvalidParams)
				return
			}
			h.follow(ctx, req.ID)(yield)
			return
		}
		first := true
		for ev, err := range h.RequestHandler.SubscribeToTask(ctx, req) {
			if first && errors.Is(err, spec.ErrTaskNotFound) {
				// Its execution here ended meanwhile.
				h.follow(ctx, req.ID)(yield)
				return
			}
			first = false
			if !yield(ev, err) {
				return
			}
		}
	}
}

// follow yields task id as it stands, then, unless it ended or waits for
// a person, its updates as its turn goes on in the session's log (with
// the answer's chunks, wherever the turn runs), to its end or its next
// wait.
func (h *handler) follow(ctx context.Context, id spec.TaskID) iter.Seq2[spec.Event, error] {
	return func(yield func(spec.Event, error) bool) {
		ref, ok := parseTaskID(id)
		if !ok {
			yield(nil, spec.ErrTaskNotFound)
			return
		}
		d, err := h.tasks.derive(ctx, ref)
		if err != nil {
			yield(nil, err)
			return
		}
		if !yield(d.task, nil) || final(d.task.Status.State) {
			return
		}
		d.tr.quiet = true // the handler's own stream
		d.tr.follow(single(h.srv.Runner().Watch(ctx, ref.session, d.scanned)), yield)
	}
}

// newTask stores the input of a message that starts a task (one without
// a task id) and returns the request as a message on the new task, which
// the task store holds with the turn that answers it; id is "" for a
// message on a task (a2a-go deals with it). dup reports a message sent
// before: id is its task, and nothing was stored.
func (h *handler) newTask(ctx context.Context, req *spec.SendMessageRequest) (_ *spec.SendMessageRequest, id spec.TaskID, dup bool, err error) {
	if req == nil || req.Message == nil || req.Message.TaskID != "" {
		return req, "", false, nil
	}
	m := req.Message
	// What a2a-go would refuse, refused before anything is stored.
	if err := checkMessage(m); err != nil {
		return nil, "", false, err
	}
	contextID := m.ContextID
	if contextID == "" {
		contextID = contextFor(m.ID)
	}
	if err := session.CheckID(contextID); err != nil {
		return nil, "", false, rpcError(spec.ErrInvalidParams, "contextId: %v", err)
	}
	text, parts, media, err := inputOf(m)
	if err != nil {
		return nil, "", false, err
	}
	// The files before the session: a file refused leaves nothing behind.
	files, err := h.x.files(ctx, media)
	if err != nil {
		return nil, "", false, err
	}
	sess, err := h.x.session(ctx, contextID)
	if err != nil {
		return nil, "", false, err
	}
	in := h.x.input(contextID, m, text, parts, files, sess.LastSeq)
	// The turn is followed by the task's execution, which outlives this
	// request (ReturnImmediately, a client that goes away).
	turn, err := h.srv.SubmitTurn(context.WithoutCancel(ctx), in)
	if agentrt.AsError(err).ErrorCode() == agentrt.CodeKeyConflict {
		// The message sent again once the session had moved on (the
		// input's metadata differs), or another with its id.
		id, err := h.sentBefore(ctx, in)
		return nil, id, err == nil, err
	}
	if err != nil {
		return nil, "", false, err
	}
	sub := turn.Submitted
	if sub.Duplicate {
		turn.Close()
		id, err := h.sentBefore(ctx, in)
		return nil, id, err == nil, err
	}
	ref := taskRef{session: contextID, after: sess.LastSeq, input: sub.ID, inboxSeq: sub.Seq}
	id = ref.id()
	msg := *m
	msg.TaskID, msg.ContextID = id, contextID
	task := &spec.Task{ID: id, ContextID: contextID, Status: spec.TaskStatus{State: spec.TaskStateSubmitted},
		History: []*spec.Message{&msg}}
	// The version the log gives the task while its input waits: the
	// store derives the same until the turn starts.
	h.tasks.add(ctx, task, taskstore.TaskVersion((sess.LastSeq+1)<<versionShift), turn)
	r := *req
	r.Message = &msg
	return &r, id, false, nil
}

// sentBefore returns the task of the input stored before with in's key:
// the task of a message sent again. Another message with the same id is
// an error.
func (h *handler) sentBefore(ctx context.Context, in gateway.Input) (spec.TaskID, error) {
	ins, err := h.tasks.inbox.Inputs(ctx, in.Source, 0, 0)
	if err != nil {
		return "", &agentrt.Error{Kind: agentrt.FailStore, Msg: "the store could not be read (the inputs of session " + in.Source + ")", Err: err}
	}
	want := in.Parts
	if in.Text != "" {
		want = append([]session.InputPart{{Type: "text", Text: in.Text}}, want...)
	}
	// The files as the gateway keeps them: parts naming their blobs.
	for _, f := range in.Files {
		if b, err := session.NewBlob(f.Data, f.Type); err == nil {
			want = append(want, gateway.MediaPart(model.Media{Hash: b.Hash, Type: b.Type, Name: f.Name, Size: b.Size}))
		}
	}
	for i := range ins {
		if ins[i].Key != in.Key {
			continue
		}
		ref, err := refOf(&ins[i])
		if err != nil || !slices.EqualFunc(ins[i].Parts, want, samePart) {
			break
		}
		return ref.id(), nil
	}
	return "", rpcError(spec.ErrInvalidParams, "messageId %s was given to another message in context %s: give each message an id of its own", strings.TrimPrefix(in.Key, keyPrefix), in.Source)
}

func samePart(a, b session.InputPart) bool {
	return a.Type == b.Type && a.Text == b.Text && bytes.Equal(a.Data, b.Data)
}

// contextFor is the context (session) of a message that names none: one
// its id gives, so that the message sent again finds its task.
func contextFor(messageID string) string {
	sum := sha256.Sum256([]byte("a2a-context:" + messageID))
	return hex.EncodeToString(sum[:16])
}
