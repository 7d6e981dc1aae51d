package cli_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentrt/agentrt/gateway"
	"github.com/agentrt/agentrt/internal/app"
	"github.com/agentrt/agentrt/internal/cli"
	"github.com/agentrt/agentrt/internal/pgtest"
	"github.com/agentrt/agentrt/internal/testenv"
	"github.com/agentrt/agentrt/tool"
)

// childTools are the extra tools of the CLI the child processes run (this
// test binary, re-executed with AGENTRT_CLI_CHILD=1, is agentrt with them).
//
//   - stubborn ignores its context: with AGENTRT_STUBBORN=block it never
//     returns, else it returns at once.
//   - journal appends its line to the file AGENTRT_JOURNAL names, so that
//     a test counts its runs across processes.
//   - once is journal for a side effect that must not happen twice
//     (tool.Meta.AtMostOnce); with AGENTRT_ONCE=block it then says so on
//     stderr and never returns.
//   - fill is journal for a side effect, then fills the filesystem of the
//     file AGENTRT_FILL names, until it is full.
func childTools() []tool.Tool {
	stubborn := tool.Must(tool.New("stubborn", "ignores cancellation", func(ctx context.Context, _ struct{}) (string, error) {
		if os.Getenv("AGENTRT_STUBBORN") == "block" {
			select {} // until the process dies
		}
		if path := os.Getenv("AGENTRT_JOURNAL"); path != "" {
			f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
			if err != nil {
				return "", err
			}
			info, _ := tool.CallInfoFrom(ctx)
			fmt.Fprintf(f, "stubborn %s %d\n", info.IdempotencyKey, info.Attempt)
			if err := f.Close(); err != nil {
				return "", err
			}
		}
		return "stubborn done", nil
	}))
	journal := tool.Must(tool.New("journal", "records a line", func(ctx context.Context, in struct {
		Line string `json:"line"`
	}) (string, error) {
		f, err := os.OpenFile(os.Getenv("AGENTRT_JOURNAL"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			return "", err
		}
		info, _ := tool.CallInfoFrom(ctx)
		fmt.Fprintf(f, "%s %s %d\n", in.Line, info.IdempotencyKey, info.Attempt)
		return "recorded " + in.Line, f.Close()
	}))
	once := tool.Must(tool.New("once", "records a line, at most once", func(ctx context.Context, in struct {
		Line string `json:"line"`
	}) (string, error) {
		f, err := os.OpenFile(os.Getenv("AGENTRT_JOURNAL"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			return "", err
		}
		info, _ := tool.CallInfoFrom(ctx)
		fmt.Fprintf(f, "%s %s %d\n", in.Line, info.IdempotencyKey, info.Attempt)
		if err := f.Close(); err != nil {
			return "", err
		}
		if os.Getenv("AGENTRT_ONCE") == "block" {
			fmt.Fprintln(os.Stderr, blockedLine("once"))
			select {} // until the process dies
		}
		return "recorded " + in.Line, nil
	}))
	fill := tool.Must(tool.New("fill", "records a line, then fills the disk", func(ctx context.Context, in struct {
		Line string `json:"line"`
	}) (string, error) {
		f, err := os.OpenFile(os.Getenv("AGENTRT_JOURNAL"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			return "", err
		}
		info, _ := tool.CallInfoFrom(ctx)
		fmt.Fprintf(f, "%s %s %d\n", in.Line, info.IdempotencyKey, info.Attempt)
		if err := f.Close(); err != nil {
			return "", err
		}
		disk, err := os.OpenFile(os.Getenv("AGENTRT_FILL"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			return "", err
		}
		defer disk.Close()
		buf := make([]byte, 64<<10)
		for {
			if _, err := disk.Write(buf); err != nil {
				if errors.Is(err, syscall.ENOSPC) {
					return "filled the disk", nil
				}
				return "", err
			}
		}
	}))
	return []tool.Tool{stubborn, journal, tool.WithMeta(once, tool.Meta{AtMostOnce: true}), fill}
}

// childModules are the extra gateway modules of the CLI the child
// processes run:
//
//   - with AGENTRT_GATE=block, "gate" (before the agent's module) says so
//     on stderr when a turn reaches it and holds the turn until the
//     process stops; with AGENTRT_GATE=stuck, "stuck" does the same but
//     ignores its context, with a time limit of an hour;
//   - with AGENTRT_TURN_JOURNAL set, "turn-journal" (at order 10, as a
//     moderation module would be) appends a line per turn to that file,
//     so that a test counts, across processes, how often each input went
//     through a module.
func childModules() []gateway.Module {
	var mods []gateway.Module
	if path := os.Getenv("AGENTRT_TURN_JOURNAL"); path != "" {
		mods = append(mods, turnJournal{path: path})
	}
	switch os.Getenv("AGENTRT_GATE") {
	case "block":
		mods = append(mods, gateModule{})
	case "stuck":
		mods = append(mods, stuckModule{})
	}
	return mods
}

// turnJournal appends "PID SOURCE RESTART ID…" (the turn's inputs) to
// its file for each turn: one write of one short line, which O_APPEND
// keeps whole when several processes write at once.
type turnJournal struct{ path string }

func (turnJournal) Name() string { return "turn-journal" }
func (turnJournal) Order() int   { return 10 }

func (j turnJournal) Run(_ context.Context, t *gateway.Turn) error {
	line := fmt.Sprintf("%d %s %d", os.Getpid(), t.Source, t.Restart)
	for _, in := range t.Inputs {
		line += " " + in.ID
	}
	f, err := os.OpenFile(j.path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(line + "\n"); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

type gateModule struct{}

func (gateModule) Name() string { return "gate" }
func (gateModule) Order() int   { return gateway.AgentOrder - 10 }

func (gateModule) Run(ctx context.Context, _ *gateway.Turn) error {
	fmt.Fprintln(os.Stderr, blockedLine("gate"))
	<-ctx.Done()
	return ctx.Err()
}

// stuckModule ignores its context: only the process's end stops it. Its
// time limit is AGENTRT_STUCK_TIMEOUT, else an hour.
type stuckModule struct{}

func (stuckModule) Name() string { return "stuck" }
func (stuckModule) Order() int   { return gateway.AgentOrder - 10 }
func (stuckModule) Timeout() time.Duration {
	if d, err := time.ParseDuration(os.Getenv("AGENTRT_STUCK_TIMEOUT")); err == nil {
		return d
	}
	return time.Hour
}

func (stuckModule) Run(context.Context, *gateway.Turn) error {
	fmt.Fprintln(os.Stderr, blockedLine("stuck"))
	select {} // until the process dies
}

// blockedLine is what a child's tool or module that blocks says on
// stderr, for the test to wait for.
func blockedLine(name string) string { return "[test] " + name + " blocks" }

// childMain runs the CLI when this test binary is a child process; it
// reports whether it was.
func childMain() bool {
	if os.Getenv("AGENTRT_CLI_CHILD") != "1" {
		return false
	}
	code := cli.Execute(os.Args[1:], cli.Streams{In: os.Stdin, Out: os.Stdout, Err: os.Stderr}, app.Options{ExtraTools: childTools(), GatewayModules: childModules(), Models: childModels()})
	os.Exit(code)
	return true
}

// child is a running child process.
type child struct {
	t      *testing.T
	cmd    *exec.Cmd
	stdout chan string // its stdout, by line
	stderr chan string // its stderr, by line
	done   chan struct{}
	errOut strings.Builder
	mu     sync.Mutex
}

// startChild starts agentrt (this binary as the CLI with childTools) in
// dir with args and extra environment.
func startChild(t *testing.T, dir string, env []string, args ...string) *child {
	t.Helper()
	return startChildVia(t, dir, env, nil, args...)
}

// startChildVia is startChild through a command that execs it (via, e.g.
// prlimit with its options), when via is not empty.
func startChildVia(t *testing.T, dir string, env, via []string, args ...string) *child {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), procTimeout)
	t.Cleanup(cancel)
	cmd := exec.CommandContext(ctx, os.Args[0], args...)
	if len(via) > 0 {
		cmd = exec.CommandContext(ctx, via[0], append(append(via[1:len(via):len(via)], os.Args[0]), args...)...)
	}
	cmd.Dir = dir
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "OPENAI_") || strings.HasPrefix(k, "ANTHROPIC_") || strings.HasPrefix(k, "AGENTRT_") || strings.HasPrefix(k, "OLLAMA_") {
			continue
		}
		cmd.Env = append(cmd.Env, kv)
	}
	cmd.Env = append(cmd.Env, "OLLAMA_HOST=127.0.0.1:1", "AGENTRT_CLI_CHILD=1")
	cmd.Env = append(cmd.Env, env...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &child{t: t, cmd: cmd, stdout: make(chan string, 4096), stderr: make(chan string, 1024), done: make(chan struct{})}
	var wg sync.WaitGroup
	wg.Go(func() {
		defer close(c.stdout)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			c.stdout <- sc.Text()
		}
		_, _ = io.Copy(io.Discard, stdout)
	})
	wg.Go(func() {
		defer close(c.stderr)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			c.mu.Lock()
			c.errOut.WriteString(sc.Text() + "\n")
			c.mu.Unlock()
			c.stderr <- sc.Text()
		}
	})
	go func() {
		wg.Wait()
		cmd.Wait()
		close(c.done)
	}()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-c.done
	})
	return c
}

