package a2a

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
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
)

// executor runs an A2A task as a turn of a session of one agent.
type executor struct {
	srv   *server.Server
	agent string

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

var _ a2asrv.AgentExecutor = (*executor)(nil)

// Execute starts a task's turn (a message without a task id) or answers
// the human requests a task waits for (a message on a task in
// INPUT_REQUIRED), and translates the session's events into the task's.
// ctx keeps the request's values (tenant, actor) but not its end: a client
// that goes away never stops a turn.
func (x *executor) Execute(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[spec.Event, error] {
	return func(yield func(spec.Event, error) bool) {
		if ec.StoredTask == nil {
			x.start(ctx, ec, yield)
			return
		}
		if st := ec.StoredTask.Status.State; st != spec.TaskStateInputRequired {
			yield(nil, fmt.Errorf("task %s is %s: a message on a task answers what it asks while it is input-required; send a message without a task id (same contextId) for a new turn: %w",
				ec.TaskID, st, spec.ErrInvalidParams))
			return
		}
		x.answer(ctx, ec, yield)
	}
}

// start makes the session (contextId) if it is new, submits the message
// through the gateway and follows the turn that answers it.
func (x *executor) start(ctx context.Context, ec *a2asrv.ExecutorContext, yield func(spec.Event, error) bool) {
	if err := session.CheckID(ec.ContextID); err != nil {
		yield(nil, fmt.Errorf("contextId: %v: %w", err, spec.ErrInvalidParams))
		return
	}
	text, parts, err := inputOf(ec.Message)
	if err != nil {
		yield(nil, err)
		return
	}
	if err := x.session(ctx, ec.ContextID); err != nil {
		yield(nil, err)
		return
	}
	if !yield(spec.NewSubmittedTask(ec, ec.Message), nil) {
		return
	}
	in := gateway.Input{Source: ec.ContextID, Session: ec.ContextID, Agent: x.agent, Text: text, Parts: parts,
		Metadata: map[string]string{"a2a_task": string(ec.TaskID)}}
	if ec.Message.ID != "" {
		// A client that retries a message (same id) gets one input.
		in.Key = "a2a:" + ec.Message.ID
	}
	turn, err := x.srv.SubmitTurn(ctx, in)
	if err != nil {
		yield(failed(ec, err.Error()), nil)
		return
	}
	defer turn.Close()
	x.newTranslator(ec).follow(turn.Events(), yield)
}

// session makes sure session id exists, for this agent, in ctx's tenant.
func (x *executor) session(ctx context.Context, id string) error {
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
		return err
	}
	if s.Agent != x.agent {
		return fmt.Errorf("contextId %s is a session of agent %q, not %q: %w", id, s.Agent, x.agent, spec.ErrInvalidParams)
	}
	return nil
}

// answer resolves the session's pending requests with the message and
// follows the run it continues.
func (x *executor) answer(ctx context.Context, ec *a2asrv.ExecutorContext, yield func(spec.Event, error) bool) {
	r := x.srv.Runner()
	id := ec.ContextID
	runID, after := position(ec.StoredTask)
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
			problems = append(problems, fmt.Sprintf("request %s: %v", p.Request.RequestID, err))
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
	tr := x.newTranslator(ec)
	tr.runID = runID
	tr.follow(r.Watch(ctx, id, after), yield)
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

// Cancel cancels the session's run. A run that has already stopped
// leaves the task canceled all the same.
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
		_, err := x.srv.Runner().Cancel(ctx, ec.ContextID, "A2A CancelTask "+string(ec.TaskID))
		if err != nil && agentrt.AsError(err).ErrorCode() != agentrt.CodeNotRunning {
			yield(nil, err)
			return
		}
		yield(spec.NewStatusUpdateEvent(ec, spec.TaskStateCanceled, nil), nil)
	}
}

func failed(ec *a2asrv.ExecutorContext, msg string) *spec.TaskStatusUpdateEvent {
	return spec.NewStatusUpdateEvent(ec, spec.TaskStateFailed,
		spec.NewMessageForTask(spec.MessageRoleAgent, ec, spec.NewTextPart(msg)))
}

// inputOf is a message's parts as a gateway input: its text parts joined
// as the text, its data parts as data parts. A file part is refused.
func inputOf(m *spec.Message) (string, []session.InputPart, error) {
	var texts []string
	var parts []session.InputPart
	for _, p := range m.Parts {
		switch c := p.Content.(type) {
		case spec.Text:
			texts = append(texts, string(c))
		case spec.Data:
			b, err := json.Marshal(c.Value)
			if err != nil {
				return "", nil, fmt.Errorf("data part: %v: %w", err, spec.ErrInvalidParams)
			}
			parts = append(parts, session.InputPart{Type: "data", Data: b})
		default:
			return "", nil, fmt.Errorf("a %T part: this agent takes text and data parts: %w", c, spec.ErrUnsupportedContentType)
		}
	}
	text := strings.Join(texts, "\n")
	if text == "" && len(parts) == 0 {
		return "", nil, fmt.Errorf("the message has no text or data part: %w", spec.ErrInvalidParams)
	}
	return text, parts, nil
}
