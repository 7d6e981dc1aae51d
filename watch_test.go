package agentrt_test

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/model/scripted"
	"github.com/agentrt/agentrt/session"
	"github.com/agentrt/agentrt/session/memstore"
)

// Start runs a turn in the background; watchers see its events in order,
// tokens included, and a watcher that reads nothing does not hold it up.
func TestStartWatchWait(t *testing.T) {
	m := scripted.New("m",
		scripted.Reply{Text: "warming up"},
		scripted.Reply{ToolCalls: []scripted.Call{scripted.ToolCall("calculator", `{"expression":"2*3"}`)}},
		scripted.Reply{Text: "the answer is six", Chunks: 4},
	)
	e := newEnv(t, nil, agentrt.Config{}, calcAgent(m, registry(t)))
	id := e.session(t, "calc")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	e.run(t, id, "warm up") // seq 1 to 6: a watcher from 0 sees them at once
	const warm = 6

	// A watcher that stops reading after the first event: its inbox
	// fills, the run goes on.
	stalled := make(chan struct{})
	go func() {
		defer close(stalled)
		for range e.r.Watch(ctx, id, 0) {
			<-ctx.Done()
			return
		}
	}()

	type got struct {
		evs []*session.Event
		err error
	}
	watched := make(chan got, 1)
	ready := make(chan struct{})
	go func() {
		var g got
		for ev, err := range e.r.Watch(ctx, id, 0) {
			if err != nil {
				g.err = err
				break
			}
			if ev.Seq == warm {
				close(ready) // subscribed: it has seen the log so far
				continue
			}
			if ev.Seq > warm || ev.Seq == 0 {
				g.evs = append(g.evs, ev)
			}
			if ev.Type == session.TypeRunFinished && ev.Seq > warm {
				break
			}
		}
		watched <- g
	}()
	wait(t, ready)
	h, err := e.r.Start(ctx, id, agentrt.Input{Text: "2*3?"})
	if err != nil {
		t.Fatal(err)
	}
	res, err := h.Wait(ctx)
	if err != nil || res.Status != session.StatusDone || res.Text != "the answer is six" || res.RunID != h.ID() {
		t.Fatalf("wait: %+v %v", res, err)
	}
	g := wait(t, watched)
	if g.err != nil {
		t.Fatal(g.err)
	}
	log := storedLog(t, e.store, id)[warm:]
	var committed []*session.Event
	var tokens []string
	for _, ev := range g.evs {
		if ev.Seq == 0 {
			if tok, ok := ev.Data.(*session.Token); ok { // not a tool_call_delta
				tokens = append(tokens, tok.Text)
			}
			continue
		}
		committed = append(committed, ev)
	}
	if diff := cmp.Diff(types(log), types(committed)); diff != "" {
		t.Errorf("watched events (-log +watched):\n%s", diff)
	}
	if s := strings.Join(tokens, ""); s != "the answer is six" {
		t.Errorf("tokens %q", tokens)
	}
	// Tokens come between the model_started and the model_finished of
	// their call.
	in := false
	for _, ev := range g.evs {
		switch ev.Type {
		case session.TypeModelStarted:
			in = true
		case session.TypeModelFinished:
			in = false
		case session.TypeToken:
			if !in {
				t.Errorf("token %+v outside a model call", ev.Data)
			}
		}
	}
	// Run.Events gives the run's events, from the store once it is over.
	var again []session.Type
	for ev, err := range h.Events(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		again = append(again, ev.Type)
	}
	if diff := cmp.Diff(types(log), again); diff != "" {
		t.Errorf("Run.Events after the run (-log +events):\n%s", diff)
	}
	cancel()
	<-stalled
}

// A watcher in another runner (another process) sees the commits through
// the store's Follower, and an unknown session is not_found.
func TestWatchFromAnotherRunner(t *testing.T) {
	store := memstore.New()
	e := newEnv(t, store, agentrt.Config{}, calcAgent(scripted.New("m", scripted.Reply{Text: "hello"}), nil))
	other := newEnv(t, store, agentrt.Config{}, calcAgent(scripted.New("m"), nil))
	id := e.session(t, "calc")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	seen := make(chan []session.Type, 1)
	subscribed := make(chan struct{})
	go func() {
		var ts []session.Type
		for ev, err := range other.r.Watch(ctx, id, 0) {
			if err != nil {
				t.Error(err)
				break
			}
			ts = append(ts, ev.Type)
			if ev.Type == session.TypeRunFinished {
				break
			}
		}
		seen <- ts
	}()
	close(subscribed)
	e.run(t, id, "hi")
	if diff := cmp.Diff(types(storedLog(t, store, id)), wait(t, seen)); diff != "" {
		t.Errorf("(-log +watched):\n%s", diff)
	}
	for _, err := range other.r.Watch(ctx, "nope", 0) {
		if errCode(err) != "not_found" {
			t.Errorf("Watch(unknown): %v", err)
		}
	}
}
