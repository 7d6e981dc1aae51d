package model

import (
	"context"
	"iter"
)

// Unstreamed returns a model that asks m for whole replies: its Stream
// calls m's Generate (Generate assembles m's stream when m has none) and
// yields the reply as one chunk. It is what stream: false in agentrt.yaml
// does to a model, for servers whose streaming is broken or slower.
func Unstreamed(m Model) Model { return unstreamed{m} }

type unstreamed struct{ m Model }

func (u unstreamed) Name() string { return u.m.Name() }

func (u unstreamed) Generate(ctx context.Context, req *Request) (*Response, error) {
	return Generate(ctx, u.m, req)
}

func (u unstreamed) Stream(ctx context.Context, req *Request) iter.Seq2[Chunk, error] {
	return func(yield func(Chunk, error) bool) {
		resp, err := Generate(ctx, u.m, req)
		if err != nil {
			yield(Chunk{}, err)
			return
		}
		yield(ResponseChunk(resp), nil)
	}
}

// ResponseChunk returns a whole reply as one chunk, which an Assembler
// turns back into the same reply.
func ResponseChunk(r *Response) Chunk {
	c := Chunk{Text: r.Message.Text(), FinishReason: r.FinishReason}
	u := r.Usage
	c.Usage = &u
	for i, tc := range r.Message.ToolCalls {
		c.ToolCalls = append(c.ToolCalls, ToolCallDelta{Index: i, ID: tc.ID, Name: tc.Name, Arguments: string(tc.Arguments)})
	}
	return c
}
