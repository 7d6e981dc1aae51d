package cli_test

import (
	"testing"

	"github.com/agentrt/agentrt/internal/cli"
	"github.com/agentrt/agentrt/session"
)

// A delegation's progress reads as the child's round, or, for a remote
// child, its task's state and what it said.
func TestSummarySubagentProgress(t *testing.T) {
	for _, tc := range []struct {
		d    session.SubagentProgress
		want string
	}{
		{session.SubagentProgress{ChildSession: "s.r.c1", Round: 3}, "s.r.c1 round 3"},
		{session.SubagentProgress{ChildSession: "a2a:t1", State: "working"}, "a2a:t1 working"},
		{session.SubagentProgress{ChildSession: "a2a:t1", State: "working", Message: `{"name":"deploy","type":"tool_call"}`},
			`a2a:t1 working {"name":"deploy","type":"tool_call"}`},
	} {
		ev := &session.Event{Type: session.TypeSubagentProgress, Data: &tc.d}
		if got := cli.Summary(ev); got != tc.want {
			t.Errorf("Summary(%+v) = %q, want %q", tc.d, got, tc.want)
		}
	}
}
