package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/session"
)

// modern is the protocol version from which a server may not send the
// client requests of its own during a call: elicitations go back in the
// call's result as input requests (SEP-2322).
const modern = "2026-07-28"

func canElicit(ss *sdk.ServerSession) (version string, ok bool) {
	p := ss.InitializeParams()
	if p == nil || p.Capabilities == nil || p.Capabilities.Elicitation == nil {
		return "", false
	}
	// A client that declares only URL elicitation cannot fill a form.
	if e := p.Capabilities.Elicitation; e.Form == nil && e.URL != nil {
		return "", false
	}
	return p.ProtocolVersion, true
}

// legacyElicitation reports whether the call's client is asked with
// elicitation/create requests while the call waits.
func legacyElicitation(ss *sdk.ServerSession) bool {
	v, ok := canElicit(ss)
	return ok && v < modern
}

// mrtrElicitation reports whether the call's client is asked with input
// requests in the call's result.
func mrtrElicitation(ss *sdk.ServerSession) bool {
	v, ok := canElicit(ss)
	return ok && v >= modern
}

// inputRequired is the result that asks the client the turn's pending
// requests, to be answered in its next call (with the request state).
func inputRequired(o *outcome) (*sdk.CallToolResult, error) {
	st, err := json.Marshal(state{Session: o.session, RunID: o.runID, After: o.last})
	if err != nil {
		return nil, err
	}
	res := &sdk.CallToolResult{InputRequests: sdk.InputRequestMap{}, RequestState: string(st)}
	for _, r := range o.requests {
		res.InputRequests[r.RequestID] = elicitation(o.session, r)
	}
	return res, nil
}

// elicit puts each pending request to the client, while the call waits,
// and records the answers. It reports whether every request was
// answered (asked); a client that cancels leaves the rest pending, for
// the result to say how to answer.
func (t *tool) elicit(ctx context.Context, req *sdk.CallToolRequest, o *outcome) (asked bool, err error) {
	for len(o.requests) > 0 {
		r := o.requests[0]
		res, err := req.Session.Elicit(ctx, elicitation(o.session, r))
		if err != nil {
			// The client could not be asked: the result says how to answer.
			return false, nil
		}
		done, err := t.resolve(ctx, o.session, r, res)
		if err != nil || !done {
			return false, err
		}
		o.requests = o.requests[1:]
	}
	return true, nil
}

// elicitation is the form that asks request r of session id.
func elicitation(id string, r *session.InputRequired) *sdk.ElicitParams {
	props := map[string]any{}
	var required []string
	var msg strings.Builder
	msg.WriteString(r.Question)
	switch r.Kind {
	case session.RequestApproval:
		for _, c := range r.Calls {
			fmt.Fprintf(&msg, "\n%s %s", c.Name, c.Arguments)
		}
		props["decision"] = map[string]any{"type": "string", "title": "Decision", "enum": []string{"approve", "reject", "edit"},
			"description": "approve the call, reject it, or run it with the arguments below (edit)"}
		props["arguments"] = map[string]any{"type": "string", "title": "Arguments (edit)", "description": "the call's arguments as a JSON object, for edit"}
		props["reason"] = map[string]any{"type": "string", "title": "Reason"}
		required = []string{"decision"}
	case session.RequestConfirm:
		for _, c := range r.Calls {
			fmt.Fprintf(&msg, "\n%s %s", c.Name, c.Arguments)
		}
		props["decision"] = map[string]any{"type": "string", "title": "Decision", "enum": []string{"done", "failed", "retry"},
			"description": "the call completed (done, with its result), did not (failed), or run it again (retry)"}
		props["result"] = map[string]any{"type": "string", "title": "Result (done)", "description": "the call's result as JSON"}
		props["reason"] = map[string]any{"type": "string", "title": "Reason"}
		required = []string{"decision"}
	case session.RequestSelect:
		if r.Multi {
			props["selected"] = map[string]any{"type": "array", "title": "Choices", "items": map[string]any{"type": "string", "enum": r.Options}}
		} else {
			props["selected"] = map[string]any{"type": "string", "title": "Choice", "enum": r.Options}
		}
		required = []string{"selected"}
	default:
		props["answer"] = map[string]any{"type": "string", "title": "Answer"}
		required = []string{"answer"}
	}
	return &sdk.ElicitParams{Mode: "form", Message: msg.String(),
		RequestedSchema: map[string]any{"type": "object", "properties": props, "required": required},
		Meta:            sdk.Meta{"agentrt/session": id, "agentrt/request": r.RequestID, "agentrt/kind": string(r.Kind)}}
}

// resolve records the client's answer to request r. It reports whether
// the request is answered: a declined approval is rejected, a declined
// or cancelled question stays pending.
func (t *tool) resolve(ctx context.Context, id string, r *session.InputRequired, res *sdk.ElicitResult) (bool, error) {
	by := agentrt.ActorOf(ctx)
	var rs agentrt.Resolution
	switch {
	case res.Action == "decline" && r.Kind == session.RequestApproval:
		rs = agentrt.Resolution{Decision: "reject", Reason: "declined in the MCP client", By: by}
	case res.Action != "accept":
		return false, nil
	default:
		str := func(k string) string { s, _ := res.Content[k].(string); return s }
		rs = agentrt.Resolution{Decision: str("decision"), Reason: str("reason"), By: by}
		switch r.Kind {
		case session.RequestApproval:
			if a := str("arguments"); a != "" {
				rs.Arguments = json.RawMessage(a)
			}
		case session.RequestConfirm:
			if v := str("result"); v != "" {
				rs.Result = json.RawMessage(v)
			}
		case session.RequestSelect:
			switch v := res.Content["selected"].(type) {
			case string:
				rs.Selected = []string{v}
			case []any:
				for _, s := range v {
					if s, ok := s.(string); ok {
						rs.Selected = append(rs.Selected, s)
					}
				}
			}
		default:
			rs.Text = str("answer")
		}
	}
	if _, err := t.cfg.Server.Runner().ResolveAndContinue(ctx, id, r.RequestID, rs); err != nil {
		return false, err
	}
	return true, nil
}
