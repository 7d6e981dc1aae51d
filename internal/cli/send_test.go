package cli_test

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/internal/cli"
	"github.com/agentrt/agentrt/session"
)

var inputID = regexp.MustCompile(`^in_[0-9a-f]+$`)

// sent runs agentrt send and returns the input's id.
func (e *env) sent(args ...string) string {
	e.t.Helper()
	r := e.must(cli.ExitOK, append([]string{"send"}, args...)...)
	id := strings.TrimSpace(r.out)
	if !inputID.MatchString(id) {
		e.t.Fatalf("send printed %q, want an input id", r.out)
	}
	return id
}

// sources runs inbox list --json.
func (e *env) sources() []session.SourceState {
	e.t.Helper()
	var out []session.SourceState
	if err := json.Unmarshal([]byte(e.must(cli.ExitOK, "inbox", "list", "--json").out), &out); err != nil {
		e.t.Fatal(err)
	}
	return out
}

// inputs runs inbox list --source S --json.
func (e *env) inputs(source string) []session.InboxInput {
	e.t.Helper()
	var out []session.InboxInput
	if err := json.Unmarshal([]byte(e.must(cli.ExitOK, "inbox", "list", "--source", source, "--json").out), &out); err != nil {
		e.t.Fatal(err)
	}
	return out
}

// send stores an input and returns at once; the same key is the same
// input; the inbox lists what is pending, per source and per input.
func TestSendAndInboxList(t *testing.T) {
	t.Parallel()
	e := newEnv(t, demoConfig+"gateway:\n  sources:\n    desk: {session: front-desk}\n", nil)
	if r := e.must(cli.ExitOK, "inbox", "list"); r.out != "" || !strings.Contains(r.err, "no input is pending") {
		t.Errorf("an empty inbox: %v", r)
	}
	a := e.sent("--source", "chat", "hi")
	b := e.sent("--source", "chat", "--key", "k1", "what is 2+3")
	r := e.must(cli.ExitOK, "send", "--source", "chat", "--key", "k1", "what is 2+3")
	if strings.TrimSpace(r.out) != b || !strings.Contains(r.err, `key "k1" of source chat was sent before`) {
		t.Errorf("the key again: %v, want %s, said to be a repeat", r, b)
	}
	var sub struct {
		ID, Source, Session string
		Seq                 int64
		Duplicate           bool
	}
	r = e.must(cli.ExitOK, "send", "--source", "desk", "--json", "--agent", "assistant", "hello")
	if err := json.Unmarshal([]byte(r.out), &sub); err != nil || sub.Source != "desk" || sub.Session != "front-desk" || sub.Seq == 0 || sub.Duplicate {
		t.Errorf("send --json: %q (%v), want the desk's input, in session front-desk", r.out, err)
	}
	for _, s := range e.sources() {
		switch s.Source {
		case "chat":
			if s.SessionID != "chat" || s.Pending != 2 || s.Tenant != "default" || s.First.After(s.Last) {
				t.Errorf("chat: %+v, want 2 pending for session chat", s)
			}
		case "desk":
			if s.SessionID != "front-desk" || s.Pending != 1 || s.Version != sub.Seq {
				t.Errorf("desk: %+v, want 1 pending for session front-desk, version %d", s, sub.Seq)
			}
		default:
			t.Errorf("an unknown source: %+v", s)
		}
	}
	r = e.must(cli.ExitOK, "inbox", "list")
	lines := strings.Split(strings.TrimSpace(r.out), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "SOURCE") || !regexp.MustCompile(`^chat +chat +2 +\d+ +\d+s ago +\d+s ago$`).MatchString(lines[1]) {
		t.Errorf("inbox list:\n%s", r.out)
	}
	ins := e.inputs("chat")
	if len(ins) != 2 || ins[0].ID != a || ins[1].ID != b || ins[1].Key != "k1" || ins[0].State != session.InputPending {
		t.Errorf("chat's inputs: %+v", ins)
	}
	r = e.must(cli.ExitOK, "inbox", "list", "--source", "chat")
	if !strings.Contains(r.out, a+"  pending") || !strings.Contains(r.out, "what is 2+3") {
		t.Errorf("inbox list --source chat:\n%s", r.out)
	}
	if r := e.must(cli.ExitOK, "inbox", "list", "--source", "chat", "--after", "0", "--limit", "1", "--json"); strings.Count(r.out, `"id"`) != 1 {
		t.Errorf("--limit 1:\n%s", r.out)
	}
	if r := e.must(cli.ExitOK, "inbox", "list", "--source", "nobody"); !strings.Contains(r.err, "source nobody has no inputs") {
		t.Errorf("a source with no inputs: %v", r)
	}
	// Another tenant's inbox is its own.
	if r := e.must(cli.ExitOK, "--tenant", "acme", "inbox", "list", "--json"); strings.TrimSpace(r.out) != "[]" {
		t.Errorf("tenant acme sees %s", r.out)
	}
}

