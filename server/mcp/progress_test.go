package mcp_test

import (
	"cmp"
	"context"
	"errors"
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
// runs ("plan step 2 of 2"), a plan written again after a failed step
// counting the steps done before it. No notification carries a total: the
// progress value counts notifications, whose number the model decides as
// it goes.
func TestProgressPlanSteps(t *testing.T) {
	lookup := tool.Must(tool.New("lookup", "looks up", func(ctx context.Context, in struct{}) (string, error) { return "found", nil }))
	broken := tool.Must(tool.New("broken", "fails", func(ctx context.Context, in struct{}) (string, error) { return "", errors.New("out of order") }))
	tools, err := tool.NewRegistry(lookup, broken)
	if err != nil {
		t.Fatal(err)
	}
	step := func(name string) string { return `{"kind":"tool","tool":"` + name + `","arguments":{}}` }
	planner := func(name string, replan bool, plans ...string) *agentrt.Agent {
		var replies []scripted.Reply
		for _, p := range plans {
			replies = append(replies, scripted.Reply{Text: `{"steps":[` + p + `]}`})
		}
		return &agentrt.Agent{Name: name, Model: scripted.New(name, replies...), Tools: tools,
			Policy: agentrt.PlanExecute{SummaryTemplate: true, Replan: replan}}
	}
	f := newFixture(t,
		planner("planner", false, step("lookup")+","+step("lookup")),
		planner("replanner", true, step("lookup")+","+step("broken"), step("lookup")))
	for _, tc := range []struct {
		agent string
		want  []string
	}{
		{"planner", []string{"plan step 1 of 2", "plan step 2 of 2"}},
		{"replanner", []string{"plan step 1 of 2", "plan step 2 of 2", "plan step 3 of 3"}},
	} {
		t.Run(tc.agent, func(t *testing.T) {
			got := make(chan *sdk.ProgressNotificationParams, 64)
			cs := f.connect(t, "key-a", "2025-11-25", &sdk.ClientOptions{ProgressNotificationHandler: func(ctx context.Context, req *sdk.ProgressNotificationClientRequest) {
				got <- req.Params
			}})
			params := &sdk.CallToolParams{Name: tc.agent, Arguments: map[string]any{"message": "look it up"}}
			params.SetProgressToken("p1")
			if res, out := call(t, cs, params); res.IsError || out.Status != "done" {
				t.Fatalf("call: %q", text(res))
			}
			var steps []string
			ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
			defer cancel()
			for len(steps) < len(tc.want) {
				select {
				case p := <-got:
					if p.Total != 0 {
						t.Errorf("progress %+v: want no total", p)
					}
					if strings.HasPrefix(p.Message, "plan step") {
						steps = append(steps, p.Message)
					}
				case <-ctx.Done():
					t.Fatalf("plan step notifications %q: want %q", steps, tc.want)
				}
			}
			slices.Sort(steps)
			if !slices.Equal(steps, tc.want) {
				t.Errorf("plan step notifications %q: want %q", steps, tc.want)
			}
		})
	}
}
