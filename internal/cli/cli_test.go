package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/internal/app"
	"github.com/agentrt/agentrt/internal/cli"
	"github.com/agentrt/agentrt/internal/mcptest"
	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/model/demo"
	"github.com/agentrt/agentrt/model/scripted"
	"github.com/agentrt/agentrt/tool"
)

// These tests drive the CLI in-process through cli.MainWith. Each test has
// its own directory (config, scripts, SQLite store); none changes the
// working directory, which is process-wide.

// result is what one CLI invocation left behind.
type result struct {
	code     int
	out, err string
}

func (r result) String() string {
	return fmt.Sprintf("exit %d\n--- stdout:\n%s--- stderr:\n%s", r.code, r.out, r.err)
}

// agentrt runs the CLI in-process with args.
func agentrt(t *testing.T, opts app.Options, args ...string) result {
	t.Helper()
	var out, errb bytes.Buffer
	code := cli.MainWith(t.Context(), args, cli.Streams{In: strings.NewReader(""), Out: &out, Err: &errb}, opts)
	return result{code: code, out: out.String(), err: errb.String()}
}

// env is a directory with an agentrt.yaml whose store is a SQLite file in
// the same directory.
type env struct {
	t      *testing.T
	dir    string
	config string
	opts   app.Options
}

// newEnv writes config (without its store line, which newEnv adds) and
// files (name -> content) into a fresh directory.
func newEnv(t *testing.T, config string, files map[string]string) *env {
	t.Helper()
	return newEnvStore(t, "", config, files)
}

// newEnvStore is newEnv with the store given (a SQLite file in the
// directory when store is empty).
func newEnvStore(t *testing.T, store, config string, files map[string]string) *env {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		writeFile(t, filepath.Join(dir, name), content)
	}
	if store == "" {
		store = "sqlite:" + filepath.Join(dir, "agentrt.db")
	}
	path := filepath.Join(dir, "agentrt.yaml")
	writeFile(t, path, "store: "+strconv.Quote(store)+"\n"+config)
	return &env{t: t, dir: dir, config: path}
}

// run runs the CLI with --config pointing at the env's config.
func (e *env) run(args ...string) result {
	e.t.Helper()
	return agentrt(e.t, e.opts, append([]string{"--config", e.config}, args...)...)
}

// must runs the CLI and fails the test unless it exits with code.
func (e *env) must(code int, args ...string) result {
	e.t.Helper()
	r := e.run(args...)
	if r.code != code {
		e.t.Fatalf("agentrt %s: want exit %d, got %v", strings.Join(args, " "), code, r)
	}
	return r
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// demoConfig is an assistant (the default agent, with the calculator and
// clock) on the offline demo model.
const demoConfig = "models:\n  demo: {provider: demo}\n"

// event is the part of an event line the tests look at.
type event struct {
	Seq       int64           `json:"seq"`
	SessionID string          `json:"session_id"`
	RunID     string          `json:"run_id"`
	Agent     string          `json:"agent"`
	Type      string          `json:"type"`
	Data      json.RawMessage `json:"data"`
}

// parseEvents parses one JSON event per line; every line must be one.
func parseEvents(t *testing.T, out string) []event {
	t.Helper()
	var evs []event
	for i, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		var e event
		if err := json.Unmarshal([]byte(line), &e); err != nil || !strings.HasPrefix(line, "{") {
			t.Fatalf("line %d is not a JSON event: %q (%v)", i+1, line, err)
		}
		if e.Type == "" {
			t.Fatalf("line %d has no type: %q", i+1, line)
		}
		evs = append(evs, e)
	}
	return evs
}

// checkSeq checks that the events with a seq number run from first with
// no gap and no repeat, and that only live events (token,
// tool_call_delta) have none.
func checkSeq(t *testing.T, evs []event, first int64) {
	t.Helper()
	want := first
	for _, e := range evs {
		if e.Seq == 0 {
			if e.Type != "token" && e.Type != "tool_call_delta" {
				t.Errorf("%s event without seq", e.Type)
			}
			continue
		}
		if e.Seq != want {
			t.Fatalf("event %s has seq %d, want %d (events: %v)", e.Type, e.Seq, want, types(evs))
		}
		want++
	}
	if want == first {
		t.Fatal("no event with a seq")
	}
}

func types(evs []event) []string {
	var ts []string
	for _, e := range evs {
		ts = append(ts, e.Type)
	}
	return ts
}

func ofType(evs []event, typ string) []event {
	var out []event
	for _, e := range evs {
		if e.Type == typ {
			out = append(out, e)
		}
	}
	return out
}

// data decodes an event's data into a map.
func data(t *testing.T, e event) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(e.Data, &m); err != nil {
		t.Fatalf("%s data: %v", e.Type, err)
	}
	return m
}

// approveCmd finds "agentrt approve SESSION REQUEST" in the message of a
// run that waits for approval.
var approveCmd = regexp.MustCompile(`agentrt (?:--\S+ \S+ )*approve (\S+) (\S+)`)

func pendingApproval(t *testing.T, r result) (sessionID, requestID string) {
	t.Helper()
	m := approveCmd.FindStringSubmatch(r.err)
	if m == nil {
		t.Fatalf("stderr does not say how to approve: %v", r)
	}
	return m[1], m[2]
}

// counter is an extra tool, deploy, that counts its runs, so a test can
// see that a rejected call never ran.
func counter(n *atomic.Int32) tool.Tool {
	return tool.Must(tool.New("deploy", "deploys the service to a target", func(_ context.Context, in struct {
		Target string `json:"target"`
	}) (string, error) {
		n.Add(1)
		return "deployed to " + in.Target, nil
	}))
}

func TestRunDefaultsCalculator(t *testing.T) {
	// No --config: the built-in defaults, read from the working directory,
	// which is this package's and has no agentrt.yaml.
	if _, err := os.Stat("agentrt.yaml"); err == nil {
		t.Fatal("internal/cli/agentrt.yaml exists; this test needs the built-in defaults")
	}
	// The defaults must pick the offline demo model whatever the
	// environment holds.
	for _, k := range []string{"OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY"} {
		t.Setenv(k, "")
	}
	t.Setenv("OLLAMA_HOST", "127.0.0.1:1") // nothing listens there
	store := "sqlite:" + filepath.Join(t.TempDir(), "a.db")

	t.Run("human", func(t *testing.T) {
		r := agentrt(t, app.Options{}, "--store", store, "run", "what is 21*2+5")
		if r.code != cli.ExitOK {
			t.Fatalf("want exit 0, got %v", r)
		}
		for _, want := range []string{`[tool] calculator {"expression":"21*2+5"}`, `[tool] calculator ok: `, `"result":47`, "21*2+5 = 47\n"} {
			if !strings.Contains(r.out, want) {
				t.Errorf("stdout lacks %q:\n%s", want, r.out)
			}
		}
		if !strings.Contains(r.err, "offline demo model") || !strings.Contains(r.err, "agentrt --store "+store+" run --session ") {
			t.Errorf("stderr lacks the demo notice or how to continue:\n%s", r.err)
		}
	})

	t.Run("json", func(t *testing.T) {
		r := agentrt(t, app.Options{}, "--store", store, "run", "--json", "what is 21*2+5")
		if r.code != cli.ExitOK {
			t.Fatalf("want exit 0, got %v", r)
		}
		evs := parseEvents(t, r.out)
		checkSeq(t, evs, 1)
		for _, typ := range []string{"run_started", "tool_call", "tool_result", "final", "run_finished"} {
			if len(ofType(evs, typ)) == 0 {
				t.Errorf("no %s event in %v", typ, types(evs))
			}
		}
		if got := evs[0].Type; got != "run_started" {
			t.Errorf("first event is %s, want run_started", got)
		}
		if got := evs[len(evs)-1].Type; got != "run_finished" {
			t.Errorf("last event is %s, want run_finished", got)
		}
		for _, e := range evs {
			if e.SessionID != evs[0].SessionID {
				t.Fatalf("events of two sessions: %q and %q", evs[0].SessionID, e.SessionID)
			}
		}
		if res := ofType(evs, "tool_result"); len(res) == 1 {
			d := data(t, res[0])
			if d["ok"] != true || d["name"] != "calculator" || !strings.Contains(string(res[0].Data), `"result":47`) {
				t.Errorf("tool_result: %s", res[0].Data)
			}
		}
		if fin := ofType(evs, "final"); len(fin) == 1 && data(t, fin[0])["text"] != "21*2+5 = 47" {
			t.Errorf("final: %s", fin[0].Data)
		}
		if fin := ofType(evs, "run_finished"); len(fin) == 1 && data(t, fin[0])["status"] != "done" {
			t.Errorf("run_finished: %s", fin[0].Data)
		}
		if strings.Contains(r.err, "continue with") {
			t.Errorf("--json prints the continue hint:\n%s", r.err)
		}
	})
}

