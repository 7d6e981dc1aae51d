package agentrt

import (
	"context"
	"testing"
	"time"

	"github.com/agentrt/agentrt/model/scripted"
	"github.com/agentrt/agentrt/session"
	"github.com/agentrt/agentrt/session/memstore"
	"github.com/agentrt/agentrt/tool"
)

// An interruption waits for the tool calls in flight; a cancellation
// requested after it (Runner.Cancel, or another process's, which the
// poller hands over the same way) because a call takes too long stops
// them: it is acted on rather than dropped as a second request, and the
// run ends canceled, its log recording the cancellation.
func TestCancelAfterAnInterrupt(t *testing.T) {
	started, release := make(chan struct{}, 1), make(chan struct{})
	gate := tool.Must(tool.New("gate", "waits", func(ctx context.Context, in struct{}) (string, error) {
		started <- struct{}{}
		select {
		case <-release:
			return "passed", nil
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}))
	reg, err := tool.NewRegistry(gate)
	if err != nil {
		t.Fatal(err)
	}
	m := scripted.New("m", scripted.Reply{ToolCalls: []scripted.Call{scripted.ToolCall("gate", `{}`)}}, scripted.Reply{Text: "done"})
	store := memstore.New()
	r, err := NewRunner(Config{Store: store, Agents: []*Agent{{Name: "a", Model: m, Tools: reg}}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	h, err := r.Start(ctx, "s1", Input{Text: "go", Agent: "a"})
	if err != nil {
		t.Fatal(err)
	}
	<-started // the call is in flight
	// What Runner.Interrupt, or the poller for another process's request,
	// does with the request.
	h.applyControl(session.Control{ID: "ctl_1", Kind: session.ControlInterrupt, Reason: "newer input", By: "ada"})

	type outcome struct {
		out *ControlOutcome
		err error
	}
	canceled := make(chan outcome, 1)
	go func() {
		out, err := r.Cancel(ctx, "s1", "taking too long")
		canceled <- outcome{out, err}
	}()
	var got outcome
	select {
	case got = <-canceled:
	case <-time.After(30 * time.Second): // a guard against a hang
		close(release)
		t.Fatal("Cancel after an interruption waits for the call in flight: the cancellation was dropped")
	}
	if got.err != nil || !got.out.Acted || got.out.Status != session.StatusCanceled {
		t.Fatalf("Cancel: %+v %v, want acted, canceled", got.out, got.err)
	}
	res, err := h.Wait(ctx)
	if err != nil || res.Status != session.StatusCanceled {
		t.Fatalf("the run: %+v %v, want canceled", res, err)
	}
	var controls []*session.Control
	for e, err := range store.Events(ctx, "s1", 0) {
		if err != nil {
			t.Fatal(err)
		}
		if c, ok := e.Data.(*session.Control); ok {
			controls = append(controls, c)
		}
	}
	if len(controls) != 1 || controls[0].Kind != session.ControlCancel || controls[0].Reason != "taking too long" {
		t.Fatalf("control events %+v, want the cancellation", controls)
	}
	if err := r.Close(ctx); err != nil {
		t.Fatal(err)
	}
}
