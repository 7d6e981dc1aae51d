package server_test

import (
	"context"
	"iter"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/gateway"
	"github.com/agentrt/agentrt/server"
	"github.com/agentrt/agentrt/session"
	"github.com/agentrt/agentrt/session/memstore"
)

// A turn submitted with SubmitTurn yields the run that answers its input,
// run_started to run_finished, committed events once each and in order,
// with the run's tokens; the same input again (its idempotency key) yields
// that same run, read from the log.
func TestSubmitTurnYieldsItsRun(t *testing.T) {
	f := newFixture(t, options{})
	id := f.create(t, "")
	in := gateway.Input{Source: id, Session: id, Text: "hello there", Key: "k1"}
	collect := func() (types []session.Type, runID string, seqs []int64, tokens int) {
		tr, err := f.srv.SubmitTurn(t.Context(), in)
		if err != nil {
			t.Fatal(err)
		}
		defer tr.Close()
		for ev, err := range tr.Events() {
			if err != nil {
				t.Fatal(err)
			}
			if ev.Seq == 0 {
				tokens++
				continue
			}
			types = append(types, ev.Type)
			seqs = append(seqs, ev.Seq)
			if runID == "" {
				runID = ev.RunID
			}
			if ev.RunID != runID {
				t.Fatalf("event %d of run %s in the turn of run %s", ev.Seq, ev.RunID, runID)
			}
		}
		return types, runID, seqs, tokens
	}
	types, run1, seqs, tokens := collect()
	if len(types) < 2 || types[0] != session.TypeRunStarted || types[len(types)-1] != session.TypeRunFinished {
		t.Fatalf("turn's events %v: want run_started … run_finished", types)
	}
	for i := 1; i < len(seqs); i++ {
		if seqs[i] != seqs[i-1]+1 {
			t.Fatalf("seqs %v: want no gap and no duplicate", seqs)
		}
	}
	if tokens == 0 {
		t.Errorf("no live token in the turn's events")
	}
	again, run2, seqs2, _ := collect()
	if run2 != run1 || !cmp.Equal(again, types) || !cmp.Equal(seqs2, seqs) {
		t.Errorf("the same input again: run %s %v %v; want run %s's %v %v", run2, again, seqs2, run1, types, seqs)
	}
}

// An input the gateway refuses (the source's policy rejects input while
// its turn runs) is SubmitTurn's error, input_rejected, as is an unknown
// session's not_found; the turn that runs is not disturbed.
func TestSubmitTurnRefusedAndUnknown(t *testing.T) {
	m := &echo{hold: make(chan struct{})}
	r, err := agentrt.NewRunner(agentrt.Config{Store: memstore.New(), Agents: []*agentrt.Agent{{Name: "assistant", Model: m}}})
	if err != nil {
		t.Fatal(err)
	}
	gw, err := gateway.New(gateway.Config{Runner: r, Sources: map[string]gateway.SourceConfig{"s1": {Policy: gateway.Reject}}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = gw.Run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
		_ = r.Close(context.Background())
	})
	srv, err := server.New(server.Config{Runner: r, Gateway: gw})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.CreateSession(t.Context(), "assistant", "s1", nil); err != nil {
		t.Fatal(err)
	}
	first, err := srv.SubmitTurn(t.Context(), gateway.Input{Source: "s1", Session: "s1", Text: "first"})
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	next, stop := iter.Pull2(first.Events())
	defer stop()
	if ev, err, ok := next(); !ok || err != nil || ev.Type != session.TypeRunStarted {
		t.Fatalf("first event %v, %v, %v: want run_started", ev, err, ok)
	}
	// The first turn waits at its model call: the source's turn runs.
	_, err = srv.SubmitTurn(t.Context(), gateway.Input{Source: "s1", Session: "s1", Text: "second"})
	if code := agentrt.AsError(err).ErrorCode(); code != agentrt.CodeInputRejected {
		t.Errorf("input while the turn runs, policy reject: %v (code %q); want input_rejected", err, code)
	}
	close(m.hold)
	var last *session.Event
	for {
		ev, err, ok := next()
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			break
		}
		last = ev
	}
	if rf, ok := last.Data.(*session.RunFinished); !ok || rf.Status != session.StatusDone {
		t.Errorf("the first turn ended with %v: want run_finished done", last)
	}
	_, err = srv.SubmitTurn(t.Context(), gateway.Input{Source: "x", Session: "nope", Text: "hi"})
	if code := agentrt.AsError(err).ErrorCode(); code != agentrt.CodeNotFound {
		t.Errorf("input to an unknown session: %v (code %q); want not_found", err, code)
	}
}
