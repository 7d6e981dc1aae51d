//go:build unix

package cli_test

import (
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/agentrt/agentrt/internal/cli"
	"github.com/agentrt/agentrt/internal/testenv"
)

// These tests run agentrt (this test binary as the CLI, see childMain)
// with its streams on a pseudo-terminal, as a person at a terminal runs
// it: whether it asks, and how the questions go.

// stdin is where a terminal test's agentrt reads its standard input from.
type stdin int

const (
	stdinTerminal stdin = iota // the terminal
	stdinNull                  // /dev/null, a character device but no terminal
	stdinPipe                  // a pipe holding what the test types
)

// terminal is agentrt running with its stderr on a pseudo-terminal.
type terminal struct {
	t       *testing.T
	cmd     *exec.Cmd
	ptm     *os.File      // the terminal's master side: what the person sees and types
	stdout  *bytes.Buffer // agentrt's stdout when it is not on the terminal
	done    chan struct{} // closed once agentrt exited and its output is read
	mu      sync.Mutex
	screen  bytes.Buffer  // guarded by mu: everything the terminal showed
	changed chan struct{} // a token when screen grew
}

// onTerminal starts agentrt in dir with args: stderr on a new
// pseudo-terminal, which is agentrt's controlling terminal (Ctrl-C typed on
// it interrupts agentrt), stdin as in says (with stdinPipe, a pipe holding
// piped), stdout on the terminal too when stdoutOnTerminal is set.
func onTerminal(t *testing.T, dir string, in stdin, piped string, stdoutOnTerminal bool, args ...string) *terminal {
	t.Helper()
	testenv.SkipShort(t, "runs child processes")
	ptm, pts, err := pty.Open()
	if err != nil {
		t.Fatalf("no pseudo-terminal: %v (the terminal tests need /dev/ptmx)", err)
	}
	t.Cleanup(func() { ptm.Close() })
	ctx, cancel := context.WithTimeout(t.Context(), procTimeout)
	t.Cleanup(cancel)
	cmd := exec.CommandContext(ctx, os.Args[0], args...)
	cmd.Dir = dir
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "OPENAI_") || strings.HasPrefix(k, "ANTHROPIC_") || strings.HasPrefix(k, "AGENTRT_") || strings.HasPrefix(k, "OLLAMA_") {
			continue
		}
		cmd.Env = append(cmd.Env, kv)
	}
	cmd.Env = append(cmd.Env, "OLLAMA_HOST=127.0.0.1:1", "AGENTRT_CLI_CHILD=1")
	tm := &terminal{t: t, cmd: cmd, ptm: ptm, stdout: new(bytes.Buffer), done: make(chan struct{}), changed: make(chan struct{}, 1)}
	cmd.Stderr = pts
	ctty := 2
	switch in {
	case stdinTerminal:
		cmd.Stdin, ctty = pts, 0
	case stdinNull:
		cmd.Stdin = nil // os/exec opens /dev/null
	case stdinPipe:
		cmd.Stdin = strings.NewReader(piped)
	}
	if stdoutOnTerminal {
		cmd.Stdout = pts
	} else {
		cmd.Stdout = tm.stdout
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: ctty}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pts.Close() // agentrt holds it now: its exit ends the master's reads
	read := make(chan struct{})
	go func() {
		defer close(read)
		buf := make([]byte, 4096)
		for {
			n, err := ptm.Read(buf)
			tm.mu.Lock()
			tm.screen.Write(buf[:n])
			tm.mu.Unlock()
			select {
			case tm.changed <- struct{}{}:
			default:
			}
			if err != nil {
				return // EIO once agentrt, the last holder of the terminal, exited
			}
		}
	}()
	go func() {
		cmd.Wait()
		<-read
		close(tm.done)
	}()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-tm.done
	})
	return tm
}

// shown is what the terminal showed so far, without carriage returns.
func (tm *terminal) shown() string {
	tm.mu.Lock()
	defer tm.mu.Unlock()
	return strings.ReplaceAll(tm.screen.String(), "\r", "")
}