func TestUsageErrors(t *testing.T) {
	t.Parallel()
	e := newEnv(t, demoConfig, nil)
	e.must(cli.ExitOK, "run", "--session", "s1", "what is 1+1")
	missing := filepath.Join(e.dir, "missing.yaml")

	tests := []struct {
		name string
		args []string
		want string // part of the message
	}{
		{"unknown flag", []string{"run", "--bogus", "hi"}, "unknown flag: --bogus"},
		{"missing text", []string{"run"}, "requires at least 1 arg"},
		{"empty text", []string{"run", "  "}, "the input text is empty"},
		{"bad approve mode", []string{"run", "--approve", "bogus", "hi"}, `--approve must be ask, auto or deny, not "bogus"`},
		{"unknown agent", []string{"run", "--agent", "nope", "hi"}, `unknown agent "nope"`},
		{"resume unknown session", []string{"resume", "nosuch"}, `session "nosuch" not found`},
		{"resume with --session", []string{"resume", "--session", "nosuch"}, "unknown flag: --session"},
		{"resume without session", []string{"resume"}, "accepts 1 arg"},
		{"resume finished session", []string{"resume", "s1"}, "nothing to resume"},
		{"approve unknown request", []string{"approve", "s1", "req_nope"}, `no pending request "req_nope"`},
		{"approve unknown session", []string{"approve", "nosuch", "req_nope"}, `session "nosuch" not found`},
		{"approve args and reject", []string{"approve", "--reject", "--args", "{}", "s1", "r"}, "--args cannot be used with --reject"},
		{"show unknown session", []string{"sessions", "show", "nosuch"}, `session "nosuch" not found`},
		{"events unknown session", []string{"sessions", "events", "nosuch"}, `session "nosuch" not found`},
		{"events negative after", []string{"sessions", "events", "s1", "--after", "-1"}, `--after wants a seq number (0 or more), not "-1"`},
		{"events bad after", []string{"sessions", "events", "s1", "--after", "abc"}, `--after wants a seq number (0 or more), not "abc"`},
		{"delete unknown session", []string{"sessions", "delete", "nosuch"}, `session "nosuch" not found`},
		{"replay unknown session", []string{"replay", "nosuch"}, `session "nosuch" not found`},
		{"tools unknown agent", []string{"tools", "--agent", "nope"}, `unknown agent "nope"`},
		{"unknown command", []string{"frobnicate"}, `unknown command "frobnicate"`},
		{"unknown sessions command", []string{"sessions", "frobnicate"}, `unknown command "frobnicate"`},
		{"misspelled command", []string{"sesions", "list"}, `unknown command "sesions" for "agentrt"; did you mean sessions?`},
		{"missing config file", []string{"--config", missing, "run", "hi"}, "config file " + missing + " does not exist"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := e.run(tt.args...)
			if r.code != cli.ExitUsage {
				t.Fatalf("want exit %d, got %v", cli.ExitUsage, r)
			}
			// One line, and for cobra's argument and flag errors a second
			// with the command's usage.
			msg, usage, _ := strings.Cut(strings.TrimSuffix(r.err, "\n"), "\n")
			if strings.Contains(usage, "\n") || !strings.HasPrefix(msg, "agentrt: ") || !strings.Contains(msg, tt.want) {
				t.Errorf("want a line on stderr starting %q and containing %q, got:\n%s", "agentrt: ", tt.want, r.err)
			}
			cobraArgs := strings.Contains(tt.want, "unknown flag") || strings.Contains(tt.want, " arg")
			if cobraArgs != (usage != "") || usage != "" && !strings.HasPrefix(usage, "usage: agentrt "+tt.args[0]) {
				t.Errorf("usage line %q (want one for cobra's argument errors only, naming the command)", usage)
			}
		})
	}
}

func TestModelErrorFails(t *testing.T) {
	t.Parallel()
	e := newEnv(t, `
models:
  s: {provider: scripted, script: broken.yaml}
agents:
  assistant: {model: s}
`, map[string]string{"broken.yaml": "replies:\n  - error: upstream exploded\n"})
	r := e.must(cli.ExitFailed, "run", "--session", "f1", "hi")
	if !strings.Contains(r.err, "upstream exploded") {
		t.Errorf("stderr does not say why the run failed:\n%s", r.err)
	}
	if last := lastLine(r.err); !strings.HasPrefix(last, "agentrt: ") || !strings.Contains(last, "run failed") {
		t.Errorf("last stderr line: %q", last)
	}
	if r := e.must(cli.ExitOK, "sessions", "show", "f1"); !strings.Contains(r.out, "status   failed") {
		t.Errorf("sessions show:\n%s", r.out)
	}
}

func TestModelFallbackShown(t *testing.T) {
	t.Parallel()
	e := newEnv(t, `
models:
  primary: {provider: scripted, script: primary.yaml}
  backup: {provider: scripted, script: backup.yaml, price: {input: 1000, output: 2000}}
agents:
  assistant: {model: primary, fallback_models: [backup]}
`, map[string]string{
		"primary.yaml": "replies:\n  - {error: key revoked, error_code: auth}\n",
		"backup.yaml":  "replies:\n  - {text: from the backup, usage: {input_tokens: 10, output_tokens: 5}}\n",
	})
	r := e.must(cli.ExitOK, "run", "--session", "fb", "hi")
	if !strings.Contains(r.err, "[model] primary attempt 1 failed (auth): ") || !strings.Contains(r.err, "key revoked") {
		t.Errorf("stderr does not show the failed attempt:\n%s", r.err)
	}
	if !strings.Contains(r.out, "[model] backup, attempt 2") || !strings.Contains(r.out, "from the backup") {
		t.Errorf("stdout:\n%s", r.out)
	}
	show := e.must(cli.ExitOK, "sessions", "show", "fb").out
	if !strings.Contains(show, "$0.020000") {
		t.Errorf("sessions show lacks the cost (10*1000+5*2000)/1e6:\n%s", show)
	}
	replay := e.must(cli.ExitOK, "replay", "fb").out
	if !strings.Contains(replay, "primary attempt 1: auth: ") {
		t.Errorf("replay lacks the failed attempt:\n%s", replay)
	}
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSuffix(s, "\n"), "\n")
	return lines[len(lines)-1]
}

