package agentrt

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/session"
)

// CheckClientTools checks the tools a caller declares for a run of a
// (Input.ClientTools): each named once, none an agent tool's name (a call
// must say unambiguously who runs it), a schema, when given, a JSON
// object. The run checks them when it starts; a caller that queues the
// run's input (the gateway) checks them before, so that a bad declaration
// is refused to its sender rather than set aside later. The error's code
// is bad_client_tools.
func (a *Agent) CheckClientTools(specs []model.ToolSpec) error {
	bad := func(format string, args ...any) error {
		return &Error{Kind: FailInput, Code: CodeBadClientTools, Msg: "client tools: " + fmt.Sprintf(format, args...)}
	}
	seen := make(map[string]bool, len(specs))
	for i, sp := range specs {
		if strings.TrimSpace(sp.Name) == "" {
			return bad("tool %d has no name", i)
		}
		if seen[sp.Name] {
			return bad("%q is declared twice", sp.Name)
		}
		seen[sp.Name] = true
		if a.tool(sp.Name) != nil {
			return bad("%q is a tool of agent %q: give the client's tool another name", sp.Name, a.Name)
		}
		if len(sp.InputSchema) > 0 {
			var obj map[string]any
			if err := json.Unmarshal(sp.InputSchema, &obj); err != nil {
				return bad("the input schema of %q is not a JSON object", sp.Name)
			}
		}
	}
	return nil
}

// clientTool reports whether calls of the named tool go to the client
// that started the run: it declared the tool, and the agent has none of
// that name.
func (s *State) clientTool(name string) bool {
	for _, sp := range s.ClientTools {
		if sp.Name == name {
			return true
		}
	}
	return false
}

// toolSpecs are the tools offered to the model in the run of x: the
// agent's, then the client's.
func (x *Exec) toolSpecs() []model.ToolSpec {
	specs := x.agent.ToolSpecs()
	if len(x.st.ClientTools) == 0 {
		return specs
	}
	out := make([]model.ToolSpec, 0, len(specs)+len(x.st.ClientTools))
	return append(append(out, specs...), x.st.ClientTools...)
}

// clientToolRequest hands call to the client as a client_tool request.
func clientToolRequest(x *Exec, c model.ToolCall) session.InputRequired {
	return session.InputRequired{RequestID: "req_" + x.r.newID(), Kind: session.RequestClientTool,
		Question: fmt.Sprintf("Run the client tool %s with arguments %s and give its result.", c.Name, clipArgs(c.Arguments)),
		Calls:    []model.ToolCall{c}}
}

// clientToolResult checks the client's answer to a client_tool request and
// returns the tool_result it makes: Result (JSON) or Text (a string) is
// the tool's result; decision failed (Reason or Text saying why) makes
// the call fail.
func clientToolResult(q *HumanRequest, call *CallState, d *session.InputResolved, res Resolution) (*session.ToolResult, error) {
	if call == nil {
		return nil, &Error{Kind: FailInput, Code: CodeUnknownRequest, Msg: fmt.Sprintf("request %s is about call %s, which is no longer pending", q.ID, q.CallID)}
	}
	tr := &session.ToolResult{CallID: call.Call.ID, Name: call.Call.Name}
	switch res.Decision {
	case "", session.DecisionAnswer, session.DecisionDone:
		d.Decision = session.DecisionDone
		switch {
		case len(res.Result) > 0:
			if !json.Valid(res.Result) {
				return nil, &Error{Kind: FailInput, Code: CodeBadResult, Msg: fmt.Sprintf("the result is not valid JSON: %s", preview(string(res.Result)))}
			}
			tr.Result = append(json.RawMessage(nil), res.Result...)
		default:
			tr.Result, _ = json.Marshal(res.Text)
		}
		tr.OK = true
		d.Result = tr.Result
	case session.DecisionFailed:
		tr.Error = "the client's tool failed: " + cmpOr(res.Reason, res.Text, "no reason given")
	default:
		return nil, &Error{Kind: FailInput, Code: CodeBadDecision,
			Msg: fmt.Sprintf("decision %q is not done or failed (request %s asks the client for the result of %s)", res.Decision, q.ID, call.Call.Name)}
	}
	return tr, nil
}
