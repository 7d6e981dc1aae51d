package cli_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentrt/agentrt/internal/cli"
	"github.com/agentrt/agentrt/internal/fakellm"
	"github.com/agentrt/agentrt/internal/testenv"
)

// These tests run the real agentrt binary, built once for the package, as
// separate processes sharing a SQLite file: what one process leaves in the
// store, the next picks up.

var (
	binDir    string // set by TestMain; removed when the tests end
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

func TestMain(m *testing.M) {
	if childMain() {
		return
	}
	dir, err := os.MkdirTemp("", "agentrt-cli-test-")
	if err != nil {
		panic(err)
	}
	binDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// binary returns the path of the agentrt binary, building it on first use
// (so that go test -run for the in-process tests alone builds nothing).
func binary(t *testing.T) string {
	t.Helper()
	testenv.SkipShort(t, "builds and runs the agentrt binary")
	buildOnce.Do(func() {
		gomod, err := exec.Command("go", "env", "GOMOD").Output()
		if err != nil {
			buildErr = err
			return
		}
		root := filepath.Dir(strings.TrimSpace(string(gomod)))
		binPath = filepath.Join(binDir, "agentrt")
		args := []string{"build", "-o", binPath}
		if raceEnabled {
			args = append(args, "-race")
		}
		cmd := exec.Command("go", append(args, "./cmd/agentrt")...)
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = errors.New("go build ./cmd/agentrt: " + err.Error() + "\n" + string(out))
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

// procTimeout bounds each child process, so that a hung child fails the
// test instead of stalling it until go test's own timeout.
const procTimeout = 90 * time.Second

// proc describes how to start agentrt: in dir, with extra environment.
type proc struct {
	t   *testing.T
	dir string
	env []string
}

func newProc(t *testing.T, dir string, env ...string) *proc {
	return &proc{t: t, dir: dir, env: env}
}

// command returns an agentrt command. The environment leaves out the
// provider keys and points OLLAMA_HOST nowhere, so the defaults pick the
// offline demo model unless p.env says otherwise.
func (p *proc) command(ctx context.Context, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, binary(p.t), args...)
	cmd.Dir = p.dir
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "OPENAI_") || strings.HasPrefix(k, "ANTHROPIC_") || strings.HasPrefix(k, "AGENTRT_") || strings.HasPrefix(k, "OLLAMA_") {
			continue
		}
		cmd.Env = append(cmd.Env, kv)
	}
	// Nothing listens on port 1: no local Ollama is found either.
	cmd.Env = append(cmd.Env, "OLLAMA_HOST=127.0.0.1:1")
	cmd.Env = append(cmd.Env, p.env...)
	return cmd
}

// run runs agentrt to completion.
func (p *proc) run(args ...string) result {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.t.Context(), procTimeout)
	defer cancel()
	cmd := p.command(ctx, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee) && ee.Exited():
	default:
		p.t.Fatalf("agentrt %s: %v\n%s", strings.Join(args, " "), err, errb.String())
	}
	return result{code: cmd.ProcessState.ExitCode(), out: out.String(), err: errb.String()}
}

// start starts agentrt, its stdout a pipe to read as it goes and its
// stderr kept.
func (p *proc) start(ctx context.Context, args ...string) (*exec.Cmd, io.ReadCloser, *bytes.Buffer) {
	p.t.Helper()
	cmd := p.command(ctx, args...)
	errb := new(bytes.Buffer)
	cmd.Stderr = errb
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		p.t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		p.t.Fatal(err)
	}
	return cmd, stdout, errb
}

func (p *proc) must(code int, args ...string) result {
	p.t.Helper()
	r := p.run(args...)
	if r.code != code {
		p.t.Fatalf("agentrt %s: want exit %d, got %v", strings.Join(args, " "), code, r)
	}
	return r
}

func TestProcessDefaults(t *testing.T) {
	t.Parallel()
	// An empty directory: no agentrt.yaml, so the built-in defaults, with
	// the store under ./.agentrt/.
	dir := t.TempDir()
	p := newProc(t, dir)
	r := p.must(cli.ExitOK, "run", "what is 21*2+5")
	if !strings.Contains(r.out, "[tool] calculator") || !strings.Contains(r.out, "21*2+5 = 47") {
		t.Errorf("stdout:\n%s", r.out)
	}
	if !strings.Contains(r.err, "offline demo model") {
		t.Errorf("stderr has no demo notice:\n%s", r.err)
	}
	if _, err := os.Stat(filepath.Join(dir, ".agentrt", "agentrt.db")); err != nil {
		t.Errorf("default store: %v", err)
	}
	// A second process finds the session in the default store.
	out := p.must(cli.ExitOK, "sessions", "list").out
	if lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n"); len(lines) != 2 || !strings.Contains(lines[1], " done ") {
		t.Errorf("sessions list:\n%s", out)
	}
}

