package cli_test

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/internal/cli"
	"github.com/agentrt/agentrt/internal/pgtest"
	"github.com/agentrt/agentrt/internal/testenv"
)

// Two processes on one Postgres: sessions events --follow in one prints
// the live tokens of the turn agentrt run streams in the other, between
// the model call's model_started and model_finished, and they make the
// answer.
func TestProcessFollowRelaysTokens(t *testing.T) {
	t.Parallel()
	testenv.SkipShort(t, "runs child processes")
	dsn, _ := pgtest.Schema(t)
	e := newEnvStore(t, dsn, demoConfig, nil)
	first := startChild(t, e.dir, nil, "--config", e.config, "run", "--session", "s1", "what is 1+1")
	if code := first.wait(); code != cli.ExitOK {
		t.Fatalf("first run: exit %d\n%s", code, first.stderrText())
	}
	f := startChild(t, e.dir, nil, "--config", e.config, "sessions", "events", "s1", "--follow")
	// The first turn, from the log: the follower listens for the relay
	// before it prints anything.
	f.waitEvent("run_finished")
	r := startChild(t, e.dir, nil, "--config", e.config, "run", "--session", "s1", "what is 2+3")
	if code := r.wait(); code != cli.ExitOK {
		t.Fatalf("second run: exit %d\n%s", code, r.stderrText())
	}
	var (
		lines    []string
		tokens   []string
		inCall   bool
		answered string
	)
	for l := range f.stdout {
		lines = append(lines, l)
		var e event
		if err := json.Unmarshal([]byte(l), &e); err != nil {
			t.Fatalf("not an event: %s", l)
		}
		switch e.Type {
		case "model_started":
			inCall, tokens = true, nil // the answer is the last call's
		case "model_finished":
			inCall = false
		case "token":
			var d struct {
				Text string `json:"text"`
			}
			_ = json.Unmarshal(e.Data, &d)
			if !inCall || e.Seq != 0 {
				t.Errorf("a token out of place (seq %d, in a model call: %v): %s", e.Seq, inCall, l)
			}
			tokens = append(tokens, d.Text)
		case "final":
			var d struct {
				Text string `json:"text"`
			}
			_ = json.Unmarshal(e.Data, &d)
			answered = d.Text
		}
		if e.Type == "run_finished" {
			break
		}
	}
	if !strings.Contains(answered, "2+3 = 5") {
		t.Fatalf("the follower's final: %q\n%s", answered, strings.Join(lines, "\n"))
	}
	if len(tokens) < 2 || strings.Join(tokens, "") != answered {
		t.Errorf("the follower's tokens %q do not make the answer %q\n%s", tokens, answered, strings.Join(lines, "\n"))
	}
	f.signal(os.Interrupt)
	if code := f.wait(); code != cli.ExitOK {
		t.Errorf("the follower exited %d after Ctrl-C\n%s", code, f.stderrText())
	}
}
