package anthropic

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/agentrt/agentrt/internal/jsonscan"
	"github.com/agentrt/agentrt/internal/llmhttp"
	"github.com/agentrt/agentrt/model"
)

// decoder turns the events of one stream into model.Chunks. Its buffers
// are reused from event to event, and from stream to stream (decoders).
type decoder struct {
	sc     jsonscan.Scanner
	strs   llmhttp.Strings
	deltas []model.ToolCallDelta
	// blocks is what each content block of the reply is, by its index:
	// a tool call's index in our chunks (0, 1, ...), or textBlock, or
	// otherBlock for the blocks that are skipped (thinking, server tools).
	blocks []int
	calls  int
	wire   wireUsage   // the usage so far, as the API counts it
	usage  model.Usage // the usage yielded, as agentrt counts it
	sent   bool        // usage has been yielded
	args   []byte      // scratch for partial_json
}

const (
	textBlock  = -1
	otherBlock = -2
	toolUse    = -3 // a tool_use block while it starts: blocks holds its call's index
)

// wireUsage is the API's usage object.
type wireUsage struct {
	input, cacheCreation, cacheRead, output int64
}

func (u wireUsage) model() model.Usage {
	return model.Usage{InputTokens: u.input + u.cacheCreation + u.cacheRead, CachedTokens: u.cacheRead, OutputTokens: u.output}
}

var decoders = sync.Pool{New: func() any { return new(decoder) }}

func (d *decoder) release() {
	d.reset()
	decoders.Put(d)
}

// reset readies d for another stream, keeping its buffers.
func (d *decoder) reset() {
	d.strs.Reset() // strings made so far belong to the consumer now
	d.deltas, d.blocks = d.deltas[:0], d.blocks[:0]
	d.calls, d.wire, d.usage, d.sent = 0, wireUsage{}, model.Usage{}, false
}

type chunk struct{ model.Chunk }

// event decodes one event of the stream; done reports message_stop, the
// stream's terminator.
func (d *decoder) event(call *llmhttp.Call, event, data []byte) (c chunk, done bool, err error) {
	typ := event
	if len(typ) == 0 {
		typ = d.eventType(data) // a proxy that drops event names
	}
	switch string(typ) {
	case "message_start":
		err = d.messageStart(call, data)
	case "content_block_start":
		err = d.blockStart(call, data, &c.Chunk)
	case "content_block_delta":
		err = d.blockDelta(call, data, &c.Chunk)
	case "message_delta":
		err = d.messageDelta(call, data, &c.Chunk)
	case "message_stop":
		if !d.sent {
			// No message_delta came: the usage is message_start's.
			d.usage, d.sent = d.wire.model(), true
			c.Usage = &d.usage
		}
		return c, true, nil
	case "error":
		e := call.BodyError(0, nil, data)
		e.Streamed = true
		return c, false, e
	}
	// ping, content_block_stop and event types to come carry nothing we use.
	return c, false, err
}

// eventType returns the type member of an event's data.
func (d *decoder) eventType(data []byte) []byte {
	sc := &d.sc
	sc.Reset(data)
	if !sc.EnterObject() {
		return nil
	}
	for {
		key, ok := sc.NextKey()
		if !ok {
			return nil
		}
		if string(key) == "type" {
			s, _ := sc.Str()
			return s
		}
		sc.Skip()
	}
}

// start positions the scanner inside data's object.
func (d *decoder) start(call *llmhttp.Call, data []byte) error {
	d.sc.Reset(data)
	if !d.sc.EnterObject() {
		return call.Malformed("stream event", fmt.Errorf("not a JSON object: %.80q", data), true)
	}
	return nil
}

// finish checks that the event was read to its end without error.
func (d *decoder) finish(call *llmhttp.Call) error {
	if !d.sc.End() {
		return call.Malformed("stream event", d.sc.Err(), true)
	}
	return nil
}

func (d *decoder) messageStart(call *llmhttp.Call, data []byte) error {
	if err := d.start(call, data); err != nil {
		return err
	}
	sc := &d.sc
	for {
		key, ok := sc.NextKey()
		if !ok {
			break
		}
		if string(key) != "message" || !sc.EnterObject() {
			sc.Skip()
			continue
		}
		for {
			k, ok := sc.NextKey()
			if !ok {
				break
			}
			if string(k) == "usage" {
				d.decodeUsage()
			} else {
				sc.Skip()
			}
		}
	}
	return d.finish(call)
}

