// Package examples_test builds every example program and runs it, so that
// the examples, which are documentation, cannot rot: CI fails when one no
// longer builds, exits non-zero or stops printing what its README shows.
package examples_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentrt/agentrt/internal/mcptest"
	"github.com/agentrt/agentrt/internal/testenv"
)

// exampleCase is one run of an example program.
type exampleCase struct {
	name    string
	example string   // directory under examples/
	args    []string // run in a fresh working directory
	want    []string // text the output must contain
	files   []string // files the run must leave in its working directory
}

// cases lists the runs. Every example directory needs at least one.
var cases = []exampleCase{
	{
		name:    "typed-tool",
		example: "typed-tool",
		want: []string{
			`schema: {"type":"object","properties":{"city":{"type":"string","description":"the city to look up, e.g. Paris"}`,
			`"required":["city"]`,
			`tool_call: weather {"city":"Paris"}`,
			`tool_result: weather ok {"city":"Paris","temperature":18,"unit":"celsius","sky":"sunny"}`,
			`token: "It is 18°C"`,
			"final: It is 18°C and sunny in Paris: no umbrella needed.",
		},
	},
	{
		name:    "approval/approve",
		example: "approval",
		want: []string{
			"input_required: req_",
			`Allow deploy with arguments {"service":"checkout","version":"v2.4.1"}?`,
			"status: waiting",
			"== process 2: a new store and runner on the same file",
			"is waiting with 1 pending request(s)",
			"approve by alice@example.com",
			"resumed: approval (was waiting)",
			`tool_result: deploy ok {"service":"checkout","version":"v2.4.1","status":"deployed"}`,
			"final: Deployed checkout v2.4.1 to production.",
			"status: done",
		},
	},
	{
		name:    "approval/reject",
		example: "approval",
		args:    []string{"-reject"},
		want: []string{
			"input_required: req_",
			"status: waiting",
			"reject by alice@example.com",
			"resumed: approval (was waiting)",
			"tool_result: deploy failed: the user rejected this call: change freeze until Monday",
			"final: I did not deploy checkout v2.4.1: the deploy was rejected (change freeze).",
			"status: done",
		},
	},
	{
		name:    "approval/dir",
		example: "approval",
		args:    []string{"-dir", "state"},
		want:    []string{"final: Deployed checkout v2.4.1 to production."},
		files:   []string{filepath.Join("state", "agentrt.db")},
	},
	{
		name:    "charge-once/done",
		example: "charge-once",
		want: []string{
			"provider: charged 4999 cents for order-17 (key order-17/call_",
			"attempt 1), receipt r-1",
			"process 1 exited: exit status 3",
			"input_required (confirm): charge was running with arguments",
			`respond done {"receipt":"r-1"} by ops@example.com`,
			"final: Order-17 is paid: receipt r-1.",
			"status: done",
			"the provider holds 1 charge(s)",
		},
	},
	{
		name:    "charge-once/retry",
		example: "charge-once",
		args:    []string{"-retry"},
		want: []string{
			"process 1 exited: exit status 3",
			"respond retry",
			"was charged already (attempt 2): receipt r-1, nothing charged",
			"final: Order-17 is paid: receipt r-1.",
			"the provider holds 1 charge(s)",
		},
	},
	{
		name:    "plan",
		example: "plan",
		want: []string{
			`step 1: calculator {"expression":"3*89"} -> completed {"expression":"3*89","result":267}`,
			"answer: Three nights cost 267 and two dinners 90: 357 in all.",
			`step 1: calculator {"expression":"267+90"} -> completed {"expression":"267+90","result":357}`,
			"answer: Checked: 357.",
			`refused: step 1: unknown tool "weather" (the agent has calculator)`,
		},
	},
	{
		name:    "memory",
		example: "memory",
		want: []string{
			"session monday: Noted: your team deploys on Tuesdays.",
			`retrieve: {"memories":[{"text":"Q: Remember: we deploy on Tuesdays.\nA: Noted: your team deploys on Tuesdays."`,
			"session friday: On Tuesdays, as you told me.",
		},
	},
	{
		name:    "mcp-filesystem",
		example: "mcp-filesystem",
		args:    []string{"-server", "{{mcp:server-filesystem}}"},
		want: []string{
			"fs offers 14 tools",
			`status: waiting; asks: Allow fs.write_file with arguments {"path":`,
			"tool_result: fs.write_file ok=true",
			"tool_result: fs.read_text_file ok=true",
			"final: Saved and checked: deploys happen on Tuesdays.",
			"on disk: Deploys happen on Tuesdays.",
		},
	},
	{
		name:    "delegation",
		example: "delegation",
		want: []string{
			"subagent_started: researcher in chat.", // then the run's id: a session per turn and call
			".call_1_1: Since when can range loop over functions?",
			"subagent_finished: Since Go 1.23, range accepts iterator functions (iter.Seq). (400 tokens in)",
			"final: Since Go 1.23: range accepts iterator functions.",
			"run_started: for chat, call call_1_1",
			"loop_warning (repeat): search was called 3 times in this turn with the same arguments",
			"== the desk's usage, the researcher's included: 600 tokens in",
		},
	},
	{
		name:    "custom-executor",
		example: "custom-executor",
		want: []string{
			"call_tools: 2 call(s) [calculator fetch] in ",
			`tool_result: calculator ok {"expression":"21*2+5","result":47}`,
			`tool_result: fetch failed: blocked: host "intranet.corp.example" is not on the allowlist (docs.example.com)`,
			"final: 21*2+5 is 47. I could not read the intranet page: that host is not on the allowlist.\n-- checked by the ops desk\n",
			"status: done",
		},
	},
}

