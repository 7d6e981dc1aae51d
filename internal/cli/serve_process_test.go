package cli_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentrt/agentrt/internal/cli"
	"github.com/agentrt/agentrt/internal/fakellm"
	"github.com/agentrt/agentrt/internal/testenv"
	"github.com/agentrt/agentrt/session"
)

// These tests run agentrt serve as a child process and talk to it the way
// clients nobody here wrote do: net/http, curl, and (sse_node_test.go)
// Node's EventSource and fetch.

// onStores runs f on each store of the cross-process tests, in parallel.
func onStores(t *testing.T, f func(t *testing.T, store string)) {
	t.Parallel()
	testenv.SkipShort(t, "runs agentrt serve")
	for _, st := range stores {
		t.Run(st.name, func(t *testing.T) {
			t.Parallel()
			f(t, st.dsn(t))
		})
	}
}

// A turn over HTTP streams its run; curl resumes the session's stream
// from a Last-Event-ID with no gap and no duplicate, on the server that
// ran the turn and, after it stops, on another one started on the same
// store: from the log first, then live.
func TestServeProcessCurlResumesAcrossRestart(t *testing.T) {
	onStores(t, func(t *testing.T, store string) {
		e := newEnvStore(t, store, demoConfig, nil)
		s1 := startServe(t, e, nil)
		api := newAPI(t, s1.url, "")
		api.createSession("s1")

		evs := api.turn("s1", "what is 21*2+5")
		first := checkIDs(t, "the turn's stream", evs, 1, evs[len(evs)-1].seq(t))
		n := first[len(first)-1].seq(t)
		if st := runStatus(t, evs[len(evs)-1]); st != "done" {
			t.Fatalf("the turn ended %s", st)
		}
		if fin := eventsOf(evs, "final"); len(fin) != 1 || !strings.Contains(fin[0].Data, `"text":"21*2+5 = 47"`) {
			t.Errorf("final: %v", fin)
		}

		// curl joins halfway through the log; the server's SIGTERM ends
		// its stream with the id to resume from.
		k := n / 2
		c := startCurl(t, s1.url+"/v1/sessions/s1/events", k)
		got := c.until("the turn's last event", idIs(n))
		s1.stopOK()
		got = append(got, c.rest()...)
		checkIDs(t, "curl from "+itoa(k), got, k+1, n)
		checkReconnect(t, "curl from "+itoa(k), got, n)

		// Another server on the same store: a turn, then curl resumes
		// from the last id it had, and stays for a turn that runs while
		// it watches.
		s2 := startServe(t, e, nil)
		api = newAPI(t, s2.url, "")
		evs = api.turn("s1", "what is 2+3")
		m := evs[len(evs)-1].seq(t)
		checkIDs(t, "the second turn's stream", evs, n+1, m)
		c = startCurl(t, s2.url+"/v1/sessions/s1/events", n)
		got = c.until("the second turn's end", idIs(m))
		api.send("s1", "what is 3*3")
		got = append(got, c.until("the third turn's end", func(e sseEvent) bool { return e.Event == "run_finished" && e.seq(t) > m })...)
		last := got[len(got)-1].seq(t)
		s2.stopOK()
		got = append(got, c.rest()...)
		checkIDs(t, "curl from "+itoa(n)+" on the second server", got, n+1, last)
		checkReconnect(t, "curl on the second server", got, last)
		if fin := eventsOf(got, "final"); len(fin) != 2 || !strings.Contains(fin[1].Data, "3*3 = 9") {
			t.Errorf("finals after the restart: %v", fin)
		}

		// The store's log is what the streams showed.
		logged := parseEvents(t, newProcChild(t, e).mustOut("--config", e.config, "sessions", "events", "s1", "--json"))
		checkSeq(t, logged, 1)
		if got := logged[len(logged)-1].Seq; got != last {
			t.Errorf("the log ends at %d, the streams at %d", got, last)
		}
	})
}

