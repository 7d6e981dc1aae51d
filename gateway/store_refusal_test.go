package gateway_test

import (
	"context"
	"testing"
	"time"

	"github.com/agentrt/agentrt/gateway"
	"github.com/agentrt/agentrt/session"
	"github.com/agentrt/agentrt/session/memstore"
	"github.com/agentrt/agentrt/session/storetest"
)

// While the store refuses writes (a full disk), a source's turn cannot
// begin: its input is not the cause, so it stays pending — not set aside
// — and the gateway tries again after a poll, not as fast as the store
// answers (it made tens of thousands of attempts a second). Once the
// store accepts writes, the turn runs and answers it.
func TestStoreRefusalLeavesTheInputPending(t *testing.T) {
	const window = 500 * time.Millisecond
	for _, tc := range []struct {
		name string
		arm  func(*storetest.Faults)
	}{
		{"commits refused", func(f *storetest.Faults) { f.FailCommit(1, true) }},
		{"every write refused", func(f *storetest.Faults) {
			f.FailCommit(1, true)
			f.FailLease(1, true)
			f.FailInboxWrite(1, true)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store := memstore.New()
			var faults storetest.Faults
			r := newRunnerOn(t, storetest.Faulty(store, &faults), &bot{}, "")
			defer r.Close(context.Background())
			g, err := gateway.New(gateway.Config{Runner: r, OnError: func(string, error) {}})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := r.CreateSession(context.Background(), "assistant", "chat", nil); err != nil {
				t.Fatal(err)
			}
			in, err := g.Submit(context.Background(), gateway.Input{Source: "chat", Text: "hi"})
			if err != nil {
				t.Fatal(err)
			}
			tc.arm(&faults)
			ctx, cancel := context.WithTimeout(context.Background(), window)
			_ = g.Run(ctx)
			cancel()
			// A try every poll (200 ms), a write or two each; a loop that
			// does not wait makes thousands.
			if n := faults.Commits() + faults.LeaseCalls(); n > 40 {
				t.Errorf("%d commits and lease calls in %v while the store refused writes, want a few a poll", n, window)
			}
			ins, err := store.Inputs(context.Background(), "chat", 0, 0)
			if err != nil || len(ins) != 1 || ins[0].State != session.InputPending {
				t.Fatalf("while the store refused writes the inbox holds %+v (%v), want the input pending", ins, err)
			}

			faults.FailCommit(0, false)
			faults.FailLease(0, false)
			faults.FailInboxWrite(0, false)
			ctx, cancel = context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			done := make(chan struct{})
			go func() { _ = g.Run(ctx); close(done) }()
			for ev, err := range r.Watch(ctx, "chat", 0) {
				if err != nil {
					t.Fatalf("watching the turn: %v", err)
				}
				if ev.Type == session.TypeRunFinished {
					break
				}
			}
			cancel()
			<-done
			ins, err = store.Inputs(context.Background(), "chat", 0, 0)
			if err != nil || len(ins) != 1 || ins[0].ID != in.ID || ins[0].State != session.InputAnswered {
				t.Errorf("once the store accepted writes the inbox holds %+v (%v), want the input answered", ins, err)
			}
		})
	}
}
