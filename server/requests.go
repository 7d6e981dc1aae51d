package server

import (
	"net/http"
	"time"

	"github.com/agentrt/agentrt/session"
)

// PendingRequestInfo is a request waiting for a person, as a person's
// inbox lists it.
type PendingRequestInfo struct {
	SessionID string `json:"session_id"`
	Agent     string `json:"agent"`
	// Seq is the input_required event's; Asked its time, AgeSeconds how
	// long ago that is.
	Seq        int64     `json:"seq"`
	Asked      time.Time `json:"asked"`
	AgeSeconds float64   `json:"age_seconds"`
	// Request is what was asked: its id (the {rid} to answer it with),
	// kind, question, options, the calls it is about with their
	// arguments, when it expires.
	Request session.InputRequired `json:"request"`
}

// listRequests is a person's inbox: what waits for a person across the
// tenant's sessions, oldest first, from the store's index of pending
// requests. A sub-agent's request is listed twice: in the sub-agent's
// session, and in the session that delegated to it, as the request whose
// `child` names it — the one to answer (answering it answers both).
func (s *Server) listRequests(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if st := q.Get("status"); st != "" && st != "pending" {
		writeError(w, r, s.log, badRequest("status %q: the inbox lists pending requests (status=pending); answered ones are in their sessions' logs", st))
		return
	}
	limit, err := intParam(q.Get("limit"), "limit", 50, 1, 500)
	if err != nil {
		writeError(w, r, s.log, err)
		return
	}
	after, err := session.ParseRequestCursor(q.Get("after"))
	if err != nil {
		writeError(w, r, s.log, badRequest("after: %v", err))
		return
	}
	opt := session.RequestListOptions{Limit: limit, After: after, SessionID: q.Get("session"), Agent: q.Get("agent"),
		Kind: session.RequestKind(q.Get("kind"))}
	page, err := s.r.PendingRequests(r.Context(), opt)
	if err != nil {
		writeError(w, r, s.log, err)
		return
	}
	out := struct {
		Requests []PendingRequestInfo `json:"requests"`
		Next     string               `json:"next,omitempty"`
	}{Requests: []PendingRequestInfo{}}
	now := s.now()
	for _, p := range page {
		out.Requests = append(out.Requests, PendingRequestInfo{SessionID: p.SessionID, Agent: p.Agent, Seq: p.Seq, Asked: p.Asked,
			AgeSeconds: max(0, now.Sub(p.Asked).Seconds()), Request: p.Request})
	}
	if len(page) == limit {
		out.Next = page[len(page)-1].Cursor().String()
	}
	writeJSON(w, http.StatusOK, out)
}
