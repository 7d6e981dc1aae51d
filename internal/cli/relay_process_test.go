package cli_test

import (
	"context"
	"encoding/json"
	"iter"
	"net"
	"os"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/internal/cli"
	"github.com/agentrt/agentrt/internal/pgtest"
	"github.com/agentrt/agentrt/internal/testenv"
	"github.com/agentrt/agentrt/model"
)

// gatedAnswer is what the gated model streams, word by word.
const gatedAnswer = "tokens relayed from another process"

// childModels are the models a child process adds: with
// AGENTRT_TEST_GATE set (an address on 127.0.0.1), "gated" streams
// gatedAnswer, then waits, before it ends its reply, until the test
// lets it go (one byte on a connection to that address).
func childModels() map[string]model.Model {
	addr := os.Getenv("AGENTRT_TEST_GATE")
	if addr == "" {
		return nil
	}
	return map[string]model.Model{"gated": gatedModel{addr}}
}

type gatedModel struct{ addr string }

func (gatedModel) Name() string { return "gated" }

func (m gatedModel) Stream(ctx context.Context, req *model.Request) iter.Seq2[model.Chunk, error] {
	return func(yield func(model.Chunk, error) bool) {
		for i, w := range strings.Fields(gatedAnswer) {
			if i > 0 {
				w = " " + w
			}
			if !yield(model.Chunk{Text: w}, nil) {
				return
			}
		}
		var d net.Dialer
		c, err := d.DialContext(ctx, "tcp", m.addr)
		if err != nil {
			yield(model.Chunk{}, err)
			return
		}
		defer c.Close()
		if _, err := c.Read(make([]byte, 1)); err != nil {
			yield(model.Chunk{}, err)
			return
		}
		yield(model.Chunk{FinishReason: model.FinishStop}, nil)
	}
}

// Two processes on one Postgres: sessions events --follow in one prints
// the live tokens of the turn agentrt run streams in the other, as they
// stream (the model holds its reply's end until the follower has shown
// them all), between the call's model_started and model_finished.
func TestProcessFollowRelaysTokens(t *testing.T) {
	t.Parallel()
	testenv.SkipShort(t, "runs child processes")
	dsn, _ := pgtest.Schema(t)
	e := newEnvStore(t, dsn, "models:\n  gated: {provider: demo}\nagents:\n  assistant: {model: gated}\n", nil)
	first := startChild(t, e.dir, nil, "--config", e.config, "run", "--session", "s1", "what is 1+1")
	if code := first.wait(); code != cli.ExitOK {
		t.Fatalf("first run (the demo model): exit %d\n%s", code, first.stderrText())
	}
	f := startChild(t, e.dir, nil, "--config", e.config, "sessions", "events", "s1", "--follow")
	// The first turn, from the log: the follower listens for the relay
	// before it prints anything.
	f.waitEvent("run_finished")

	gate, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer gate.Close()
	r := startChild(t, e.dir, []string{"AGENTRT_TEST_GATE=" + gate.Addr().String()}, "--config", e.config, "run", "--session", "s1", "relay")
	words := len(strings.Fields(gatedAnswer))
	var (
		lines  []string
		tokens []string
		inCall bool
		final  string
	)
	for l := range f.stdout {
		lines = append(lines, l)
		var e event
		if err := json.Unmarshal([]byte(l), &e); err != nil {
			t.Fatalf("not an event: %s", l)
		}
		var d struct {
			Text string `json:"text"`
		}
		_ = json.Unmarshal(e.Data, &d)
		switch e.Type {
		case "model_started":
			inCall = true
		case "model_finished":
			inCall = false
		case "final":
			final = d.Text
		case "token":
			if !inCall || e.Seq != 0 {
				t.Errorf("a token out of place (seq %d, in a model call: %v): %s", e.Seq, inCall, l)
			}
			tokens = append(tokens, d.Text)
			if len(tokens) == words {
				// All shown while the run holds its reply: let it end.
				c, err := gate.Accept()
				if err != nil {
					t.Fatal(err)
				}
				c.Write([]byte{1})
				c.Close()
			}
		}
		if e.Type == "run_finished" {
			break
		}
	}
	if code := r.wait(); code != cli.ExitOK {
		t.Fatalf("the streaming run: exit %d\n%s", code, r.stderrText())
	}
	if got := strings.Join(tokens, ""); got != gatedAnswer || final != gatedAnswer {
		t.Errorf("the follower's tokens %q and final %q, want %q\n%s", tokens, final, gatedAnswer, strings.Join(lines, "\n"))
	}
	f.signal(os.Interrupt)
	if code := f.wait(); code != cli.ExitOK {
		t.Errorf("the follower exited %d after Ctrl-C\n%s", code, f.stderrText())
	}
}
