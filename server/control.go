package server

import (
	"encoding/json"
	"net/http"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/session"
)

// ResolveRequest is the body of POST /v1/sessions/{id}/requests/{rid}: a
// person's answer to a pending request. Who answered is the API key's
// principal.
type ResolveRequest struct {
	// Decision: approve, reject or edit an approval; done, failed or
	// retry a call in doubt; answer (or empty) for a prompt or a
	// selection.
	Decision string `json:"decision"`
	// Arguments replace the call's (edit, or approve with changes).
	Arguments json.RawMessage `json:"arguments,omitempty"`
	Reason    string          `json:"reason,omitempty"`
	// Text answers a prompt; Selected a selection.
	Text     string   `json:"text,omitempty"`
	Selected []string `json:"selected,omitempty"`
	// Result is a confirmed call's result.
	Result json.RawMessage `json:"result,omitempty"`
	// Always makes an approval stand for later calls.
	Always *AlwaysRequest `json:"always,omitempty"`
}

// AlwaysRequest makes an approval's decision stand (agentrt.Always).
type AlwaysRequest struct {
	Scope string `json:"scope,omitempty"` // session (default) or agent
	Match string `json:"match,omitempty"` // tool (default) or arguments
}

// ResolveResponse says what an answer did.
type ResolveResponse struct {
	Event *session.Event `json:"event"`
	// Pending counts the session's requests still waiting; the run goes
	// on once there are none, as RunID.
	Pending int    `json:"pending"`
	RunID   string `json:"run_id,omitempty"`
}

func (s *Server) resolve(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	id, rid := r.PathValue("id"), r.PathValue("rid")
	var req ResolveRequest
	if _, ok := s.sessionRequest(w, r, &req, false); !ok {
		return
	}
	res := agentrt.Resolution{Decision: req.Decision, Arguments: req.Arguments, Text: req.Text, Selected: req.Selected,
		Result: req.Result, Reason: req.Reason, By: agentrt.ActorOf(ctx)}
	if req.Always != nil {
		res.Always = &agentrt.Always{Scope: req.Always.Scope, Match: req.Always.Match}
	}
	out, err := s.r.ResolveAndContinue(ctx, id, rid, res)
	if err != nil {
		writeError(w, r, s.log, err)
		return
	}
	resp := ResolveResponse{Event: out.Event, Pending: out.Pending}
	if out.Run != nil {
		resp.RunID = out.Run.ID()
	}
	writeJSON(w, http.StatusOK, resp)
}

// ControlRequest is the body of cancel and interrupt.
type ControlRequest struct {
	Reason string `json:"reason,omitempty"`
}

// control cancels (or interrupts) a session's run wherever it runs; the
// request is recorded in the log with the key's principal.
func (s *Server) control(interrupt bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ctx := r.Context()
		id := r.PathValue("id")
		var req ControlRequest
		if _, ok := s.sessionRequest(w, r, &req, true); !ok {
			return
		}
		stop := s.r.Cancel
		if interrupt {
			stop = s.r.Interrupt
		}
		out, err := stop(ctx, id, req.Reason)
		if err != nil {
			writeError(w, r, s.log, err)
			return
		}
		writeJSON(w, http.StatusOK, out)
	}
}

// RunStarted is the answer to resume: the run that goes on.
type RunStarted struct {
	SessionID string `json:"session_id"`
	RunID     string `json:"run_id"`
}

func (s *Server) resume(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	id := r.PathValue("id")
	if _, ok := s.sessionRequest(w, r, &struct{}{}, true); !ok {
		return
	}
	// The run outlives the request: StartResume runs it in the
	// background, detached from ctx.
	h, err := s.r.StartResume(ctx, id)
	if err != nil {
		writeError(w, r, s.log, err)
		return
	}
	writeJSON(w, http.StatusAccepted, RunStarted{SessionID: id, RunID: h.ID()})
}

// ForkRequest is the body of fork.
type ForkRequest struct {
	AtSeq int64  `json:"at_seq"`
	ID    string `json:"id,omitempty"`
	// Model, when set, is a model of the config the fork's calls use
	// instead of the agent's (agentrt.ForkOptions.Model).
	Model string `json:"model,omitempty"`
}

func (s *Server) fork(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	id := r.PathValue("id")
	var req ForkRequest
	if err := decode(r, &req, s.cfg.Limits.MaxJSONDepth, false); err != nil {
		writeError(w, r, s.log, err)
		return
	}
	if req.ID != "" {
		if err := session.CheckID(req.ID); err != nil {
			writeError(w, r, s.log, &agentrt.Error{Kind: agentrt.FailInput, Code: agentrt.CodeBadSessionID, Msg: err.Error()})
			return
		}
	}
	ss, err := s.r.Fork(ctx, id, req.AtSeq, agentrt.ForkOptions{ID: req.ID, Model: req.Model})
	if err != nil {
		writeError(w, r, s.log, err)
		return
	}
	w.Header().Set("Location", "/v1/sessions/"+ss.ID)
	writeJSON(w, http.StatusCreated, sessionInfo(ss))
}

// sessionRequest reads the JSON body of a request on session {id} into
// body (an empty body is allowed when empty is true) and the session's
// row; on failure it answers the error and returns false.
func (s *Server) sessionRequest(w http.ResponseWriter, r *http.Request, body any, empty bool) (*session.Session, bool) {
	if err := decode(r, body, s.cfg.Limits.MaxJSONDepth, empty); err != nil {
		writeError(w, r, s.log, err)
		return nil, false
	}
	ss, err := s.getSessionRow(r.Context(), r.PathValue("id"))
	if err != nil {
		writeError(w, r, s.log, err)
		return nil, false
	}
	return ss, true
}
