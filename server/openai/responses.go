package openai

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/agentrt/agentrt/gateway"
)

// ResponseRequest is the body of POST /v1/responses. Fields of OpenAI's
// request this adapter does not use (temperature, max_output_tokens,
// tool_choice and the like: the agent's configuration decides those) are
// accepted and ignored; instructions are refused, since the agent's
// system prompt is the agent's own.
type ResponseRequest struct {
	Model string `json:"model"`
	// Input is a string, or an array of input items: messages with text
	// content, function_call items (the history's calls) and
	// function_call_output items (the results of the calls a response
	// handed to the client).
	Input              json.RawMessage `json:"input"`
	Instructions       *string         `json:"instructions,omitempty"`
	PreviousResponseID string          `json:"previous_response_id,omitempty"`
	Stream             bool            `json:"stream,omitempty"`
	Background         bool            `json:"background,omitempty"`
	// Tools are the client's own function tools: offered to the agent's
	// model for the turn; their calls come back as function_call items.
	Tools []json.RawMessage `json:"tools,omitempty"`
}

// prevKey is the input metadata that keeps the previous_response_id a
// response was created with, so that any process reading the response
// later answers it as it was given.
const prevKey = "openai.previous_response_id"

// responseRef is what a response id names: the session, the seq its
// turn's events come after, the gateway's id of the input the turn
// answers and that input's place in the inbox (none for a turn that goes
// on after an answer to a waiting run: the first events after the seq),
// and whether it ran in the background. It is all the log needs to find
// the turn again, in any process, after a restart.
//
// A turn that answers a waiting run has no input to keep its
// previous_response_id with: prev is that response, whose fields the id
// carries after the turn's own (and so on while they are such turns too).
// An input's previous_response_id is kept with the input (prevKey).
type responseRef struct {
	session    string
	after      int64
	input      string
	inbox      int64
	background bool
	prev       *responseRef
	// legacy: the id is of the first format (session, after, input),
	// minted before background and the inbox were part of it.
	legacy bool
}

// submitted is the input the response answers, as the gateway stored
// it; nil for a response that continues a waiting run.
func (ref responseRef) submitted() *gateway.Submitted {
	if ref.input == "" {
		return nil
	}
	// The adapter's inputs come from the session's own source.
	return &gateway.Submitted{ID: ref.input, Source: ref.session, Session: ref.session, Seq: ref.inbox}
}

func (ref responseRef) id() string {
	raw := ref.session
	if ref.legacy {
		raw += "\x00" + strconv.FormatInt(ref.after, 10) + "\x00" + ref.input
	}
	for r := &ref; r != nil && !ref.legacy; r = r.prev {
		flags := ""
		if r.background {
			flags = "b"
		}
		raw += "\x00" + strconv.FormatInt(r.after, 10) + "\x00" + r.input + "\x00" + strconv.FormatInt(r.inbox, 10) + "\x00" + flags
	}
	return "resp_" + base64.RawURLEncoding.EncodeToString([]byte(raw))
}

func parseResponseID(id, param string) (responseRef, error) {
	bad := func() (responseRef, error) {
		return responseRef{}, apiError(http.StatusNotFound, "not_found", param, "response %q not found", id)
	}
	rest, ok := strings.CutPrefix(id, "resp_")
	if !ok {
		return bad()
	}
	raw, err := base64.RawURLEncoding.DecodeString(rest)
	if err != nil {
		return bad()
	}
	parts := strings.Split(string(raw), "\x00")
	if parts[0] == "" {
		return bad()
	}
	num := func(s string) (int64, bool) {
		n, err := strconv.ParseInt(s, 10, 64)
		return n, err == nil && n >= 0
	}
	if len(parts) == 3 {
		after, ok := num(parts[1])
		if !ok {
			return bad()
		}
		return responseRef{session: parts[0], after: after, input: parts[2], legacy: true}, nil
	}
	if len(parts) < 5 || (len(parts)-1)%4 != 0 {
		return bad()
	}
	var head responseRef
	at := &head
	for i := 1; i < len(parts); i += 4 {
		after, ok1 := num(parts[i])
		inbox, ok2 := num(parts[i+2])
		if !ok1 || !ok2 || parts[i+3] != "" && parts[i+3] != "b" {
			return bad()
		}
		if i > 1 {
			at.prev = &responseRef{}
			at = at.prev
		}
		*at = responseRef{session: parts[0], after: after, input: parts[i+1], inbox: inbox, background: parts[i+3] == "b"}
	}
	return head, nil
}

