package cli_test

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/agentrt/agentrt/internal/cli"
	"github.com/agentrt/agentrt/internal/fakellm"
	"github.com/agentrt/agentrt/internal/testenv"
	"github.com/agentrt/agentrt/session"
)

// These tests kill agentrt gateway with SIGKILL at the moments a crash
// can hurt the inbox — inputs stored and not taken, a debounce window
// open, a model call in flight, a tool with side effects running — and
// start a second gateway on the same store, which must finish the work:
// every input answered exactly once, in one turn, as it would have been
// without the crash; nothing lost; no side effect twice. On SQLite and on
// Postgres. What they check, they read from the store (inbox list,
// sessions events), never from a log.

// gatewayCrashes runs test on each store, in parallel.
func gatewayCrashes(t *testing.T, test func(t *testing.T, store string)) {
	t.Parallel()
	testenv.SkipShort(t, "runs child processes")
	for _, st := range stores {
		t.Run(st.name, func(t *testing.T) {
			t.Parallel()
			test(t, st.dsn(t))
		})
	}
}

// fakeModelConfig is an assistant on the fake OpenAI-compatible server at
// url, which answers "You said: " and the input.
func fakeModelConfig(url string) string {
	return fmt.Sprintf("models:\n  m: {provider: openai, model: fake, base_url: %q}\nagents:\n  assistant: {model: m}\n", url+"/v1")
}

// Inputs wait in the inbox; a gateway starts, takes them into a turn and
// is killed before the turn's agent runs (a module ahead of it holds the
// turn). A second gateway answers them all, in one turn.
func TestProcessGatewayCrashInputsPending(t *testing.T) {
	gatewayCrashes(t, func(t *testing.T, store string) {
		srv := fakellm.Start(t)
		e := newEnvStore(t, store, fakeModelConfig(srv.URL)+"gateway:\n  sources:\n    chat: {session: support}\n", nil)
		p := newProcChild(t, e)
		ids := sendInputs(p, "chat", "hi", "I need a refund", "the blue one")

		g := startGateway(t, e, "AGENTRT_GATE=block")
		g.waitStderr(blockedLine("gate"))
		kill(g)
		checkPending(p, "chat", ids)
		if n := len(srv.Requests()); n != 0 {
			t.Fatalf("the killed gateway called the model %d times", n)
		}

		g = startGateway(t, e)
		g.waitStderr("source chat") // its turn, or its failure
		stop(g)
		want := "hi\n\nI need a refund\n\nthe blue one"
		checkAnsweredOnce(p, "chat", "support", ids, want)
		checkFinal(p, "support", "You said: "+want)
	})
}

// A debounce window is open: the gateway has seen the source's inputs
// (another source's turn ran after they were stored) and waits an hour
// for the source to settle when it is killed. A second gateway, with a
// short window, answers them in one turn, merged in order — those sent
// before the first gateway started and the one sent while it ran.
func TestProcessGatewayCrashDuringDebounce(t *testing.T) {
	gatewayCrashes(t, func(t *testing.T, store string) {
		srv := fakellm.Start(t)
		e := newEnvStore(t, store, fakeModelConfig(srv.URL)+`
gateway:
  sources:
    chat: {debounce: "${AGENTRT_CHAT_DEBOUNCE:-1h}", max_wait: 2h}
`, nil)
		p := newProcChild(t, e)
		ids := sendInputs(p, "chat", "hi", "I need a refund")

		g := startGateway(t, e)
		g.waitStderr("agentrt gateway: answering the inputs stored in")
		ids = append(ids, sendInputs(p, "chat", "the blue one")...)
		// The probe's source has no debounce: once its turn is over, the
		// gateway has listed the inbox with chat's three inputs in it.
		probe := sendInputs(p, "probe", "are you there?")
		g.waitStderr("source probe, session probe: 1 input(s) (" + probe[0] + "), run ")
		checkPending(p, "chat", ids)
		kill(g)
		checkPending(p, "chat", ids)

		g = startGateway(t, e, "AGENTRT_CHAT_DEBOUNCE=1ms")
		g.waitStderr("source chat") // its turn, or its failure
		stop(g)
		want := "hi\n\nI need a refund\n\nthe blue one"
		checkAnsweredOnce(p, "chat", "chat", ids, want)
		checkFinal(p, "chat", "You said: "+want)
	})
}