func TestMaxRoundsPausesThenResumes(t *testing.T) {
	t.Parallel()
	e := newEnv(t, `
models:
  s: {provider: demo}  # replaced by opts.Models
agents:
  looper:
    model: s
    tools: [calculator]
    limits: {max_rounds: 1}
`, nil)
	// One model instance for every MainWith call, so that the script goes
	// on where it stopped, as a real model's conversation would.
	e.opts.Models = map[string]model.Model{"s": scripted.New("s",
		scripted.Reply{ToolCalls: []scripted.Call{scripted.ToolCall("calculator", `{"expression":"1+1"}`)}},
		scripted.Reply{Text: "1+1 is 2", Expect: &scripted.Expect{LastToolResultContains: `"result":2`}},
	)}
	r := e.must(cli.ExitPaused, "run", "--session", "p1", "keep adding")
	if !strings.Contains(r.err, "agentrt --config "+e.config+" resume p1") {
		t.Errorf("stderr does not say how to resume:\n%s", r.err)
	}
	if r := e.must(cli.ExitOK, "sessions", "show", "p1"); !strings.Contains(r.out, "status   paused") {
		t.Errorf("sessions show:\n%s", r.out)
	}
	r = e.must(cli.ExitOK, "resume", "p1")
	if !strings.Contains(r.out, "[run] resumed (resume)") || !strings.Contains(r.out, "1+1 is 2") {
		t.Errorf("resume stdout:\n%s", r.out)
	}
}

func TestApprovalAskThenApprove(t *testing.T) {
	t.Parallel()
	e := newEnv(t, `
models:
  s: {provider: demo}  # replaced by opts.Models
agents:
  deployer:
    model: s
    tools: [calculator]
    approval: {ask: [calculator]}
`, nil)
	e.opts.Models = map[string]model.Model{"s": scripted.New("s",
		scripted.Reply{ToolCalls: []scripted.Call{scripted.ToolCall("calculator", `{"expression":"6*7"}`)}},
		scripted.Reply{Text: "6*7 is 42", Expect: &scripted.Expect{LastToolResultContains: `"result":42`}},
	)}
	r := e.must(cli.ExitWaiting, "run", "--session", "a1", "deploy")
	sid, req := pendingApproval(t, r)
	if sid != "a1" {
		t.Errorf("approve names session %q, want a1", sid)
	}
	if !strings.Contains(r.out, "[approval] ") || !strings.Contains(r.out, req) {
		t.Errorf("stdout does not show the approval request:\n%s", r.out)
	}
	show := e.must(cli.ExitOK, "sessions", "show", "a1").out
	for _, want := range []string{"status   waiting", "pending  " + req + " (approval, asked ",
		`Allow calculator with arguments {"expression":"6*7"}?`, "agentrt --config " + e.config + " approve a1 " + req} {
		if !strings.Contains(show, want) {
			t.Errorf("sessions show lacks %q:\n%s", want, show)
		}
	}

	r = e.must(cli.ExitOK, "approve", "--by", "ana", sid, req)
	for _, want := range []string{`[tool] calculator ok: {"expression":"6*7","result":42}`, "6*7 is 42"} {
		if !strings.Contains(r.out, want) {
			t.Errorf("approve stdout lacks %q:\n%s", want, r.out)
		}
	}
	show = e.must(cli.ExitOK, "sessions", "show", "a1").out
	for _, want := range []string{"status   done", "answer   6*7 is 42"} {
		if !strings.Contains(show, want) {
			t.Errorf("sessions show lacks %q:\n%s", want, show)
		}
	}
	// The request is resolved: approving it again is bad usage, and says
	// who resolved it and when.
	if r := e.run("approve", sid, req); r.code != cli.ExitUsage || !strings.Contains(r.err, "was already resolved by ana at ") {
		t.Errorf("second approve: want exit 2 and already resolved, got %v", r)
	}

	evs := parseEvents(t, e.must(cli.ExitOK, "sessions", "events", "a1").out)
	checkSeq(t, evs, 1)
	res := ofType(evs, "input_resolved")
	if len(res) != 1 {
		t.Fatalf("want one input_resolved, got %v", types(evs))
	}
	d := data(t, res[0])
	if diff := cmp.Diff(map[string]any{"request_id": req, "kind": "approval", "decision": "approve", "by": "ana"}, d); diff != "" {
		t.Errorf("input_resolved data (-want +got):\n%s", diff)
	}
}

func TestApproveReject(t *testing.T) {
	t.Parallel()
	e := newEnv(t, `
models:
  s: {provider: demo}  # replaced by opts.Models
agents:
  deployer:
    model: s
    tools: [deploy]
    approval: {ask: [deploy]}
`, nil)
	var runs atomic.Int32
	e.opts.ExtraTools = []tool.Tool{counter(&runs)}
	e.opts.Models = map[string]model.Model{"s": scripted.New("s",
		scripted.Reply{ToolCalls: []scripted.Call{scripted.ToolCall("deploy", `{"target":"prod"}`)}},
		// The model must be told that the user rejected the call, and why.
		scripted.Reply{Text: "not deployed, as you wish", Expect: &scripted.Expect{LastToolResultContains: "rejected this call: no"}},
	)}
	sid, req := pendingApproval(t, e.must(cli.ExitWaiting, "run", "--session", "r1", "deploy to prod"))
	r := e.must(cli.ExitOK, "approve", "--reject", "--reason", "no", sid, req)
	if !strings.Contains(r.out, "not deployed, as you wish") || !strings.Contains(r.out, `[tool] deploy {"target":"prod"} not run: the user rejected this call: no`) {
		t.Errorf("approve --reject stdout:\n%s", r.out)
	}
	if n := runs.Load(); n != 0 {
		t.Errorf("the rejected tool ran %d times", n)
	}
	evs := parseEvents(t, e.must(cli.ExitOK, "sessions", "events", sid).out)
	checkSeq(t, evs, 1)
	if res := ofType(evs, "input_resolved"); len(res) != 1 {
		t.Errorf("want one input_resolved, got %v", types(evs))
	} else if d := data(t, res[0]); d["decision"] != "reject" || d["reason"] != "no" {
		t.Errorf("input_resolved: %s", res[0].Data)
	}
}

func TestRunApproveModes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		mode   string
		expect string // what the model must see in the tool result
		runs   int32
	}{
		{mode: "auto", expect: "deployed to prod", runs: 1},
		{mode: "deny", expect: "the user rejected this call", runs: 0},
	}
	for _, tt := range tests {
		t.Run(tt.mode, func(t *testing.T) {
			t.Parallel()
			script := fmt.Sprintf(`
replies:
  - tool_calls: [{name: deploy, arguments: {target: prod}}]
  - text: "answered after %s"
    expect: {last_tool_result_contains: %q}
`, tt.mode, tt.expect)
			e := newEnv(t, `
models:
  s: {provider: scripted, script: deploy.yaml}
agents:
  deployer:
    model: s
    tools: [deploy]
    approval: {ask: [deploy]}
`, map[string]string{"deploy.yaml": script})
			var runs atomic.Int32
			e.opts.ExtraTools = []tool.Tool{counter(&runs)}
			r := e.must(cli.ExitOK, "run", "--approve", tt.mode, "--session", "m1", "deploy to prod")
			if !strings.Contains(r.out, "answered after "+tt.mode) {
				t.Errorf("stdout:\n%s", r.out)
			}
			if got := runs.Load(); got != tt.runs {
				t.Errorf("deploy ran %d times, want %d", got, tt.runs)
			}
			evs := parseEvents(t, e.must(cli.ExitOK, "sessions", "events", "m1").out)
			checkSeq(t, evs, 1)
			want := map[string]string{"auto": "approve", "deny": "reject"}[tt.mode]
			if res := ofType(evs, "input_resolved"); len(res) != 1 || data(t, res[0])["decision"] != want {
				t.Errorf("want one input_resolved with decision %s, got %v", want, res)
			}
		})
	}
}

