// Package agui serves agentrt's agents over AG-UI, the Agent User
// Interaction protocol CopilotKit and other front ends speak:
// POST /v1/agui/{agent} takes a RunAgentInput and answers with the run as
// server-sent AG-UI events.
//
// A thread is a session (threadId is the session id; a new one is
// created for the agent). The user messages at the end of the input's
// messages are the turn's input, submitted through the server's gateway;
// the rest of the messages are the client's copy of the conversation,
// which the session's log holds already. An input with no new user
// message reconnects to the thread: MESSAGES_SNAPSHOT from the log, then
// the run in progress, if one is. A run that waits for a person ends
// RUN_FINISHED with an interrupt outcome, one interrupt per request; the
// next input's resume entries answer them and the run goes on in that
// input's stream. The input's tools are frontend tools, run by the
// client: a run that calls one ends RUN_FINISHED with the call pending
// (pendingToolCallIds), and the next input's trailing tool messages give
// the results and stream the run that goes on.
//
// Everything a stream opens (a text message, tool calls, steps) is
// closed before its one terminal event, however the run ends.
package agui

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/gateway"
	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/server"
	"github.com/agentrt/agentrt/session"
)

// Mount adds POST /v1/agui/{agent} to srv.
func Mount(srv *server.Server) error {
	if srv == nil {
		return errors.New("agui: a server is required")
	}
	h := &handler{srv: srv, r: srv.Runner()}
	srv.Mount(http.MethodPost, "/v1/agui/{agent}", true, http.HandlerFunc(h.serve))
	return nil
}

type handler struct {
	srv *server.Server
	r   *agentrt.Runner
}

// RunAgentInput is the body of a run (the AG-UI type of that name). Fields
// this adapter does not read are accepted and ignored.
type RunAgentInput struct {
	ThreadID       string            `json:"threadId"`
	RunID          string            `json:"runId"`
	ParentRunID    string            `json:"parentRunId,omitempty"`
	State          json.RawMessage   `json:"state,omitempty"`
	Messages       []InputMessage    `json:"messages"`
	Tools          []json.RawMessage `json:"tools,omitempty"`
	Context        []ContextItem     `json:"context,omitempty"`
	ForwardedProps json.RawMessage   `json:"forwardedProps,omitempty"`
	Resume         []ResumeEntry     `json:"resume,omitempty"`
}

// InputMessage is a message of a RunAgentInput.
type InputMessage struct {
	ID      string          `json:"id"`
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content,omitempty"`
	// ToolCallID and Error are a tool message's: the call it answers and,
	// when the tool failed, why.
	ToolCallID string `json:"toolCallId,omitempty"`
	Error      string `json:"error,omitempty"`
}

// ContextItem is a piece of context the front end gives the agent.
type ContextItem struct {
	Description string `json:"description"`
	Value       string `json:"value"`
}

// ResumeEntry answers an interrupt: its id is the human request's.
type ResumeEntry struct {
	InterruptID string          `json:"interruptId"`
	Status      string          `json:"status"` // resolved or cancelled
	Payload     json.RawMessage `json:"payload,omitempty"`
}

func (h *handler) serve(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	agent := r.PathValue("agent")
	ag, ok := h.r.Agent(agent)
	if !ok {
		h.srv.WriteError(w, r, &agentrt.Error{Kind: agentrt.FailInput, Code: agentrt.CodeUnknownAgent,
			Msg: fmt.Sprintf("no agent %q (GET /v1/agents lists them)", agent)})
		return
	}
	var in RunAgentInput
	if err := decodeInput(r, &in); err != nil {
		h.srv.WriteError(w, r, err)
		return
	}
	text, media, err := newInput(in.Messages)
	if err == nil {
		err = in.check()
	}
	var tools []model.ToolSpec
	if err == nil {
		tools, err = frontendTools(in.Tools, ag.ToolSpecs())
	}
	var results map[string]toolAnswer
	if err == nil && len(in.Resume) == 0 {
		results, err = toolResults(in.Messages)
	}
	// The new input's files are read before the thread's session is
	// made: a file refused leaves nothing behind.
	var files []gateway.File
	if err == nil && len(in.Resume) == 0 && results == nil {
		files, err = h.files(ctx, media)
	}
	if err != nil {
		h.srv.WriteError(w, r, err)
		return
	}
	ss, err := h.thread(ctx, agent, in.ThreadID)
	if err != nil {
		h.srv.WriteError(w, r, err)
		return
	}
	st := &stream{srv: h.srv, w: w, rc: http.NewResponseController(w), t: newTranslator(in.ThreadID, in.RunID)}
	defer st.close()
	switch {
	case len(in.Resume) > 0:
		h.resume(ctx, st, ss, in, r)
	case results != nil:
		h.answer(ctx, st, ss, results, r)
	case text != "" || len(files) > 0:
		h.turn(ctx, st, ss, in, text, files, tools, r)
	default:
		h.reconnect(ctx, st, ss, r)
	}
}

