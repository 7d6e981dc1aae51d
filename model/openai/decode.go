package openai

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/agentrt/agentrt/internal/jsonscan"
	"github.com/agentrt/agentrt/internal/llmhttp"
	"github.com/agentrt/agentrt/model"
)

// decoder turns the chunks of one stream into model.Chunks. Its buffers
// are reused from chunk to chunk, and from stream to stream (decoders).
type decoder struct {
	sc     jsonscan.Scanner
	strs   llmhttp.Strings
	deltas []model.ToolCallDelta
	usage  model.Usage
	slots  []slot
	args   []byte // scratch for argument fragments
}

// slot is a tool call of the reply: the wire index it arrived under, and
// the index it has in our chunks. Servers that send each call whole, all
// under index 0 (some OpenAI-compatible ones do), get one slot per id.
type slot struct {
	wire, ours int
	id, name   string
}

var decoders = sync.Pool{New: func() any { return new(decoder) }}

func (d *decoder) release() {
	d.strs.Reset() // strings made so far belong to the consumer now
	d.deltas, d.slots = d.deltas[:0], d.slots[:0]
	d.usage = model.Usage{}
	clear(d.slots[:cap(d.slots)])
	decoders.Put(d)
}

type chunk struct{ model.Chunk }

// chunk decodes one event of the stream.
func (d *decoder) chunk(call *llmhttp.Call, event, data []byte) (chunk, error) {
	var c chunk
	if string(event) == "error" {
		e := call.BodyError(0, nil, data)
		e.Streamed = true
		return c, e
	}
	sc := &d.sc
	sc.Reset(data)
	d.deltas = d.deltas[:0]
	if !sc.EnterObject() {
		return c, call.Malformed("stream chunk", fmt.Errorf("not a JSON object: %.80q", data), true)
	}
	for {
		key, ok := sc.NextKey()
		if !ok {
			break
		}
		switch string(key) {
		case "choices":
			if !sc.EnterArray() {
				sc.Skip()
				continue
			}
			for sc.NextElem() {
				d.choice(&c.Chunk)
			}
		case "usage":
			if sc.Null() {
				continue
			}
			d.decodeUsage()
			c.Usage = &d.usage
		case "error":
			if sc.Null() {
				continue
			}
			e := call.BodyError(0, nil, data)
			e.Streamed = true
			return c, e
		default:
			sc.Skip()
		}
	}
	if !sc.End() {
		return c, call.Malformed("stream chunk", sc.Err(), true)
	}
	if len(d.deltas) > 0 {
		c.ToolCalls = d.deltas
	}
	return c, nil
}

func (d *decoder) choice(c *model.Chunk) {
	sc := &d.sc
	if !sc.EnterObject() {
		sc.Skip()
		return
	}
	for {
		key, ok := sc.NextKey()
		if !ok {
			return
		}
		switch string(key) {
		case "delta", "message":
			d.delta(c)
		case "finish_reason":
			if s, ok := sc.Str(); ok {
				c.FinishReason = finishReason(s)
			} else {
				sc.Skip()
			}
		default:
			sc.Skip()
		}
	}
}

func (d *decoder) delta(c *model.Chunk) {
	sc := &d.sc
	if !sc.EnterObject() {
		sc.Skip()
		return
	}
	for {
		key, ok := sc.NextKey()
		if !ok {
			return
		}
		switch string(key) {
		case "content", "refusal":
			// A refusal is the model's answer too: shown as text.
			if s, ok := sc.Str(); ok {
				if c.Text == "" {
					c.Text = d.strs.Make(s)
				} else {
					c.Text += d.strs.Make(s)
				}
			} else {
				sc.Skip()
			}
		case "tool_calls":
			if !sc.EnterArray() {
				sc.Skip()
				continue
			}
			for pos := 0; sc.NextElem(); pos++ {
				d.toolCall(pos)
			}
		default:
			sc.Skip()
		}
	}
}

func (d *decoder) toolCall(pos int) {
	sc := &d.sc
	if !sc.EnterObject() {
		sc.Skip()
		return
	}
	wire, id, name := pos, "", ""
	var args []byte
	hasArgs := false
	for {
		key, ok := sc.NextKey()
		if !ok {
			break
		}
		switch string(key) {
		case "index":
			if n, ok := sc.Int(); ok {
				wire = int(n)
			} else {
				sc.Skip()
			}
		case "id":
			if s, ok := sc.Str(); ok {
				id = d.strs.Make(s)
			} else {
				sc.Skip()
			}
		case "function":
			if !sc.EnterObject() {
				sc.Skip()
				continue
			}
			for {
				k, ok := sc.NextKey()
				if !ok {
					break
				}
				switch string(k) {
				case "name":
					if s, ok := sc.Str(); ok {
						name = d.strs.Make(s)
					} else {
						sc.Skip()
					}
				case "arguments":
					// Usually a string; some servers send the object itself.
					if s, ok := sc.AppendStr(d.args[:0]); ok {
						d.args, args, hasArgs = s, s, true
					} else if sc.Peek() == jsonscan.Object {
						args, hasArgs = sc.Raw(), true
					} else {
						sc.Skip()
					}
				default:
					sc.Skip()
				}
			}
		default:
			sc.Skip()
		}
	}
	s := d.slot(wire, id)
	delta := model.ToolCallDelta{Index: s.ours, ID: id}
	if id != "" {
		s.id = id
	}
	if name != "" && name != s.name {
		// Some servers repeat the name in every fragment: sent once.
		delta.Name = name
		s.name = name
	}
	if hasArgs {
		delta.Arguments = d.strs.Make(args)
	}
	d.deltas = append(d.deltas, delta)
}