// TestProcessOpenAICompatible runs the real binary with only
// OPENAI_BASE_URL set, against a local OpenAI-compatible server: the
// defaults pick it, and the turn goes through the wire format end to end.
func TestProcessOpenAICompatible(t *testing.T) {
	t.Parallel()
	srv := fakellm.Start(t)
	p := newProc(t, t.TempDir(), "OPENAI_BASE_URL="+srv.URL+"/v1", "OPENAI_MODEL=qwen3")
	r := p.must(cli.ExitOK, "run", "what is 21*2+5")
	if !strings.Contains(r.out, "[tool] calculator") || !strings.Contains(r.out, "The answer is 47.") {
		t.Errorf("stdout:\n%s", r.out)
	}
	if !strings.Contains(r.err, "OpenAI-compatible model qwen3 (OPENAI_BASE_URL is "+srv.URL+"/v1") {
		t.Errorf("stderr does not say which model was chosen:\n%s", r.err)
	}
	if n := len(srv.Requests()); n != 2 {
		t.Errorf("%d model requests, want 2", n)
	}
	// --json carries the usage of both calls.
	r = p.must(cli.ExitOK, "run", "--json", "what is 1+1")
	var last map[string]any
	lines := strings.Split(strings.TrimSpace(r.out), "\n")
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &last); err != nil {
		t.Fatal(err)
	}
	usage := last["data"].(map[string]any)["usage"].(map[string]any)
	if usage["input_tokens"] != 40.0 || usage["output_tokens"] != 20.0 {
		t.Errorf("run_finished usage %v", usage)
	}
}

func TestProcessApprovalAcrossProcesses(t *testing.T) {
	t.Parallel()
	// The script is chosen by an environment variable: the first process
	// has only the tool call, the second answers from its result (a
	// script plays the reply that follows the conversation, so its first
	// reply, the call, is not played again). Both read the same config
	// file. TestProcessApprovalOneScript does it with one script.
	e := newEnv(t, `
models:
  s: {provider: scripted, script: "${AGENTRT_TEST_SCRIPT}"}
agents:
  deployer:
    model: s
    tools: [calculator]
    approval: {ask: [calculator]}
`, map[string]string{
		"ask.yaml": `
replies:
  - tool_calls: [{name: calculator, arguments: {expression: "6*7"}}]
`,
		"answer.yaml": `
replies:
  - tool_calls: [{name: calculator, arguments: {expression: "6*7"}}]
  - text: "deployed 42 replicas"
    expect: {last_tool_result_contains: '"result":42'}
`,
	})
	first := newProc(t, e.dir, "AGENTRT_TEST_SCRIPT=ask.yaml")
	second := newProc(t, e.dir, "AGENTRT_TEST_SCRIPT=answer.yaml")

	sid, req := pendingApproval(t, first.must(cli.ExitWaiting, "--config", e.config, "run", "deploy"))
	r := second.must(cli.ExitOK, "--config", e.config, "approve", sid, req)
	if !strings.Contains(r.out, "deployed 42 replicas") {
		t.Errorf("approve stdout lacks the answer:\n%s", r.out)
	}

	evs := parseEvents(t, second.must(cli.ExitOK, "--config", e.config, "sessions", "events", sid).out)
	checkSeq(t, evs, 1)
	index := func(typ string) int {
		for i, e := range evs {
			if e.Type == typ {
				return i
			}
		}
		t.Fatalf("no %s event in %v", typ, types(evs))
		return -1
	}
	required, resolved, toolResult := index("input_required"), index("input_resolved"), index("tool_result")
	if !(required < resolved && resolved < toolResult) {
		t.Errorf("want input_required, input_resolved, tool_result in that order, got %v", types(evs))
	}
	if d := data(t, evs[toolResult]); d["ok"] != true || d["name"] != "calculator" {
		t.Errorf("tool_result: %s", evs[toolResult].Data)
	}
	if last := evs[len(evs)-1]; last.Type != "run_finished" || data(t, last)["status"] != "done" {
		t.Errorf("last event: %s %s", last.Type, last.Data)
	}
}

