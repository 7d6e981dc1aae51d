package openai

import (
	"encoding/json"
	"net/http"
	"strings"

	"github.com/agentrt/agentrt/session"
)

// ChatCompletion is the answer of a chat completion that does not stream.
type ChatCompletion struct {
	ID      string       `json:"id"`
	Object  string       `json:"object"` // "chat.completion"
	Created int64        `json:"created"`
	Model   string       `json:"model"`
	Choices []ChatChoice `json:"choices"`
	Usage   *ChatUsage   `json:"usage,omitempty"`
	// Agentrt is agentrt's own field: the session and what the turn
	// waits for.
	Agentrt *Extension `json:"agentrt,omitempty"`
}

// ChatChoice is the one choice of an answer.
type ChatChoice struct {
	Index        int             `json:"index"`
	Message      *ChatAnswer     `json:"message,omitempty"`
	Delta        *ChatAnswer     `json:"delta,omitempty"`
	FinishReason *string         `json:"finish_reason"`
	Logprobs     json.RawMessage `json:"logprobs"`
}

// ChatAnswer is the assistant's message (or a streamed chunk's delta).
type ChatAnswer struct {
	Role      string         `json:"role,omitempty"`
	Content   *string        `json:"content,omitempty"`
	Refusal   *string        `json:"refusal,omitempty"`
	ToolCalls []ChatToolCall `json:"tool_calls,omitempty"`
}

// ChatUsage is a turn's token usage, summed over its model calls.
type ChatUsage struct {
	PromptTokens     int64 `json:"prompt_tokens"`
	CompletionTokens int64 `json:"completion_tokens"`
	TotalTokens      int64 `json:"total_tokens"`
}

// ChatChunk is one chunk of a streamed chat completion.
type ChatChunk struct {
	ID      string       `json:"id"`
	Object  string       `json:"object"` // "chat.completion.chunk"
	Created int64        `json:"created"`
	Model   string       `json:"model"`
	Choices []ChatChoice `json:"choices"`
	Usage   *ChatUsage   `json:"usage,omitempty"`
	Agentrt *Extension   `json:"agentrt,omitempty"`
}

func (a *Adapter) chatCompletions(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	req, err := decodeChat(r)
	if err != nil {
		writeError(w, err)
		return
	}
	ag, ok := a.r.Agent(req.Model)
	if !ok {
		writeError(w, modelNotFound(req.Model))
		return
	}
	tools, err := clientTools(req.Tools)
	if err == nil && len(tools) > 0 {
		// Before a session is made for the request: a tool the agent has
		// too, or one declared twice, is refused to the client now.
		if err = ag.CheckClientTools(tools); err != nil {
			e := toAPIError(err)
			e.Param = ptr("tools")
			err = e
		}
	}
	if err != nil {
		writeError(w, err)
		return
	}
	results, err := toolResults(req.Messages)
	if err != nil {
		writeError(w, err)
		return
	}
	var x *exchange
	if results != nil {
		// The results of the client's tools the run waits for.
		x, err = a.answerTools(ctx, r.Header.Get(SessionHeader), req.Model, results)
	} else {
		var conv *conversation
		if conv, err = splitConversation(req.Messages); err == nil {
			x, err = a.begin(ctx, r.Header.Get(SessionHeader), req.Model, conv, tools)
		}
	}
	if err != nil {
		writeError(w, err)
		return
	}
	defer x.close()
	w.Header().Set(SessionHeader, x.session)
	if req.Stream {
		a.streamChat(w, r, req, x)
		return
	}
	var o outcome
	for ev, err := range x.events {
		if err != nil {
			writeError(w, err)
			return
		}
		o.see(ev)
	}
	if err := ctx.Err(); err != nil {
		return // the client went away; the turn goes on
	}
	if e := o.failure(); e != nil {
		writeError(w, e)
		return
	}
	msg := &ChatAnswer{Role: "assistant", Content: ptr(o.answer())}
	if calls := o.clientCalls(); len(calls) > 0 {
		for i := range calls {
			calls[i].Index = nil
		}
		msg.ToolCalls = calls
		if *msg.Content == "" {
			msg.Content = nil
		}
	}
	c := ChatCompletion{ID: "chatcmpl-" + o.runID, Object: "chat.completion", Created: a.now().Unix(), Model: req.Model,
		Choices: []ChatChoice{{Message: msg, FinishReason: ptr(o.finishReason()),
			Logprobs: json.RawMessage("null")}},
		Usage: usage(&o), Agentrt: o.extension(x.session)}
	writeJSON(w, http.StatusOK, c)
}

