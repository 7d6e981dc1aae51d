package openai

import (
	"context"
	"fmt"
	"iter"
	"net/http"
	"slices"
	"strings"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/gateway"
	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/server"
	"github.com/agentrt/agentrt/session"
)

// exchange is one request's turn of a session: the events of the run
// that answers the request's input (or continues after its answer to a
// person's request), to the turn's end.
type exchange struct {
	session string
	// after is the seq the turn's events come after, and input the
	// gateway's id of the input it answers ("" for a turn that goes on
	// after an answer to a person's request).
	after int64
	input string
	// inbox is the input's place in the gateway's inbox (its Seq).
	inbox  int64
	events iter.Seq2[*session.Event, error]
	close  func()
}

// begin sends the conversation's new input to the session the request
// names (header Agentrt-Session), or to a new session of agent that
// starts from the conversation's history, and returns the turn that
// answers it. The input to a session that waits for a person answers its
// request (answerPending).
func (a *Adapter) begin(ctx context.Context, id, agent string, conv *conversation, tools []model.ToolSpec) (*exchange, error) {
	// The input's files first: one that cannot be read (or fetched)
	// refuses the request before a session is made.
	files, err := a.files(ctx, conv)
	if err != nil {
		return nil, err
	}
	var ss *session.Session
	switch {
	case id != "":
		if ss, err = a.r.Store().GetSession(ctx, id); err != nil {
			return nil, sessionNotFound(id, err)
		}
		if ss.Agent != agent {
			return nil, badRequest("model", "session %s is of agent %q, not %q: name its agent as the model", id, ss.Agent, agent)
		}
		if ss.Status == session.StatusWaiting {
			if len(files) > 0 {
				return nil, apiError(http.StatusConflict, agentrt.CodeWaiting, conv.media[0].where(),
					"session %s waits for an answer, which is text: answer it first, then send the files", id)
			}
			x, err := a.answerPending(ctx, ss, conv.input)
			if x != nil || err != nil {
				return x, err
			}
			// Answered meanwhile, through another way: the input is new.
		}
	case len(conv.history) > 0:
		if ss, err = a.r.ImportSession(ctx, agent, "", conv.history, "openai", nil); err != nil {
			e := toAPIError(err)
			if e.Status == http.StatusBadRequest || e.Status == http.StatusUnprocessableEntity {
				e.Param = ptr("messages")
			}
			return nil, e
		}
	default:
		if ss, err = a.r.CreateSession(ctx, agent, "", nil); err != nil {
			return nil, err
		}
	}
	t, err := a.srv.SubmitTurn(ctx, gateway.Input{Source: ss.ID, Session: ss.ID, Agent: agent, Text: conv.input, Files: files,
		ClientTools: tools, Metadata: conv.metadata})
	if err != nil {
		return nil, err
	}
	return &exchange{session: ss.ID, after: t.After, input: t.Submitted.ID, inbox: t.Submitted.Seq, events: t.Events(), close: t.Close}, nil
}

// files reads the new input's images and files (decoded, or fetched):
// an error names the part at fault.
func (a *Adapter) files(ctx context.Context, conv *conversation) ([]gateway.File, error) {
	refs := make([]server.MediaRef, len(conv.media))
	for i, p := range conv.media {
		refs[i] = p.ref
		refs[i].Where = p.where()
	}
	files, i, err := a.srv.ClientFiles(ctx, refs)
	if err != nil {
		e := toAPIError(err)
		e.Param = ptr(refs[i].Where)
		return nil, e
	}
	return files, nil
}

func ptr[T any](v T) *T { return &v }

func sessionNotFound(id string, err error) error {
	e := toAPIError(err)
	if e.Status == http.StatusNotFound {
		e.Message = fmt.Sprintf("session %q not found (header %s)", id, SessionHeader)
		e.Code = agentrt.CodeNotFound
	}
	return e
}

// answerPending answers the one request a waiting session has with the
// new input's text, and returns the run that goes on (nil, when no
// request waits any more). The text answers a
// prompt as it is; a selection's options are separated by commas; an
// approval takes approve (yes) or reject (no), and a call in doubt done,
// failed or retry. A session waiting for several answers takes them
// through POST /v1/sessions/{id}/requests/{rid}.
func (a *Adapter) answerPending(ctx context.Context, ss *session.Session, text string) (*exchange, error) {
	pend, err := a.r.PendingRequests(ctx, session.RequestListOptions{SessionID: ss.ID})
	if err != nil {
		return nil, err
	}
	switch len(pend) {
	case 0:
		return nil, nil
	case 1:
	default:
		ids := make([]string, len(pend))
		for i, p := range pend {
			ids[i] = p.Request.RequestID
		}
		return nil, apiError(http.StatusConflict, agentrt.CodeWaiting, "",
			"session %s waits for %d answers (%s): answer each through POST /v1/sessions/%s/requests/{id}",
			ss.ID, len(pend), strings.Join(ids, ", "), ss.ID)
	}
	q := pend[0].Request
	res, err := resolutionOf(&q, text)
	if err != nil {
		return nil, err
	}
	res.By = agentrt.ActorOf(ctx)
	// Follow the session from where it stands before answering, so that
	// nothing of the run the answer continues is missed.
	f, err := a.srv.FollowSession(ctx, ss.ID, ss.LastSeq)
	if err != nil {
		return nil, err
	}
	if _, err := a.r.ResolveAndContinue(ctx, ss.ID, q.RequestID, res); err != nil {
		f.Close()
		return nil, err
	}
	return &exchange{session: ss.ID, after: ss.LastSeq, events: f.Events(), close: f.Close}, nil
}

