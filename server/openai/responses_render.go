package openai

import (
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/agentrt/agentrt/gateway"
	"github.com/agentrt/agentrt/session"
)

// renderer turns a turn's events into the response and its stream's
// events: an output message for each reply of the model with text (its
// tokens as deltas), a function_call item for each call of the client's
// tools the run waits for, a message with the turn's final answer when
// no reply said it (an executor's summary), and one with the questions of
// a run that waits for a person.
//
// Sequence numbers. A stream read again — by another process, after a
// restart, from the log alone — numbers its events as the first reading
// did, though the log keeps no tokens: every number is a function of the
// stored events, and a text delta's number says where its text ends in
// the message:
//
//   - response.created is 0; response.in_progress, when the turn's run
//     starts, 1.
//   - A message takes the numbers from b, the next free number when its
//     model call began (when its stored event came, for the others):
//     output_item.added b, content_part.added b+1, a delta that ends at
//     byte e of the message's text b+1+e, and, the stored text being L
//     bytes long, output_text.done b+L+2, content_part.done b+L+3,
//     output_item.done b+L+4. A reply without text takes no number.
//   - Every other event takes the next free number.
//
// Read as it happens, a message's deltas are the model's tokens; read
// from the log, the message's text is one delta, numbered b+1+L. Either
// way, resumed after number N, a delta's text starts at byte N-(b+1) of
// its message, what the client has being the bytes before: the rest of
// the text, nothing twice. Tokens are rendered only for the model calls
// the reader saw begin (model_started after horizon): one that joined a
// call half way has missed its first tokens, and renders the call's text
// when its model_finished is stored.
//
// A reply whose stored text is not what its tokens carried (a model call
// retried after it streamed part of a reply, an after-model hook that
// rewrote it, tokens a slow reader lost) cannot be taken back: its
// output_text.done and output_item.done carry the stored text, which the
// OpenAI clients' accumulators take, and the numbers count on from the
// last one given.
type renderer struct {
	ref  responseRef
	base Response
	o    outcome
	// track picks the turn's events out of the session's: the gateway
	// says which they are and where the turn ends.
	track   *gateway.TurnTracker
	matched bool // the turn's run has started
	ended   bool
	// from: only the events numbered after it are rendered (-1: all).
	from int64
	// horizon: the tokens of a model call whose model_started has a seq
	// up to horizon are not rendered (the reader may have missed some).
	horizon int64
	last    int64 // the number of the last event (-1: none yet)
	items   []OutputItem
	// call is the conversation's model call in progress. An executor's
	// own model call (a plan, a summary) opens none: its tokens are not
	// a reply.
	call   *modelCall
	said   string // the text of the turn's last reply with text
	handed map[string]bool
	// run is the run of the turn's last event: the one in progress while
	// the turn runs (a turn restarted after an interruption goes on in
	// another run), which a cancel of the response names.
	run string
	// settled is why the turn ended without a run's end in the log: the
	// gateway refused its input, or set its restart aside (settle).
	settled *Error
}

// modelCall is a model call of the conversation: a reply, and the
// message with its text.
type modelCall struct {
	seq   int64 // the seq of its model_started (its first attempt's)
	base  int64 // the number of its message's output_item.added
	live  bool  // its tokens are rendered as they come
	text  strings.Builder
	index int // its message's output index; -1 until the message is added
}

func (a *Adapter) newRenderer(ref responseRef, id, model, prev string) *renderer {
	rd := &renderer{ref: ref, from: -1, last: -1, handed: map[string]bool{}, track: gateway.TrackInput(ref.input)}
	rd.base = Response{ID: id, Object: "response", CreatedAt: a.now().Unix(), Model: model, Background: ref.background,
		Output: []OutputItem{}, ParallelToolCalls: true, ToolChoice: "auto", Tools: []FunctionTool{}, Store: true,
		Metadata: map[string]string{}}
	if prev != "" {
		rd.base.PreviousResponseID = &prev
	}
	return rd
}

