package openai_test

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/internal/testenv"
	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/session"
)

// nodeScript returns node's path and the path of a script of
// testdata/node. Node and the npm packages are installed by the test
// command: without them the test fails under CI, and is skipped
// elsewhere.
func nodeScript(t *testing.T, name string) (node, script string) {
	t.Helper()
	testenv.SkipShort(t, "runs the openai npm client under node")
	_, file, _, _ := runtime.Caller(0)
	dir := filepath.Join(filepath.Dir(file), "..", "..", "testdata", "node")
	node, err := exec.LookPath("node")
	if err == nil {
		_, err = os.Stat(filepath.Join(dir, "node_modules", "openai", "package.json"))
	}
	if err != nil {
		t.Fatalf("node or the npm packages of testdata/node are missing (the test command installs them; or npm ci --prefix testdata/node): %v", err)
	}
	return node, filepath.Join(dir, name)
}

// The official openai npm package talks to the adapter: it lists the
// models, creates a completion streamed and not, assembles one with the
// chat.completions.stream() helper (which checks finish_reason), answers
// a run that waits for an approval with the next message, does a
// client-side tool round trip (the stream helper assembling the call, the
// history sent back with the tool message), and raises an unknown model as
// its APIError, and a method the endpoint does not take (the server's
// 405) too; each model's created is the server's start.
func TestOpenAINodeClient(t *testing.T) {
	t.Parallel()
	node, script := nodeScript(t, "openai-chat.mjs")
	f := newFixture(t)
	cmd := exec.CommandContext(t.Context(), node, script, f.http.URL)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node %s: %v\n%s", script, err, stderr.String())
	}
	var got map[string]any
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("node printed %q: %v", out, err)
	}
	want := map[string]any{
		"models":  []any{"assistant", "writer"},
		"created": []any{1700000000.0},
		"method": map[string]any{"isAPIError": true, "status": 405.0, "code": "method_not_allowed",
			"type": "invalid_request_error", "param": nil, "message": true},
		"plain":    map[string]any{"content": "echo: hello node", "finish": "stop", "total": 15.0, "session": true},
		"streamed": map[string]any{"content": "echo: stream me", "finish": "stop", "usage": 15.0},
		"helper":   map[string]any{"content": "echo: help me", "finish": "stop", "deltas": 3.0},
		"approval": map[string]any{"asked": true, "kind": "approval", "answer": `echo: "deployed to prod"`},
		"clientTool": map[string]any{"finish": "tool_calls", "name": "local_time", "args": `{"tz":"UTC"}`,
			"answer": `echo: "12:00 UTC"`, "answerFinish": "stop"},
		"unknown": map[string]any{"isAPIError": true, "status": 404.0, "code": "model_not_found", "param": "model"},
		"image": map[string]any{"answer": "echo: what is this?",
			"fileId": map[string]any{"isAPIError": true, "status": 400.0, "code": "malformed_request", "param": "messages[0].content[0].file.file_id"}},
	}
	// The image the client sent is its turn's media.
	img, _ := got["image"].(map[string]any)
	id, _ := img["session"].(string)
	delete(img, "session")
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the openai npm client saw (-want +got):\n%s", diff)
	}
	var media []model.Media
	for ev, err := range f.r.Store().Events(session.WithTenant(t.Context(), session.DefaultTenant), id, 0) {
		if err != nil {
			t.Fatal(err)
		}
		if d, ok := ev.Data.(*session.RunStarted); ok {
			media = d.Media
		}
	}
	if len(media) != 1 || media[0].Type != "image/png" || media[0].Size != 72 {
		t.Errorf("session %q's run_started.media: %+v, want the client's 72-byte PNG", id, media)
	}
}

// The official openai npm package uses the Responses API: a response and
// its continuation by previous_response_id (which a poll echoes), the
// responses.stream() helper with a delta a token, a stream left after a
// token and resumed with starting_after (by hand and by the helper), a
// background response followed, polled and resumed, a function tool's
// round trip (plain and through the helper), the cancel of a background
// response, a delete, and errors as its APIError.
func TestOpenAINodeResponses(t *testing.T) {
	t.Parallel()
	node, script := nodeScript(t, "openai-responses.mjs")
	f, _ := newGated(t)
	cmd := exec.CommandContext(t.Context(), node, script, f.http.URL)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node %s: %v\n%s", script, err, stderr.String())
	}
	var got map[string]any
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("node printed %q: %v", out, err)
	}
	apiErr := func(status float64, code string, param any) map[string]any {
		return map[string]any{"isAPIError": true, "status": status, "code": code, "param": param}
	}
	want := map[string]any{
		"plain": map[string]any{"status": "completed", "text": "echo: hello node", "total": 15.0, "next": "echo: again",
			"previous": true, "model": "assistant", "background": false},
		"helper": map[string]any{"text": "echo: help me", "status": "completed", "deltas": []any{"echo: ", "help ", "me"}},
		"resume": map[string]any{"had": "echo: leave ", "rest": "me half way", "after": true, "last": "response.completed",
			// The helper filters a replay from the log by number: the text,
			// stored whole, is one delta after the number; its final text is
			// right.
			"helperDeltas": []any{"echo: leave me half way"}, "helperText": "echo: leave me half way"},
		"background": map[string]any{"queued": "queued", "polled": "completed", "text": "echo: later", "background": true,
			"last": "response.completed", "followed": "echo: later", "resumed": "echo: later"},
		"functionCall": map[string]any{"status": "completed", "name": "local_time", "args": `{"tz":"UTC"}`, "callStatus": "completed",
			"tools": []any{"local_time"}, "answer": `echo: "12:00 UTC"`, "streamedArgs": `{"tz":"CET"}`, "streamedStatus": "completed"},
		"cancel": map[string]any{"status": "cancelled", "polled": "cancelled", "again": "cancelled"},
		"delete": map[string]any{"gone": apiErr(404, "not_found", nil), "shared": apiErr(409, "not_deletable", nil)},
		"errors": map[string]any{
			"unknownResponse": apiErr(404, "not_found", nil),
			"unknownPrevious": apiErr(404, "not_found", "previous_response_id"),
			"unknownCall":     apiErr(404, "unknown_request", "input[0].call_id"),
			"webSearch":       apiErr(400, "malformed_request", "tools[0].type"),
		},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the openai npm client saw (-want +got):\n%s", diff)
	}
}
