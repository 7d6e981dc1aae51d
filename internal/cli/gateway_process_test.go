package cli_test

import (
	"encoding/json"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/agentrt/agentrt/internal/cli"
	"github.com/agentrt/agentrt/internal/pgtest"
	"github.com/agentrt/agentrt/internal/testenv"
	"github.com/agentrt/agentrt/session"
)

// out runs agentrt in a child process and returns its exit code, stdout
// and stderr.
func (p procChild) out(args ...string) (int, string, string) {
	p.t.Helper()
	c := startChild(p.t, p.e.dir, nil, append([]string{"--config", p.e.config}, args...)...)
	var b strings.Builder
	for l := range c.stdout {
		b.WriteString(l + "\n")
	}
	code := c.wait()
	return code, b.String(), c.stderrText()
}

// Inputs sent by three processes, one of them twice with its key, wait in
// the inbox; agentrt gateway, in another process, answers them in one
// turn, says so, and exits 0 on SIGTERM; the inbox is empty after. On
// SQLite and on Postgres.
func TestProcessSendThenGateway(t *testing.T) {
	t.Parallel()
	testenv.SkipShort(t, "runs child processes")
	for _, store := range []string{"sqlite", "postgres"} {
		t.Run(store, func(t *testing.T) {
			t.Parallel()
			dsn := ""
			if store == "postgres" {
				dsn, _ = pgtest.Schema(t)
			}
			e := newEnvStore(t, dsn, demoConfig+"gateway:\n  debounce: 100ms\n  sources:\n    chat: {session: support}\n", nil)
			p := newProcChild(t, e)
			var ids []string
			for _, args := range [][]string{{"hi"}, {"--key", "k1", "what is 2+3"}, {"thanks"}} {
				code, out, errText := p.out(append([]string{"send", "--source", "chat"}, args...)...)
				if code != cli.ExitOK || !inputID.MatchString(strings.TrimSpace(out)) {
					t.Fatalf("send %q: exit %d, %q\n%s", args, code, out, errText)
				}
				ids = append(ids, strings.TrimSpace(out))
			}
			code, out, errText := p.out("send", "--source", "chat", "--key", "k1", "what is 2+3")
			if code != cli.ExitOK || strings.TrimSpace(out) != ids[1] || !strings.Contains(errText, "was sent before") {
				t.Errorf("the key again: exit %d, %q, %s; want %s", code, out, errText, ids[1])
			}
			code, _, errText = p.out("send", "--source", "chat", "--key", "k1", "something else")
			if code != cli.ExitUsage || !strings.Contains(errText, "was given to another input") {
				t.Errorf("the key with other content: exit %d, %s", code, errText)
			}
			_, out, _ = p.out("inbox", "list", "--json")
			var before []session.SourceState
			if err := json.Unmarshal([]byte(out), &before); err != nil {
				t.Fatal(err)
			}
			if len(before) != 1 || before[0].Source != "chat" || before[0].SessionID != "support" || before[0].Pending != 3 {
				t.Fatalf("inbox list before: %+v", before)
			}

			g := startChild(t, e.dir, nil, "--config", e.config, "gateway")
			g.waitStderr("[gateway] tenant default, source chat, session support: 3 input(s) (" + strings.Join(ids, ", ") + "), run ")
			g.signal(syscall.SIGTERM)
			if code := g.wait(); code != cli.ExitOK || !strings.Contains(g.stderrText(), "agentrt gateway: stopped") {
				t.Fatalf("gateway after SIGTERM: exit %d\n%s", code, g.stderrText())
			}

			_, out, _ = p.out("inbox", "list", "--json")
			if strings.TrimSpace(out) != "[]" {
				t.Errorf("inbox list after: %s", out)
			}
			_, out, _ = p.out("sessions", "events", "support", "--json")
			starts := startedOf(t, parseEvents(t, out))
			if len(starts) != 1 || !slices.Equal(starts[0].Inputs, ids) || starts[0].Input != "hi\n\nwhat is 2+3\n\nthanks" {
				t.Errorf("run_started %+v, want one turn answering the three inputs", starts)
			}
		})
	}
}

// agentrt run on a session another process runs: by the gateway's
// default policy its input interrupts that run and is answered; with
// policy queue, run says the session is in use and its input is set
// aside, not answered later.
func TestProcessRunOnASessionInUse(t *testing.T) {
	t.Parallel()
	testenv.SkipShort(t, "runs child processes")
	for _, policy := range []string{"interrupt", "queue"} {
		t.Run(policy, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, `
gateway: {policy: `+policy+`}
models:
  s: {provider: scripted, script: "${AGENTRT_TEST_SCRIPT:-now.yaml}"}
agents:
  assistant: {model: s}
`, map[string]string{
				"slow.yaml": "replies:\n  - text: never\n    delay: 1h\n",
				"now.yaml":  "replies:\n  - text: the newer input answered\n",
			})
			slow := startChild(t, e.dir, []string{"AGENTRT_TEST_SCRIPT=slow.yaml"}, "--config", e.config, "run", "--json", "--session", "s1", "go")
			slow.waitEvent("model_started")
			r := startChild(t, e.dir, []string{"AGENTRT_TEST_SCRIPT=now.yaml"}, "--config", e.config, "run", "--session", "s1", "newer")
			var b strings.Builder
			for l := range r.stdout {
				b.WriteString(l + "\n")
			}
			code := r.wait()
			switch policy {
			case "interrupt":
				if code != cli.ExitOK || b.String() != "the newer input answered\n" {
					t.Fatalf("run: exit %d, %q\n%s", code, b.String(), r.stderrText())
				}
				fin := slow.waitEvent("run_finished")
				if !strings.Contains(string(fin.Data), `"interrupted"`) {
					t.Errorf("the slow run's end: %s", fin.Data)
				}
			case "queue":
				if code != cli.ExitUsage || !strings.Contains(r.stderrText(), "source cli is being served by another process") {
					t.Fatalf("run: exit %d\n%s", code, r.stderrText())
				}
				slow.signal(syscall.SIGTERM)
			}
			slow.wait()
			ins := e.inputs("cli")
			if len(ins) != 2 {
				t.Fatalf("the cli source's inbox: %+v", ins)
			}
			want := session.InputAnswered
			if policy == "queue" {
				want = session.InputRefused
			}
			if ins[1].State != want {
				t.Errorf("the newer input: %+v, want %s", ins[1], want)
			}
		})
	}
}