// A stream resumed from an id the session's log has not reached is
// refused with a clear error (the client holds an id from another session
// or store: waiting for that id would skip every event until then,
// silently), as is an id that is not a number; the log's last id resumes.
func TestServeProcessResumeFromAnUnknownID(t *testing.T) {
	t.Parallel()
	testenv.SkipShort(t, "runs agentrt serve")
	e := newEnv(t, demoConfig, nil)
	s := startServe(t, e, nil)
	api := newAPI(t, s.url, "")
	api.createSession("s1")
	n := lastID(t, api.turn("s1", "what is 1+1"))
	for _, tc := range []struct{ id, want string }{
		{itoa(n + 1), "is past the session's last event " + itoa(n)},
		{"999", "is past the session's last event " + itoa(n)},
		{"x", "is not an event seq"},
	} {
		code, body, _ := api.do("GET", "/v1/sessions/s1/events", nil, "Accept", "text/event-stream", "Last-Event-ID", tc.id)
		if code != http.StatusBadRequest || !strings.Contains(string(body), `"code":"malformed_request"`) || !strings.Contains(string(body), tc.want) {
			t.Errorf("Last-Event-ID %s: %d %s, want 400 saying %q", tc.id, code, body, tc.want)
		}
	}
	c := startCurl(t, s.url+"/v1/sessions/s1/events", n)
	api.send("s1", "what is 2+2")
	evs := c.until("the second turn's end", typeIs("run_finished"))
	checkIDs(t, "curl from the last id", evs, n+1, lastID(t, evs))
	s.stopOK()
}

// SIGTERM while a run waits on its model: the server lets it go on for
// server.shutdown_grace, then stops it without recording an end and
// exits; the session stays running with its lease released, and a
// streaming client is told to reconnect. Another server on the store
// resumes the run and finishes it: a replica already running, by its
// sweeper, or one started afterwards, as it starts.
func TestServeProcessShutdownHandsOverARun(t *testing.T) {
	t.Parallel()
	testenv.SkipShort(t, "runs agentrt serve")
	for _, st := range stores {
		for _, second := range []string{"replica", "restart"} {
			t.Run(st.name+"/"+second, func(t *testing.T) {
				t.Parallel()
				handOver(t, st.dsn(t), second == "replica")
			})
		}
	}
}

func handOver(t *testing.T, store string, replica bool) {
	llm := fakellm.Start(t)
	arrived, _ := llm.Hold()
	const grace = time.Second
	// A long lease: a lease the stopping server kept would still be live
	// when the test looks.
	e := newEnvStore(t, store, fakeModelConfig(llm.URL)+`
lease_ttl: 1m
server: {shutdown_grace: 1s, sweep_every: 100ms}
`, nil)
	s1 := startServe(t, e, nil)
	api := newAPI(t, s1.url, "")
	api.createSession("s1")
	resp := api.openStream(api.request(t.Context(), "POST", "/v1/sessions/s1/messages", map[string]string{"text": "hi"}))
	defer resp.Body.Close()
	select {
	case <-arrived:
	case <-s1.done:
		t.Fatalf("agentrt serve exited before the model call:\n%s", s1.stderrText())
	}
	var s2 *serveProc
	if replica {
		// Up while s1 runs the session: it leaves the session alone
		// until s1 lets go of it.
		s2 = startServe(t, e, nil)
	}

	code, took := s1.stop()
	if code != cli.ExitOK {
		t.Fatalf("agentrt serve exited %d after SIGTERM:\n%s", code, s1.stderrText())
	}
	// The grace is waited out (the model never answers); what follows is
	// bounded by the runner's own wait for a run's last writes.
	if took < grace || took > grace+shutdownBound {
		t.Errorf("agentrt serve took %v to exit, want %v to %v", took, grace, grace+shutdownBound)
	}
	s1.waitLog("shutting down", "grace=1s")
	var streamed []sseEvent
	if err := readSSE(resp.Body, func(ev sseEvent) bool { streamed = append(streamed, ev); return true }); err != nil {
		t.Fatalf("the turn's stream: %v", err)
	}
	checkIDs(t, "the turn's stream", streamed, 1, lastID(t, streamed))
	checkReconnect(t, "the turn's stream", streamed, lastID(t, streamed))
	if len(eventsOf(streamed, "run_finished")) != 0 {
		t.Fatalf("the stopped server recorded the run's end: %v", streamed)
	}

	if replica {
		s2.waitLog("resumed a run whose process stopped", "session=s1")
	} else {
		show := showSession(t, e, "s1")
		if show.Session.Status != "running" {
			t.Fatalf("after the shutdown the session is %s, want running", show.Session.Status)
		}
		if l := show.Session.Lease; l != nil && l.Owner != "" && l.Expires.After(time.Now()) {
			t.Fatalf("the stopped server kept the session's lease: %+v", *l)
		}
		s2 = startServe(t, e, nil)
	}
	c := startCurl(t, s2.url+"/v1/sessions/s1/events", 0)
	evs := c.until("the resumed run's end", typeIs("run_finished"))
	checkIDs(t, "the log after the resume", evs, 1, evs[len(evs)-1].seq(t))
	if st := runStatus(t, evs[len(evs)-1]); st != "done" {
		t.Fatalf("the resumed run ended %s", st)
	}
	if rs := eventsOf(evs, "run_resumed"); len(rs) != 1 || !strings.Contains(rs[0].Data, `"reason":"recovered"`) {
		t.Errorf("run_resumed: %v", rs)
	}
	if fin := eventsOf(evs, "final"); len(fin) != 1 || !strings.Contains(fin[0].Data, `"text":"You said: hi"`) {
		t.Errorf("final: %v", fin)
	}
	if n := len(llm.Requests()); n != 2 {
		t.Errorf("%d model requests, want 2: the held one and the resumed run's", n)
	}
	s2.stopOK()
}

