//go:build unix

package cli_test

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/internal/app"
	"github.com/agentrt/agentrt/internal/cli"
	"github.com/agentrt/agentrt/internal/testenv"
)

// A SQLite store this user may not write (another user's file in another
// user's directory) can still be listed and shown; a run says why it
// cannot write. As root, who may write anything, agentrt runs as the user
// nobody.
func TestReadOnlyStoreIsListed(t *testing.T) {
	t.Parallel()
	testenv.SkipShort(t, "runs child processes")
	dir, err := os.MkdirTemp("", "agentrt-cli-ro-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(dir, 0o755); os.RemoveAll(dir) })
	cfg := filepath.Join(dir, "agentrt.yaml")
	writeFile(t, cfg, demoConfig)
	store := "sqlite:" + filepath.Join(dir, "a.db")
	if r := agentrt(t, app.Options{}, "--config", cfg, "--store", store, "run", "--session", "s1", "what is 1+1"); r.code != cli.ExitOK {
		t.Fatalf("%v", r)
	}
	run := func(args ...string) result {
		t.Helper()
		args = append([]string{"--config", cfg, "--store", store}, args...)
		if os.Geteuid() != 0 {
			return agentrt(t, app.Options{}, args...)
		}
		return runAsNobody(t, args...)
	}
	if os.Geteuid() == 0 {
		if err := os.Chmod(dir, 0o755); err != nil { // nobody reads it, writes nothing
			t.Fatal(err)
		}
	} else {
		for p, mode := range map[string]os.FileMode{filepath.Join(dir, "a.db"): 0o444, dir: 0o555} {
			if err := os.Chmod(p, mode); err != nil {
				t.Fatal(err)
			}
		}
	}
	if r := run("sessions", "list"); r.code != cli.ExitOK || !strings.Contains(r.out, "s1 ") || !strings.Contains(r.out, " done ") {
		t.Errorf("sessions list: %v", r)
	}
	if r := run("sessions", "show", "s1"); r.code != cli.ExitOK || !strings.Contains(r.out, "answer   1+1 = 2") {
		t.Errorf("sessions show: %v", r)
	}
	if r := run("run", "--session", "s1", "what is 2+2"); r.code != cli.ExitFailed || !strings.Contains(r.err, "the database is read-only") {
		t.Errorf("run: %v", r)
	}
}

// runAsNobody runs agentrt (this test binary as the CLI, see childMain)
// with args as the user nobody (uid 65534).
func runAsNobody(t *testing.T, args ...string) result {
	t.Helper()
	cmd := testenv.AsNobody(t, args...)
	cmd.Env = append(os.Environ(), "AGENTRT_CLI_CHILD=1", "OLLAMA_HOST=127.0.0.1:1", "HOME="+cmd.Dir)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	var exited *exec.ExitError
	if err := cmd.Run(); err != nil && !errors.As(err, &exited) {
		t.Fatal(err)
	}
	return result{code: cmd.ProcessState.ExitCode(), out: out.String(), err: errb.String()}
}
