package server_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/gateway"
)

// failing is a gateway module that fails every turn.
type failing struct{}

func (failing) Name() string { return "screen" }
func (failing) Order() int   { return 10 }
func (failing) Run(context.Context, *gateway.Turn) error {
	return errors.New("the screening service is down")
}

// An input that this process's gateway sets aside (a module of its turn
// failed) ends its turn's stream at once with the refusal and its reason,
// over SubmitTurn and over the SSE message stream, rather than at the
// next heartbeat's look at the inbox (an hour in this fixture). The
// deadline below only bounds how long a broken build hangs.
func TestRefusedTurnEndsAtOnce(t *testing.T) {
	f := newFixture(t, options{gateway: func(c *gateway.Config) { c.Modules = []gateway.Module{failing{}} }})
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()

	id := f.create(t, "")
	tr, err := f.srv.SubmitTurn(ctx, gateway.Input{Source: id, Session: id, Text: "hello"})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	var got error
	for ev, err := range tr.Events() {
		if err != nil {
			got = err
			break
		}
		t.Errorf("event %s of a turn whose input was set aside", ev.Type)
	}
	if ctx.Err() != nil {
		t.Fatal("the turn's events did not end before the deadline")
	}
	if code := agentrt.AsError(got).ErrorCode(); code != agentrt.CodeModuleFailed || !strings.Contains(got.Error(), "screening service is down") {
		t.Fatalf("SubmitTurn's events ended with %v (code %q); want module_failed with the module's failure", got, code)
	}

	id2 := f.create(t, "")
	var frames []sseEvent
	for ev := range f.streamCtx(t, ctx, "POST", "/v1/sessions/"+id2+"/messages", "", map[string]string{"text": "hello"}) {
		frames = append(frames, ev)
	}
	if ctx.Err() != nil {
		t.Fatal("the message stream did not end before the deadline")
	}
	if len(frames) == 0 || frames[len(frames)-1].typ != "stream_error" ||
		!strings.Contains(string(frames[len(frames)-1].data), `"module_failed"`) ||
		!strings.Contains(string(frames[len(frames)-1].data), "screening service is down") {
		t.Fatalf("the message stream: %+v; want it to end with stream_error module_failed and the reason", frames)
	}
}