// decodeInput reads the body, a RunAgentInput; fields this adapter does
// not know are allowed (AG-UI clients send more than it reads).
func decodeInput(r *http.Request, in *RunAgentInput) error {
	b, err := io.ReadAll(r.Body)
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return &agentrt.Error{Kind: agentrt.FailInput, Code: agentrt.CodeBodyTooLarge,
				Msg: fmt.Sprintf("the request's body is over %d bytes", mbe.Limit)}
		}
		return badRequest("the request's body could not be read: %v", err)
	}
	if len(bytes.TrimSpace(b)) == 0 {
		return badRequest("the request needs a body: a RunAgentInput")
	}
	_, err = server.DecodeJSON(b, in, false)
	return err
}

func (in *RunAgentInput) check() error {
	if in.ThreadID == "" || in.RunID == "" {
		return badRequest("threadId and runId are required")
	}
	if err := session.CheckID(in.ThreadID); err != nil {
		return &agentrt.Error{Kind: agentrt.FailInput, Code: agentrt.CodeBadSessionID, Msg: "threadId: " + err.Error()}
	}
	for _, e := range in.Resume {
		if e.InterruptID == "" {
			return badRequest("resume: an entry without an interruptId")
		}
		if e.Status != "resolved" && e.Status != "cancelled" {
			return badRequest("resume %s: status %q; want resolved or cancelled", e.InterruptID, e.Status)
		}
	}
	return nil
}

func badRequest(format string, args ...any) error {
	return &agentrt.Error{Kind: agentrt.FailInput, Code: agentrt.CodeMalformedRequest, Msg: fmt.Sprintf(format, args...)}
}

// newInput is the turn's input: the text of the user messages that end
// the conversation (after its last message of another role), joined by a
// blank line, and their images, audio, video and documents; "" and none
// when it does not end with a user message.
func newInput(msgs []InputMessage) (string, []server.MediaRef, error) {
	i := len(msgs)
	for i > 0 && msgs[i-1].Role == "user" {
		i--
	}
	var texts []string
	var media []server.MediaRef
	for _, m := range msgs[i:] {
		s, mm, err := messageContent(m)
		if err != nil {
			return "", nil, err
		}
		if strings.TrimSpace(s) != "" {
			texts = append(texts, s)
		}
		media = append(media, mm...)
	}
	return strings.Join(texts, "\n\n"), media, nil
}

// contentPart is a part of a user message's content (AG-UI's
// ContentPart): text, or an image, audio, video or document whose source
// is its bytes (data: base64 value and mimeType), a URL the server
// fetches (url), or a provider's file handle (file), which this server
// cannot resolve.
type contentPart struct {
	Type   string `json:"type"`
	Text   string `json:"text"`
	Source *struct {
		Type     string `json:"type"`
		Value    string `json:"value"`
		MimeType string `json:"mimeType"`
	} `json:"source"`
}

// mediaKinds are the media parts, by type, with the kind of media type
// each takes ("": any).
var mediaKinds = map[string]string{"image": "image", "audio": "audio", "video": "video", "document": ""}

