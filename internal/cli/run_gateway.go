package cli

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"slices"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/gateway"
	"github.com/agentrt/agentrt/internal/app"
	"github.com/agentrt/agentrt/session"
)

// throughGateway is agentrt run's turn as the gateway runs it: the input
// is stored in the inbox of source, for session id (which exists), and
// the turn that answers it runs in this process at once (Gateway.Answer),
// its events yielded as Runner.Run's are. If another process's gateway
// answered the input first, that run's events are followed in the log.
// A session that waits for a person takes no new input: the sequence
// yields the runtime's error (code waiting), as Runner.Run does, and
// nothing is stored.
func throughGateway(ctx context.Context, a *app.App, gw *gateway.Gateway, source, agent, id, text string) iter.Seq2[*session.Event, error] {
	return func(yield func(*session.Event, error) bool) {
		sess, err := a.Store.GetSession(ctx, id)
		if err != nil {
			yield(nil, notFound(id, err))
			return
		}
		if sess.Status == session.StatusWaiting {
			yield(nil, &agentrt.Error{Kind: agentrt.FailState, Code: agentrt.CodeWaiting,
				Msg: fmt.Sprintf("session %s is waiting for a person", id)})
			return
		}
		sub, err := gw.Submit(ctx, gateway.Input{Source: source, Session: id, Agent: agent, Text: text})
		if err != nil {
			yield(nil, err)
			return
		}
		t := &answering{input: sub.ID, yield: yield}
		err = gw.Answer(ctx, sub, t.take)
		switch {
		case t.stopped || t.finished:
			return
		case t.began:
			// The run stopped without storing how it ended: Runner.Run's
			// last value said why.
			yield(nil, cmpErr(err))
			return
		}
		// The turn did not run here: the input was answered elsewhere,
		// refused, or is still pending.
		in, rerr := inputOf(ctx, a, sub)
		if rerr != nil {
			yield(nil, rerr)
			return
		}
		switch in.State {
		case session.InputAnswered:
			t.followElsewhere(ctx, a, id, sess.LastSeq, in.RunID)
		case session.InputRefused:
			if err == nil {
				err = gateway.Refusal(in)
			}
			yield(nil, answerErr(err))
		default:
			// Not run: set it aside, so that no gateway answers later an
			// input agentrt run said it did not run (coded, as the
			// gateway's refusals are, for whoever follows the input).
			code, why := agentrt.AsError(err).ErrorCode(), "agentrt run could not run it"
			if ctx.Err() != nil || err == nil {
				code, why = agentrt.CodeCanceled, "agentrt run was stopped before its turn began"
			}
			if code == "" {
				code = agentrt.CodeInternal
			}
			if rerr := a.Store.(session.Inbox).Refuse(context.WithoutCancel(ctx), []string{sub.ID}, gateway.RefusalReason(code, why)); rerr != nil {
				err = errors.Join(err, rerr)
			}
			if err == nil || ctx.Err() != nil {
				err = &exitError{code: interruptCode(ctx), msg: fmt.Sprintf("session %s: stopped before the turn began; nothing ran", id)}
			}
			yield(nil, answerErr(err))
		}
	}
}

// answering passes on the events of the run that answers input.
type answering struct {
	input string
	yield func(*session.Event, error) bool
	// began: the run's first event came; finished: its run_finished
	// did; stopped: the consumer stopped.
	began, finished, stopped bool
}

func (t *answering) take(e *session.Event) bool {
	if t.stopped {
		return false
	}
	t.began = true
	if e.Type == session.TypeRunFinished {
		t.finished = true
	}
	if !t.yield(e, nil) {
		t.stopped = true
		return false
	}
	return true
}

// followElsewhere yields the events of run runID of session id, which
// another process runs, from the log: from its run_started to its
// run_finished.
func (t *answering) followElsewhere(ctx context.Context, a *app.App, id string, after int64, runID string) {
	in := false
	for e, err := range a.Runner.Watch(ctx, id, after) {
		if err != nil {
			t.yield(nil, err)
			return
		}
		switch d := e.Data.(type) {
		case *session.RunStarted:
			in = in || e.RunID == runID && slices.Contains(d.Inputs, t.input)
		case *session.InputSteered: // the steer policy: given to a running turn
			in = in || e.RunID == runID && slices.Contains(d.Inputs, t.input)
		}
		if !in || e.RunID != runID || e.Seq == 0 {
			// Live tokens relayed from the other process are left out:
			// this watcher may have joined the stream half way (or lost
			// some), and the printer, having shown tokens, would not
			// show the whole final text.
			continue
		}
		if !t.yield(e, nil) {
			return
		}
		if e.Type == session.TypeRunFinished {
			return
		}
	}
	t.yield(nil, &exitError{code: interruptCode(ctx), msg: fmt.Sprintf(
		"session %s: run %s answers the input in another process; follow it with agentrt sessions events %s --follow", id, runID, id)})
}

// inputOf reads the stored state of input sub.
func inputOf(ctx context.Context, a *app.App, sub *gateway.Submitted) (session.InboxInput, error) {
	ins, err := a.Store.(session.Inbox).Inputs(context.WithoutCancel(ctx), sub.Source, sub.Seq-1, 1)
	if err != nil {
		return session.InboxInput{}, err
	}
	if len(ins) == 0 || ins[0].ID != sub.ID {
		return session.InboxInput{}, fmt.Errorf("input %s of source %s is not in the inbox", sub.ID, sub.Source)
	}
	return ins[0], nil
}

// answerErr is the error of a turn Gateway.Answer could not run, as the
// runtime said it ("session s1 belongs to agent a1…") rather than with
// the gateway's module wrapping around it.
func answerErr(err error) error {
	var ee *exitError
	if errors.As(err, &ee) {
		return ee
	}
	var re *agentrt.Error
	if errors.As(err, &re) {
		return re
	}
	return err
}

func cmpErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return answerErr(err)
		}
	}
	return &agentrt.Error{Kind: agentrt.FailStore, Code: agentrt.CodeEndNotStored, Msg: "the run stopped without storing how it ended"}
}