func TestProcessCrashAndResume(t *testing.T) {
	t.Parallel()
	// The first process calls the calculator, then waits an hour on its
	// second model call and is killed there. The second process, on the
	// same store, resumes the session with a script whose second reply is
	// the answer.
	e := newEnv(t, `
models:
  s: {provider: scripted, script: crash.yaml}
agents:
  assistant:
    model: s
    tools: [calculator]
`, map[string]string{
		"crash.yaml": `
replies:
  - tool_calls: [{name: calculator, arguments: {expression: "6*7"}}]
  - text: "never said"
    delay: 1h
`,
		"resume.yaml": `
replies:
  - tool_calls: [{name: calculator, arguments: {expression: "6*7"}}]
  - text: "recovered: 42"
    expect: {last_tool_result_contains: '"result":42'}
`,
	})
	resumeConfig := filepath.Join(e.dir, "resume-agentrt.yaml")
	config, err := os.ReadFile(e.config)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, resumeConfig, strings.Replace(string(config), "crash.yaml", "resume.yaml", 1))
	p := newProc(t, e.dir)

	killAtSecondModelCall(t, p, "--config", e.config, "run", "--json", "--session", "s1", "go")

	if out := p.must(cli.ExitOK, "--config", resumeConfig, "sessions", "show", "s1").out; !strings.Contains(out, "status   running") {
		t.Errorf("after the kill the session should still be running:\n%s", out)
	}
	r := p.must(cli.ExitOK, "--config", resumeConfig, "resume", "s1")
	if !strings.Contains(r.out, "[run] resumed (recovered)") || !strings.Contains(r.out, "recovered: 42") {
		t.Errorf("resume stdout:\n%s", r.out)
	}

	evs := parseEvents(t, p.must(cli.ExitOK, "--config", resumeConfig, "sessions", "events", "s1").out)
	checkSeq(t, evs, 1) // no gap, no duplicate
	resumed := ofType(evs, "run_resumed")
	if len(resumed) != 1 || data(t, resumed[0])["reason"] != "recovered" {
		t.Errorf("want one run_resumed with reason recovered, got %v", types(evs))
	}
	calls, results := ofType(evs, "tool_call"), ofType(evs, "tool_result")
	if len(calls) != 1 || len(results) != 1 {
		t.Fatalf("want one tool_call and one tool_result, got %v", types(evs))
	}
	if c, r := data(t, calls[0]), data(t, results[0]); c["call_id"] != r["call_id"] || r["name"] != "calculator" || r["ok"] != true {
		t.Errorf("tool_call %s, tool_result %s", calls[0].Data, results[0].Data)
	}
	if fin := ofType(evs, "final"); len(fin) != 1 || data(t, fin[0])["text"] != "recovered: 42" {
		t.Errorf("final: %v", fin)
	}
}

// killAtSecondModelCall starts agentrt with args (which must include
// --json), reads its events as they come and kills it with SIGKILL when
// the second model_started event arrives. Events are printed after they
// are committed, so everything up to that event is in the store.
func killAtSecondModelCall(t *testing.T, p *proc, args ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), procTimeout)
	defer cancel()
	cmd, stdout, errb := p.start(ctx, args...)
	var seen []string
	modelCalls := 0
	sc := bufio.NewScanner(stdout)
	for modelCalls < 2 && sc.Scan() {
		var e event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Errorf("not a JSON event: %q", sc.Text())
			continue
		}
		seen = append(seen, e.Type)
		if e.Type == "model_started" {
			modelCalls++
		}
	}
	if modelCalls == 2 {
		if err := cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
	}
	_, _ = io.Copy(io.Discard, stdout) // until the pipe closes
	err := cmd.Wait()
	if modelCalls < 2 {
		t.Fatalf("agentrt ended (%v) before its second model call; events %v\nstderr:\n%s", err, seen, errb.String())
	}
	if ws, ok := cmd.ProcessState.Sys().(interface{ Signaled() bool }); ok && !ws.Signaled() {
		t.Fatalf("agentrt was not killed: %v\nstderr:\n%s", cmd.ProcessState, errb.String())
	}
	if !slices.Contains(seen, "tool_result") {
		t.Errorf("killed before the tool ran; events %v", seen)
	}
}

// A process killed while a sub-agent works: the parent is resumed, which
// resumes the child where it was; the child's calculator call, whose
// result was stored, is not run again.
func TestProcessKillDuringDelegation(t *testing.T) {
	t.Parallel()
	p, resumeConfig, child := killDuringDelegation(t)
	r := p.must(cli.ExitOK, "--config", resumeConfig, "resume", "p1")
	if !strings.Contains(r.out, "[subagent] researcher resumed") || !strings.Contains(r.out, "the researcher says 42") {
		t.Errorf("resume stdout:\n%s", r.out)
	}
	cevs := parseEvents(t, p.must(cli.ExitOK, "--config", resumeConfig, "sessions", "events", child).out)
	checkSeq(t, cevs, 1)
	if rs := ofType(cevs, "run_resumed"); len(rs) != 1 || data(t, rs[0])["reason"] != "recovered" {
		t.Errorf("child: %v", types(cevs))
	}
	if n := len(ofType(cevs, "tool_result")); n != 1 {
		t.Errorf("child: %d tool results, want 1 (the calculator not run again)", n)
	}
	pevs := parseEvents(t, p.must(cli.ExitOK, "--config", resumeConfig, "sessions", "events", "p1").out)
	checkSeq(t, pevs, 1)
	if fin := ofType(pevs, "subagent_finished"); len(fin) != 1 || data(t, fin[0])["answer"] != "42" {
		t.Errorf("parent: %v", types(pevs))
	}
}
