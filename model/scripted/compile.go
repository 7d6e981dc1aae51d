package scripted

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"
	"unicode/utf8"

	"github.com/agentrt/agentrt/model"
)

// errorCodes are the codes a scripted failure may have.
func errorCodes() []model.ErrorCode {
	return []model.ErrorCode{model.CodeRateLimited, model.CodeTimeout, model.CodeContextLength,
		model.CodeAuth, model.CodeBadRequest, model.CodeServer, model.CodeStreamIncomplete}
}

// reply is a Reply turned into what Stream yields.
type reply struct {
	// chunks are yielded in order. Unless err is set, the last one carries
	// the finish reason, and Stream gives it its Usage.
	chunks   []model.Chunk
	usage    model.Usage // with OutputTokens estimated when !hasUsage
	hasUsage bool
	delay    time.Duration
	err      error
	expect   *Expect
}

// compile validates r, the i-th reply, and precomputes its chunks.
func compile(i int, r Reply) (reply, error) {
	if r.Chunks < 0 {
		return reply{}, fmt.Errorf("chunks is %d, want 0 or more", r.Chunks)
	}
	if r.Delay < 0 {
		return reply{}, fmt.Errorf("delay is %v, want 0 or more", r.Delay)
	}
	calls := make([]model.ToolCall, len(r.ToolCalls))
	for j, c := range r.ToolCalls {
		if c.Name == "" {
			return reply{}, fmt.Errorf("tool call %d: no name", j+1)
		}
		args, err := arguments(c.Arguments, c.Verbatim)
		if err != nil {
			return reply{}, fmt.Errorf("tool call %d (%s): arguments: %w", j+1, c.Name, err)
		}
		id := c.ID
		if id == "" {
			id = fmt.Sprintf("call_%d_%d", i+1, j+1)
		}
		calls[j] = model.ToolCall{ID: id, Name: c.Name, Arguments: args}
	}

	out := reply{delay: r.Delay}
	if r.Usage != nil {
		out.usage, out.hasUsage = *r.Usage, true
	} else {
		size := len(r.Text)
		for _, c := range calls {
			size += len(c.Name) + len(c.Arguments)
		}
		out.usage.OutputTokens = tokens(size)
	}
	if r.Expect != nil {
		e := *r.Expect
		e.ToolsInclude = slices.Clone(e.ToolsInclude)
		out.expect = &e
	}
	if r.Chunks <= 1 {
		out.chunks = wholeChunk(r.Text, calls)
	} else {
		out.chunks = splitChunks(r.Text, calls, r.Chunks)
	}
	if r.ErrorCode != "" && !slices.Contains(errorCodes(), r.ErrorCode) {
		return reply{}, fmt.Errorf("unknown error code %q, want one of %v", r.ErrorCode, errorCodes())
	}
	if r.ErrorCode != "" && r.Error == "" {
		r.Error = "scripted " + string(r.ErrorCode) + " failure"
	}
	if r.Error != "" {
		out.err = errors.New(r.Error)
		if r.ErrorCode != "" {
			out.err = &model.Error{Code: r.ErrorCode, Provider: "scripted", Message: r.Error, RetryAfter: r.RetryAfter,
				Streamed: r.Text != "" || len(calls) > 0}
		}
		if len(out.chunks) == 1 && out.chunks[0].Text == "" && out.chunks[0].ToolCalls == nil {
			out.chunks = nil // nothing to stream before the failure
		}
		return out, nil
	}
	finish := r.FinishReason
	if finish == "" {
		finish = model.FinishStop
		if len(calls) > 0 {
			finish = model.FinishToolCalls
		}
	}
	out.chunks[len(out.chunks)-1].FinishReason = finish
	return out, nil
}

// wholeChunk streams the reply as one chunk, each call as one delta.
func wholeChunk(text string, calls []model.ToolCall) []model.Chunk {
	c := model.Chunk{Text: text}
	if len(calls) > 0 {
		c.ToolCalls = make([]model.ToolCallDelta, len(calls))
		for j, tc := range calls {
			c.ToolCalls[j] = model.ToolCallDelta{Index: j, ID: tc.ID, Name: tc.Name, Arguments: string(tc.Arguments)}
		}
	}
	return []model.Chunk{c}
}