// The gateway is killed while the turn's model call is in flight (the
// model server holds the request). The turn's first commit marked its
// inputs answered: the second gateway does not answer them again, it
// resumes the crashed turn, which calls the model again and stores its
// answer.
func TestProcessGatewayCrashDuringModelCall(t *testing.T) {
	gatewayCrashes(t, func(t *testing.T, store string) {
		srv := fakellm.Start(t)
		arrived, _ := srv.Hold()
		e := newEnvStore(t, store, fakeModelConfig(srv.URL), nil)
		p := newProcChild(t, e)
		ids := sendInputs(p, "chat", "hi", "I need a refund")

		g := startGateway(t, e)
		select {
		case <-arrived:
		case <-g.done:
			t.Fatalf("the gateway exited before its model call:\n%s", g.stderrText())
		}
		kill(g)
		want := "hi\n\nI need a refund"
		run := checkAnsweredOnce(p, "chat", "chat", ids, want)
		if evs := sessionEvents(p, "chat"); ofType(evs, "run_finished") != nil {
			t.Fatalf("the killed turn finished: %v", types(evs))
		}

		f := follow(t, e, "chat")
		g = startGateway(t, e)
		if fin := awaitEvent(f, "the killed turn's end", "run_finished"); !strings.Contains(string(fin.Data), `"status":"done"`) {
			t.Fatalf("the resumed turn ended %s", fin.Data)
		}
		stop(g)
		if again := checkAnsweredOnce(p, "chat", "chat", ids, want); again != run {
			t.Errorf("the inputs' run changed from %s to %s", run, again)
		}
		evs := sessionEvents(p, "chat")
		if rs := ofType(evs, "run_resumed"); len(rs) != 1 || data(t, rs[0])["reason"] != "recovered" {
			t.Errorf("want the turn resumed once, recovered: %v", types(evs))
		}
		checkFinal(p, "chat", "You said: "+want)
		if n := len(srv.Requests()); n != 2 {
			t.Errorf("%d model requests, want 2: the call in flight at the crash, and its retry", n)
		}
	})
}

