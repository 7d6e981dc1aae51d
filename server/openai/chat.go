package openai

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"path"
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
	// Content is a string, an array of content parts (text, image_url,
	// file and input_audio parts), or null.
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

// chatPart is a content part of a message: text, an image (image_url:
// a data: URL or an http(s) URL), a file (file: file_data, a data: URL
// or base64, and filename; file_url, as the Responses API's input_file
// has it) or audio (input_audio: base64 data and its format).
type chatPart struct {
	Type     string `json:"type"`
	Text     string `json:"text"`
	ImageURL *struct {
		URL string `json:"url"`
	} `json:"image_url"`
	File *struct {
		FileData string `json:"file_data"`
		FileID   string `json:"file_id"`
		FileURL  string `json:"file_url"`
		Filename string `json:"filename"`
	} `json:"file"`
	InputAudio *struct {
		Data   string `json:"data"`
		Format string `json:"format"`
	} `json:"input_audio"`
}

// mediaPart is an image or a file of a message: part j of message i,
// read by the server (server.MediaRef) once the request is checked.
type mediaPart struct {
	msg, part int
	ref       server.MediaRef
}

// where names the part as the request does.
func (p *mediaPart) where() string { return fmt.Sprintf("messages[%d].content[%d]", p.msg, p.part) }

// content returns the message's text — its string content, or its text
// parts joined — and its images and files.
func (m *ChatMessage) content(i int) (string, []mediaPart, error) {
	c := bytes.TrimSpace(m.Content)
	if len(c) == 0 || string(c) == "null" {
		return "", nil, nil
	}
	if c[0] == '"' {
		var s string
		if err := json.Unmarshal(c, &s); err != nil {
			return "", nil, badRequest(fmt.Sprintf("messages[%d].content", i), "messages[%d].content: %v", i, err)
		}
		return s, nil, nil
	}
	var parts []chatPart
	if err := json.Unmarshal(c, &parts); err != nil {
		return "", nil, badRequest(fmt.Sprintf("messages[%d].content", i), "messages[%d].content: want a string or an array of content parts", i)
	}
	var b strings.Builder
	var media []mediaPart
	for j, p := range parts {
		where := fmt.Sprintf("messages[%d].content[%d]", i, j)
		bad := func(field, format string, args ...any) error {
			return badRequest(where+field, where+": "+format, args...)
		}
		mp := mediaPart{msg: i, part: j}
		switch p.Type {
		case "text":
			b.WriteString(p.Text)
			continue
		case "image_url":
			if p.ImageURL == nil || p.ImageURL.URL == "" {
				return "", nil, bad(".image_url.url", "an image_url part needs image_url.url: a data: URL or an http(s) URL")
			}
			mp.ref = server.MediaRef{Kind: "image", URL: p.ImageURL.URL}
		case "file":
			f := p.File
			switch {
			case f == nil:
				return "", nil, bad(".file", "a file part needs file.file_data (a data: URL, or base64) and file.filename")
			case f.FileData == "" && f.FileURL == "" && f.FileID != "":
				return "", nil, bad(".file.file_id", "file_id names a file of OpenAI's Files API, which this server does not keep: send the file's bytes as file_data")
			case f.FileData != "" && hasPrefixFold(f.FileData, "data:"):
				mp.ref = server.MediaRef{URL: f.FileData, Name: f.Filename}
			case f.FileData != "":
				mp.ref = server.MediaRef{Base64: f.FileData, Name: f.Filename, Type: mime.TypeByExtension(path.Ext(f.Filename))}
			case f.FileURL != "":
				mp.ref = server.MediaRef{URL: f.FileURL, Name: f.Filename}
			default:
				return "", nil, bad(".file", "a file part needs file.file_data (a data: URL, or base64) and file.filename")
			}
		case "input_audio":
			a := p.InputAudio
			if a == nil || a.Data == "" {
				return "", nil, bad(".input_audio.data", "an input_audio part needs input_audio.data (base64) and its format")
			}
			typ := map[string]string{"wav": "audio/wav", "mp3": "audio/mpeg"}[a.Format]
			if typ == "" {
				return "", nil, bad(".input_audio.format", "input_audio.format %q: want wav or mp3", a.Format)
			}
			mp.ref = server.MediaRef{Kind: "audio", Base64: a.Data, Type: typ}
		default:
			return "", nil, bad(".type", "a %q part: this server takes text, image_url, file and input_audio parts", p.Type)
		}
		media = append(media, mp)
	}
	return b.String(), media, nil
}

// text is the message's text, for a message whose images and files have
// nowhere to go (a tool's result).
func (m *ChatMessage) text(i int) (string, error) {
	t, media, err := m.content(i)
	if err == nil && len(media) > 0 {
		p := media[0]
		err = badRequest(p.where()+".type", "%s: a %s message's content is text: this server takes text parts there", p.where(), m.Role)
	}
	return t, err
}

func hasPrefixFold(s, prefix string) bool {
	return len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix)
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
	// media are the new input's images and files, read (fetched) by
	// begin before anything is stored.
	media []mediaPart
	// metadata goes with the input (the Responses API keeps a
	// response's previous_response_id there).
	metadata map[string]string
	// at[i] is the request's input item of message i, for a Responses
	// API request (its errors name input items).
	at []int
}

// splitConversation finds the new input of msgs: the user messages after
// the last message of another role, joined by blank lines, with their
// images and files; what comes before is the history, as the runtime's
// messages.
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
		t, media, err := msgs[i].content(i)
		if err != nil {
			return nil, err
		}
		in = append(in, t)
		c.media = append(c.media, media...)
	}
	c.input = strings.Join(in, "\n\n")
	if strings.TrimSpace(c.input) == "" && len(c.media) == 0 {
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
	t, media, err := m.content(i)
	if err != nil {
		return model.Message{}, err
	}
	// The history's images and files are not kept: only the new input
	// brings files (a session continued by its header never reads its
	// history). The model is told one was there.
	for _, p := range media {
		what := map[string]string{"image": "an image", "audio": "audio"}[p.ref.Kind]
		if what == "" {
			what = "a file"
		}
		t += fmt.Sprintf("\n[%s the client sent here, not kept: only a conversation's new input brings files]", what)
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
