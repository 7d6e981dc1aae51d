package server_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/gateway"
	"github.com/agentrt/agentrt/model/scripted"
	"github.com/agentrt/agentrt/server"
)

// An Idempotency-Key longer than the gateway takes is 400
// bad_idempotency_key, through the header and through a WebSocket input
// frame's key, and nothing is stored.
func TestIdempotencyKeyTooLong(t *testing.T) {
	f := newFixture(t, options{})
	id := f.create(t, "")
	long := strings.Repeat("k", gateway.MaxKeyBytes+1)
	code, body, _ := f.do(t, "POST", "/v1/sessions/"+id+"/messages", "", map[string]any{"text": "one"}, "Idempotency-Key", long)
	var e server.ErrorBody
	_ = json.Unmarshal(body, &e)
	if code != http.StatusBadRequest || e.Error.Code != agentrt.CodeBadIdempotencyKey {
		t.Fatalf("a key of %d bytes: %d %s, want 400 %s", len(long), code, body, agentrt.CodeBadIdempotencyKey)
	}
	code, body, _ = f.do(t, "POST", "/v1/sessions/"+id+"/messages", "", map[string]any{"text": "one"},
		"Idempotency-Key", long[:gateway.MaxKeyBytes])
	if code != http.StatusAccepted {
		t.Fatalf("a key of %d bytes: %d %s, want 202", gateway.MaxKeyBytes, code, body)
	}

	w := newWSEnv(t, server.Config{}, wsTextAgent("a", scripted.Reply{Text: "hello"}))
	w.session(t, "", "a", "s1")
	cl := w.dial(t, "")
	cl.send(t, wsMsg{"type": "input", "id": "i1", "session": "s1", "text": "hi", "key": long})
	if fr := cl.await(t, "i1"); fr.Type != "error" || fr.Code != agentrt.CodeBadIdempotencyKey {
		t.Fatalf("a WebSocket input with a key of %d bytes: %+v, want an error frame %s", len(long), fr, agentrt.CodeBadIdempotencyKey)
	}
	if p, err := w.gw.Pending(t.Context()); err != nil || len(p) != 0 {
		t.Fatalf("pending inputs %+v (%v), want none stored", p, err)
	}
}
