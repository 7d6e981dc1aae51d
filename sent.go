package agentrt

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/session"
)

// SentRequest is what a model call of a session was sent: derived from the
// session's log, as the call built it — the state the events up to the
// call's model_started make (compaction, sanitising and the run's
// overrides included), its request (the agent's system prompt, the
// messages, the tools), and the provider's body for it when the model
// speaks a wire format (model.Encoder). Nothing is recorded for it: a
// session's state is the fold of its events, and the request a function of
// the state. TestSentRequestIsWhatTheServerGot compares it, byte for
// byte, with what a recording OpenAI-compatible server received.
type SentRequest struct {
	SessionID string
	// Seq is the call's model_started event; Attempt its attempt.
	Seq     int64
	Attempt int
	Model   string
	Request *model.Request
	// Wire is the body the model's client sent (JSON), when the model has
	// one (model.Encoder) and is the agent's, or one of its fallbacks.
	Wire json.RawMessage
	// Hooked: the agent has before-model hooks, which may have changed
	// the request after it was built: what was sent may differ from this.
	Hooked bool
}

// SentRequest derives what the model call whose model_started event is seq
// of session id was sent (see SentRequest): an agent's call, or a
// compaction's (the summariser's request, for the history as it was and
// the reason its compaction event gives), or a plan's (the planner's, the
// summary's: model_started.purpose plan, summary).
func (r *Runner) SentRequest(ctx context.Context, id string, seq int64) (*SentRequest, error) {
	sess, err := r.store.GetSession(ctx, id)
	if err != nil {
		return nil, notFound(id, err)
	}
	st, err := r.newState(id, sess.Agent)
	if err != nil {
		return nil, err
	}
	var (
		started *session.ModelStarted
		reason  string // a compaction call's, from the compaction event after it
	)
	for e, err := range r.store.Events(ctx, id, 0) {
		if err != nil {
			return nil, &Error{Kind: FailStore, Msg: "read events of session " + id, Err: err}
		}
		switch {
		case started != nil:
			if c, ok := e.Data.(*session.Compaction); ok {
				reason = c.Reason
			}
		case e.Seq == seq:
			ms, ok := e.Data.(*session.ModelStarted)
			if !ok {
				return nil, &Error{Kind: FailInput, Code: CodeNotFound,
					Msg: fmt.Sprintf("event %d of session %s is %s, not a model call's model_started", seq, id, e.Type)}
			}
			started = ms
		default:
			if err := st.Apply(e); err != nil {
				return nil, &Error{Kind: FailStore, Msg: "replay session " + id, Err: err}
			}
		}
		if started != nil && (started.Purpose != "compaction" || reason != "") {
			break
		}
	}
	if started == nil {
		return nil, &Error{Kind: FailInput, Code: CodeNotFound, Msg: fmt.Sprintf("session %s has no event %d", id, seq)}
	}
	a, err := r.agent(st.Agent)
	if err != nil {
		return nil, err
	}
	hooks := r.hooksOf(a)
	out := &SentRequest{SessionID: id, Seq: seq, Attempt: started.Attempt, Model: started.Model,
		Hooked: len(hooks.beforeModel) > 0}
	models := append([]model.Model{a.Model}, a.Fallbacks...)
	// The Exec of the call, as it was: the agent and the state; no hooks
	// (a before-model hook may have effects, and is not run).
	x := &Exec{}
	x.execRun = execRun{r: r, agent: a, st: st, hooks: hookSet{h: &Hooks{}}}
	switch started.Purpose {
	case "":
		req := *x.request()
		out.Request = &req
	case "plan", "summary":
		p, ps := planPolicy(x)
		if ps == nil {
			return nil, &Error{Kind: FailInput, Code: CodeNotFound,
				Msg: fmt.Sprintf("event %d of session %s is a plan's call, and the agent %s plans no more", seq, id, a.Name)}
		}
		if started.Purpose == "plan" {
			out.Request = planRequest(x, p, ps)
		} else {
			out.Request = planSummaryRequest(x, ps)
			if p.Summarizer != nil {
				models = []model.Model{p.Summarizer}
			}
		}
	case "compaction":
		// The summariser's request, for the history as it was and the
		// reason the compaction event gives.
		req, split := a.Compaction.request(st.Messages, reason)
		if split == 0 || reason == "" {
			return nil, &Error{Kind: FailInput, Code: CodeNotFound,
				Msg: fmt.Sprintf("event %d of session %s is a compaction's call whose compaction is not in the log", seq, id)}
		}
		out.Request = req
		if a.Compaction.Model != nil {
			models = []model.Model{a.Compaction.Model}
		}
	default:
		return nil, &Error{Kind: FailInput, Code: CodeNotFound,
			Msg: fmt.Sprintf("event %d of session %s is a call for %s, whose request this version does not know how to build", seq, id, started.Purpose)}
	}
	for _, m := range models {
		if m == nil || m.Name() != started.Model {
			continue
		}
		if enc, ok := m.(model.Encoder); ok {
			if out.Wire, err = enc.EncodeRequest(out.Request, started.Mode != "generate"); err != nil {
				return nil, &Error{Kind: FailInternal, Msg: "encode the request for " + m.Name(), Err: err}
			}
		}
		break
	}
	return out, nil
}
