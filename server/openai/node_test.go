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
// its APIError.
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
		"models":   []any{"assistant", "writer"},
		"plain":    map[string]any{"content": "echo: hello node", "finish": "stop", "total": 15.0, "session": true},
		"streamed": map[string]any{"content": "echo: stream me", "finish": "stop", "usage": 15.0},
		"helper":   map[string]any{"content": "echo: help me", "finish": "stop", "deltas": 3.0},
		"approval": map[string]any{"asked": true, "kind": "approval", "answer": `echo: "deployed to prod"`},
		"clientTool": map[string]any{"finish": "tool_calls", "name": "local_time", "args": `{"tz":"UTC"}`,
			"answer": `echo: "12:00 UTC"`, "answerFinish": "stop"},
		"unknown": map[string]any{"isAPIError": true, "status": 404.0, "code": "model_not_found", "param": "model"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the openai npm client saw (-want +got):\n%s", diff)
	}
}

// The official openai npm package uses the Responses API: a response and
// its continuation by previous_response_id, the responses.stream()
// helper, a background response followed, polled and its stream resumed
// with starting_after, and an unknown response id as its APIError.
func TestOpenAINodeResponses(t *testing.T) {
	t.Parallel()
	node, script := nodeScript(t, "openai-responses.mjs")
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
		"plain":  map[string]any{"status": "completed", "text": "echo: hello node", "total": 15.0, "next": "echo: again"},
		"helper": map[string]any{"text": "echo: help me", "status": "completed", "deltas": "echo: help me"},
		"background": map[string]any{"queued": "queued", "polled": "completed", "text": "echo: later",
			"last": "response.completed", "resumedFrom": 4.0, "resumed": true},
		"unknown": map[string]any{"isAPIError": true, "status": 404.0, "code": "not_found"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the openai npm client saw (-want +got):\n%s", diff)
	}
}
