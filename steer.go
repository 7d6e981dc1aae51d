package agentrt

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/agentrt/agentrt/session"
)

// Steering a run handed to the engine (Run.Steer on a remote handle):
// the input is delivered by the process that steps the run, at its next
// model call, as a run here takes it. While a process holds the session
// (a step in progress, or a worker that keeps it between steps) the input
// goes to it as a steering control request (session.ControlSteer, which
// never replaces a stop); while nobody holds it and the run is between
// steps with no tool call outstanding, this process records it
// (input_steered) itself. Every request carries all the input not yet
// seen delivered, each with an id the input_steered event names, so that
// a request replacing another loses nothing, and a new owner (the engine
// moved the run) is asked again. Input the run never takes — it ended
// first, or stops — is not delivered: its inbox inputs stay pending, for
// the next turn.

// steerWait is how long the steering of a remote run waits for its input
// to be delivered before it looks at the session again (a new owner, a
// free session).
const steerWait = time.Second

// steerRemote delivers h's steered input (h.remoteSteer) until there is
// none left, or the run ends. One at a time per handle (h.steering).
func (r *Runner) steerRemote(h *Run) {
	if !r.remote.enter() {
		h.mu.Lock()
		h.steering, h.remoteSteer = false, nil
		h.mu.Unlock()
		return
	}
	go func() {
		defer r.remote.wg.Done()
		ctx := session.WithTenant(r.remote.ctx, h.tenant)
		r.deliverSteer(ctx, h)
	}()
}

// deliverSteer is steerRemote's loop.
func (r *Runner) deliverSteer(ctx context.Context, h *Run) {
	var (
		out   []session.Steered // not yet seen delivered
		from  int64             // the log is read from here for their delivery
		delay = 5 * time.Millisecond
	)
	defer func() {
		h.mu.Lock()
		h.steerUntil = nil
		again := len(h.remoteSteer) > 0 && !h.finished && ctx.Err() == nil
		if !again {
			h.steering, h.remoteSteer = false, nil
		}
		h.mu.Unlock()
		if again {
			// Steered as this delivery ended (it saw the steering under
			// way): delivered by the next.
			r.steerRemote(h)
		}
	}()
	runID := h.ID()
	for ctx.Err() == nil {
		h.mu.Lock()
		added := h.remoteSteer
		h.remoteSteer = nil
		done := h.finished
		until := make(chan struct{})
		h.steerUntil = until
		h.mu.Unlock()
		for _, s := range added {
			s.ID = "st_" + r.newID()
			out = append(out, s)
		}
		if len(out) == 0 || done {
			return
		}
		sess, err := r.store.GetSession(ctx, h.sessionID)
		if err != nil || sess.Status != session.StatusRunning && sess.Status != session.StatusWaiting {
			return // gone, or its run ended: the input waits for the next turn
		}
		if from == 0 {
			from = sess.LastSeq
		}
		// What was delivered meanwhile is not asked for again.
		var ended bool
		if out, from, ended, err = r.steerSeen(ctx, h.sessionID, runID, out, from); err != nil || ended || len(out) == 0 {
			continue
		}
		l := sess.Lease
		held := l != nil && l.Owner != "" && time.Now().Before(l.Expires) && !ownerDead(l.Owner)
		switch {
		case held && sess.Status == session.StatusRunning:
			if sess.Control != nil && sess.Control.Kind != session.ControlSteer {
				return // the run stops
			}
			if r.control.ctrl == nil {
				return // the store cannot carry it: the input waits for the next turn
			}
			c := session.Control{ID: "ctl_" + r.newID(), Kind: session.ControlSteer, At: r.now().UTC(), RunID: runID, Steer: out}
			if err := r.control.ctrl.RequestControl(ctx, h.sessionID, *l, c); errors.Is(err, session.ErrFenced) {
				if sleepCtx(ctx, &delay) != nil {
					return
				}
				continue // it let go of the session meanwhile
			} else if err != nil {
				if sleepCtx(ctx, &delay) != nil {
					return
				}
				continue
			}
		case !held && sess.Status == session.StatusRunning:
			if r.steerHere(ctx, h.sessionID, runID, out) {
				out = nil
				continue
			}
		}
		// Wait for the delivery, newer input, or a moment (while the run
		// waits for a person: its next event): then look again.
		wctx, cancel := context.WithCancel(ctx)
		if sess.Status != session.StatusWaiting {
			wctx, cancel = context.WithTimeout(ctx, steerWait)
		}
		for e, err := range r.watch(wctx, h.sessionID, from, until) {
			if err != nil {
				break
			}
			if e.Seq == 0 {
				continue
			}
			from = e.Seq
			var ended bool
			if out, ended = steerDelivered(e, runID, out); ended {
				cancel()
				return // the run ended: what it did not take waits for the next turn
			}
			if len(out) == 0 {
				break
			}
		}
		cancel()
		delay = 5 * time.Millisecond
	}
}