// shutdownBound is how long a server may take to exit after its grace: the
// runner waits up to its commit timeout (10 s) for a stopped run's last
// writes, and the store closes. A server that never stops the held run
// would wait for the model until the test's process timeout.
const shutdownBound = 20 * time.Second

// SIGTERM while a tool that ignores cancellation blocks: the server still
// exits, leaving the session running, and the next server resumes it and
// runs the call again (its result was never stored), once.
func TestServeProcessShutdownWithAStuckTool(t *testing.T) {
	t.Parallel()
	testenv.SkipShort(t, "runs agentrt serve")
	e := newEnv(t, `
server: {shutdown_grace: 1s}
models:
  s: {provider: scripted, script: "${AGENTRT_TEST_SCRIPT}"}
agents:
  assistant: {model: s, tools: [stubborn]}
`, map[string]string{
		"stuck.yaml": "replies:\n  - tool_calls: [{name: stubborn}]\n",
		"after.yaml": "replies:\n  - tool_calls: [{name: stubborn}]\n  - text: after the restart\n    expect: {last_tool_result_contains: stubborn done}\n",
	})
	journal := filepath.Join(e.dir, "journal")
	s1 := startServe(t, e, []string{"AGENTRT_STUBBORN=block", "AGENTRT_TEST_SCRIPT=stuck.yaml"})
	api := newAPI(t, s1.url, "")
	api.createSession("s1")
	api.send("s1", "go")
	startCurl(t, s1.url+"/v1/sessions/s1/events", 0).until("the tool call", typeIs("tool_call"))

	code, took := s1.stop()
	if code != cli.ExitOK {
		t.Fatalf("agentrt serve exited %d after SIGTERM:\n%s", code, s1.stderrText())
	}
	if took > time.Second+stuckToolBound {
		t.Errorf("agentrt serve took %v to exit, want at most %v", took, time.Second+stuckToolBound)
	}
	s1.waitLog("runs still stopping")
	if sh := showSession(t, e, "s1").Session; sh.Status != "running" || sh.Lease != nil {
		t.Fatalf("after the shutdown the session is %s with lease %+v, want running and released (for a replica on any host to take over now)", sh.Status, sh.Lease)
	}

	s2 := startServe(t, e, []string{"AGENTRT_JOURNAL=" + journal, "AGENTRT_TEST_SCRIPT=after.yaml"})
	evs := startCurl(t, s2.url+"/v1/sessions/s1/events", 0).until("the resumed run's end", typeIs("run_finished"))
	if st := runStatus(t, evs[len(evs)-1]); st != "done" {
		t.Fatalf("the resumed run ended %s: %v", st, evs)
	}
	if runs := journalRuns(t, journal); len(runs) != 1 || !strings.HasSuffix(runs[0], " 2") {
		t.Errorf("stubborn's runs after the restart: %q, want one, its second attempt", runs)
	}
	s2.stopOK()
}

