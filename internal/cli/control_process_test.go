package cli_test

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/internal/cli"
	"github.com/agentrt/agentrt/internal/pgtest"
	"github.com/agentrt/agentrt/internal/testenv"
)

// stores are the stores the cross-process tests run on: SQLite (a file
// of the test's directory) and Postgres (a schema of its own).
var stores = []struct {
	name string
	dsn  func(t *testing.T) string
}{
	{"sqlite", func(*testing.T) string { return "" }},
	{"postgres", func(t *testing.T) string { dsn, _ := pgtest.Schema(t); return dsn }},
}

// slowConfig is an agent whose model answers after an hour.
const slowConfig = `
models:
  s: {provider: scripted, script: slow.yaml}
agents:
  assistant: {model: s, tools: [calculator]}
`

var slowFiles = map[string]string{"slow.yaml": "replies:\n  - text: never said\n    delay: 1h\n"}

// agentrt cancel --run, from another process, cancels the run it names
// and only it: a run that is not the session's run in progress is not
// stopped (the process running the session acts only on a request for
// its run), and the command says which run is; the run named is.
func TestProcessCancelRun(t *testing.T) {
	t.Parallel()
	testenv.SkipShort(t, "runs child processes")
	for _, st := range stores {
		t.Run(st.name, func(t *testing.T) {
			t.Parallel()
			e := newEnvStore(t, st.dsn(t), slowConfig, slowFiles)
			run := startChild(t, e.dir, nil, "--config", e.config, "run", "--json", "--session", "s1", "go")
			runID := run.waitEvent("model_started").RunID
			if runID == "" {
				t.Fatal("model_started names no run")
			}
			c := startChild(t, e.dir, nil, "--config", e.config, "cancel", "s1", "--run", "run_ended_before")
			if code := c.wait(); code != cli.ExitUsage || !strings.Contains(c.stderrText(), "run "+runID+" is") {
				t.Fatalf("cancel --run of another run: exit %d\n%s", code, c.stderrText())
			}
			c = startChild(t, e.dir, nil, "--config", e.config, "cancel", "s1", "--run", runID, "--reason", "this one")
			if code := c.wait(); code != cli.ExitOK || !strings.Contains(c.stderrText(), "run canceled") {
				t.Fatalf("cancel --run of the run: exit %d\n%s", code, c.stderrText())
			}
			if code := run.wait(); code != cli.ExitFailed {
				t.Fatalf("the run's process: exit %d, want %d\n%s", code, cli.ExitFailed, run.stderrText())
			}
			evs := parseEvents(t, newProcChild(t, e).mustOut("--config", e.config, "sessions", "events", "s1"))
			ctl := ofType(evs, "control")
			if len(ctl) != 1 || data(t, ctl[0])["run_id"] != runID || data(t, ctl[0])["reason"] != "this one" {
				t.Fatalf("control events %v in %v; want the one naming the run", ctl, types(evs))
			}
		})
	}
}

// agentrt cancel, from another process, stops a run: the process running
// it acts on the request, records it, ends the run canceled and exits 1;
// the canceling command returns once the run has stopped.
func TestProcessCancelFromAnotherProcess(t *testing.T) {
	t.Parallel()
	testenv.SkipShort(t, "runs child processes")
	for _, st := range stores {
		for _, interrupt := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/interrupt=%v", st.name, interrupt), func(t *testing.T) {
				t.Parallel()
				e := newEnvStore(t, st.dsn(t), slowConfig, slowFiles)
				run := startChild(t, e.dir, nil, "--config", e.config, "run", "--json", "--session", "s1", "go")
				run.waitEvent("model_started")
				args := []string{"--config", e.config, "cancel", "s1", "--reason", "wrong question", "--by", "ada"}
				want, wantCode := "canceled", cli.ExitFailed
				if interrupt {
					args = append(args, "--interrupt")
					want = "interrupted"
				}
				c := startChild(t, e.dir, nil, args...)
				if code := c.wait(); code != cli.ExitOK {
					t.Fatalf("cancel: exit %d\n%s", code, c.stderrText())
				}
				if !strings.Contains(c.stderrText(), "run "+want+" (status "+want+")") {
					t.Errorf("cancel says:\n%s", c.stderrText())
				}
				if code := run.wait(); code != wantCode {
					t.Fatalf("the run's process: exit %d, want %d\n%s", code, wantCode, run.stderrText())
				}
				evs := parseEvents(t, newProcChild(t, e).mustOut("--config", e.config, "sessions", "events", "s1"))
				checkSeq(t, evs, 1)
				ctl := ofType(evs, "control")
				if len(ctl) != 1 || data(t, ctl[0])["by"] != "ada" || data(t, ctl[0])["reason"] != "wrong question" {
					t.Fatalf("control events %v in %v", ctl, types(evs))
				}
				if fin := ofType(evs, "run_finished"); len(fin) != 1 || data(t, fin[0])["status"] != want {
					t.Fatalf("run_finished: %v", types(evs))
				}
				// Nothing runs now: a second cancel says so.
				c = startChild(t, e.dir, nil, "--config", e.config, "cancel", "s1")
				if code := c.wait(); code != cli.ExitUsage || !strings.Contains(c.stderrText(), "no run in progress") {
					t.Errorf("second cancel: exit %d\n%s", code, c.stderrText())
				}
			})
		}
	}
}

