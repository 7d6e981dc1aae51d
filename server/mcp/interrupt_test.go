package mcp_test

import (
	"net/http"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentrt/agentrt"
)

// A person's interrupt ends the turn a tools/call follows: the call
// answers that it was interrupted, and does not take the session's next
// turn — another source's input — as its answer (on b63961d it answered
// with the desk's).
func TestCallEndsAtAPersonsInterrupt(t *testing.T) {
	f := newFixture(t)
	cs := f.connect(t, "key-a", "", nil)
	id := f.newSession(t)
	done := make(chan called, 1)
	go callAsync(t.Context(), cs, &sdk.CallToolParams{Name: "assistant", Arguments: map[string]any{"message": "block", "session": id}}, done)
	f.waitEntered(t, done)
	if code := f.rest(t, "POST", "/v1/sessions/"+id+"/interrupt", `{"reason":"a person stopped it"}`, nil); code != http.StatusOK {
		t.Fatalf("interrupt: %d", code)
	}
	if code := f.rest(t, "POST", "/v1/sessions/"+id+"/messages", `{"text":"from the desk","source":"desk"}`, nil); code != http.StatusAccepted {
		t.Fatalf("the desk's input: %d", code)
	}
	c := <-done
	if c.err != nil {
		t.Fatal(c.err)
	}
	got := text(c.res)
	if !c.res.IsError || c.out.Code != agentrt.CodeInterrupted || strings.Contains(got, "desk") {
		t.Fatalf("the call answered %q (error %v, code %q); want it interrupted, without the desk's answer", got, c.res.IsError, c.out.Code)
	}
	close(f.model.gate)
}
