package anthropic

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/agentrt/agentrt/internal/llmhttp"
	"github.com/agentrt/agentrt/model"
)

// EncodeRequest returns the body the model sends for req (model.Encoder).
func (m *Model) EncodeRequest(req *model.Request, stream bool) ([]byte, error) {
	return m.encode(req, stream)
}

var _ model.Encoder = (*Model)(nil)

// encode writes req as a Messages API request body.
func (m *Model) encode(req *model.Request, stream bool) ([]byte, error) {
	b := make([]byte, 0, 512+requestSize(req))
	b = append(b, '{')
	b = llmhttp.AppendKey(b, "model")
	name := m.cfg.Model
	if req.Model != "" {
		name = req.Model
	}
	b = llmhttp.AppendString(b, name)
	b = llmhttp.AppendKey(b, "max_tokens")
	maxTokens := req.MaxTokens
	if maxTokens <= 0 {
		maxTokens = m.maxTokens
	}
	b = llmhttp.AppendInt(b, int64(maxTokens))
	b = appendSystem(b, req)
	b = llmhttp.AppendKey(b, "messages")
	b = append(b, '[')
	var t turns
	for i := range req.Messages {
		var err error
		if b, err = t.appendMessage(b, &req.Messages[i]); err != nil {
			return nil, fmt.Errorf("anthropic: message %d: %w", i, err)
		}
	}
	b = t.end(b)
	b = append(b, ']')
	if len(req.Tools) > 0 {
		var err error
		if b, err = appendTools(b, req); err != nil {
			return nil, err
		}
	}
	if req.Temperature != nil && (math.IsNaN(*req.Temperature) || math.IsInf(*req.Temperature, 0)) {
		return nil, fmt.Errorf("anthropic: temperature %v is not a number", *req.Temperature)
	}
	if req.Temperature != nil {
		b = llmhttp.AppendKey(b, "temperature")
		b = llmhttp.AppendFloat(b, *req.Temperature)
	}
	if rf := req.ResponseFormat; rf != nil {
		switch rf.Type {
		case "", "text":
		case "json_schema":
			if !json.Valid(rf.Schema) {
				return nil, errors.New("anthropic: response format schema is not valid JSON")
			}
			b = append(b, `,"output_config":{"format":{"type":"json_schema","schema":`...)
			b = append(b, rf.Schema...)
			b = append(b, '}', '}')
		case "json_object":
			return nil, errors.New(`anthropic: response format "json_object" has no equivalent in the Messages API: use "json_schema" with a schema`)
		default:
			return nil, fmt.Errorf("anthropic: unknown response format %q", rf.Type)
		}
	}
	if stream {
		b = append(b, `,"stream":true`...)
	}
	return append(b, '}'), nil
}

// appendSystem writes the system parameter: Request.System and the text
// of every system message, joined by a blank line. The API has no other
// place for them.
func appendSystem(b []byte, req *model.Request) []byte {
	open := false
	add := func(s string) {
		if s == "" {
			return
		}
		if !open {
			b = llmhttp.AppendKey(b, "system")
			b = llmhttp.AppendString(b, s)
			open = true
			return
		}
		// Reopen the string and append s to it.
		b = append(b[:len(b)-1], `\n\n`...)
		start := len(b)
		b = llmhttp.AppendString(b, s)
		b = append(b[:start], b[start+1:]...) // drop s's opening quote
	}
	add(req.System)
	for i := range req.Messages {
		if msg := &req.Messages[i]; msg.Role == model.RoleSystem {
			add(msg.Text())
		}
	}
	return b
}

// turns writes the messages array. The API wants user and assistant turns
// to alternate, and a tool's result to be a block of the user turn that
// follows the call: consecutive messages of one side are merged into one
// turn, and messages without content are left out.
type turns struct {
	role string // the side of the open turn, or ""
}

// block starts a content block of a turn of the given role: a comma
// inside the open turn, or a new turn.
func (t *turns) block(b []byte, role string) []byte {
	if t.role == role {
		return append(b, ',')
	}
	b = t.end(b)
	if b[len(b)-1] != '[' {
		b = append(b, ',')
	}
	t.role = role
	b = append(b, `{"role":"`...)
	b = append(b, role...)
	return append(b, `","content":[`...)
}

// end closes the open turn, if any.
func (t *turns) end(b []byte) []byte {
	if t.role != "" {
		b = append(b, ']', '}')
		t.role = ""
	}
	return b
}