// resolutionOf reads a person's answer to request q from text.
func resolutionOf(q *session.InputRequired, text string) (agentrt.Resolution, error) {
	word := strings.ToLower(strings.Trim(strings.TrimSpace(text), ".!"))
	bad := func(want string) (agentrt.Resolution, error) {
		return agentrt.Resolution{}, badRequest("messages", "the session waits for an answer to request %s (%s): %s; got %q",
			q.RequestID, q.Question, want, text)
	}
	switch q.Kind {
	case session.RequestPrompt:
		return agentrt.Resolution{Text: text}, nil
	case session.RequestSelect:
		var sel []string
		for _, s := range strings.Split(text, ",") {
			if s = strings.TrimSpace(s); s != "" {
				sel = append(sel, s)
			}
		}
		for _, s := range sel {
			if !slices.Contains(q.Options, s) {
				return bad("reply with one of the options " + strings.Join(q.Options, ", "))
			}
		}
		return agentrt.Resolution{Selected: sel}, nil
	case session.RequestApproval:
		switch word {
		case "approve", "approved", "yes", "y", "ok":
			return agentrt.Resolution{Decision: session.DecisionApprove}, nil
		case "reject", "rejected", "no", "n", "deny":
			return agentrt.Resolution{Decision: session.DecisionReject, Reason: "rejected over the OpenAI API"}, nil
		}
		return bad("reply approve or reject")
	case session.RequestConfirm:
		switch word {
		case session.DecisionDone, session.DecisionFailed, session.DecisionRetry:
			return agentrt.Resolution{Decision: word}, nil
		}
		return bad("reply done, failed or retry")
	case session.RequestClientTool:
		return bad("end the conversation with a tool message whose tool_call_id is " + q.Calls[0].ID)
	}
	return bad("answer it through POST /v1/sessions/{id}/requests/{rid}")
}

// question is how request q reads as the assistant's text.
func question(q *session.InputRequired) string {
	switch q.Kind {
	case session.RequestSelect:
		return q.Question + "\nOptions: " + strings.Join(q.Options, ", ")
	case session.RequestApproval:
		return q.Question + "\nReply approve or reject."
	case session.RequestConfirm:
		return q.Question + "\nReply done, failed or retry."
	}
	return q.Question
}

// outcome is what a turn came to, read from its events.
type outcome struct {
	runID    string
	status   session.Status
	reason   string
	usage    model.Usage
	final    string
	hasFinal bool
	requests []session.InputRequired
	err      *session.Error
	// interrupt is the reason of the turn's last interrupted event.
	interrupt string
}

// see records ev in o.
func (o *outcome) see(ev *session.Event) {
	switch d := ev.Data.(type) {
	case *session.RunStarted:
		if o.runID == "" {
			o.runID = ev.RunID
		}
	case *session.Final:
		o.final, o.hasFinal = d.Text, true
	case *session.InputRequired:
		o.requests = append(o.requests, *d)
	case *session.Error:
		if !d.Recoverable || d.Model == "" {
			o.err = d
		}
	case *session.Interrupted:
		o.interrupt = d.Reason
	case *session.RunFinished:
		o.status, o.reason = d.Status, d.Reason
		o.usage.Add(d.Usage)
	}
	if o.runID == "" && ev.RunID != "" {
		o.runID = ev.RunID
	}
}

// failure is the error a turn that failed or was canceled answers with.
func (o *outcome) failure() *Error {
	switch o.status {
	case session.StatusFailed:
		code, msg := agentrt.CodeInternal, "the agent's run failed"
		if o.err != nil {
			code, msg = o.err.Code, "the agent's run failed: "+o.err.Message
		}
		return apiError(http.StatusInternalServerError, code, "", "%s", msg)
	case session.StatusCanceled:
		return apiError(http.StatusConflict, "canceled", "", "the agent's run was canceled%s", suffix(o.reason))
	case session.StatusInterrupted:
		// A person's interrupt (or another source's input) ended the
		// turn: it does not restart (one newer input restarts ends in
		// another of its runs).
		return apiError(http.StatusConflict, agentrt.CodeInterrupted, "", "the agent's run was interrupted%s", suffix(o.interrupt))
	}
	return nil
}

func suffix(reason string) string {
	if reason == "" {
		return ""
	}
	return ": " + reason
}

// finishReason is OpenAI's finish_reason of a turn that did not fail.
func (o *outcome) finishReason() string {
	if o.status == session.StatusPaused {
		return "length" // stopped at a limit; resume continues it
	}
	if len(o.clientCalls()) > 0 {
		return "tool_calls" // the client runs them and sends their results
	}
	return "stop"
}

// answer is the assistant's text of the turn: its final answer, or the
// questions of the requests it waits for.
func (o *outcome) answer() string {
	if o.status == session.StatusWaiting && len(o.requests) > 0 {
		var qs []string
		for i := range o.requests {
			if o.requests[i].Kind != session.RequestClientTool { // those are tool_calls
				qs = append(qs, question(&o.requests[i]))
			}
		}
		return strings.Join(qs, "\n\n")
	}
	return o.final
}

// Extension is agentrt's own field of an answer ("agentrt"): the
// session, the turn's status, and the requests it waits for.
type Extension struct {
	SessionID string                  `json:"session_id"`
	RunID     string                  `json:"run_id,omitempty"`
	Status    session.Status          `json:"status"`
	Requests  []session.InputRequired `json:"requests,omitempty"`
}

func (o *outcome) extension(id string) *Extension {
	return &Extension{SessionID: id, RunID: o.runID, Status: o.status, Requests: o.requests}
}