// Bad input exits 2 with the gateway's message, and stores nothing.
func TestSendBadInput(t *testing.T) {
	t.Parallel()
	e := newEnv(t, demoConfig+"max_input_bytes: 20\n", nil)
	e.sent("--source", "chat", "--key", "k1", "hello")
	for _, tc := range []struct {
		args []string
		in   string
		want string
	}{
		{[]string{"hi"}, "", "--source is required"},
		{[]string{"--source", "", "hi"}, "", "an input needs a source"},
		{[]string{"--source", "chat", "  "}, "", "the input from source chat is empty"},
		{[]string{"--source", "chat", "-"}, "", "the input from source chat is empty"},
		{[]string{"--source", "chat", strings.Repeat("x", 21)}, "", "holds 21 bytes; at most 20 are taken"},
		{[]string{"--source", "chat", "-"}, strings.Repeat("x", 21), "the input on stdin is larger than 20 bytes"},
		{[]string{"--source", "chat", "--key", "k1", "goodbye"}, "", `key "k1" of source chat was given to another input`},
		{[]string{"--source", "chat", "--agent", "nobody", "hi"}, "", `no agent "nobody" (configured: assistant)`},
	} {
		r := agentrtIn(t, e.opts, tc.in, append([]string{"--config", e.config, "send"}, tc.args...)...)
		if r.code != cli.ExitUsage || !strings.Contains(r.err, tc.want) || r.out != "" {
			t.Errorf("send %q: %v, want exit 2 saying %q", tc.args, r, tc.want)
		}
	}
	if ins := e.inputs("chat"); len(ins) != 1 {
		t.Errorf("stored %d inputs, want the first only: %+v", len(ins), ins)
	}
	// What stdin holds, within the limit, is the input.
	r := agentrtIn(t, e.opts, "from stdin\n", "--config", e.config, "send", "--source", "pipe", "-")
	if r.code != cli.ExitOK {
		t.Fatalf("send -: %v", r)
	}
	if ins := e.inputs("pipe"); len(ins) != 1 || ins[0].Parts[0].Text != "from stdin\n" {
		t.Errorf("pipe's inputs: %+v", ins)
	}
}

// A source with as many inputs waiting as gateway.max_pending allows
// refuses the next one: exit 2, the message says which bound and what
// to do, and nothing is stored; the same input again with its key is the
// one that waits, not a refusal.
func TestSendToAFullSource(t *testing.T) {
	t.Parallel()
	e := newEnv(t, demoConfig+"gateway: {max_pending: 2}\n", nil)
	first := e.sent("--source", "chat", "--key", "k1", "one")
	e.sent("--source", "chat", "two")
	r := e.run("send", "--source", "chat", "three")
	want := "source chat has 2 inputs waiting for its turn, as many as it may (max_pending 2); the input was not stored: send it again once its turn has answered them"
	if r.code != cli.ExitUsage || !strings.Contains(r.err, want) || r.out != "" {
		t.Errorf("a third input: %v, want exit 2 saying %q", r, want)
	}
	if again := e.sent("--source", "chat", "--key", "k1", "one"); again != first {
		t.Errorf("the first input again with its key: %s, want %s", again, first)
	}
	if ins := e.inputs("chat"); len(ins) != 2 {
		t.Errorf("stored %d inputs, want the 2 taken: %+v", len(ins), ins)
	}
}