// The gateway is killed while a tool with a side effect runs: journal
// has run and its result is stored, once (at most once:
// tool.Meta.AtMostOnce) has written its line and blocks. The second
// gateway resumes the turn: journal does not run again, and once's call,
// whose result was never stored, is not run again blindly — it becomes a
// confirmation a person answers, and the turn ends with the model's
// answer. Each side effect happened once; the inputs were answered once.
func TestProcessGatewayCrashDuringTool(t *testing.T) {
	gatewayCrashes(t, func(t *testing.T, store string) {
		e := newEnvStore(t, store, `
models:
  s: {provider: scripted, script: charge.yaml}
agents:
  assistant: {model: s, tools: [journal, once]}
`, map[string]string{"charge.yaml": `
replies:
  - tool_calls: [{name: journal, arguments: {line: looked-up}}]
  - tool_calls: [{name: once, arguments: {line: charged}}]
  - text: "charged once"
    expect: {last_tool_result_contains: the card was charged}
`})
		journal := filepath.Join(e.dir, "journal")
		p := newProcChild(t, e)
		ids := sendInputs(p, "chat", "refund order 42", "sorry, 43")

		g := startGateway(t, e, "AGENTRT_JOURNAL="+journal, "AGENTRT_ONCE=block")
		g.waitStderr(blockedLine("once"))
		kill(g)
		want := "refund order 42\n\nsorry, 43"
		run := checkAnsweredOnce(p, "chat", "chat", ids, want)

		f := follow(t, e, "chat")
		g = startGateway(t, e, "AGENTRT_JOURNAL="+journal)
		req := awaitEvent(f, "once's call to be confirmed", "input_required", "run_finished")
		if req.Type != "input_required" {
			t.Fatalf("the resumed turn ended %s without asking whether once's call took effect; journal %q",
				req.Data, journalRuns(t, journal))
		}
		var q struct {
			RequestID string `json:"request_id"`
			Kind      string `json:"kind"`
		}
		if err := json.Unmarshal(req.Data, &q); err != nil || q.Kind != "confirm" {
			t.Fatalf("input_required %s (%v), want a confirmation", req.Data, err)
		}
		code, out, errText := p.out("respond", "chat", q.RequestID, "--done", "--result", `"the card was charged"`)
		if code != cli.ExitOK || !strings.Contains(out, "charged once") {
			t.Fatalf("respond --done: exit %d\n%s\n%s", code, out, errText)
		}
		stop(g)

		runs := journalRuns(t, journal)
		if len(runs) != 2 || !strings.HasPrefix(runs[0], "looked-up ") || !strings.HasPrefix(runs[1], "charged ") ||
			!strings.HasSuffix(runs[1], " 1") {
			t.Errorf("journal %q, want each tool's side effect once", runs)
		}
		if again := checkAnsweredOnce(p, "chat", "chat", ids, want); again != run {
			t.Errorf("the inputs' run changed from %s to %s", run, again)
		}
		evs := sessionEvents(p, "chat")
		calls := map[string]int{}
		for _, c := range ofType(evs, "tool_call") {
			calls[data(t, c)["name"].(string)]++
		}
		if calls["journal"] != 1 || calls["once"] != 1 {
			t.Errorf("tool calls %v, want journal and once called once each: %v", calls, types(evs))
		}
		if rs := ofType(evs, "run_resumed"); len(rs) != 2 || data(t, rs[0])["reason"] != "recovered" {
			t.Errorf("want the turn resumed after the crash, then after the confirmation: %v", types(evs))
		}
		checkFinal(p, "chat", "charged once")
	})
}

// sendInputs sends each text from source, each in a process of its own,
// and returns the inputs' ids.
func sendInputs(p procChild, source string, texts ...string) []string {
	p.t.Helper()
	var ids []string
	for _, text := range texts {
		code, out, errText := p.out("send", "--source", source, text)
		id := strings.TrimSpace(out)
		if code != cli.ExitOK || !inputID.MatchString(id) {
			p.t.Fatalf("send %q: exit %d, %q\n%s", text, code, out, errText)
		}
		ids = append(ids, id)
	}
	return ids
}

// startGateway starts agentrt gateway with the extra environment.
func startGateway(t *testing.T, e *env, environ ...string) *child {
	t.Helper()
	return startChild(t, e.dir, environ, "--config", e.config, "gateway")
}

// kill kills c with SIGKILL and waits for it to be gone.
func kill(c *child) {
	c.t.Helper()
	if err := c.cmd.Process.Kill(); err != nil {
		c.t.Fatal(err)
	}
	c.wait()
	if ws, ok := c.cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		c.t.Fatalf("the gateway was not killed: %v\n%s", c.cmd.ProcessState, c.stderrText())
	}
}

// stop stops agentrt gateway with SIGTERM, as a person would: it exits 0.
func stop(c *child) {
	c.t.Helper()
	c.signal(syscall.SIGTERM)
	if code := c.wait(); code != cli.ExitOK {
		c.t.Fatalf("the gateway after SIGTERM: exit %d\n%s", code, c.stderrText())
	}
}

// follow starts agentrt sessions events --follow on session id: it
// prints every event of the session as it commits, from the first.
func follow(t *testing.T, e *env, id string) *child {
	t.Helper()
	return startChild(t, e.dir, nil, "--config", e.config, "sessions", "events", id, "--follow")
}

// awaitEvent reads f's events until one of the types comes, and returns
// it. If f ends first — its time is up: nothing came — the test fails
// saying what it waited for.
func awaitEvent(f *child, what string, types ...string) event {
	f.t.Helper()
	for l := range f.stdout {
		var e event
		if json.Unmarshal([]byte(l), &e) == nil && slices.Contains(types, e.Type) {
			return e
		}
	}
	f.t.Fatalf("no %s (%s) came: the second gateway did not go on with the turn\n%s", what, strings.Join(types, " or "), f.stderrText())
	return event{}
}

