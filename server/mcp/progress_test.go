package mcp_test

import (
	"cmp"
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/model/scripted"
	"github.com/agentrt/agentrt/tool"
)

// With a progress token, a call reports the agent's progress: its
// rounds, tool calls and results, in order.
func TestProgress(t *testing.T) {
	f := newFixture(t)
	got := make(chan *sdk.ProgressNotificationParams, 64)
	cs := f.connect(t, "key-a", "2025-11-25", &sdk.ClientOptions{ProgressNotificationHandler: func(ctx context.Context, req *sdk.ProgressNotificationClientRequest) {
		got <- req.Params
	}})
	params := &sdk.CallToolParams{Name: "assistant", Arguments: map[string]any{"message": "call lookup {}"}}
	params.SetProgressToken("p1")
	res, out := call(t, cs, params)
	if res.IsError || out.Status != "done" {
		t.Fatalf("call: %q", text(res))
	}
	// The client hands notifications to its handler on a goroutine of
	// their own: they may come in after the result.
	want := []string{"round 1", "calling lookup", "lookup done", "round 2"}
	var ps []*sdk.ProgressNotificationParams
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	for len(ps) < len(want) {
		select {
		case p := <-got:
			if p.ProgressToken != "p1" {
				t.Errorf("progress %+v: want token p1", p)
			}
			ps = append(ps, p)
		case <-ctx.Done():
			t.Fatalf("%d progress notifications: want %q", len(ps), want)
		}
	}
	slices.SortFunc(ps, func(a, b *sdk.ProgressNotificationParams) int { return cmp.Compare(a.Progress, b.Progress) })
	var msgs []string
	for i, p := range ps {
		if p.Progress != float64(i+1) {
			t.Errorf("progress values %v: want 1, 2, 3, ...", p.Progress)
		}
		msgs = append(msgs, p.Message)
	}
	if !slices.Equal(msgs, want) {
		t.Errorf("progress %q: want %q", msgs, want)
	}
}

// A turn that follows a plan says in its progress which step of how many
// runs ("plan step 2 of 2"). No notification carries a total: the
// progress value counts notifications, whose number the model decides as
// it goes.
func TestProgressPlanSteps(t *testing.T) {
	lookup := tool.Must(tool.New("lookup", "looks up", func(ctx context.Context, in struct{}) (string, error) { return "found", nil }))
	tools, err := tool.NewRegistry(lookup)
	if err != nil {
		t.Fatal(err)
	}
	plan := `{"goal":"look twice","steps":[{"kind":"tool","tool":"lookup","arguments":{}},{"kind":"tool","tool":"lookup","arguments":{}}]}`
	f := newFixture(t, &agentrt.Agent{Name: "planner", Model: scripted.New("planner", scripted.Reply{Text: plan}), Tools: tools,
		Policy: agentrt.PlanExecute{SummaryTemplate: true}})
	got := make(chan *sdk.ProgressNotificationParams, 64)
	cs := f.connect(t, "key-a", "2025-11-25", &sdk.ClientOptions{ProgressNotificationHandler: func(ctx context.Context, req *sdk.ProgressNotificationClientRequest) {
		got <- req.Params
	}})
	params := &sdk.CallToolParams{Name: "planner", Arguments: map[string]any{"message": "look it up twice"}}
	params.SetProgressToken("p1")
	if res, out := call(t, cs, params); res.IsError || out.Status != "done" {
		t.Fatalf("call: %q", text(res))
	}
	var steps []string
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	for len(steps) < 2 {
		select {
		case p := <-got:
			if p.Total != 0 {
				t.Errorf("progress %+v: want no total", p)
			}
			if strings.HasPrefix(p.Message, "plan step") {
				steps = append(steps, p.Message)
			}
		case <-ctx.Done():
			t.Fatalf("plan step notifications %q: want two", steps)
		}
	}
	slices.Sort(steps)
	if want := []string{"plan step 1 of 2", "plan step 2 of 2"}; !slices.Equal(steps, want) {
		t.Errorf("plan step notifications %q: want %q", steps, want)
	}
}