func TestExamples(t *testing.T) {
	testenv.SkipShort(t, "builds and runs programs")
	root := moduleRoot(t)
	bin := buildExamples(t, root)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			work := t.TempDir()
			args := slices.Clone(tc.args)
			for i, a := range args {
				if name, ok := strings.CutPrefix(a, "{{mcp:"); ok {
					args[i] = mcptest.Server(t, strings.TrimSuffix(name, "}}")) // installed by the test command
				}
			}
			out := runExample(t, work, filepath.Join(bin, tc.example), args...)
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q", w)
				}
			}
			for _, f := range tc.files {
				if _, err := os.Stat(filepath.Join(work, f)); err != nil {
					t.Errorf("the run left no %s: %v", f, err)
				}
			}
			if t.Failed() {
				t.Logf("output:\n%s", out)
			}
		})
	}
}

// TestEveryExampleIsTested fails when an example directory has no case
// above or no README.
func TestEveryExampleIsTested(t *testing.T) {
	mains, err := filepath.Glob(filepath.Join(moduleRoot(t), "examples", "*", "main.go"))
	if err != nil {
		t.Fatal(err)
	}
	if len(mains) == 0 {
		t.Fatal("found no examples")
	}
	for _, m := range mains {
		dir := filepath.Dir(m)
		name := filepath.Base(dir)
		if !slices.ContainsFunc(cases, func(c exampleCase) bool { return c.example == name }) {
			t.Errorf("example %s has no test case", name)
		}
		if _, err := os.Stat(filepath.Join(dir, "README.md")); err != nil {
			t.Errorf("example %s has no README.md", name)
		}
	}
}

// moduleRoot returns the directory of the go.mod of the module under test.
func moduleRoot(t *testing.T) string {
	t.Helper()
	out, err := exec.Command(goTool(t), "env", "GOMOD").Output()
	if err != nil {
		t.Fatalf("go env GOMOD: %v", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		t.Fatal("go env GOMOD: not in a module")
	}
	return filepath.Dir(gomod)
}

func goTool(t *testing.T) string {
	t.Helper()
	path, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed to build the examples: %v", err)
	}
	return path
}

// buildExamples builds every example with one go build into a temporary
// directory, one binary per example, named after its directory.
func buildExamples(t *testing.T, root string) string {
	t.Helper()
	dir := t.TempDir()
	cmd := exec.Command(goTool(t), "build", "-o", dir+string(filepath.Separator), "./examples/...")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./examples/...: %v\n%s", err, out)
	}
	return dir
}

// runExample runs a built example in the directory work and returns its
// output (stdout and stderr together); a non-zero exit fails the test.
func runExample(t *testing.T, work, bin string, args ...string) string {
	t.Helper()
	if goruntime.GOOS == "windows" {
		bin += ".exe"
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = work
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", filepath.Base(bin), strings.Join(args, " "), err, out)
	}
	return string(out)
}
