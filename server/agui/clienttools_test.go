package agui_test

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/server/agui"
)

// post sends a RunAgentInput and returns the run's events; a status
// other than 200 fails the test with the body.
func post(t *testing.T, f *fixture, body string) []agui.Event {
	t.Helper()
	resp, err := http.Post(f.http.URL+"/v1/agui/assistant", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("status %d: %s", resp.StatusCode, b)
	}
	var out []agui.Event
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var e agui.Event
		if err := json.Unmarshal([]byte(data), &e); err != nil {
			t.Fatalf("event %s: %v", data, err)
		}
		out = append(out, e)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func eventTypes(evs []agui.Event) []string {
	var out []string
	for _, e := range evs {
		out = append(out, e.Type)
	}
	return out
}

const clockTool = `{"name":"local_time","description":"the time in the browser","parameters":{"type":"object","properties":{"tz":{"type":"string"}}}}`

// A frontend tool's call streams as a tool call with the model's call id
// and ends the run with a success outcome naming it pending (no
// interrupt, no result); the next input's tool message answers it and the
// run goes on in that input's stream, without echoing the client's result
// back.
func TestFrontendToolRoundTrip(t *testing.T) {
	f := newFixture(t)
	user := `{"id":"u1","role":"user","content":"call local_time {\"tz\":\"UTC\"}"}`
	first := post(t, f, `{"threadId":"ft1","runId":"r1","tools":[`+clockTool+`],"messages":[`+user+`]}`)
	types := eventTypes(first)
	var args string
	for _, e := range first {
		if e.Type == agui.ToolCallStart && (e.ToolCallID != "call_local_time" || e.ToolCallName != "local_time") {
			t.Errorf("TOOL_CALL_START %+v; want call_local_time of local_time", e)
		}
		if e.Type == agui.ToolCallArgs {
			args += e.Delta.(string)
		}
	}
	if count(types, agui.ToolCallStart) != 1 || count(types, agui.ToolCallEnd) != 1 || count(types, agui.ToolCallResult) != 0 || args != `{"tz":"UTC"}` {
		t.Fatalf("events %v, arguments %q: want the call streamed, closed, without a result", types, args)
	}
	last := first[len(first)-1]
	if last.Type != agui.RunFinished || last.Outcome == nil || last.Outcome.Type != "success" || len(last.Outcome.Interrupts) != 0 ||
		!slices.Equal(last.Outcome.PendingToolCallIDs, []string{"call_local_time"}) {
		t.Fatalf("terminal event %+v (outcome %+v); want success with call_local_time pending", last, last.Outcome)
	}

	history := user + `,{"id":"a1","role":"assistant","toolCalls":[{"id":"call_local_time","type":"function","function":{"name":"local_time","arguments":"{\"tz\":\"UTC\"}"}}]}`
	second := post(t, f, `{"threadId":"ft1","runId":"r2","tools":[`+clockTool+`],"messages":[`+history+
		`,{"id":"t1","role":"tool","toolCallId":"call_local_time","content":"12:00 UTC"}]}`)
	types = eventTypes(second)
	last = second[len(second)-1]
	if last.Type != agui.RunFinished || last.Outcome.Type != "success" || last.Result != `done: "12:00 UTC"` || len(last.Outcome.PendingToolCallIDs) != 0 {
		t.Fatalf("terminal event %+v; want success with the answer after the tool's result; events %v", last, types)
	}
	if types[0] != agui.RunStarted || second[0].RunID != "r2" || count(types, agui.ToolCallResult) != 0 || count(types, agui.TextMessageStart) != 1 {
		t.Errorf("events %v: want run r2 with the answer, without the client's own result sent back", types)
	}

	// The same result again: no run waits for it now.
	resp, err := http.Post(f.http.URL+"/v1/agui/assistant", "application/json", strings.NewReader(
		`{"threadId":"ft1","runId":"r3","messages":[{"id":"t1","role":"tool","toolCallId":"call_local_time","content":"12:00 UTC"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound || !strings.Contains(string(b), `"unknown_request"`) {
		t.Errorf("a result nobody waits for: %d %s; want 404 unknown_request", resp.StatusCode, b)
	}

	// The model calls again with the id it gave before ("call_local_time"
	// every time): the call gets one of its own, the same in
	// TOOL_CALL_START as in the pending ids, and the client's answer by it
	// continues the run.
	user2 := `{"id":"u2","role":"user","content":"call local_time {\"tz\":\"CET\"}"}`
	third := post(t, f, `{"threadId":"ft1","runId":"r4","tools":[`+clockTool+`],"messages":[`+user2+`]}`)
	var started string
	for _, e := range third {
		if e.Type == agui.ToolCallStart {
			started = e.ToolCallID
		}
	}
	if o := third[len(third)-1].Outcome; started == "" || started == "call_local_time" || o == nil || !slices.Equal(o.PendingToolCallIDs, []string{started}) {
		t.Fatalf("the call again: TOOL_CALL_START %q, outcome %+v; want an id of its own, pending", started, o)
	}
	fourth := post(t, f, `{"threadId":"ft1","runId":"r5","messages":[{"id":"t2","role":"tool","toolCallId":"`+started+`","content":"13:00 CET"}]}`)
	if last := fourth[len(fourth)-1]; last.Type != agui.RunFinished || last.Result != `done: "13:00 CET"` {
		t.Errorf("the answer by the streamed id: %+v; want the run finished with it", last)
	}
}

// A tool message with an error fails the call: the model reads why.
func TestFrontendToolFailed(t *testing.T) {
	f := newFixture(t)
	user := `{"id":"u1","role":"user","content":"call local_time {}"}`
	first := post(t, f, `{"threadId":"ft2","runId":"r1","tools":[{"name":"local_time","description":"no parameters"}],"messages":[`+user+`]}`)
	if o := first[len(first)-1].Outcome; o == nil || !slices.Equal(o.PendingToolCallIDs, []string{"call_local_time"}) {
		t.Fatalf("outcome %+v; want call_local_time pending", o)
	}
	second := post(t, f, `{"threadId":"ft2","runId":"r2","messages":[`+user+
		`,{"id":"t1","role":"tool","toolCallId":"call_local_time","content":"","error":"no clock here"}]}`)
	last := second[len(second)-1]
	if res, _ := last.Result.(string); last.Type != agui.RunFinished || !strings.Contains(res, "no clock here") {
		t.Fatalf("terminal event %+v; want an answer that read the tool's failure", last)
	}
}

// Frontend tools and tool messages that cannot be taken are refused
// before any stream.
func TestFrontendToolBadInput(t *testing.T) {
	f := newFixture(t)
	for _, tc := range []struct {
		name, body string
		status     int
		code       string
	}{
		{"a tool without a name", `{"threadId":"fb1","runId":"r1","tools":[{"description":"x"}],"messages":[{"id":"u","role":"user","content":"hi"}]}`, 400, "bad_client_tools"},
		{"a tool twice", `{"threadId":"fb1","runId":"r1","tools":[` + clockTool + `,` + clockTool + `],"messages":[{"id":"u","role":"user","content":"hi"}]}`, 400, "bad_client_tools"},
		{"an agent tool's name", `{"threadId":"fb1","runId":"r1","tools":[{"name":"lookup"}],"messages":[{"id":"u","role":"user","content":"hi"}]}`, 400, "bad_client_tools"},
		{"a tool that is not an object", `{"threadId":"fb1","runId":"r1","tools":["local_time"],"messages":[{"id":"u","role":"user","content":"hi"}]}`, 400, "bad_client_tools"},
		{"a tool message without toolCallId", `{"threadId":"fb1","runId":"r1","messages":[{"id":"t","role":"tool","content":"x"}]}`, 400, "malformed_request"},
		{"a result nobody waits for", `{"threadId":"fb1","runId":"r1","messages":[{"id":"t","role":"tool","toolCallId":"call_x","content":"x"}]}`, 404, "unknown_request"},
	} {
		resp, err := http.Post(f.http.URL+"/v1/agui/assistant", "application/json", strings.NewReader(tc.body))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var e struct {
			Error struct{ Code, Message string }
		}
		_ = json.Unmarshal(b, &e)
		if got := []any{resp.StatusCode, e.Error.Code}; !cmp.Equal(got, []any{tc.status, tc.code}) || e.Error.Message == "" {
			t.Errorf("%s: %d %s; want %d %s", tc.name, resp.StatusCode, b, tc.status, tc.code)
		}
	}
}
