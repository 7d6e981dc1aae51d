// Package model defines the contract between agentrt and a language model:
// messages, requests, streamed chunks and assembled responses.
//
// A Model streams a reply as an iter.Seq2 of Chunks. Generate assembles a
// whole Response from any Model; the Assembler does the same incrementally
// for callers that also want the chunks.
package model

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"strings"
)

// Role is who wrote a message.
type Role string

// The roles of a conversation.
const (
	RoleSystem    Role = "system"
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	RoleTool      Role = "tool"
)

// PartType says what a Part holds.
type PartType string

// The part types: text, and an image or another file (Media).
const (
	PartText  PartType = "text"
	PartImage PartType = "image"
	PartFile  PartType = "file"
)

// Part is one piece of a message's content: text, or an image or a file
// (Media).
type Part struct {
	Type  PartType `json:"type"`
	Text  string   `json:"text,omitempty"`
	Media *Media   `json:"media,omitempty"`
}

// Media is an image or a file of a message: a blob of the store (Hash,
// its SHA-256), its media type, name and size. Data is its bytes once the
// runtime has loaded them for a request (never in the log): a model gets
// the bytes of the media it accepts (MediaAcceptor), and a description
// of the others as text.
type Media struct {
	Hash string `json:"hash"`
	Type string `json:"type"`
	Name string `json:"name,omitempty"`
	Size int64  `json:"size"`
	Data []byte `json:"-"`
}

// Describe is how a message shows media to a model that does not take it:
// its kind, name, type and size, as text.
func (m *Media) Describe() string {
	kind := "a file"
	if strings.HasPrefix(m.Type, "image/") {
		kind = "an image"
	}
	name := m.Name
	if name == "" {
		name = "unnamed"
	}
	return fmt.Sprintf("[%s: %s, %s, %s, not shown to this model]", kind, name, m.Type, humanSize(m.Size))
}

func humanSize(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}

// MediaAcceptor is the optional capability of a model that takes media in
// its requests: AcceptsMedia reports whether it takes the media type.
type MediaAcceptor interface {
	AcceptsMedia(mediaType string) bool
}

// Accepts reports whether m takes media of type typ (MediaAcceptor).
func Accepts(m Model, typ string) bool {
	a, ok := m.(MediaAcceptor)
	return ok && a.AcceptsMedia(typ)
}

// MatchMedia reports whether typ is one of patterns: a media type, or a
// kind and "*" (image/*).
func MatchMedia(patterns []string, typ string) bool {
	kind, _, _ := strings.Cut(typ, "/")
	for _, p := range patterns {
		if p == typ || p == "*/*" || strings.HasSuffix(p, "/*") && strings.TrimSuffix(p, "/*") == kind {
			return true
		}
	}
	return false
}

// ToolCall is a model's request to call a tool. Arguments is the raw JSON
// object the model produced; it is validated before the tool runs.
type ToolCall struct {
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
}

// Message is one entry of a conversation.
//
// An assistant message may carry ToolCalls; each must be answered by a tool
// message whose ToolCallID names it, before the next assistant message.
type Message struct {
	Role       Role       `json:"role"`
	Parts      []Part     `json:"parts,omitempty"`
	ToolCalls  []ToolCall `json:"tool_calls,omitempty"`
	ToolCallID string     `json:"tool_call_id,omitempty"`
	// Name is the tool's name on a tool message.
	Name string `json:"name,omitempty"`
	// IsError marks a tool message that reports a failed call.
	IsError bool `json:"is_error,omitempty"`
}

// Text returns the concatenated text parts of m.
func (m Message) Text() string {
	switch len(m.Parts) {
	case 0:
		return ""
	case 1:
		return m.Parts[0].Text
	}
	n := 0
	for _, p := range m.Parts {
		n += len(p.Text)
	}
	b := make([]byte, 0, n)
	for _, p := range m.Parts {
		b = append(b, p.Text...)
	}
	return string(b)
}

// TextMessage returns a message of role r holding one text part.
func TextMessage(r Role, text string) Message {
	return Message{Role: r, Parts: []Part{{Type: PartText, Text: text}}}
}