// responseInput is a request's input: new input for the agent (conv), or
// the results of the function calls a response handed to the client
// (results, by call id; at[id] is the input item of each).
type responseInput struct {
	conv    *conversation
	results map[string]string
	at      map[string]int
}

// inputItem is an item of a request's input array.
type inputItem struct {
	Type    string          `json:"type"`
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
	// function_call and function_call_output items.
	CallID    string          `json:"call_id"`
	Name      string          `json:"name"`
	Arguments string          `json:"arguments"`
	Output    json.RawMessage `json:"output"`
}

// decodeResponseRequest reads and checks a request, and returns it with
// its input.
func decodeResponseRequest(r *http.Request) (*ResponseRequest, *responseInput, error) {
	var req ResponseRequest
	if err := decodeJSON(r, &req); err != nil {
		return nil, nil, err
	}
	if req.Model == "" {
		return nil, nil, badRequest("model", "the request names no model: name one of the server's agents (GET /v1/models)")
	}
	if req.Instructions != nil && strings.TrimSpace(*req.Instructions) != "" {
		return nil, nil, badRequest("instructions", "instructions are not taken: the agent's system prompt is its own (send the text as a developer message of the input to add it to a new session's history)")
	}
	msgs, at, err := inputMessages(req.Input)
	if err != nil {
		return nil, nil, err
	}
	in := &responseInput{}
	if in.results, _ = toolResults(msgs); in.results != nil {
		// The results of calls: the session has the history before them.
		in.at = make(map[string]int, len(in.results))
		for i, m := range msgs {
			if m.Role == "tool" {
				in.at[m.ToolCallID] = at[i]
			}
		}
		return &req, in, nil
	}
	if in.conv, err = splitConversation(msgs); err != nil {
		return nil, nil, inputParam(err, at)
	}
	in.conv.at = at
	if req.PreviousResponseID != "" && len(in.conv.history) > 0 {
		return nil, nil, badRequest("input", "the input continues response %s: send only the new user input, the session keeps the history", req.PreviousResponseID)
	}
	return &req, in, nil
}

// inputMessages reads a request's input as chat messages: a string is
// one user message; an item's input_text and output_text parts are text;
// a function_call is an assistant message's tool call (calls in a row go
// to one message), a function_call_output a tool message. at[i] is the
// input item of message i.
func inputMessages(in json.RawMessage) ([]ChatMessage, []int, error) {
	in = bytes.TrimSpace(in)
	if len(in) == 0 || string(in) == "null" {
		return nil, nil, badRequest("input", "the request has no input")
	}
	if in[0] == '"' {
		return []ChatMessage{{Role: "user", Content: in}}, []int{0}, nil
	}
	var items []inputItem
	if err := json.Unmarshal(in, &items); err != nil {
		return nil, nil, badRequest("input", "input: want a string or an array of input items")
	}
	if len(items) == 0 {
		return nil, nil, badRequest("input", "the request has no input")
	}
	msgs := make([]ChatMessage, 0, len(items))
	at := make([]int, 0, len(items))
	for i, it := range items {
		switch it.Type {
		case "", "message":
			m, err := inputMessage(i, &it)
			if err != nil {
				return nil, nil, err
			}
			msgs, at = append(msgs, m), append(at, i)
		case "function_call":
			if it.CallID == "" || it.Name == "" {
				return nil, nil, badRequest(fmt.Sprintf("input[%d]", i), "input[%d] is a function_call without call_id or name", i)
			}
			var tc ChatToolCall
			tc.ID, tc.Type = it.CallID, "function"
			tc.Function.Name, tc.Function.Arguments = it.Name, it.Arguments
			if n := len(msgs); n > 0 && msgs[n-1].Role == "assistant" {
				msgs[n-1].ToolCalls = append(msgs[n-1].ToolCalls, tc)
				continue
			}
			msgs = append(msgs, ChatMessage{Role: "assistant", ToolCalls: []ChatToolCall{tc}})
			at = append(at, i)
		case "function_call_output":
			if it.CallID == "" {
				return nil, nil, badRequest(fmt.Sprintf("input[%d].call_id", i), "input[%d] is a function_call_output without call_id", i)
			}
			out, err := callOutput(i, it.Output)
			if err != nil {
				return nil, nil, err
			}
			b, _ := json.Marshal(out)
			msgs, at = append(msgs, ChatMessage{Role: "tool", ToolCallID: it.CallID, Content: b}), append(at, i)
		default:
			return nil, nil, badRequest(fmt.Sprintf("input[%d].type", i),
				"input[%d] is a %q item: this server takes message, function_call and function_call_output items", i, it.Type)
		}
	}
	return msgs, at, nil
}

