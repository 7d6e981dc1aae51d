package cli_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/internal/cli"
	"github.com/agentrt/agentrt/session"
)

// The README's busy chat channel, as a new user types it with the demo
// model: two messages sent, the inbox shows them pending, agentrt gateway
// answers both in one turn and shows the answer under the turn's line,
// Ctrl-C stops it, and the inbox is empty.
func TestGatewayTour(t *testing.T) {
	t.Parallel()
	e := newEnv(t, demoConfig, nil)
	hi := e.sent("--source", "chat", "hi")
	refund := e.sent("--source", "chat", "I need a refund")

	r := e.must(cli.ExitOK, "inbox", "list")
	rows := strings.Split(strings.TrimSpace(r.out), "\n")
	if len(rows) != 2 || !regexp.MustCompile(`^SOURCE +SESSION +PENDING +VERSION +FIRST +LAST$`).MatchString(rows[0]) ||
		!regexp.MustCompile(`^chat +chat +2 +2 +\d+s ago +\d+s ago$`).MatchString(rows[1]) {
		t.Errorf("inbox list:\n%s", r.out)
	}

	g := e.start("gateway")
	g.waitLine("agentrt gateway: answering the inputs stored in sqlite:", "(Ctrl-C stops)")
	turn := g.waitLine("[gateway] tenant default, source chat, session chat: 2 input(s) ("+hi+", "+refund+"), run ", ": done")
	r = g.interrupt()
	if r.code != cli.ExitOK || !strings.HasSuffix(r.err, "agentrt gateway: stopped\n") {
		t.Fatalf("gateway after Ctrl-C: %v", r)
	}
	if answer := lineAfter(r.err, turn); !strings.HasPrefix(answer, "  answer: This is agentrt's offline demo model, not a language model: ") ||
		len(answer) > len("  answer: ")+200+len("...") {
		t.Errorf("the line after the turn's: %q, want the answer, at most 200 bytes of it\n%s", answer, r.err)
	}

	if r := e.must(cli.ExitOK, "inbox", "list"); r.out != "" || r.err != "agentrt: no input is pending\n" {
		t.Errorf("inbox list after the turn: %v", r)
	}
	for _, in := range e.inputs("chat") {
		if in.State != session.InputAnswered {
			t.Errorf("input %s is %s, want answered", in.ID, in.State)
		}
	}
	if r := e.must(cli.ExitOK, "sessions", "show", "chat"); !regexp.MustCompile(`(?m)^answer +This is agentrt's offline demo model`).MatchString(r.out) {
		t.Errorf("sessions show chat:\n%s", r.out)
	}
}

// A turn with a short answer shows it whole, on one line.
func TestGatewayShowsTheAnswer(t *testing.T) {
	t.Parallel()
	e := newEnv(t, demoConfig, nil)
	e.sent("--source", "calc", "what is\n21*2+5")
	g := e.start("gateway")
	turn := g.waitLine("[gateway]", "source calc", ": done")
	r := g.interrupt()
	if r.code != cli.ExitOK {
		t.Fatalf("gateway: %v", r)
	}
	if l := lineAfter(r.err, turn); l != "  answer: 21*2+5 = 47" {
		t.Errorf("the line after the turn's: %q, want the answer\n%s", l, r.err)
	}
}

// lineAfter returns the line of out that follows line.
func lineAfter(out, line string) string {
	_, rest, ok := strings.Cut(out, line+"\n")
	if !ok {
		return ""
	}
	next, _, _ := strings.Cut(rest, "\n")
	return next
}

// --after and --limit page one source's inputs: without --source they
// are a usage error, not silently ignored.
func TestInboxListPagingNeedsASource(t *testing.T) {
	t.Parallel()
	e := newEnv(t, demoConfig, nil)
	first := e.sent("--source", "chat", "hi")
	e.sent("--source", "chat", "again")
	for _, flag := range []string{"--after", "--limit"} {
		r := e.must(cli.ExitUsage, "inbox", "list", flag, "1")
		if r.out != "" || r.err != "agentrt: "+flag+" needs --source: it pages one source's inputs\n" {
			t.Errorf("inbox list %s 1: %v", flag, r)
		}
	}
	r := e.must(cli.ExitOK, "inbox", "list", "--source", "chat", "--limit", "1")
	if rows := strings.Split(strings.TrimSpace(r.out), "\n"); len(rows) != 2 || !strings.HasPrefix(rows[1], first+"  pending") {
		t.Errorf("inbox list --source chat --limit 1:\n%s", r.out)
	}
}
