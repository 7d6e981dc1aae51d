package openai

import (
	"errors"
	"iter"
	"net/http"
	"strconv"

	"github.com/agentrt/agentrt/session"
)

// createResponse serves POST /v1/responses: the input goes to a new
// session of the agent named by model, or to the session of
// previous_response_id; the answer is the response when the turn ends,
// its stream (stream: true), or at once with status queued (background:
// true), the turn going on without the connection.
func (a *Adapter) createResponse(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	req, conv, err := decodeResponseRequest(r)
	if err != nil {
		writeError(w, err)
		return
	}
	if _, ok := a.r.Agent(req.Model); !ok {
		writeError(w, modelNotFound(req.Model))
		return
	}
	var sessionID string
	if req.PreviousResponseID != "" {
		ref, err := parseResponseID(req.PreviousResponseID, "previous_response_id")
		if err != nil {
			writeError(w, err)
			return
		}
		if _, err := a.r.Store().GetSession(ctx, ref.session); err != nil {
			writeError(w, responseNotFound(req.PreviousResponseID, "previous_response_id", err))
			return
		}
		sessionID = ref.session
	}
	x, err := a.begin(ctx, sessionID, req.Model, conv, nil)
	if err != nil {
		if e := toAPIError(err); e.Param != nil && *e.Param == "model" && req.PreviousResponseID != "" {
			e.Message = "previous_response_id " + req.PreviousResponseID + " is a response of another agent: " + e.Message
		}
		writeError(w, err)
		return
	}
	defer x.close()
	w.Header().Set(SessionHeader, x.session)
	rd := a.newRenderer(responseRef{session: x.session, after: x.after, input: x.input}, req.Model, req.Background, req.PreviousResponseID)
	switch {
	case req.Stream:
		a.streamResponse(w, r, rd, x.events, -1)
	case req.Background:
		writeJSON(w, http.StatusOK, rd.response())
	default:
		for ev, err := range x.events {
			if err != nil {
				writeError(w, err)
				return
			}
			rd.see(ev)
		}
		if ctx.Err() != nil {
			return // the client went away; the turn goes on
		}
		writeJSON(w, http.StatusOK, rd.response())
	}
}

// getResponse serves GET /v1/responses/{id}: the response as the log has
// it, or (stream=true) its stream, from the start or after the event
// numbered starting_after, followed to the turn's end.
func (a *Adapter) getResponse(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	id := r.PathValue("id")
	ref, err := parseResponseID(id, "")
	if err != nil {
		writeError(w, err)
		return
	}
	// The store is the tenant's: another tenant's response is not found.
	ss, err := a.r.Store().GetSession(ctx, ref.session)
	if err != nil {
		writeError(w, responseNotFound(id, "", err))
		return
	}
	q := r.URL.Query()
	stream := false
	if v := q.Get("stream"); v != "" {
		if stream, err = strconv.ParseBool(v); err != nil {
			writeError(w, badRequest("stream", "stream is %q: want true or false", v))
			return
		}
	}
	if !stream && r.ContentLength != 0 {
		// openai-go's GetStreaming sends stream in a JSON body, not the query.
		var body struct {
			Stream bool `json:"stream"`
		}
		if err := decodeJSON(r, &body); err != nil {
			writeError(w, err)
			return
		}
		stream = body.Stream
	}
	startingAfter := int64(-1)
	if v := q.Get("starting_after"); v != "" {
		if startingAfter, err = strconv.ParseInt(v, 10, 64); err != nil || startingAfter < 0 {
			writeError(w, badRequest("starting_after", "starting_after is %q: want a sequence number (0 or more)", v))
			return
		}
		if !stream {
			writeError(w, badRequest("starting_after", "starting_after resumes a stream: add stream=true"))
			return
		}
	}
	rd := a.newRenderer(ref, ss.Agent, false, "")
	if stream {
		w.Header().Set(SessionHeader, ref.session)
		a.streamResponse(w, r, rd, a.r.Watch(ctx, ref.session, ref.after), startingAfter)
		return
	}
	for ev, err := range a.r.Store().Events(ctx, ref.session, ref.after) {
		if err != nil {
			writeError(w, err)
			return
		}
		if rd.see(ev); rd.ended {
			break
		}
	}
	w.Header().Set(SessionHeader, ref.session)
	writeJSON(w, http.StatusOK, rd.response())
}

// streamResponse streams the response's events after the one numbered
// startingAfter (-1: all), as they are rendered from events, to the
// turn's end. An error that ends events ends the stream with an "error"
// event.
func (a *Adapter) streamResponse(w http.ResponseWriter, r *http.Request, rd *renderer, events iter.Seq2[*session.Event, error], startingAfter int64) {
	s := newSSE(w)
	send := func(evs []StreamEvent) bool {
		for _, e := range evs {
			if e.SequenceNumber <= startingAfter {
				continue
			}
			if s.event(e.Type, e) != nil {
				return false
			}
		}
		return true
	}
	if !send(rd.start()) {
		return
	}
	for ev, err := range events {
		if err != nil {
			e := toAPIError(err)
			_ = s.event("error", StreamEvent{Type: "error", SequenceNumber: rd.next, Code: e.Code, Message: e.Message, Param: e.Param})
			return
		}
		if !send(rd.see(ev)) || rd.ended {
			return
		}
	}
}

func responseNotFound(id, param string, err error) error {
	e := toAPIError(err)
	if errors.Is(err, session.ErrNotFound) || e.Status == http.StatusNotFound {
		return apiError(http.StatusNotFound, "not_found", param, "response %q not found", id)
	}
	return e
}