func (t *turns) appendMessage(b []byte, msg *model.Message) ([]byte, error) {
	switch msg.Role {
	case model.RoleSystem:
		return b, nil // in the system parameter
	case model.RoleUser:
		return t.appendText(b, "user", msg), nil
	case model.RoleAssistant:
		b = t.appendText(b, "assistant", msg)
		for i := range msg.ToolCalls {
			c := &msg.ToolCalls[i]
			if c.ID == "" {
				return nil, fmt.Errorf("tool call %d (%q) without an id", i, c.Name)
			}
			b = t.block(b, "assistant")
			b = append(b, `{"type":"tool_use","id":`...)
			b = llmhttp.AppendString(b, c.ID)
			b = append(b, `,"name":`...)
			b = llmhttp.AppendString(b, c.Name)
			b = append(b, `,"input":`...)
			b = append(b, input(c.Arguments)...)
			b = append(b, '}')
		}
		return b, nil
	case model.RoleTool:
		if msg.ToolCallID == "" {
			return nil, errors.New("a tool message without tool_call_id")
		}
		b = t.block(b, "user")
		b = append(b, `{"type":"tool_result","tool_use_id":`...)
		b = llmhttp.AppendString(b, msg.ToolCallID)
		if text := msg.Text(); text != "" {
			b = append(b, `,"content":`...)
			b = llmhttp.AppendString(b, text)
		}
		if msg.IsError {
			b = append(b, `,"is_error":true`...)
		}
		return append(b, '}'), nil
	}
	return nil, fmt.Errorf("unknown role %q", msg.Role)
}

// appendText writes msg's parts as blocks: text parts as text blocks
// (empty ones are left out: the API rejects empty text blocks), images as
// image blocks and other files as document blocks (base64), media without
// its bytes (the model does not take it) as its description.
func (t *turns) appendText(b []byte, role string, msg *model.Message) []byte {
	for _, p := range msg.Parts {
		text := p.Text
		if p.Media != nil && len(p.Media.Data) > 0 {
			kind := "document"
			if strings.HasPrefix(p.Media.Type, "image/") {
				kind = "image"
			}
			b = t.block(b, role)
			b = append(b, `{"type":"`...)
			b = append(b, kind...)
			b = append(b, `","source":{"type":"base64","media_type":`...)
			b = llmhttp.AppendString(b, p.Media.Type)
			b = append(b, `,"data":"`...)
			b = base64.StdEncoding.AppendEncode(b, p.Media.Data)
			b = append(b, `"}}`...)
			continue
		}
		if p.Media != nil {
			text = p.Media.Describe()
		}
		if text == "" {
			continue
		}
		b = t.block(b, role)
		b = append(b, `{"type":"text","text":`...)
		b = llmhttp.AppendString(b, text)
		b = append(b, '}')
	}
	return b
}

// input returns a tool call's arguments as a tool_use block's input,
// which must be a JSON object: arguments that are not one (cut off by
// max_tokens, or garbled) become {}, as the official SDKs make them.
func input(args []byte) []byte {
	t := bytes.TrimSpace(args)
	if len(t) == 0 || t[0] != '{' || !json.Valid(t) {
		return []byte("{}")
	}
	return t
}

func appendTools(b []byte, req *model.Request) ([]byte, error) {
	b = llmhttp.AppendKey(b, "tools")
	b = append(b, '[')
	for i, t := range req.Tools {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"name":`...)
		b = llmhttp.AppendString(b, t.Name)
		if t.Description != "" {
			b = llmhttp.AppendKey(b, "description")
			b = llmhttp.AppendString(b, t.Description)
		}
		b = llmhttp.AppendKey(b, "input_schema")
		if len(t.InputSchema) == 0 {
			b = append(b, `{"type":"object","properties":{}}`...)
		} else if !json.Valid(t.InputSchema) {
			return nil, fmt.Errorf("anthropic: tool %q: input schema is not valid JSON", t.Name)
		} else {
			b = append(b, t.InputSchema...)
		}
		b = append(b, '}')
	}
	b = append(b, ']')
	tc := req.ToolChoice
	if tc.Mode == "" {
		return b, nil
	}
	b = llmhttp.AppendKey(b, "tool_choice")
	switch tc.Mode {
	case model.ToolChoiceAuto:
		b = append(b, `{"type":"auto"}`...)
	case model.ToolChoiceNone:
		b = append(b, `{"type":"none"}`...)
	case model.ToolChoiceRequired:
		b = append(b, `{"type":"any"}`...)
	case model.ToolChoiceTool:
		if tc.Name == "" {
			return nil, errors.New("anthropic: tool choice \"tool\" without a tool name")
		}
		b = append(b, `{"type":"tool","name":`...)
		b = llmhttp.AppendString(b, tc.Name)
		b = append(b, '}')
	default:
		return nil, fmt.Errorf("anthropic: unknown tool choice %q", tc.Mode)
	}
	return b, nil
}

// requestSize estimates the encoded size of req, to allocate once.
func requestSize(req *model.Request) int {
	n := len(req.System)
	for i := range req.Messages {
		msg := &req.Messages[i]
		n += 64
		for _, p := range msg.Parts {
			n += 32 + len(p.Text) + len(p.Text)/8
		}
		for _, c := range msg.ToolCalls {
			n += 64 + len(c.ID) + len(c.Name) + len(c.Arguments)
		}
	}
	for _, t := range req.Tools {
		n += 64 + len(t.Name) + len(t.Description) + len(t.InputSchema)
	}
	return n
}
