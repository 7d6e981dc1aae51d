package cli_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/internal/app"
	"github.com/agentrt/agentrt/internal/cli"
	"github.com/agentrt/agentrt/internal/fakellm"
	"github.com/agentrt/agentrt/internal/testenv"
	"github.com/agentrt/agentrt/session"
)

// These tests run several agentrt processes on one store, where a
// source's claim and inbox must hold across process boundaries: two
// `agentrt gateway` sharing the inbox, a gateway killed with SIGKILL
// while it holds a source, and `agentrt send` and `agentrt run` from
// other processes while a gateway serves their source. On SQLite and on
// Postgres. They wait on what the processes say or store (stderr lines,
// events in the log, the fake model server receiving a request, the
// inbox's states), never on sleeps.

// gatewayProcesses runs test on each store, in parallel.
func gatewayProcesses(t *testing.T, test func(t *testing.T, store string)) {
	t.Parallel()
	testenv.SkipShort(t, "runs child processes")
	for _, st := range stores {
		t.Run(st.name, func(t *testing.T) {
			t.Parallel()
			test(t, st.dsn(t))
		})
	}
}

// Two agentrt gateway processes serve one store. Twenty sources get an
// input each before the gateways start and another while they run; the
// sources' debounce makes both gateways go for a source at the same
// moment. Each source is served by one process at a time (its claim), so
// a module before the agent sees each input once, and each input is
// answered once. The policy is queue: under interrupt a restarted turn
// goes through the modules again with its inputs (as it should), which
// would blur the count.
func TestProcessTwoGatewaysServeEachSourceOnce(t *testing.T) {
	gatewayProcesses(t, func(t *testing.T, store string) {
		const n = 20
		e := newEnvStore(t, store, demoConfig+"gateway: {policy: queue, debounce: 300ms, poll: 50ms}\n", nil)
		p := newProcChild(t, e)
		journal := filepath.Join(e.dir, "turns")
		var sources []string
		for i := range n {
			sources = append(sources, fmt.Sprintf("chat%02d", i))
		}
		sent := map[string][]string{} // source -> its inputs
		for i, id := range sendAll(p, sources, "hello there") {
			sent[sources[i]] = append(sent[sources[i]], id)
		}
		gws := []*child{
			startGateway(t, e, "AGENTRT_TURN_JOURNAL="+journal),
			startGateway(t, e, "AGENTRT_TURN_JOURNAL="+journal),
		}
		for i, id := range sendAll(p, sources, "one more thing") {
			sent[sources[i]] = append(sent[sources[i]], id)
		}
		var all []string
		for _, src := range sources {
			all = append(all, sent[src]...)
		}
		turns := awaitTurns(t, gws, all)
		for _, g := range gws {
			stop(g)
		}
		t.Logf("turns per gateway: %v", turns)
		// Each claim went with its release: no session is left per source
		// served (a busy store's were about half its rows).
		if left := claimSessions(t, e, store); len(left) != 0 {
			t.Errorf("the store holds %d claims' sessions after the gateways stopped: %v", len(left), left)
		}

		// The module saw each input once, in one process's turn.
		seen := map[string][]string{} // input -> "pid restart" of each turn it was in
		for _, l := range journalRuns(t, journal) {
			f := strings.Fields(l)
			if len(f) < 4 {
				t.Fatalf("journal line %q", l)
			}
			for _, id := range f[3:] {
				seen[id] = append(seen[id], f[0]+" restart "+f[2])
			}
		}
		for _, id := range all {
			if len(seen[id]) != 1 {
				t.Errorf("input %s went through the module %d times (%v), want once", id, len(seen[id]), seen[id])
			}
		}
		if len(seen) != len(all) {
			t.Errorf("the module saw %d inputs, want %d", len(seen), len(all))
		}

		// The store says the same: nothing pending; each input answered,
		// by the one run whose run_started names it.
		if code, out, errText := p.out("inbox", "list", "--json"); code != cli.ExitOK || strings.TrimSpace(out) != "[]" {
			t.Errorf("inbox list: exit %d, %s%s", code, out, errText)
		}
		var args [][]string
		for _, src := range sources {
			args = append(args, []string{"inbox", "list", "--source", src, "--json"}, []string{"sessions", "events", src, "--json"})
		}
		outs := outAll(p, args)
		for i, src := range sources {
			inbox, log := outs[2*i], outs[2*i+1]
			if inbox.code != cli.ExitOK || log.code != cli.ExitOK {
				t.Fatalf("source %s: inbox list exit %d, sessions events exit %d\n%s%s", src, inbox.code, log.code, inbox.err, log.err)
			}
			var ins []session.InboxInput
			if err := json.Unmarshal([]byte(inbox.out), &ins); err != nil {
				t.Fatal(err)
			}
			answeredBy := map[string]string{}
			var ids []string
			for _, in := range ins {
				ids = append(ids, in.ID)
				if in.State != session.InputAnswered || in.RunID == "" {
					t.Errorf("input %s of %s: %s (%s), want answered", in.ID, src, in.State, in.Reason)
				}
				answeredBy[in.ID] = in.RunID
			}
			if !slices.Equal(ids, sent[src]) {
				t.Errorf("source %s holds %v, want %v", src, ids, sent[src])
			}
			started := map[string]string{} // input -> the run whose run_started names it
			for _, s := range runStarts(t, log.out) {
				for _, id := range s.Inputs {
					if prev, ok := started[id]; ok {
						t.Errorf("input %s started runs %s and %s", id, prev, s.RunID)
					}
					started[id] = s.RunID
				}
			}
			if diff := cmp.Diff(answeredBy, started); diff != "" {
				t.Errorf("source %s: the run each input was answered by (-) and the run whose run_started names it (+) differ:\n%s", src, diff)
			}
		}
	})
}

