package openai

import (
	"cmp"
	"encoding/base64"
	"encoding/json"
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

// encode writes req as a Chat Completions request body.
func (m *Model) encode(req *model.Request, stream bool) ([]byte, error) {
	b := make([]byte, 0, 512+requestSize(req))
	b = append(b, '{')
	b = llmhttp.AppendKey(b, "model")
	name := m.cfg.Model
	if req.Model != "" {
		name = req.Model
	}
	b = llmhttp.AppendString(b, name)
	b = llmhttp.AppendKey(b, "messages")
	b = append(b, '[')
	if req.System != "" {
		b = appendText(b, "system", req.System)
	}
	for i := range req.Messages {
		var err error
		if b, err = appendMessage(b, &req.Messages[i]); err != nil {
			return nil, fmt.Errorf("openai: message %d: %w", i, err)
		}
	}
	b = append(b, ']')
	if len(req.Tools) > 0 {
		b = llmhttp.AppendKey(b, "tools")
		b = append(b, '[')
		for i, t := range req.Tools {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"type":"function","function":{"name":`...)
			b = llmhttp.AppendString(b, t.Name)
			if t.Description != "" {
				b = llmhttp.AppendKey(b, "description")
				b = llmhttp.AppendString(b, t.Description)
			}
			b = llmhttp.AppendKey(b, "parameters")
			if len(t.InputSchema) == 0 {
				b = append(b, `{"type":"object","properties":{}}`...)
			} else if !json.Valid(t.InputSchema) {
				return nil, fmt.Errorf("openai: tool %q: input schema is not valid JSON", t.Name)
			} else {
				b = append(b, t.InputSchema...)
			}
			b = append(b, '}', '}')
		}
		b = append(b, ']')
		if tc := req.ToolChoice; tc.Mode != "" {
			b = llmhttp.AppendKey(b, "tool_choice")
			switch tc.Mode {
			case model.ToolChoiceTool:
				if tc.Name == "" {
					return nil, fmt.Errorf("openai: tool choice %q without a tool name", tc.Mode)
				}
				b = append(b, `{"type":"function","function":{"name":`...)
				b = llmhttp.AppendString(b, tc.Name)
				b = append(b, '}', '}')
			case model.ToolChoiceAuto, model.ToolChoiceNone, model.ToolChoiceRequired:
				b = llmhttp.AppendString(b, string(tc.Mode))
			default:
				return nil, fmt.Errorf("openai: unknown tool choice %q", tc.Mode)
			}
		}
	}
	if req.MaxTokens > 0 {
		if m.maxCT {
			b = llmhttp.AppendKey(b, "max_completion_tokens")
		} else {
			b = llmhttp.AppendKey(b, "max_tokens")
		}
		b = llmhttp.AppendInt(b, int64(req.MaxTokens))
	}
	if req.Temperature != nil {
		if t := *req.Temperature; math.IsNaN(t) || math.IsInf(t, 0) {
			return nil, fmt.Errorf("openai: temperature %v is not a number", t)
		}
		b = llmhttp.AppendKey(b, "temperature")
		b = llmhttp.AppendFloat(b, *req.Temperature)
	}
	if rf := req.ResponseFormat; rf != nil {
		b = llmhttp.AppendKey(b, "response_format")
		switch rf.Type {
		case "json_schema":
			if !json.Valid(rf.Schema) {
				return nil, fmt.Errorf("openai: response format schema is not valid JSON")
			}
			name := rf.Name
			if name == "" {
				name = "response"
			}
			b = append(b, `{"type":"json_schema","json_schema":{"name":`...)
			b = llmhttp.AppendString(b, name)
			b = llmhttp.AppendKey(b, "schema")
			b = append(b, rf.Schema...)
			if rf.Strict {
				b = append(b, `,"strict":true`...)
			}
			b = append(b, '}', '}')
		case "json_object", "text":
			b = append(b, `{"type":`...)
			b = llmhttp.AppendString(b, rf.Type)
			b = append(b, '}')
		default:
			return nil, fmt.Errorf("openai: unknown response format %q", rf.Type)
		}
	}
	if stream {
		b = append(b, `,"stream":true`...)
		if !m.cfg.NoStreamUsage {
			b = append(b, `,"stream_options":{"include_usage":true}`...)
		}
	}
	return append(b, '}'), nil
}

func appendText(b []byte, role, text string) []byte {
	if b[len(b)-1] != '[' {
		b = append(b, ',')
	}
	b = append(b, `{"role":"`...)
	b = append(b, role...)
	b = append(b, `","content":`...)
	b = llmhttp.AppendString(b, text)
	return append(b, '}')
}

// hasMedia reports whether msg has an image or a file.
func hasMedia(msg *model.Message) bool {
	for _, p := range msg.Parts {
		if p.Media != nil {
			return true
		}
	}
	return false
}

// appendParts writes a user message whose content has media: text parts,
// images as image_url parts, other files as file parts (data URLs); media
// without its bytes (the model does not take it) as its description.
func appendParts(b []byte, msg *model.Message) []byte {
	if b[len(b)-1] != '[' {
		b = append(b, ',')
	}
	b = append(b, `{"role":"user","content":[`...)
	for i, p := range msg.Parts {
		if i > 0 {
			b = append(b, ',')
		}
		switch {
		case p.Media == nil:
			b = append(b, `{"type":"text","text":`...)
			b = llmhttp.AppendString(b, p.Text)
		case len(p.Media.Data) == 0:
			b = append(b, `{"type":"text","text":`...)
			b = llmhttp.AppendString(b, p.Media.Describe())
		case strings.HasPrefix(p.Media.Type, "image/"):
			b = append(b, `{"type":"image_url","image_url":{"url":`...)
			b = llmhttp.AppendString(b, dataURL(p.Media))
			b = append(b, '}')
		default:
			b = append(b, `{"type":"file","file":{"filename":`...)
			b = llmhttp.AppendString(b, cmp.Or(p.Media.Name, "file"))
			b = append(b, `,"file_data":`...)
			b = llmhttp.AppendString(b, dataURL(p.Media))
			b = append(b, '}')
		}
		b = append(b, '}')
	}
	return append(b, ']', '}')
}

func dataURL(m *model.Media) string {
	return "data:" + m.Type + ";base64," + base64.StdEncoding.EncodeToString(m.Data)
}

func appendMessage(b []byte, msg *model.Message) ([]byte, error) {
	switch msg.Role {
	case model.RoleUser:
		if hasMedia(msg) {
			return appendParts(b, msg), nil
		}
		return appendText(b, string(msg.Role), msg.Text()), nil
	case model.RoleSystem:
		return appendText(b, string(msg.Role), msg.Text()), nil
	case model.RoleTool:
		if msg.ToolCallID == "" {
			return nil, fmt.Errorf("a tool message without tool_call_id")
		}
		if b[len(b)-1] != '[' {
			b = append(b, ',')
		}
		b = append(b, `{"role":"tool","tool_call_id":`...)
		b = llmhttp.AppendString(b, msg.ToolCallID)
		b = append(b, `,"content":`...)
		b = llmhttp.AppendString(b, msg.Text())
		return append(b, '}'), nil
	case model.RoleAssistant:
		if b[len(b)-1] != '[' {
			b = append(b, ',')
		}
		b = append(b, `{"role":"assistant","content":`...)
		if text := msg.Text(); text != "" || len(msg.ToolCalls) == 0 {
			b = llmhttp.AppendString(b, text)
		} else {
			b = append(b, "null"...)
		}
		if len(msg.ToolCalls) > 0 {
			b = append(b, `,"tool_calls":[`...)
			for i, c := range msg.ToolCalls {
				if i > 0 {
					b = append(b, ',')
				}
				b = append(b, `{"id":`...)
				b = llmhttp.AppendString(b, c.ID)
				b = append(b, `,"type":"function","function":{"name":`...)
				b = llmhttp.AppendString(b, c.Name)
				b = append(b, `,"arguments":`...)
				args := string(c.Arguments)
				if args == "" {
					args = "{}"
				}
				b = llmhttp.AppendString(b, args)
				b = append(b, '}', '}')
			}
			b = append(b, ']')
		}
		return append(b, '}'), nil
	}
	return nil, fmt.Errorf("unknown role %q", msg.Role)
}

// requestSize estimates the encoded size of req, to allocate once.
func requestSize(req *model.Request) int {
	n := len(req.System)
	for i := range req.Messages {
		msg := &req.Messages[i]
		n += 64
		for _, p := range msg.Parts {
			n += len(p.Text) + len(p.Text)/8
			if p.Media != nil {
				n += 96 + len(p.Media.Name) + len(p.Media.Data)*4/3
			}
		}
		for _, c := range msg.ToolCalls {
			n += 96 + len(c.ID) + len(c.Name) + 2*len(c.Arguments)
		}
	}
	for _, t := range req.Tools {
		n += 64 + len(t.Name) + len(t.Description) + len(t.InputSchema)
	}
	return n
}
