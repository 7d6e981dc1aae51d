package agui

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/session"
)

// Frontend tools. The tools of a RunAgentInput run in the browser: the
// turn offers them to the model beside the agent's own, and a call of one
// becomes a client_tool request of the session. The stream shows the call
// (TOOL_CALL_START, ARGS, END, its id the model's) and ends RUN_FINISHED
// with a success outcome naming it in pendingToolCallIds, as AG-UI has a
// run end that leaves frontend calls for the application. The next input,
// ending with role "tool" messages of those toolCallIds, answers the
// requests and streams the run they continue.

// frontendTools reads an input's tools (AG-UI's Tool: name, description,
// parameters) as the turn's client tools. A name of one of the agent's
// own tools is refused here, before the input is stored: a call must say
// unambiguously who runs it.
func frontendTools(raw []json.RawMessage, own []model.ToolSpec) ([]model.ToolSpec, error) {
	out := make([]model.ToolSpec, 0, len(raw))
	seen := make(map[string]bool, len(raw)+len(own))
	for _, sp := range own {
		seen[sp.Name] = true
	}
	for i, b := range raw {
		var t struct {
			Name        string          `json:"name"`
			Description string          `json:"description"`
			Parameters  json.RawMessage `json:"parameters"`
		}
		if err := json.Unmarshal(b, &t); err != nil {
			return nil, badTools("tools[%d] is not a tool object: %v", i, err)
		}
		if t.Name == "" {
			return nil, badTools("tools[%d] has no name", i)
		}
		if seen[t.Name] {
			return nil, badTools("tools[%d]: %q is declared twice or is a tool of the agent: give the frontend tool another name", i, t.Name)
		}
		seen[t.Name] = true
		schema := bytes.TrimSpace(t.Parameters)
		if len(schema) == 0 || string(schema) == "null" {
			// AG-UI's parameters are optional: a tool without arguments.
			schema = json.RawMessage(`{"type":"object","properties":{}}`)
		}
		out = append(out, model.ToolSpec{Name: t.Name, Description: t.Description, InputSchema: schema})
	}
	return out, nil
}

func badTools(format string, args ...any) error {
	return &agentrt.Error{Kind: agentrt.FailInput, Code: agentrt.CodeBadClientTools, Msg: fmt.Sprintf(format, args...)}
}

// toolAnswer is the result a tool message gives a frontend call.
type toolAnswer struct {
	text   string
	failed string // the message's error: the tool failed
}

// toolResults returns the tool messages the input ends with (after its
// last message of another role), by toolCallId; nil when it ends with
// another role's message.
func toolResults(msgs []InputMessage) (map[string]toolAnswer, error) {
	start := len(msgs)
	for start > 0 && msgs[start-1].Role == "tool" {
		start--
	}
	if start == len(msgs) {
		return nil, nil
	}
	out := make(map[string]toolAnswer, len(msgs)-start)
	for _, m := range msgs[start:] {
		if m.ToolCallID == "" {
			return nil, badRequest("message %s is a tool message without toolCallId", m.ID)
		}
		text, media, err := messageContent(m)
		if err != nil {
			return nil, err
		}
		if len(media) > 0 {
			// A tool's result is text to the runtime.
			return nil, badRequest("%s: a tool message's content is text: this endpoint takes text parts there", media[0].Where)
		}
		out[m.ToolCallID] = toolAnswer{text: text, failed: m.Error}
	}
	return out, nil
}

// resolution is the answer a tool message gives a client_tool request:
// its content as the tool's result, or, with an error, the call failed.
func (a toolAnswer) resolution(by string) agentrt.Resolution {
	if a.failed != "" {
		return agentrt.Resolution{Decision: session.DecisionFailed, Reason: a.failed, Text: a.text, By: by}
	}
	return agentrt.Resolution{Text: a.text, By: by}
}

// answer gives the thread's pending frontend calls the results the input
// ends with and streams the run they continue. Every pending client_tool
// request needs its result (a client answers all the calls a run left);
// the last one recorded continues the run. A result for a call no request
// waits for is refused: it is not an input the thread can take.
func (h *handler) answer(ctx context.Context, st *stream, ss *session.Session, results map[string]toolAnswer, r *http.Request) {
	pend, err := h.r.PendingRequests(ctx, session.RequestListOptions{SessionID: ss.ID, Kind: session.RequestClientTool, Limit: agentrt.MaxRequestPage})
	if err != nil {
		h.srv.WriteError(st.w, r, err)
		return
	}
	type call struct {
		rid, callID string
		res         toolAnswer
	}
	var calls []call
	waiting := make(map[string]bool, len(pend))
	for _, p := range pend {
		c := p.Request.Calls[0]
		waiting[c.ID] = true
		res, ok := results[c.ID]
		if !ok {
			h.srv.WriteError(st.w, r, badRequest("thread %s waits for the result of tool call %s (%s): end the messages with a tool message of that toolCallId",
				ss.ID, c.ID, c.Name))
			return
		}
		calls = append(calls, call{p.Request.RequestID, c.ID, res})
	}
	for id := range results {
		if !waiting[id] {
			h.srv.WriteError(st.w, r, &agentrt.Error{Kind: agentrt.FailInput, Code: agentrt.CodeUnknownRequest,
				Msg: fmt.Sprintf("no run of thread %s waits for tool call %s: end the messages with the user's new input", ss.ID, id)})
			return
		}
	}
	by := agentrt.ActorOf(ctx)
	for _, c := range calls[:len(calls)-1] {
		if _, err := h.r.Resolve(ctx, ss.ID, c.rid, c.res.resolution(by)); err != nil {
			h.srv.WriteError(st.w, r, err)
			return
		}
	}
	// Follow the session from before the last answer, subscribed to its
	// tokens, so that the run it continues is streamed whole.
	ss, err = h.r.Store().GetSession(ctx, ss.ID)
	if err != nil {
		h.srv.WriteError(st.w, r, &agentrt.Error{Kind: agentrt.FailStore, Msg: "read the thread's session", Err: err})
		return
	}
	f, err := h.srv.FollowSession(ctx, ss.ID, ss.LastSeq)
	if err != nil {
		h.srv.WriteError(st.w, r, err)
		return
	}
	defer f.Close()
	last := calls[len(calls)-1]
	out, err := h.r.ResolveAndContinue(ctx, ss.ID, last.rid, last.res.resolution(by))
	if err != nil {
		h.srv.WriteError(st.w, r, err)
		return
	}
	// The client holds these results as its own tool messages already:
	// the stream does not send them back as TOOL_CALL_RESULT.
	for _, c := range calls {
		st.t.answered[c.callID] = true
	}
	st.open(ss, nil)
	if out.Run == nil {
		// A person's answer is still pending: the run waits for it.
		st.t.status = session.StatusWaiting
		h.end(ctx, st, ss.ID, nil)
		return
	}
	if !h.pipe(ctx, st, f) {
		return
	}
	h.end(ctx, st, ss.ID, nil)
}
