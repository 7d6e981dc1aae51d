package server_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/agentrt/agentrt/gateway"
	"github.com/agentrt/agentrt/session"
)

// A session's source with as many inputs waiting as the gateway's
// max_pending allows refuses the next message: 429, code source_full, a
// message that says which bound and what to do; nothing is stored.
func TestMessageToAFullSource(t *testing.T) {
	f := newFixture(t, options{hold: true, gateway: func(c *gateway.Config) { c.Policy, c.MaxPending = gateway.Queue, 2 }})
	id := f.create(t, "")
	send := func(text string) (int, []byte) {
		code, body, _ := f.do(t, "POST", "/v1/sessions/"+id+"/messages", "", map[string]string{"text": text})
		return code, body
	}
	if code, body := send("first"); code != http.StatusAccepted {
		t.Fatalf("first: %d %s", code, body)
	}
	// The first turn waits in its model call; what comes now waits.
	for ev, err := range f.r.Watch(t.Context(), id, 0) {
		if err != nil {
			t.Fatal(err)
		}
		if ev.Type == session.TypeModelStarted {
			break
		}
	}
	for _, text := range []string{"second", "third"} {
		if code, body := send(text); code != http.StatusAccepted {
			t.Fatalf("%s: %d %s", text, code, body)
		}
	}
	code, body := send("fourth")
	var e struct {
		Error struct{ Code, Message string }
	}
	_ = json.Unmarshal(body, &e)
	want := "source " + id + " has 2 inputs waiting for its turn, as many as it may (max_pending 2); the input was not stored: send it again once its turn has answered them"
	if code != http.StatusTooManyRequests || e.Error.Code != "source_full" || e.Error.Message != want {
		t.Errorf("fourth: %d %s; want 429 source_full: %s", code, body, want)
	}
	close(f.model.hold)
}