// stuckToolBound is how long after its grace a server whose run is stuck
// in a tool takes to exit: the runner waits its commit timeout (10 s) for
// the run to stop, then lets go of it (the app's Close does not wait for
// it again); a little over that.
const stuckToolBound = 20 * time.Second

// A client that goes away in the middle of a turn's stream does not
// cancel the run: once the server has seen it go, the model answers and
// the run finishes done.
func TestServeProcessClientDisconnectKeepsTheRun(t *testing.T) {
	t.Parallel()
	testenv.SkipShort(t, "runs agentrt serve")
	llm := fakellm.Start(t)
	arrived, release := llm.Hold()
	e := newEnv(t, fakeModelConfig(llm.URL), nil)
	s := startServe(t, e, nil, "--log-level", "debug")
	api := newAPI(t, s.url, "")
	api.createSession("s1")

	ctx, hangUp := context.WithCancel(t.Context())
	resp := api.openStream(api.request(ctx, "POST", "/v1/sessions/s1/messages", map[string]string{"text": "hi"}))
	var got []sseEvent
	_ = readSSE(resp.Body, func(ev sseEvent) bool {
		got = append(got, ev)
		return ev.Event != "model_started"
	})
	<-arrived
	hangUp()
	resp.Body.Close()
	// The request's log line is written when its handler returns: the
	// server has seen the client go.
	s.waitLog("msg=request", "method=POST", "route=/v1/sessions/{id}/messages")
	release()

	c := startCurl(t, s.url+"/v1/sessions/s1/events", 0)
	evs := c.until("the run's end", typeIs("run_finished"))
	if st := runStatus(t, evs[len(evs)-1]); st != "done" {
		t.Fatalf("after the client went away the run ended %s: %v", st, evs)
	}
	if fin := eventsOf(evs, "final"); len(fin) != 1 || !strings.Contains(fin[0].Data, "You said: hi") {
		t.Errorf("final: %v", fin)
	}
	s.stopOK()
}

// Without API keys the server answers clients on this machine (a client
// elsewhere is refused: server/loopback_test.go, since a test reaches
// only 127.0.0.1). With keys, from agentrt keys new: no key or another
// key is 401, the key is 200 and scopes the request to its tenant;
// health needs no key.
func TestServeProcessAPIKeys(t *testing.T) {
	t.Parallel()
	testenv.SkipShort(t, "runs agentrt serve")
	e := newEnv(t, demoConfig+"server: {api_keys_file: keys.yaml}\n", nil)
	p := newProcChild(t, e)
	newKey := func(tenant string) string {
		t.Helper()
		code, out, errText := p.out("keys", "new", "--tenant", tenant, "--file", "keys.yaml")
		key := strings.TrimSpace(out)
		if code != cli.ExitOK || !strings.HasPrefix(key, "art_") || strings.Contains(key, "\n") {
			t.Fatalf("keys new --tenant %s: exit %d, %q\n%s", tenant, code, out, errText)
		}
		if !strings.Contains(errText, "a key for tenant "+tenant) {
			t.Errorf("keys new says:\n%s", errText)
		}
		return key
	}
	acme, other := newKey("acme"), newKey("other")

	s := startServe(t, e, nil)
	for _, tc := range []struct {
		name, key string
		want      int
	}{
		{"no key", "", http.StatusUnauthorized},
		{"not a key of the server", "art_nope", http.StatusUnauthorized},
		{"acme's key", acme, http.StatusOK},
	} {
		code, body, hdr := newAPI(t, s.url, tc.key).do("GET", "/v1/sessions", nil)
		if code != tc.want {
			t.Errorf("%s: %d %s, want %d", tc.name, code, body, tc.want)
		}
		if code == http.StatusUnauthorized {
			if !strings.Contains(string(body), `"code":"unauthorized"`) || !strings.HasPrefix(hdr.Get("WWW-Authenticate"), "Bearer") {
				t.Errorf("%s: %s, WWW-Authenticate %q", tc.name, body, hdr.Get("WWW-Authenticate"))
			}
		}
	}
	if code, body, _ := newAPI(t, s.url, "").do("GET", "/healthz", nil); code != http.StatusOK {
		t.Errorf("healthz without a key: %d %s", code, body)
	}
	// A key reaches its tenant's sessions only.
	newAPI(t, s.url, acme).createSession("s1")
	if code, body, _ := newAPI(t, s.url, other).do("GET", "/v1/sessions/s1", nil); code != http.StatusNotFound {
		t.Errorf("another tenant's key on acme's session: %d %s, want 404", code, body)
	}
	var listed struct {
		Sessions []struct{ ID string } `json:"sessions"`
	}
	newAPI(t, s.url, acme).must(http.StatusOK, "GET", "/v1/sessions", nil, &listed)
	if len(listed.Sessions) != 1 || listed.Sessions[0].ID != "s1" {
		t.Errorf("acme's sessions: %+v", listed.Sessions)
	}
	s.stopOK()
}

