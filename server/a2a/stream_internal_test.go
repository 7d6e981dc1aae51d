package a2a

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// A SendStreamingMessage that starts a task is written by the endpoint
// itself, as a2a-go's server would write it (one with a push config too:
// the config is kept, and the pusher pushes); any other request (a
// message on a task, another method, a message a2a-go refuses, a body
// that is no JSON-RPC request) is left to a2a-go with its body as it
// came.
func TestServeStreamTakesNewTasksOnly(t *testing.T) {
	ep, _ := endpoint(t)
	tests := []struct {
		name, body string
		served     bool
	}{
		{"new task", `{"jsonrpc":"2.0","id":1,"method":"SendStreamingMessage","params":{"message":{"messageId":"m1","role":"ROLE_USER","parts":[{"text":"hi"}]}}}`, true},
		{"string id", `{"jsonrpc":"2.0","id":"a","method":"SendStreamingMessage","params":{"message":{"messageId":"m2","role":"ROLE_USER","parts":[{"text":"hi"}]}}}`, true},
		{"on a task", `{"jsonrpc":"2.0","id":1,"method":"SendStreamingMessage","params":{"message":{"messageId":"m3","taskId":"task_x","role":"ROLE_USER","parts":[{"text":"hi"}]}}}`, false},
		{"push config", `{"jsonrpc":"2.0","id":1,"method":"SendStreamingMessage","params":{"configuration":{"taskPushNotificationConfig":{"url":"http://127.0.0.1:1/"}},"message":{"messageId":"m4","role":"ROLE_USER","parts":[{"text":"hi"}]}}}`, true},
		{"history length", `{"jsonrpc":"2.0","id":1,"method":"SendStreamingMessage","params":{"configuration":{"historyLength":1},"message":{"messageId":"m5","role":"ROLE_USER","parts":[{"text":"hi"}]}}}`, false},
		{"not streaming", `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m6","role":"ROLE_USER","parts":[{"text":"hi"}]}}}`, false},
		{"no parts", `{"jsonrpc":"2.0","id":1,"method":"SendStreamingMessage","params":{"message":{"messageId":"m7","role":"ROLE_USER","parts":[]}}}`, false},
		{"object id", `{"jsonrpc":"2.0","id":{},"method":"SendStreamingMessage","params":{"message":{"messageId":"m8","role":"ROLE_USER","parts":[{"text":"hi"}]}}}`, false},
		{"old version", `{"jsonrpc":"1.0","id":1,"method":"SendStreamingMessage","params":{"message":{"messageId":"m9","role":"ROLE_USER","parts":[{"text":"hi"}]}}}`, false},
		{"no JSON", `{"jsonrpc":`, false},
	}
	var left []byte // the body a2a-go's server got
	ep.rpc = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { left, _ = io.ReadAll(r.Body) })
	m := &mux{cfg: Config{KeepAlive: time.Hour}, agents: map[string]*agentEndpoint{"assistant": ep}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			left = nil
			r := httptest.NewRequestWithContext(t.Context(), http.MethodPost, "/v1/a2a/assistant", strings.NewReader(tt.body))
			r.SetPathValue("agent", "assistant")
			w := httptest.NewRecorder()
			m.serveRPC(w, r)
			if served := left == nil; served != tt.served {
				t.Fatalf("served %v; want %v", served, tt.served)
			}
			if !tt.served {
				if w.Code != http.StatusOK || w.Body.Len() > 0 || len(w.Header()) > 0 {
					t.Errorf("left to a2a-go, but wrote %d %v %q", w.Code, w.Header(), w.Body.String())
				}
				if string(left) != tt.body {
					t.Errorf("the body left to a2a-go: %q; want it as it came", left)
				}
				return
			}
			got := w.Body.String()
			if ct := w.Header().Get("Content-Type"); ct != "text/event-stream" ||
				!strings.Contains(got, `"result":{"task":`) || !strings.Contains(got, "TASK_STATE_COMPLETED") {
				t.Errorf("the stream (%s):\n%s\nwant the task, then its updates to COMPLETED", ct, got)
			}
		})
	}
	if n := ep.h.tasks.updates.Load(); n != 0 {
		t.Errorf("a2a-go's task manager made %d updates; want none (nothing was left to it)", n)
	}
}
