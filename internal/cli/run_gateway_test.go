package cli_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/internal/cli"
	"github.com/agentrt/agentrt/session"
)

// runStarted is the data of a run_started event.
type runStarted struct {
	Input  string   `json:"input"`
	Source string   `json:"source"`
	Inputs []string `json:"inputs"`
}

func startedOf(t *testing.T, evs []event) []runStarted {
	t.Helper()
	var out []runStarted
	for _, e := range ofType(evs, "run_started") {
		var d runStarted
		if err := json.Unmarshal(e.Data, &d); err != nil {
			t.Fatal(err)
		}
		out = append(out, d)
	}
	return out
}

// agentrt run stores its input in the inbox of its source (cli, or
// --source) and the gateway's turn answers it here and now — a debounce
// does not hold it up — printing the turn as before.
func TestRunGoesThroughTheGateway(t *testing.T) {
	t.Parallel()
	e := newEnv(t, demoConfig+"gateway: {debounce: 1h}\n", nil)
	r := e.must(cli.ExitOK, "run", "--session", "s1", "what is 2+3")
	if !strings.HasSuffix(r.out, "2+3 = 5\n") || !strings.Contains(r.out, "[tool] calculator ok") {
		t.Errorf("run's output:\n%s", r.out)
	}
	ins := e.inputs("cli")
	if len(ins) != 1 || ins[0].State != session.InputAnswered || ins[0].SessionID != "s1" || ins[0].Parts[0].Text != "what is 2+3" {
		t.Fatalf("the cli source's inbox: %+v", ins)
	}
	evs := parseEvents(t, e.must(cli.ExitOK, "run", "--json", "--session", "s1", "--source", "desk", "what is 3+4").out)
	checkSeq(t, evs, evs[0].Seq)
	starts := startedOf(t, evs)
	desk := e.inputs("desk")
	if len(starts) != 1 || len(desk) != 1 || !slices.Equal(starts[0].Inputs, []string{desk[0].ID}) || starts[0].Source != "desk" {
		t.Fatalf("run_started %+v, desk's inbox %+v: want the turn to name the desk's input", starts, desk)
	}
	if fin := ofType(evs, "run_finished"); len(fin) != 1 || desk[0].RunID == "" || !strings.Contains(string(fin[0].Data), `"done"`) {
		t.Errorf("run_finished %v, the input answered by %q", fin, desk[0].RunID)
	}
}

// The turn answers what the source has pending, merged: an input sent
// earlier comes first.
func TestRunAnswersTheSourcesPendingInputs(t *testing.T) {
	t.Parallel()
	e := newEnv(t, demoConfig, nil)
	e.must(cli.ExitOK, "run", "--session", "s2", "what is 1+1")
	sent := e.sent("--source", "cli", "--session", "s2", "hello")
	evs := parseEvents(t, e.must(cli.ExitOK, "run", "--json", "--session", "s2", "what is 2+3").out)
	starts := startedOf(t, evs)
	ins := e.inputs("cli")
	if len(starts) != 1 || len(ins) != 3 || !slices.Equal(starts[0].Inputs, []string{sent, ins[2].ID}) ||
		starts[0].Input != "hello\n\nwhat is 2+3" {
		t.Fatalf("run_started %+v, want the sent input and run's, merged", starts)
	}
}

// A session that waits for a person takes no input: run says so and
// stores nothing in the inbox. A session of another agent: run says so,
// and its input is set aside, refused with why.
func TestRunRefusedInputs(t *testing.T) {
	t.Parallel()
	e := newEnv(t, tourConfig, nil)
	pendingApproval(t, e.must(cli.ExitWaiting, "run", "--session", "w1", "what is 21*2+5"))
	r := e.must(cli.ExitWaiting, "run", "--session", "w1", "what is 1+1")
	if !strings.Contains(r.err, "so the input was not run") {
		t.Errorf("run on a waiting session: %v", r)
	}
	if ins := e.inputs("cli"); len(ins) != 1 {
		t.Errorf("the inbox holds %d inputs, want the first run's only: %+v", len(ins), ins)
	}

	e = newEnv(t, "models:\n  d: {provider: demo}\nagents:\n  a1: {model: d}\n  a2: {model: d}\n", nil)
	e.must(cli.ExitOK, "run", "--agent", "a1", "--session", "s1", "hi")
	r = e.must(cli.ExitUsage, "run", "--agent", "a2", "--session", "s1", "hi")
	if r.err != "agentrt: session \"s1\" belongs to agent \"a1\", not \"a2\"\n" {
		t.Errorf("run with another agent: %v", r)
	}
	ins := e.inputs("cli")
	if len(ins) != 2 || ins[1].State != session.InputRefused || !strings.Contains(ins[1].Reason, `belongs to agent "a1"`) {
		t.Errorf("the cli source's inbox: %+v, want the second input refused", ins)
	}
}
