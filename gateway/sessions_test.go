package gateway_test

import (
	"context"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/gateway"
	"github.com/agentrt/agentrt/session"
	"github.com/agentrt/agentrt/session/memstore"
)

// A turn answers one session's inputs: a source's inputs for two
// sessions make two turns, each in its session, in the order they came.
func TestOneSessionPerTurn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, gateway.Config{Debounce: time.Second})
		ctx := context.Background()
		var ids []string
		for _, in := range []gateway.Input{
			{Source: "chat", Text: "one"},
			{Source: "chat", Text: "two"},
			{Source: "chat", Session: "elsewhere", Text: "three"},
			{Source: "chat", Text: "four"},
		} {
			sub, err := e.g.Submit(ctx, in)
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, sub.ID)
		}
		stop := e.run(t)
		time.Sleep(2 * time.Second)
		synctest.Wait()
		stop()
		got := map[string][][]string{}
		for _, id := range []string{"chat", "elsewhere"} {
			for _, rs := range events[session.RunStarted](t, e.store, id) {
				got[id] = append(got[id], rs.Inputs)
			}
		}
		want := map[string][][]string{"chat": {ids[:2], ids[3:]}, "elsewhere": {ids[2:3]}}
		for id := range want {
			if !slices.EqualFunc(got[id], want[id], slices.Equal) {
				t.Errorf("session %s: turns answered %v, want %v", id, got[id], want[id])
			}
		}
	})
}

// An input of an agent whose debounce is shorter than the gateway's
// settles by its agent's window, not the default agent's.
func TestAnAgentsShorterDebounce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := memstore.New()
		agents := []*agentrt.Agent{
			{Name: "assistant", Model: &bot{}},
			{Name: "quick", Model: &bot{}},
		}
		r, err := agentrt.NewRunner(agentrt.Config{Store: store, Agents: agents, DefaultAgent: "assistant"})
		if err != nil {
			t.Fatal(err)
		}
		started := make(chan time.Time, 1)
		probe := &testModule{name: "probe", order: 1, fn: func(context.Context, *gateway.Turn) error {
			started <- time.Now()
			return nil
		}}
		g, err := gateway.New(gateway.Config{Runner: r, Debounce: time.Hour, Modules: []gateway.Module{probe},
			Agents: map[string]gateway.SourceConfig{"quick": {Debounce: 100 * time.Millisecond}}})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { g.Run(ctx); close(done) }()
		t0 := time.Now()
		if _, err := g.Submit(ctx, gateway.Input{Source: "ops", Agent: "quick", Text: "hi"}); err != nil {
			t.Fatal(err)
		}
		at := <-started
		if wait := at.Sub(t0); wait != 100*time.Millisecond {
			t.Errorf("the turn started after %v, want the quick agent's 100ms window", wait)
		}
		synctest.Wait()
		cancel()
		<-done
		r.Close(context.Background())
	})
}
