package agui_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentrt/agentrt/internal/testenv"
)

// clientRun is what testdata/node/agui-client.mjs prints of one run made
// with @ag-ui/client's HttpAgent (every event through its verifier).
type clientRun struct {
	Types   []string `json:"types"`
	Outcome *struct {
		Outcome            string   `json:"outcome"`
		Result             any      `json:"result"`
		PendingToolCallIDs []string `json:"pendingToolCallIds"`
		Interrupts         []struct {
			ID         string         `json:"id"`
			Reason     string         `json:"reason"`
			Message    string         `json:"message"`
			ToolCallID string         `json:"toolCallId"`
			Metadata   map[string]any `json:"metadata"`
		} `json:"interrupts"`
	} `json:"outcome"`
	Error *struct {
		Message string `json:"message"`
		Code    string `json:"code"`
	} `json:"error"`
	Thrown   *string `json:"thrown"`
	Messages []struct {
		Role      string  `json:"role"`
		Content   *string `json:"content"`
		ToolCalls []struct {
			ID        string `json:"id"`
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		} `json:"toolCalls"`
		ToolCallID *string `json:"toolCallId"`
	} `json:"messages"`
}

// runClient runs a scenario of agui-client.mjs against f and returns its
// runs. Without node or the npm packages the test fails (scripts/test.sh
// installs both); -short skips it outside CI.
func runClient(t *testing.T, f *fixture, scenario string) []clientRun {
	t.Helper()
	testenv.SkipShort(t, "runs node with @ag-ui/client")
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("node is not installed (scripts/test.sh installs what the tests need): %v", err)
	}
	_, file, _, _ := runtime.Caller(0)
	dir := filepath.Join(filepath.Dir(file), "..", "..", "testdata", "node")
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@ag-ui", "client", "package.json")); err != nil {
		t.Fatalf("the npm packages of testdata/node are not installed (npm ci --prefix testdata/node): %v", err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, filepath.Join(dir, "agui-client.mjs"), f.http.URL, scenario)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node agui-client.mjs %s: %v\nstdout:\n%s\nstderr:\n%s", scenario, err, out, stderr.String())
	}
	var runs []clientRun
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var r clientRun
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("a line of the client's output: %v: %s", err, sc.Text())
		}
		runs = append(runs, r)
	}
	return runs
}

// ok checks that a run went through the client's verifier without an
// error, and ended with the outcome want.
func (r clientRun) ok(t *testing.T, want string) {
	t.Helper()
	if r.Thrown != nil {
		t.Fatalf("the client threw %q; events %v", *r.Thrown, r.Types)
	}
	if r.Error != nil {
		t.Fatalf("RUN_ERROR %+v; events %v", *r.Error, r.Types)
	}
	if r.Outcome == nil || r.Outcome.Outcome != want {
		t.Fatalf("outcome %+v; want %s; events %v", r.Outcome, want, r.Types)
	}
	if n := len(r.Types); n == 0 || r.Types[0] != "RUN_STARTED" || r.Types[n-1] != "RUN_FINISHED" {
		t.Fatalf("events %v: want RUN_STARTED … RUN_FINISHED", r.Types)
	}
}

func count(types []string, typ string) int {
	n := 0
	for _, x := range types {
		if x == typ {
			n++
		}
	}
	return n
}

// A plain run, through HttpAgent: the answer streams as a text message
// and ends the run with a success outcome, the answer as its result.
func TestNodeClientPlainRun(t *testing.T) {
	f := newFixture(t)
	runs := runClient(t, f, "plain")
	r := runs[0]
	r.ok(t, "success")
	if r.Outcome.Result != "echo: hello there" {
		t.Errorf("result %v; want the answer", r.Outcome.Result)
	}
	if count(r.Types, "TEXT_MESSAGE_CONTENT") < 2 || count(r.Types, "STEP_STARTED") != 1 || count(r.Types, "STEP_FINISHED") != 1 {
		t.Errorf("events %v: want the answer in several pieces, in one round step", r.Types)
	}
	last := r.Messages[len(r.Messages)-1]
	if last.Role != "assistant" || last.Content == nil || *last.Content != "echo: hello there" {
		t.Errorf("the client's last message %+v; want the answer", last)
	}
}

