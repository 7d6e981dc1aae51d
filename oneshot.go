package agentrt

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/agentrt/agentrt/session"
)

// RunError is the error of a turn that did not end done: it failed, was
// canceled or interrupted, waits for a person, or paused at a limit.
// Status says which; the session can be continued (Resolve, Resume).
type RunError struct {
	SessionID string
	Status    session.Status
	// Reason is run_finished's reason (a limit's name, an error code).
	Reason string
	// Event is the run's error event, when it failed.
	Event *session.Error
	// Requests are the pending requests, when it waits for a person.
	Requests []HumanRequest
}

func (e *RunError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "session %s: run %s", e.SessionID, e.Status)
	switch {
	case e.Event != nil:
		fmt.Fprintf(&b, ": %s", e.Event.Message)
	case len(e.Requests) > 0:
		ids := make([]string, len(e.Requests))
		for i, q := range e.Requests {
			ids[i] = q.ID
		}
		fmt.Fprintf(&b, " for request %s", strings.Join(ids, ", "))
	case e.Reason != "":
		fmt.Fprintf(&b, " (%s)", e.Reason)
	}
	return b.String()
}

// Send runs one turn of a session, like Run, and returns its outcome
// rather than its events: the answer, the usage, and the committed events.
// The error is a *RunError when the turn did not end done, and the error
// that kept it from starting or storing its events otherwise. With
// in.Agent set, a session that does not exist is created for that agent.
func (r *Runner) Send(ctx context.Context, sessionID string, in Input) (*Result, error) {
	res, err := Collect(r.Run(ctx, sessionID, in))
	if err != nil {
		return res, err
	}
	return res, r.runError(ctx, sessionID, res)
}

// runError returns a *RunError for a turn that did not end done.
func (r *Runner) runError(ctx context.Context, id string, res *Result) error {
	if res.Status == session.StatusDone {
		return nil
	}
	e := &RunError{SessionID: id, Status: res.Status, Reason: res.Reason}
	if res.Status == session.StatusFailed || res.Status == session.StatusCanceled {
		e.Event = res.Err
	}
	if res.Status == session.StatusWaiting {
		if st, err := r.Load(ctx, id); err == nil {
			e.Requests = st.Requests
		}
	}
	return e
}

// Ask runs one turn of the named agent in a throwaway session: it is
// created for the turn and deleted afterwards, unless the turn waits for
// a person or paused at a limit, when the *RunError's SessionID names it
// so that it can be continued. It is the shortest path for programs that
// keep no history:
//
//	res, err := r.Ask(ctx, "assistant", "what is 2+3?")
//	fmt.Println(res.Text)
func (r *Runner) Ask(ctx context.Context, agent, text string) (*Result, error) {
	s, err := r.CreateSession(ctx, agent, "", nil)
	if err != nil {
		return nil, err
	}
	res, err := r.Send(ctx, s.ID, Input{Text: text})
	var re *RunError
	if errors.As(err, &re) && (re.Status == session.StatusWaiting || re.Status == session.StatusPaused) {
		return res, err
	}
	if derr := r.DeleteSession(context.WithoutCancel(ctx), s.ID, false); derr != nil && err == nil {
		err = &Error{Kind: FailStore, Msg: "delete the throwaway session " + s.ID, Err: derr}
	}
	return res, err
}
