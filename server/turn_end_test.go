package server_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/agentrt/agentrt/gateway"
	"github.com/agentrt/agentrt/session"
)

// A person's interrupt ends the turn: the message stream of that turn
// ends with the run it interrupted, and does not carry the session's
// next turn — another source's input — as its own (on b63961d it went on
// with the desk's run, and never ended).
func TestMessageStreamEndsAtAPersonsInterrupt(t *testing.T) {
	f := newFixture(t, options{hold: true})
	id := f.create(t, "")
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	var got []sseEvent
	interrupted := false
	for ev := range f.streamCtx(t, ctx, "POST", "/v1/sessions/"+id+"/messages", "", map[string]string{"text": "think"}) {
		got = append(got, ev)
		if ev.typ == string(session.TypeModelStarted) && !interrupted {
			interrupted = true
			if code, body, _ := f.do(t, "POST", "/v1/sessions/"+id+"/interrupt", "", map[string]string{"reason": "a person stopped it"}); code != http.StatusOK {
				t.Fatalf("interrupt: %d %s", code, body)
			}
			if code, body, _ := f.do(t, "POST", "/v1/sessions/"+id+"/messages", "", map[string]string{"text": "from the desk", "source": "desk"}); code != http.StatusAccepted {
				t.Fatalf("the desk's input: %d %s", code, body)
			}
		}
	}
	if ctx.Err() != nil {
		t.Fatal("the stream of the interrupted turn did not end")
	}
	runs := map[string]bool{}
	for _, ev := range got {
		if ev.ev != nil {
			runs[ev.ev.RunID] = true
		}
	}
	last := got[len(got)-1]
	if len(runs) != 1 || last.ev == nil || last.ev.Type != session.TypeRunFinished {
		t.Fatalf("the stream carried runs %v and ended with %q; want the interrupted run only, ending with run_finished", runs, last.typ)
	}
	if rf := last.ev.Data.(*session.RunFinished); rf.Status != session.StatusInterrupted {
		t.Errorf("the stream's last run_finished: %+v", rf)
	}
}

// An input the reject policy refused, retried with the same
// Idempotency-Key, is refused again: 409 input_rejected, not 202
// duplicate (a retrying client took it for accepted, and it was never
// answered).
func TestRejectedInputRetriedWithItsKey(t *testing.T) {
	f := newFixture(t, options{hold: true, gateway: func(c *gateway.Config) { c.Policy = gateway.Reject }})
	id := f.create(t, "")
	if code, body, _ := f.do(t, "POST", "/v1/sessions/"+id+"/messages", "", map[string]string{"text": "first"}); code != http.StatusAccepted {
		t.Fatalf("first: %d %s", code, body)
	}
	// The first turn waits in its model call: the source's turn runs.
	for ev, err := range f.r.Watch(t.Context(), id, 0) {
		if err != nil {
			t.Fatal(err)
		}
		if ev.Type == session.TypeModelStarted {
			break
		}
	}
	for try := range 2 {
		code, body, _ := f.do(t, "POST", "/v1/sessions/"+id+"/messages", "", map[string]string{"text": "second"}, "Idempotency-Key", "k-2")
		if code != http.StatusConflict || !strings.Contains(string(body), `"input_rejected"`) {
			t.Fatalf("try %d of the rejected input: %d %s; want 409 input_rejected", try+1, code, body)
		}
	}
	close(f.model.hold)
}

// blockedModule fails the turn once released.
type blockedModule struct{ release chan struct{} }

func (blockedModule) Name() string { return "screen" }
func (blockedModule) Order() int   { return 10 }
func (m blockedModule) Run(ctx context.Context, _ *gateway.Turn) error {
	select {
	case <-m.release:
		return errors.New("the screening service is down")
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Two streams follow one input (the second sent it again with its key);
// the first leaves before the input is set aside: the second still hears
// the refusal at once (on b63961d the first unregistered the refusal's
// channel for both, and the second waited for a heartbeat).
func TestEveryFollowerOfAnInputHearsItsRefusal(t *testing.T) {
	mod := blockedModule{release: make(chan struct{})}
	f := newFixture(t, options{gateway: func(c *gateway.Config) { c.Modules = []gateway.Module{mod} }})
	id := f.create(t, "")
	body := map[string]string{"text": "hello"}
	firstCtx, leave := context.WithCancel(t.Context())
	first := f.streamCtx(t, firstCtx, "POST", "/v1/sessions/"+id+"/messages", "", body, "Idempotency-Key", "k-1")
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	second := f.streamCtx(t, ctx, "POST", "/v1/sessions/"+id+"/messages", "", body, "Idempotency-Key", "k-1")
	leave()
	for range first {
	}
	// The first follower is gone from the server too.
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for f.srv.Clients() > 1 {
		select {
		case <-tick.C:
		case <-ctx.Done():
			t.Fatal("the first stream stays open on the server")
		}
	}
	close(mod.release)
	var last sseEvent
	for ev := range second {
		last = ev
	}
	if ctx.Err() != nil {
		t.Fatal("the second follower never heard of the refusal")
	}
	if last.typ != "stream_error" || !strings.Contains(string(last.data), "screening service is down") {
		t.Fatalf("the second stream ended with %q %s; want stream_error with the module's failure", last.typ, last.data)
	}
}
