// Package demo is agentrt's offline default model, used when no real model
// is configured. It is a handful of rules, and says so: it calls a
// calculator tool for arithmetic, a clock tool for the date and time, the
// ask_user tool for "ask me: QUESTION", answers from their results, and
// otherwise explains how to configure a real model (see Notice).
//
// So that what guards and combines agents can be seen without a network,
// it also delegates and repeats itself on request:
//
//   - "ask NAME: TASK" calls the tool NAME with {"task": TASK} when NAME is
//     offered and takes a task (a sub-agent: an agent among another's
//     tools), and answers with the sub-agent's answer;
//   - "repeat N times: REQUEST" makes REQUEST's tool call N times in the
//     turn (at most 50), as a model stuck in a loop would, then answers;
//     told by a loop warning that it repeats itself, it stops and answers
//     at once (agentrt's loop detection), and a budget (limits.max_steps)
//     pauses it like any run.
//
// It also serves an agent whose strategy is plan_execute: asked for a
// plan, it writes one with a calculator or clock step when the question
// is arithmetic or asks the time, and otherwise a plan whose one reply
// step says what it cannot do (PlanNotice); asked for the summary, it
// answers from the steps' results.
//
// It streams its text word by word and reports an estimated usage, so the
// whole streaming path of an agent can be seen working without a network.
// Its replies depend only on the request: the same request always gets the
// same reply, tool call IDs included.
package demo

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"strings"

	"github.com/agentrt/agentrt/model"
)

// Name is the demo model's name.
const Name = "demo"

// Notice is the demo model's reply to anything it cannot handle.
const Notice = "This is agentrt's offline demo model, not a language model: " +
	"it can only do arithmetic with a calculator tool and tell the date and time with a clock tool. " +
	"To use a real model, set OPENAI_API_KEY (and OPENAI_BASE_URL for any OpenAI-compatible server) " +
	"or ANTHROPIC_API_KEY, or add a models entry to agentrt.yaml."

// The tools the demo model knows how to use.
const (
	calculatorTool = "calculator"
	clockTool      = "clock"
	askUserTool    = "ask_user"
)

// Model is the demo model. The zero value is ready to use, and it is safe
// for concurrent use: it has no state.
type Model struct{}

var _ model.Model = (*Model)(nil)

// New returns the demo model.
func New() *Model { return &Model{} }

// Name returns "demo".
func (*Model) Name() string { return Name }

// Stream answers req. A tool call comes as one chunk with finish reason
// tool_calls; text comes word by word, the last chunk carrying the usage
// and finish reason stop. The only error is ctx's, when it is done before
// the stream ends; it is the last value yielded.
func (*Model) Stream(ctx context.Context, req *model.Request) iter.Seq2[model.Chunk, error] {
	return func(yield func(model.Chunk, error) bool) {
		if err := ctx.Err(); err != nil {
			yield(model.Chunk{}, err)
			return
		}
		text, call := respond(req)
		usage := &model.Usage{InputTokens: tokens(requestSize(req))}
		if call != nil {
			usage.OutputTokens = tokens(len(call.Name) + len(call.Arguments))
			yield(model.Chunk{
				ToolCalls: []model.ToolCallDelta{{
					ID: call.ID, Name: call.Name, Arguments: string(call.Arguments),
				}},
				Usage:        usage,
				FinishReason: model.FinishToolCalls,
			}, nil)
			return
		}
		usage.OutputTokens = tokens(len(text))
		words := words(text)
		for i, w := range words {
			if err := ctx.Err(); err != nil {
				yield(model.Chunk{}, err)
				return
			}
			c := model.Chunk{Text: w}
			if i == len(words)-1 {
				c.Usage, c.FinishReason = usage, model.FinishStop
			}
			if !yield(c, nil) {
				return
			}
		}
	}
}