// waitFor waits until the terminal showed s n times.
func (tm *terminal) waitFor(s string, n int) {
	tm.t.Helper()
	timeout := time.NewTimer(procTimeout)
	defer timeout.Stop()
	for strings.Count(tm.shown(), s) < n {
		select {
		case <-tm.changed:
		case <-tm.done:
			if strings.Count(tm.shown(), s) < n {
				tm.t.Fatalf("agentrt exited before the terminal showed %q %d times; it showed:\n%s", s, n, tm.shown())
			}
		case <-timeout.C:
			tm.t.Fatalf("the terminal did not show %q %d times; it showed:\n%s", s, n, tm.shown())
		}
	}
}

// typeText types text on the terminal.
func (tm *terminal) typeText(text string) {
	tm.t.Helper()
	if _, err := io.WriteString(tm.ptm, text); err != nil {
		tm.t.Fatal(err)
	}
}

// wait waits for agentrt to exit and returns its exit code.
func (tm *terminal) wait() int {
	tm.t.Helper()
	select {
	case <-tm.done:
	case <-time.After(procTimeout):
		tm.t.Fatalf("agentrt did not exit; the terminal showed:\n%s", tm.shown())
	}
	return tm.cmd.ProcessState.ExitCode()
}

// tourConfig is the README tour's agent on the offline demo model.
const tourConfig = demoConfig + "agents:\n  assistant: {model: demo, tools: [calculator, clock, ask_user], approval: {ask: [calculator]}}\n"

// approvalPrompt is the question a terminal is asked about the tour's call.
const approvalPrompt = `approve calculator {"expression":"21*2+5"}? [y]es / [n]o / [e]dit / [a]lways / [l]ater: `

// resolutions returns the input_resolved events of a session.
func resolutions(t *testing.T, e *env, id string) []event {
	t.Helper()
	return ofType(parseEvents(t, e.must(cli.ExitOK, "sessions", "events", id).out), "input_resolved")
}

// The README tour typed in a terminal: agentrt asks only when a person can
// answer, on a terminal; /dev/null (a character device) and a pipe are
// none, and the run then waits.
func TestTerminalTour(t *testing.T) {
	t.Parallel()
	t.Run("stdin from /dev/null waits", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, tourConfig, nil)
		tm := onTerminal(t, e.dir, stdinNull, "", true, "--config", e.config, "run", "--session", "t1", "what is 21*2+5")
		if code := tm.wait(); code != cli.ExitWaiting {
			t.Fatalf("exit %d, want %d; the terminal showed:\n%s", code, cli.ExitWaiting, tm.shown())
		}
		if shown := tm.shown(); !approveCmd.MatchString(shown) || strings.Contains(shown, "[y]es") {
			t.Errorf("want the approve line and no question; the terminal showed:\n%s", shown)
		}
		if res := resolutions(t, e, "t1"); len(res) != 0 {
			t.Errorf("a request nobody was asked about was resolved: %v", res)
		}
	})
	t.Run("stdin from a pipe waits", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, tourConfig, nil)
		tm := onTerminal(t, e.dir, stdinPipe, "y\n", false, "--config", e.config, "run", "--session", "t1", "what is 21*2+5")
		if code := tm.wait(); code != cli.ExitWaiting {
			t.Fatalf("exit %d, want %d; the terminal showed:\n%s", code, cli.ExitWaiting, tm.shown())
		}
		if shown := tm.shown(); !approveCmd.MatchString(shown) || strings.Contains(shown, "[y]es") {
			t.Errorf("want the approve line and no question; the terminal showed:\n%s", shown)
		}
		if res := resolutions(t, e, "t1"); len(res) != 0 {
			t.Errorf("resolved from a pipe: %v", res)
		}
	})
	t.Run("stdin and stderr on a terminal: asked", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, tourConfig, nil)
		tm := onTerminal(t, e.dir, stdinTerminal, "", false, "--config", e.config, "run", "--session", "t1", "what is 21*2+5")
		tm.waitFor(approvalPrompt, 1)
		tm.typeText("y\n")
		if code := tm.wait(); code != cli.ExitOK {
			t.Fatalf("exit %d; the terminal showed:\n%s", code, tm.shown())
		}
		for _, want := range []string{"[run] resumed (approval)\n", "21*2+5 = 47\n"} {
			if !strings.Contains(tm.stdout.String(), want) {
				t.Errorf("stdout lacks %q:\n%s", want, tm.stdout)
			}
		}
		if res := resolutions(t, e, "t1"); len(res) != 1 || data(t, res[0])["decision"] != "approve" || data(t, res[0])["by"] == "" {
			t.Errorf("resolutions: %v", res)
		}
	})
}

