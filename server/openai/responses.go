package openai

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/agentrt/agentrt/session"
)

// ResponseRequest is the body of POST /v1/responses. Fields of OpenAI's
// request this adapter does not use (temperature, max_output_tokens and
// the like: the agent's configuration decides those) are accepted and
// ignored; instructions are refused, since the agent's system prompt is
// the agent's own.
type ResponseRequest struct {
	Model string `json:"model"`
	// Input is a string, or an array of input items (messages with text
	// content).
	Input              json.RawMessage   `json:"input"`
	Instructions       *string           `json:"instructions,omitempty"`
	PreviousResponseID string            `json:"previous_response_id,omitempty"`
	Stream             bool              `json:"stream,omitempty"`
	Background         bool              `json:"background,omitempty"`
	Tools              []json.RawMessage `json:"tools,omitempty"`
}

// responseRef is what a response id names: the session, the seq its
// turn's events come after, and the gateway's id of the input the turn
// answers ("" for a turn that goes on after an answer to a person's
// request: the first run after the seq). It is all the log needs to
// find the turn again, in any process, after a restart.
type responseRef struct {
	session string
	after   int64
	input   string
}

func (ref responseRef) id() string {
	raw := ref.session + "\x00" + strconv.FormatInt(ref.after, 10) + "\x00" + ref.input
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
	if len(parts) != 3 || parts[0] == "" {
		return bad()
	}
	after, err := strconv.ParseInt(parts[1], 10, 64)
	if err != nil || after < 0 {
		return bad()
	}
	return responseRef{session: parts[0], after: after, input: parts[2]}, nil
}

