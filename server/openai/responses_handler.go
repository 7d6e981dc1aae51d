package openai

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/server"
	"github.com/agentrt/agentrt/session"
)

// createResponse serves POST /v1/responses: the input goes to a new
// session of the agent named by model, or to the session of
// previous_response_id; function_call_output items answer the calls a
// response handed to the client. The answer is the response when the
// turn ends, its stream (stream: true), or at once with status queued
// (background: true), the turn going on without the connection.
func (a *Adapter) createResponse(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	req, in, err := decodeResponseRequest(r)
	if err != nil {
		writeError(w, err)
		return
	}
	ag, ok := a.r.Agent(req.Model)
	if !ok {
		writeError(w, modelNotFound(req.Model))
		return
	}
	tools, err := responseTools(ag, req.Tools)
	if err != nil {
		writeError(w, err)
		return
	}
	var prev *responseRef
	var ss *session.Session
	if req.PreviousResponseID != "" {
		ref, err := parseResponseID(req.PreviousResponseID, "previous_response_id")
		if err != nil {
			writeError(w, err)
			return
		}
		if ss, err = a.r.Store().GetSession(ctx, ref.session); err != nil {
			writeError(w, responseNotFound(req.PreviousResponseID, "previous_response_id", err))
			return
		}
		prev = &ref
	}
	x, err := a.beginResponse(ctx, ss, req, in, tools)
	if err != nil {
		e := toAPIError(err)
		if e.Param != nil && *e.Param == "model" && req.PreviousResponseID != "" {
			e.Message = "previous_response_id " + req.PreviousResponseID + " is a response of another agent: " + e.Message
		}
		writeError(w, e)
		return
	}
	defer x.close()
	w.Header().Set(SessionHeader, x.session)
	ref := responseRef{session: x.session, after: x.after, input: x.input, inbox: x.inbox, background: req.Background}
	if x.input == "" {
		// No input keeps the previous response's id: this one does.
		ref.prev = prev
	}
	rd := a.newRenderer(ref, ref.id(), req.Model, req.PreviousResponseID)
	// The turn was followed from before it began: every token is seen.
	rd.horizon = x.after
	switch {
	case req.Stream:
		a.streamResponse(w, r, rd, x.events)
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

// beginResponse starts the turn a request makes: the results of the
// client's function calls continue the run that waits for them; other
// input goes to the session of the previous response (ss), or to a new
// one.
func (a *Adapter) beginResponse(ctx context.Context, ss *session.Session, req *ResponseRequest, in *responseInput, tools []model.ToolSpec) (*exchange, error) {
	var id string
	if ss != nil {
		id = ss.ID
	}
	if in.results != nil {
		return a.answerFunctionCalls(ctx, id, req.Model, in)
	}
	if id != "" {
		if ss.Status == session.StatusWaiting {
			if err := a.notWaitingForCalls(ctx, id, req.PreviousResponseID); err != nil {
				return nil, err
			}
		}
		in.conv.metadata = map[string]string{prevKey: req.PreviousResponseID}
	}
	x, err := a.begin(ctx, id, req.Model, in.conv, tools)
	if err != nil {
		return nil, inputParam(err, in.conv.at)
	}
	return x, nil
}

// notWaitingForCalls refuses new input to a session whose run waits for
// the outputs of the client's function calls: they come first.
func (a *Adapter) notWaitingForCalls(ctx context.Context, id, prev string) error {
	calls, err := a.waitingCalls(ctx, id)
	if err != nil {
		return err
	}
	if len(calls) > 0 {
		ids := make([]string, len(calls))
		for i, c := range calls {
			ids[i] = c.ID
		}
		return badRequest("input", "the run of response %s waits for the output of function calls %s: send function_call_output items with those call_ids",
			prev, strings.Join(ids, ", "))
	}
	return nil
}

// readResponse is the renderer of response id (ref), of session ss, as
// the log has it: its parameters are those it was created with.
func (a *Adapter) readResponse(ctx context.Context, id string, ref responseRef, ss *session.Session) (*renderer, error) {
	prev, err := a.previousOf(ctx, ref)
	if err != nil {
		return nil, err
	}
	return a.newRenderer(ref, id, ss.Agent, prev), nil
}

// previousOf is the previous_response_id response ref was created with:
// in its id for a turn that answered a waiting run, else with its input.
func (a *Adapter) previousOf(ctx context.Context, ref responseRef) (string, error) {
	if ref.prev != nil {
		return ref.prev.id(), nil
	}
	ib, ok := a.r.Store().(session.Inbox)
	if ref.input == "" || ref.inbox == 0 || !ok {
		return "", nil
	}
	ins, err := ib.Inputs(ctx, ref.session, ref.inbox-1, 1)
	if err != nil {
		return "", err
	}
	if len(ins) == 0 || ins[0].ID != ref.input {
		return "", nil
	}
	return ins[0].Metadata[prevKey], nil
}

// getResponse serves GET /v1/responses/{id}: the response as the log has
// it, or (stream=true) its stream, from the start or after the event
// numbered starting_after, followed to the turn's end.
func (a *Adapter) getResponse(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	id := r.PathValue("id")
	ref, ss, err := a.lookupResponse(ctx, id)
	if err != nil {
		writeError(w, err)
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
	rd, err := a.readResponse(ctx, id, ref, ss)
	if err != nil {
		writeError(w, err)
		return
	}
	w.Header().Set(SessionHeader, ref.session)
	if !stream {
		if err := a.replay(ctx, rd); err != nil {
			writeError(w, err)
			return
		}
		writeJSON(w, http.StatusOK, rd.response())
		return
	}
	rd.from = startingAfter
	var t *server.Turn
	if sub := ref.submitted(); sub != nil {
		t, err = a.srv.FollowInput(ctx, sub, ref.after)
	} else {
		t, err = a.srv.FollowSession(ctx, ref.session, ref.after)
	}
	if err != nil {
		writeError(w, err)
		return
	}
	defer t.Close()
	// The session is watched: the tokens of a model call that began
	// before now may have gone by, and those calls' texts come from the
	// log.
	rd.horizon = math.MaxInt64
	if now, err := a.r.Store().GetSession(ctx, ref.session); err == nil {
		rd.horizon = now.LastSeq
	}
	// The headers go now (if nothing went before them): a client that
	// resumes after a number and has them knows that the stream follows
	// the turn, before its first event.
	_ = http.NewResponseController(w).Flush()
	a.streamResponse(w, r, rd, t.Events())
}

// lookupResponse parses response id and finds its session, in the key's
// tenant: another tenant's response is not found.
func (a *Adapter) lookupResponse(ctx context.Context, id string) (responseRef, *session.Session, error) {
	ref, err := parseResponseID(id, "")
	if err != nil {
		return ref, nil, err
	}
	ss, err := a.r.Store().GetSession(ctx, ref.session)
	if err != nil {
		return ref, nil, responseNotFound(id, "", err)
	}
	return ref, ss, nil
}

// replay renders the response's events as the log has them now, and,
// if the log has not ended its turn, what the gateway says of it (its
// input refused, say, which the log does not show).
func (a *Adapter) replay(ctx context.Context, rd *renderer) error {
	for ev, err := range a.r.Store().Events(ctx, rd.ref.session, rd.ref.after) {
		if err != nil {
			return err
		}
		if rd.see(ev); rd.ended {
			return nil
		}
	}
	a.settle(ctx, rd)
	return nil
}

// settle ends rd as the gateway says its turn ended, when the log it has
// read does not (its input refused, its restart set aside).
func (a *Adapter) settle(ctx context.Context, rd *renderer) {
	if sub := rd.ref.submitted(); sub != nil && !rd.ended {
		if o := a.srv.Gateway().Ended(ctx, sub, rd.track); o != nil {
			rd.settle(o)
		}
	}
}

// streamResponse streams the response's events, as they are rendered
// from events, to the turn's end. An error that ends events ends the
// stream with an "error" event.
func (a *Adapter) streamResponse(w http.ResponseWriter, r *http.Request, rd *renderer, events iter.Seq2[*session.Event, error]) {
	s := newSSE(w)
	ka := a.srv.KeepAlive(w)
	defer ka.Stop()
	s.ka = ka
	send := func(evs []StreamEvent) bool { return len(evs) == 0 || s.events(evs) == nil }
	if !send(rd.start()) {
		return
	}
	for ev, err := range events {
		if err != nil {
			e := toAPIError(err)
			_ = s.event("error", StreamEvent{Type: "error", SequenceNumber: rd.last + 1, Code: e.Code, Message: e.Message, Param: e.Param})
			return
		}
		if !send(rd.see(ev)) || rd.ended {
			return
		}
	}
}

// events sends evs, named by their types, in one write: the events an
// event of the log makes (a message's done events and the response's
// last) go to the client together.
func (s *sse) events(evs []StreamEvent) error {
	s.buf = s.buf[:0]
	for i := range evs {
		b, err := json.Marshal(&evs[i])
		if err != nil {
			return err
		}
		s.buf = append(append(append(append(append(s.buf, "event: "...), evs[i].Type...), "\ndata: "...), b...), "\n\n"...)
	}
	return s.send()
}

// cancelResponse serves POST /v1/responses/{id}/cancel: the run of the
// response's turn is canceled (Runner.CancelRun, naming the run read as
// the turn's), wherever it runs, and the answer is the response,
// cancelled. When that run ended between the reading and the cancel, the
// session's next run, which may be running by then, is not touched: the
// response is read again, and if its turn went on in
// another run (restarted after an interruption), that run is the one
// canceled. A response whose run has not started yet (its input waits
// behind the session's run) is canceled once it starts; one that has
// ended cannot be, except that cancelling a cancelled response answers
// it again.
//
// A run answers every input merged into its turn: under the interrupt
// policy, a response created on a session while another of its turns
// runs restarts that turn, and the new run answers both (docs/protocols.md,
// Responses): cancelling either cancels that run, and both responses end
// cancelled.
func (a *Adapter) cancelResponse(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	id := r.PathValue("id")
	ref, ss, err := a.lookupResponse(ctx, id)
	if err != nil {
		writeError(w, err)
		return
	}
	var rd *renderer
	for tries := 0; ; tries++ {
		if rd, err = a.readResponse(ctx, id, ref, ss); err == nil {
			err = a.awaitStart(ctx, rd)
		}
		if err != nil {
			writeError(w, err)
			return
		}
		if rd.ended {
			break
		}
		_, err := a.r.CancelRun(ctx, ref.session, rd.run, "response "+id+" cancelled over the OpenAI API")
		if err == nil {
			break
		}
		if agentrt.AsError(err).Code != agentrt.CodeNotRunning || tries == maxCancelTries-1 {
			writeError(w, err)
			return
		}
		// The run read has ended since: how the turn goes on (or ended)
		// is read again.
	}
	// The response as the log has it now: cancelled, or what the run came
	// to first.
	if rd, err = a.readResponse(ctx, id, ref, ss); err == nil {
		err = a.replay(ctx, rd)
	}
	if err != nil {
		writeError(w, err)
		return
	}
	if st := rd.status(); st != "cancelled" {
		writeError(w, apiError(http.StatusConflict, agentrt.CodeNotRunning, "",
			"response %s is %s: only a queued or in-progress response can be cancelled", id, st))
		return
	}
	writeJSON(w, http.StatusOK, rd.response())
}

// maxCancelTries bounds how often a cancel reads the response's run
// again after the run it named ended first: a turn that restarts again
// and again under cancels is answered with not_running.
const maxCancelTries = 5

// awaitStart renders the response's events from the log (and what the
// gateway says of a turn the log has not ended), and, if its run has not
// started, follows its turn until it has, or has ended without (its
// input refused), or ctx ends.
func (a *Adapter) awaitStart(ctx context.Context, rd *renderer) error {
	last := rd.ref.after
	for ev, err := range a.r.Store().Events(ctx, rd.ref.session, rd.ref.after) {
		if err != nil {
			return err
		}
		last = ev.Seq
		if rd.see(ev); rd.ended {
			return nil
		}
	}
	if a.settle(ctx, rd); rd.matched || rd.ended {
		return nil
	}
	var t *server.Turn
	var err error
	sub := rd.ref.submitted()
	if sub != nil {
		t, err = a.srv.FollowInput(ctx, sub, last)
	} else {
		t, err = a.srv.FollowSession(ctx, rd.ref.session, last)
	}
	if err != nil {
		return err
	}
	defer t.Close()
	for ev, err := range t.Events() {
		if err != nil {
			break
		}
		if rd.see(ev); rd.matched || rd.ended {
			return nil
		}
	}
	if o, ok := t.Outcome(); ok && o.Err() != nil {
		// The turn ended before a run of it: the gateway says how.
		rd.settle(&o)
		return nil
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return &agentrt.Error{Kind: agentrt.FailInternal, Msg: "the response's turn ended before its run started"}
}

// deleteResponse serves DELETE /v1/responses/{id}. A response is a turn
// of a session, whose log keeps every turn: the response is deleted with
// its session, when the session holds that turn only (a response created
// without previous_response_id, and not continued since). A response that
// shares its session with others is not deleted (409 not_deletable):
// deleting the session (DELETE /v1/sessions/{id}) forgets them all.
func (a *Adapter) deleteResponse(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	id := r.PathValue("id")
	ref, _, err := a.lookupResponse(ctx, id)
	if err != nil {
		writeError(w, err)
		return
	}
	if err := a.soleTurn(ctx, id, ref); err != nil {
		writeError(w, err)
		return
	}
	if err := a.r.DeleteSession(ctx, ref.session, false); err != nil {
		e := toAPIError(err)
		if e.Status == http.StatusConflict {
			e.Message = "response " + id + " cannot be deleted now: " + e.Message + " (cancel it first: POST /v1/responses/" + id + "/cancel)"
		}
		writeError(w, e)
		return
	}
	writeJSON(w, http.StatusOK, DeletedResponse{ID: id, Object: "response.deleted", Deleted: true})
}

// soleTurn checks that response ref is the only turn of its session:
// every run the log has answers its input, no answer to a waiting run
// made another turn, and no other input waits for a turn.
func (a *Adapter) soleTurn(ctx context.Context, id string, ref responseRef) error {
	shared := func(why string) error {
		return apiError(http.StatusConflict, agentrt.CodeNotDeletable, "",
			"response %s is not the only turn of session %s (%s): a response is not deleted alone; DELETE /v1/sessions/%s deletes the session and every response of it",
			id, ref.session, why, ref.session)
	}
	if ref.input == "" {
		return shared("it answered a waiting run")
	}
	started := false
	for ev, err := range a.r.Store().Events(ctx, ref.session, 0) {
		if err != nil {
			return err
		}
		switch d := ev.Data.(type) {
		case *session.RunStarted:
			if !slices.Contains(d.Inputs, ref.input) {
				return shared("another input has a turn")
			}
			started = true
		case *session.InputResolved:
			return shared("an answer to its run made another turn")
		}
	}
	if !started {
		return apiError(http.StatusConflict, agentrt.CodeNotRunning, "",
			"response %s has not started yet: cancel it once it runs, or delete it then", id)
	}
	if ib, ok := a.r.Store().(session.Inbox); ok {
		pending, err := ib.PendingOf(ctx, ref.session)
		if err != nil {
			return err
		}
		if pending.Pending > 0 {
			return shared(fmt.Sprintf("%d more input waits for a turn", pending.Pending))
		}
	}
	return nil
}

func responseNotFound(id, param string, err error) error {
	e := toAPIError(err)
	if errors.Is(err, session.ErrNotFound) || e.Status == http.StatusNotFound {
		return apiError(http.StatusNotFound, "not_found", param, "response %q not found", id)
	}
	return e
}