// The answers to an approval on a terminal: an empty line or one it does
// not know asks again, end of input and "later" leave the request waiting,
// a bad edit says why and asks again, "always" makes a standing decision.
func TestTerminalApproval(t *testing.T) {
	t.Parallel()
	run := func(t *testing.T, e *env) *terminal {
		return onTerminal(t, e.dir, stdinTerminal, "", false, "--config", e.config, "run", "--session", "t1", "what is 21*2+5")
	}
	t.Run("empty and unknown answers ask again", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, tourConfig, nil)
		tm := run(t, e)
		tm.waitFor(approvalPrompt, 1)
		tm.typeText("\n")
		tm.waitFor(approvalPrompt, 2)
		tm.typeText("maybe\n")
		tm.waitFor("answer yes, no, edit, always or later\n", 2)
		tm.waitFor(approvalPrompt, 3)
		tm.typeText("n\n")
		if code := tm.wait(); code != cli.ExitOK {
			t.Fatalf("exit %d; the terminal showed:\n%s", code, tm.shown())
		}
		if !strings.Contains(tm.stdout.String(), "not run: the user rejected this call") {
			t.Errorf("stdout:\n%s", tm.stdout)
		}
	})
	for _, tc := range []struct{ name, typed string }{
		{"end of input leaves it waiting", "\x04"},
		{"later leaves it waiting", "l\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, tourConfig, nil)
			tm := run(t, e)
			tm.waitFor(approvalPrompt, 1)
			tm.typeText(tc.typed)
			if code := tm.wait(); code != cli.ExitWaiting {
				t.Fatalf("exit %d, want %d; the terminal showed:\n%s", code, cli.ExitWaiting, tm.shown())
			}
			if !approveCmd.MatchString(tm.shown()) {
				t.Errorf("no approve line; the terminal showed:\n%s", tm.shown())
			}
			if res := resolutions(t, e, "t1"); len(res) != 0 {
				t.Errorf("resolved: %v", res)
			}
		})
	}
	t.Run("a bad edit says why and asks for the arguments again", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, tourConfig, nil)
		tm := run(t, e)
		const askArgs = "new arguments (JSON; empty to go back): "
		tm.waitFor(approvalPrompt, 1)
		tm.typeText("e\n")
		tm.waitFor(askArgs, 1)
		tm.typeText("{bad\n")
		// Text that is not JSON: the arguments are asked for again, not
		// the question.
		tm.waitFor("not JSON: invalid character 'b' looking for beginning of object key string; try again\n"+askArgs, 1)
		tm.typeText(`{"expression": 5}` + "\n")
		// JSON the tool's schema refuses: the same.
		tm.waitFor("edited arguments: ", 1)
		tm.waitFor("; try again\n"+askArgs, 2)
		// Empty goes back to the question.
		tm.typeText("\n")
		tm.waitFor(approvalPrompt, 2)
		tm.typeText("e\n")
		tm.waitFor(askArgs, 4)
		tm.typeText(`{"expression":"21*2+6"}` + "\n")
		if code := tm.wait(); code != cli.ExitOK {
			t.Fatalf("exit %d; the terminal showed:\n%s", code, tm.shown())
		}
		if !strings.Contains(tm.stdout.String(), "21*2+6 = 48") {
			t.Errorf("stdout:\n%s", tm.stdout)
		}
		if !regexp.MustCompile(`edited arguments: .*expression.*; try again\n`).MatchString(tm.shown()) {
			t.Errorf("the schema's refusal is not said; the terminal showed:\n%s", tm.shown())
		}
		if res := resolutions(t, e, "t1"); len(res) != 1 || data(t, res[0])["decision"] != "edit" {
			t.Errorf("resolutions: %v", res)
		}
	})
	t.Run("always makes a standing decision", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, tourConfig, nil)
		tm := run(t, e)
		tm.waitFor(approvalPrompt, 1)
		tm.typeText("a\n")
		if code := tm.wait(); code != cli.ExitOK {
			t.Fatalf("exit %d; the terminal showed:\n%s", code, tm.shown())
		}
		said := regexp.MustCompile(`standing decision (\S+): approve later calls of calculator in session t1; to end it: agentrt (.*)\n`).FindStringSubmatch(tm.shown())
		if said == nil {
			t.Fatalf("no standing decision said, with the command that ends it; the terminal showed:\n%s", tm.shown())
		}
		// The session's next call of the calculator is not asked about.
		if r := e.must(cli.ExitOK, "run", "--session", "t1", "what is 1+1"); !strings.Contains(r.out, "(decided by standing decision "+said[1]+")") {
			t.Errorf("the next call:\n%s", r.out)
		}
		// The command it printed ends it, as it is.
		revoke := strings.Fields(said[2])
		if want := []string{"--config", e.config, "rules", "revoke", "t1", said[1]}; !slices.Equal(revoke, want) {
			t.Errorf("the command that ends it: %q, want agentrt %q", said[2], want)
		}
		if r := agentrt(t, e.opts, revoke...); r.code != cli.ExitOK || r.err != "revoked "+said[1]+"\n" {
			t.Errorf("agentrt %s: %v", said[2], r)
		}
	})
}

