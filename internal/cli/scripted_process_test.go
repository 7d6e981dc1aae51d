package cli_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/internal/cli"
	"github.com/agentrt/agentrt/internal/testenv"
)

// One script file serves a session across processes and turns: the run
// that waits for an approval plays the tool call; `agentrt approve`, in a
// new process, resumes it and plays the second reply (the call is not
// asked for again, and the tool runs once); a later turn, in a third
// process, plays the third; a turn past the script fails saying so.
func TestProcessApprovalOneScript(t *testing.T) {
	t.Parallel()
	testenv.SkipShort(t, "runs child processes")
	e := newEnv(t, `
models:
  s: {provider: scripted, script: deploy.yaml}
agents:
  assistant:
    model: s
    tools: [journal]
    approval: {ask: [journal]}
`, map[string]string{"deploy.yaml": `
replies:
  - tool_calls: [{name: journal, arguments: {line: deploy}}]
    chunks: 3
  - text: "deployed once"
    expect: {last_tool_result_contains: recorded deploy}
  - text: "you are welcome"
    expect: {last_user_contains: thanks}
`})
	journal := e.dir + "/journal"
	env := []string{"AGENTRT_JOURNAL=" + journal}
	// runChild runs agentrt to its end, wanting exit code want.
	runChild := func(want int, args ...string) (stdout []string, stderr string) {
		t.Helper()
		c := startChild(t, e.dir, env, append([]string{"--config", e.config}, args...)...)
		for l := range c.stdout {
			stdout = append(stdout, l)
		}
		if code := c.wait(); code != want {
			t.Fatalf("agentrt %s: exit %d, want %d; stderr:\n%s", strings.Join(args, " "), code, want, c.stderrText())
		}
		return stdout, c.stderrText()
	}

	out, errText := runChild(cli.ExitWaiting, "run", "--json", "--session", "s1", "deploy")
	checkToolCallDeltas(t, out)
	m := approveCmd.FindStringSubmatch(errText)
	if m == nil {
		t.Fatalf("stderr does not say how to approve:\n%s", errText)
	}
	if runs := journalRuns(t, journal); len(runs) != 0 {
		t.Fatalf("the tool ran before its approval: %v", runs)
	}

	out, _ = runChild(cli.ExitOK, "approve", m[1], m[2])
	if text := strings.Join(out, "\n"); !strings.Contains(text, "deployed once") {
		t.Errorf("approve's stdout lacks the script's second reply:\n%s", text)
	}
	if runs := journalRuns(t, journal); len(runs) != 1 || !strings.HasPrefix(runs[0], "deploy ") {
		t.Errorf("journal %v, want the tool's one run", runs)
	}

	out, _ = runChild(cli.ExitOK, "run", "--session", "s1", "thanks")
	if text := strings.Join(out, "\n"); !strings.Contains(text, "you are welcome") {
		t.Errorf("the second turn's stdout lacks the script's third reply:\n%s", text)
	}
	_, errText = runChild(cli.ExitFailed, "run", "--session", "s1", "once more")
	if want := "the request holds 3 assistant messages, so it asks for reply 4 of a conversation, and the script has 3 successful replies"; !strings.Contains(errText, want) {
		t.Errorf("past the script, stderr lacks %q:\n%s", want, errText)
	}

	evs := parseEvents(t, newProcChild(t, e).mustOut("--config", e.config, "sessions", "events", "s1"))
	checkSeq(t, evs, 1)
	var finals []string
	for _, ev := range ofType(evs, "final") {
		finals = append(finals, data(t, ev)["text"].(string))
	}
	if got := strings.Join(finals, " | "); got != "deployed once | you are welcome" {
		t.Errorf("finals %q", got)
	}
	if n := len(ofType(evs, "tool_result")); n != 1 {
		t.Errorf("%d tool results, want 1: %v", n, types(evs))
	}
	if runs := journalRuns(t, journal); len(runs) != 1 {
		t.Errorf("journal %v, want one run", runs)
	}
}

// checkToolCallDeltas checks that `run --json` printed the tool call's
// pieces as tool_call_delta lines without seq, before its model_finished,
// and that they add up to its arguments.
func checkToolCallDeltas(t *testing.T, lines []string) {
	t.Helper()
	var args, id, name string
	pieces := 0
	for _, l := range lines {
		var e struct {
			Seq  int64           `json:"seq"`
			Type string          `json:"type"`
			Data json.RawMessage `json:"data"`
		}
		if err := json.Unmarshal([]byte(l), &e); err != nil {
			t.Fatalf("not a JSON event: %q", l)
		}
		switch e.Type {
		case "tool_call_delta":
			var d struct {
				Index     int     `json:"index"`
				CallID    string  `json:"call_id"`
				Name      string  `json:"name"`
				Arguments *string `json:"arguments"`
			}
			if err := json.Unmarshal(e.Data, &d); err != nil || d.Arguments == nil || d.Index != 0 || e.Seq != 0 {
				t.Errorf("tool_call_delta line %s", l)
				continue
			}
			pieces++
			args, id, name = args+*d.Arguments, id+d.CallID, name+d.Name
		case "model_finished":
			var d struct {
				ToolCalls []struct {
					ID        string          `json:"id"`
					Name      string          `json:"name"`
					Arguments json.RawMessage `json:"arguments"`
				} `json:"tool_calls"`
			}
			if err := json.Unmarshal(e.Data, &d); err != nil || len(d.ToolCalls) != 1 {
				t.Fatalf("model_finished %s", e.Data)
			}
			c := d.ToolCalls[0]
			if pieces != 3 || args != string(c.Arguments) || id != c.ID || name != c.Name {
				t.Errorf("%d pieces adding up to call %q %q %s; model_finished has %q %q %s", pieces, id, name, args, c.ID, c.Name, c.Arguments)
			}
			return
		}
	}
	t.Errorf("no model_finished in:\n%s", strings.Join(lines, "\n"))
}
