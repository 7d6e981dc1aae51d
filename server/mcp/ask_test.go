package mcp_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// An approval during a call is an elicitation to the client, over the
// 2025 protocol (elicitation/create while the call waits: Streamable
// HTTP) and over 2026-07-28 (input requests in the result, answered by
// the call again: stdio, as agentrt mcp serve serves it):
// approve runs the call, edit runs it with the client's arguments,
// decline rejects it; the call's result is the turn's answer after.
func TestApprovalIsElicitation(t *testing.T) {
	f := newFixture(t)
	for _, version := range []string{"2025-11-25", "2026-07-28"} {
		for _, tc := range []struct {
			name    string
			answer  *sdk.ElicitResult
			want    string
			wantErr bool
		}{
			{"approve", &sdk.ElicitResult{Action: "accept", Content: map[string]any{"decision": "approve"}}, "deployed to prod", false},
			{"edit", &sdk.ElicitResult{Action: "accept", Content: map[string]any{"decision": "edit", "arguments": `{"env":"staging"}`}}, "deployed to staging", false},
			{"decline", &sdk.ElicitResult{Action: "decline"}, "rejected", false},
		} {
			t.Run("version="+version+"/"+tc.name, func(t *testing.T) {
				var mu sync.Mutex
				var asked []string
				cs := connectAt(t, f, version, &sdk.ClientOptions{ElicitationHandler: func(ctx context.Context, req *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
					mu.Lock()
					defer mu.Unlock()
					asked = append(asked, req.Params.Message)
					return tc.answer, nil
				}})
				res, out := call(t, cs, &sdk.CallToolParams{Name: "assistant", Arguments: map[string]any{"message": `call deploy {"env":"prod"}`}})
				mu.Lock()
				defer mu.Unlock()
				if len(asked) != 1 || !strings.Contains(asked[0], `deploy {"env":"prod"}`) {
					t.Errorf("elicitations %q: want one showing the call", asked)
				}
				if res.IsError || out.Status != "done" || !strings.Contains(out.Answer, tc.want) {
					t.Errorf("result %q %+v: want done with %q", text(res), out, tc.want)
				}
			})
		}
	}
}

// connectAt is a client of the fixture at protocol version: 2025-11-25
// over Streamable HTTP with key-a, 2026-07-28 over stdio (tenant ta, as
// key-a's).
func connectAt(t *testing.T, f *fixture, version string, opts *sdk.ClientOptions) *sdk.ClientSession {
	t.Helper()
	var cs *sdk.ClientSession
	if version == "2026-07-28" {
		cs = f.connectStdio(t, version, opts, nil)
	} else {
		cs = f.connect(t, "key-a", version, opts)
	}
	if v := protocol(cs); v != version {
		t.Fatalf("protocol %s: want %s", v, version)
	}
	return cs
}

// A prompt is an elicitation too, answered with text; a client that
// cancels leaves the request waiting, and the result says how to answer
// it.
func TestNoElicitationSaysHowToAnswer(t *testing.T) {
	f := newFixture(t)
	for _, tc := range []struct {
		name string
		opts *sdk.ClientOptions
	}{
		{"no elicitation", nil},
		{"cancelled", &sdk.ClientOptions{ElicitationHandler: func(context.Context, *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
			return &sdk.ElicitResult{Action: "cancel"}, nil
		}}},
	} {
		for _, version := range []string{"2025-11-25", "2026-07-28"} {
			t.Run(tc.name+"/version="+version, func(t *testing.T) {
				cs := connectAt(t, f, version, tc.opts)
				res, out := call(t, cs, &sdk.CallToolParams{Name: "assistant", Arguments: map[string]any{"message": `call deploy {"env":"prod"}`}})
				if res.IsError || out.Status != "waiting" || len(out.Requests) != 1 {
					t.Fatalf("result %q %+v: want waiting with the request", text(res), out)
				}
				q := out.Requests[0]
				if q.Kind != "approval" || len(q.Calls) != 1 || q.Calls[0].Name != "deploy" || q.Resolve != "/v1/sessions/"+out.SessionID+"/requests/"+q.ID {
					t.Errorf("request %+v: want the approval of deploy with its endpoint", q)
				}
				if !strings.Contains(text(res), q.Resolve) || !strings.Contains(text(res), "agentrt approve "+out.SessionID+" "+q.ID) {
					t.Errorf("text %q: want how to answer", text(res))
				}
			})
		}
	}
}