// sessions delete refuses a session another process is running, and an
// agent's rule log, unless --force.
func TestProcessDeleteRefusesARunningSession(t *testing.T) {
	t.Parallel()
	testenv.SkipShort(t, "runs child processes")
	e := newEnv(t, slowConfig, slowFiles)
	run := startChild(t, e.dir, nil, "--config", e.config, "run", "--json", "--session", "s1", "go")
	run.waitEvent("model_started")
	p := newProcChild(t, e)
	d := startChild(t, e.dir, nil, "--config", e.config, "sessions", "delete", "s1")
	if code := d.wait(); code != cli.ExitUsage || !strings.Contains(d.stderrText(), "is being run by") || !strings.Contains(d.stderrText(), "cancel s1") {
		t.Fatalf("delete of a running session: exit %d\n%s", code, d.stderrText())
	}
	if out := p.mustOut("--config", e.config, "sessions", "events", "s1"); !strings.Contains(out, "model_started") {
		t.Fatalf("the session was touched:\n%s", out)
	}
	d = startChild(t, e.dir, nil, "--config", e.config, "sessions", "delete", "--force", "s1")
	if code := d.wait(); code != cli.ExitOK {
		t.Fatalf("delete --force: exit %d\n%s", code, d.stderrText())
	}
	run.cmd.Process.Kill()
	run.wait()

	// An agent's rule log: refused, hidden from lists, deleted with --force.
	a := newEnv(t, `
models:
  s: {provider: scripted, script: ask.yaml}
agents:
  assistant: {model: s, tools: [calculator], approval: {ask: [calculator]}}
`, map[string]string{"ask.yaml": "replies:\n  - tool_calls: [{name: calculator, arguments: {expression: \"1+1\"}}]\n  - text: two\n"})
	r := startChild(t, a.dir, nil, "--config", a.config, "run", "--session", "s2", "go")
	if code := r.wait(); code != cli.ExitWaiting {
		t.Fatalf("run: exit %d\n%s", code, r.stderrText())
	}
	req := approveCmdAll.FindStringSubmatch(r.stderrText())
	ap := startChild(t, a.dir, nil, "--config", a.config, "approve", "--always", "--for", "agent", "s2", req[2])
	if code := ap.wait(); code != cli.ExitOK {
		t.Fatalf("approve --always: exit %d\n%s", code, ap.stderrText())
	}
	pa := newProcChild(t, a)
	if out := pa.mustOut("--config", a.config, "sessions", "list"); strings.Contains(out, "_rules.") {
		t.Errorf("sessions list shows the rule log:\n%s", out)
	}
	d = startChild(t, a.dir, nil, "--config", a.config, "sessions", "delete", "_rules.assistant")
	if code := d.wait(); code != cli.ExitUsage || !strings.Contains(d.stderrText(), "standing decisions") {
		t.Fatalf("delete of the rule log: exit %d\n%s", code, d.stderrText())
	}
	d = startChild(t, a.dir, nil, "--config", a.config, "sessions", "delete", "--force", "_rules.assistant")
	if code := d.wait(); code != cli.ExitOK {
		t.Fatalf("delete --force of the rule log: exit %d\n%s", code, d.stderrText())
	}
}

// Two people approve one request at the same moment, each with agentrt
// approve (which continues the run): the decision is recorded once, the
// run continues exactly once — in the process that recorded it — and the
// other says who was first. The session never stays waiting.
func TestProcessTwoApproversOneRequest(t *testing.T) {
	t.Parallel()
	testenv.SkipShort(t, "runs child processes")
	for _, st := range stores {
		trials := 10
		if st.name == "postgres" {
			trials = 5
		}
		for i := range trials {
			t.Run(fmt.Sprint(st.name, "/", i), func(t *testing.T) {
				t.Parallel()
				e := newEnvStore(t, st.dsn(t), `
models:
  s: {provider: scripted, script: ask.yaml}
agents:
  assistant: {model: s, tools: [calculator], approval: {ask: [calculator]}}
`, map[string]string{"ask.yaml": "replies:\n  - tool_calls: [{name: calculator, arguments: {expression: \"1+1\"}}]\n  - text: two\n"})
				run := startChild(t, e.dir, nil, "--config", e.config, "run", "--session", "s1", "go")
				if code := run.wait(); code != cli.ExitWaiting {
					t.Fatalf("run: exit %d\n%s", code, run.stderrText())
				}
				req := approveCmdAll.FindStringSubmatch(run.stderrText())
				var ps [2]*child
				for j := range ps {
					ps[j] = startChild(t, e.dir, nil, "--config", e.config, "approve", "--by", fmt.Sprint("person", j), "s1", req[2])
				}
				codes := map[int]int{}
				var loser string
				for _, p := range ps {
					code := p.wait()
					codes[code]++
					if code != cli.ExitOK {
						loser = p.stderrText()
					}
				}
				if codes[cli.ExitOK] != 1 || codes[cli.ExitUsage] != 1 || !strings.Contains(loser, "was already resolved by person") ||
					strings.Contains(loser, "its run goes on in") && !strings.Contains(loser, "its run goes on in "+hostname(t)) {
					t.Fatalf("exit codes %v; the loser says:\n%s", codes, loser)
				}
				evs := parseEvents(t, newProcChild(t, e).mustOut("--config", e.config, "sessions", "events", "s1"))
				checkSeq(t, evs, 1)
				if n := len(ofType(evs, "input_resolved")); n != 1 {
					t.Errorf("%d input_resolved", n)
				}
				if n := len(ofType(evs, "run_resumed")); n != 1 {
					t.Errorf("%d run_resumed", n)
				}
				if n := len(ofType(evs, "tool_result")); n != 1 {
					t.Errorf("%d tool results: the calculator ran more than once", n)
				}
				if fin := ofType(evs, "run_finished"); data(t, fin[len(fin)-1])["status"] != "done" {
					t.Errorf("the session ends %v", data(t, fin[len(fin)-1]))
				}
			})
		}
	}
}

func hostname(t *testing.T) string {
	t.Helper()
	h, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	return h
}