func usage(o *outcome) *ChatUsage {
	return &ChatUsage{PromptTokens: o.usage.InputTokens, CompletionTokens: o.usage.OutputTokens,
		TotalTokens: o.usage.InputTokens + o.usage.OutputTokens}
}

// streamChat streams the turn as chat.completion.chunk events: a first
// chunk with the assistant's role, the text as the model streams it, the
// last chunk with finish_reason, then (include_usage) a chunk with the
// usage and no choices, then [DONE]. A turn that fails ends with an
// error event instead, as OpenAI's streams do, and no [DONE].
func (a *Adapter) streamChat(w http.ResponseWriter, r *http.Request, req *ChatRequest, x *exchange) {
	s := newSSE(w)
	ka := a.srv.KeepAlive(w)
	defer ka.Stop()
	s.ka = ka
	var o outcome
	chunk := ChatChunk{Object: "chat.completion.chunk", Created: a.now().Unix(), Model: req.Model}
	send := func(delta *ChatAnswer, finish *string) bool {
		chunk.ID = "chatcmpl-" + o.runID
		chunk.Choices = []ChatChoice{{Delta: delta, FinishReason: finish, Logprobs: json.RawMessage("null")}}
		return s.data(chunk) == nil
	}
	// round is the text streamed since the last model call began: what
	// the final answer is checked against, so that an answer no token
	// carried (a reply that did not stream) still reaches the client.
	var round strings.Builder
	started := false
	for ev, err := range x.events {
		if err != nil {
			_ = s.fail(toAPIError(err))
			return
		}
		o.see(ev)
		if !started && o.runID != "" {
			started = true
			if !send(&ChatAnswer{Role: "assistant", Content: ptr("")}, nil) {
				return
			}
		}
		switch d := ev.Data.(type) {
		case *session.ModelStarted:
			round.Reset()
		case *session.Token:
			if d.Pulse || d.Text == "" {
				continue
			}
			round.WriteString(d.Text)
			if !send(&ChatAnswer{Content: ptr(d.Text)}, nil) {
				return
			}
		case *session.Final:
			// The text of the final answer no token carried.
			if rest, ok := strings.CutPrefix(d.Text, round.String()); ok && rest != "" {
				if !send(&ChatAnswer{Content: &rest}, nil) {
					return
				}
			} else if !ok && round.Len() == 0 {
				if !send(&ChatAnswer{Content: ptr(d.Text)}, nil) {
					return
				}
			}
		}
	}
	if r.Context().Err() != nil {
		return
	}
	if e := o.failure(); e != nil {
		_ = s.fail(e)
		return
	}
	if o.status == session.StatusWaiting {
		if q := o.answer(); q != "" && !send(&ChatAnswer{Content: &q}, nil) {
			return
		}
		if calls := o.clientCalls(); len(calls) > 0 && !send(&ChatAnswer{ToolCalls: calls}, nil) {
			return
		}
	}
	chunk.Agentrt = o.extension(x.session)
	if !send(&ChatAnswer{}, ptr(o.finishReason())) {
		return
	}
	chunk.Agentrt = nil
	if req.StreamOptions != nil && req.StreamOptions.IncludeUsage {
		chunk.Choices = []ChatChoice{}
		chunk.Usage = usage(&o)
		if s.data(chunk) != nil {
			return
		}
	}
	_ = s.done()
}