// --log-format json: every line the server writes on stderr, from its
// start to its stop, is a JSON object with a time, a level and a message;
// the notice of the signal that stops it too.
func TestServeProcessJSONLogs(t *testing.T) {
	t.Parallel()
	testenv.SkipShort(t, "runs agentrt serve")
	e := newEnv(t, "", nil) // the defaults: the demo model, whose notice is logged
	s := startServe(t, e, nil, "--log-format", "json", "--log-level", "debug")
	api := newAPI(t, s.url, "")
	api.createSession("s1")
	api.turn("s1", "what is 1+1")
	s.stopOK()
	lines := strings.Split(strings.TrimSuffix(s.stderrText(), "\n"), "\n")
	msgs := map[string]bool{}
	for i, l := range lines {
		var rec struct {
			Time  time.Time `json:"time"`
			Level string    `json:"level"`
			Msg   string    `json:"msg"`
		}
		if err := json.Unmarshal([]byte(l), &rec); err != nil || rec.Time.IsZero() || rec.Level == "" || rec.Msg == "" {
			t.Errorf("stderr line %d is not a JSON log record: %q (%v)", i+1, l, err)
			continue
		}
		msgs[rec.Msg] = true
	}
	for _, m := range []string{"serving", "request", "stopping (send the signal again to exit at once)", "shutting down", "stopped"} {
		if !msgs[m] {
			t.Errorf("no %q record in:\n%s", m, s.stderrText())
		}
	}
}

// The stream a POST of input opens carries the live tokens of the run that
// answers it, like its committed events, even from a model as fast as the
// demo's, whose run may be over before the request's stream would
// otherwise have subscribed (the stream subscribes before the input is
// stored).
func TestServeProcessTurnStreamCarriesItsTokens(t *testing.T) {
	t.Parallel()
	testenv.SkipShort(t, "runs agentrt serve")
	e := newEnv(t, demoConfig, nil)
	s := startServe(t, e, nil)
	api := newAPI(t, s.url, "")
	api.createSession("s1")
	for i := range 10 {
		evs := api.turn("s1", fmt.Sprintf("what is %d+1", i))
		var text strings.Builder
		for _, ev := range eventsOf(evs, "token") {
			var tok struct {
				Data struct {
					Text string `json:"text"`
				} `json:"data"`
			}
			if err := json.Unmarshal([]byte(ev.Data), &tok); err != nil {
				t.Fatal(err)
			}
			text.WriteString(tok.Data.Text)
		}
		if want := fmt.Sprintf("%d+1 = %d", i, i+1); text.String() != want {
			t.Errorf("turn %d: the stream's tokens say %q, want %q; events %v", i+1, text.String(), want, evs)
		}
	}
	s.stopOK()
}