// splitChunks streams text in n pieces, then the calls' arguments in n
// pieces each, interleaved by index, one delta per chunk.
func splitChunks(text string, calls []model.ToolCall, n int) []model.Chunk {
	var chunks []model.Chunk
	if text != "" {
		for _, p := range split(text, n) {
			chunks = append(chunks, model.Chunk{Text: p})
		}
	}
	pieces := make([][]string, len(calls))
	most := 0
	for j, c := range calls {
		pieces[j] = split(string(c.Arguments), n)
		most = max(most, len(pieces[j]))
	}
	// One backing array for all deltas; each chunk holds a one-delta slice.
	var deltas []model.ToolCallDelta
	for k := range most {
		for j, c := range calls {
			if k >= len(pieces[j]) {
				continue
			}
			d := model.ToolCallDelta{Index: j, Arguments: pieces[j][k]}
			if k == 0 {
				d.ID, d.Name = c.ID, c.Name
			}
			deltas = append(deltas, d)
		}
	}
	for x := range deltas {
		chunks = append(chunks, model.Chunk{ToolCalls: deltas[x : x+1 : x+1]})
	}
	if len(chunks) == 0 {
		chunks = []model.Chunk{{}}
	}
	return chunks
}

// split cuts s into at most n non-empty pieces of about equal length, on
// rune boundaries. It returns [s] for an empty s.
func split(s string, n int) []string {
	runes := utf8.RuneCountInString(s)
	n = min(n, runes)
	if n <= 1 {
		return []string{s}
	}
	pieces := make([]string, 0, n)
	start, r := 0, 0 // byte offset and rune count of the current piece's start
	for k := 1; k < n; k++ {
		end := k * runes / n // rune offset where piece k-1 ends
		off := start
		for ; r < end; r++ {
			_, size := utf8.DecodeRuneInString(s[off:])
			off += size
		}
		pieces = append(pieces, s[start:off])
		start = off
	}
	return append(pieces, s[start:])
}

// arguments turns a Call's Arguments into a JSON object.
func arguments(v any, verbatim bool) (json.RawMessage, error) {
	var raw []byte
	switch a := v.(type) {
	case nil:
		return json.RawMessage("{}"), nil
	case string:
		raw = []byte(a)
	case []byte:
		raw = bytes.Clone(a)
	case json.RawMessage:
		raw = bytes.Clone(a)
	default:
		b, err := json.Marshal(v)
		if err != nil {
			return nil, err
		}
		raw = b
	}
	if verbatim {
		return raw, nil
	}
	raw = bytes.TrimSpace(raw)
	if !json.Valid(raw) {
		return nil, fmt.Errorf("not valid JSON: %s (set Verbatim to send it anyway)", cut(string(raw), 80))
	}
	if raw[0] != '{' {
		return nil, fmt.Errorf("%s is not a JSON object (set Verbatim to send it anyway)", cut(string(raw), 80))
	}
	return raw, nil
}

// tokens estimates the tokens of size bytes of text: one per four bytes.
func tokens(size int) int64 { return int64(size+3) / 4 }

// requestSize is the bytes of text, tool calls and tool specs in req.
func requestSize(req *model.Request) int {
	if req == nil {
		return 0
	}
	n := len(req.System)
	for i := range req.Messages {
		msg := &req.Messages[i]
		for _, p := range msg.Parts {
			n += len(p.Text)
		}
		for _, c := range msg.ToolCalls {
			n += len(c.Name) + len(c.Arguments)
		}
	}
	for _, t := range req.Tools {
		n += len(t.Name) + len(t.Description) + len(t.InputSchema)
	}
	return n
}

// cloneRequest deep-copies req so that the caller may reuse its slices.
func cloneRequest(req *model.Request) *model.Request {
	if req == nil {
		return nil
	}
	c := *req
	c.Messages = slices.Clone(req.Messages)
	for i := range c.Messages {
		msg := &c.Messages[i]
		msg.Parts = slices.Clone(msg.Parts)
		msg.ToolCalls = slices.Clone(msg.ToolCalls)
		for j := range msg.ToolCalls {
			msg.ToolCalls[j].Arguments = bytes.Clone(msg.ToolCalls[j].Arguments)
		}
	}
	c.Tools = slices.Clone(req.Tools)
	for i := range c.Tools {
		c.Tools[i].InputSchema = bytes.Clone(c.Tools[i].InputSchema)
	}
	if req.Temperature != nil {
		t := *req.Temperature
		c.Temperature = &t
	}
	if req.ResponseFormat != nil {
		f := *req.ResponseFormat
		f.Schema = bytes.Clone(f.Schema)
		c.ResponseFormat = &f
	}
	return &c
}
