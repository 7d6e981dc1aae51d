package gateway_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/agentrt/agentrt/gateway"
	"github.com/agentrt/agentrt/session"
)

// An input pending when a turn starts is not newer input for that turn's
// policy, though the turn leaves it to a later one because an input for
// another session came between: under reject it is answered by its own
// turn, not refused while the first turn runs.
func TestPendingInputLeftToALaterTurnIsNotRejected(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, gateway.Config{Policy: gateway.Reject, Debounce: time.Second})
		e.bot.inModel = make(chan struct{}, 8)
		e.bot.release = make(chan struct{}) // the first turn waits in its model call until released
		ctx := context.Background()
		var ids []string
		for _, in := range []gateway.Input{
			{Source: "chat", Text: "slow"},
			{Source: "chat", Session: "elsewhere", Text: "two"},
			{Source: "chat", Text: "three"},
		} {
			sub, err := e.g.Submit(ctx, in)
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, sub.ID)
		}
		stop := e.run(t)
		defer stop()
		<-e.bot.inModel
		// Several of the worker's looks at the inbox pass while the first
		// turn runs (the bubble's clock moves only when all wait).
		time.Sleep(5 * gateway.DefaultPoll)
		close(e.bot.release)
		time.Sleep(3 * time.Second)
		synctest.Wait()
		ins, err := e.store.Inputs(ctx, "chat", 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, in := range ins {
			if in.State != session.InputAnswered {
				t.Errorf("input %s (%s) is %s (%s), want answered", in.ID, in.SessionID, in.State, in.Reason)
			}
		}
		if got := events[session.RunStarted](t, e.store, "chat"); len(got) != 2 {
			t.Errorf("session chat ran %d turns, want 2 (%v)", len(got), ids)
		}
	})
}
