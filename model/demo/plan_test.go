package demo_test

import (
	"testing"

	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/model/demo"
)

// planRequest is a planner's request as agentrt's plan-and-execute
// strategy writes it: the tools in the text, none offered to call.
func planRequest(question string, tools ...string) *model.Request {
	text := "Make a plan to answer the question below with the tools listed. Reply with only a JSON object:\n{…}\n\nTools:\n"
	for _, name := range tools {
		text += "- " + name + ": does things\n  arguments schema: {\"type\":\"object\"}\n"
	}
	text += "\nQuestion: " + question + "\n"
	return &model.Request{System: "You are helpful.", Messages: []model.Message{model.TextMessage(model.RoleUser, text)}}
}

// Asked for a plan, the demo model plans what it can do and otherwise
// plans a reply saying what it cannot.
func TestPlans(t *testing.T) {
	t.Parallel()
	notice := `{"steps":[{"kind":"reply","text":"` + demo.PlanNotice + `"}]}`
	for _, tc := range []struct {
		req  *model.Request
		want string
	}{
		{planRequest("what is 21*2+5?", "calculator", "clock"), `{"steps":[{"kind":"tool","tool":"calculator","arguments":{"expression":"21*2+5"}}]}`},
		{planRequest("what day is it", "calculator", "clock"), `{"steps":[{"kind":"tool","tool":"clock","arguments":{}}]}`},
		{planRequest("what is 21*2+5?", "clock"), notice},
		{planRequest("what day is it"), notice},
		{planRequest("write a poem", "calculator", "clock"), notice},
	} {
		if got := generate(t, tc.req).Message.Text(); got != tc.want {
			t.Errorf("%q:\n got %s\nwant %s", tc.req.Messages[0].Text(), got, tc.want)
		}
	}
	// The same text with tools to call is an ordinary question: the
	// demo model does not plan it.
	req := planRequest("what is 1+1", "calculator")
	req.Tools = []model.ToolSpec{calculator}
	if resp := generate(t, req); len(resp.Message.ToolCalls) != 1 {
		t.Errorf("a request with tools: %+v", resp.Message)
	}
}

// Asked for the summary, the demo model answers from the steps' results
// as it answers tool results, passing over steps that are not tool calls.
func TestPlanSummary(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ results, want string }{
		{"1. calculator {\"expression\":\"21*2+5\"}: {\"expression\":\"21*2+5\",\"result\":47}\n", "21*2+5 = 47"},
		{"1. clock {}: {\"time\":\"2026-03-04T05:06:07Z\",\"weekday\":\"Wednesday\"}\n" +
			"2. calculator {\"expression\":\"1/0\"}: failed: division by zero\n" +
			"3. task: look it up: \"found\"\n4. calculator {\"expression\":\"2\"}: skipped\n",
			`It is 2026-03-04T05:06:07Z (Wednesday). The calculator tool failed: "division by zero".`},
		{"1. task: look it up: \"found\"\n", demo.Notice},
	} {
		req := &model.Request{System: "You answer the user's question from the results of the steps that were run for it.",
			Messages: []model.Message{model.TextMessage(model.RoleUser, "Question: q?\n\nResults:\n"+tc.results)}}
		if got := generate(t, req).Message.Text(); got != tc.want {
			t.Errorf("%q:\n got %q\nwant %q", tc.results, got, tc.want)
		}
	}
}
