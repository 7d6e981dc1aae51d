package cli_test

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/internal/app"
	"github.com/agentrt/agentrt/internal/cli"
	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/model/scripted"
)

// The commands agentrt prints to go on carry the global flags the command
// was given, and only those: copied as they are, they reach the same
// sessions.
func TestFollowUpCommandsCarryTheFlags(t *testing.T) {
	t.Parallel()
	e := newEnv(t, tourConfig, nil)
	store := "sqlite:" + filepath.Join(e.dir, "other.db")
	global := []string{"--config", e.config, "--store", store, "--tenant", "acme"}
	r := agentrt(t, e.opts, append(global, "run", "--session", "t1", "what is 21*2+5")...)
	if r.code != cli.ExitWaiting {
		t.Fatalf("%v", r)
	}
	m := regexp.MustCompile(`\n  (agentrt .*) {4}\(or --reject\)`).FindStringSubmatch(r.err)
	if m == nil {
		t.Fatalf("no approve line:\n%s", r.err)
	}
	_, req := pendingApproval(t, r)
	if want := "agentrt --config " + e.config + " --store " + store + " --tenant acme approve t1 " + req; m[1] != want {
		t.Fatalf("approve line:\n got %s\nwant %s", m[1], want)
	}
	// The line, run as it is, answers the request in acme's session of
	// the other store.
	r = agentrt(t, e.opts, strings.Fields(m[1])[1:]...)
	if r.code != cli.ExitOK || !strings.Contains(r.out, "21*2+5 = 47") {
		t.Fatalf("the printed command: %v", r)
	}
	// Done: the next turn.
	want := "session t1 (continue with: " + strings.Join(append([]string{"agentrt"}, global...), " ") + " run --session t1 TEXT)\n"
	if !strings.HasSuffix(r.err, want) {
		t.Errorf("stderr:\n got %q\nwant …%q", r.err, want)
	}
	// Only the flags given.
	// (The built-in config, its model found in no environment: the demo.)
	offline := app.Options{Getenv: func(string) string { return "" }, OllamaURL: "http://127.0.0.1:1"}
	r = agentrt(t, offline, "--store", store, "run", "--session", "t9", "what is 1+1")
	if want := "(continue with: agentrt --store " + store + " run --session t9 TEXT)"; r.code != cli.ExitOK || !strings.Contains(r.err, want) {
		t.Errorf("want %q in %v", want, r)
	}
}

// A paused run and a failed one say how to resume, with the flags.
func TestResumeLinesCarryTheFlags(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "models:\n  s: {provider: demo}\nagents:\n  a: {model: s, tools: [calculator], limits: {max_rounds: 1}}\n", nil)
	e.opts.Models = map[string]model.Model{"s": scripted.New("s",
		scripted.Reply{ToolCalls: []scripted.Call{scripted.ToolCall("calculator", `{"expression":"1+1"}`)}},
		scripted.Reply{Error: "boom"},
	)}
	r := e.must(cli.ExitPaused, "--tenant", "acme", "run", "--session", "p1", "add")
	if want := "continue with: agentrt --config " + e.config + " --tenant acme resume p1\n"; !strings.HasSuffix(r.err, want) {
		t.Errorf("paused: want %q at the end of\n%s", want, r.err)
	}
	r = e.must(cli.ExitFailed, "--tenant", "acme", "resume", "p1")
	if want := "once the cause is fixed, continue with: agentrt --config " + e.config + " --tenant acme resume p1\n"; !strings.HasSuffix(r.err, want) {
		t.Errorf("failed: want %q at the end of\n%s", want, r.err)
	}
}

// run on a session that waits for a person does not take the input, and
// says how to answer; resume (with no terminal to ask on) says the same.
func TestWaitingSessionSaysHowToAnswer(t *testing.T) {
	t.Parallel()
	e := newEnv(t, tourConfig, nil)
	_, req := pendingApproval(t, e.must(cli.ExitWaiting, "run", "--session", "w1", "what is 21*2+5"))
	line := "agentrt --config " + e.config + " approve w1 " + req + "    (or --reject)"
	r := e.must(cli.ExitWaiting, "run", "--session", "w1", "what is 1+1")
	if want := "agentrt: session w1 is waiting for a person, so the input was not run; resolve with:\n  " + line + "\n"; r.err != want {
		t.Errorf("run:\n got %q\nwant %q", r.err, want)
	}
	r = e.must(cli.ExitWaiting, "resume", "w1")
	if want := "agentrt: session w1 is waiting for a person; resolve with:\n  " + line + "\n"; r.err != want {
		t.Errorf("resume:\n got %q\nwant %q", r.err, want)
	}
	if evs := parseEvents(t, e.must(cli.ExitOK, "sessions", "events", "w1").out); len(ofType(evs, "run_started")) != 1 {
		t.Errorf("the refused input started a run: %v", types(evs))
	}
}