func TestConfigCheck(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	check := func(t *testing.T, yaml string) (string, result) {
		t.Helper()
		path := filepath.Join(dir, strings.ReplaceAll(t.Name(), "/", "_")+".yaml")
		writeFile(t, path, yaml)
		return path, agentrt(t, app.Options{}, "--config", path, "config", "check")
	}

	t.Run("valid", func(t *testing.T) {
		path, r := check(t, "models:\n  m: {provider: demo}\nagents:\n  a:\n    model: m\n    tools: [calculator, clock]\n    timeouts: {idle: 60s}\n")
		if r.code != cli.ExitOK || r.out != path+": ok (1 agent, 1 model)\n" {
			t.Errorf("want exit 0 and %q, got %v", path+": ok (1 agent, 1 model)", r)
		}
	})
	t.Run("valid, counted in words", func(t *testing.T) {
		path, r := check(t, "models:\n  m: {provider: demo}\n  n: {provider: demo}\nagents:\n  a: {model: m}\n  b: {model: n}\n")
		if want := path + ": ok (2 agents, 2 models)\n"; r.code != cli.ExitOK || r.out != want {
			t.Errorf("want exit 0 and %q, got %v", want, r)
		}
	})

	tests := []struct {
		name string
		yaml string
		at   string // line:col: key path
		want string // part of the message
	}{
		{
			name: "unknown key",
			yaml: "models:\n  m: {provider: demo}\nagents:\n  a:\n    model: m\n    tools: [calculator]\n    colour: red\n",
			at:   "7:5: agents.a.colour", want: "unknown key",
		},
		{
			name: "bad duration",
			yaml: "models:\n  m: {provider: demo}\nagents:\n  a:\n    model: m\n    timeouts: {idle: 5 parsecs}\n",
			at:   "6:22: agents.a.timeouts.idle", want: `bad duration "5 parsecs"`,
		},
		{
			name: "missing model",
			yaml: "models:\n  m: {provider: demo}\nagents:\n  a:\n    model: nosuch\n",
			at:   "5:12: agents.a.model", want: `unknown model "nosuch"`,
		},
		{
			name: "tool matches nothing",
			yaml: "models:\n  m: {provider: demo}\nagents:\n  a:\n    model: m\n    tools: [calculator, calculater]\n",
			at:   "6:25: agents.a.tools[1]", want: `"calculater" matches no tool`,
		},
		{
			name: "approval matches nothing",
			yaml: "models:\n  m: {provider: demo}\nagents:\n  a:\n    model: m\n    tools: [calculator]\n    approval: {ask: [deploy]}\n",
			at:   "7:22: agents.a.approval.ask[0]", want: `"deploy" matches no tool`,
		},
		{
			name: "unknown provider",
			yaml: "models:\n  m: {provider: openia, model: x}\nagents:\n  a:\n    model: m\n",
			at:   "2:17: models.m.provider", want: `unknown provider "openia"; did you mean openai?`,
		},
		{
			name: "missing key",
			yaml: "models:\n  m: {provider: anthropic, model: claude-sonnet-4-5, api_key: \"${AGENTRT_TEST_UNSET_KEY}\"}\n  d: {provider: demo}\nagents:\n  a:\n    model: d\n",
			at:   "2:54: models.m.api_key", want: "${AGENTRT_TEST_UNSET_KEY} is not set",
		},
		{
			name: "bad url",
			yaml: "models:\n  m: {provider: openai, model: x, base_url: \"ftp://127.0.0.1/v1\"}\nagents:\n  a:\n    model: m\n",
			at:   "2:45: models.m.base_url", want: "ftp",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path, r := check(t, tt.yaml)
			if r.code != cli.ExitUsage {
				t.Fatalf("want exit 2, got %v", r)
			}
			if prefix := "agentrt: " + path + ":" + tt.at + ": "; !strings.HasPrefix(r.err, prefix) || !strings.Contains(r.err, tt.want) {
				t.Errorf("want stderr starting %q and containing %q, got:\n%s", prefix, tt.want, r.err)
			}
		})
	}
}

func TestSessionsCommands(t *testing.T) {
	t.Parallel()
	e := newEnv(t, demoConfig, nil)
	e.must(cli.ExitOK, "run", "--session", "s1", "what is 21*2+5")
	e.must(cli.ExitOK, "run", "--session", "s2", "what is 1+1")

	evs := parseEvents(t, e.must(cli.ExitOK, "sessions", "events", "s1").out)
	checkSeq(t, evs, 1)
	n := len(evs) // the demo model does not stream tool calls; its text tokens are not stored
	if n < 8 {
		t.Fatalf("only %d events: %v", n, types(evs))
	}

	t.Run("list", func(t *testing.T) {
		out := e.must(cli.ExitOK, "sessions", "list").out
		lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
		if len(lines) != 3 || !strings.HasPrefix(lines[0], "ID ") {
			t.Fatalf("want a header and two sessions:\n%s", out)
		}
		var s1 []string
		for _, l := range lines[1:] {
			if f := strings.Fields(l); f[0] == "s1" {
				s1 = f[:5]
			}
		}
		if diff := cmp.Diff([]string{"s1", "assistant", "done", "1", strconv.Itoa(n)}, s1); diff != "" {
			t.Errorf("s1 row (-want +got):\n%s", diff)
		}
	})

	t.Run("show", func(t *testing.T) {
		out := e.must(cli.ExitOK, "sessions", "show", "s1").out
		for _, want := range []string{"session  s1\n", "agent    assistant\n", "status   done\n", "turn     1\n", fmt.Sprintf("events   %d\n", n), "answer   21*2+5 = 47\n"} {
			if !strings.Contains(out, want) {
				t.Errorf("sessions show lacks %q:\n%s", want, out)
			}
		}
		m := regexp.MustCompile(`usage    (\d+) input, (\d+) output tokens`).FindStringSubmatch(out)
		if m == nil || m[1] == "0" || m[2] == "0" {
			t.Errorf("sessions show has no usage:\n%s", out)
		}
	})

	t.Run("events after", func(t *testing.T) {
		after := parseEvents(t, e.must(cli.ExitOK, "sessions", "events", "s1", "--after", "5").out)
		checkSeq(t, after, 6)
		if diff := cmp.Diff(types(evs[5:]), types(after)); diff != "" {
			t.Errorf("events after 5 (-want +got):\n%s", diff)
		}
		if out := e.must(cli.ExitOK, "sessions", "events", "s1", "--after", strconv.Itoa(n)).out; out != "" {
			t.Errorf("events after the last: %q", out)
		}
	})

	t.Run("replay", func(t *testing.T) {
		out := e.must(cli.ExitOK, "replay", "s1").out
		lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
		if len(lines) != n {
			t.Fatalf("want %d timeline lines, got %d:\n%s", n, len(lines), out)
		}
		for i, l := range lines {
			f := strings.Fields(l)
			if len(f) < 4 || f[0] != strconv.Itoa(i+1) || f[3] != evs[i].Type {
				t.Errorf("line %d: want seq %d and type %s, got %q", i+1, i+1, evs[i].Type, l)
			}
		}
		if !strings.Contains(out, `calculator {"expression":"21*2+5"}`) || !strings.Contains(out, `"21*2+5 = 47"`) {
			t.Errorf("the timeline does not summarise the events:\n%s", out)
		}
	})

	t.Run("delete", func(t *testing.T) {
		e.must(cli.ExitOK, "sessions", "delete", "s1")
		if r := e.run("sessions", "show", "s1"); r.code != cli.ExitUsage || !strings.Contains(r.err, `session "s1" not found`) {
			t.Errorf("show after delete: want exit 2 and not found, got %v", r)
		}
		if r := e.run("sessions", "events", "s1"); r.code != cli.ExitUsage {
			t.Errorf("events after delete: want exit 2, got %v", r)
		}
		out := e.must(cli.ExitOK, "sessions", "list").out
		if strings.Contains(out, "s1 ") || !strings.Contains(out, "s2 ") {
			t.Errorf("list after deleting s1:\n%s", out)
		}
	})
}