// A tool run: the call streams (start, its arguments in pieces, end), its
// result follows, and the next round's answer ends the run.
func TestNodeClientToolRun(t *testing.T) {
	f := newFixture(t)
	r := runClient(t, f, "tool")[0]
	r.ok(t, "success")
	if count(r.Types, "TOOL_CALL_ARGS") != 2 || count(r.Types, "TOOL_CALL_RESULT") != 1 || count(r.Types, "STEP_STARTED") != 2 {
		t.Errorf("events %v: want the arguments in two pieces, a result, two rounds", r.Types)
	}
	var roles []string
	for _, m := range r.Messages {
		roles = append(roles, m.Role)
	}
	if !slices.Equal(roles, []string{"user", "assistant", "tool", "assistant"}) {
		t.Fatalf("the client's messages %v; want user, assistant (the call), tool, assistant", roles)
	}
	call := r.Messages[1].ToolCalls
	if len(call) != 1 || call[0].Name != "lookup" || call[0].Arguments != `{"q":"go"}` {
		t.Errorf("the call as the client has it: %+v", call)
	}
	if got := *r.Messages[3].Content; got != `done: "found go"` {
		t.Errorf("answer %q", got)
	}
}

// A failed run ends with one RUN_ERROR carrying the failure's code, after
// the round it failed in is closed.
func TestNodeClientFailedRun(t *testing.T) {
	f := newFixture(t)
	r := runClient(t, f, "failed")[0]
	if r.Error == nil || r.Error.Code != "bad_request" || !strings.Contains(r.Error.Message, "refuses") {
		t.Fatalf("RUN_ERROR %+v (thrown %v); want bad_request with the model's message; events %v", r.Error, r.Thrown, r.Types)
	}
	if n := len(r.Types); r.Types[n-1] != "RUN_ERROR" || count(r.Types, "RUN_ERROR")+count(r.Types, "RUN_FINISHED") != 1 {
		t.Errorf("events %v: want one terminal event, RUN_ERROR, last", r.Types)
	}
	if count(r.Types, "STEP_STARTED") != count(r.Types, "STEP_FINISHED") {
		t.Errorf("events %v: a step left open", r.Types)
	}
}

// A run canceled (POST /v1/sessions/{id}/cancel) while a tool call
// streams: the call is closed, then the run ends with the cancelled
// outcome.
func TestNodeClientCanceledRun(t *testing.T) {
	f := newFixture(t)
	r := runClient(t, f, "canceled")[0]
	r.ok(t, "cancelled")
	i := slices.Index(r.Types, "TOOL_CALL_END")
	if count(r.Types, "TOOL_CALL_START") != 1 || i < 0 || i > slices.Index(r.Types, "RUN_FINISHED") {
		t.Errorf("events %v: want the open call ended before RUN_FINISHED", r.Types)
	}
}

// A call that needs approval ends the run with an interrupt carrying the
// call; the next run's resume approves it, and the run goes on: the call
// runs and the answer ends it.
func TestNodeClientInterruptAndResume(t *testing.T) {
	f := newFixture(t)
	runs := runClient(t, f, "interrupt")
	if len(runs) != 2 {
		t.Fatalf("%d runs; want 2", len(runs))
	}
	first := runs[0]
	first.ok(t, "interrupt")
	ints := first.Outcome.Interrupts
	if len(ints) != 1 || ints[0].Reason != "approval" || ints[0].ToolCallID != "call_deploy" || !strings.Contains(ints[0].Message, "deploy") {
		t.Fatalf("interrupts %+v; want the approval of call_deploy", ints)
	}
	calls, _ := ints[0].Metadata["agentrt"].(map[string]any)["calls"].([]any)
	if len(calls) != 1 || calls[0].(map[string]any)["arguments"].(map[string]any)["env"] != "prod" {
		t.Errorf("the interrupt's calls %v; want deploy with its arguments", calls)
	}
	second := runs[1]
	second.ok(t, "success")
	if second.Outcome.Result != `done: "deployed to prod"` {
		t.Errorf("result %v; want the answer after the approved call", second.Outcome.Result)
	}
	if count(second.Types, "TOOL_CALL_RESULT") != 1 {
		t.Errorf("events %v: want the approved call's result", second.Types)
	}
}

