package gateway_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/agentrt/agentrt/gateway"
	"github.com/agentrt/agentrt/session/memstore"
)

// A gateway that found a source served by another process holds nothing
// for it once that process has answered the source's inputs: it does
// not keep a note per source it ever saw claimed.
func TestSourceServedElsewhereHoldsNothingHere(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		shared := memstore.New()
		// Under queue, input that comes during a turn stays pending.
		a := onStore(t, shared, gateway.Config{Policy: gateway.Queue})
		b := onStore(t, shared, gateway.Config{Policy: gateway.Queue})
		a.bot.inModel = make(chan struct{}, 8)
		a.bot.release = make(chan struct{}) // a's turn waits in its model call until released
		stopA := a.run(t)
		defer stopA()
		a.submit(t, "chat", "slow")
		<-a.bot.inModel // a holds the source's claim
		b.submit(t, "chat", "more")
		stopB := b.run(t)
		defer stopB()
		time.Sleep(5 * gateway.DefaultPoll) // b's loop finds the source claimed
		synctest.Wait()
		close(a.bot.release)
		time.Sleep(5 * gateway.DefaultPoll)
		synctest.Wait()
		if p, err := b.g.Pending(context.Background()); err != nil || len(p) != 0 {
			t.Fatalf("pending %v, %v; want every input answered", p, err)
		}
		if n := b.g.Serving(); n != 0 {
			t.Errorf("the gateway that did not serve the source holds %d sources, want 0", n)
		}
		if n := a.g.Serving(); n != 0 {
			t.Errorf("the gateway that served the source holds %d sources, want 0", n)
		}
	})
}
