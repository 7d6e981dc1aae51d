package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/session"
)

// clientTools reads a request's tools: function tools the client runs
// itself. The run offers them to the model beside the agent's own; a call
// of one comes back to the client as tool_calls (finish_reason
// tool_calls), and the client's next request, ending with the tool
// messages, continues the run.
func clientTools(raw []json.RawMessage) ([]model.ToolSpec, error) {
	var out []model.ToolSpec
	for i, b := range raw {
		var t struct {
			Type     string `json:"type"`
			Function struct {
				Name        string          `json:"name"`
				Description string          `json:"description"`
				Parameters  json.RawMessage `json:"parameters"`
			} `json:"function"`
		}
		if err := json.Unmarshal(b, &t); err != nil {
			return nil, badRequest(fmt.Sprintf("tools[%d]", i), "tools[%d] is not a tool object: %v", i, err)
		}
		if t.Type != "function" {
			return nil, badRequest(fmt.Sprintf("tools[%d].type", i), "tools[%d] is of type %q: this server takes function tools", i, t.Type)
		}
		if t.Function.Name == "" {
			return nil, badRequest(fmt.Sprintf("tools[%d].function.name", i), "tools[%d] has no function name", i)
		}
		schema := t.Function.Parameters
		if len(bytes.TrimSpace(schema)) == 0 || string(bytes.TrimSpace(schema)) == "null" {
			schema = json.RawMessage(`{"type":"object","properties":{}}`)
		}
		out = append(out, model.ToolSpec{Name: t.Function.Name, Description: t.Function.Description, InputSchema: schema})
	}
	return out, nil
}

// toolResults returns the tool messages a conversation ends with (after
// its last assistant message), by tool_call_id; nil when it ends with
// another role's message.
func toolResults(msgs []ChatMessage) (map[string]string, error) {
	start := len(msgs)
	for start > 0 && msgs[start-1].Role == "tool" {
		start--
	}
	if start == len(msgs) {
		return nil, nil
	}
	out := make(map[string]string, len(msgs)-start)
	for i := start; i < len(msgs); i++ {
		m := &msgs[i]
		if m.ToolCallID == "" {
			return nil, badRequest(fmt.Sprintf("messages[%d].tool_call_id", i), "messages[%d] is a tool message without tool_call_id", i)
		}
		t, err := m.text(i)
		if err != nil {
			return nil, err
		}
		out[m.ToolCallID] = t
	}
	return out, nil
}

// answerTools gives a run waiting for the client's tools their results:
// the session the header names, or else the session of agent whose
// pending client_tool request is about one of the results' calls (a
// client that sends the whole history back). Every pending client_tool
// request of the session needs its result; the last one recorded
// continues the run, which the returned exchange follows.
func (a *Adapter) answerTools(ctx context.Context, id, agent string, results map[string]string) (*exchange, error) {
	if id == "" {
		var err error
		if id, err = a.sessionOfCalls(ctx, agent, results); err != nil {
			return nil, err
		}
	}
	ss, err := a.r.Store().GetSession(ctx, id)
	if err != nil {
		return nil, sessionNotFound(id, err)
	}
	if ss.Agent != agent {
		return nil, badRequest("model", "session %s is of agent %q, not %q: name its agent as the model", id, ss.Agent, agent)
	}
	pend, err := a.r.PendingRequests(ctx, session.RequestListOptions{SessionID: id, Kind: session.RequestClientTool, Limit: agentrt.MaxRequestPage})
	if err != nil {
		return nil, err
	}
	if len(pend) == 0 {
		return nil, apiError(http.StatusConflict, agentrt.CodeUnknownRequest, "messages",
			"session %s waits for no tool result: end the conversation with the user's new input", id)
	}
	type answer struct {
		rid  string
		text string
	}
	answers := make([]answer, 0, len(pend))
	for _, p := range pend {
		call := p.Request.Calls[0]
		text, ok := results[call.ID]
		if !ok {
			return nil, badRequest("messages", "session %s waits for the result of tool call %s (%s): end the conversation with a tool message of that tool_call_id",
				id, call.ID, call.Name)
		}
		answers = append(answers, answer{p.Request.RequestID, text})
	}
	by := agentrt.ActorOf(ctx)
	for _, an := range answers[:len(answers)-1] {
		if _, err := a.r.Resolve(ctx, id, an.rid, agentrt.Resolution{Text: an.text, By: by}); err != nil {
			return nil, err
		}
	}
	// Follow the session from where it stands before the last answer, so
	// that nothing of the run it continues is missed.
	ss, err = a.r.Store().GetSession(ctx, id)
	if err != nil {
		return nil, sessionNotFound(id, err)
	}
	f, err := a.srv.FollowSession(ctx, id, ss.LastSeq)
	if err != nil {
		return nil, err
	}
	last := answers[len(answers)-1]
	res, err := a.r.ResolveAndContinue(ctx, id, last.rid, agentrt.Resolution{Text: last.text, By: by})
	if err != nil {
		f.Close()
		return nil, err
	}
	if res.Run == nil {
		f.Close()
		return nil, apiError(http.StatusConflict, agentrt.CodeWaiting, "",
			"session %s still waits for a person's answer: answer it through POST /v1/sessions/%s/requests/{id}", id, id)
	}
	return &exchange{session: id, after: ss.LastSeq, events: f.Events(), close: f.Close}, nil
}

// sessionOfCalls finds the session of agent with a pending client_tool
// request about one of the calls of results.
func (a *Adapter) sessionOfCalls(ctx context.Context, agent string, results map[string]string) (string, error) {
	opt := session.RequestListOptions{Agent: agent, Kind: session.RequestClientTool, Limit: agentrt.MaxRequestPage}
	for {
		page, err := a.r.PendingRequests(ctx, opt)
		if err != nil {
			return "", err
		}
		for _, p := range page {
			for _, c := range p.Request.Calls {
				if _, ok := results[c.ID]; ok {
					return p.SessionID, nil
				}
			}
		}
		if len(page) < opt.Limit {
			break
		}
		opt.After = page[len(page)-1].Cursor()
	}
	ids := make([]string, 0, len(results))
	for id := range results {
		ids = append(ids, id)
	}
	return "", apiError(http.StatusNotFound, agentrt.CodeUnknownRequest, "messages",
		"no run of %s waits for tool call %s: send the %s header of the session, or the user's new input", agent, strings.Join(ids, ", "), SessionHeader)
}

// clientCalls are the calls of the client's tools the turn waits for, as
// OpenAI's tool_calls (indexed, for a stream's delta).
func (o *outcome) clientCalls() []ChatToolCall {
	if o.status != session.StatusWaiting {
		return nil
	}
	var out []ChatToolCall
	for _, q := range o.requests {
		if q.Kind != session.RequestClientTool {
			continue
		}
		for _, c := range q.Calls {
			tc := ChatToolCall{Index: ptr(len(out)), ID: c.ID, Type: "function"}
			tc.Function.Name, tc.Function.Arguments = c.Name, string(c.Arguments)
			out = append(out, tc)
		}
	}
	return out
}