// A frontend tool, through HttpAgent: the call streams and the run ends
// with success and the call pending (the client derives the same list
// from the stream); the client's tool message answers it in the next run,
// which ends with the answer, the client's messages the whole exchange
// once.
func TestNodeClientFrontendTool(t *testing.T) {
	f := newFixture(t)
	runs := runClient(t, f, "frontend")
	if len(runs) != 2 {
		t.Fatalf("%d runs; want 2", len(runs))
	}
	first := runs[0]
	first.ok(t, "success")
	if !slices.Equal(first.Outcome.PendingToolCallIDs, []string{"call_local_time"}) || count(first.Types, "TOOL_CALL_END") != 1 {
		t.Fatalf("pending calls %v, events %v; want call_local_time streamed and left pending", first.Outcome.PendingToolCallIDs, first.Types)
	}
	second := runs[1]
	second.ok(t, "success")
	if second.Outcome.Result != `done: "12:00 UTC"` || len(second.Outcome.PendingToolCallIDs) != 0 {
		t.Errorf("outcome %+v; want the answer after the tool's result, nothing pending", *second.Outcome)
	}
	var roles []string
	for _, m := range second.Messages {
		roles = append(roles, m.Role)
	}
	if !slices.Equal(roles, []string{"user", "assistant", "tool", "assistant"}) {
		t.Fatalf("the client's messages %v; want user, assistant (the call), tool, assistant", roles)
	}
	if c := second.Messages[1].ToolCalls; len(c) != 1 || c[0].ID != "call_local_time" || c[0].Arguments != `{"tz":"UTC"}` {
		t.Errorf("the call as the client has it: %+v", c)
	}
}

// A client that joins a thread with no history of its own gets the
// thread's messages from the log (MESSAGES_SNAPSHOT) and the finished
// run, with its answer as the result.
func TestNodeClientReconnect(t *testing.T) {
	f := newFixture(t)
	runs := runClient(t, f, "reconnect")
	runs[0].ok(t, "success")
	r := runs[1]
	r.ok(t, "success")
	if !slices.Contains(r.Types, "MESSAGES_SNAPSHOT") {
		t.Fatalf("events %v: want MESSAGES_SNAPSHOT", r.Types)
	}
	if r.Outcome.Result != "echo: hello there" {
		t.Errorf("result %v; want the thread's answer", r.Outcome.Result)
	}
	if len(r.Messages) != 2 || *r.Messages[0].Content != "hello there" || *r.Messages[1].Content != "echo: hello there" {
		t.Errorf("the new client's messages %+v; want the thread's two", r.Messages)
	}
}

// A client that connects to a thread with no messages gets an empty
// MESSAGES_SNAPSHOT (messages: [], which the client's verifier requires)
// and a finished run: an idle thread is not an error.
func TestNodeClientEmptyThread(t *testing.T) {
	f := newFixture(t)
	runs := runClient(t, f, "empty")
	r := runs[0]
	r.ok(t, "success")
	if !slices.Equal(r.Types, []string{"RUN_STARTED", "STATE_SNAPSHOT", "MESSAGES_SNAPSHOT", "RUN_FINISHED"}) {
		t.Errorf("events %v; want the snapshots and RUN_FINISHED", r.Types)
	}
	if len(r.Messages) != 0 {
		t.Errorf("the client's messages %+v; want none", r.Messages)
	}
}

// A client that joins a thread whose last run failed gets that run's
// failure, with its code, as RUN_ERROR.
func TestNodeClientRejoinFailed(t *testing.T) {
	f := newFixture(t)
	runs := runClient(t, f, "rejoinFailed")
	if len(runs) != 2 {
		t.Fatalf("%d runs; want 2", len(runs))
	}
	r := runs[1]
	if r.Thrown != nil || r.Error == nil || r.Error.Code != "bad_request" || !strings.Contains(r.Error.Message, "refuses") {
		t.Fatalf("RUN_ERROR %+v (thrown %v); want the run's failure, bad_request; events %v", r.Error, r.Thrown, r.Types)
	}
}