// inputMessage is message item i as a chat message.
func inputMessage(i int, it *inputItem) (ChatMessage, error) {
	switch it.Role {
	case "system", "developer", "user", "assistant":
	default:
		return ChatMessage{}, badRequest(fmt.Sprintf("input[%d].role", i), "input[%d] has role %q: want system, developer, user or assistant", i, it.Role)
	}
	c := bytes.TrimSpace(it.Content)
	if len(c) > 0 && c[0] == '[' {
		var parts []map[string]json.RawMessage
		if err := json.Unmarshal(c, &parts); err != nil {
			return ChatMessage{}, badRequest(fmt.Sprintf("input[%d].content", i), "input[%d].content: want a string or an array of content parts", i)
		}
		// As the chat messages' parts: text parts are "text" parts, an
		// input_image an image_url part, an input_file a file part.
		for j, p := range parts {
			var typ string
			_ = json.Unmarshal(p["type"], &typ)
			where := fmt.Sprintf("input[%d].content[%d]", i, j)
			str := func(k string) string {
				var v string
				_ = json.Unmarshal(p[k], &v)
				return v
			}
			fileID := func() error {
				return badRequest(where+".file_id", "%s: file_id names a file of OpenAI's Files API, which this server does not keep: send the bytes (a data: URL) or a URL", where)
			}
			switch typ {
			case "input_text", "output_text", "text":
				parts[j] = map[string]json.RawMessage{"type": json.RawMessage(`"text"`), "text": p["text"]}
			case "input_image":
				if str("image_url") == "" && str("file_id") != "" {
					return ChatMessage{}, fileID()
				}
				if str("image_url") == "" {
					return ChatMessage{}, badRequest(where+".image_url", "%s: an input_image needs image_url: a data: URL or an http(s) URL", where)
				}
				img, _ := json.Marshal(map[string]string{"url": str("image_url")})
				parts[j] = map[string]json.RawMessage{"type": json.RawMessage(`"image_url"`), "image_url": img}
			case "input_file":
				if str("file_data") == "" && str("file_url") == "" && str("file_id") != "" {
					return ChatMessage{}, fileID()
				}
				if str("file_data") == "" && str("file_url") == "" {
					return ChatMessage{}, badRequest(where+".file_data", "%s: an input_file needs file_data (a data: URL) and filename, or file_url", where)
				}
				f, _ := json.Marshal(map[string]string{"file_data": str("file_data"), "file_url": str("file_url"), "filename": str("filename")})
				parts[j] = map[string]json.RawMessage{"type": json.RawMessage(`"file"`), "file": f}
			default:
				return ChatMessage{}, badRequest(where+".type",
					"%s is a %q part: this server takes input_text, input_image and input_file parts", where, typ)
			}
		}
		c, _ = json.Marshal(parts)
	}
	return ChatMessage{Role: it.Role, Content: c}, nil
}

// callOutput is a function_call_output's output: a string, or text parts
// joined.
func callOutput(i int, raw json.RawMessage) (string, error) {
	raw = bytes.TrimSpace(raw)
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s, nil
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil || len(raw) == 0 {
		return "", badRequest(fmt.Sprintf("input[%d].output", i), "input[%d].output: want a string or an array of input_text parts", i)
	}
	var b strings.Builder
	for j, p := range parts {
		if p.Type != "input_text" && p.Type != "text" {
			return "", badRequest(fmt.Sprintf("input[%d].output[%d].type", i, j),
				"input[%d].output[%d] is a %q part: this server takes text parts only", i, j, p.Type)
		}
		b.WriteString(p.Text)
	}
	return b.String(), nil
}

// inputParam names the input item at fault in an error about the chat
// messages the input became (messages[i] is input item at[i]).
func inputParam(err error, at []int) error {
	e := toAPIError(err)
	if e.Param == nil {
		return e
	}
	p, ok := strings.CutPrefix(*e.Param, "messages")
	if !ok {
		return e
	}
	out := *e
	if rest, found := strings.CutPrefix(p, "["); found {
		n, tail, _ := strings.Cut(rest, "]")
		if i, err := strconv.Atoi(n); err == nil && i < len(at) {
			p = fmt.Sprintf("[%d]%s", at[i], tail)
			out.Message = strings.ReplaceAll(out.Message, "messages["+n+"]", fmt.Sprintf("input[%d]", at[i]))
		}
	}
	out.Param = ptr("input" + p)
	return &out
}