func TestTools(t *testing.T) {
	t.Parallel()
	e := newEnv(t, demoConfig, nil)
	out := e.must(cli.ExitOK, "tools").out
	for _, name := range []string{"calculator", "clock"} {
		if !regexp.MustCompile(`(?m)^` + name + `\n  .+\n  schema: \{"type":"object"`).MatchString(out) {
			t.Errorf("tools does not list %s with its schema:\n%s", name, out)
		}
	}

	var specs []model.ToolSpec
	if err := json.Unmarshal([]byte(e.must(cli.ExitOK, "tools", "--json").out), &specs); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range specs {
		names = append(names, s.Name)
		var schema map[string]any
		if err := json.Unmarshal(s.InputSchema, &schema); err != nil || schema["type"] != "object" {
			t.Errorf("%s: bad schema %s", s.Name, s.InputSchema)
		}
	}
	slices.Sort(names)
	if diff := cmp.Diff([]string{"calculator", "clock"}, names); diff != "" {
		t.Errorf("tools (-want +got):\n%s", diff)
	}
}

func TestVersion(t *testing.T) {
	t.Parallel()
	r := agentrt(t, app.Options{}, "version")
	if r.code != cli.ExitOK || !strings.HasPrefix(r.out, "agentrt ") || r.err != "" {
		t.Errorf("version: %v", r)
	}
}

// run --agent on a session of another agent is refused, not run as the
// session's own agent.
func TestRunWrongAgent(t *testing.T) {
	t.Parallel()
	e := newEnv(t, demoConfig+"agents:\n  a1: {model: demo, tools: [calculator]}\n  a2: {model: demo}\n", nil)
	e.must(cli.ExitOK, "run", "--agent", "a1", "--session", "s1", "what is 1+1")
	r := e.run("run", "--agent", "a2", "--session", "s1", "what is 2+2")
	if r.code != cli.ExitUsage || !strings.Contains(r.err, `session "s1" belongs to agent "a1", not "a2"`) {
		t.Errorf("got %v", r)
	}
}

// --tenant (or the config's tenant) scopes every command: another
// tenant's session is not found.
func TestTenantFlag(t *testing.T) {
	t.Parallel()
	e := newEnv(t, demoConfig+"tenant: acme\n", nil)
	e.must(cli.ExitOK, "run", "--session", "s1", "what is 1+1")
	if r := e.run("--tenant", "globex", "sessions", "show", "s1"); r.code != cli.ExitUsage || !strings.Contains(r.err, `session "s1" not found`) {
		t.Errorf("another tenant's session: %v", r)
	}
	e.must(cli.ExitOK, "--tenant", "globex", "run", "--session", "s1", "what is 2+2")
	if out := e.must(cli.ExitOK, "sessions", "events", "s1").out; !strings.Contains(out, `"input":"what is 1+1"`) || strings.Contains(out, "2+2") {
		t.Errorf("acme's s1:\n%s", out)
	}
	if r := e.run("--tenant", "bad tenant!", "sessions", "list"); r.code != cli.ExitUsage || !strings.Contains(r.err, "--tenant") {
		t.Errorf("a bad tenant: %v", r)
	}
}

func TestSessionsFork(t *testing.T) {
	t.Parallel()
	e := newEnv(t, demoConfig, nil)
	e.must(cli.ExitOK, "run", "--session", "s1", "what is 1+1")
	r := e.must(cli.ExitOK, "sessions", "fork", "s1", "--at", "3", "--id", "f1")
	if strings.TrimSpace(r.out) != "f1" || !strings.Contains(r.err, "forked s1 at event 3 into f1 (status running)") {
		t.Errorf("fork: %v", r)
	}
	evs := parseEvents(t, e.must(cli.ExitOK, "sessions", "events", "f1").out)
	if len(evs) != 3 {
		t.Errorf("the fork has %d events, want 3", len(evs))
	}
	if r := e.must(cli.ExitOK, "resume", "f1"); !strings.Contains(r.out, "1+1 = 2") {
		t.Errorf("the fork resumed:\n%s", r.out)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"sessions", "fork", "s1", "--at", "99"}, "has events 1 to"},
		{[]string{"sessions", "fork", "s1"}, "--at SEQ is required: the seq of the last event to copy (agentrt sessions events s1 lists them)"},
		{[]string{"sessions", "fork", "s1", "--at", "x"}, `--at wants the seq of the last event to copy, not "x"`},
		{[]string{"sessions", "fork", "nope", "--at", "1"}, `session "nope" not found`},
	} {
		if r := e.run(tc.args...); r.code != cli.ExitUsage || !strings.Contains(r.err, tc.want) {
			t.Errorf("%v: %v, want exit 2 and %q", tc.args, r, tc.want)
		}
	}
}

// sessions fork --model: the fork's calls use another model of the
// config (a model_changed event ends its copy); a model the config does
// not have is refused.
func TestSessionsForkModel(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "models:\n  demo: {provider: demo}\n  other: {provider: demo}\nagents:\n  assistant: {model: demo, tools: [calculator]}\n", nil)
	e.must(cli.ExitOK, "run", "--session", "s1", "what is 1+1")
	e.must(cli.ExitOK, "sessions", "fork", "s1", "--at", "3", "--id", "f1", "--model", "other")
	evs := parseEvents(t, e.must(cli.ExitOK, "sessions", "events", "f1").out)
	if len(evs) != 4 || evs[3].Type != "model_changed" || !strings.Contains(string(evs[3].Data), `"model":"other"`) {
		t.Fatalf("the fork's events: %+v", evs)
	}
	if r := e.must(cli.ExitOK, "resume", "f1"); !strings.Contains(r.out, "1+1 = 2") {
		t.Errorf("the fork resumed:\n%s", r.out)
	}
	if r := e.run("sessions", "fork", "s1", "--at", "3", "--model", "nope"); r.code != cli.ExitUsage ||
		!strings.Contains(r.err, `cannot change its model to "nope"`) || !strings.Contains(r.err, "demo, other") {
		t.Errorf("fork with an unknown model: %v", r)
	}
}

// --no-resume records the decision only; the audit trail names the OS
// user when --by is not given.
func TestApproveNoResumeAndBy(t *testing.T) {
	t.Parallel()
	var runs atomic.Int32
	e := newEnv(t, "models:\n  s: {provider: demo}\nagents:\n  deployer:\n    model: s\n    tools: [deploy]\n    approval: {ask: [deploy]}\n", nil)
	e.opts.ExtraTools = []tool.Tool{counter(&runs)}
	e.opts.Models = map[string]model.Model{"s": scripted.New("s",
		scripted.Reply{ToolCalls: []scripted.Call{scripted.ToolCall("deploy", `{"target":"prod"}`)}},
		scripted.Reply{Text: "done"},
	)}
	sid, req := pendingApproval(t, e.must(cli.ExitWaiting, "run", "--session", "n1", "deploy"))
	r := e.must(cli.ExitOK, "approve", "--no-resume", sid, req)
	if !strings.Contains(r.err, "recorded; continue with: agentrt --config "+e.config+" resume n1") || runs.Load() != 0 {
		t.Errorf("--no-resume: %v (runs %d)", r, runs.Load())
	}
	if out := e.must(cli.ExitOK, "sessions", "show", "n1").out; !strings.Contains(out, "every request is answered; continue with: agentrt --config "+e.config+" resume n1") {
		t.Errorf("show after --no-resume:\n%s", out)
	}
	evs := parseEvents(t, e.must(cli.ExitOK, "sessions", "events", "n1").out)
	res := ofType(evs, "input_resolved")
	if len(res) != 1 || data(t, res[0])["by"] == "" || data(t, res[0])["by"] == "cli" {
		t.Errorf("by: %v", res)
	}
	e.must(cli.ExitOK, "resume", sid)
	if runs.Load() != 1 {
		t.Errorf("deploy ran %d times", runs.Load())
	}
}

