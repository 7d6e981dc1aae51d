package openai_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	oa "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
)

var localTime = responses.ToolUnionParam{OfFunction: &responses.FunctionToolParam{Name: "local_time",
	Description: oa.String("the time on the client's machine"),
	Parameters:  map[string]any{"type": "object", "properties": map[string]any{"tz": map[string]any{"type": "string"}}}}}

// callOutput is the input that gives function call id its output.
func callOutput(id, output string) responses.ResponseNewParamsInputUnion {
	return responses.ResponseNewParamsInputUnion{OfInputItemList: responses.ResponseInputParam{outputItem(id, output)}}
}

func outputItem(id, output string) responses.ResponseInputItemUnionParam {
	it := responses.ResponseInputItemParamOfFunctionCallOutput(output)
	it.OfFunctionCallOutput.CallID = oa.String(id)
	return it
}

// A function tool of the request is the client's: its call comes back as
// a function_call item of a completed response, and the next request,
// with previous_response_id and the call's function_call_output,
// continues the run. Streamed, the call comes as a function_call item's
// events.
func TestResponsesFunctionToolRoundTrip(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	c := f.client("")
	p := respParams(`call local_time {"tz":"UTC"}`)
	p.Tools = []responses.ToolUnionParam{localTime}
	asked, err := c.Responses.New(t.Context(), p)
	if err != nil {
		t.Fatal(err)
	}
	if asked.Status != "completed" || len(asked.Output) != 1 {
		t.Fatalf("asked: %s, output %+v", asked.Status, asked.Output)
	}
	call := asked.Output[0].AsFunctionCall()
	if call.Type != "function_call" || call.CallID != "call_1" || call.Name != "local_time" || call.Arguments != `{"tz":"UTC"}` ||
		call.Status != "completed" {
		t.Fatalf("the call: %+v", call)
	}
	if len(asked.Tools) != 1 || asked.Tools[0].Name != "local_time" || asked.Tools[0].Type != "function" {
		t.Errorf("the response's tools: %+v", asked.Tools)
	}
	answered, err := c.Responses.New(t.Context(), responses.ResponseNewParams{Model: "assistant",
		PreviousResponseID: oa.String(asked.ID), Input: callOutput(call.CallID, "12:00 UTC")})
	if err != nil {
		t.Fatal(err)
	}
	if answered.Status != "completed" || answered.OutputText() != `echo: "12:00 UTC"` || answered.PreviousResponseID != asked.ID {
		t.Fatalf("answered: %s %q previous %q", answered.Status, answered.OutputText(), answered.PreviousResponseID)
	}
	// Read again, each says what it was created with.
	for _, r := range []*responses.Response{asked, answered} {
		got, err := c.Responses.Get(t.Context(), r.ID, responses.ResponseGetParams{})
		if err != nil {
			t.Fatal(err)
		}
		if got.Status != r.Status || got.OutputText() != r.OutputText() || got.PreviousResponseID != r.PreviousResponseID || len(got.Output) != len(r.Output) {
			t.Errorf("get %s: %s %q previous %q; created %s %q previous %q", r.ID, got.Status, got.OutputText(), got.PreviousResponseID,
				r.Status, r.OutputText(), r.PreviousResponseID)
		}
	}

	// Streamed, in the same session.
	p = respParams(`call local_time {"tz":"CET"}`)
	p.Tools, p.PreviousResponseID = []responses.ToolUnionParam{localTime}, oa.String(answered.ID)
	st := c.Responses.NewStreaming(t.Context(), p)
	var types []string
	var args string
	var final responses.Response
	for st.Next() {
		ev := st.Current()
		types = append(types, ev.Type)
		switch ev.Type {
		case "response.function_call_arguments.delta":
			args += ev.Delta
		case "response.completed":
			final = ev.Response
		}
	}
	if err := st.Err(); err != nil {
		t.Fatal(err)
	}
	want := []string{"response.created", "response.in_progress", "response.output_item.added", "response.function_call_arguments.delta",
		"response.function_call_arguments.done", "response.output_item.done", "response.completed"}
	if diff := cmp.Diff(want, types); diff != "" {
		t.Fatalf("the streamed call (-want +got):\n%s", diff)
	}
	if args != `{"tz":"CET"}` || len(final.Output) != 1 || final.Output[0].AsFunctionCall().Arguments != args {
		t.Fatalf("streamed arguments %q, response %+v", args, final.Output)
	}
	// The whole history sent back instead of previous_response_id: the
	// session is the one whose run waits for the call.
	// (The call's id is the one the stream gave: the model repeats
	// "call_1", which the session already has, so the runtime gave this
	// call an id of its own.)
	callID := final.Output[0].AsFunctionCall().CallID
	if callID == "" || callID == "call_1" {
		t.Fatalf("the streamed call's id %q: want one of its own in the session", callID)
	}
	history := responses.ResponseInputParam{
		responses.ResponseInputItemParamOfMessage(`call local_time {"tz":"CET"}`, responses.EasyInputMessageRoleUser),
		responses.ResponseInputItemParamOfFunctionCall(args, callID, "local_time"),
		outputItem(callID, "13:00 CET"),
	}
	last, err := c.Responses.New(t.Context(), responses.ResponseNewParams{Model: "assistant",
		Input: responses.ResponseNewParamsInputUnion{OfInputItemList: history}})
	if err != nil {
		t.Fatal(err)
	}
	if last.OutputText() != `echo: "13:00 CET"` {
		t.Fatalf("continued by the history: %q", last.OutputText())
	}
}

