package app

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/config"
	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/model/demo"
	"github.com/agentrt/agentrt/model/scripted"
	"github.com/agentrt/agentrt/session"
)

func buildApp(t *testing.T, yaml string, opts Options) *App {
	t.Helper()
	cfg, err := config.Parse("agentrt.yaml", []byte(yaml), func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	opts.StoreDSN = "memory:"
	a, err := Build(context.Background(), cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	return a
}

// turns numbers the sessions runTurn makes.
var turns atomic.Int64

// runTurn runs text as the first turn of a new session of agent.
func runTurn(t *testing.T, a *App, agent, text string) *agentrt.Result {
	t.Helper()
	id := fmt.Sprintf("s%d", turns.Add(1))
	res, err := agentrt.Collect(a.Runner.Run(context.Background(), id, agentrt.Input{Text: text, Agent: agent}))
	if err != nil {
		t.Fatalf("run %q: %v", text, err)
	}
	return res
}

// An agent with strategy plan_execute on the offline demo model plans
// what the demo model can do (a calculator or clock step, then answers
// from the result) and ends anything else with a reply saying what it
// cannot do; no turn fails bad_plan.
func TestPlanExecuteOnDemo(t *testing.T) {
	now := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	a := buildApp(t, `
agents:
  planner: {model: demo, strategy: plan_execute, tools: [calculator, clock]}
  counter: {model: demo, strategy: plan_execute, tools: [clock]}
`, Options{Now: func() time.Time { return now }})
	for _, tc := range []struct{ agent, input, want string }{
		{"planner", "what is 21*2+5", "21*2+5 = 47"},
		{"planner", "what time is it?", "It is 2026-03-04T05:06:07Z (Wednesday)."},
		{"planner", "write me a poem", demo.PlanNotice},
		{"counter", "what is 21*2+5", demo.PlanNotice}, // no calculator to plan with
	} {
		res := runTurn(t, a, tc.agent, tc.input)
		if res.Status != session.StatusDone || res.Text != tc.want {
			t.Errorf("%s %q: %s %q %+v, want %q", tc.agent, tc.input, res.Status, res.Text, res.Err, tc.want)
		}
		for _, e := range res.Events {
			if d, ok := e.Data.(*session.Error); ok {
				t.Errorf("%s %q: error event %s: %s", tc.agent, tc.input, d.Code, d.Message)
			}
		}
	}
}

// plan: {summarizer: template} answers with the steps' observations and
// makes no summary call; model (and no summarizer) has the agent's model
// write it.
func TestPlanSummarizerChoice(t *testing.T) {
	plan := scripted.Reply{Text: `{"steps":[{"type":"tool","name":"calculator","arguments":{"expression":"6*7"}}]}`}
	for _, tc := range []struct {
		summarizer string
		want       string
		calls      int
	}{
		{"template", `#1 tool calculator succeeded: {"expression":"6*7","result":42}`, 1},
		{"model", "It is 42.", 2},
		{"", "It is 42.", 2},
	} {
		m := scripted.New("m", plan, scripted.Reply{Text: "It is 42."}).Record()
		line := ""
		if tc.summarizer != "" {
			line = ", plan: {summarizer: " + tc.summarizer + "}"
		}
		a := buildApp(t, "models: {m: {provider: demo}}\nagents:\n  p: {model: m, strategy: plan_execute, tools: [calculator]"+line+"}\n",
			Options{Models: map[string]model.Model{"m": m}})
		res := runTurn(t, a, "p", "6*7?")
		if res.Status != session.StatusDone || res.Text != tc.want {
			t.Errorf("summarizer %q: %s %q %+v, want %q", tc.summarizer, res.Status, res.Text, res.Err, tc.want)
		}
		var purposes []string
		for _, r := range m.Requests() {
			purposes = append(purposes, r.System[:min(len(r.System), 24)])
		}
		if len(m.Requests()) != tc.calls {
			t.Errorf("summarizer %q: %d model calls, want %d: %q", tc.summarizer, len(m.Requests()), tc.calls, purposes)
		}
	}
}

// With no compaction settings an agent compacts past the default bounds;
// compaction: off keeps the whole history.
func TestCompactionDefault(t *testing.T) {
	for _, tc := range []struct {
		name, setting string
		want          int // compaction events
	}{
		{"default", "", 1},
		{"off", ", compaction: off", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// 11 rounds of a call and its result: after the tenth, 21
			// messages, past the default 20: the summary is asked for
			// before the eleventh call.
			call := scripted.Reply{ToolCalls: []scripted.Call{scripted.ToolCall("calculator", `{"expression":"1+1"}`)}}
			var replies []scripted.Reply
			for range 10 {
				replies = append(replies, call)
			}
			if tc.want > 0 {
				replies = append(replies, scripted.Reply{Text: "summary of the sums"})
			}
			replies = append(replies, call, scripted.Reply{Text: "done"})
			m := scripted.New("m", replies...).Record()
			a := buildApp(t, "models: {m: {provider: demo}}\nagents:\n  p: {model: m, tools: [calculator], limits: {max_rounds: 20}, loop_detection: {off: true}"+tc.setting+"}\n",
				Options{Models: map[string]model.Model{"m": m}})
			res := runTurn(t, a, "p", "add")
			if res.Status != session.StatusDone || res.Text != "done" {
				t.Fatalf("run: %s %q %+v", res.Status, res.Text, res.Err)
			}
			var got []int
			for _, e := range res.Events {
				if d, ok := e.Data.(*session.Compaction); ok {
					got = append(got, d.CompactedCount)
					if d.Reason != "max_messages" {
						t.Errorf("reason %q", d.Reason)
					}
				}
			}
			if len(got) != tc.want {
				t.Errorf("compactions %v, want %d", got, tc.want)
			}
			reqs := m.Requests()
			last := reqs[len(reqs)-1].Messages
			if tc.want > 0 && (len(last) > agentrt.DefaultCompactMessages || !strings.HasPrefix(last[0].Text(), "[compacted] summary of the sums")) {
				t.Errorf("the last request has %d messages, the first %q", len(last), last[0].Text())
			}
			if tc.want == 0 {
				if diff := cmp.Diff(23, len(last)); diff != "" {
					t.Errorf("messages of the last request (-want +got):\n%s", diff)
				}
			}
		})
	}
}
