package cli_test

import (
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/internal/cli"
	"github.com/agentrt/agentrt/internal/testenv"
)

// A session left running by a process that was killed: sessions show says
// no process runs it, with the command that continues it (and --json the
// same step); that command, run as it is, takes the session over. While
// the process lived, show said who held it and offered no such step.
func TestSessionsShowOrphanedRun(t *testing.T) {
	t.Parallel()
	testenv.SkipShort(t, "runs child processes")
	e := newEnv(t, slowConfig, slowFiles)
	run := startChild(t, e.dir, nil, "--config", e.config, "run", "--json", "--session", "s1", "go")
	run.waitEvent("model_started")

	live := e.must(cli.ExitOK, "sessions", "show", "s1")
	if !regexp.MustCompile(`(?m)^lease +held by \S+ until [^,\n]+$`).MatchString(live.out) || strings.Contains(live.out, "no process runs it") {
		t.Errorf("sessions show of a session a live process runs:\n%s", live.out)
	}

	run.cmd.Process.Kill()
	run.wait()
	r := e.must(cli.ExitOK, "sessions", "show", "s1")
	m := regexp.MustCompile(`(?m)^next +no process runs it \(the one that did stopped: a crash, a kill\); continue with: agentrt (.*)$`).FindStringSubmatch(r.out)
	if m == nil || !regexp.MustCompile(`(?m)^status +running$`).MatchString(r.out) ||
		!regexp.MustCompile(`(?m)^lease +held by .*, but that process is gone$`).MatchString(r.out) {
		t.Fatalf("sessions show of a running session whose process was killed:\n%s", r.out)
	}
	resume := strings.Fields(m[1])
	if want := []string{"--config", e.config, "resume", "s1"}; !slices.Equal(resume, want) {
		t.Errorf("the command that continues it: %q, want agentrt %q", m[1], want)
	}
	var shown struct {
		Next []struct {
			Kind, Command string
		}
	}
	if err := json.Unmarshal([]byte(e.must(cli.ExitOK, "sessions", "show", "--json", "s1").out), &shown); err != nil ||
		len(shown.Next) != 1 || shown.Next[0].Kind != "resume" || shown.Next[0].Command != "agentrt "+m[1] {
		t.Errorf("sessions show --json: next %+v (%v), want the resume step", shown.Next, err)
	}

	// The command, as it is: it takes the run over (the model holds it
	// again, so it is canceled once it runs).
	res := startChild(t, e.dir, nil, append(resume, "--json")...)
	res.waitEvent("run_resumed")
}
