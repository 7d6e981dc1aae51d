package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/session"
)

// responseTools reads a Responses request's tools: function tools the
// client runs itself ({type: "function", name, description, parameters}),
// offered to the model beside the agent's own for the turn. A call of one
// comes back as a function_call output item, and the client's next
// request, with the call's function_call_output, continues the run. The
// other kinds of OpenAI's tools (web_search, file_search, …) run on
// OpenAI's side, which this server is not: they are refused.
//
// A name must be the call's whole address: a tool declared twice, or one
// of the agent's tools' name, is refused (bad_client_tools).
func responseTools(ag *agentrt.Agent, raw []json.RawMessage) ([]model.ToolSpec, error) {
	var out []model.ToolSpec
	taken := map[string]bool{}
	for _, sp := range ag.ToolSpecs() {
		taken[sp.Name] = true
	}
	for i, b := range raw {
		var t struct {
			Type        string          `json:"type"`
			Name        string          `json:"name"`
			Description string          `json:"description"`
			Parameters  json.RawMessage `json:"parameters"`
		}
		if err := json.Unmarshal(b, &t); err != nil {
			return nil, badRequest(fmt.Sprintf("tools[%d]", i), "tools[%d] is not a tool object: %v", i, err)
		}
		if t.Type != "function" {
			return nil, badRequest(fmt.Sprintf("tools[%d].type", i),
				"tools[%d] is of type %q: this server takes function tools, which the client runs (the agent's own tools run on the server)", i, t.Type)
		}
		if t.Name == "" {
			return nil, badRequest(fmt.Sprintf("tools[%d].name", i), "tools[%d] has no name", i)
		}
		if taken[t.Name] {
			return nil, apiError(http.StatusBadRequest, agentrt.CodeBadClientTools, fmt.Sprintf("tools[%d].name", i),
				"tools[%d]: %q is declared twice or is a tool of agent %s: give the client's tool another name", i, t.Name, ag.Name)
		}
		taken[t.Name] = true
		schema := t.Parameters
		if s := bytes.TrimSpace(schema); len(s) == 0 || string(s) == "null" {
			schema = json.RawMessage(`{"type":"object","properties":{}}`)
		}
		out = append(out, model.ToolSpec{Name: t.Name, Description: t.Description, InputSchema: schema})
	}
	return out, nil
}

// functionTools are a run's client tools as a response names them.
func functionTools(specs []model.ToolSpec) []FunctionTool {
	out := make([]FunctionTool, 0, len(specs))
	for _, sp := range specs {
		out = append(out, FunctionTool{Type: "function", Name: sp.Name, Description: sp.Description, Parameters: sp.InputSchema})
	}
	return out
}

// answerFunctionCalls gives a run waiting for the client's function
// calls their results: the session of the previous response (id), or
// else the session of agent whose run waits for one of the calls (a
// client that sends the history back). Every call the run waits for
// needs its result, and every result must be for one of them.
func (a *Adapter) answerFunctionCalls(ctx context.Context, id, agent string, in *responseInput) (*exchange, error) {
	if id == "" {
		var err error
		if id, err = a.sessionOfCalls(ctx, agent, in.results); err != nil {
			e := *toAPIError(err)
			e.Param = ptr("input")
			e.Message = strings.ReplaceAll(e.Message, "send the "+SessionHeader+" header of the session", "send previous_response_id")
			return nil, &e
		}
	}
	pend, err := a.r.PendingRequests(ctx, session.RequestListOptions{SessionID: id, Kind: session.RequestClientTool, Limit: agentrt.MaxRequestPage})
	if err != nil {
		return nil, err
	}
	waits := make(map[string]bool, len(pend))
	for _, p := range pend {
		waits[p.Request.Calls[0].ID] = true
	}
	// The results in the order of the input, for a stable message.
	ids := make([]string, 0, len(in.results))
	for cid := range in.results {
		ids = append(ids, cid)
	}
	slices.SortFunc(ids, func(x, y string) int { return in.at[x] - in.at[y] })
	for _, cid := range ids {
		if !waits[cid] {
			return nil, apiError(http.StatusNotFound, agentrt.CodeUnknownRequest, fmt.Sprintf("input[%d].call_id", in.at[cid]),
				"no function call %s waits for its output in this session: send the outputs of the calls of the previous response's function_call items", cid)
		}
	}
	for _, p := range pend {
		if c := p.Request.Calls[0]; !hasKey(in.results, c.ID) {
			return nil, badRequest("input", "the run waits for the output of function call %s (%s): send a function_call_output item with that call_id", c.ID, c.Name)
		}
	}
	return a.answerTools(ctx, id, agent, in.results)
}

// waitingCalls are the client's function calls session id waits for.
func (a *Adapter) waitingCalls(ctx context.Context, id string) ([]model.ToolCall, error) {
	pend, err := a.r.PendingRequests(ctx, session.RequestListOptions{SessionID: id, Kind: session.RequestClientTool, Limit: agentrt.MaxRequestPage})
	if err != nil {
		return nil, err
	}
	var out []model.ToolCall
	for _, p := range pend {
		out = append(out, p.Request.Calls...)
	}
	return out, nil
}

func hasKey[V any](m map[string]V, k string) bool {
	_, ok := m[k]
	return ok
}