// respond decides the reply to req: a text, or a tool call.
func respond(req *model.Request) (string, *model.ToolCall) {
	if req == nil || len(req.Messages) == 0 {
		return Notice, nil
	}
	last := req.Messages[len(req.Messages)-1]
	switch last.Role {
	case model.RoleTool:
		if call := again(req); call != nil {
			return "", call
		}
		return answer(req.Messages), nil
	case model.RoleUser:
		text := last.Text()
		if strings.HasPrefix(text, loopWarning) {
			// Told it repeats itself: it stops, and answers from what it has.
			return stopped(req.Messages[:len(req.Messages)-1]), nil
		}
		if reply, ok := planned(req, text); ok {
			return reply, nil
		}
		if _, rest, ok := repeat(text); ok {
			text = rest
		}
		if name, args := callFor(req, text); name != "" {
			return "", newCall(req, name, args)
		}
	}
	return Notice, nil
}

// callFor returns the tool call that answers a person's text, if one
// does: its tool and arguments.
func callFor(req *model.Request, text string) (string, json.RawMessage) {
	if q, ok := askMe(text); ok && offers(req, askUserTool) {
		args, _ := json.Marshal(struct {
			Question string `json:"question"`
		}{q})
		return askUserTool, args
	}
	if name, task, ok := delegation(text); ok && offers(req, name) && takesTask(req, name) {
		args, _ := json.Marshal(struct {
			Task string `json:"task"`
		}{task})
		return name, args
	}
	if expr := expression(text); expr != "" && offers(req, calculatorTool) {
		args, _ := json.Marshal(struct {
			Expression string `json:"expression"`
		}{expr})
		return calculatorTool, args
	}
	if asksTime(text) && offers(req, clockTool) {
		return clockTool, json.RawMessage("{}")
	}
	return "", nil
}

// loopWarning starts the reminder agentrt's loop detection gives a model
// that repeats its tool calls.
const loopWarning = "[loop warning]"

// request returns the person's text the turn answers, and where it is in
// msgs: the last user message that is not a loop warning.
func request(msgs []model.Message) (string, int) {
	for i := len(msgs) - 1; i >= 0; i-- {
		if m := msgs[i]; m.Role == model.RoleUser && !strings.HasPrefix(m.Text(), loopWarning) {
			return m.Text(), i
		}
	}
	return "", -1
}

// again returns the next call of a "repeat N times:" turn that has made
// fewer than N: the same call as its first. nil when the turn asks for
// no repetition, or has made them all.
func again(req *model.Request) *model.ToolCall {
	text, at := request(req.Messages)
	n, _, ok := repeat(text)
	if !ok {
		return nil
	}
	var first *model.ToolCall
	made := 0
	for _, m := range req.Messages[at+1:] {
		for _, c := range m.ToolCalls {
			if first == nil {
				first = &c
			}
			if c.Name == first.Name && string(c.Arguments) == string(first.Arguments) {
				made++
			}
		}
	}
	if first == nil || made >= n {
		return nil
	}
	return newCall(req, first.Name, first.Arguments)
}

// stopped is the answer of a model told by a loop warning that it
// repeats itself: what its last tool results say, and that it stopped.
func stopped(msgs []model.Message) string {
	if len(msgs) == 0 || msgs[len(msgs)-1].Role != model.RoleTool {
		return "I was repeating myself, so I stopped."
	}
	return answer(msgs) + " (I was repeating myself, so I stopped.)"
}

// takesTask reports whether the tool called name takes a task: a
// sub-agent's input ({"task": …}).
func takesTask(req *model.Request, name string) bool {
	for _, t := range req.Tools {
		if t.Name != name {
			continue
		}
		var schema struct {
			Properties map[string]json.RawMessage `json:"properties"`
		}
		if json.Unmarshal(t.InputSchema, &schema) != nil {
			return false
		}
		_, ok := schema.Properties["task"]
		return ok
	}
	return false
}

// newCall numbers the call after those already in the conversation, so IDs
// are unique within it and the same for the same request.
func newCall(req *model.Request, name string, args json.RawMessage) *model.ToolCall {
	n := 1
	for _, m := range req.Messages {
		n += len(m.ToolCalls)
	}
	return &model.ToolCall{ID: fmt.Sprintf("demo_call_%d", n), Name: name, Arguments: args}
}