// The gateway holding a source's claim is killed with SIGKILL while its
// turn's model call is in flight. The other gateway, running all along,
// takes the source over when new input comes for it — the dead process's
// claim at once, not after the lease's hour — and answers it; the killed
// turn's input, answered by its first commit, is not answered again.
func TestProcessGatewayKilledHoldingASource(t *testing.T) {
	gatewayProcesses(t, func(t *testing.T, store string) {
		srv := fakellm.Start(t)
		arrived, _ := srv.Hold()
		config := fakeModelConfig(srv.URL) + "lease_ttl: 1h\n"
		e := newEnvStore(t, store, config, nil)
		// The first gateway serves one source at a time: while it holds
		// chat, another source goes to the second gateway.
		one := filepath.Join(e.dir, "one-worker.yaml")
		b, err := os.ReadFile(e.config)
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, one, string(b)+"gateway: {workers: 1}\n")
		p := newProcChild(t, e)
		first := sendInputs(p, "chat", "first question")

		a := startChild(t, e.dir, nil, "--config", one, "gateway")
		select {
		case <-arrived:
		case <-a.done:
			t.Fatalf("the first gateway exited before its model call:\n%s", a.stderrText())
		}
		g := startGateway(t, e)
		// The second gateway's loop runs (past its start's Recover, which
		// found nothing to resume: the first gateway's run is alive).
		probe := sendInputs(p, "probe", "are you there?")
		awaitTurn(g, "probe", probe)
		kill(a)
		if evs := sessionEvents(p, "chat"); ofType(evs, "run_finished") != nil {
			t.Fatalf("the killed turn finished: %v", types(evs))
		}

		second := sendInputs(p, "chat", "second question")
		awaitTurn(g, "chat", second)
		stop(g)

		ins := sourceInputs(p, "chat")
		if len(ins) != 2 || ins[0].ID != first[0] || ins[1].ID != second[0] {
			t.Fatalf("chat holds %+v, want %s and %s", ins, first[0], second[0])
		}
		for _, in := range ins {
			if in.State != session.InputAnswered {
				t.Errorf("input %s: %s (%s), want answered", in.ID, in.State, in.Reason)
			}
		}
		killed, next := ins[0].RunID, ins[1].RunID
		_, out, _ := p.out("sessions", "events", "chat", "--json")
		starts := runStarts(t, out)
		if len(starts) != 2 || starts[0].RunID != killed || !slices.Equal(starts[0].Inputs, first) ||
			starts[1].RunID != next || !slices.Equal(starts[1].Inputs, second) {
			t.Errorf("run_started %+v, want run %s answering %v, then run %s answering %v", starts, killed, first, next, second)
		}
		evs := sessionEvents(p, "chat")
		var ends []string
		for _, f := range ofType(evs, "run_finished") {
			ends = append(ends, data(t, f)["status"].(string))
		}
		var finals []any
		for _, f := range ofType(evs, "final") {
			finals = append(finals, data(t, f)["text"])
		}
		// The second gateway's new turn found the session's last run
		// stopped with its process: it resumed that run first (its answer
		// came), then ran the new turn. Nothing else would have resumed
		// it while this gateway runs: only a gateway's start recovers
		// (gateway.Run), and this one started before the kill.
		want := []any{"You said: first question", "You said: second question"}
		if !slices.Equal(ends, []string{"done", "done"}) || !slices.Equal(finals, want) {
			t.Errorf("runs ended %v with answers %q, want both done with %q: %v", ends, finals, want, types(evs))
		}
		if rs := ofType(evs, "run_resumed"); len(rs) != 1 || data(t, rs[0])["reason"] != "recovered" {
			t.Errorf("run_resumed %v, want the killed turn resumed once, recovered: %v", rs, types(evs))
		}
		if n := len(srv.Requests()); n != 4 {
			t.Errorf("%d model requests, want 4: the killed call, the probe's, the killed call's retry, the new turn's", n)
		}
	})
}

