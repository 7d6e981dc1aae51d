package agentrt

import (
	"context"
	"testing"
	"time"

	"github.com/agentrt/agentrt/model/scripted"
	"github.com/agentrt/agentrt/session"
	"github.com/agentrt/agentrt/session/memstore"
)

// The process running a session acts on a control request that names a
// run (CancelRun's, from another process) only if that run is the one it
// runs: a request for a run that ended does not stop the session's next.
func TestPollerActsOnTheNamedRunOnly(t *testing.T) {
	store := memstore.New()
	m := scripted.New("m", scripted.Reply{Text: "late", Delay: time.Hour})
	// The poll is left to the test (fire), not to the timer.
	r, err := NewRunner(Config{Store: store, Agents: []*Agent{{Name: "a", Model: m}}, Owner: "host-a:1:a", ControlPoll: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close(context.Background()) })
	ctx := t.Context()
	h, err := r.Start(ctx, "s1", Input{Text: "go", Agent: "a"})
	if err != nil {
		t.Fatal(err)
	}
	for e, err := range h.Events(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		if e.Type == session.TypeModelStarted {
			break
		}
	}
	sess, err := store.GetSession(ctx, "s1")
	if err != nil || sess.Lease == nil {
		t.Fatalf("session %+v %v: want it leased", sess, err)
	}
	request := func(runID string) {
		t.Helper()
		c := session.Control{ID: "ctl_" + runID, Kind: session.ControlCancel, At: time.Now(), RunID: runID}
		if err := store.RequestControl(ctx, "s1", *sess.Lease, c); err != nil {
			t.Fatal(err)
		}
		r.control.fire()
	}
	request("run_that_ended")
	if c := h.control.Load(); c != nil {
		t.Fatalf("the run took request %+v, made for another run", c)
	}
	request(h.ID())
	res, err := h.Wait(ctx)
	if err != nil || res.Status != session.StatusCanceled {
		t.Fatalf("the run after a request naming it: %+v %v; want canceled", res, err)
	}
}
