package agentrt_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/model/scripted"
	"github.com/agentrt/agentrt/session"
	"github.com/agentrt/agentrt/session/memstore"
	"github.com/agentrt/agentrt/session/storetest"
)

// loopingModel calls the calculator with the same expression n times,
// then answers; the reply after the warning must carry the reminder.
func loopingModel(n int) *scripted.Model {
	var replies []scripted.Reply
	for range n {
		replies = append(replies, scripted.Reply{ToolCalls: []scripted.Call{scripted.ToolCall("calculator", `{"expression":"1+1"}`)}})
	}
	return scripted.New("m", append(replies, scripted.Reply{Text: "2"})...)
}

func loopAgent(m *scripted.Model, l agentrt.LoopDetection) *agentrt.Agent {
	a := calcAgent(m, nil)
	a.Limits.MaxRounds = 30
	a.LoopDetection = l
	return a
}

// A model that calls the same tool with the same arguments again and again
// gets a loop_warning (and a reminder it sees) at the warning count, and
// the run stops failed, loop_detected, at the critical count, with the
// reason in words; a person's resume tries again with the counts reset.
func TestLoopGuardStopsARepeatingModel(t *testing.T) {
	m := loopingModel(20).Record()
	a := loopAgent(m, agentrt.LoopDetection{})
	a.Tools = registry(t)
	e := newEnv(t, nil, agentrt.Config{}, a)
	id := e.session(t, "calc")
	res, err := agentrt.Collect(e.r.Run(context.Background(), id, agentrt.Input{Text: "1+1?"}))
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != session.StatusFailed || res.Reason != "loop_detected" {
		t.Fatalf("run: %s %s, want failed loop_detected", res.Status, res.Reason)
	}
	const want = "stopped a loop: calculator was called 8 times in this turn with the same arguments (loop_detection.critical is 8); resume the session to let it try again"
	if res.Err == nil || res.Err.Code != "loop_detected" || res.Err.Message != want {
		t.Fatalf("error event %+v,\nwant message %q", res.Err, want)
	}
	log := storedLog(t, e.store, id)
	var warnings []*session.LoopWarning
	calls := 0
	for _, ev := range log {
		switch d := ev.Data.(type) {
		case *session.LoopWarning:
			warnings = append(warnings, d)
		case *session.ToolResult:
			calls++
		}
	}
	if calls != 8 || len(warnings) != 1 || warnings[0].Detector != "repeat" || warnings[0].Count != 4 {
		t.Fatalf("%d calls, warnings %+v; want 8 calls and one repeat warning at 4", calls, warnings)
	}
	// The model's fifth request ends with the reminder.
	reqs := m.Requests()
	last := reqs[4].Messages[len(reqs[4].Messages)-1]
	if !strings.HasPrefix(last.Text(), "[loop warning] calculator was called 4 times") {
		t.Errorf("fifth request ends with %q, want the reminder", last.Text())
	}
	// A person resumes: the counts start again, and the model answers.
	e2 := newEnv(t, e.store, agentrt.Config{}, loopAgentWithTools(t, scripted.New("m", scripted.Reply{Text: "2"})))
	if res := e2.resume(t, id); res.Status != session.StatusDone {
		t.Fatalf("resume: %s %s", res.Status, res.Reason)
	}
}

func loopAgentWithTools(t *testing.T, m *scripted.Model) *agentrt.Agent {
	a := loopAgent(m, agentrt.LoopDetection{})
	a.Tools = registry(t)
	return a
}

// Two calls in turn, A B A B …, are a ping-pong.
func TestLoopGuardPingPong(t *testing.T) {
	var replies []scripted.Reply
	for i := range 12 {
		expr := []string{`{"expression":"1+1"}`, `{"expression":"2+2"}`}[i%2]
		replies = append(replies, scripted.Reply{ToolCalls: []scripted.Call{scripted.ToolCall("calculator", expr)}})
	}
	a := loopAgentWithTools(t, scripted.New("m", replies...))
	e := newEnv(t, nil, agentrt.Config{}, a)
	id := e.session(t, "calc")
	res, _ := agentrt.Collect(e.r.Run(context.Background(), id, agentrt.Input{Text: "go"}))
	if res.Reason != "loop_detected" || !strings.Contains(res.Err.Message, "calculator and calculator were called in turn, 10 calls in a row") {
		t.Fatalf("run: %s %s %+v", res.Status, res.Reason, res.Err)
	}
}

// The counts are folded from the log: a run that stopped (its store
// failing, as a crash would) after 6 repeated calls is stopped by the
// guard after 2 more once resumed, not 8.
func TestLoopGuardSurvivesResume(t *testing.T) {
	var faults storetest.Faults
	mem := memstore.New()
	e := newEnv(t, storetest.Faulty(mem, &faults), agentrt.Config{}, loopAgentWithTools(t, loopingModel(20)))
	id := e.session(t, "calc")
	// Commits: the first, then two per call (its announcement, its
	// result): the 15th is the seventh call's result.
	faults.FailCommit(15, false)
	if _, err := agentrt.Collect(e.r.Run(context.Background(), id, agentrt.Input{Text: "1+1?"})); !errors.Is(err, storetest.ErrInjected) {
		t.Fatalf("run: %v", err)
	}
	if n := len(toolResults(storedLog(t, mem, id))); n != 6 {
		t.Fatalf("%d results stored before the failure, want 6", n)
	}
	m := loopingModel(20)
	e2 := newEnv(t, mem, agentrt.Config{}, loopAgentWithTools(t, m))
	res := e2.resume(t, id)
	if res.Reason != "loop_detected" {
		t.Fatalf("resume: %s %s", res.Status, res.Reason)
	}
	if n := len(toolResults(storedLog(t, mem, id))); n != 8 {
		t.Errorf("%d results in all, want 8: the counts did not survive", n)
	}
}

// Switched off, the guard lets the model repeat until the round limit.
func TestLoopGuardOff(t *testing.T) {
	a := loopAgentWithTools(t, loopingModel(40))
	a.LoopDetection.Off = true
	a.Limits.MaxRounds = 12
	e := newEnv(t, nil, agentrt.Config{}, a)
	id := e.session(t, "calc")
	res := e.run(t, id, "1+1?")
	if res.Status != session.StatusPaused {
		t.Fatalf("run: %s %s, want paused at the round limit", res.Status, res.Reason)
	}
}

// A misconfigured guard is refused when the runner is made.
func TestLoopGuardBadConfig(t *testing.T) {
	a := loopAgentWithTools(t, loopingModel(1))
	a.LoopDetection = agentrt.LoopDetection{Warning: 8, Critical: 8}
	_, err := agentrt.NewRunner(agentrt.Config{Store: memstore.New(), Agents: []*agentrt.Agent{a}})
	if err == nil || !strings.Contains(err.Error(), `agent "calc": loop_detection: warning (8) must be below critical (8)`) {
		t.Fatalf("NewRunner: %v", err)
	}
}