// agentrt send, from another process, while agentrt gateway serves a
// slow turn (the model server holds its request): under policy interrupt
// the running run ends interrupted and the turn restarts, through the
// modules again with both inputs, its agent answering the new one; under
// policy reject the new input is refused and the running turn goes on to
// its answer.
func TestProcessSendMeetsThePolicy(t *testing.T) {
	for _, policy := range []string{"interrupt", "reject"} {
		t.Run(policy, func(t *testing.T) {
			gatewayProcesses(t, func(t *testing.T, store string) {
				srv := fakellm.Start(t)
				arrived, release := srv.Hold()
				e := newEnvStore(t, store, fakeModelConfig(srv.URL)+"gateway: {policy: "+policy+"}\n", nil)
				p := newProcChild(t, e)
				journal := filepath.Join(e.dir, "turns")
				first := sendInputs(p, "chat", "first question")
				g := startGateway(t, e, "AGENTRT_TURN_JOURNAL="+journal)
				select {
				case <-arrived:
				case <-g.done:
					t.Fatalf("the gateway exited before its model call:\n%s", g.stderrText())
				}
				f := follow(t, e, "chat")
				second := sendInputs(p, "chat", "newer question")

				var want []string // the inputs each run_started names
				var wantEnds []string
				var wantFinal string
				var wantJournal []string // restart and inputs of each turn
				switch policy {
				case "interrupt":
					if fin := awaitLogged(f, "the slow run's end", "run_finished"); data(t, fin)["status"] != "interrupted" {
						t.Fatalf("the slow run ended %s, want interrupted", fin.Data)
					}
					if fin := awaitLogged(f, "the restarted turn's end", "run_finished"); data(t, fin)["status"] != "done" {
						t.Fatalf("the restarted turn ended %s, want done", fin.Data)
					}
					want = []string{first[0], second[0]}
					wantEnds = []string{"interrupted", "done"}
					wantFinal = "You said: newer question"
					wantJournal = []string{"0 " + first[0], "1 " + first[0] + " " + second[0]}
				case "reject":
					awaitState(p, "chat", second[0], session.InputRefused)
					release()
					if fin := awaitLogged(f, "the slow run's end", "run_finished"); data(t, fin)["status"] != "done" {
						t.Fatalf("the slow run ended %s, want done", fin.Data)
					}
					want = []string{first[0]}
					wantEnds = []string{"done"}
					wantFinal = "You said: first question"
					wantJournal = []string{"0 " + first[0]}
				}
				awaitTurn(g, "chat", nil)
				stop(g)

				_, out, _ := p.out("sessions", "events", "chat", "--json")
				starts := runStarts(t, out)
				var got []string
				runs := map[string]string{}
				for _, s := range starts {
					got = append(got, s.Inputs...)
					for _, id := range s.Inputs {
						runs[id] = s.RunID
					}
				}
				if !slices.Equal(got, want) || len(starts) != len(want) {
					t.Errorf("run_started %+v, want one run per input of %v", starts, want)
				}
				for _, in := range sourceInputs(p, "chat") {
					switch {
					case runs[in.ID] != "":
						if in.State != session.InputAnswered || in.RunID != runs[in.ID] {
							t.Errorf("input %s: %s by %q, want answered by %s", in.ID, in.State, in.RunID, runs[in.ID])
						}
					case in.State != session.InputRefused || !strings.Contains(in.Reason, "policy reject"):
						t.Errorf("input %s: %s (%s), want refused by the reject policy", in.ID, in.State, in.Reason)
					}
				}
				evs := sessionEvents(p, "chat")
				var ends []string
				for _, fin := range ofType(evs, "run_finished") {
					ends = append(ends, data(t, fin)["status"].(string))
				}
				if !slices.Equal(ends, wantEnds) {
					t.Errorf("runs ended %v, want %v", ends, wantEnds)
				}
				if n, wantN := len(ofType(evs, "interrupted")), len(wantEnds)-1; n != wantN {
					t.Errorf("%d interrupted events, want %d: %v", n, wantN, types(evs))
				}
				checkFinal(p, "chat", wantFinal)
				var turns []string
				for _, l := range journalRuns(t, journal) {
					turns = append(turns, strings.Join(strings.Fields(l)[2:], " "))
				}
				if !slices.Equal(turns, wantJournal) {
					t.Errorf("the module saw the turns %q, want %q", turns, wantJournal)
				}
			})
		})
	}
}

