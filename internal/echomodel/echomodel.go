// Package echomodel is the scripted model the protocol adapters' tests
// share: it answers without a network, in the shapes a real model streams.
package echomodel

import (
	"context"
	"iter"
	"strings"

	"github.com/agentrt/agentrt/model"
)

// Model answers the last message with "echo: " and its text, a word a
// token, usage on the last; a user message "call NAME ARGS" makes it call
// tool NAME with ARGS first, and "fail" makes the model call fail with
// FailMessage (a bad_request), and "hold" makes it wait until its call
// is abandoned (a test interrupts or cancels the run meanwhile).
type Model struct {
	FailMessage string
}

// Name is "echo".
func (Model) Name() string { return "echo" }

// Stream implements model.Model.
func (m Model) Stream(ctx context.Context, req *model.Request) iter.Seq2[model.Chunk, error] {
	return func(yield func(model.Chunk, error) bool) {
		last := req.Messages[len(req.Messages)-1]
		if last.Role == model.RoleUser {
			if rest, ok := strings.CutPrefix(last.Text(), "call "); ok {
				name, args, _ := strings.Cut(rest, " ")
				yield(model.Chunk{ToolCalls: []model.ToolCallDelta{{Index: 0, ID: "call_1", Name: name, Arguments: args}},
					FinishReason: model.FinishToolCalls, Usage: &model.Usage{InputTokens: 3, OutputTokens: 2}}, nil)
				return
			}
			if last.Text() == "hold" {
				<-ctx.Done()
				yield(model.Chunk{}, ctx.Err())
				return
			}
			if last.Text() == "fail" {
				yield(model.Chunk{}, &model.Error{Code: model.CodeBadRequest, Message: m.FailMessage})
				return
			}
		}
		words := strings.SplitAfter("echo: "+last.Text(), " ")
		for i, w := range words {
			c := model.Chunk{Text: w}
			if i == len(words)-1 {
				c.FinishReason = model.FinishStop
				c.Usage = &model.Usage{InputTokens: 10, OutputTokens: 5}
			}
			if !yield(c, nil) {
				return
			}
		}
	}
}