// Response is a response as the Responses API answers it.
type Response struct {
	ID                 string             `json:"id"`
	Object             string             `json:"object"` // "response"
	CreatedAt          int64              `json:"created_at"`
	CompletedAt        *int64             `json:"completed_at"`
	Status             string             `json:"status"`
	Model              string             `json:"model"`
	Background         bool               `json:"background"`
	PreviousResponseID *string            `json:"previous_response_id"`
	Output             []OutputItem       `json:"output"`
	Usage              *ResponseUsage     `json:"usage"`
	Error              *ResponseError     `json:"error"`
	IncompleteDetails  *IncompleteDetails `json:"incomplete_details"`
	// Instructions are always null: the agent's system prompt is its own.
	Instructions      *string           `json:"instructions"`
	ParallelToolCalls bool              `json:"parallel_tool_calls"`
	ToolChoice        string            `json:"tool_choice"`
	Tools             []FunctionTool    `json:"tools"`
	Store             bool              `json:"store"`
	Metadata          map[string]string `json:"metadata"`
	// Agentrt is agentrt's own field: the session and what the turn
	// waits for.
	Agentrt *Extension `json:"agentrt,omitempty"`
}

// FunctionTool is a function tool of the client's, as a response
// names it.
type FunctionTool struct {
	Type        string          `json:"type"` // "function"
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters"`
	Strict      bool            `json:"strict"`
}

// OutputItem is an item of a response's output: an assistant message
// (Type "message": Role, Content) or a call of one of the client's
// function tools (Type "function_call": CallID, Name, Arguments).
type OutputItem struct {
	Type      string
	ID        string
	Status    string
	Role      string
	Content   []OutputPart
	CallID    string
	Name      string
	Arguments string
}

// MarshalJSON writes the fields of the item's type, all of them: a
// message's content is [] while it has no part.
func (it OutputItem) MarshalJSON() ([]byte, error) {
	if it.Type == "function_call" {
		return json.Marshal(struct {
			Type      string `json:"type"`
			ID        string `json:"id"`
			CallID    string `json:"call_id"`
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
			Status    string `json:"status"`
		}{it.Type, it.ID, it.CallID, it.Name, it.Arguments, it.Status})
	}
	content := it.Content
	if content == nil {
		content = []OutputPart{}
	}
	return json.Marshal(struct {
		Type    string       `json:"type"`
		ID      string       `json:"id"`
		Status  string       `json:"status"`
		Role    string       `json:"role"`
		Content []OutputPart `json:"content"`
	}{it.Type, it.ID, it.Status, it.Role, content})
}

// OutputPart is a text part of an output message.
type OutputPart struct {
	Type        string `json:"type"` // "output_text"
	Text        string `json:"text"`
	Annotations []any  `json:"annotations"`
	Logprobs    []any  `json:"logprobs"`
}

// ResponseUsage is a turn's token usage, summed over its model calls.
type ResponseUsage struct {
	InputTokens        int64 `json:"input_tokens"`
	OutputTokens       int64 `json:"output_tokens"`
	TotalTokens        int64 `json:"total_tokens"`
	InputTokensDetails struct {
		CachedTokens int64 `json:"cached_tokens"`
	} `json:"input_tokens_details"`
	OutputTokensDetails struct {
		ReasoningTokens int64 `json:"reasoning_tokens"`
	} `json:"output_tokens_details"`
}

// ResponseError is why a response failed.
type ResponseError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// IncompleteDetails is why a response stopped short.
type IncompleteDetails struct {
	Reason string `json:"reason"`
}

// DeletedResponse is the answer of DELETE /v1/responses/{id}.
type DeletedResponse struct {
	ID      string `json:"id"`
	Object  string `json:"object"` // "response.deleted"
	Deleted bool   `json:"deleted"`
}

// StreamEvent is one event of a response's stream. SequenceNumber is the
// event's place in the response's stream, the same every time the
// stream is read (see renderer).
type StreamEvent struct {
	Type           string      `json:"type"`
	SequenceNumber int64       `json:"sequence_number"`
	Response       *Response   `json:"response,omitempty"`
	OutputIndex    *int        `json:"output_index,omitempty"`
	ContentIndex   *int        `json:"content_index,omitempty"`
	ItemID         string      `json:"item_id,omitempty"`
	Item           *OutputItem `json:"item,omitempty"`
	Part           *OutputPart `json:"part,omitempty"`
	Delta          *string     `json:"delta,omitempty"`
	Text           *string     `json:"text,omitempty"`
	Arguments      *string     `json:"arguments,omitempty"`
	Name           string      `json:"name,omitempty"`
	Logprobs       []any       `json:"logprobs,omitempty"`
	// An "error" event's fields.
	Code    string  `json:"code,omitempty"`
	Message string  `json:"message,omitempty"`
	Param   *string `json:"param,omitempty"`
}