// What the Responses API refuses, in OpenAI's error shape naming the
// parameter: a tool that is not a function, an output for a call nobody
// waits for, new input while the run waits for outputs, an unknown
// previous response.
func TestResponsesBadInput(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	c := f.client("")
	p := respParams(`call local_time {"tz":"UTC"}`)
	p.Tools = []responses.ToolUnionParam{localTime}
	asked, err := c.Responses.New(t.Context(), p)
	if err != nil {
		t.Fatal(err)
	}
	webSearch := respParams("search the web")
	webSearch.Tools = []responses.ToolUnionParam{localTime, {OfWebSearch: &responses.WebSearchToolParam{Type: responses.WebSearchToolTypeWebSearch}}}
	fileSearch := respParams("search my files")
	fileSearch.Tools = []responses.ToolUnionParam{{OfFileSearch: &responses.FileSearchToolParam{VectorStoreIDs: []string{"vs_1"}}}}
	otherCall := responses.ResponseNewParams{Model: "assistant", PreviousResponseID: oa.String(asked.ID), Input: callOutput("call_nobody", "x")}
	noPrevCall := responses.ResponseNewParams{Model: "assistant", Input: callOutput("call_nobody", "x")}
	textInstead := respParams("what time is it?")
	textInstead.PreviousResponseID = oa.String(asked.ID)
	unknownPrev := respParams("x")
	unknownPrev.PreviousResponseID = oa.String("resp_bm8tc3VjaC1zZXNzaW9uADAAaW5fMQAwAA") // session "no-such-session"
	garbledPrev := respParams("x")
	garbledPrev.PreviousResponseID = oa.String("resp_!")
	agentTool := respParams("x")
	agentTool.Tools = []responses.ToolUnionParam{{OfFunction: &responses.FunctionToolParam{Name: "weather", Parameters: map[string]any{}}}}
	twice := respParams("x")
	twice.Tools = []responses.ToolUnionParam{localTime, localTime}
	noName := respParams("x")
	noName.Tools = []responses.ToolUnionParam{{OfFunction: &responses.FunctionToolParam{Parameters: map[string]any{}}}}
	for _, tc := range []struct {
		name   string
		params responses.ResponseNewParams
		status int
		code   string
		param  string
		says   string // in the message, when set
	}{
		{"web_search", webSearch, 400, "malformed_request", "tools[1].type", ""},
		{"file_search", fileSearch, 400, "malformed_request", "tools[0].type", ""},
		{"a function without a name", noName, 400, "malformed_request", "tools[0].name", ""},
		{"a function of the agent's tools' name", agentTool, 400, "bad_client_tools", "tools[0].name", ""},
		{"a function twice", twice, 400, "bad_client_tools", "tools[1].name", ""},
		{"an output for another call", otherCall, 404, "unknown_request", "input[0].call_id", ""},
		{"an output no run waits for", noPrevCall, 404, "unknown_request", "input", ""},
		{"text while the run waits for outputs", textInstead, 400, "malformed_request", "input", "function_call_output items with those call_ids"},
		{"an unknown previous response", unknownPrev, 404, "not_found", "previous_response_id", ""},
		{"not a response id", garbledPrev, 404, "not_found", "previous_response_id", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := c.Responses.New(t.Context(), tc.params)
			var apiErr *oa.Error
			if !errors.As(err, &apiErr) || apiErr.StatusCode != tc.status || apiErr.Code != tc.code || apiErr.Param != tc.param ||
				!strings.Contains(apiErr.Message, tc.says) {
				t.Fatalf("got %v; want %d %s param %q saying %q", err, tc.status, tc.code, tc.param, tc.says)
			}
		})
	}
	// The run still waits for its call, and takes its output.
	done, err := c.Responses.New(t.Context(), responses.ResponseNewParams{Model: "assistant",
		PreviousResponseID: oa.String(asked.ID), Input: callOutput("call_1", "12:00")})
	if err != nil || done.OutputText() != `echo: "12:00"` {
		t.Fatalf("after the refusals: %v %v", done, err)
	}
}
