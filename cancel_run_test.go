package agentrt_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/model/scripted"
	"github.com/agentrt/agentrt/session"
	"github.com/agentrt/agentrt/session/memstore"
)

// CancelRun cancels the run it names, and only it: a run that has ended
// — the session's next turn running now — is not_running, naming the run
// in progress, and the next run goes on; the run in progress is canceled.
// From the runner that runs the session and from another (the control
// request carries the run's id across processes), and for a session that
// waits for a person.
func TestCancelRun(t *testing.T) {
	for _, from := range []string{"this runner", "another runner"} {
		t.Run(from, func(t *testing.T) {
			store := memstore.New()
			// Two turns, each of whose model calls waits for an hour.
			slowTwice := func() *agentrt.Agent {
				late := scripted.Reply{Text: "late", Delay: time.Hour}
				return calcAgent(scripted.New("m", late, late), nil)
			}
			a, b := twoRunners(t, store, slowTwice)
			canceler := b
			if from == "this runner" {
				canceler = a
			}
			ctx := context.Background()
			first := startInModel(t, a, "s1")
			if _, err := a.Cancel(ctx, "s1", "first turn"); err != nil {
				t.Fatal(err)
			}
			if _, err := first.Wait(ctx); err != nil {
				t.Fatal(err)
			}
			// The caller read that the first run ran; the session's next
			// turn runs when its cancel lands.
			next := startInModel(t, a, "s1")
			_, err := canceler.CancelRun(ctx, "s1", first.ID(), "meant for the first turn")
			if agentrt.AsError(err).ErrorCode() != agentrt.CodeNotRunning || !strings.Contains(err.Error(), "run "+next.ID()+" is") {
				t.Fatalf("CancelRun of the ended run: %v; want not_running naming the run in progress", err)
			}
			select {
			case <-next.Done():
				t.Fatal("the next run stopped: the cancel of an ended run hit it")
			default:
			}
			if _, err := canceler.CancelRun(ctx, "s1", "run_nope", ""); agentrt.AsError(err).ErrorCode() != agentrt.CodeNotRunning {
				t.Fatalf("CancelRun of an unknown run: %v; want not_running", err)
			}
			out, err := canceler.CancelRun(agentrt.WithActor(ctx, "ada"), "s1", next.ID(), "meant for this one")
			if err != nil || !out.Acted || out.Status != session.StatusCanceled || out.Control.RunID != next.ID() {
				t.Fatalf("CancelRun of the run in progress: %+v %v; want it acted, canceled", out, err)
			}
			if res, err := next.Wait(ctx); err != nil || res.Status != session.StatusCanceled {
				t.Fatalf("the next run: %+v %v; want canceled", res, err)
			}
			if _, err := canceler.CancelRun(ctx, "s1", next.ID(), ""); agentrt.AsError(err).ErrorCode() != agentrt.CodeNotRunning ||
				!strings.Contains(err.Error(), "the session is canceled") {
				t.Fatalf("CancelRun once it ended: %v; want not_running", err)
			}
		})
	}
}

// CancelRun of a session that waits for a person (nobody runs it: the
// canceling runner stops it) cancels its run when it is the one named,
// and leaves it waiting otherwise.
func TestCancelRunWaiting(t *testing.T) {
	store := memstore.New()
	a, b := twoRunners(t, store, approvalAgent)
	ctx := context.Background()
	res, err := a.Send(ctx, "s1", agentrt.Input{Text: "1+1", Agent: "calc"})
	if res == nil || res.Status != session.StatusWaiting {
		t.Fatalf("first turn: %+v %v", res, err)
	}
	if _, err := b.CancelRun(ctx, "s1", "run_other", ""); agentrt.AsError(err).ErrorCode() != agentrt.CodeNotRunning ||
		!strings.Contains(err.Error(), "run "+res.RunID+" is") {
		t.Fatalf("CancelRun of another run: %v; want not_running naming the waiting run", err)
	}
	if s, _ := store.GetSession(ctx, "s1"); s.Status != session.StatusWaiting {
		t.Fatalf("after the refused cancel the session is %s; want still waiting", s.Status)
	}
	out, err := b.CancelRun(ctx, "s1", res.RunID, "")
	if err != nil || !out.Acted || out.Status != session.StatusCanceled {
		t.Fatalf("CancelRun of the waiting run: %+v %v", out, err)
	}
}