func (d *decoder) blockStart(call *llmhttp.Call, data []byte, c *model.Chunk) error {
	if err := d.start(call, data); err != nil {
		return err
	}
	sc := &d.sc
	index := -1
	kind := otherBlock // or textBlock, or toolUse
	var id, name, text string
	var input []byte
	for {
		key, ok := sc.NextKey()
		if !ok {
			break
		}
		switch string(key) {
		case "index":
			index = d.index()
		case "content_block":
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
				case "type":
					s, ok := sc.Str()
					switch {
					case !ok:
						sc.Skip()
					case string(s) == "text":
						kind = textBlock
					case string(s) == "tool_use":
						kind = toolUse
					}
				case "id":
					id = d.str()
				case "name":
					name = d.str()
				case "text":
					text = d.str()
				case "input":
					// Input that the start already holds (the API sends {}
					// and streams the rest), a sub-slice of data.
					input = sc.Raw()
				default:
					sc.Skip()
				}
			}
		default:
			sc.Skip()
		}
	}
	if err := d.finish(call); err != nil {
		return err
	}
	if index < 0 {
		return call.Malformed("stream event", fmt.Errorf("content_block_start without a valid index: %.80q", data), true)
	}
	for len(d.blocks) <= index {
		d.blocks = append(d.blocks, otherBlock)
	}
	switch kind {
	case textBlock:
		d.blocks[index] = textBlock
		c.Text = text
	case toolUse:
		d.blocks[index] = d.calls
		delta := model.ToolCallDelta{Index: d.calls, ID: id, Name: name}
		if !emptyObject(input) {
			delta.Arguments = d.strs.Make(input)
		}
		d.calls++
		d.deltas = append(d.deltas[:0], delta)
		c.ToolCalls = d.deltas
	default:
		d.blocks[index] = otherBlock
	}
	return nil
}