// waitEvent reads events until one of type typ.
func (c *child) waitEvent(typ string) event {
	c.t.Helper()
	for l := range c.stdout {
		var e event
		if json.Unmarshal([]byte(l), &e) == nil && e.Type == typ {
			return e
		}
	}
	c.t.Fatalf("the child ended before a %s event; stderr:\n%s", typ, c.stderrText())
	return event{}
}

// waitStderr reads stderr lines until one containing s.
func (c *child) waitStderr(s string) {
	c.t.Helper()
	for l := range c.stderr {
		if strings.Contains(l, s) {
			return
		}
	}
	c.t.Fatalf("the child ended without saying %q; stderr:\n%s", s, c.stderrText())
}

func (c *child) stderrText() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.errOut.String()
}

// wait waits for the child to exit and returns its exit code (-1 if a
// signal killed it).
func (c *child) wait() int {
	c.t.Helper()
	select {
	case <-c.done:
	case <-time.After(procTimeout):
		c.t.Fatal("the child did not exit")
	}
	return c.cmd.ProcessState.ExitCode()
}

func (c *child) signal(sig os.Signal) {
	c.t.Helper()
	if err := c.cmd.Process.Signal(sig); err != nil {
		c.t.Fatal(err)
	}
}

// Bug 7: a run stuck in a tool that ignores its context survives the first
// signal (which asks it to stop), but not the second, which exits at once.
// The session stays running, and another process resumes it at once (the
// lease's owner is a dead process of this host).
func TestProcessSecondSignalExitsAtOnce(t *testing.T) {
	t.Parallel()
	testenv.SkipShort(t, "runs child processes")
	for _, tc := range []struct {
		name   string
		second os.Signal
		code   int
	}{
		{"interrupt twice", os.Interrupt, 130},
		{"interrupt then term", syscall.SIGTERM, 143},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, `
models:
  s: {provider: scripted, script: "${AGENTRT_TEST_SCRIPT}"}
agents:
  assistant: {model: s, tools: [stubborn]}
`, map[string]string{
				"first.yaml":  "replies:\n  - tool_calls: [{name: stubborn}]\n",
				"second.yaml": "replies:\n  - tool_calls: [{name: stubborn}]\n  - text: \"after the restart\"\n    expect: {last_tool_result_contains: stubborn done}\n",
			})
			c := startChild(t, e.dir, []string{"AGENTRT_STUBBORN=block", "AGENTRT_TEST_SCRIPT=first.yaml"},
				"--config", e.config, "run", "--json", "--session", "s1", "go")
			c.waitEvent("tool_call")
			c.signal(os.Interrupt)
			c.waitStderr("stopping")
			c.signal(tc.second)
			if code := c.wait(); code != tc.code {
				t.Fatalf("exit code %d, want %d; stderr:\n%s", code, tc.code, c.stderrText())
			}
			r := startChild(t, e.dir, []string{"AGENTRT_TEST_SCRIPT=second.yaml"}, "--config", e.config, "resume", "--json", "s1")
			if code := r.wait(); code != cli.ExitOK {
				t.Fatalf("resume: exit %d; stderr:\n%s", code, r.stderrText())
			}
		})
	}
}