// messageContent is a user message's text — its content as a string, or
// its text parts — and its media parts, to be read by the server.
func messageContent(m InputMessage) (string, []server.MediaRef, error) {
	if len(m.Content) == 0 {
		return "", nil, nil
	}
	var s string
	if err := json.Unmarshal(m.Content, &s); err == nil {
		return s, nil, nil
	}
	var parts []contentPart
	if err := json.Unmarshal(m.Content, &parts); err != nil {
		return "", nil, badRequest("message %s: content is neither a string nor a list of parts", m.ID)
	}
	var b strings.Builder
	var media []server.MediaRef
	for j, p := range parts {
		where := fmt.Sprintf("message %s content[%d]", m.ID, j)
		if p.Type == "text" {
			b.WriteString(p.Text)
			continue
		}
		kind, ok := mediaKinds[p.Type]
		if !ok {
			return "", nil, badRequest("%s: a %q part; this endpoint takes text, image, audio, video and document parts", where, p.Type)
		}
		ref := server.MediaRef{Where: where, Kind: kind}
		switch src := p.Source; {
		case src == nil:
			return "", nil, badRequest("%s: a %s part needs a source", where, p.Type)
		case src.Type == "data":
			ref.Base64, ref.Type = src.Value, src.MimeType
		case src.Type == "url":
			ref.URL, ref.Type = src.Value, src.MimeType
		case src.Type == "file":
			return "", nil, badRequest("%s: a file source is a handle only its provider can resolve, and this server is none: send the bytes (a data source) or a url", where)
		default:
			return "", nil, badRequest("%s: source type %q; want data or url", where, src.Type)
		}
		if ref.Base64 == "" && ref.URL == "" {
			return "", nil, badRequest("%s: the %s part's source has no value", where, p.Type)
		}
		media = append(media, ref)
	}
	return b.String(), media, nil
}

// files reads the input's media parts (decoded, or fetched).
func (h *handler) files(ctx context.Context, media []server.MediaRef) ([]gateway.File, error) {
	files, _, err := h.srv.ClientFiles(ctx, media)
	return files, err
}

// thread is the session of threadID, created for agent when new. A thread
// of another agent is refused.
func (h *handler) thread(ctx context.Context, agent, id string) (*session.Session, error) {
	store := h.r.Store()
	ss, err := store.GetSession(ctx, id)
	if errors.Is(err, session.ErrNotFound) {
		_, err = h.r.CreateSession(ctx, agent, id, map[string]string{"protocol": "agui"})
		if err != nil && agentrt.AsError(err).ErrorCode() != agentrt.CodeSessionExists {
			return nil, err
		}
		ss, err = store.GetSession(ctx, id)
	}
	if err != nil {
		return nil, &agentrt.Error{Kind: agentrt.FailStore, Msg: "read the thread's session", Err: err}
	}
	if ss.Agent != agent {
		return nil, &agentrt.Error{Kind: agentrt.FailInput, Code: agentrt.CodeSessionExists,
			Msg: fmt.Sprintf("thread %s is a session of agent %q, not %q", id, ss.Agent, agent)}
	}
	return ss, nil
}

// turn submits the new input and streams the turn that answers it.
func (h *handler) turn(ctx context.Context, st *stream, ss *session.Session, in RunAgentInput, text string, files []gateway.File, tools []model.ToolSpec, r *http.Request) {
	gin := gateway.Input{Source: ss.ID, Session: ss.ID, Agent: ss.Agent, Text: text, Parts: extraParts(in), Files: files, ClientTools: tools}
	if n := len(in.Messages); n > 0 && in.Messages[n-1].ID != "" {
		// The same message sent again (a retry after a dropped stream)
		// is the same input, and its stream the same run.
		gin.Key = "agui:" + in.Messages[n-1].ID
	}
	tr, err := h.srv.SubmitTurn(ctx, gin)
	if err != nil {
		h.srv.WriteError(st.w, r, err)
		return
	}
	defer tr.Close()
	st.open(ss, nil)
	var fail *failure
	for ev, err := range tr.Events() {
		if err != nil {
			fail = failureOf(err)
			break
		}
		if !st.send(st.t.event(ev)...) {
			return
		}
	}
	if ctx.Err() != nil {
		return // the client went away; the turn goes on
	}
	h.end(ctx, st, ss.ID, fail)
}

