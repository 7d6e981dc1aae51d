package gateway_test

import (
	"context"
	"testing"
	"testing/synctest"

	"github.com/agentrt/agentrt/gateway"
	"github.com/agentrt/agentrt/session"
	"github.com/agentrt/agentrt/session/memstore"
)

// pausingStore holds Submit up after the input is stored, until the test
// lets it return.
type pausingStore struct {
	*memstore.Store
	stored chan struct{}
	resume chan struct{}
}

func (p *pausingStore) Submit(ctx context.Context, in *session.InboxInput) (session.InboxInput, bool, error) {
	return p.SubmitWithin(ctx, in, session.Bounds{})
}

// SubmitWithin is the submit the gateway makes (session.BoundedInbox).
func (p *pausingStore) SubmitWithin(ctx context.Context, in *session.InboxInput, b session.Bounds) (session.InboxInput, bool, error) {
	stored, dup, err := p.Store.SubmitWithin(ctx, in, b)
	p.stored <- struct{}{}
	<-p.resume
	return stored, dup, err
}

// An input whose turn began before its Submit returned — the loop found
// it in the inbox first — is that turn's own: the source's policy (here
// reject) is for newer input, not for it.
func TestSubmitOfAnInputItsTurnAnswersAlready(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := &pausingStore{stored: make(chan struct{}), resume: make(chan struct{})}
		e := newEnvWrapped(t, gateway.Config{Policy: gateway.Reject}, func(m *memstore.Store) session.Store {
			p.Store = m
			return p
		})
		e.bot.inModel = make(chan struct{}, 1)
		e.bot.release = make(chan struct{})
		stop := e.run(t)
		defer stop()
		errc := make(chan error, 1)
		go func() {
			_, err := e.g.Submit(context.Background(), gateway.Input{Source: "chat", Text: "slow"})
			errc <- err
		}()
		<-p.stored
		<-e.bot.inModel // the loop's turn for the input runs
		close(p.resume)
		if err := <-errc; err != nil {
			t.Fatalf("Submit: %v, want the input taken by the turn that runs for it", err)
		}
		close(e.bot.release)
		synctest.Wait()
		ins, _ := e.store.Inputs(context.Background(), "chat", 0, 0)
		if len(ins) != 1 || ins[0].State != session.InputAnswered {
			t.Errorf("inbox %+v, want the input answered", ins)
		}
	})
}