// The first signal stops a run that heeds cancellation at once, recorded
// as canceled and resumable.
func TestProcessFirstSignalStopsGracefully(t *testing.T) {
	t.Parallel()
	testenv.SkipShort(t, "runs child processes")
	e := newEnv(t, `
models:
  s: {provider: scripted, script: slow.yaml}
agents:
  assistant: {model: s}
`, map[string]string{"slow.yaml": "replies:\n  - text: never\n    delay: 1h\n"})
	c := startChild(t, e.dir, nil, "--config", e.config, "run", "--json", "--session", "s1", "go")
	c.waitEvent("model_started")
	c.signal(syscall.SIGTERM)
	fin := c.waitEvent("run_finished")
	if code := c.wait(); code != cli.ExitFailed {
		t.Fatalf("exit %d, want %d", code, cli.ExitFailed)
	}
	var d struct{ Status string }
	json.Unmarshal(fin.Data, &d)
	if d.Status != "canceled" || !strings.Contains(c.stderrText(), "agentrt --config "+e.config+" resume s1") {
		t.Errorf("run_finished %s; stderr:\n%s", fin.Data, c.stderrText())
	}
}

// journalRuns returns the journal's lines: "line key attempt".
func journalRuns(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSpace(string(b)), "\n")
}

// Two `agentrt resume` of one crashed session started at the same moment:
// exactly one resumes it, the tool runs exactly once more (its call was in
// flight at the crash: at least once), and the log has no gap or duplicate.
func TestProcessTwoResumersOneSession(t *testing.T) {
	t.Parallel()
	testenv.SkipShort(t, "runs child processes")
	twoResumers(t, func(*testing.T) string { return "" }, 20)
}