// What a new user ran into (issue 9), each fixed.
func TestNewUserFrictions(t *testing.T) {
	t.Parallel()
	t.Run("run - reads stdin", func(t *testing.T) {
		e := newEnv(t, demoConfig, nil)
		var out, errb bytes.Buffer
		code := cli.MainWith(t.Context(), []string{"--config", e.config, "run", "-"},
			cli.Streams{In: strings.NewReader("what is 6*7\n"), Out: &out, Err: &errb}, e.opts)
		if code != cli.ExitOK || !strings.Contains(out.String(), "6*7 = 42") {
			t.Errorf("exit %d\n%s\n%s", code, out.String(), errb.String())
		}
	})
	t.Run("--approve auto and deny say what they decided", func(t *testing.T) {
		e := newEnv(t, demoConfig+"agents:\n  assistant: {model: demo, tools: [calculator], approval: {ask: [calculator]}}\n", nil)
		r := e.must(cli.ExitOK, "run", "--approve", "auto", "what is 2+3")
		if want := "[approval] calculator {\"expression\":\"2+3\"}: approved (--approve auto)\n"; !strings.Contains(r.out, want) || strings.Contains(r.out, "Allow calculator") {
			t.Errorf("auto:\n%s\nwant a line %q and no question", r.out, want)
		}
		r = e.must(cli.ExitOK, "run", "--approve", "deny", "what is 2+3")
		if want := "[approval] calculator {\"expression\":\"2+3\"}: rejected (--approve deny)\n"; !strings.Contains(r.out, want) {
			t.Errorf("deny:\n%s\nwant a line %q", r.out, want)
		}
		if want := "[tool] calculator {\"expression\":\"2+3\"} not run: the user rejected this call\n"; !strings.Contains(r.out, want) || strings.Contains(r.out, "[tool] calculator failed") {
			t.Errorf("deny:\n%s\nwant a line %q, and no failure line for a call that never ran", r.out, want)
		}
		r = e.must(cli.ExitOK, "run", "--json", "--approve", "auto", "what is 4+5")
		if !strings.Contains(r.out, `"type":"input_resolved"`) {
			t.Errorf("--json: the decision is not among the events:\n%s", r.out)
		}
	})
	t.Run("the README tour: an edit and a prompt", func(t *testing.T) {
		e := newEnv(t, demoConfig+"agents:\n  assistant: {model: demo, tools: [calculator, clock, ask_user], approval: {ask: [calculator]}}\n", nil)
		r := e.must(cli.ExitWaiting, "run", "--session", "t1", "what is 21*2+5")
		m := approveCmd.FindStringSubmatch(r.err)
		if m == nil {
			t.Fatalf("no approve line:\n%s", r.err)
		}
		r = e.must(cli.ExitOK, "approve", "t1", m[2], "--args", `{"expression":"21*2+6"}`, "--reason", "the model misread")
		if !strings.Contains(r.out, "21*2+6 = 48") {
			t.Errorf("after the edit:\n%s", r.out)
		}
		r = e.must(cli.ExitWaiting, "run", "--session", "t2", "ask me: what is your name?")
		q := regexp.MustCompile(`\[prompt\] what is your name\? \(request (\S+)\)`).FindStringSubmatch(r.out)
		if q == nil || !strings.Contains(r.err, "agentrt --config "+e.config+" respond t2 "+q[1]+" TEXT") {
			t.Fatalf("no prompt:\n%s\n%s", r.out, r.err)
		}
		if r = e.must(cli.ExitOK, "respond", "t2", q[1], "Ada"); !strings.Contains(r.out, "You answered: Ada") {
			t.Errorf("after the answer:\n%s", r.out)
		}
	})
	t.Run("an empty api_key is said once", func(t *testing.T) {
		e := newEnv(t, "models:\n  m: {provider: openai, model: gpt, api_key: \"${AGENTRT_TEST_UNSET_KEY}\"}\nagents:\n  a: {model: m}\n", nil)
		r := e.run("config", "check")
		if r.code != cli.ExitUsage || strings.Count(r.err, "api_key is empty because ${AGENTRT_TEST_UNSET_KEY} is not set") != 1 {
			t.Errorf("%v", r)
		}
	})
	t.Run("--version", func(t *testing.T) {
		if r := agentrt(t, app.Options{}, "--version"); r.code != cli.ExitOK || !strings.HasPrefix(r.out, "agentrt version ") {
			t.Errorf("%v", r)
		}
	})
	t.Run("tools with two agents", func(t *testing.T) {
		e := newEnv(t, demoConfig+"agents:\n  a1: {model: demo}\n  a2: {model: demo}\n", nil)
		if r := e.run("tools"); r.code != cli.ExitUsage || !strings.Contains(r.err, "choose an agent with --agent (configured: a1, a2)") {
			t.Errorf("%v", r)
		}
	})
	t.Run("delete says so, list shows the first input", func(t *testing.T) {
		e := newEnv(t, demoConfig, nil)
		e.must(cli.ExitOK, "run", "--session", "d1", "what is  1+1")
		if out := e.must(cli.ExitOK, "sessions", "list").out; !strings.Contains(out, "FIRST INPUT") || !strings.Contains(out, "what is 1+1") {
			t.Errorf("list:\n%s", out)
		}
		if r := e.must(cli.ExitOK, "sessions", "delete", "d1"); !strings.Contains(r.err, "deleted session d1") {
			t.Errorf("delete: %v", r)
		}
	})
	t.Run("memory store: no continue hint", func(t *testing.T) {
		e := newEnv(t, demoConfig, nil)
		if r := e.must(cli.ExitOK, "--store", "memory:", "run", "what is 1+1"); strings.Contains(r.err, "continue with") {
			t.Errorf("%v", r)
		}
	})
	t.Run("a failed run says how to resume", func(t *testing.T) {
		e := newEnv(t, "models:\n  s: {provider: demo}\nagents:\n  a: {model: s}\n", nil)
		e.opts.Models = map[string]model.Model{"s": scripted.New("s", scripted.Reply{Error: "boom"})}
		if r := e.run("run", "--session", "f1", "hi"); r.code != cli.ExitFailed || !strings.Contains(r.err, "agentrt --config "+e.config+" resume f1") {
			t.Errorf("%v", r)
		}
	})
	t.Run("a long argument is clipped for people", func(t *testing.T) {
		e := newEnv(t, "models:\n  s: {provider: demo}\nagents:\n  a: {model: s, tools: [calculator]}\n", nil)
		long := strings.Repeat("1+", 20000) + "1"
		e.opts.Models = map[string]model.Model{"s": scripted.New("s",
			scripted.Reply{ToolCalls: []scripted.Call{scripted.ToolCall("calculator", map[string]any{"expression": long})}},
			scripted.Reply{Text: "big"})}
		r := e.must(cli.ExitOK, "run", "sum")
		if len(r.out) > 4000 || !strings.Contains(r.out, "...") {
			t.Errorf("%d bytes of output", len(r.out))
		}
	})
	t.Run("config check FILE, and a model that cannot plan", func(t *testing.T) {
		e := newEnv(t, demoConfig+"agents:\n  a: {model: demo, strategy: plan_execute}\n", nil)
		if r := agentrt(t, app.Options{}, "config", "check", e.config); r.code != cli.ExitOK || !strings.Contains(r.out, "agentrt.yaml: ok (1 agent, 1 model)") {
			t.Errorf("%v", r)
		}
		// The demo model cannot plan this: its plan's one reply step says
		// so, and the run ends there.
		if r := e.run("run", "--agent", "a", "hi"); r.code != cli.ExitOK || !strings.Contains(r.out, demo.PlanNotice) || strings.Contains(r.err, "bad_plan") {
			t.Errorf("run: %v", r)
		}
	})
	t.Run("model: auto", func(t *testing.T) {
		e := newEnv(t, "agents:\n  a: {model: auto, tools: [calculator]}\n", nil)
		if r := e.run("config", "check"); r.code != cli.ExitOK {
			t.Errorf("%v", r)
		}
	})
}