// slot returns the call a fragment with this wire index and id belongs to.
func (d *decoder) slot(wire int, id string) *slot {
	for i := len(d.slots) - 1; i >= 0; i-- {
		s := &d.slots[i]
		if s.wire != wire {
			continue
		}
		if id == "" || s.id == "" || s.id == id {
			return s
		}
		break // a new call under a wire index already used
	}
	d.slots = append(d.slots, slot{wire: wire, ours: len(d.slots)})
	return &d.slots[len(d.slots)-1]
}

func (d *decoder) decodeUsage() {
	sc := &d.sc
	d.usage = model.Usage{}
	if !sc.EnterObject() {
		sc.Skip()
		return
	}
	for {
		key, ok := sc.NextKey()
		if !ok {
			return
		}
		switch string(key) {
		case "prompt_tokens":
			d.usage.InputTokens = d.int()
		case "completion_tokens":
			d.usage.OutputTokens = d.int()
		case "prompt_tokens_details":
			if !sc.EnterObject() {
				sc.Skip()
				continue
			}
			for {
				k, ok := sc.NextKey()
				if !ok {
					break
				}
				if string(k) == "cached_tokens" {
					d.usage.CachedTokens = d.int()
				} else {
					sc.Skip()
				}
			}
		default:
			sc.Skip()
		}
	}
}

func (d *decoder) int() int64 {
	if n, ok := d.sc.Int(); ok {
		return n
	}
	d.sc.Skip()
	return 0
}

// finishReason maps OpenAI's finish reasons to ours. Others are kept as
// they are ("eos" from some servers is a stop).
func finishReason(s []byte) model.FinishReason {
	switch string(s) {
	case "stop", "eos", "end_turn":
		return model.FinishStop
	case "length":
		return model.FinishLength
	case "tool_calls", "function_call":
		return model.FinishToolCalls
	case "content_filter":
		return model.FinishContentFilter
	case "":
		return ""
	}
	return model.FinishReason(s)
}

// Generate implements model.Generator: one request without streaming,
// bounded by Timeouts.FirstChunk and Hard.
func (m *Model) Generate(ctx context.Context, req *model.Request) (*model.Response, error) {
	body, err := m.encode(req, false)
	if err != nil {
		return nil, err
	}
	raw, err := m.call.Do(ctx, m.newRequest(body, false))
	if err != nil {
		return nil, err
	}
	var v struct {
		Choices []struct {
			Message struct {
				Content   *string `json:"content"`
				Refusal   *string `json:"refusal"`
				ToolCalls []struct {
					ID       string `json:"id"`
					Function struct {
						Name      string          `json:"name"`
						Arguments json.RawMessage `json:"arguments"`
					} `json:"function"`
				} `json:"tool_calls"`
			} `json:"message"`
			FinishReason string `json:"finish_reason"`
		} `json:"choices"`
		Usage *struct {
			PromptTokens        int64 `json:"prompt_tokens"`
			CompletionTokens    int64 `json:"completion_tokens"`
			PromptTokensDetails struct {
				CachedTokens int64 `json:"cached_tokens"`
			} `json:"prompt_tokens_details"`
		} `json:"usage"`
		Error json.RawMessage `json:"error"`
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, m.call.Malformed("response", err, false)
	}
	if len(v.Error) > 0 && string(v.Error) != "null" {
		return nil, m.call.BodyError(200, nil, raw)
	}
	if len(v.Choices) == 0 {
		return nil, m.call.Malformed("response", fmt.Errorf("no choices"), false)
	}
	ch := v.Choices[0]
	resp := &model.Response{FinishReason: finishReason([]byte(ch.FinishReason))}
	resp.Message.Role = model.RoleAssistant
	text := ""
	if ch.Message.Content != nil {
		text = *ch.Message.Content
	}
	if ch.Message.Refusal != nil {
		text += *ch.Message.Refusal
	}
	if text != "" {
		resp.Message.Parts = []model.Part{{Type: model.PartText, Text: text}}
	}
	for _, c := range ch.Message.ToolCalls {
		args := c.Function.Arguments
		var s string
		if len(args) > 0 && args[0] == '"' && json.Unmarshal(args, &s) == nil {
			args = json.RawMessage(s)
		}
		if len(args) == 0 {
			args = json.RawMessage("{}")
		}
		resp.Message.ToolCalls = append(resp.Message.ToolCalls, model.ToolCall{ID: c.ID, Name: c.Function.Name, Arguments: args})
	}
	if u := v.Usage; u != nil {
		resp.Usage = model.Usage{InputTokens: u.PromptTokens, OutputTokens: u.CompletionTokens, CachedTokens: u.PromptTokensDetails.CachedTokens}
	}
	if resp.FinishReason == "" {
		resp.FinishReason = model.FinishStop
		if len(resp.Message.ToolCalls) > 0 {
			resp.FinishReason = model.FinishToolCalls
		}
	}
	return resp, nil
}
