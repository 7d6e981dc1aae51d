package agentrt

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/session"
)

// A tool call's fragment costs nothing when nobody reads live events (no
// caller reading, a caller that stopped, a quiet call, no watcher), and
// is one event when someone does.
func TestLiveToolCallDeltaCost(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	x := &Exec{}
	x.r = &Runner{now: func() time.Time { return at }}
	x.st = &State{SessionID: "s1", RunID: "r1", Turn: 2}
	x.agent = &Agent{Name: "calc"}
	var got []*session.Event
	x.yield = func(e *session.Event, _ error) bool {
		got = append(got, e)
		return true
	}
	d := model.ToolCallDelta{Index: 1, ID: "call_1", Name: "search", Arguments: `{"q":`}
	for _, tc := range []struct {
		name                 string
		live, stopped, quiet bool
	}{
		{"no caller reads", false, false, false},
		{"the caller stopped reading", true, true, false},
		{"a quiet call", true, false, true},
	} {
		x.live, x.stopped, x.quiet = tc.live, tc.stopped, tc.quiet
		if n := testing.AllocsPerRun(100, func() { x.liveToolCallDelta(&d) }); n != 0 {
			t.Errorf("%s: %v allocations per fragment, want 0", tc.name, n)
		}
	}
	if len(got) != 0 {
		t.Fatalf("%d events yielded that nobody asked for", len(got))
	}

	x.live, x.stopped, x.quiet = true, false, false
	x.liveToolCallDelta(&d)
	d.Arguments = "changed" // a provider reuses its deltas: the event keeps its copy
	want := []*session.Event{{V: session.SchemaVersion, SessionID: "s1", RunID: "r1", Turn: 2, Type: session.TypeToolCallDelta,
		Time: at, Agent: "calc", Data: &session.ToolCallDelta{Index: 1, CallID: "call_1", Name: "search", Arguments: `{"q":`}}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("yielded (-want +got):\n%s", diff)
	}
}

// Announcing a streamed call's id (liveCallID) allocates nothing for the
// first calls of a reply: an Exec from the pool announces into its own
// array (one allocation a turn before, the first append).
func TestLiveCallIDAllocatesNothing(t *testing.T) {
	r := &Runner{}
	a := &Agent{}
	st := &State{SessionID: "s1", RunID: "r1"}
	d := model.ToolCallDelta{Index: 0, ID: "call_1"}
	base := testing.AllocsPerRun(100, func() { r.execs.Put(r.newExec(a, st)) })
	if n := testing.AllocsPerRun(100, func() {
		x := r.newExec(a, st)
		if id := x.liveCallID(&d); id != "call_1" {
			t.Fatalf("id %q, want call_1", id)
		}
		x.announced = x.announced[:0]
		r.execs.Put(x)
	}); n > base {
		t.Errorf("%v allocations to take an Exec and announce a call's id, %v to take it; want no more", n, base)
	}
}
