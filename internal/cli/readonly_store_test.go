//go:build unix

package cli_test

import (
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
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
// with args as the user nobody (uid 65534), from a copy nobody may
// execute.
func runAsNobody(t *testing.T, args ...string) result {
	t.Helper()
	dir, err := os.MkdirTemp("", "agentrt-nobody-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	bin := filepath.Join(dir, "agentrt")
	if err := copyExecutable(os.Args[0], bin); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(t.Context(), bin, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "AGENTRT_CLI_CHILD=1", "OLLAMA_HOST=127.0.0.1:1", "HOME="+dir)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	var exited *exec.ExitError
	if err := cmd.Run(); err != nil && !errors.As(err, &exited) {
		t.Fatal(err)
	}
	return result{code: cmd.ProcessState.ExitCode(), out: out.String(), err: errb.String()}
}

func copyExecutable(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_EXCL, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