// The same on Postgres, where the processes share a database server.
func TestProcessTwoResumersPostgres(t *testing.T) {
	t.Parallel()
	testenv.SkipShort(t, "runs child processes")
	twoResumers(t, func(t *testing.T) string { dsn, _ := pgtest.Schema(t); return dsn }, 5)
}

// twoResumers runs trials, each on a store newStore makes ("" for SQLite).
func twoResumers(t *testing.T, newStore func(t *testing.T) string, trials int) {
	for i := range trials {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			t.Parallel()
			store := newStore(t)
			e, journal, env := crashEnv(t, store, "", "resumed")
			c := startChild(t, e.dir, append(env, "AGENTRT_STUBBORN=block", "AGENTRT_TEST_SCRIPT=crash.yaml"),
				"--config", e.config, "run", "--json", "--session", "s1", "go")
			c.waitEvent("tool_result") // journal's; stubborn blocks
			c.cmd.Process.Kill()
			c.wait()

			var resumers [2]*child
			for j := range resumers {
				resumers[j] = startChild(t, e.dir, append(env, "AGENTRT_TEST_SCRIPT=after.yaml"), "--config", e.config, "resume", "s1")
			}
			codes := map[int]int{}
			for _, r := range resumers {
				codes[r.wait()]++
			}
			if codes[cli.ExitOK] != 1 || codes[cli.ExitUsage] != 1 {
				t.Fatalf("exit codes %v, want one 0 and one 2; stderr:\n%s\n---\n%s", codes, resumers[0].stderrText(), resumers[1].stderrText())
			}
			for _, r := range resumers {
				if out := r.stderrText(); r.cmd.ProcessState.ExitCode() == cli.ExitUsage &&
					!strings.Contains(out, "is being run by") && !strings.Contains(out, "nothing to resume") {
					t.Errorf("the loser says:\n%s", out)
				}
			}
			// journal's result was stored before the kill: it never runs
			// again. stubborn was running: exactly one of the resumers runs
			// it again, as its second attempt, with the same key.
			runs := journalRuns(t, journal)
			if len(runs) != 2 || !strings.HasPrefix(runs[0], "one ") || !strings.HasPrefix(runs[1], "stubborn ") || !strings.HasSuffix(runs[1], " 2") {
				t.Errorf("journal %v, want journal once then stubborn once as attempt 2", runs)
			}
			evs := parseEvents(t, newProcChild(t, e).mustOut("--config", e.config, "sessions", "events", "s1"))
			checkSeq(t, evs, 1)
			if n := len(ofType(evs, "run_resumed")); n != 1 {
				t.Errorf("%d run_resumed events, want 1", n)
			}
		})
	}
}

