package openai

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/server"
)

// ChatRequest is the body of POST /v1/chat/completions. Fields of
// OpenAI's request this adapter does not use (temperature, max_tokens and
// the like: the agent's configuration decides those) are accepted and
// ignored.
type ChatRequest struct {
	Model         string         `json:"model"`
	Messages      []ChatMessage  `json:"messages"`
	Stream        bool           `json:"stream,omitempty"`
	StreamOptions *StreamOptions `json:"stream_options,omitempty"`
	// Tools are the client's own function tools: offered to the agent's
	// model for the turn; their calls come back as tool_calls.
	Tools []json.RawMessage `json:"tools,omitempty"`
	N     *int              `json:"n,omitempty"`
	User  string            `json:"user,omitempty"`
}

// StreamOptions are a streamed completion's options.
type StreamOptions struct {
	// IncludeUsage adds a last chunk with the turn's usage and no choices.
	IncludeUsage bool `json:"include_usage"`
}

// ChatMessage is one message of a conversation.
type ChatMessage struct {
	Role string `json:"role"`
	// Content is a string, an array of content parts (only text parts are
	// taken), or null.
	Content    json.RawMessage `json:"content,omitempty"`
	Name       string          `json:"name,omitempty"`
	ToolCalls  []ChatToolCall  `json:"tool_calls,omitempty"`
	ToolCallID string          `json:"tool_call_id,omitempty"`
}

// ChatToolCall is a call of a function tool in an assistant message.
type ChatToolCall struct {
	// Index is the call's place in a streamed delta's list.
	Index    *int   `json:"index,omitempty"`
	ID       string `json:"id"`
	Type     string `json:"type"` // "function"
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// text returns the message's text: its string content, or its text
// parts joined.
func (m *ChatMessage) text(i int) (string, error) {
	c := bytes.TrimSpace(m.Content)
	if len(c) == 0 || string(c) == "null" {
		return "", nil
	}
	if c[0] == '"' {
		var s string
		if err := json.Unmarshal(c, &s); err != nil {
			return "", badRequest(fmt.Sprintf("messages[%d].content", i), "messages[%d].content: %v", i, err)
		}
		return s, nil
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(c, &parts); err != nil {
		return "", badRequest(fmt.Sprintf("messages[%d].content", i), "messages[%d].content: want a string or an array of content parts", i)
	}
	var b strings.Builder
	for j, p := range parts {
		if p.Type != "text" {
			return "", badRequest(fmt.Sprintf("messages[%d].content[%d].type", i, j),
				"messages[%d].content[%d] is a %q part: this server takes text parts only", i, j, p.Type)
		}
		b.WriteString(p.Text)
	}
	return b.String(), nil
}

// decodeChat reads and checks a chat completion request.
func decodeChat(r *http.Request) (*ChatRequest, error) {
	var req ChatRequest
	if err := decodeJSON(r, &req); err != nil {
		return nil, err
	}
	if req.Model == "" {
		return nil, badRequest("model", "the request names no model: name one of the server's agents (GET /v1/models)")
	}
	if len(req.Messages) == 0 {
		return nil, badRequest("messages", "the request has no messages")
	}
	if req.N != nil && *req.N != 1 {
		return nil, badRequest("n", "n is %d: an agent gives one answer a turn (n must be 1)", *req.N)
	}
	for i, m := range req.Messages {
		switch m.Role {
		case "system", "developer", "user", "assistant", "tool":
		default:
			return nil, badRequest(fmt.Sprintf("messages[%d].role", i), "messages[%d] has role %q: want system, developer, user, assistant or tool", i, m.Role)
		}
	}
	return &req, nil
}

// decodeJSON reads a request's body into v. Unknown fields are allowed:
// OpenAI's clients send options this server has no use for.
func decodeJSON(r *http.Request, v any) error {
	b, err := io.ReadAll(r.Body)
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return apiError(http.StatusRequestEntityTooLarge, agentrt.CodeBodyTooLarge, "", "the request's body is over %d bytes", mbe.Limit)
		}
		return badRequest("", "the request's body could not be read: %v", err)
	}
	if len(bytes.TrimSpace(b)) == 0 {
		return badRequest("", "the request needs a JSON body")
	}
	if field, err := server.DecodeJSON(b, v, false); err != nil {
		_, d := server.StatusOf(err)
		return badRequest(field, "%s", d.Message)
	}
	return nil
}

// conversation is a request's messages split into the history before the
// new input and the new input: the trailing user messages.
type conversation struct {
	history []model.Message
	input   string
	// metadata goes with the input (the Responses API keeps a
	// response's previous_response_id there).
	metadata map[string]string
}

// splitConversation finds the new input of msgs: the user messages after
// the last message of another role, joined by blank lines; what comes
// before is the history, as the runtime's messages.
func splitConversation(msgs []ChatMessage) (*conversation, error) {
	start := len(msgs)
	for start > 0 && msgs[start-1].Role == "user" {
		start--
	}
	if start == len(msgs) {
		last := len(msgs) - 1
		return nil, badRequest(fmt.Sprintf("messages[%d].role", last),
			"the conversation ends with a %s message: the last message must be the user's new input", msgs[last].Role)
	}
	c := &conversation{}
	var in []string
	for i := start; i < len(msgs); i++ {
		t, err := msgs[i].text(i)
		if err != nil {
			return nil, err
		}
		in = append(in, t)
	}
	c.input = strings.Join(in, "\n\n")
	if strings.TrimSpace(c.input) == "" {
		return nil, badRequest(fmt.Sprintf("messages[%d].content", len(msgs)-1), "the user's new input is empty")
	}
	for i, m := range msgs[:start] {
		mm, err := toModel(&m, i)
		if err != nil {
			return nil, err
		}
		c.history = append(c.history, mm)
	}
	return c, nil
}

// toModel is message i of a conversation as the runtime's message.
func toModel(m *ChatMessage, i int) (model.Message, error) {
	t, err := m.text(i)
	if err != nil {
		return model.Message{}, err
	}
	var out model.Message
	switch m.Role {
	case "system", "developer":
		out = model.TextMessage(model.RoleSystem, t)
	case "user":
		out = model.TextMessage(model.RoleUser, t)
	case "assistant":
		out = model.TextMessage(model.RoleAssistant, t)
		if t == "" {
			out.Parts = nil
		}
		for j, c := range m.ToolCalls {
			args := json.RawMessage(c.Function.Arguments)
			if len(bytes.TrimSpace(args)) == 0 {
				args = json.RawMessage("{}")
			}
			if !json.Valid(args) {
				return model.Message{}, badRequest(fmt.Sprintf("messages[%d].tool_calls[%d].function.arguments", i, j),
					"messages[%d].tool_calls[%d]: the arguments are not valid JSON", i, j)
			}
			out.ToolCalls = append(out.ToolCalls, model.ToolCall{ID: c.ID, Name: c.Function.Name, Arguments: args})
		}
	case "tool":
		out = model.TextMessage(model.RoleTool, t)
		out.ToolCallID = m.ToolCallID
	}
	return out, nil
}
