package agentrt_test

import (
	"testing"
	"time"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/model/scripted"
	"github.com/agentrt/agentrt/session"
)

// A session driven step by step is stopped by its handle's Cancel and
// Interrupt as a run is: between steps at once, and after a step in
// progress as soon as it ends — not left running in the store when the
// runner lets go of it for want of steps. (The lease TTL is short so
// that, were the request lost, the runner would let go of the session
// soon and Wait would report it running.)
func TestStopSteppedSessionThroughItsHandle(t *testing.T) {
	for _, tc := range []struct {
		name   string
		during bool // the request comes during a step
		stop   func(*agentrt.Run)
		want   session.Status
	}{
		{"cancel between steps", false, (*agentrt.Run).Cancel, session.StatusCanceled},
		{"interrupt between steps", false, func(h *agentrt.Run) { h.Interrupt("newer input") }, session.StatusInterrupted},
		{"interrupt during a step", true, func(h *agentrt.Run) { h.Interrupt("newer input") }, session.StatusInterrupted},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := newGate()
			m := scripted.New("m", gateCall(), scripted.Reply{Text: "done"})
			e := newEnv(t, nil, agentrt.Config{LeaseTTL: 300 * time.Millisecond}, calcAgent(m, registry(t, g.tool())))
			ctx := t.Context()
			st, err := e.r.Begin(ctx, "s1", agentrt.Input{Text: "go", Agent: "calc"})
			if err != nil {
				t.Fatal(err)
			}
			h, ok := e.r.Active(ctx, "s1")
			if !ok {
				t.Fatal("no handle for the stepped session")
			}
			if tc.during {
				if _, err := e.r.Step(ctx, st); err != nil { // the model asks for the gate
					t.Fatal(err)
				}
				stepped := make(chan error, 1)
				go func() {
					_, err := e.r.Step(ctx, st) // the gate runs
					stepped <- err
				}()
				<-g.started
				tc.stop(h)
				close(g.release)
				if err := wait(t, stepped); err != nil {
					t.Fatal(err)
				}
			} else {
				tc.stop(h)
			}
			res, err := h.Wait(ctx)
			if err != nil || res.Status != tc.want {
				t.Fatalf("Wait: %+v %v, want %s", res, err, tc.want)
			}
			if s, err := e.store.GetSession(ctx, "s1"); err != nil || s.Status != tc.want {
				t.Fatalf("stored: %+v %v, want %s", s, err, tc.want)
			}
		})
	}
}

// A control request that comes while Begin has claimed its session, and
// before it keeps it between steps, is acted on (and under -race, the
// hook that stops a stepped session is not read while it is set).
func TestControlWhileBeginKeepsTheSession(t *testing.T) {
	st := newStallStore()
	e := newEnv(t, st, agentrt.Config{}, calcAgent(scripted.New("m", scripted.Reply{Text: "hi"}), nil))
	ctx := t.Context()
	st.arm(true, false) // Begin's commit of run_started waits
	begun := make(chan error, 1)
	go func() {
		_, err := e.r.Begin(ctx, "s1", agentrt.Input{Text: "go", Agent: "calc"})
		begun <- err
	}()
	<-st.entered
	type outcome struct {
		out *agentrt.ControlOutcome
		err error
	}
	canceled := make(chan outcome, 1)
	go func() {
		out, err := e.r.Cancel(ctx, "s1", "")
		canceled <- outcome{out, err}
	}()
	<-st.read // Cancel found Begin's handle
	close(st.gate)
	if err := wait(t, begun); err != nil {
		t.Fatal(err)
	}
	got := wait(t, canceled)
	if got.err != nil || !got.out.Acted || got.out.Status != session.StatusCanceled {
		t.Fatalf("Cancel: %+v %v", got.out, got.err)
	}
}
