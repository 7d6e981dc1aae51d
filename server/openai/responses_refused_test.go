package openai_test

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	oa "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/gateway"
	"github.com/agentrt/agentrt/session"
)

// screenDown is a module of every turn that fails.
type screenDown struct{}

func (screenDown) Name() string { return "screen" }
func (screenDown) Order() int   { return 10 }
func (screenDown) Run(context.Context, *gateway.Turn) error {
	return errors.New("the screening service is down")
}

// A background response whose input the gateway set aside (a module of
// its turn failed) is failed, with the refusal's code, when it is read
// again, and cancelling it is refused at once as for any response that
// ended: it stayed queued for ever, the log having no run of it, and its
// cancel waited for a run that never comes.
func TestResponseOfARefusedInput(t *testing.T) {
	t.Parallel()
	f := newFixtureWith(t, fixtureConfig{gateway: func(c *gateway.Config) { c.Modules = []gateway.Module{screenDown{}} }})
	c := f.client("")
	p := respParams("hello")
	p.Background = oa.Bool(true)
	var resp *http.Response
	bg, err := c.Responses.New(t.Context(), p, option.WithResponseInto(&resp))
	if err != nil {
		t.Fatal(err)
	}
	id := sessionOf(t, resp)
	// The gateway sets the input aside: its follower hears it.
	ib := f.r.Store().(session.Inbox)
	ins, err := ib.Inputs(t.Context(), id, 0, 0)
	if err != nil || len(ins) != 1 {
		t.Fatalf("the session's inputs: %+v, %v", ins, err)
	}
	fl := f.srv.Gateway().Follow(&gateway.Submitted{ID: ins[0].ID, Source: id, Session: id, Seq: ins[0].Seq}, 0)
	for range fl.Events(t.Context()) {
	}
	if o, _ := fl.Outcome(); o.State != gateway.TurnRefused {
		t.Fatalf("the input's turn: %+v, want refused", o)
	}

	got, err := c.Responses.Get(t.Context(), bg.ID, responses.ResponseGetParams{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != "failed" || got.Error.Code != agentrt.CodeModuleFailed {
		t.Errorf("the response read again: %s, error %s; want failed, module_failed", got.Status, got.JSON.Error.Raw())
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if _, err := c.Responses.Cancel(ctx, bg.ID); !apiErrorIs(err, http.StatusConflict, agentrt.CodeNotRunning) {
		t.Errorf("cancel of the refused response: %v (waited: %v); want 409 not_running at once", err, ctx.Err())
	}
}
