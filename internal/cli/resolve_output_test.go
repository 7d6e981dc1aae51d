package cli_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/internal/cli"
	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/model/scripted"
)

// respond and approve with --json print every event they caused, from the
// first: the decision (and the answer it gives the call), then the events
// of the run it resumes, with no gap.
func TestResolveJSONFromTheFirstEvent(t *testing.T) {
	t.Parallel()
	e := newEnv(t, tourConfig, nil)
	r := e.must(cli.ExitWaiting, "run", "--session", "t2", "ask me: what is your name?")
	q := regexp.MustCompile(`\[prompt\] what is your name\? \(request (\S+)\)`).FindStringSubmatch(r.out)
	if q == nil {
		t.Fatalf("no prompt:\n%s", r.out)
	}
	before := parseEvents(t, e.must(cli.ExitOK, "sessions", "events", "t2").out)
	evs := parseEvents(t, e.must(cli.ExitOK, "respond", "--json", "t2", q[1], "Ada").out)
	checkSeq(t, evs, before[len(before)-1].Seq+1)
	if diff := cmp.Diff([]string{"input_resolved", "tool_result", "run_resumed"}, types(evs)[:3]); diff != "" {
		t.Errorf("the first events (-want +got):\n%s", diff)
	}
	if d := data(t, evs[0]); d["request_id"] != q[1] || d["text"] != "Ada" {
		t.Errorf("input_resolved: %s", evs[0].Data)
	}

	_, req := pendingApproval(t, e.must(cli.ExitWaiting, "run", "--session", "t1", "what is 21*2+5"))
	before = parseEvents(t, e.must(cli.ExitOK, "sessions", "events", "t1").out)
	evs = parseEvents(t, e.must(cli.ExitOK, "approve", "--json", "t1", req).out)
	checkSeq(t, evs, before[len(before)-1].Seq+1)
	if diff := cmp.Diff([]string{"input_resolved", "run_resumed"}, types(evs)[:2]); diff != "" {
		t.Errorf("the first events (-want +got):\n%s", diff)
	}
}

// The line of a resumed run names what was answered: an answer, a
// choice, an approval (the event's reason stays "approval").
func TestResumedSaysWhatWasAnswered(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "models:\n  s: {provider: demo}\nagents:\n  assistant: {model: s, tools: [ask_user, calculator], approval: {ask: [calculator]}}\n", nil)
	e.opts.Models = map[string]model.Model{"s": scripted.New("s",
		scripted.Reply{ToolCalls: []scripted.Call{scripted.ToolCall("ask_user", `{"question":"your name?"}`)}},
		scripted.Reply{ToolCalls: []scripted.Call{scripted.ToolCall("ask_user", `{"question":"which color?","options":["red","green"]}`)}},
		scripted.Reply{ToolCalls: []scripted.Call{scripted.ToolCall("calculator", `{"expression":"1+1"}`)}},
		scripted.Reply{Text: "done"},
	)}
	r := e.must(cli.ExitWaiting, "run", "--session", "s1", "go")
	for _, step := range []struct {
		args []string
		want string
	}{
		{[]string{"respond", "s1", "REQ", "Ada"}, "[run] resumed (answer)\n"},
		{[]string{"respond", "s1", "REQ", "--select", "green"}, "[run] resumed (choice)\n"},
		{[]string{"approve", "s1", "REQ"}, "[run] resumed (approval)\n"},
	} {
		m := regexp.MustCompile(`request (\S+?)\)`).FindStringSubmatch(r.out)
		if m == nil {
			t.Fatalf("no request in:\n%s", r.out)
		}
		args := append([]string(nil), step.args...)
		args[2] = m[1]
		r = e.run(args...)
		if !strings.Contains(r.out, step.want) {
			t.Errorf("%v: stdout lacks %q:\n%s", step.args, step.want, r.out)
		}
	}
	if r.code != cli.ExitOK || !strings.Contains(r.out, "done") {
		t.Errorf("the last: %v", r)
	}
	for _, ev := range ofType(parseEvents(t, e.must(cli.ExitOK, "sessions", "events", "s1").out), "run_resumed") {
		if d := data(t, ev); d["reason"] != "approval" {
			t.Errorf("run_resumed %s: the stored reason changed", ev.Data)
		}
	}
}