// A runner killed mid-run is recovered by another process once its lease
// expires: `agentrt recover` in a loop, with a deadline.
func TestProcessRecoverAfterLeaseExpiry(t *testing.T) {
	t.Parallel()
	testenv.SkipShort(t, "runs child processes")
	recoverAfterExpiry(t, "")
}

func TestProcessRecoverPostgres(t *testing.T) {
	t.Parallel()
	testenv.SkipShort(t, "runs child processes")
	dsn, _ := pgtest.Schema(t)
	recoverAfterExpiry(t, dsn)
}

func recoverAfterExpiry(t *testing.T, store string) {
	e, journal, env := crashEnv(t, store, "lease_ttl: 1s\n", "recovered")
	// The first process runs under another host's name: nobody can see
	// that it died, so only the lease's expiry frees the session.
	c := startChild(t, e.dir, append(env, "AGENTRT_STUBBORN=block", "AGENTRT_TEST_SCRIPT=crash.yaml", "AGENTRT_OWNER=elsewhere:1:x"),
		"--config", e.config, "run", "--json", "--session", "s1", "go")
	c.waitEvent("tool_result")
	c.cmd.Process.Kill()
	c.wait()

	deadline := time.Now().Add(procTimeout)
	for {
		r := startChild(t, e.dir, append(env, "AGENTRT_TEST_SCRIPT=after.yaml"), "--config", e.config, "recover")
		code := r.wait()
		out := r.stderrText()
		if code != cli.ExitOK {
			t.Fatalf("recover: exit %d\n%s", code, out)
		}
		if strings.Contains(out, "recovered 1 session") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("nothing recovered before the deadline; last:\n%s", out)
		}
	}
	show := newProcChild(t, e).mustOut("--config", e.config, "sessions", "show", "s1")
	if !strings.Contains(show, "status   done") {
		t.Errorf("sessions show:\n%s", show)
	}
	runs := journalRuns(t, journal)
	if len(runs) != 2 || !strings.HasSuffix(runs[0], " 1") || !strings.HasSuffix(runs[1], " 2") {
		t.Errorf("journal %v, want journal's first attempt, then stubborn's second", runs)
	}
}

// crashEnv is a config whose agent calls journal, then stubborn (which
// blocks when AGENTRT_STUBBORN=block) with crash.yaml, and answers answer
// with after.yaml (the same call first: a script plays the reply that
// follows the conversation); the journal file, and the environment
// pointing at it.
func crashEnv(t *testing.T, store, extra, answer string) (*env, string, []string) {
	t.Helper()
	e := newEnvStore(t, store, extra+`
models:
  s: {provider: scripted, script: "${AGENTRT_TEST_SCRIPT}"}
agents:
  assistant: {model: s, tools: [journal, stubborn]}
`, map[string]string{
		"crash.yaml": "replies:\n  - tool_calls: [{name: journal, arguments: {line: one}}, {name: stubborn}]\n",
		"after.yaml": "replies:\n  - tool_calls: [{name: journal, arguments: {line: one}}, {name: stubborn}]\n  - text: \"" + answer + "\"\n",
	})
	journal := filepath.Join(e.dir, "journal")
	return e, journal, []string{"AGENTRT_JOURNAL=" + journal}
}

// procChild runs short commands as children.
type procChild struct {
	t *testing.T
	e *env
}

// newProcChild runs commands in e's directory; its config's script is
// after.yaml, which only commands that run a model read.
func newProcChild(t *testing.T, e *env) procChild { return procChild{t, e} }

// mustOut runs agentrt with args, expects exit 0, and returns its stdout.
func (p procChild) mustOut(args ...string) string {
	p.t.Helper()
	c := startChild(p.t, p.e.dir, []string{"AGENTRT_TEST_SCRIPT=after.yaml"}, args...)
	var b strings.Builder
	for l := range c.stdout {
		b.WriteString(l + "\n")
	}
	if code := c.wait(); code != cli.ExitOK {
		p.t.Fatalf("agentrt %s: exit %d\n%s", strings.Join(args, " "), code, c.stderrText())
	}
	return b.String()
}

