package agentrt

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
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
	SessionID string `json:"session_id"`
	// Seq is the call's model_started event; Attempt its attempt.
	Seq     int64          `json:"seq"`
	Attempt int            `json:"attempt"`
	Model   string         `json:"model"`
	Request *model.Request `json:"request"`
	// Wire is the body the model's client sent (JSON), when the model has
	// one (model.Encoder) and is the agent's, or one of its fallbacks.
	Wire json.RawMessage `json:"wire,omitempty"`
	// Hooked says what the agent's before-model hooks did to the request
	// (see the Hooked constants); Digest, for HookedDigest, is the SHA-256
	// (hex) of the request they left.
	Hooked string `json:"hooked,omitempty"`
	Digest string `json:"digest,omitempty"`
}

// What before-model hooks did to a call's request (SentRequest.Hooked).
const (
	// HookedNone: the agent has no before-model hooks.
	HookedNone = ""
	// HookedUnchanged: they left the request as it was built.
	HookedUnchanged = "unchanged"
	// HookedRecorded: they changed it; Request is what they left, as
	// the call's model_finished recorded it.
	HookedRecorded = "recorded"
	// HookedDigest: they changed it, and it was larger than the runner
	// records (Config.MaxHookedRequest): Request is as the call built it,
	// before them; Digest is the SHA-256 of what they left.
	HookedDigest = "digest"
	// HookedUnknown: the call has no model_finished (it failed, or is
	// under way), so what they did is not known; Request is as the call
	// built it.
	HookedUnknown = "unknown"
)

// DefaultMaxHookedRequest is how large a request a before-model hook
// changed may be for model_finished to record it (Config.MaxHookedRequest).
const DefaultMaxHookedRequest = 256 << 10

// hooked is what a call's model_finished records of its request, when
// the before-model hooks changed it: built is the request before them
// (nil when there are none), req what they left. Nothing when they did
// not change it; the request, or its digest when it is larger than
// r.maxHooked.
func (r *Runner) hooked(built []byte, req *model.Request) (json.RawMessage, string) {
	if built == nil {
		return nil, ""
	}
	sent, err := json.Marshal(req)
	if err != nil || bytes.Equal(sent, built) {
		return nil, ""
	}
	if r.maxHooked < 0 || len(sent) > r.maxHooked {
		sum := sha256.Sum256(sent)
		return nil, hex.EncodeToString(sum[:])
	}
	return sent, ""
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
		started  *session.ModelStarted
		reason   string                 // a compaction call's, from the compaction event after it
		finished *session.ModelFinished // the call's reply
		ended    bool                   // the events of the call are read
	)
	for e, err := range r.store.Events(ctx, id, 0) {
		if err != nil {
			return nil, &Error{Kind: FailStore, Msg: "read events of session " + id, Err: err}
		}
		switch {
		case started != nil:
			switch d := e.Data.(type) {
			case *session.Compaction:
				reason = d.Reason
			case *session.ModelFinished:
				if !ended && d.Purpose == started.Purpose {
					finished, ended = d, true
				}
			case *session.ModelStarted:
				// The call's next attempt has the request its first had
				// (the hooks ran once); any other call ends it.
				if d.Purpose != started.Purpose || d.Attempt <= started.Attempt {
					ended = true
				}
			case *session.RoundStarted, *session.RunFinished, *session.RunResumed:
				ended = true
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
		if started != nil && ended && (started.Purpose != "compaction" || reason != "") {
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
	out := &SentRequest{SessionID: id, Seq: seq, Attempt: started.Attempt, Model: started.Model}
	switch {
	case finished != nil && len(finished.Sent) > 0:
		out.Hooked = HookedRecorded
	case finished != nil && finished.SentDigest != "":
		out.Hooked, out.Digest = HookedDigest, finished.SentDigest
	case len(hooks.beforeModel) == 0:
	case finished != nil:
		out.Hooked = HookedUnchanged
	default:
		out.Hooked = HookedUnknown
	}
	models := append([]model.Model{a.Model}, a.Fallbacks...)
	if st.Model != "" {
		// The session changed its model (model_changed).
		if m, err := a.modelNamed(st.Model); err == nil {
			models = []model.Model{m}
		}
	}
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
	if out.Hooked == HookedRecorded {
		var req model.Request
		if err := json.Unmarshal(finished.Sent, &req); err != nil {
			return nil, &Error{Kind: FailStore, Msg: fmt.Sprintf("the request recorded in session %s's reply to event %d", id, seq), Err: err}
		}
		out.Request = &req
	}
	for _, m := range models {
		if m == nil || m.Name() != started.Model {
			continue
		}
		// The media it took, as the call loaded them.
		if out.Request, err = x.withMedia(ctx, m, out.Request); err != nil {
			return nil, err
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