// ToolSpec describes a tool to the model.
type ToolSpec struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"input_schema"`
}

// ToolChoiceMode says whether and how the model must call tools.
type ToolChoiceMode string

// Tool choice modes. The zero value means auto.
const (
	ToolChoiceAuto     ToolChoiceMode = "auto"
	ToolChoiceNone     ToolChoiceMode = "none"
	ToolChoiceRequired ToolChoiceMode = "required"
	ToolChoiceTool     ToolChoiceMode = "tool" // call the tool named in ToolChoice.Name
)

// ToolChoice constrains tool use for one request.
type ToolChoice struct {
	Mode ToolChoiceMode `json:"mode,omitempty"`
	Name string         `json:"name,omitempty"`
}

// ResponseFormat asks for structured output.
type ResponseFormat struct {
	// Type is "text", "json_object" or "json_schema".
	Type   string          `json:"type"`
	Name   string          `json:"name,omitempty"`
	Schema json.RawMessage `json:"schema,omitempty"`
	Strict bool            `json:"strict,omitempty"`
}

// Request is one call to a model.
//
// A Model must not modify a Request or anything it refers to (the runtime
// hands its own history over without copying it), and must copy what it
// wants to keep after Stream's sequence ends.
type Request struct {
	Model string `json:"model,omitempty"`
	// System is the system prompt, sent before Messages: providers whose
	// API has a system parameter use it, the others send it as a first
	// system message. Messages may hold system messages of their own (a
	// compaction summary, say).
	System         string          `json:"system,omitempty"`
	Messages       []Message       `json:"messages"`
	Tools          []ToolSpec      `json:"tools,omitempty"`
	ToolChoice     ToolChoice      `json:"tool_choice,omitzero"`
	MaxTokens      int             `json:"max_tokens,omitempty"`
	Temperature    *float64        `json:"temperature,omitempty"`
	ResponseFormat *ResponseFormat `json:"response_format,omitempty"`
}

// Encoder is the optional capability of a model that speaks a provider's
// wire format: EncodeRequest returns the body it sends for req (streamed
// or not), byte for byte, so that a person can see what the provider
// received (the inspector's "what the model was sent").
type Encoder interface {
	EncodeRequest(req *Request, stream bool) ([]byte, error)
}

// FinishReason says why a model stopped.
type FinishReason string

// Finish reasons, normalised across providers.
const (
	FinishStop          FinishReason = "stop"
	FinishToolCalls     FinishReason = "tool_calls"
	FinishLength        FinishReason = "length"
	FinishContentFilter FinishReason = "content_filter"
	FinishError         FinishReason = "error"
)

// Usage counts tokens and, when prices are known, cost.
type Usage struct {
	InputTokens  int64   `json:"input_tokens"`
	OutputTokens int64   `json:"output_tokens"`
	CachedTokens int64   `json:"cached_tokens,omitempty"`
	CostUSD      float64 `json:"cost_usd,omitempty"`
}

// Add accumulates o into u.
func (u *Usage) Add(o Usage) {
	u.InputTokens += o.InputTokens
	u.OutputTokens += o.OutputTokens
	u.CachedTokens += o.CachedTokens
	u.CostUSD += o.CostUSD
}

// Total is input plus output tokens.
func (u Usage) Total() int64 { return u.InputTokens + u.OutputTokens }

// ToolCallDelta is a fragment of a streamed tool call. Fragments with the
// same Index belong to one call; ID and Name usually arrive in the first.
type ToolCallDelta struct {
	Index     int    `json:"index"`
	ID        string `json:"id,omitempty"`
	Name      string `json:"name,omitempty"`
	Arguments string `json:"arguments,omitempty"`
}

// Chunk is one piece of a streamed reply. Any of its fields may be set.
//
// A Chunk may share memory with the stream that yields it: its ToolCalls
// slice and the Usage it points to are valid until the next value is
// yielded (providers reuse them rather than allocate per chunk). Copy them
// to keep them; strings are immutable and can be kept as they are.
type Chunk struct {
	Text         string          `json:"text,omitempty"`
	ToolCalls    []ToolCallDelta `json:"tool_calls,omitempty"`
	Usage        *Usage          `json:"usage,omitempty"`
	FinishReason FinishReason    `json:"finish_reason,omitempty"`
	// Pulse marks a chunk that carries nothing but the news that the model
	// is still being waited for (see Timeouts.FirstFeedback).
	Pulse bool `json:"pulse,omitempty"`
}

// Response is a whole reply.
type Response struct {
	Message      Message      `json:"message"`
	Usage        Usage        `json:"usage"`
	FinishReason FinishReason `json:"finish_reason"`
}

// Model is a language model.
//
// Stream sends req and yields the reply's chunks in order. A non-nil error
// ends the stream: it is the last value yielded. Stream starts no work
// before the caller ranges over the sequence, and stops when the caller
// breaks out of the loop or ctx is done. Implementations must be safe for
// concurrent use.
type Model interface {
	Name() string
	Stream(ctx context.Context, req *Request) iter.Seq2[Chunk, error]
}

// Generator is implemented by models that can answer without streaming.
// Generate uses it when present.
type Generator interface {
	Generate(ctx context.Context, req *Request) (*Response, error)
}

// Generate returns m's whole reply to req.
func Generate(ctx context.Context, m Model, req *Request) (*Response, error) {
	if g, ok := m.(Generator); ok {
		return g.Generate(ctx, req)
	}
	var a Assembler
	for c, err := range m.Stream(ctx, req) {
		if err != nil {
			return nil, err
		}
		a.Add(c)
	}
	return a.Response()
}
