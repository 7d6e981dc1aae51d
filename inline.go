package agentrt

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"strings"

	"github.com/agentrt/agentrt/model"
)

// InlineMode says whether tool calls written in a reply's text are run:
// many local models (Ollama, llama.cpp, vLLM without a tool
// parser) write their calls as text instead of the API's tool calls.
type InlineMode string

const (
	// InlineAuto, the default, runs the calls of a reply that has no
	// native ones when they are written in a recognised form: Hermes and
	// Qwen's <tool_call>{…}</tool_call>, Llama 3.1's <|python_tag|>{…}, or
	// a JSON object with "name" and "arguments" in a code fence; and only
	// for tools the agent has.
	InlineAuto InlineMode = "auto"
	// InlineOn also takes a reply that is nothing but such a JSON object,
	// without a fence.
	InlineOn InlineMode = "on"
	// InlineOff never looks at the text.
	InlineOff InlineMode = "off"
)

// ParseInlineMode checks a mode's name ("" is InlineAuto).
func ParseInlineMode(s string) (InlineMode, error) {
	switch m := InlineMode(s); m {
	case "":
		return InlineAuto, nil
	case InlineAuto, InlineOn, InlineOff:
		return m, nil
	}
	return "", fmt.Errorf("inline_tool_calls %q: want auto, on or off", s)
}

// WithInlineCalls returns m with its inline tool call mode set.
func WithInlineCalls(m model.Model, mode InlineMode) model.Model {
	if g, ok := m.(model.Generator); ok {
		return inlineGenerator{inlineModel{m, mode}, g}
	}
	return inlineModel{m, mode}
}

type inlineModel struct {
	m    model.Model
	mode InlineMode
}

func (im inlineModel) Name() string { return im.m.Name() }
func (im inlineModel) Stream(ctx context.Context, req *model.Request) iter.Seq2[model.Chunk, error] {
	return im.m.Stream(ctx, req)
}
func (im inlineModel) Unwrap() model.Model { return im.m }

type inlineGenerator struct {
	inlineModel
	g model.Generator
}

func (ig inlineGenerator) Generate(ctx context.Context, req *model.Request) (*model.Response, error) {
	return ig.g.Generate(ctx, req)
}

// inlineModeOf returns m's mode, looking through wrappers.
func inlineModeOf(m model.Model) InlineMode {
	for m != nil {
		switch im := m.(type) {
		case inlineModel:
			return im.mode
		case inlineGenerator:
			return im.mode
		case interface{ Unwrap() model.Model }:
			m = im.Unwrap()
		default:
			return InlineAuto
		}
	}
	return InlineAuto
}

// Markers of the recognised forms.
const (
	hermesOpen  = "<tool_call>"
	hermesClose = "</tool_call>"
	pythonTag   = "<|python_tag|>"
	fence       = "```"
)

// inlineCalls finds the tool calls written in text, for tools known says
// the agent has, and returns them with the text that remains around them
// (trimmed). A block that is not valid JSON, or names a tool the agent
// does not have, stays in the text: nothing is lost, and the model's words
// reach the user as they were.
func inlineCalls(text string, mode InlineMode, known func(string) (string, bool)) (calls []model.ToolCall, rest string) {
	if mode == InlineOff || text == "" {
		return nil, text
	}
	// The fast path: no marker, no call (a reply of prose, the usual one).
	hasMarker := strings.Contains(text, hermesOpen) || strings.Contains(text, pythonTag) || strings.Contains(text, fence)
	if !hasMarker {
		if mode != InlineOn {
			return nil, text
		}
		if c, ok := parseInlineCall(strings.TrimSpace(text), known); ok {
			return []model.ToolCall{c}, ""
		}
		return nil, text
	}
	var b strings.Builder
	for len(text) > 0 {
		i, form := nextMarker(text)
		if i < 0 {
			b.WriteString(text)
			break
		}
		b.WriteString(text[:i])
		block, after, ok := cutBlock(text[i:], form)
		if !ok {
			b.WriteString(text[i:])
			break
		}
		found := blockCalls(block, known)
		if found == nil {
			b.WriteString(text[i : len(text)-len(after)]) // not a call: it stays
		}
		calls = append(calls, found...)
		text = after
	}
	if calls == nil {
		return nil, b.String()
	}
	return calls, strings.TrimSpace(b.String())
}

