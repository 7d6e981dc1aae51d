package a2a_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/internal/testenv"
)

// The official JavaScript SDK's client (@a2a-js/sdk, testdata/node,
// installed by the test command) drives an agent: card, send, get, a
// second turn in the same context, a stream, an approval answered on its
// task, subscribe and cancel.
func TestJavaScriptSDKClient(t *testing.T) {
	f := newFixture(t, options{})
	got, stderr := runNode(t, "a2a-client.mjs", f.http.URL+"/v1/a2a/assistant")
	want := map[string]any{
		"card":     map[string]any{"name": "assistant", "streaming": true, "skills": []any{"assistant", "gate", "deploy"}},
		"send":     map[string]any{"kind": "task", "state": "TASK_STATE_COMPLETED", "text": "echo: hello from node"},
		"get":      map[string]any{"state": "TASK_STATE_COMPLETED", "text": "echo: hello from node", "context": true},
		"again":    map[string]any{"state": "TASK_STATE_COMPLETED", "text": "echo: and again", "sameContext": true},
		"stream":   []any{"task:TASK_STATE_SUBMITTED", "status:TASK_STATE_WORKING", "chunk", "final", "status:TASK_STATE_COMPLETED"},
		"streamed": "echo: one two three",
		"final":    "echo: one two three",
		"approval": map[string]any{"asked": "TASK_STATE_INPUT_REQUIRED", "answered": "TASK_STATE_COMPLETED", "sameTask": true,
			"text": `echo: "deployed to staging"`},
		"cancel": map[string]any{"first": "task:TASK_STATE_WORKING", "last": "TASK_STATE_CANCELED",
			"cancelTask": "TASK_STATE_CANCELED", "get": "TASK_STATE_CANCELED"},
	}
	// The question's wording is checked in Go (TestApprovalIsInputRequired);
	// here, that it names the call.
	q, _ := got["approval"].(map[string]any)["question"].(string)
	delete(got["approval"].(map[string]any), "question")
	if !bytes.Contains([]byte(q), []byte(`deploy {"env":"staging"}`)) {
		t.Errorf("the approval's question %q does not name the call", q)
	}
	// A subscription's first snapshot may show the task still submitted:
	// a2a-go applies the run's first update on its own goroutine (as in
	// TestCancelAndSubscribe).
	if c, ok := got["cancel"].(map[string]any); ok && c["first"] == "task:TASK_STATE_SUBMITTED" {
		c["first"] = "task:TASK_STATE_WORKING"
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("what @a2a-js/sdk saw (-want +got):\n%s\nstderr: %s", diff, stderr)
	}
}

// runNode runs script of testdata/node with args and returns the JSON
// object it prints, and its stderr.
func runNode(t *testing.T, script string, args ...string) (map[string]any, string) {
	t.Helper()
	testenv.SkipShort(t, "runs node")
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("node is not installed (scripts/test.sh installs what the tests need): %v", err)
	}
	_, file, _, _ := runtime.Caller(0)
	dir := filepath.Join(filepath.Dir(file), "..", "..", "testdata", "node")
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@a2a-js", "sdk", "package.json")); err != nil {
		t.Fatalf("the npm packages of testdata/node are not installed (scripts/test.sh installs them, or npm ci --prefix testdata/node): %v", err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, append([]string{filepath.Join(dir, script)}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node %s: %v\nstdout: %s\nstderr: %s", script, err, out, stderr.String())
	}
	var got map[string]any
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("its output %s: %v", out, err)
	}
	return got, stderr.String()
}

// With @a2a-js/sdk, a task whose run paused at max_rounds asks for input
// (not FAILED), and "continue" on it resumes the run to its end.
func TestJavaScriptSDKPausedTask(t *testing.T) {
	f := newFixture(t, options{agents: []*agentrt.Agent{brief(t)}})
	got, stderr := runNode(t, "a2a-paused.mjs", f.http.URL+"/v1/a2a/brief/")
	says, _ := got["says"].(string)
	delete(got, "says")
	want := map[string]any{"paused": "TASK_STATE_INPUT_REQUIRED", "get": "TASK_STATE_INPUT_REQUIRED",
		"resumed": "TASK_STATE_COMPLETED", "sameTask": true, "text": `echo: "deployed to prod"`}
	if diff := cmp.Diff(want, got); diff != "" || !strings.Contains(says, "max_rounds") || !strings.Contains(says, "Reply continue") {
		t.Errorf("what @a2a-js/sdk saw (-want +got):\n%s\nthe paused task said %q\nstderr: %s", diff, says, stderr)
	}
}