// A page on an allowed origin that posts input with Accept:
// text/event-stream can read the id of its input from the answer's
// Agentrt-Input-Id header: CORS exposes it.
func TestServeProcessCORSExposesTheInputID(t *testing.T) {
	t.Parallel()
	testenv.SkipShort(t, "runs agentrt serve")
	const origin = "https://app.example"
	e := newEnv(t, demoConfig+"server: {cors_origins: [\""+origin+"\"]}\n", nil)
	s := startServe(t, e, nil)
	api := newAPI(t, s.url, "")
	api.createSession("s1")
	req := api.request(t.Context(), "POST", "/v1/sessions/s1/messages", map[string]string{"text": "hi"}, "Origin", origin)
	resp := api.openStream(req)
	defer resp.Body.Close()
	if got := resp.Header.Get("Access-Control-Allow-Origin"); got != origin {
		t.Errorf("Access-Control-Allow-Origin %q, want %q", got, origin)
	}
	id := resp.Header.Get("Agentrt-Input-Id")
	if !strings.HasPrefix(id, "in_") {
		t.Errorf("Agentrt-Input-Id %q", id)
	}
	exposed := map[string]bool{}
	for _, h := range strings.Split(resp.Header.Get("Access-Control-Expose-Headers"), ",") {
		exposed[http.CanonicalHeaderKey(strings.TrimSpace(h))] = true
	}
	if !exposed["Agentrt-Input-Id"] {
		t.Errorf("Access-Control-Expose-Headers %q does not name Agentrt-Input-Id", resp.Header.Get("Access-Control-Expose-Headers"))
	}
	_ = readSSE(resp.Body, func(ev sseEvent) bool { return ev.Event != "run_finished" })
	s.stopOK()
}

// A turn the server's gateway cannot run sets its input aside, refused
// with why, and the server's log says so: here an input another process
// sent for a session of another agent.
func TestServeProcessLogsATurnSetAside(t *testing.T) {
	t.Parallel()
	testenv.SkipShort(t, "runs agentrt serve")
	e := newEnv(t, "models:\n  d: {provider: demo}\nagents:\n  a1: {model: d}\n  a2: {model: d}\n", nil)
	e.must(cli.ExitOK, "run", "--agent", "a1", "--session", "s1", "hi")
	s := startServe(t, e, nil, "--log-format", "json")
	id := e.sent("--source", "x", "--session", "s1", "--agent", "a2", "hello")
	// The inbox shows when the gateway has set the input aside (one
	// process a look: no sleep).
	p := newProcChild(t, e)
	for deadline := time.Now().Add(procTimeout); ; {
		_, out, _ := p.out("inbox", "list", "--source", "x", "--json")
		var ins []session.InboxInput
		if err := json.Unmarshal([]byte(out), &ins); err != nil {
			t.Fatalf("inbox list: %v\n%s", err, out)
		}
		if len(ins) == 1 && ins[0].ID == id && ins[0].State == session.InputRefused {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the input was not set aside: %+v", ins)
		}
	}
	// The gateway reports it as it sets it aside; the server's stop waits
	// for the gateway, so the line is written by then.
	s.stopOK()
	var found bool
	for _, l := range strings.Split(s.stderrText(), "\n") {
		var rec struct {
			Level, Msg, Source, Error string
		}
		if json.Unmarshal([]byte(l), &rec) == nil && rec.Level == "WARN" && rec.Source == "x" &&
			strings.Contains(rec.Error, `session "s1" belongs to agent "a1", not "a2"`) {
			found = true
		}
	}
	if !found {
		t.Errorf("the server's log does not say the turn of source x was set aside:\n%s", s.stderrText())
	}
}

// showSession is agentrt sessions show --json.
type shownSession struct {
	Session struct {
		Status string `json:"status"`
		Lease  *struct {
			Owner   string    `json:"owner"`
			Expires time.Time `json:"expires"`
		} `json:"lease"`
	} `json:"session"`
}

func showSession(t *testing.T, e *env, id string) shownSession {
	t.Helper()
	var s shownSession
	out := newProcChild(t, e).mustOut("--config", e.config, "sessions", "show", id, "--json")
	if err := json.Unmarshal([]byte(out), &s); err != nil {
		t.Fatalf("sessions show --json: %v\n%s", err, out)
	}
	return s
}

func eventsOf(evs []sseEvent, typ string) []sseEvent {
	var out []sseEvent
	for _, e := range evs {
		if e.Event == typ {
			out = append(out, e)
		}
	}
	return out
}
