package agentrt_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/model/scripted"
	"github.com/agentrt/agentrt/session"
)

// A fork copies the log up to a seq and runs on its own; a fork of a
// waiting session keeps its pending request.
func TestFork(t *testing.T) {
	var runs atomic.Int32
	m := scripted.New("m",
		scripted.Reply{ToolCalls: []scripted.Call{scripted.ToolCall("deploy", `{"env":"prod"}`)}},
		scripted.Reply{Text: "deployed"},
	)
	e := newEnv(t, nil, agentrt.Config{}, calcAgent(m, registry(t, askTool(t, &runs))))
	ctx := context.Background()
	id := e.session(t, "calc")
	res := e.run(t, id, "deploy")
	if res.Status != session.StatusWaiting {
		t.Fatalf("run: %+v", res)
	}
	last := res.Events[len(res.Events)-1].Seq
	f, err := e.r.Fork(ctx, id, last, "fork1")
	if err != nil {
		t.Fatal(err)
	}
	if f.Status != session.StatusWaiting || f.LastSeq != last || f.Metadata["forked_from"] != id {
		t.Fatalf("fork: %+v", f)
	}
	st, err := e.r.Load(ctx, "fork1")
	if err != nil || len(st.Requests) != 1 {
		t.Fatalf("the fork's pending requests: %+v %v", st, err)
	}
	// The fork is resolved and finished on its own; the original waits on.
	if _, err := e.r.Resolve(ctx, "fork1", st.Requests[0].ID, agentrt.Resolution{Decision: "approve"}); err != nil {
		t.Fatal(err)
	}
	if res := e.resume(t, "fork1"); res.Status != session.StatusDone || res.Text != "deployed" {
		t.Fatalf("fork resumed: %+v", res)
	}
	if s, _ := e.store.GetSession(ctx, id); s.Status != session.StatusWaiting {
		t.Errorf("the original is %s", s.Status)
	}
	// A fork earlier in the log: before the model's reply, mid-run.
	early, err := e.r.Fork(ctx, id, 3, "")
	if err != nil || early.Status != session.StatusRunning || early.LastSeq != 3 {
		t.Fatalf("early fork: %+v %v", early, err)
	}
	for _, bad := range []int64{0, -1, last + 1} {
		if _, err := e.r.Fork(ctx, id, bad, ""); errCode(err) != "bad_seq" || !strings.Contains(err.Error(), "cannot fork at") {
			t.Errorf("fork at %d: %v", bad, err)
		}
	}
	if _, err := e.r.Fork(ctx, "nope", 1, ""); errCode(err) != "not_found" {
		t.Errorf("fork of an unknown session: %v", err)
	}
	if _, err := e.r.Fork(ctx, id, 1, "fork1"); errCode(err) != "session_exists" {
		t.Errorf("fork onto an existing id: %v", err)
	}
	storedLog(t, e.store, "fork1")
}