// steerSeen drops from out the input delivered in session id's log after
// seq from, and says whether run runID ended there.
func (r *Runner) steerSeen(ctx context.Context, id, runID string, out []session.Steered, from int64) ([]session.Steered, int64, bool, error) {
	for e, err := range r.store.Events(ctx, id, from) {
		if err != nil {
			return out, from, false, err
		}
		from = e.Seq
		var ended bool
		if out, ended = steerDelivered(e, runID, out); ended {
			return out, from, true, nil
		}
	}
	return out, from, false, nil
}

// steerDelivered drops from out the input e, an event of the log,
// delivered to run runID, and says whether e ended that run.
func steerDelivered(e *session.Event, runID string, out []session.Steered) ([]session.Steered, bool) {
	if e.RunID != runID {
		return out, false
	}
	switch d := e.Data.(type) {
	case *session.InputSteered:
		return slices.DeleteFunc(out, func(s session.Steered) bool { return s.ID == d.Steer }), false
	case *session.RunFinished:
		return out, true
	}
	return out, false
}

// steerHere records out, input steered into run runID of session id,
// which nobody holds, as the run's next messages, when the run is between
// steps with no tool call outstanding (a user message cannot come between
// calls and their results) and its next step calls the model; it reports
// whether it did.
func (r *Runner) steerHere(ctx context.Context, id, runID string, out []session.Steered) bool {
	x, err := r.begin(ctx, id, nil, false, "")
	if err != nil {
		return false // taken meanwhile: the next look asks its owner
	}
	defer r.finish(x)
	if x.st.RunID != runID || x.st.Status != session.StatusRunning || len(x.st.Calls) > 0 || x.st.InModel {
		return false
	}
	// Only for a model call the run makes anyway (as a run here takes
	// steered input): not before its answer ends it.
	p := x.agent.Policy
	if p == nil {
		p = React{}
	}
	if ins, err := p.Next(ctx, x.agent, x.st); err != nil || ins.Kind != KindCallModel {
		return false
	}
	for _, s := range out {
		emit(x, session.InputSteered{Text: s.Text, Inputs: s.Inputs, TurnID: x.st.TurnID, Steer: s.ID})
		x.answers = append(x.answers, s.Inputs...)
	}
	return x.Commit(ctx) == nil
}

// steerFrom takes steering control request c in h, a run of this
// process: the input not taken yet is given to its next model call.
func (h *Run) steerFrom(c session.Control) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.finished {
		return
	}
	for _, s := range c.Steer {
		if s.ID == "" || slices.Contains(h.steered, s.ID) {
			continue
		}
		h.steered = append(h.steered, s.ID)
		h.steer = append(h.steer, session.InputSteered{Text: s.Text, Inputs: s.Inputs, Steer: s.ID})
	}
}

// steerAsked takes, before a model call of a session driven step by step,
// the input another process steered into its run and asked this one to
// deliver (a steering control request the control plane has not seen
// yet): the model call that follows a steering is the one that takes it,
// as for a run of the steering process. One read of the session.
func (x *Exec) steerAsked(ctx context.Context) {
	if x.r.control.ctrl == nil || x.handle == nil {
		return
	}
	sess, err := x.r.store.GetSession(ctx, x.st.SessionID)
	if err != nil || sess.Control == nil || sess.Control.Kind != session.ControlSteer || sess.Control.RunID != x.st.RunID {
		return // a store that hiccupped: the control plane brings it
	}
	x.handle.steerFrom(*sess.Control)
}