// status is the response's status so far.
func (rd *renderer) status() string {
	if rd.settled != nil {
		return "failed"
	}
	if !rd.matched {
		return "queued"
	}
	if !rd.ended {
		return "in_progress"
	}
	switch rd.o.status {
	case session.StatusFailed:
		return "failed"
	case session.StatusCanceled, session.StatusInterrupted:
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
	r.Output = slices.Clone(rd.items)
	if c := rd.call; c != nil && c.index >= 0 {
		r.Output[c.index].Content = []OutputPart{textPart(c.text.String())}
	}
	if r.Output == nil {
		r.Output = []OutputItem{}
	}
	if rd.ended {
		r.Usage = &ResponseUsage{InputTokens: rd.o.usage.InputTokens, OutputTokens: rd.o.usage.OutputTokens,
			TotalTokens: rd.o.usage.InputTokens + rd.o.usage.OutputTokens}
		if e := rd.o.failure(); e != nil && rd.o.status == session.StatusFailed {
			r.Error = &ResponseError{Code: e.Code, Message: e.Message}
		}
		if e := rd.settled; e != nil {
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

func textPart(text string) OutputPart {
	return OutputPart{Type: "output_text", Text: text, Annotations: []any{}, Logprobs: []any{}}
}

// itemID names an output item by the stored event it comes from, so
// that every reading of the response names it the same.
func (rd *renderer) itemID(kind string, seq int64) string {
	return fmt.Sprintf("%s_%s_%d", kind, rd.ref.session, seq)
}

// put numbers ev n and renders it if it comes after from. A reply whose
// stored text is shorter than what its tokens carried could leave n
// behind the numbers its deltas took: the numbers still count up.
func (rd *renderer) put(out []StreamEvent, n int64, ev StreamEvent) []StreamEvent {
	n = max(n, rd.last+1)
	rd.last = n
	if n <= rd.from {
		return out
	}
	ev.SequenceNumber = n
	return append(out, ev)
}

// start is the stream's first event.
func (rd *renderer) start() []StreamEvent {
	return rd.put(nil, 0, StreamEvent{Type: "response.created", Response: rd.response()})
}

// see takes the turn's next event and returns the stream events it
// makes, if any.
func (rd *renderer) see(ev *session.Event) []StreamEvent {
	if rd.ended || ev.Seq != 0 && ev.Seq <= rd.ref.after {
		return nil
	}
	// The turn of an input begins with the run_started that answers it; a
	// turn that goes on after an answer to a waiting run, with the first
	// event after the answer. Its end is the gateway's to say (a restart
	// after newer input goes on in a new run; a person's interrupt ends it).
	keep, end := rd.track.See(ev)
	if !keep {
		if end != nil && !rd.ended {
			// Ended by an event of another turn (handed over: the newer
			// input went to another turn's run): cancelled, as a person's
			// interrupt is.
			var out []StreamEvent
			if c := rd.call; c != nil {
				rd.call = nil
				if c.index >= 0 {
					out = rd.finish(out, c, c.text.String(), "incomplete")
				}
			}
			rd.ended = true
			rd.o.status, rd.o.interrupt = session.StatusInterrupted, end.Reason
			return rd.put(out, rd.last+1, StreamEvent{Type: "response.failed", Response: rd.response()})
		}
		return nil
	}
	if ev.Seq == 0 {
		if t, ok := ev.Data.(*session.Token); ok {
			return rd.token(t)
		}
		return nil
	}
	var out []StreamEvent
	if !rd.matched {
		rs, isStart := ev.Data.(*session.RunStarted)
		rd.matched = true
		if !ev.Time.IsZero() {
			rd.base.CreatedAt = ev.Time.Unix()
		}
		if isStart {
			rd.base.Tools = functionTools(rs.ClientTools)
		}
		rd.o.see(ev)
		rd.run = ev.RunID
		return rd.put(out, rd.last+1, StreamEvent{Type: "response.in_progress", Response: rd.response()})
	}
	rd.o.see(ev)
	if ev.RunID != "" {
		rd.run = ev.RunID
	}
	switch d := ev.Data.(type) {
	case *session.ModelStarted:
		switch {
		case d.Purpose != "":
		case rd.call == nil:
			rd.call = &modelCall{seq: ev.Seq, base: rd.last + 1, live: ev.Seq > rd.horizon, index: -1}
		case rd.call.text.Len() > 0:
			// Another attempt at the call, whose tokens start the reply
			// again: the client has the first attempt's.
			rd.call.live = false
		}
	case *session.ModelFinished:
		if d.Purpose != "" {
			break
		}
		c := rd.call
		if c == nil {
			c = &modelCall{seq: ev.Seq, base: rd.last + 1, index: -1}
		}
		rd.call = nil
		out = rd.finish(out, c, d.Content, "completed")
		if d.Content != "" {
			rd.said = d.Content
		}
	case *session.InputRequired:
		if d.Kind == session.RequestClientTool {
			out = rd.functionCalls(out, ev.Seq, d)
		}
	case *session.Final:
		if d.Text != "" && d.Text != rd.said {
			out = rd.finish(out, &modelCall{seq: ev.Seq, base: rd.last + 1, index: -1}, d.Text, "completed")
			rd.said = d.Text
		}
	case *session.RunFinished:
		if end == nil {
			return out // newer input restarts the turn, in a new run
		}
		if c := rd.call; c != nil {
			rd.call = nil
			if c.index >= 0 {
				out = rd.finish(out, c, c.text.String(), "incomplete")
			}
		}
		if d.Status == session.StatusWaiting {
			if q := rd.o.answer(); q != "" {
				out = rd.finish(out, &modelCall{seq: ev.Seq, base: rd.last + 1, index: -1}, q, "completed")
			}
		}
		rd.ended = true
		if !ev.Time.IsZero() && rd.status() == "completed" {
			rd.base.CompletedAt = ptr(ev.Time.Unix())
		}
		typ := "response.completed"
		switch rd.status() {
		case "failed", "cancelled":
			typ = "response.failed"
		case "incomplete":
			typ = "response.incomplete"
		}
		out = rd.put(out, rd.last+1, StreamEvent{Type: typ, Response: rd.response()})
	}
	return out
}

// settle ends the response as the gateway says its turn ended when the
// log does not (gateway.Gateway.Ended): failed, with the refusal's code.
func (rd *renderer) settle(o *gateway.Outcome) []StreamEvent {
	if rd.ended {
		return nil
	}
	rd.ended, rd.settled = true, toAPIError(o.Err())
	rd.o.status = session.StatusFailed
	return rd.put(nil, rd.last+1, StreamEvent{Type: "response.failed", Response: rd.response()})
}

// token renders a token of the reply in progress as a delta.
func (rd *renderer) token(t *session.Token) []StreamEvent {
	c := rd.call
	if c == nil || !c.live || t.Pulse || t.Text == "" {
		return nil
	}
	var out []StreamEvent
	if c.index < 0 {
		out = rd.open(out, c)
	}
	s := c.text.Len()
	c.text.WriteString(t.Text)
	return rd.delta(out, c, c.text.String(), s, c.text.Len())
}

// open adds the message of c's reply, with its one text part.
func (rd *renderer) open(out []StreamEvent, c *modelCall) []StreamEvent {
	c.index = len(rd.items)
	id := rd.itemID("msg", c.seq)
	rd.items = append(rd.items, OutputItem{Type: "message", ID: id, Status: "in_progress", Role: "assistant"})
	added := rd.items[c.index]
	out = rd.put(out, c.base, StreamEvent{Type: "response.output_item.added", OutputIndex: ptr(c.index), Item: &added})
	rd.items[c.index].Content = []OutputPart{textPart("")}
	return rd.put(out, c.base+1, StreamEvent{Type: "response.content_part.added", OutputIndex: ptr(c.index),
		ContentIndex: ptr(0), ItemID: id, Part: ptr(textPart(""))})
}

// delta renders text[s:e], the bytes of c's message from s to e, less
// those the client has (before byte from-(base+1)).
func (rd *renderer) delta(out []StreamEvent, c *modelCall, text string, s, e int) []StreamEvent {
	if k := rd.from - (c.base + 1); k > int64(s) {
		s = int(min(k, int64(e)))
		for s < e && !utf8.RuneStart(text[s]) {
			s++ // a number inside a character: from its end
		}
	}
	d := text[s:e]
	return rd.put(out, c.base+1+int64(e), StreamEvent{Type: "response.output_text.delta", OutputIndex: ptr(c.index),
		ContentIndex: ptr(0), ItemID: rd.items[c.index].ID, Delta: &d, Logprobs: []any{}})
}

// finish ends c's message with its stored text: what the tokens did not
// carry, then the done events. A reply without text that rendered no
// token has no message.
func (rd *renderer) finish(out []StreamEvent, c *modelCall, text, status string) []StreamEvent {
	if c.index < 0 {
		if text == "" {
			return out
		}
		out = rd.open(out, c)
	}
	if streamed := c.text.String(); len(text) > len(streamed) && strings.HasPrefix(text, streamed) {
		out = rd.delta(out, c, text, len(streamed), len(text))
	}
	n := c.base + int64(len(text))
	it := &rd.items[c.index]
	part := textPart(text)
	it.Content, it.Status = []OutputPart{part}, status
	out = rd.put(out, n+2, StreamEvent{Type: "response.output_text.done", OutputIndex: ptr(c.index), ContentIndex: ptr(0),
		ItemID: it.ID, Text: &text, Logprobs: []any{}})
	out = rd.put(out, n+3, StreamEvent{Type: "response.content_part.done", OutputIndex: ptr(c.index), ContentIndex: ptr(0),
		ItemID: it.ID, Part: &part})
	done := *it
	return rd.put(out, n+4, StreamEvent{Type: "response.output_item.done", OutputIndex: ptr(c.index), Item: &done})
}

// functionCalls renders the calls of request q, of the client's tools,
// as function_call items.
func (rd *renderer) functionCalls(out []StreamEvent, seq int64, q *session.InputRequired) []StreamEvent {
	for i, call := range q.Calls {
		if rd.handed[call.ID] {
			continue
		}
		rd.handed[call.ID] = true
		idx := len(rd.items)
		id := fmt.Sprintf("%s_%d", rd.itemID("fc", seq), i)
		rd.items = append(rd.items, OutputItem{Type: "function_call", ID: id, Status: "in_progress", CallID: call.ID, Name: call.Name})
		added := rd.items[idx]
		args := string(call.Arguments)
		out = rd.put(out, rd.last+1, StreamEvent{Type: "response.output_item.added", OutputIndex: ptr(idx), Item: &added})
		out = rd.put(out, rd.last+1, StreamEvent{Type: "response.function_call_arguments.delta", OutputIndex: ptr(idx), ItemID: id, Delta: &args})
		out = rd.put(out, rd.last+1, StreamEvent{Type: "response.function_call_arguments.done", OutputIndex: ptr(idx), ItemID: id,
			Arguments: &args, Name: call.Name})
		rd.items[idx].Arguments, rd.items[idx].Status = args, "completed"
		done := rd.items[idx]
		out = rd.put(out, rd.last+1, StreamEvent{Type: "response.output_item.done", OutputIndex: ptr(idx), Item: &done})
	}
	return out
}