// extraParts carries the input's context and state to the model, as a
// data part after the text.
func extraParts(in RunAgentInput) []session.InputPart {
	data := map[string]any{}
	if len(in.Context) > 0 {
		data["context"] = in.Context
	}
	if s := strings.TrimSpace(string(in.State)); s != "" && s != "null" && s != "{}" {
		data["state"] = in.State
	}
	if len(data) == 0 {
		return nil
	}
	b, _ := json.Marshal(data)
	return []session.InputPart{{Type: "data", Data: b}}
}

// end sends the run's terminal event.
func (h *handler) end(ctx context.Context, st *stream, id string, fail *failure) {
	var w waits
	if fail == nil && st.t.status == session.StatusWaiting {
		var err error
		if w, err = h.waits(ctx, id); err != nil {
			fail = failureOf(err)
		}
	}
	st.send(st.t.finish(fail, w)...)
}

// waits is what a waiting run waits for: a person's answers, as
// interrupts, and the results of frontend calls, by call id.
type waits struct {
	interrupts []Interrupt
	calls      []string
}

// waits reads the session's pending requests: client_tool requests are
// the client's calls, the others interrupts.
func (h *handler) waits(ctx context.Context, id string) (waits, error) {
	page, err := h.r.PendingRequests(ctx, session.RequestListOptions{SessionID: id, Limit: agentrt.MaxRequestPage})
	if err != nil {
		return waits{}, err
	}
	var w waits
	for _, p := range page {
		if p.Request.Kind == session.RequestClientTool {
			for _, c := range p.Request.Calls {
				w.calls = append(w.calls, c.ID)
			}
			continue
		}
		w.interrupts = append(w.interrupts, interrupt(p.Request))
	}
	return w, nil
}

// resume answers the interrupts the input's resume entries name and
// streams the run that goes on.
func (h *handler) resume(ctx context.Context, st *stream, ss *session.Session, in RunAgentInput, r *http.Request) {
	pending, err := h.r.PendingRequests(ctx, session.RequestListOptions{SessionID: ss.ID, Limit: 500})
	if err != nil {
		h.srv.WriteError(st.w, r, err)
		return
	}
	kinds := map[string]session.InputRequired{}
	for _, p := range pending {
		kinds[p.Request.RequestID] = p.Request
	}
	res := make([]agentrt.Resolution, len(in.Resume))
	for i, e := range in.Resume {
		q, ok := kinds[e.InterruptID]
		if !ok {
			h.srv.WriteError(st.w, r, &agentrt.Error{Kind: agentrt.FailInput, Code: agentrt.CodeUnknownRequest,
				Msg: fmt.Sprintf("resume: interrupt %s is not pending in thread %s", e.InterruptID, ss.ID)})
			return
		}
		if res[i], err = resolution(q, e); err != nil {
			h.srv.WriteError(st.w, r, err)
			return
		}
		res[i].By = agentrt.ActorOf(ctx)
	}
	// Follow the session from before the answers, subscribed to its
	// tokens, so that the run they continue is streamed whole.
	f, err := h.srv.FollowSession(ctx, ss.ID, ss.LastSeq)
	if err != nil {
		h.srv.WriteError(st.w, r, err)
		return
	}
	defer f.Close()
	continued := false
	for i, e := range in.Resume {
		out, err := h.r.ResolveAndContinue(ctx, ss.ID, e.InterruptID, res[i])
		if err != nil {
			h.srv.WriteError(st.w, r, err)
			return
		}
		continued = continued || out.Run != nil
	}
	st.open(ss, nil)
	if !continued {
		// Requests are still pending: the run still waits for them.
		st.t.status = session.StatusWaiting
		h.end(ctx, st, ss.ID, nil)
		return
	}
	if !h.pipe(ctx, st, f) {
		return
	}
	h.end(ctx, st, ss.ID, nil)
}