// nextMarker returns where the next recognised block begins, and its form.
func nextMarker(text string) (int, string) {
	best, form := -1, ""
	for _, m := range []string{hermesOpen, pythonTag, fence} {
		if i := strings.Index(text, m); i >= 0 && (best < 0 || i < best) {
			best, form = i, m
		}
	}
	return best, form
}

// cutBlock returns the JSON inside the block that text begins with, and
// the text after the block.
func cutBlock(text, form string) (block, after string, ok bool) {
	switch form {
	case hermesOpen:
		body := text[len(hermesOpen):]
		j := strings.Index(body, hermesClose)
		if j < 0 {
			return strings.TrimSpace(body), "", true // an unclosed last block
		}
		return strings.TrimSpace(body[:j]), body[j+len(hermesClose):], true
	case pythonTag:
		body := text[len(pythonTag):]
		end := len(body)
		for _, stop := range []string{"<|eom_id|>", "<|eot_id|>"} {
			if j := strings.Index(body, stop); j >= 0 && j < end {
				end = j
			}
		}
		after = body[end:]
		for _, stop := range []string{"<|eom_id|>", "<|eot_id|>"} {
			after = strings.TrimPrefix(after, stop)
		}
		return strings.TrimSpace(body[:end]), after, true
	default: // a code fence: ```lang\n…\n```
		body := text[len(fence):]
		nl := strings.IndexByte(body, '\n')
		if nl < 0 {
			return "", "", false
		}
		lang := strings.TrimSpace(body[:nl])
		if lang != "" && lang != "json" && lang != "tool_call" && lang != "tool_code" {
			return "", "", false
		}
		body = body[nl+1:]
		j := strings.Index(body, fence)
		if j < 0 {
			return "", "", false
		}
		return strings.TrimSpace(body[:j]), body[j+len(fence):], true
	}
}

// blockCalls parses a block: one call, or a JSON array of calls. It
// returns nil unless every call in it is well formed and known.
func blockCalls(block string, known func(string) (string, bool)) []model.ToolCall {
	if strings.HasPrefix(block, "[") {
		var items []json.RawMessage
		if json.Unmarshal([]byte(block), &items) != nil || len(items) == 0 {
			return nil
		}
		var out []model.ToolCall
		for _, it := range items {
			c, ok := parseInlineCall(string(it), known)
			if !ok {
				return nil
			}
			out = append(out, c)
		}
		return out
	}
	c, ok := parseInlineCall(block, known)
	if !ok {
		return nil
	}
	return []model.ToolCall{c}
}

// parseInlineCall parses {"name": …, "arguments": {…}} (or "parameters",
// Llama's word), with arguments as an object or as a JSON string holding
// one.
func parseInlineCall(s string, known func(string) (string, bool)) (model.ToolCall, bool) {
	if !strings.HasPrefix(s, "{") {
		return model.ToolCall{}, false
	}
	var v struct {
		Name       string          `json:"name"`
		Arguments  json.RawMessage `json:"arguments"`
		Parameters json.RawMessage `json:"parameters"`
	}
	dec := json.NewDecoder(strings.NewReader(s))
	if err := dec.Decode(&v); err != nil || dec.More() {
		return model.ToolCall{}, false
	}
	name, ok := known(v.Name)
	if !ok {
		return model.ToolCall{}, false
	}
	args := v.Arguments
	if len(args) == 0 {
		args = v.Parameters
	}
	args = bytes.TrimSpace(args)
	if len(args) > 0 && args[0] == '"' {
		var inner string
		if json.Unmarshal(args, &inner) != nil {
			return model.ToolCall{}, false
		}
		args = json.RawMessage(inner)
	}
	if len(args) == 0 || string(args) == "null" {
		args = json.RawMessage(`{}`)
	}
	if !json.Valid(args) || args[0] != '{' {
		return model.ToolCall{}, false
	}
	return model.ToolCall{Name: name, Arguments: args}, true
}