// approve --always makes the decision stand; agentrt rules lists and
// revokes it.
func TestApproveAlwaysAndRules(t *testing.T) {
	t.Parallel()
	var runs atomic.Int32
	e := newEnv(t, "models:\n  s: {provider: demo}\nagents:\n  deployer:\n    model: s\n    tools: [deploy]\n    approval: {ask: [deploy]}\n", nil)
	e.opts.ExtraTools = []tool.Tool{counter(&runs)}
	call := scripted.Reply{ToolCalls: []scripted.Call{scripted.ToolCall("deploy", `{"target":"prod"}`)}}
	e.opts.Models = map[string]model.Model{"s": scripted.New("s", call, scripted.Reply{Text: "one"}, call, scripted.Reply{Text: "two"}, call)}
	sid, req := pendingApproval(t, e.must(cli.ExitWaiting, "run", "--session", "a1", "deploy"))
	r := e.must(cli.ExitOK, "approve", "--always", "--for", "agent", "--by", "ana", sid, req)
	said := regexp.MustCompile(`standing decision (\S+): approve later calls of deploy for agent deployer; to end it: agentrt (.*)\n`).FindStringSubmatch(r.err)
	if said == nil {
		t.Fatalf("approve --always does not say which rule it made, and the command that ends it:\n%s", r.err)
	}
	revoke := strings.Fields(said[2])
	if want := []string{"--config", e.config, "rules", "revoke", "--agent", "deployer", said[1]}; !slices.Equal(revoke, want) {
		t.Errorf("the command that ends it: %q, want agentrt %q", said[2], want)
	}
	// Another session: no question, and the output says why.
	if r := e.must(cli.ExitOK, "run", "--session", "a2", "deploy"); !strings.Contains(r.out, "(decided by standing decision "+said[1]+")") {
		t.Errorf("the rule's call is not marked:\n%s", r.out)
	}
	for _, list := range [][]string{{"rules", "list", "--agent", "deployer"}, {"rules", "list"}, {"rules", "list", "a2"}} {
		out := e.must(cli.ExitOK, list...).out
		if !strings.Contains(out, said[1]+"  agent deployer") || !strings.Contains(out, "deploy") || !strings.Contains(out, "ana") {
			t.Fatalf("%v:\n%s", list, out)
		}
	}
	if r := e.run("rules", "revoke", said[1]); r.code != cli.ExitUsage || !strings.Contains(r.err, "name the session and the rule, or the rule with --agent A") {
		t.Errorf("revoke without session or agent: %v", r)
	}
	if r := e.run("rules", "revoke", "--agent", "deployer", "nope"); r.code == cli.ExitOK || !strings.Contains(r.err, `agent deployer has no standing decision "nope"`) {
		t.Errorf("revoke an unknown rule: %v", r)
	}
	if r := agentrt(t, e.opts, revoke...); r.code != cli.ExitOK || !strings.Contains(r.err, "revoked "+said[1]) {
		t.Errorf("agentrt %s: %v", said[2], r)
	}
	e.must(cli.ExitWaiting, "run", "--session", "a3", "deploy")
	if runs.Load() != 2 {
		t.Errorf("deploy ran %d times, want 2", runs.Load())
	}
	if out := e.must(cli.ExitOK, "sessions", "list").out; strings.Contains(out, "_rules.") {
		t.Errorf("the rule log shows in sessions list:\n%s", out)
	}
	if r := e.run("approve", "--for", "agent", "a3", "x"); r.code != cli.ExitUsage || !strings.Contains(r.err, "--for and --match go with --always") {
		t.Errorf("%v", r)
	}
}

// A model that repeats a call is warned, then stopped; the CLI says so
// (resuming is tested in the root package: a scripted model starts its
// script again in every process).
func TestLoopGuardInTheCLI(t *testing.T) {
	t.Parallel()
	call := "  - tool_calls: [{name: calculator, arguments: {expression: \"1+1\"}}]\n"
	e := newEnv(t, `
models:
  s: {provider: scripted, script: loop.yaml}
agents:
  assistant:
    model: s
    tools: [calculator]
    loop_detection: {warning: 2, critical: 3}
`, map[string]string{"loop.yaml": "replies:\n" + strings.Repeat(call, 3) + "  - text: \"2\"\n"})
	r := e.must(cli.ExitFailed, "run", "--session", "l1", "1+1?")
	for _, want := range []string{
		"[loop] warning (repeat): calculator was called 2 times in this turn with the same arguments; the model was told to stop repeating",
		"error (loop_detected): stopped a loop: calculator was called 3 times in this turn with the same arguments (loop_detection.critical is 3); resume the session to let it try again",
	} {
		if !strings.Contains(r.err, want) {
			t.Errorf("stderr lacks %q:\n%s", want, r.err)
		}
	}
	if r := e.must(cli.ExitOK, "sessions", "events", "l1"); !strings.Contains(r.out, "loop_warning") {
		t.Errorf("events:\n%s", r.out)
	}
}

// A run that stops at a budget says which, and how to go on.
func TestBudgetPauseInTheCLI(t *testing.T) {
	t.Parallel()
	e := newEnv(t, `
models:
  s: {provider: scripted, script: calls.yaml}
agents:
  assistant:
    model: s
    tools: [calculator]
    limits: {max_steps: 1}
`, map[string]string{"calls.yaml": "replies:\n  - tool_calls: [{name: calculator, arguments: {expression: \"1+1\"}}]\n  - tool_calls: [{name: calculator, arguments: {expression: \"2+2\"}}]\n  - text: done\n"})
	r := e.must(cli.ExitPaused, "run", "--session", "b1", "go")
	for _, want := range []string{
		"error (max_steps): the turn has run 1 tool calls and the model asks for 1 more; limits.max_steps is 1. Resume the session to allow 1 more, or raise the limit",
		"session b1 paused at limits.max_steps; continue with: agentrt --config " + e.config + " resume b1",
	} {
		if !strings.Contains(r.err, want) {
			t.Errorf("stderr lacks %q:\n%s", want, r.err)
		}
	}
}

