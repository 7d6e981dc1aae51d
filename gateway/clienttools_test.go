package gateway_test

import (
	"context"
	"testing"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/gateway"
	"github.com/agentrt/agentrt/model"
)

// Client tools the run would refuse are refused by Submit, before the
// input is stored: the sender hears why at once, and no input waits in
// the inbox to be set aside by a worker later (which a follower of the
// turn would only learn by polling the inbox).
func TestSubmitRefusesClientToolsTheRunWould(t *testing.T) {
	e := newEnv(t, gateway.Config{})
	ctx := context.Background()
	if _, err := e.r.CreateSession(ctx, "assistant", "s1", nil); err != nil {
		t.Fatal(err)
	}
	clock := model.ToolSpec{Name: "local_time", InputSchema: []byte(`{"type":"object"}`)}
	for _, tc := range []struct {
		name  string
		in    gateway.Input
		wants string
	}{
		{"an agent tool's name, the session's agent",
			gateway.Input{Source: "web", Session: "s1", Text: "hi", ClientTools: []model.ToolSpec{{Name: "refund"}}}, "bad_client_tools"},
		{"an agent tool's name, a new session of the default agent",
			gateway.Input{Source: "web2", Session: "new", Text: "hi", ClientTools: []model.ToolSpec{{Name: "refund"}}}, "bad_client_tools"},
		{"an agent tool's name, the agent named",
			gateway.Input{Source: "web3", Session: "new2", Agent: "assistant", Text: "hi", ClientTools: []model.ToolSpec{{Name: "refund"}}}, "bad_client_tools"},
		{"a tool twice",
			gateway.Input{Source: "web", Session: "s1", Text: "hi", ClientTools: []model.ToolSpec{clock, clock}}, "bad_client_tools"},
		{"a tool without a name",
			gateway.Input{Source: "web", Session: "s1", Text: "hi", ClientTools: []model.ToolSpec{{Description: "x"}}}, "bad_client_tools"},
		{"a schema that is not an object",
			gateway.Input{Source: "web", Session: "s1", Text: "hi", ClientTools: []model.ToolSpec{{Name: "x", InputSchema: []byte(`[1]`)}}}, "bad_client_tools"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sub, err := e.g.Submit(ctx, tc.in)
			if code := agentrt.AsError(err).ErrorCode(); err == nil || code != tc.wants {
				t.Fatalf("Submit = %+v, %v (code %q); want code %s", sub, err, code, tc.wants)
			}
		})
	}
	for _, src := range []string{"web", "web2", "web3"} {
		if pending, err := e.store.Pending(ctx, src, 0); err != nil || len(pending) != 0 {
			t.Errorf("source %s: pending %v, %v; want nothing stored", src, pending, err)
		}
	}
	// A good declaration is taken.
	if _, err := e.g.Submit(ctx, gateway.Input{Source: "web", Session: "s1", Text: "hi", ClientTools: []model.ToolSpec{clock}}); err != nil {
		t.Fatalf("a good declaration: %v", err)
	}
}