// inputItem is an item of a request's input array.
type inputItem struct {
	Type    string          `json:"type"`
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

// decodeResponseRequest reads and checks a request, and returns it with
// its input as a chat conversation.
func decodeResponseRequest(r *http.Request) (*ResponseRequest, *conversation, error) {
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
	if len(req.Tools) > 0 {
		return nil, nil, badRequest("tools", "client-side tools are not served yet: the agent's own tools run on the server")
	}
	msgs, err := inputMessages(req.Input)
	if err != nil {
		return nil, nil, err
	}
	conv, err := splitConversation(msgs)
	if err != nil {
		return nil, nil, err
	}
	if req.PreviousResponseID != "" && len(conv.history) > 0 {
		return nil, nil, badRequest("input", "the input continues response %s: send only the new user input, the session keeps the history", req.PreviousResponseID)
	}
	return &req, conv, nil
}

// inputMessages reads a request's input as chat messages: a string is
// one user message; an item's input_text and output_text parts are text.
func inputMessages(in json.RawMessage) ([]ChatMessage, error) {
	in = bytes.TrimSpace(in)
	if len(in) == 0 || string(in) == "null" {
		return nil, badRequest("input", "the request has no input")
	}
	if in[0] == '"' {
		return []ChatMessage{{Role: "user", Content: in}}, nil
	}
	var items []inputItem
	if err := json.Unmarshal(in, &items); err != nil {
		return nil, badRequest("input", "input: want a string or an array of input items")
	}
	if len(items) == 0 {
		return nil, badRequest("input", "the request has no input")
	}
	msgs := make([]ChatMessage, len(items))
	for i, it := range items {
		if it.Type != "" && it.Type != "message" {
			return nil, badRequest(fmt.Sprintf("input[%d].type", i), "input[%d] is a %q item: this server takes message items only", i, it.Type)
		}
		c := bytes.TrimSpace(it.Content)
		if len(c) > 0 && c[0] == '[' {
			var parts []map[string]json.RawMessage
			if err := json.Unmarshal(c, &parts); err != nil {
				return nil, badRequest(fmt.Sprintf("input[%d].content", i), "input[%d].content: want a string or an array of content parts", i)
			}
			// The chat messages' text parts are "text" parts.
			for j, p := range parts {
				var typ string
				_ = json.Unmarshal(p["type"], &typ)
				switch typ {
				case "input_text", "output_text", "text":
					p["type"] = json.RawMessage(`"text"`)
				default:
					return nil, badRequest(fmt.Sprintf("input[%d].content[%d].type", i, j),
						"input[%d].content[%d] is a %q part: this server takes text parts only", i, j, typ)
				}
			}
			c, _ = json.Marshal(parts)
		}
		msgs[i] = ChatMessage{Role: it.Role, Content: c}
		switch it.Role {
		case "system", "developer", "user", "assistant":
		default:
			return nil, badRequest(fmt.Sprintf("input[%d].role", i), "input[%d] has role %q: want system, developer, user or assistant", i, it.Role)
		}
	}
	return msgs, nil
}

// Response is a response as the Responses API answers it.
type Response struct {
	ID                 string             `json:"id"`
	Object             string             `json:"object"` // "response"
	CreatedAt          int64              `json:"created_at"`
	Status             string             `json:"status"`
	Model              string             `json:"model"`
	Background         bool               `json:"background"`
	PreviousResponseID *string            `json:"previous_response_id"`
	Output             []OutputItem       `json:"output"`
	Usage              *ResponseUsage     `json:"usage"`
	Error              *ResponseError     `json:"error"`
	IncompleteDetails  *IncompleteDetails `json:"incomplete_details"`
	Instructions       *string            `json:"instructions"`
	ParallelToolCalls  bool               `json:"parallel_tool_calls"`
	ToolChoice         string             `json:"tool_choice"`
	Tools              []any              `json:"tools"`
	Metadata           map[string]string  `json:"metadata"`
	// Agentrt is agentrt's own field: the session and what the turn
	// waits for.
	Agentrt *Extension `json:"agentrt,omitempty"`
}

// OutputItem is a message of a response's output.
type OutputItem struct {
	Type    string       `json:"type"` // "message"
	ID      string       `json:"id"`
	Status  string       `json:"status"`
	Role    string       `json:"role"`
	Content []OutputPart `json:"content"`
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

// StreamEvent is one event of a response's stream. SequenceNumber is the
// event's place in the response's stream, the same every time the
// stream is read from the log.
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
	Logprobs       []any       `json:"logprobs,omitempty"`
	// An "error" event's fields.
	Code    string  `json:"code,omitempty"`
	Message string  `json:"message,omitempty"`
	Param   *string `json:"param,omitempty"`
}

// renderer turns a turn's events into the response and its stream's
// events. It reads committed events only (live tokens are skipped), so
// that the events it yields, and their sequence numbers, are a function
// of the log: a stream read again, by any process, is the same stream.
type renderer struct {
	ref         responseRef
	base        Response
	o           outcome
	matched     bool // the turn's run has started
	ended       bool
	next        int64
	emitted     bool // the output message was rendered
	pendingText string
}

func (a *Adapter) newRenderer(ref responseRef, model string, background bool, prev string) *renderer {
	rd := &renderer{ref: ref}
	rd.base = Response{ID: ref.id(), Object: "response", CreatedAt: a.now().Unix(), Model: model, Background: background,
		Output: []OutputItem{}, ToolChoice: "auto", Tools: []any{}, Metadata: map[string]string{}}
	if prev != "" {
		rd.base.PreviousResponseID = &prev
	}
	return rd
}

// status is the response's status so far.
func (rd *renderer) status() string {
	if !rd.matched {
		return "queued"
	}
	if !rd.ended {
		return "in_progress"
	}
	switch rd.o.status {
	case session.StatusFailed:
		return "failed"
	case session.StatusCanceled:
		return "cancelled"
	case session.StatusPaused:
		return "incomplete"
	}
	return "completed"
}

// response is the response as it stands.
func (rd *renderer) response() *Response {
	r := rd.base
	r.Status = rd.status()
	r.Output = []OutputItem{}
	if rd.emitted {
		r.Output = append(r.Output, rd.item("completed", rd.pendingText))
	}
	if rd.ended {
		r.Usage = &ResponseUsage{InputTokens: rd.o.usage.InputTokens, OutputTokens: rd.o.usage.OutputTokens,
			TotalTokens: rd.o.usage.InputTokens + rd.o.usage.OutputTokens}
		if e := rd.o.failure(); e != nil {
			r.Error = &ResponseError{Code: e.Code, Message: e.Message}
		}
		if rd.o.status == session.StatusPaused {
			r.IncompleteDetails = &IncompleteDetails{Reason: "max_output_tokens"}
		}
		r.Agentrt = rd.o.extension(rd.ref.session)
	} else {
		r.Agentrt = &Extension{SessionID: rd.ref.session, RunID: rd.o.runID, Status: session.StatusRunning}
	}
	return &r
}

func (rd *renderer) item(status, text string) OutputItem {
	it := OutputItem{Type: "message", ID: "msg_" + strings.TrimPrefix(rd.base.ID, "resp_"), Status: status, Role: "assistant",
		Content: []OutputPart{}}
	if status == "completed" {
		it.Content = append(it.Content, OutputPart{Type: "output_text", Text: text, Annotations: []any{}, Logprobs: []any{}})
	}
	return it
}

func (rd *renderer) emit(out []StreamEvent, ev StreamEvent) []StreamEvent {
	ev.SequenceNumber = rd.next
	rd.next++
	return append(out, ev)
}

// start is the stream's first event.
func (rd *renderer) start() []StreamEvent {
	return rd.emit(nil, StreamEvent{Type: "response.created", Response: rd.response()})
}

// see takes the turn's next committed event and returns the stream
// events it makes, if any.
func (rd *renderer) see(ev *session.Event) []StreamEvent {
	if ev.Seq == 0 || ev.Seq <= rd.ref.after || rd.ended {
		return nil
	}
	var out []StreamEvent
	if !rd.matched {
		// The turn of an input begins with the run_started that answers
		// it; a turn that goes on after an answer to a person's request,
		// with the first event after the answer.
		if rd.ref.input != "" {
			rs, ok := ev.Data.(*session.RunStarted)
			if !ok || !slices.Contains(rs.Inputs, rd.ref.input) {
				return nil
			}
		}
		rd.matched = true
		if !ev.Time.IsZero() {
			rd.base.CreatedAt = ev.Time.Unix()
		}
		rd.o.see(ev)
		return rd.emit(out, StreamEvent{Type: "response.in_progress", Response: rd.response()})
	}
	rd.o.see(ev)
	switch d := ev.Data.(type) {
	case *session.Final:
		out = rd.message(out, d.Text)
	case *session.RunFinished:
		if d.Status == session.StatusInterrupted {
			return nil // the run restarts
		}
		if d.Status == session.StatusWaiting && !rd.emitted {
			out = rd.message(out, rd.o.answer())
		}
		rd.ended = true
		typ := "response.completed"
		switch rd.status() {
		case "failed", "cancelled":
			typ = "response.failed"
		case "incomplete":
			typ = "response.incomplete"
		}
		out = rd.emit(out, StreamEvent{Type: typ, Response: rd.response()})
	}
	return out
}

// message renders the output message with text: added, its text part,
// one delta with the text, and done.
func (rd *renderer) message(out []StreamEvent, text string) []StreamEvent {
	if rd.emitted {
		return out
	}
	zero := 0
	id := rd.item("", "").ID
	empty := OutputPart{Type: "output_text", Text: "", Annotations: []any{}, Logprobs: []any{}}
	pending := rd.item("in_progress", "")
	out = rd.emit(out, StreamEvent{Type: "response.output_item.added", OutputIndex: &zero, Item: &pending})
	out = rd.emit(out, StreamEvent{Type: "response.content_part.added", OutputIndex: &zero, ContentIndex: &zero, ItemID: id, Part: &empty})
	out = rd.emit(out, StreamEvent{Type: "response.output_text.delta", OutputIndex: &zero, ContentIndex: &zero, ItemID: id, Delta: &text, Logprobs: []any{}})
	out = rd.emit(out, StreamEvent{Type: "response.output_text.done", OutputIndex: &zero, ContentIndex: &zero, ItemID: id, Text: &text, Logprobs: []any{}})
	part := OutputPart{Type: "output_text", Text: text, Annotations: []any{}, Logprobs: []any{}}
	out = rd.emit(out, StreamEvent{Type: "response.content_part.done", OutputIndex: &zero, ContentIndex: &zero, ItemID: id, Part: &part})
	done := rd.item("completed", text)
	out = rd.emit(out, StreamEvent{Type: "response.output_item.done", OutputIndex: &zero, Item: &done})
	rd.emitted, rd.pendingText = true, text
	return out
}
