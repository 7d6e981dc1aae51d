package agentrt_test

import (
	"context"
	"testing"
	"time"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/model/scripted"
	"github.com/agentrt/agentrt/session"
)

// Leaving Runner.Run's loop on an engine returns at once and ends the run
// canceled, as it does on the local engine (it blocked until the remote
// run ended, or panicked).
func TestEngineRunLeftEarly(t *testing.T) {
	r, eng, _ := engineEnv(t, scripted.Reply{Text: "hi"})
	eng.hold = make(chan struct{}) // the worker never steps
	defer close(eng.hold)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	start := time.Now()
	for e, err := range r.Run(ctx, "s1", agentrt.Input{Agent: "assistant", Text: "hello"}) {
		t.Logf("first: %v %v", e.Type, err)
		break
	}
	if el := time.Since(start); el > time.Second {
		t.Errorf("the range statement returned %v after break (blocked until ctx ended)", el)
	}
}

// An Interrupt of a handle whose run ended does nothing: it must not stop
// the session's next run.
func TestEngineLateInterrupt(t *testing.T) {
	r, eng, _ := engineEnv(t, scripted.Reply{Text: "one"}, scripted.Reply{Text: "two"})
	ctx := context.Background()
	hA, err := r.Start(ctx, "s1", agentrt.Input{Agent: "assistant", Text: "first"})
	if err != nil {
		t.Fatal(err)
	}
	if res, err := hA.Wait(ctx); err != nil || res.Status != session.StatusDone {
		t.Fatal(res, err)
	}
	eng.hold = make(chan struct{})
	hB, err := r.Start(ctx, "s1", agentrt.Input{Agent: "assistant", Text: "second"})
	if err != nil {
		t.Fatal(err)
	}
	eng.next(t)
	eng.next(t)
	hA.Interrupt("late, for run A")
	time.Sleep(500 * time.Millisecond)
	close(eng.hold)
	res, err := hB.Wait(ctx)
	t.Logf("run B: %+v %v", res, err)
	if res != nil && res.Status == session.StatusInterrupted {
		t.Errorf("run B (%s) was interrupted by the finished run A's handle (%s)", hB.ID(), hA.ID())
	}
}

// InterruptFor's inputs reach the interrupted event of a run on an engine
// (the gateway follows a turn into its restart by them).
func TestEngineInterruptInputs(t *testing.T) {
	r, eng, store := engineEnv(t, scripted.Reply{Text: "one"})
	ctx := context.Background()
	eng.hold = make(chan struct{})
	h, err := r.Start(ctx, "s1", agentrt.Input{Agent: "assistant", Text: "first"})
	if err != nil {
		t.Fatal(err)
	}
	eng.next(t)
	h.InterruptFor("newer input", []string{"in_x"})
	close(eng.hold)
	res, err := h.Wait(ctx)
	t.Logf("run: %+v %v", res, err)
	for ev, err := range store.Events(session.WithTenant(ctx, session.DefaultTenant), "s1", 0) {
		if err != nil {
			t.Fatal(err)
		}
		if d, ok := ev.Data.(*session.Interrupted); ok {
			t.Logf("interrupted: %+v", d)
			if len(d.Inputs) == 0 {
				t.Errorf("the interrupted event lost InterruptFor's inputs (the gateway's follow reads them to follow the restart)")
			}
		}
	}
}

// Runner.Run on an engine yields each event once (run_started was yielded
// twice: by the hand-over's commit, then by the follow).
func TestEngineRunEventsOnce(t *testing.T) {
	r, _, _ := engineEnv(t, scripted.Reply{Text: "hi"})
	ctx := context.Background()
	n := 0
	var types []session.Type
	for e, err := range r.Run(ctx, "s1", agentrt.Input{Agent: "assistant", Text: "hello"}) {
		if err != nil {
			t.Fatal(err)
		}
		if e.Seq != 0 {
			types = append(types, e.Type)
		}
		if e.Type == session.TypeRunStarted {
			n++
		}
	}
	t.Logf("committed events yielded: %v", types)
	if n != 1 {
		t.Errorf("run_started yielded %d times", n)
	}
}
