package cli_test

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
	"testing"
	"time"

	"github.com/agentrt/agentrt/internal/testenv"
)

// inspectorConfig is an agent that asks a person before each calculator
// call: the demo model calls it for arithmetic.
const inspectorConfig = `
models:
  demo: {provider: demo}
agents:
  assistant:
    model: demo
    tools: [calculator]
    approval: {ask: [calculator]}
`

// A person's path through the inspector, in real Chromium (Debian's,
// installed by the test command) driven by playwright-core, against a real
// agentrt serve: / leads to the sessions, a session appears without a
// reload, its page shows the timeline and the request, arguments that are
// not JSON are refused in the page, Approve in the inbox lets the run
// finish, a turn streams into the open page, and a page of another origin
// cannot post a form. The screenshots are written to a temporary directory
// , or to docs/img with AGENTRT_UPDATE_SCREENSHOTS=1.
func TestInspectorInChromium(t *testing.T) {
	t.Parallel()
	testenv.SkipShort(t, "runs agentrt serve and Chromium")
	bin := chromiumPath(t)
	node, script := nodeScript(t, "inspector.mjs")
	e := newEnv(t, inspectorConfig, nil)
	s := startServe(t, e, nil)
	defer s.stopOK()
	s.waitLog("inspector: open " + s.url + "/ui/ in a browser")

	shots := t.TempDir()
	if os.Getenv("AGENTRT_UPDATE_SCREENSHOTS") != "" {
		_, file, _, _ := runtime.Caller(0)
		shots = filepath.Join(filepath.Dir(file), "..", "..", "docs", "img", "inspector")
		if err := os.MkdirAll(shots, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, script, s.url, shots)
	cmd.Env = append(os.Environ(), "CHROMIUM="+bin)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var steps []string
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		var l struct{ Step, Error string }
		if json.Unmarshal(sc.Bytes(), &l) != nil {
			continue
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
		"the run finished after the approval",
		"a turn streamed into the open page",
		"a foreign page's form is refused",
	} {
		if !slices.Contains(steps, want) {
			t.Errorf("step %q did not happen; the steps: %q", want, steps)
		}
	}
	for _, name := range []string{"sessions.png", "session-waiting.png", "inbox.png", "session-done.png", "sessions-phone.png"} {
		if fi, err := os.Stat(filepath.Join(shots, name)); err != nil || fi.Size() < 1000 {
			t.Errorf("screenshot %s: %v", name, err)
		}
	}
}

// chromiumPath is Chromium's path: the test command installs it, so under
// CI its absence fails the test.
func chromiumPath(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") != "" {
		t.Fatal("chromium is not installed (scripts/test.sh installs it)")
	}
	t.Skip("chromium is not installed (apt-get install -y --no-install-recommends chromium)")
	return ""
}