// agentrt run for a source agentrt gateway serves (policy interrupt):
// the gateway's watch sees run's input, interrupts its slow turn and
// restarts it; run prints the answer of the run that answered its input,
// and exits 0.
func TestProcessRunWhileAGatewayServes(t *testing.T) {
	gatewayProcesses(t, func(t *testing.T, store string) {
		srv := fakellm.Start(t)
		arrived, _ := srv.Hold()
		e := newEnvStore(t, store, fakeModelConfig(srv.URL), nil)
		p := newProcChild(t, e)
		first := sendInputs(p, "chat", "first question")
		g := startGateway(t, e)
		select {
		case <-arrived:
		case <-g.done:
			t.Fatalf("the gateway exited before its model call:\n%s", g.stderrText())
		}
		code, out, errText := p.out("run", "--source", "chat", "--session", "chat", "newer question")
		if code != cli.ExitOK || out != "You said: newer question\n" {
			t.Fatalf("run: exit %d, %q\n%s", code, out, errText)
		}
		awaitTurn(g, "chat", nil)
		stop(g)

		ins := sourceInputs(p, "chat")
		if len(ins) != 2 || ins[0].ID != first[0] {
			t.Fatalf("chat holds %+v, want %s and run's input", ins, first[0])
		}
		_, log, _ := p.out("sessions", "events", "chat", "--json")
		starts := runStarts(t, log)
		if len(starts) != 2 || !slices.Equal(starts[1].Inputs, []string{ins[1].ID}) || ins[1].RunID != starts[1].RunID {
			t.Errorf("run_started %+v, inputs %+v: want the restarted turn answering run's input", starts, ins)
		}
		evs := sessionEvents(p, "chat")
		var ends []string
		for _, fin := range ofType(evs, "run_finished") {
			ends = append(ends, data(t, fin)["status"].(string))
		}
		if !slices.Equal(ends, []string{"interrupted", "done"}) {
			t.Errorf("runs ended %v, want the slow one interrupted, then the new one done", ends)
		}
	})
}

// procOut is what a child process left: its exit code, stdout, stderr.
type procOut struct {
	code     int
	out, err string
}

// outAll runs agentrt with each of argss, a few processes at a time, and
// returns what each left, in order.
func outAll(p procChild, argss [][]string) []procOut {
	p.t.Helper()
	const atOnce = 8
	var outs []procOut
	for batch := range slices.Chunk(argss, atOnce) {
		var cs []*child
		for _, args := range batch {
			cs = append(cs, startChild(p.t, p.e.dir, nil, append([]string{"--config", p.e.config}, args...)...))
		}
		for _, c := range cs {
			var b strings.Builder
			for l := range c.stdout {
				b.WriteString(l + "\n")
			}
			code := c.wait()
			outs = append(outs, procOut{code, b.String(), c.stderrText()})
		}
	}
	return outs
}

// sendAll sends text from each source, a few processes at a time, and
// returns the inputs' ids, in the sources' order.
func sendAll(p procChild, sources []string, text string) []string {
	p.t.Helper()
	var argss [][]string
	for _, src := range sources {
		argss = append(argss, []string{"send", "--source", src, text})
	}
	var ids []string
	for i, o := range outAll(p, argss) {
		id := strings.TrimSpace(o.out)
		if o.code != cli.ExitOK || !inputID.MatchString(id) {
			p.t.Fatalf("send from %s: exit %d, %q\n%s", sources[i], o.code, o.out, o.err)
		}
		ids = append(ids, id)
	}
	return ids
}

// turnLine is agentrt gateway's line for a turn it ran: its source, its
// inputs, and how its agent run ended.
var turnLine = regexp.MustCompile(`^\[gateway\] tenant \S+, source (\S+), session \S+: \d+ input\(s\) \(([^)]*)\), (.*)$`)

// failedLine is agentrt gateway's line for a failure.
var failedLine = regexp.MustCompile(`^\[gateway\] (source \S+: )?failed`)

