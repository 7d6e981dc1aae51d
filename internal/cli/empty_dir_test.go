package cli_test

import (
	"os"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/internal/cli"
	"github.com/agentrt/agentrt/internal/testenv"
)

// runIn runs agentrt as a process in dir with args and returns what it
// left behind.
func runIn(t *testing.T, dir string, args ...string) result {
	t.Helper()
	c := startChild(t, dir, nil, args...)
	var b strings.Builder
	for l := range c.stdout {
		b.WriteString(l + "\n")
	}
	return result{code: c.wait(), out: b.String(), err: c.stderrText()}
}

// A new user's first look, in a directory with nothing in it: the
// commands that only read sessions say there are none, and create
// nothing (no ./.agentrt/ with an empty database).
func TestReadingAnEmptyDirectory(t *testing.T) {
	t.Parallel()
	testenv.SkipShort(t, "runs child processes")
	dir := t.TempDir()
	for _, tc := range []struct {
		args     []string
		code     int
		out, err string
	}{
		{[]string{"sessions", "list"}, cli.ExitOK, "", "no sessions\n"},
		{[]string{"sessions", "list", "--json"}, cli.ExitOK, "[]\n", ""},
		{[]string{"sessions", "show", "s1"}, cli.ExitUsage, "", "agentrt: session \"s1\" not found\n"},
		{[]string{"sessions", "events", "s1"}, cli.ExitUsage, "", "agentrt: session \"s1\" not found\n"},
		{[]string{"replay", "s1"}, cli.ExitUsage, "", "agentrt: session \"s1\" not found\n"},
		{[]string{"inbox", "list"}, cli.ExitOK, "", "agentrt: no input is pending\n"},
	} {
		r := runIn(t, dir, tc.args...)
		if r.code != tc.code || r.out != tc.out || r.err != tc.err {
			t.Errorf("agentrt %s: %v\nwant exit %d, stdout %q, stderr %q", strings.Join(tc.args, " "), r, tc.code, tc.out, tc.err)
		}
	}
	if entries, err := os.ReadDir(dir); err != nil || len(entries) != 0 {
		t.Errorf("reading made %v in the empty directory (%v)", entries, err)
	}
	// A command that writes creates the store where the readers look.
	if r := runIn(t, dir, "run", "--session", "s1", "what is 1+1"); r.code != cli.ExitOK {
		t.Fatalf("run: %v", r)
	}
	if r := runIn(t, dir, "sessions", "list"); r.code != cli.ExitOK || !strings.Contains(r.out, "\ns1 ") {
		t.Errorf("sessions list after a run: %v", r)
	}
}
