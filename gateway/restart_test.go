package gateway_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/gateway"
	"github.com/agentrt/agentrt/session"
)

// turnSeen is what a module before the agent saw of a turn.
type turnSeen struct {
	ID      string
	Restart int
	Inputs  []string
	At      time.Time
}

// recorder is a module at order 10 that records every turn it sees.
func recorder() (gateway.Module, func() []turnSeen) {
	var mu sync.Mutex
	var seen []turnSeen
	m := &testModule{name: "recorder", order: 10, fn: func(_ context.Context, t *gateway.Turn) error {
		ids := make([]string, len(t.Inputs))
		for i, in := range t.Inputs {
			ids[i] = in.ID
		}
		mu.Lock()
		seen = append(seen, turnSeen{ID: t.ID, Restart: t.Restart, Inputs: ids, At: time.Now()})
		mu.Unlock()
		return nil
	}}
	return m, func() []turnSeen {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(seen)
	}
}

// With a debounce, a turn that newer input interrupts waits for the
// source to settle again before it restarts, and the restart is still
// the same turn: the modules before the agent see every input it
// answers (those the interrupted run answered, then the newer), its
// restart count and its id.
func TestDebouncedRestartKeepsTheTurn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec, seen := recorder()
		e := newEnv(t, gateway.Config{Debounce: time.Second, Modules: []gateway.Module{rec}})
		e.bot.inModel = make(chan struct{}, 8)
		stop := e.run(t)
		defer stop()
		var ids []string
		for _, text := range []string{"hi", "I need a refund", "slow: order 42"} {
			ids = append(ids, e.submit(t, "chat", text).ID)
		}
		time.Sleep(time.Second)
		<-e.bot.inModel // the turn's model call is under way
		newer := e.submit(t, "chat", "sorry, 43 — order 43")
		sent := time.Now()
		time.Sleep(2 * time.Second)
		synctest.Wait()
		got := seen()
		if len(got) != 2 {
			t.Fatalf("the module saw %d turns, want the turn and its restart: %+v", len(got), got)
		}
		want := []turnSeen{
			{ID: got[0].ID, Restart: 0, Inputs: ids},
			{ID: got[0].ID, Restart: 1, Inputs: append(slices.Clone(ids), newer.ID)},
		}
		if diff := cmp.Diff(want, got, cmp.FilterPath(func(p cmp.Path) bool { return p.Last().String() == ".At" }, cmp.Ignore())); diff != "" {
			t.Errorf("the turns the module saw (-want +got):\n%s", diff)
		}
		if waited := got[1].At.Sub(sent); waited < time.Second {
			t.Errorf("the restart began %s after the newer input, want after the debounce (1s)", waited)
		}
		starts := events[session.RunStarted](t, e.store, "chat")
		if len(starts) != 2 || starts[0].TurnID != got[0].ID || starts[1].TurnID != got[0].ID ||
			!slices.Equal(starts[1].Inputs, []string{newer.ID}) {
			t.Errorf("run_started %+v, want two runs of turn %s, the second answering the newer input", starts, got[0].ID)
		}
	})
}
