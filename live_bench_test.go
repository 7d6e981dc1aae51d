package agentrt_test

import (
	"context"
	"testing"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/session"
	"github.com/agentrt/agentrt/session/memstore"
)

// BenchmarkTurnUnread is BenchmarkTurn's turn in memory run in the
// background with nobody reading its events: the live events (tokens,
// tool call pieces) must cost nothing then, so its allocations do not
// grow with them.
func BenchmarkTurnUnread(b *testing.B) {
	ctx := context.Background()
	a, m := benchAgent(b)
	r, err := agentrt.NewRunner(agentrt.Config{Store: memstore.New(), Agents: []*agentrt.Agent{a}})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		s, err := r.CreateSession(ctx, "bench", "", nil)
		if err != nil {
			b.Fatal(err)
		}
		m.Reset()
		h, err := r.Start(ctx, s.ID, agentrt.Input{Text: "add 1+2, 3+4 and 5+6"})
		if err != nil {
			b.Fatal(err)
		}
		res, err := h.Wait(ctx)
		if err != nil || res.Status != session.StatusDone {
			b.Fatalf("%+v %v", res, err)
		}
		if err := r.DeleteSession(ctx, s.ID, true); err != nil {
			b.Fatal(err)
		}
	}
}
