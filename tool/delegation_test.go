package tool_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/tool"
)

// A Delegation hands its reports on in order: Start first, then progress
// and text, then one end; what comes out of that order is dropped, and a
// nil Delegation (a call outside a runtime) reports nothing.
func TestDelegationOrder(t *testing.T) {
	var got []tool.DelegationReport
	d := tool.NewDelegation("a2a:t0", func(r tool.DelegationReport) { got = append(got, r) })
	ctx := tool.WithDelegation(context.Background(), d)
	if tool.DelegationFrom(ctx) != d || tool.DelegationFrom(context.Background()) != nil {
		t.Fatal("DelegationFrom does not return the context's delegation")
	}
	if d.Previous() != "a2a:t0" {
		t.Errorf("Previous %q", d.Previous())
	}
	d.Progress("working", "before the start")
	d.Finish("before the start")
	d.Start("helper", "a2a:t1", "look it up", true)
	d.Start("helper", "a2a:t2", "a second start", false)
	d.Progress("working", "on it")
	d.Text("forty")
	d.Pause("input_required")
	d.Finish("after the end")
	d.Fail("failed", "after the end")
	d.Text("after the end")
	want := []tool.DelegationReport{
		{Kind: tool.DelegationStarted, Agent: "helper", Child: "a2a:t1", Task: "look it up", Resumed: true},
		{Kind: tool.DelegationProgress, State: "working", Message: "on it"},
		{Kind: tool.DelegationText, Text: "forty"},
		{Kind: tool.DelegationPaused, Reason: "input_required"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("reports (-want +got):\n%s", diff)
	}

	var none *tool.Delegation
	none.Start("helper", "a2a:t1", "task", false)
	none.Finish("answer")
	if none.Previous() != "" {
		t.Error("a nil Delegation has a previous child")
	}
}
