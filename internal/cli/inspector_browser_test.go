package cli_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/internal/fakellm"
	"github.com/agentrt/agentrt/internal/testenv"
)

// inspectorConfig is an agent on an OpenAI-compatible model server
// (internal/fakellm: arithmetic gets a calculator call) that asks a person
// before each calculator call.
func inspectorConfig(url string) string {
	return fmt.Sprintf(`
models:
  m: {provider: openai, model: fake, base_url: %q}
agents:
  assistant:
    model: m
    tools: [calculator]
    approval: {ask: [calculator]}
`, url+"/v1")
}

// A person's path through the inspector, in real Chromium (Debian's,
// installed by the test command) driven by playwright-core, against a real
// agentrt serve: / leads to the sessions, a session appears without a
// reload, its page shows the timeline and the request, arguments that are
// not JSON are refused in the page, Approve in the inbox lets the run
// finish, a turn streams into the open page, and a page of another origin
// cannot post a form. The screenshots go where screenshotDir says.
func TestInspectorInChromium(t *testing.T) {
	t.Parallel()
	bin := testenv.Chromium(t)
	node, script := nodeScript(t, "inspector.mjs")
	llm := fakellm.Start(t)
	e := newEnv(t, inspectorConfig(llm.URL), nil)
	s := startServe(t, e, nil)
	defer s.stopOK()
	s.waitLog("inspector: open " + s.url + "/ui/ in a browser")

	shots := screenshotDir(t)
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, script, s.url, shots)
	cmd.Env = append(os.Environ(), "CHROMIUM="+bin)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var (
		steps []string
		wire  string // the body the page says the first model call was sent
	)
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var l struct{ Step, Error, Wire string }
		if json.Unmarshal(sc.Bytes(), &l) != nil {
			continue
		}
		if l.Wire != "" {
			wire = l.Wire
		}
		if l.Error != "" {
			t.Errorf("in the browser: %s", l.Error)
		}
		if l.Step != "" {
			steps = append(steps, l.Step)
		}
	}
	if err != nil {
		t.Fatalf("node %s: %v\nstdout:\n%s\nstderr:\n%s", filepath.Base(script), err, out, stderr.String())
	}
	for _, want := range []string{
		"a session appeared live",
		"the session shows its timeline and its request",
		"invalid arguments are refused in the page",
		"approved from the inbox",
		"a new request appeared in the open inbox",
		"the run finished after the approval",
		"a turn streamed into the open page",
		"what the model was sent",
		"forked, sent another way, compared",
		"canceled a run",
		"a foreign page's form is refused",
	} {
		if !slices.Contains(steps, want) {
			t.Errorf("step %q did not happen; the steps: %q", want, steps)
		}
	}
	// What the page showed as sent is what the model server received.
	var shown map[string]any
	if err := json.Unmarshal([]byte(wire), &shown); err != nil {
		t.Fatalf("the page's body of the first model call is not JSON: %v\n%s", err, wire)
	}
	if reqs := llm.Requests(); len(reqs) == 0 {
		t.Error("the model server got no request")
	} else if diff := cmp.Diff(reqs[0], shown); diff != "" {
		t.Errorf("the first model call: the server got (-), the page shows (+):\n%s", diff)
	}
	for _, name := range []string{"diff.png", "sent.png", "sessions.png", "session-waiting.png", "inbox.png", "session-done.png", "sessions-phone.png"} {
		if fi, err := os.Stat(filepath.Join(shots, name)); err != nil || fi.Size() < 1000 {
			t.Errorf("screenshot %s: %v", name, err)
		}
	}
}

// With API keys, in Chromium: the pages ask for a key, refuse a wrong one,
// show a person their key's tenant's sessions only, and sign out.
func TestInspectorSignInChromium(t *testing.T) {
	t.Parallel()
	bin := testenv.Chromium(t)
	node, script := nodeScript(t, "inspector.mjs")
	llm := fakellm.Start(t)
	e := newEnv(t, inspectorConfig(llm.URL)+`
server:
  api_keys:
    - {key: key-of-ana, tenant: acme, principal: ana}
    - {key: key-of-bo, tenant: globex, principal: bo}
`, nil)
	s := startServe(t, e, nil)
	defer s.stopOK()
	shots := screenshotDir(t)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, script, s.url, shots, "keys")
	cmd.Env = append(os.Environ(), "CHROMIUM="+bin, "KEY_A=key-of-ana", "KEY_B=key-of-bo")
	out, err := cmd.CombinedOutput()
	if err != nil || bytes.Contains(out, []byte(`"error"`)) {
		t.Fatalf("node %s keys: %v\n%s", filepath.Base(script), err, out)
	}
	for _, want := range []string{"a wrong key is refused", "signed in, sees only its tenant's sessions", "signed out"} {
		if !bytes.Contains(out, []byte(want)) {
			t.Errorf("step %q did not happen:\n%s", want, out)
		}
	}
}

// screenshotDir is where a browser test writes its screenshots: a
// temporary directory, or docs/img/inspector with
// AGENTRT_UPDATE_SCREENSHOTS=1 (the docs' own).
func screenshotDir(t *testing.T) string {
	t.Helper()
	if os.Getenv("AGENTRT_UPDATE_SCREENSHOTS") == "" {
		return t.TempDir()
	}
	_, file, _, _ := runtime.Caller(0)
	dir := filepath.Join(filepath.Dir(file), "..", "..", "docs", "img", "inspector")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}