// A session is followed from another process as it runs, on SQLite and on
// Postgres: sessions events --follow prints each event as it commits, and
// Ctrl-C ends it.
func TestProcessFollow(t *testing.T) {
	t.Parallel()
	testenv.SkipShort(t, "runs child processes")
	for _, store := range []string{"sqlite", "postgres"} {
		t.Run(store, func(t *testing.T) {
			t.Parallel()
			dsn := ""
			if store == "postgres" {
				dsn, _ = pgtest.Schema(t)
			}
			e := newEnvStore(t, dsn, demoConfig, nil)
			// The session exists before the follower starts.
			first := startChild(t, e.dir, nil, "--config", e.config, "run", "--session", "s1", "what is 1+1")
			if code := first.wait(); code != cli.ExitOK {
				t.Fatalf("first run: exit %d\n%s", code, first.stderrText())
			}
			f := startChild(t, e.dir, nil, "--config", e.config, "sessions", "events", "s1", "--follow")
			f.waitEvent("run_finished") // the first turn, from the log
			// Now a turn in another process: the follower prints its
			// events as they commit.
			r := startChild(t, e.dir, nil, "--config", e.config, "run", "--session", "s1", "what is 2+3")
			if code := r.wait(); code != cli.ExitOK {
				t.Fatalf("second run: exit %d\n%s", code, r.stderrText())
			}
			if ev := f.waitEvent("final"); !strings.Contains(string(ev.Data), "2+3 = 5") {
				t.Errorf("the follower's final: %s", ev.Data)
			}
			f.waitEvent("run_finished")
			f.signal(os.Interrupt)
			if code := f.wait(); code != cli.ExitOK {
				t.Errorf("the follower exited %d after Ctrl-C\n%s", code, f.stderrText())
			}
		})
	}
}

// Resolving from several processes at once: two people approving the same
// request — exactly one wins, the other is told who did and when; two
// people deciding different requests of one session — both succeed.
func TestProcessConcurrentResolutions(t *testing.T) {
	t.Parallel()
	testenv.SkipShort(t, "runs child processes")
	const trials = 20
	for i := range trials {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, `
models:
  s: {provider: scripted, script: ask.yaml}
agents:
  assistant:
    model: s
    tools: [calculator, clock]
    approval: {ask: [calculator, clock]}
`, map[string]string{"ask.yaml": "replies:\n  - tool_calls: [{name: calculator, arguments: {expression: \"1+1\"}}, {name: clock}]\n"})
			c := startChild(t, e.dir, nil, "--config", e.config, "run", "--session", "s1", "go")
			if code := c.wait(); code != cli.ExitWaiting {
				t.Fatalf("run: exit %d\n%s", code, c.stderrText())
			}
			reqs := approveCmdAll.FindAllStringSubmatch(c.stderrText(), -1)
			if len(reqs) != 2 {
				t.Fatalf("want two requests in:\n%s", c.stderrText())
			}
			// At the same moment: the first request from two people, the
			// second from a third.
			var ps [3]*child
			for j := range ps {
				req := reqs[0][2]
				if j == 2 {
					req = reqs[1][2]
				}
				ps[j] = startChild(t, e.dir, nil, "--config", e.config, "approve", "--no-resume", "--by", fmt.Sprint("person", j), "s1", req)
			}
			// A recorded decision exits 0, or 3 while the other request
			// still waits.
			recorded := func(code int) bool { return code == cli.ExitOK || code == cli.ExitWaiting }
			var won, lost int
			var loser string
			for _, p := range ps[:2] {
				switch code := p.wait(); {
				case recorded(code):
					won++
				case code == cli.ExitUsage:
					lost++
					loser = p.stderrText()
				}
			}
			if won != 1 || lost != 1 || !strings.Contains(loser, "was already resolved by person") {
				t.Fatalf("the same request twice: %d won, %d lost; the loser says:\n%s", won, lost, loser)
			}
			if code := ps[2].wait(); !recorded(code) {
				t.Fatalf("the other request: exit %d\n%s", code, ps[2].stderrText())
			}
			evs := parseEvents(t, newProcChild(t, e).mustOut("--config", e.config, "sessions", "events", "s1"))
			checkSeq(t, evs, 1)
			if n := len(ofType(evs, "input_resolved")); n != 2 {
				t.Errorf("%d input_resolved events, want 2", n)
			}
		})
	}
}

// approveCmdAll finds every "agentrt approve SESSION REQUEST" line.
var approveCmdAll = regexp.MustCompile(`agentrt (?:--\S+ \S+ )*approve (\S+) (\S+)`)
