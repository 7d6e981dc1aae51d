package agentrt_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/model/scripted"
	"github.com/agentrt/agentrt/session"
	"github.com/agentrt/agentrt/session/memstore"
)

// heldEnd holds each run's end (RunEnded) until released: the moment a
// run has stopped, and its caller may have its answer, but the session is
// still the run's.
type heldEnd struct {
	ended   chan struct{}
	release chan struct{}
}

func (heldEnd) Committed(context.Context, agentrt.HookInfo, []*session.Event) {}
func (o heldEnd) RunEnded(agentrt.HookInfo, error) {
	o.ended <- struct{}{}
	<-o.release
}

// A session whose run has stopped is deleted once the run lets go of it,
// not refused as busy: a client that got its answer and deletes at once
// (OpenAI's Responses API: create, then delete) was refused now and then.
func TestDeleteWaitsForARunLettingGo(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		obs := heldEnd{ended: make(chan struct{}, 1), release: make(chan struct{})}
		store := memstore.New()
		r, err := agentrt.NewRunner(agentrt.Config{Store: store, Observer: obs,
			Agents: []*agentrt.Agent{{Name: "a", Model: scripted.New("m", scripted.Reply{Text: "hi"})}}})
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close(context.Background())
		release := sync.OnceFunc(func() { close(obs.release) })
		defer release() // before Close, which waits for the run
		ctx := context.Background()
		if _, err := r.CreateSession(ctx, "a", "s", nil); err != nil {
			t.Fatal(err)
		}
		h, err := r.Start(ctx, "s", agentrt.Input{Text: "hello"})
		if err != nil {
			t.Fatal(err)
		}
		<-obs.ended // the run has stopped; the session is still its
		deleted := make(chan error, 1)
		go func() { deleted <- r.DeleteSession(ctx, "s", false) }()
		synctest.Wait() // the deletion returned, or waits for the run
		select {
		case err := <-deleted:
			t.Fatalf("DeleteSession while the run let go of the session: %v, want it to wait", err)
		default:
		}
		release()
		if err := <-deleted; err != nil {
			t.Fatalf("DeleteSession once the run let go: %v", err)
		}
		if _, err := h.Wait(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := store.GetSession(ctx, "s"); !errors.Is(err, session.ErrNotFound) {
			t.Errorf("the session after its deletion: %v, want not found", err)
		}
	})
}
