package demo

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/agentrt/agentrt/model"
)

// PlanNotice is the answer of the demo model's plan for a question it
// cannot plan: a plan of one reply step saying so, which ends the run
// with this text rather than with a plan that does not parse.
const PlanNotice = "This is agentrt's offline demo model, not a language model: " +
	"it can only plan arithmetic with a calculator tool and the date and time with a clock tool. " +
	"To use a real model, set OPENAI_API_KEY (and OPENAI_BASE_URL for any OpenAI-compatible server) " +
	"or ANTHROPIC_API_KEY, or add a models entry to agentrt.yaml."

// The requests of agentrt's plan-and-execute strategy, as its executors
// write them: the planner's lists the tools in its text and offers none to
// call; the summary's gives the question and one line per step's result.
// The demo model knows them by these marks (agentrt's tests run the
// strategy on the demo model, so a change there shows).
const (
	planPrefix    = "Make a plan to answer"
	planTools     = "\nTools:\n"
	planQuestion  = "\nQuestion: "
	summaryPrefix = "Question: "
	summaryMark   = "\n\nResults:\n"
)

// planned answers a planner's or a summary's request; ok is false for any
// other request.
func planned(req *model.Request, text string) (reply string, ok bool) {
	if len(req.Tools) > 0 {
		return "", false // both requests offer no tool to call
	}
	if p, ok := planFor(text); ok {
		return p, true
	}
	return summarise(text)
}

// planFor writes the plan for a planner's request: a calculator step for
// arithmetic, a clock step for the date and time (when the tool is
// listed), else a reply step with PlanNotice.
func planFor(text string) (string, bool) {
	if !strings.HasPrefix(text, planPrefix) {
		return "", false
	}
	_, rest, ok := strings.Cut(text, planTools)
	if !ok {
		return "", false
	}
	tools, rest, ok := strings.Cut(rest, planQuestion)
	if !ok {
		return "", false
	}
	question, _, _ := strings.Cut(rest, "\n")
	listed := map[string]bool{}
	for line := range strings.Lines(tools) {
		if name, _, ok := strings.Cut(strings.TrimPrefix(line, "- "), ": "); ok && strings.HasPrefix(line, "- ") {
			listed[name] = true
		}
	}
	type step struct {
		Kind      string          `json:"kind"`
		Tool      string          `json:"tool,omitempty"`
		Arguments json.RawMessage `json:"arguments,omitempty"`
		Text      string          `json:"text,omitempty"`
	}
	s := step{Kind: "reply", Text: PlanNotice}
	switch expr := expression(question); {
	case expr != "" && listed[calculatorTool]:
		args, _ := json.Marshal(struct {
			Expression string `json:"expression"`
		}{expr})
		s = step{Kind: "tool", Tool: calculatorTool, Arguments: args}
	case asksTime(question) && listed[clockTool]:
		s = step{Kind: "tool", Tool: clockTool, Arguments: json.RawMessage("{}")}
	}
	b, _ := json.Marshal(struct {
		Steps []step `json:"steps"`
	}{[]step{s}})
	return string(b), true
}

// summarise answers a summary's request from its result lines, each
// "N. TOOL ARGUMENTS: RESULT" or "N. TOOL ARGUMENTS: failed: ERROR", as
// it answers tool results; lines of other steps are passed over.
func summarise(text string) (string, bool) {
	if !strings.HasPrefix(text, summaryPrefix) {
		return "", false
	}
	_, results, ok := strings.Cut(text, summaryMark)
	if !ok {
		return "", false
	}
	var parts []string
	for line := range strings.Lines(results) {
		line = strings.TrimSuffix(line, "\n")
		_, rest, ok := strings.Cut(line, ". ")
		if !ok {
			continue
		}
		name, rest, ok := strings.Cut(rest, " ")
		if !ok {
			continue
		}
		dec := json.NewDecoder(strings.NewReader(rest))
		var args json.RawMessage
		if dec.Decode(&args) != nil {
			continue // not a tool step: its arguments would follow its name
		}
		result, ok := strings.CutPrefix(rest[dec.InputOffset():], ": ")
		switch {
		case !ok || result == "not run" || result == "skipped":
		case strings.HasPrefix(result, "failed: "):
			parts = append(parts, fmt.Sprintf("The %s tool failed: %q.", name, errorText(strings.TrimPrefix(result, "failed: "))))
		default:
			parts = append(parts, answerOne(model.TextMessage(model.RoleTool, result), name))
		}
	}
	if len(parts) == 0 {
		return Notice, true
	}
	return strings.Join(parts, " "), true
}