// sourceInputs is what the inbox holds of source, in every state.
func sourceInputs(p procChild, source string) []session.InboxInput {
	p.t.Helper()
	code, out, errText := p.out("inbox", "list", "--source", source, "--json")
	if code != cli.ExitOK {
		p.t.Fatalf("inbox list --source %s: exit %d\n%s", source, code, errText)
	}
	var ins []session.InboxInput
	if err := json.Unmarshal([]byte(out), &ins); err != nil {
		p.t.Fatal(err)
	}
	return ins
}

// checkPending checks that source's inputs are ids, all pending.
func checkPending(p procChild, source string, ids []string) {
	p.t.Helper()
	ins := sourceInputs(p, source)
	var got []string
	for _, in := range ins {
		if in.State != session.InputPending {
			p.t.Fatalf("input %s is %s (%s %s), want it pending", in.ID, in.State, in.RunID, in.Reason)
		}
		got = append(got, in.ID)
	}
	if !slices.Equal(got, ids) {
		p.t.Fatalf("source %s holds %v, want %v", source, got, ids)
	}
}

// checkAnsweredOnce checks that source's inputs are ids, all answered by
// one run of session sid, whose run_started names them in order with
// their merged text input, and that no other turn started in the session.
// It returns the run's id.
func checkAnsweredOnce(p procChild, source, sid string, ids []string, input string) string {
	p.t.Helper()
	ins := sourceInputs(p, source)
	var got []string
	run := ""
	for _, in := range ins {
		got = append(got, in.ID)
		if in.State != session.InputAnswered || in.SessionID != sid || in.RunID == "" || run != "" && in.RunID != run {
			p.t.Errorf("input %s: %s by run %q of session %s (%s), want all answered by one run of %s", in.ID, in.State, in.RunID, in.SessionID, in.Reason, sid)
		}
		run = in.RunID
	}
	if !slices.Equal(got, ids) {
		p.t.Errorf("source %s holds %v, want %v", source, got, ids)
	}
	_, out, _ := p.out("sessions", "events", sid, "--json")
	var starts []string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var e struct {
			Type  string     `json:"type"`
			RunID string     `json:"run_id"`
			Data  runStarted `json:"data"`
		}
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			p.t.Fatalf("sessions events %s: %q is not an event (%v)", sid, line, err)
		}
		if e.Type != "run_started" {
			continue
		}
		starts = append(starts, e.RunID)
		if e.RunID != run || !slices.Equal(e.Data.Inputs, ids) || e.Data.Input != input || e.Data.Source != source {
			p.t.Errorf("run_started of run %s answers %v from %s with %q; want run %s answering %v with %q",
				e.RunID, e.Data.Inputs, e.Data.Source, e.Data.Input, run, ids, input)
		}
	}
	if len(starts) != 1 {
		p.t.Errorf("session %s started %d turns (%v), want one", sid, len(starts), starts)
	}
	return run
}

// sessionEvents reads session id's events from the store.
func sessionEvents(p procChild, id string) []event {
	p.t.Helper()
	code, out, errText := p.out("sessions", "events", id, "--json")
	if code != cli.ExitOK {
		p.t.Fatalf("sessions events %s: exit %d\n%s", id, code, errText)
	}
	evs := parseEvents(p.t, out)
	checkSeq(p.t, evs, 1)
	return evs
}

// checkFinal checks that session id's last turn ended done with the
// answer text, said once.
func checkFinal(p procChild, id, text string) {
	p.t.Helper()
	evs := sessionEvents(p, id)
	var finals []any
	for _, f := range ofType(evs, "final") {
		finals = append(finals, data(p.t, f)["text"])
	}
	if len(finals) != 1 || finals[0] != text {
		p.t.Errorf("final answers %q, want one: %q", finals, text)
	}
	if last := evs[len(evs)-1]; last.Type != "run_finished" || data(p.t, last)["status"] != "done" {
		p.t.Errorf("the session ends with %s %s, want run_finished done", last.Type, last.Data)
	}
}
