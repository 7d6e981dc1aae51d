package a2a_test

import (
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/server/a2a"
	"github.com/agentrt/agentrt/tool"
)

// A remote A2A agent (here agentrt's own A2A server on 127.0.0.1) as a
// tool: its answer is the result, in the A2A context of the calling
// session; a question it asks comes back with its task id, and the next
// call answers it; its failure is the call's error.
func TestRemoteAgentTool(t *testing.T) {
	f := newFixture(t, options{})
	rt, err := a2a.Remote("helper", f.http.URL+"/v1/a2a/assistant", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	call := func(in a2a.RemoteInput) (string, error) {
		n++
		ctx := tool.WithCallInfo(t.Context(), tool.CallInfo{SessionID: "parent-1", CallID: "c" + string(rune('0'+n)),
			IdempotencyKey: tool.IdempotencyKey("parent-1", "c"+string(rune('0'+n))), Attempt: 1})
		args, _ := json.Marshal(in)
		out, err := rt.Call(ctx, args)
		var s string
		_ = json.Unmarshal(out, &s)
		return s, err
	}
	if got, err := call(a2a.RemoteInput{Task: "hello"}); err != nil || got != "echo: hello" {
		t.Fatalf("call: %q, %v; want echo: hello", got, err)
	}
	if s, err := f.r.Store().GetSession(context.Background(), "parent-1"); err != nil || s.Agent != "assistant" {
		t.Errorf("the remote context is the calling session's id: %v %v", s, err)
	}
	asked, err := call(a2a.RemoteInput{Task: `call deploy {"env":"qa"}`})
	if err != nil || !strings.Contains(asked, `deploy {"env":"qa"}`) {
		t.Fatalf("a call needing approval: %q, %v; want the question", asked, err)
	}
	m := regexp.MustCompile(`task_id "([^"]+)"`).FindStringSubmatch(asked)
	if m == nil {
		t.Fatalf("the question %q gives no task id", asked)
	}
	if got, err := call(a2a.RemoteInput{Task: "approve", TaskID: m[1]}); err != nil || got != `echo: "deployed to qa"` {
		t.Fatalf("the answer: %q, %v", got, err)
	}
	if _, err := call(a2a.RemoteInput{Task: "fail"}); err == nil || !strings.Contains(err.Error(), "ended TASK_STATE_FAILED: model: bad_request: the model refused") {
		t.Errorf("a failed remote task: %v; want the call's error saying why", err)
	}
	if _, err := a2a.Remote("x", "", "", nil); err == nil {
		t.Errorf("a remote agent without a url: no error")
	}
	bad, _ := a2a.Remote("nowhere", f.http.URL+"/v1/a2a/nobody", "", nil)
	if _, err := bad.Call(t.Context(), json.RawMessage(`{"task":"hi"}`)); err == nil || !strings.Contains(err.Error(), "its card") {
		t.Errorf("an agent with no card: %v", err)
	}
}