// awaitTurns reads the gateways' stderr until turns whose agent run ended
// done named every input of ids, and returns how many turns each gateway
// ran. A failure either says fails the test, as does a gateway that ends
// first (its time is up: the inputs were not all answered).
func awaitTurns(t *testing.T, gws []*child, ids []string) []int {
	t.Helper()
	left := map[string]bool{}
	for _, id := range ids {
		left[id] = true
	}
	cases := make([]reflect.SelectCase, len(gws))
	for i, g := range gws {
		cases[i] = reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(g.stderr)}
	}
	turns := make([]int, len(gws))
	for len(left) > 0 {
		i, v, ok := reflect.Select(cases)
		if !ok {
			t.Fatalf("gateway %d ended with %d input(s) unanswered (%v); its stderr:\n%s", i, len(left), left, gws[i].stderrText())
		}
		line := v.String()
		if failedLine.MatchString(line) {
			t.Fatalf("gateway %d: %s", i, line)
		}
		m := turnLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		if !strings.HasSuffix(m[3], ": done") {
			t.Fatalf("gateway %d: %s", i, line)
		}
		turns[i]++
		for _, id := range strings.Split(m[2], ", ") {
			delete(left, id)
		}
	}
	return turns
}

// awaitTurn reads g's stderr until the line of a turn of source that
// answered ids (any inputs when ids is nil) with an agent run that ended
// done. A failure of the source fails the test, as does the gateway
// ending first (its time is up).
func awaitTurn(g *child, source string, ids []string) {
	g.t.Helper()
	for l := range g.stderr {
		if failedLine.MatchString(l) && strings.Contains(l, "source "+source+":") {
			g.t.Fatalf("%s\n%s", l, g.stderrText())
		}
		m := turnLine.FindStringSubmatch(l)
		if m == nil || m[1] != source || ids != nil && m[2] != strings.Join(ids, ", ") || !strings.HasSuffix(m[3], ": done") {
			continue // another source's turn, or an interrupted one
		}
		return
	}
	g.t.Fatalf("the gateway ended before a turn of source %s answered %v; stderr:\n%s", source, ids, g.stderrText())
}

// awaitState reads source's inbox until input id is in state want, and
// fails the test if it is not within procTimeout (or reaches another
// final state).
func awaitState(p procChild, source, id string, want session.InputState) {
	p.t.Helper()
	deadline := time.Now().Add(procTimeout)
	for {
		for _, in := range sourceInputs(p, source) {
			if in.ID != id {
				continue
			}
			if in.State == want {
				return
			}
			if in.State != session.InputPending {
				p.t.Fatalf("input %s is %s (%s %s), want %s", id, in.State, in.RunID, in.Reason, want)
			}
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("input %s of %s is not %s after %s", id, source, want, procTimeout)
		}
	}
}

// awaitLogged reads f's events (sessions events --follow) until one of
// type typ, and returns it; if f ends first (its time is up), the test
// fails saying what it waited for.
func awaitLogged(f *child, what, typ string) event {
	f.t.Helper()
	for l := range f.stdout {
		var e event
		if json.Unmarshal([]byte(l), &e) == nil && e.Type == typ {
			return e
		}
	}
	f.t.Fatalf("%s: no %s event came before the follower's time was up\n%s", what, typ, f.stderrText())
	return event{}
}

// runStart is a run_started event: its run and what it names.
type runStart struct {
	RunID  string
	Inputs []string
}

// runStarts returns the run_started events of sessions events --json.
func runStarts(t *testing.T, out string) []runStart {
	t.Helper()
	var starts []runStart
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var e struct {
			Type  string     `json:"type"`
			RunID string     `json:"run_id"`
			Data  runStarted `json:"data"`
		}
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("%q is not an event: %v", line, err)
		}
		if e.Type == "run_started" {
			starts = append(starts, runStart{e.RunID, e.Data.Inputs})
		}
	}
	return starts
}

// claimSessions returns the ids of the claims' hidden sessions the store
// of e holds (store: its DSN, "" for e's SQLite file), every tenant's.
func claimSessions(t *testing.T, e *env, store string) []string {
	t.Helper()
	if store == "" {
		store = "sqlite:" + filepath.Join(e.dir, "agentrt.db")
	}
	st, err := app.OpenStore(t.Context(), store)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var ids []string
	opt := session.ListOptions{AllTenants: true, Limit: 500}
	for {
		page, err := st.ListSessions(t.Context(), opt)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range page {
			if strings.HasPrefix(s.ID, "_claim.") {
				ids = append(ids, s.ID)
			}
		}
		if len(page) < opt.Limit {
			return ids
		}
		last := page[len(page)-1]
		opt.After, opt.AfterTenant, opt.AfterCreated = last.ID, last.Tenant, last.CreatedAt
	}
}