func (d *decoder) blockDelta(call *llmhttp.Call, data []byte, c *model.Chunk) error {
	if err := d.start(call, data); err != nil {
		return err
	}
	sc := &d.sc
	index := -1
	hasArgs := false
	for {
		key, ok := sc.NextKey()
		if !ok {
			break
		}
		switch string(key) {
		case "index":
			index = d.index()
		case "delta":
			if !sc.EnterObject() {
				sc.Skip()
				continue
			}
			// The member names tell the delta types apart: text in a
			// text_delta, partial_json in an input_json_delta; thinking,
			// signature and citation deltas are skipped.
			for {
				k, ok := sc.NextKey()
				if !ok {
					break
				}
				switch string(k) {
				case "text":
					c.Text = d.str()
				case "partial_json":
					if s, ok := sc.AppendStr(d.args[:0]); ok {
						d.args, hasArgs = s, true
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
	if err := d.finish(call); err != nil {
		return err
	}
	if !hasArgs || len(d.args) == 0 {
		return nil
	}
	if index < 0 || index >= len(d.blocks) {
		return call.Malformed("stream event", fmt.Errorf("input_json_delta for content block %d, which did not start", index), true)
	}
	ours := d.blocks[index]
	if ours < 0 {
		return nil // a server tool's input: not ours to run
	}
	d.deltas = append(d.deltas[:0], model.ToolCallDelta{Index: ours, Arguments: d.strs.Make(d.args)})
	c.ToolCalls = d.deltas
	return nil
}

func (d *decoder) messageDelta(call *llmhttp.Call, data []byte, c *model.Chunk) error {
	if err := d.start(call, data); err != nil {
		return err
	}
	sc := &d.sc
	for {
		key, ok := sc.NextKey()
		if !ok {
			break
		}
		switch string(key) {
		case "delta":
			if !sc.EnterObject() {
				sc.Skip()
				continue
			}
			for {
				k, ok := sc.NextKey()
				if !ok {
					break
				}
				if string(k) != "stop_reason" {
					sc.Skip()
					continue
				}
				if s, ok := sc.Str(); ok {
					c.FinishReason = finishReason(s)
				} else {
					sc.Skip()
				}
			}
		case "usage":
			d.decodeUsage()
			d.usage, d.sent = d.wire.model(), true
			c.Usage = &d.usage
		default:
			sc.Skip()
		}
	}
	return d.finish(call)
}

// decodeUsage reads a usage object into d.wire. Counts are cumulative:
// the ones present replace those known (message_delta's usage may carry
// only output_tokens).
func (d *decoder) decodeUsage() {
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
		var dst *int64
		switch string(key) {
		case "input_tokens":
			dst = &d.wire.input
		case "cache_creation_input_tokens":
			dst = &d.wire.cacheCreation
		case "cache_read_input_tokens":
			dst = &d.wire.cacheRead
		case "output_tokens":
			dst = &d.wire.output
		default:
			sc.Skip()
			continue
		}
		if n, ok := sc.Int(); ok {
			*dst = n
		} else {
			sc.Skip() // null: not counted
		}
	}
}

// index reads a content block index.
func (d *decoder) index() int {
	n, ok := d.sc.Int()
	if !ok {
		d.sc.Skip()
		return -1
	}
	if n < 0 || n > 1<<16 {
		return -1
	}
	return int(n)
}

// str reads a string value into a string made by d.strs; other values
// are skipped.
func (d *decoder) str() string {
	if s, ok := d.sc.Str(); ok {
		return d.strs.Make(s)
	}
	d.sc.Skip()
	return ""
}

// emptyObject reports whether raw, a JSON value, is absent, null or {}.
func emptyObject(raw []byte) bool {
	switch {
	case len(raw) == 0 || string(raw) == "null":
		return true
	case raw[0] == '{':
		return len(bytes.TrimSpace(raw[1:len(raw)-1])) == 0
	}
	return false
}

// finishReason maps the API's stop reasons to ours; others are kept as
// they are.
func finishReason(s []byte) model.FinishReason {
	switch string(s) {
	case "end_turn", "stop_sequence", "pause_turn":
		// pause_turn: a server tool paused a long turn; what came so far
		// is a whole reply.
		return model.FinishStop
	case "max_tokens", "model_context_window_exceeded":
		return model.FinishLength
	case "tool_use":
		return model.FinishToolCalls
	case "refusal":
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
		Type    string `json:"type"`
		Content []struct {
			Type  string          `json:"type"`
			Text  string          `json:"text"`
			ID    string          `json:"id"`
			Name  string          `json:"name"`
			Input json.RawMessage `json:"input"`
		} `json:"content"`
		StopReason string `json:"stop_reason"`
		Usage      *struct {
			InputTokens              int64 `json:"input_tokens"`
			CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
			CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
			OutputTokens             int64 `json:"output_tokens"`
		} `json:"usage"`
		Error json.RawMessage `json:"error"`
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, m.call.Malformed("response", err, false)
	}
	if v.Type == "error" || (len(v.Error) > 0 && string(v.Error) != "null") {
		return nil, m.call.BodyError(200, nil, raw)
	}
	if v.Type != "message" {
		return nil, m.call.Malformed("response", fmt.Errorf("type %q, want \"message\"", v.Type), false)
	}
	resp := &model.Response{FinishReason: finishReason([]byte(v.StopReason))}
	resp.Message.Role = model.RoleAssistant
	var text []byte
	for _, b := range v.Content {
		switch b.Type {
		case "text":
			text = append(text, b.Text...)
		case "tool_use":
			args := b.Input
			if len(args) == 0 || string(args) == "null" {
				args = json.RawMessage("{}")
			}
			resp.Message.ToolCalls = append(resp.Message.ToolCalls, model.ToolCall{ID: b.ID, Name: b.Name, Arguments: args})
		}
	}
	if len(text) > 0 {
		resp.Message.Parts = []model.Part{{Type: model.PartText, Text: string(text)}}
	}
	if u := v.Usage; u != nil {
		resp.Usage = wireUsage{input: u.InputTokens, cacheCreation: u.CacheCreationInputTokens,
			cacheRead: u.CacheReadInputTokens, output: u.OutputTokens}.model()
	}
	if resp.FinishReason == "" {
		resp.FinishReason = model.FinishStop
		if len(resp.Message.ToolCalls) > 0 {
			resp.FinishReason = model.FinishToolCalls
		}
	}
	return resp, nil
}
