package agentrt_test

import (
	"context"
	"testing"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/model/scripted"
	"github.com/agentrt/agentrt/session"
	"github.com/agentrt/agentrt/session/memstore"
)

// TestShutdownHandsOver: a runner shutting down stops a run it cannot
// wait for without recording an end, and lets go of its session at once,
// so that another runner on the store resumes it right away and finishes
// it — a run Close stops ends canceled instead.
func TestShutdownHandsOver(t *testing.T) {
	store := memstore.New()
	g := newGate()
	first := newEnv(t, store, agentrt.Config{Owner: "a:1:x"},
		calcAgent(scripted.New("m", gateCall(), scripted.Reply{Text: "never"}), registry(t, g.tool())))
	id := first.session(t, "calc")
	h, err := first.r.Start(context.Background(), id, agentrt.Input{Text: "go"})
	if err != nil {
		t.Fatal(err)
	}
	wait(t, g.started)

	ctx, cancel := context.WithCancel(context.Background())
	cancel() // no grace: hand over at once
	if err := first.r.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	<-h.Done()
	s, err := store.GetSession(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if s.Status != session.StatusRunning || s.Lease != nil {
		t.Fatalf("after Shutdown: status %s, lease %+v; want running and released", s.Status, s.Lease)
	}
	for _, e := range storedLog(t, store, id) {
		if e.Type == session.TypeRunFinished || e.Type == session.TypeError {
			t.Fatalf("Shutdown recorded %s: the run's end is for the runner that resumes it", e.Type)
		}
	}

	close(g.release)
	second := newEnv(t, store, agentrt.Config{Owner: "b:2:y"},
		calcAgent(scripted.New("m", scripted.Reply{Text: "finished"}), registry(t, g.tool())))
	runs, err := second.r.Recover(context.Background())
	if err != nil || len(runs) != 1 {
		t.Fatalf("Recover on the other runner: %d runs, %v; want the handed-over run at once", len(runs), err)
	}
	res, err := runs[0].Wait(context.Background())
	if err != nil || res.Status != session.StatusDone || res.Text != "finished" {
		t.Fatalf("the resumed run: %+v, %v", res, err)
	}
	if _, err := first.r.Start(context.Background(), id, agentrt.Input{Text: "again"}); errCode(err) != agentrt.CodeClosed {
		t.Errorf("Start after Shutdown: %v, want closed", err)
	}
}
