package openai_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
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

// restartFails is a module that fails the turns that restart after
// newer input.
type restartFails struct{}

func (restartFails) Name() string { return "screen" }
func (restartFails) Order() int   { return 10 }
func (restartFails) Run(_ context.Context, t *gateway.Turn) error {
	if t.Restart > 0 {
		return errors.New("the screening service is down")
	}
	return nil
}

// post posts body to path and fails the test unless it is taken.
func (f *fixture) post(t *testing.T, path, body string) {
	t.Helper()
	resp, err := http.Post(f.http.URL+path, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode >= 300 {
		t.Fatalf("POST %s: %d", path, resp.StatusCode)
	}
}

// inModel waits for a model call of session id's log after seq after to
// begin, and returns its model_started.
func (f *fixture) inModel(t *testing.T, id string, after int64) *session.Event {
	t.Helper()
	for ev, err := range f.r.Watch(t.Context(), id, after) {
		if err != nil {
			t.Fatal(err)
		}
		if ev.Type == session.TypeModelStarted {
			return ev
		}
	}
	t.Fatal("the watch ended")
	return nil
}

// A response whose turn ended as its restart after newer input was set
// aside is failed; cancelling it cancels nothing (409 not_running): the
// session's run then — another source's turn — goes on. The cancel read
// the log alone, took the response for running, and cancelled whatever
// ran in the session.
func TestResponseCancelAfterItsRestartWasSetAside(t *testing.T) {
	t.Parallel()
	g := gated{release: make(chan struct{})}
	f := newFixtureWith(t, fixtureConfig{agents: []*agentrt.Agent{{Name: "slow", Model: g}},
		gateway: func(c *gateway.Config) { c.Modules = []gateway.Module{restartFails{}} }})
	c := f.client("")
	p := respParams("count")
	p.Model, p.Background = "slow", oa.Bool(true)
	var resp *http.Response
	bg, err := c.Responses.New(t.Context(), p, option.WithResponseInto(&resp))
	if err != nil {
		t.Fatal(err)
	}
	id := sessionOf(t, resp)
	first := f.inModel(t, id, 0).Seq
	// Newer input from the response's source interrupts its run; the
	// restart's module fails, and the newer input is set aside.
	f.post(t, "/v1/sessions/"+id+"/messages", `{"text":"and more"}`)
	ib := f.r.Store().(session.Inbox)
	ins, err := ib.Inputs(t.Context(), id, 0, 0)
	if err != nil || len(ins) != 2 {
		t.Fatalf("the session's inputs: %+v, %v", ins, err)
	}
	fl := f.srv.Gateway().Follow(&gateway.Submitted{ID: ins[0].ID, Source: id, Session: id, Seq: ins[0].Seq}, 0)
	for range fl.Events(t.Context()) {
	}
	if o, _ := fl.Outcome(); o.State != gateway.TurnFailed {
		t.Fatalf("the response's turn: %+v, want failed (its restart set aside)", o)
	}
	// Another source's turn runs in the session.
	f.post(t, "/v1/sessions/"+id+"/messages", `{"text":"from the desk","source":"desk"}`)
	desk := f.inModel(t, id, first)

	got, err := c.Responses.Get(t.Context(), bg.ID, responses.ResponseGetParams{})
	if err != nil || got.Status != "failed" || got.Error.Code != agentrt.CodeModuleFailed {
		t.Errorf("the response read again: %v, error %s, %v; want failed, module_failed", got.Status, got.JSON.Error.Raw(), err)
	}
	if _, err := c.Responses.Cancel(t.Context(), bg.ID); !apiErrorIs(err, http.StatusConflict, agentrt.CodeNotRunning) {
		t.Errorf("cancel of the failed response: %v; want 409 not_running", err)
	}
	close(g.release)
	for ev, err := range f.r.Watch(t.Context(), id, desk.Seq) {
		if err != nil {
			t.Fatal(err)
		}
		if rf, ok := ev.Data.(*session.RunFinished); ok && ev.RunID == desk.RunID {
			if rf.Status != session.StatusDone {
				t.Errorf("the desk's turn ended %s (%s), want done: the response's cancel stopped it", rf.Status, rf.Reason)
			}
			break
		}
	}
}