// A sub-agent's question is the parent session's: `agentrt approve
// PARENT REQ` answers it in the child and goes on.
func TestApproveSubagentRequestThroughParent(t *testing.T) {
	t.Parallel()
	e := newEnv(t, `
models:
  b: {provider: demo}
  r: {provider: demo}
agents:
  boss: {model: b, tools: [researcher]}
  researcher: {model: r, tools: [calculator], approval: {ask: [calculator]}}
`, nil)
	e.opts.Models = map[string]model.Model{
		"b": scripted.New("b",
			scripted.Reply{ToolCalls: []scripted.Call{scripted.ToolCall("researcher", `{"task":"compute 6*7"}`)}},
			scripted.Reply{Text: "the researcher says 42", Expect: &scripted.Expect{LastToolResultContains: `"answer":"42"`}}),
		"r": scripted.New("r",
			scripted.Reply{ToolCalls: []scripted.Call{scripted.ToolCall("calculator", `{"expression":"6*7"}`)}},
			scripted.Reply{Text: "42", Expect: &scripted.Expect{LastToolResultContains: `"result":42`}}),
	}
	r := e.must(cli.ExitWaiting, "run", "--agent", "boss", "--session", "p1", "compute")
	sid, req := pendingApproval(t, r)
	if sid != "p1" || !strings.HasPrefix(req, "p1.") {
		t.Fatalf("pending request %s %s, want one of p1 standing for its child's:\n%s\n%s", sid, req, r.out, r.err)
	}
	if !strings.Contains(r.out, "[researcher] Allow calculator with arguments") {
		t.Errorf("stdout does not show the child's question:\n%s", r.out)
	}
	r = e.must(cli.ExitOK, "approve", "--by", "ana", sid, req)
	for _, want := range []string{"[subagent] researcher resumed", "the researcher says 42"} {
		if !strings.Contains(r.out, want) {
			t.Errorf("approve stdout lacks %q:\n%s", want, r.out)
		}
	}
}

// agentrt memory: add, search, list, delete; and an agent with memory
// retrieves what was added.
func TestMemoryCommands(t *testing.T) {
	t.Parallel()
	e := newEnv(t, `
models:
  s: {provider: demo}
agents:
  assistant: {model: s, memory: {enabled: true}}
`, nil)
	id := strings.TrimSpace(e.must(cli.ExitOK, "memory", "add", "--agent", "assistant", "--meta", "source=ops", "deploys happen on Tuesdays").out)
	if !strings.HasPrefix(id, "mem_") {
		t.Fatalf("add printed %q", id)
	}
	e.must(cli.ExitOK, "run", "--session", "x1", "hello")
	e.must(cli.ExitOK, "memory", "add", "--agent", "assistant", "--session", "x1", "the build server is slow")
	if r := e.must(cli.ExitOK, "memory", "search", "--agent", "assistant", "when are deploys?"); !strings.Contains(r.out, id) || !strings.Contains(r.out, "deploys happen on Tuesdays") {
		t.Errorf("search:\n%s", r.out)
	}
	if r := e.must(cli.ExitOK, "memory", "search", "--agent", "assistant", "build server"); strings.Contains(r.out, "slow") {
		t.Errorf("a session's item found without its session:\n%s", r.out)
	}
	if r := e.must(cli.ExitOK, "memory", "list", "--agent", "assistant"); !strings.Contains(r.out, "deploys happen on Tuesdays") {
		t.Errorf("list:\n%s", r.out)
	}
	if r := e.must(cli.ExitOK, "tools", "--agent", "assistant"); !strings.Contains(r.out, "retrieve") {
		t.Errorf("the agent has no retrieve tool:\n%s", r.out)
	}
	e.must(cli.ExitOK, "memory", "delete", "--agent", "assistant", id)
	for _, bad := range []struct {
		args []string
		want string
	}{
		{[]string{"memory", "search", "deploys"}, "name the agent with --agent"},
		{[]string{"memory", "add", "--agent", "assistant", "--meta", "novalue", "x"}, `--meta "novalue": want key=value`},
		{[]string{"memory", "add", "--agent", "assistant", "   "}, "the item has no text"},
		{[]string{"memory", "search", "--agent", "assistant", "--limit", "99", "x"}, "limit must be between 1 and 50"},
		{[]string{"memory", "delete", "--agent", "assistant", id}, "agent assistant's memory has no item " + id},
	} {
		if r := e.run(bad.args...); r.code == cli.ExitOK || !strings.Contains(r.err, bad.want) {
			t.Errorf("%v: exit %d, stderr %q, want %q", bad.args, r.code, r.err, bad.want)
		}
	}
}

// agentrt run --plan executes a caller's plan; a bad plan file is a
// clear error before anything runs; an agent with strategy plan_execute
// plans by itself.
func TestRunPlan(t *testing.T) {
	t.Parallel()
	e := newEnv(t, `
models:
  s: {provider: demo}
agents:
  planner: {model: s, strategy: plan_execute, tools: [calculator]}
`, map[string]string{
		"plan.json":    `{"goal":"two sums","steps":[{"kind":"tool","tool":"calculator","arguments":{"expression":"2+2"}},{"kind":"reply","text":"2+2 is 4."}]}`,
		"bad.json":     `{"goal":"x","stepz":[]}`,
		"unknown.json": `{"steps":[{"kind":"tool","tool":"nope"}]}`,
	})
	r := e.must(cli.ExitOK, "run", "--agent", "planner", "--plan", filepath.Join(e.dir, "plan.json"), "--session", "pl1", "go")
	for _, want := range []string{"[plan] 2 step(s) (caller): two sums", `[plan] step 1 completed: {"expression":"2+2","result":4}`, "2+2 is 4."} {
		if !strings.Contains(r.out, want) {
			t.Errorf("stdout lacks %q:\n%s", want, r.out)
		}
	}
	if r := e.run("run", "--agent", "planner", "--plan", filepath.Join(e.dir, "bad.json"), "go"); r.code != cli.ExitUsage || !strings.Contains(r.err, `not a plan: json: unknown field "stepz"`) {
		t.Errorf("bad plan file: %d %s", r.code, r.err)
	}
	if r := e.run("run", "--agent", "planner", "--plan", filepath.Join(e.dir, "unknown.json"), "go"); r.code == cli.ExitOK || !strings.Contains(r.err, `step 1: unknown tool "nope"`) {
		t.Errorf("unknown tool: %d %s", r.code, r.err)
	}
	e.opts.Models = map[string]model.Model{"s": scripted.New("s",
		scripted.Reply{Text: `{"steps":[{"kind":"tool","tool":"calculator","arguments":{"expression":"6*7"}}]}`},
		scripted.Reply{Text: "6*7 is 42."})}
	if r := e.must(cli.ExitOK, "run", "--agent", "planner", "6*7?"); !strings.Contains(r.out, "[plan] 1 step(s) (model)") || !strings.Contains(r.out, "6*7 is 42.") {
		t.Errorf("planning run:\n%s", r.out)
	}
}

// agentrt mcp check connects to each server: what it offers, or why not;
// agentrt tools lists an agent's MCP tools with their schemas.
func TestMCPCheck(t *testing.T) {
	t.Parallel()
	entry := mcptest.Server(t, "server-everything")
	e := newEnv(t, `
mcp_servers:
  ev: {command: node, args: [`+strconv.Quote(entry)+`, stdio]}
  gone: {command: no-such-mcp-server}
models:
  s: {provider: demo}
agents:
  assistant: {model: s, tools: ["ev.echo"]}
`, nil)
	r := e.run("mcp", "check")
	if r.code != cli.ExitFailed || !strings.Contains(r.out, "ev: ok, ") || !strings.Contains(r.out, "ev.echo") ||
		!strings.Contains(r.out, `gone: cannot be used: mcp server "gone": command "no-such-mcp-server"`) ||
		!strings.Contains(r.err, "1 of 2 MCP server(s) cannot be used") {
		t.Errorf("mcp check: %v", r)
	}
	if r := e.must(cli.ExitOK, "tools", "--agent", "assistant"); !strings.Contains(r.out, "ev.echo") || !strings.Contains(r.out, `"message"`) {
		t.Errorf("tools:\n%s", r.out)
	}
}
