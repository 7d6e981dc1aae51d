package cli_test

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/internal/cli"
	"github.com/agentrt/agentrt/internal/testenv"
)

// Ctrl-C (SIGINT) stops a run and agentrt exits 130, as shells expect of
// a command stopped by Ctrl-C; the run is canceled with reason sigint, and
// resumable.
func TestProcessCtrlCExits130(t *testing.T) {
	t.Parallel()
	testenv.SkipShort(t, "runs child processes")
	e := newEnv(t, `
models:
  s: {provider: scripted, script: "${AGENTRT_TEST_SCRIPT}"}
agents:
  assistant: {model: s}
`, map[string]string{
		"slow.yaml": "replies:\n  - text: never\n    delay: 1h\n",
		"now.yaml":  "replies:\n  - text: answered after the restart\n",
	})
	c := startChild(t, e.dir, []string{"AGENTRT_TEST_SCRIPT=slow.yaml"}, "--config", e.config, "run", "--json", "--session", "s1", "go")
	c.waitEvent("model_started")
	c.signal(os.Interrupt)
	fin := c.waitEvent("run_finished")
	if code := c.wait(); code != cli.ExitInterrupted {
		t.Fatalf("exit %d, want 130; stderr:\n%s", code, c.stderrText())
	}
	var d struct{ Status, Reason string }
	json.Unmarshal(fin.Data, &d)
	if d.Status != "canceled" || d.Reason != "sigint" {
		t.Errorf("run_finished %s", fin.Data)
	}
	if want := "session s1: run stopped by Ctrl-C; continue with: agentrt --config " + e.config + " resume s1"; !strings.Contains(c.stderrText(), want) {
		t.Errorf("stderr lacks %q:\n%s", want, c.stderrText())
	}
	r := startChild(t, e.dir, []string{"AGENTRT_TEST_SCRIPT=now.yaml"}, "--config", e.config, "resume", "s1")
	if code := r.wait(); code != cli.ExitOK {
		t.Fatalf("resume: exit %d; stderr:\n%s", code, r.stderrText())
	}
}