// resolution is the answer a resume entry gives request q. A payload is
// an object with the fields of POST /v1/sessions/{id}/requests/{rid}
// (decision, arguments, reason, text, selected, result), or for an
// approval {"approved": bool}; a plain string answers a prompt. A
// cancelled entry rejects an approval and fails a confirmation; a
// question cannot be cancelled (cancel the run instead).
func resolution(q session.InputRequired, e ResumeEntry) (agentrt.Resolution, error) {
	if e.Status == "cancelled" {
		switch q.Kind {
		case session.RequestApproval:
			return agentrt.Resolution{Decision: session.DecisionReject, Reason: "cancelled in the client"}, nil
		case session.RequestConfirm:
			return agentrt.Resolution{Decision: "failed", Reason: "cancelled in the client"}, nil
		}
		return agentrt.Resolution{}, badRequest("resume %s: a %s request cannot be cancelled; answer it, or cancel the run (POST /v1/sessions/{id}/cancel)", e.InterruptID, q.Kind)
	}
	var p struct {
		Decision  string          `json:"decision"`
		Approved  *bool           `json:"approved"`
		Arguments json.RawMessage `json:"arguments"`
		Reason    string          `json:"reason"`
		Text      string          `json:"text"`
		Selected  []string        `json:"selected"`
		Result    json.RawMessage `json:"result"`
	}
	var s string
	switch {
	case len(e.Payload) == 0 || string(e.Payload) == "null":
		if q.Kind != session.RequestApproval {
			return agentrt.Resolution{}, badRequest("resume %s: a %s request needs a payload", e.InterruptID, q.Kind)
		}
		p.Decision = session.DecisionApprove // resolved with nothing more: approved
	case json.Unmarshal(e.Payload, &s) == nil:
		p.Text = s
		if q.Kind == session.RequestApproval || q.Kind == session.RequestConfirm {
			p.Decision = s
		}
	default:
		if err := json.Unmarshal(e.Payload, &p); err != nil {
			return agentrt.Resolution{}, badRequest("resume %s: payload: %v", e.InterruptID, err)
		}
	}
	if p.Approved != nil && p.Decision == "" {
		p.Decision = session.DecisionReject
		if *p.Approved {
			p.Decision = session.DecisionApprove
		}
	}
	if q.Kind == session.RequestApproval && p.Decision == "" {
		if len(p.Arguments) > 0 {
			p.Decision = session.DecisionEdit
		} else {
			return agentrt.Resolution{}, badRequest("resume %s: an approval's payload needs decision (approve, reject, edit) or approved", e.InterruptID)
		}
	}
	return agentrt.Resolution{Decision: p.Decision, Arguments: p.Arguments, Reason: p.Reason, Text: p.Text,
		Selected: p.Selected, Result: p.Result}, nil
}

// reconnect gives a client the thread as the log holds it, then follows
// the run in progress to its end, if one is; a thread whose run has
// ended ends this one as that run did (its answer as the result, its
// failure's code), and a thread that has not run yet ends it finished.
func (h *handler) reconnect(ctx context.Context, st *stream, ss *session.Session, r *http.Request) {
	msgs, last, err := history(ctx, h.r.Store(), ss.ID)
	if err != nil {
		h.srv.WriteError(st.w, r, err)
		return
	}
	var f *server.Turn
	if ss.Status == session.StatusRunning {
		if f, err = h.srv.FollowSession(ctx, ss.ID, ss.LastSeq); err != nil {
			h.srv.WriteError(st.w, r, err)
			return
		}
		defer f.Close()
	} else {
		st.t.finalRes, st.t.reason = last.final, last.reason
		st.t.errCode, st.t.errMsg = last.errCode, last.errMsg
	}
	st.open(ss, msgs)
	st.t.status = ss.Status
	if f != nil && !h.pipe(ctx, st, f) {
		return
	}
	if st.t.status == session.StatusFailed && st.t.errMsg == "" {
		st.t.errMsg = "the thread's last run failed"
	}
	h.end(ctx, st, ss.ID, nil)
}

// pipe streams the turn f follows to its end (the gateway's: through
// the runs newer input restarts, to the end of the run that ends it). It
// reports false when the client went away.
func (h *handler) pipe(ctx context.Context, st *stream, f *server.Turn) bool {
	for ev, err := range f.Events() {
		if err != nil {
			st.send(st.t.finish(failureOf(err), waits{})...)
			return false
		}
		if !st.send(st.t.event(ev)...) {
			return false
		}
	}
	return ctx.Err() == nil
}
