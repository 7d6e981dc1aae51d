package gateway

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/session"
)

// Answer runs, in this process and at once, the turn that answers the
// input sub names (what Submit returned, for ctx's tenant): the source's
// pending inputs, merged, through the module pipeline, without waiting
// for the source to settle — the caller knows its input is complete, as
// `agentrt run`'s is. The agent runs on the calling goroutine, and yield
// receives each of its events as Runner.Run yields them: committed
// events, and live tokens as the model streams. Returning false cancels
// the run, as leaving Runner.Run's loop does; so does ctx ending, with
// ctx's cause (a person's Ctrl-C is agentrt.ErrSignalInterrupt).
//
// Answer returns once the input is not pending any more: answered — by
// this turn, or by a turn of another process, whose events yield does
// not see (Runner.Watch shows them) — or refused. While another process
// serves the source (holds its claim), Answer waits for it to answer
// the input (its policy interrupts or steers its turn), refuse it
// (reject), or let the source go; under the queue policy, which would
// keep the input for that process's next turn, it returns an error of
// code lease_held at once, the input pending. Its error is a turn's
// that failed (its inputs are set aside, refused with the failure, as
// Run's workers do; a failure of the store leaves them pending), or the
// one that kept the agent from starting when
// the session runs elsewhere and the source's policy does not interrupt
// it (the input stays pending). When a worker of Run in this process
// serves the source already, Answer returns nil at once: that worker
// answers the input.
func (g *Gateway) Answer(ctx context.Context, sub *Submitted, yield func(*session.Event) bool) error {
	if sub == nil || sub.ID == "" || sub.Source == "" {
		return errors.New("gateway: Answer needs a submitted input")
	}
	if yield == nil {
		yield = func(*session.Event) bool { return true }
	}
	k := skey{session.TenantOf(ctx), sub.Source}
	for {
		s := &serving{}
		g.mu.Lock()
		if _, busy := g.serving[k]; busy {
			g.mu.Unlock()
			return nil
		}
		g.serving[k] = s
		delete(g.backoff, k)
		g.mu.Unlock()
		err := g.serve(ctx, k, s, serveOpts{eager: true, until: sub.ID, yield: yield})
		if !errors.Is(err, errClaimed) {
			return err
		}
		if decide(g.settings(sub.Source, sub.agent).Policy, sourceElsewhere) == actDecline {
			// The input would wait for the other process's turn to end:
			// the caller, who wants its answer now, hears why it has none.
			return &agentrt.Error{Kind: agentrt.FailState, Code: agentrt.CodeLeaseHeld,
				Msg: fmt.Sprintf("source %s is being served by another process, and its policy (queue) keeps the input for that process's next turn", sub.Source), Err: err}
		}
		// Another process serves the source: it answers the input (it
		// sees it in the inbox, and applies the source's policy to it)
		// unless it lets the source go first; then this one serves it.
		t := time.NewTimer(g.cfg.Poll)
		select {
		case <-ctx.Done():
			t.Stop()
			return context.Cause(ctx)
		case <-t.C:
		}
		ins, err := g.inbox.Inputs(ctx, sub.Source, sub.Seq-1, 1)
		if err != nil {
			return fmt.Errorf("read the inbox: %w", err)
		}
		if len(ins) == 1 && ins[0].ID == sub.ID && ins[0].State != session.InputPending {
			return nil
		}
	}
}
