package cli_test

import (
	"strings"
	"testing"

	"github.com/agentrt/agentrt/internal/cli"
)

// rules list without a session lists the agents' standing decisions, and
// says how to list a session's own (approve --always decides for the
// session unless told --for agent).
func TestRulesListNamesSessionRules(t *testing.T) {
	t.Parallel()
	e := newEnv(t, tourConfig, nil)
	hint := "these are the agents' standing decisions; a session's own (approve --always without --for agent): agentrt --config " + e.config + " rules list SESSION\n"
	if r := e.must(cli.ExitOK, "rules", "list"); r.err != "no standing decisions\n"+hint {
		t.Errorf("stderr:\n got %q\nwant %q", r.err, "no standing decisions\n"+hint)
	}
	_, req := pendingApproval(t, e.must(cli.ExitWaiting, "run", "--session", "t1", "what is 21*2+5"))
	e.must(cli.ExitOK, "approve", "--always", "t1", req)
	if r := e.must(cli.ExitOK, "rules", "list", "t1"); !strings.Contains(r.out, "session") || strings.Contains(r.err, "rules list SESSION") {
		t.Errorf("rules list t1: %v", r)
	}
	if r := e.must(cli.ExitOK, "rules", "list", "--agent", "assistant"); strings.Contains(r.err, "rules list SESSION") {
		t.Errorf("rules list --agent: %v", r)
	}
}