// offers reports whether req lets the model call the named tool.
func offers(req *model.Request, name string) bool {
	switch req.ToolChoice.Mode {
	case model.ToolChoiceNone:
		return false
	case model.ToolChoiceTool:
		if req.ToolChoice.Name != name {
			return false
		}
	}
	for _, t := range req.Tools {
		if t.Name == name {
			return true
		}
	}
	return false
}

// answer turns the tool results that end msgs into a reply.
func answer(msgs []model.Message) string {
	start := len(msgs)
	for start > 0 && msgs[start-1].Role == model.RoleTool {
		start--
	}
	var parts []string
	for _, m := range msgs[start:] {
		parts = append(parts, answerOne(m, toolName(msgs[:start], m)))
	}
	return strings.Join(parts, " ")
}

// toolName is the name of the tool m answers: its own Name, or that of the
// call it answers.
func toolName(history []model.Message, m model.Message) string {
	if m.Name != "" {
		return m.Name
	}
	for i := len(history) - 1; i >= 0; i-- {
		for _, c := range history[i].ToolCalls {
			if c.ID == m.ToolCallID {
				return c.Name
			}
		}
	}
	return "tool"
}

func answerOne(m model.Message, name string) string {
	text := strings.TrimSpace(m.Text())
	if m.IsError {
		return fmt.Sprintf("The %s tool failed: %q.", name, errorText(text))
	}
	var sub struct {
		Answer  string `json:"answer"`
		Session string `json:"session"`
	}
	if decode(text, &sub) && sub.Answer != "" && sub.Session != "" {
		return fmt.Sprintf("%s answered: %s", name, sub.Answer) // a sub-agent's
	}
	switch name {
	case calculatorTool:
		var out struct {
			Expression string      `json:"expression"`
			Result     json.Number `json:"result"`
		}
		if decode(text, &out) && out.Result != "" {
			if out.Expression == "" {
				return fmt.Sprintf("The result is %s.", out.Result)
			}
			return fmt.Sprintf("%s = %s", out.Expression, out.Result)
		}
	case askUserTool:
		var out struct {
			Answer   string   `json:"answer"`
			Selected []string `json:"selected"`
		}
		if decode(text, &out) {
			switch {
			case out.Answer != "":
				return fmt.Sprintf("You answered: %s", out.Answer)
			case len(out.Selected) > 0:
				return fmt.Sprintf("You chose: %s", strings.Join(out.Selected, ", "))
			}
		}
	case clockTool:
		var out struct {
			Time    string `json:"time"`
			Weekday string `json:"weekday"`
		}
		if decode(text, &out) && out.Time != "" {
			if out.Weekday == "" {
				return fmt.Sprintf("It is %s.", out.Time)
			}
			return fmt.Sprintf("It is %s (%s).", out.Time, out.Weekday)
		}
	}
	return fmt.Sprintf("The %s tool returned: %s", name, text)
}

// errorText is the error of a failed tool result: its "error" field when
// it is a JSON object that has one, else its text.
func errorText(text string) string {
	var out struct {
		Error string `json:"error"`
	}
	if decode(text, &out) && out.Error != "" {
		return out.Error
	}
	return text
}

func decode(text string, v any) bool {
	d := json.NewDecoder(strings.NewReader(text))
	d.UseNumber()
	return d.Decode(v) == nil
}

// words splits text after each space, so the pieces join back to text.
func words(text string) []string {
	var out []string
	for w := range strings.SplitAfterSeq(text, " ") {
		if strings.TrimSpace(w) == "" && len(out) > 0 {
			out[len(out)-1] += w // keep runs of spaces with the word before
			continue
		}
		out = append(out, w)
	}
	return out
}

func tokens(size int) int64 { return int64(size+3) / 4 }

func requestSize(req *model.Request) int {
	if req == nil {
		return 0
	}
	n := 0
	for _, m := range req.Messages {
		n += len(m.Text())
		for _, c := range m.ToolCalls {
			n += len(c.Name) + len(c.Arguments)
		}
	}
	for _, t := range req.Tools {
		n += len(t.Name) + len(t.Description) + len(t.InputSchema)
	}
	return n
}
