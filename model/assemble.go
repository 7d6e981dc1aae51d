package model

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Assembler accumulates streamed chunks into a Response. The zero value is
// ready to use; Reset makes it reusable without reallocating.
type Assembler struct {
	text   strings.Builder
	calls  []pendingCall
	usage  Usage
	finish FinishReason
	chunks int
}

type pendingCall struct {
	index int
	id    string
	name  string
	args  []byte
}

// Reset clears a for another response, keeping its buffers.
func (a *Assembler) Reset() {
	a.text.Reset()
	a.calls = a.calls[:0]
	a.usage = Usage{}
	a.finish = ""
	a.chunks = 0
}

// Add folds one chunk into the response.
func (a *Assembler) Add(c Chunk) {
	if c.Pulse {
		return // news of waiting, not part of the reply
	}
	a.chunks++
	if c.Text != "" {
		if a.text.Len() == 0 && len(c.Text) > 0 {
			// One-chunk replies keep the original string: no copy.
			a.text.Grow(len(c.Text))
		}
		a.text.WriteString(c.Text)
	}
	for _, d := range c.ToolCalls {
		p := a.call(d.Index)
		if d.ID != "" {
			p.id = d.ID
		}
		if d.Name != "" {
			p.name += d.Name
		}
		if d.Arguments != "" {
			p.args = append(p.args, d.Arguments...)
		}
	}
	if c.Usage != nil {
		a.usage = *c.Usage
	}
	if c.FinishReason != "" {
		a.finish = c.FinishReason
	}
}

func (a *Assembler) call(index int) *pendingCall {
	for i := range a.calls {
		if a.calls[i].index == index {
			return &a.calls[i]
		}
	}
	a.calls = append(a.calls, pendingCall{index: index})
	return &a.calls[len(a.calls)-1]
}

// Text returns the text assembled so far.
func (a *Assembler) Text() string { return a.text.String() }

// Response returns the assembled reply. Tool calls whose arguments are not
// a JSON object are kept (the runtime answers them with a tool error the
// model can act on); an empty argument string becomes {}.
func (a *Assembler) Response() (*Response, error) {
	if a.chunks == 0 {
		return nil, fmt.Errorf("model: empty stream")
	}
	r := &Response{Usage: a.usage, FinishReason: a.finish}
	r.Message.Role = RoleAssistant
	if a.text.Len() > 0 {
		r.Message.Parts = []Part{{Type: PartText, Text: a.text.String()}}
	}
	if len(a.calls) > 0 {
		r.Message.ToolCalls = make([]ToolCall, len(a.calls))
		for i, p := range a.calls {
			args := json.RawMessage(p.args)
			if len(args) == 0 {
				args = json.RawMessage("{}")
			}
			r.Message.ToolCalls[i] = ToolCall{ID: p.id, Name: p.name, Arguments: args}
		}
		if r.FinishReason == "" {
			r.FinishReason = FinishToolCalls
		}
	}
	if r.FinishReason == "" {
		r.FinishReason = FinishStop
	}
	return r, nil
}