// ask_user's prompts and selections are asked on a terminal too, and the
// resume says what it resumed from.
func TestTerminalPromptAndSelect(t *testing.T) {
	t.Parallel()
	t.Run("prompt", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, tourConfig, nil)
		tm := onTerminal(t, e.dir, stdinTerminal, "", false, "--config", e.config, "run", "--session", "t2", "ask me: what is your name?")
		const q = "what is your name? (your answer; Ctrl-D for later): "
		tm.waitFor(q, 1)
		tm.typeText("\n")
		tm.waitFor(q, 2)
		tm.typeText("Ada\n")
		if code := tm.wait(); code != cli.ExitOK {
			t.Fatalf("exit %d; the terminal showed:\n%s", code, tm.shown())
		}
		for _, want := range []string{"[run] resumed (answer)\n", "You answered: Ada\n"} {
			if !strings.Contains(tm.stdout.String(), want) {
				t.Errorf("stdout lacks %q:\n%s", want, tm.stdout)
			}
		}
	})
	for _, tc := range []struct {
		name, multi, typed, expect string
	}{
		{"one option, by number after a wrong one", "false", "7\n2\n", `{"selected":["green"]}`},
		{"several options, by number and name", "true", "1, blue\n", `{"selected":["red","blue"]}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, `
models:
  s: {provider: scripted, script: pick.yaml}
agents:
  assistant: {model: s, tools: [ask_user]}
`, map[string]string{"pick.yaml": `
replies:
  - tool_calls: [{name: ask_user, arguments: {question: "which color?", options: [red, green, blue], multi: ` + tc.multi + `}}]
  - text: picked
    expect: {last_tool_result_contains: '` + tc.expect + `'}
`})
			tm := onTerminal(t, e.dir, stdinTerminal, "", false, "--config", e.config, "run", "--session", "c1", "pick")
			tm.waitFor("which color?\n  1) red\n  2) green\n  3) blue\nchoose one", 1)
			tm.typeText(tc.typed)
			if code := tm.wait(); code != cli.ExitOK {
				t.Fatalf("exit %d; the terminal showed:\n%s", code, tm.shown())
			}
			for _, want := range []string{"[run] resumed (choice)\n", "picked\n"} {
				if !strings.Contains(tm.stdout.String(), want) {
					t.Errorf("stdout lacks %q:\n%s", want, tm.stdout)
				}
			}
			if tc.multi == "false" && !strings.Contains(tm.shown(), `"7" is not an option of request`) {
				t.Errorf("a wrong option is not said; the terminal showed:\n%s", tm.shown())
			}
		})
	}
}

// Ctrl-C typed at a question stops agentrt at once with exit 130; the
// request stays pending, and agentrt says how to answer it.
func TestTerminalCtrlCAtAQuestion(t *testing.T) {
	t.Parallel()
	e := newEnv(t, tourConfig, nil)
	tm := onTerminal(t, e.dir, stdinTerminal, "", false, "--config", e.config, "run", "--session", "t1", "what is 21*2+5")
	tm.waitFor(approvalPrompt, 1)
	tm.typeText("\x03")
	if code := tm.wait(); code != cli.ExitInterrupted {
		t.Fatalf("exit %d, want 130; the terminal showed:\n%s", code, tm.shown())
	}
	if !approveCmd.MatchString(tm.shown()) {
		t.Errorf("no approve line; the terminal showed:\n%s", tm.shown())
	}
	if res := resolutions(t, e, "t1"); len(res) != 0 {
		t.Errorf("resolved: %v", res)
	}
}
