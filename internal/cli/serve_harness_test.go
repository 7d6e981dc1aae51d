package cli_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// What the tests of agentrt serve share: the server as a child process,
// HTTP calls to it, and server-sent events read the way clients read
// them (Go, curl, Node).

// serveProc is an agentrt serve child process.
type serveProc struct {
	*child
	url string // http://127.0.0.1:PORT

	mu    sync.Mutex
	lines []string      // its stderr so far; guarded by mu
	more  chan struct{} // closed when a line comes or stderr ends; guarded by mu
	ended bool          // stderr ended; guarded by mu
}

// servingAddr finds the address in the "serving" log line, text or JSON.
var servingAddr = regexp.MustCompile(`"?addr"?[=:]"?(http://[0-9.]+:[0-9]+)`)

// startServe starts agentrt serve on e's config with extra environment and
// flags (--addr 127.0.0.1:0 unless args give an address), and waits for
// the line that says where it listens.
func startServe(t *testing.T, e *env, envv []string, args ...string) *serveProc {
	t.Helper()
	return startServeVia(t, e, envv, nil, args...)
}

// startServeVia is startServe through a command that execs it
// (startChildVia).
func startServeVia(t *testing.T, e *env, envv, via []string, args ...string) *serveProc {
	t.Helper()
	if !slices.Contains(args, "--addr") {
		args = append(args, "--addr", "127.0.0.1:0")
	}
	c := startChildVia(t, e.dir, envv, via, append([]string{"--config", e.config, "serve"}, args...)...)
	s := &serveProc{child: c, more: make(chan struct{})}
	go func() {
		for l := range c.stderr {
			s.mu.Lock()
			s.lines = append(s.lines, l)
			close(s.more)
			s.more = make(chan struct{})
			s.mu.Unlock()
		}
		s.mu.Lock()
		s.ended = true
		close(s.more)
		s.mu.Unlock()
	}()
	line := s.waitLog("serving")
	m := servingAddr.FindStringSubmatch(line)
	if m == nil {
		t.Fatalf("no address in the serving line %q", line)
	}
	s.url = m[1]
	return s
}

// waitLog returns the first line of the server's stderr that contains
// every one of subs, waiting for it; it fails the test if the server ends
// first.
func (s *serveProc) waitLog(subs ...string) string {
	s.t.Helper()
	seen := 0
	for {
		s.mu.Lock()
		lines, more, ended := s.lines, s.more, s.ended
		s.mu.Unlock()
		for ; seen < len(lines); seen++ {
			if containsAll(lines[seen], subs...) {
				return lines[seen]
			}
		}
		if ended {
			s.t.Fatalf("agentrt serve ended without logging %q; stderr:\n%s", subs, s.stderrText())
		}
		<-more
	}
}

// stop sends SIGTERM and waits for the server to exit: its exit code and
// how long it took.
func (s *serveProc) stop() (int, time.Duration) {
	s.t.Helper()
	start := time.Now()
	s.signal(syscall.SIGTERM)
	code := s.wait()
	return code, time.Since(start)
}

// stopOK stops the server and expects exit 0.
func (s *serveProc) stopOK() {
	s.t.Helper()
	if code, _ := s.stop(); code != 0 {
		s.t.Fatalf("agentrt serve exited %d after SIGTERM; stderr:\n%s", code, s.stderrText())
	}
}

// port is the port the server listens on.
func (s *serveProc) port() string {
	return s.url[strings.LastIndex(s.url, ":")+1:]
}

// apiClient calls the server's API, with a key when it has one.
type apiClient struct {
	t    *testing.T
	base string
	key  string
	hc   *http.Client
}

func newAPI(t *testing.T, base, key string) *apiClient {
	return &apiClient{t: t, base: base, key: key, hc: &http.Client{Timeout: procTimeout}}
}

// do sends a request with a JSON body (none when body is nil) and returns
// the status and body of the answer.
func (a *apiClient) do(method, path string, body any, hdr ...string) (int, []byte, http.Header) {
	a.t.Helper()
	req := a.request(a.t.Context(), method, path, body, hdr...)
	resp, err := a.hc.Do(req)
	if err != nil {
		a.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		a.t.Fatalf("%s %s: read the answer: %v", method, path, err)
	}
	return resp.StatusCode, b, resp.Header
}

func (a *apiClient) request(ctx context.Context, method, path string, body any, hdr ...string) *http.Request {
	a.t.Helper()
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			a.t.Fatal(err)
		}
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, a.base+path, r)
	if err != nil {
		a.t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if a.key != "" {
		req.Header.Set("Authorization", "Bearer "+a.key)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	return req
}

// must sends a request and expects status want; it decodes the answer
// into out when out is not nil.
func (a *apiClient) must(want int, method, path string, body, out any) {
	a.t.Helper()
	code, b, _ := a.do(method, path, body)
	if code != want {
		a.t.Fatalf("%s %s: %d %s, want %d", method, path, code, b, want)
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			a.t.Fatalf("%s %s: %v in %s", method, path, err, b)
		}
	}
}

// createSession creates session id of the default agent.
func (a *apiClient) createSession(id string) {
	a.t.Helper()
	a.must(http.StatusCreated, "POST", "/v1/sessions", map[string]string{"id": id}, nil)
}

// send submits text to session id and returns at once (202).
func (a *apiClient) send(id, text string) {
	a.t.Helper()
	a.must(http.StatusAccepted, "POST", "/v1/sessions/"+id+"/messages", map[string]string{"text": text}, nil)
}

// openStream sends req with Accept: text/event-stream and returns the
// response, which must be a 200 event stream.
func (a *apiClient) openStream(req *http.Request) *http.Response {
	a.t.Helper()
	req.Header.Set("Accept", "text/event-stream")
	// No client timeout: the stream lasts as long as the test wants.
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		a.t.Fatalf("%s %s: %v", req.Method, req.URL.Path, err)
	}
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != http.StatusOK || !strings.HasPrefix(ct, "text/event-stream") {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		a.t.Fatalf("%s %s: %d %s %s, want a 200 event stream", req.Method, req.URL.Path, resp.StatusCode, ct, b)
	}
	return resp
}

// turn submits text to session id with Accept: text/event-stream and
// returns the stream's events: those of the run that answers it, to its
// run_finished.
func (a *apiClient) turn(id, text string) []sseEvent {
	a.t.Helper()
	ctx, cancel := context.WithTimeout(a.t.Context(), procTimeout)
	defer cancel()
	resp := a.openStream(a.request(ctx, "POST", "/v1/sessions/"+id+"/messages", map[string]string{"text": text}))
	defer resp.Body.Close()
	var evs []sseEvent
	if err := readSSE(resp.Body, func(ev sseEvent) bool {
		evs = append(evs, ev)
		return true
	}); err != nil {
		a.t.Fatalf("the turn's stream: %v (after %v)", err, evs)
	}
	if len(evs) == 0 || evs[len(evs)-1].Event != "run_finished" {
		a.t.Fatalf("the turn's stream ended without its run_finished: %v", evs)
	}
	return evs
}

// sseEvent is one server-sent event as a client assembles it.
type sseEvent struct {
	ID    string // "" when the event has no id (a live token)
	Event string // "" is "message"
	Data  string
}

func (e sseEvent) String() string {
	if e.ID == "" {
		return e.Event
	}
	return e.ID + ":" + e.Event
}

// seq is the event's id as a number; 0 when it has none.
func (e sseEvent) seq(t *testing.T) int64 {
	t.Helper()
	if e.ID == "" {
		return 0
	}
	n, err := strconv.ParseInt(e.ID, 10, 64)
	if err != nil {
		t.Fatalf("event id %q is not a number", e.ID)
	}
	return n
}

// decode parses the event's data as an agentrt event.
func (e sseEvent) decode(t *testing.T) event {
	t.Helper()
	var ev event
	if err := json.Unmarshal([]byte(e.Data), &ev); err != nil {
		t.Fatalf("the data of %s is not an event: %q (%v)", e, e.Data, err)
	}
	return ev
}

// readSSE reads server-sent events from r, as the WHATWG spec assembles
// them, and hands each to f until f returns false or r ends; comments and
// retry fields are skipped.
func readSSE(r io.Reader, f func(sseEvent) bool) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 1<<20)
	var ev sseEvent
	var data []string
	has := false
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			if has {
				ev.Data = strings.Join(data, "\n")
				if !f(ev) {
					return nil
				}
			}
			ev, data, has = sseEvent{}, nil, false
			continue
		}
		if strings.HasPrefix(line, ":") {
			continue
		}
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch field {
		case "id":
			ev.ID, has = value, true
		case "event":
			ev.Event, has = value, true
		case "data":
			data, has = append(data, value), true
		}
	}
	return sc.Err()
}

// checkIDs checks that the events with an id are first, first+1, … last,
// each once, and returns them.
func checkIDs(t *testing.T, who string, evs []sseEvent, first, last int64) []sseEvent {
	t.Helper()
	var withID []sseEvent
	want := first
	for _, e := range evs {
		if e.ID == "" {
			continue
		}
		if n := e.seq(t); n != want {
			t.Fatalf("%s: event %s where %d was due; ids %v", who, e, want, ids(evs))
		}
		want++
		withID = append(withID, e)
	}
	if want != last+1 {
		t.Fatalf("%s: ids end at %d, want %d; ids %v", who, want-1, last, ids(evs))
	}
	return withID
}

func ids(evs []sseEvent) []string {
	var out []string
	for _, e := range evs {
		if e.ID != "" {
			out = append(out, e.ID)
		}
	}
	return out
}

// runStatus is the status a run_finished event reports.
func runStatus(t *testing.T, e sseEvent) string {
	t.Helper()
	s, _ := data(t, e.decode(t))["status"].(string)
	return s
}

// curlStream is curl reading a session's event stream, as a person would
// from a shell: curl -N -H 'Accept: text/event-stream' -H 'Last-Event-ID: N'.
type curlStream struct {
	t      *testing.T
	cmd    *exec.Cmd
	events chan sseEvent // closed when curl's output ends
	done   chan struct{} // closed when curl has exited
	errb   bytes.Buffer
	err    error // how the process ended; set before done closes
}

// needTool returns the path of a program the test runs; without it the
// test fails (the test command installs what the tests need).
func needTool(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		t.Fatalf("%s is not installed (scripts/test.sh installs what the tests need): %v", name, err)
	}
	return p
}

// startCurl starts curl on url's event stream, resuming after lastID
// (none when lastID is negative).
func startCurl(t *testing.T, url string, lastID int64) *curlStream {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), procTimeout)
	args := []string{"-sS", "-N", "-H", "Accept: text/event-stream"}
	if lastID >= 0 {
		args = append(args, "-H", fmt.Sprintf("Last-Event-ID: %d", lastID))
	}
	cs := &curlStream{t: t, cmd: exec.CommandContext(ctx, needTool(t, "curl"), append(args, url)...),
		events: make(chan sseEvent, 1024), done: make(chan struct{})}
	cs.cmd.Stderr = &cs.errb
	out, err := cs.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cs.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(cs.done)
		defer cancel()
		_ = readSSE(out, func(e sseEvent) bool { cs.events <- e; return true })
		close(cs.events)
		_, _ = io.Copy(io.Discard, out)
		cs.err = cs.cmd.Wait()
	}()
	t.Cleanup(func() {
		_ = cs.cmd.Process.Kill()
		<-cs.done
	})
	return cs
}

// until reads events until one that stop accepts (returned with those
// before it); it fails the test if curl's output ends first.
func (cs *curlStream) until(what string, stop func(sseEvent) bool) []sseEvent {
	cs.t.Helper()
	var evs []sseEvent
	for e := range cs.events {
		evs = append(evs, e)
		if stop(e) {
			return evs
		}
	}
	<-cs.done
	cs.t.Fatalf("curl's stream ended before %s: %v (curl: %v %s)", what, evs, cs.err, cs.errb.String())
	return nil
}

// rest reads the events left until curl's output ends, and expects curl to
// exit 0: the server ended the stream.
func (cs *curlStream) rest() []sseEvent {
	cs.t.Helper()
	var evs []sseEvent
	for e := range cs.events {
		evs = append(evs, e)
	}
	<-cs.done
	if cs.err != nil {
		cs.t.Fatalf("curl: %v %s", cs.err, cs.errb.String())
	}
	return evs
}

// idIs stops at the event with id n.
func idIs(n int64) func(sseEvent) bool {
	s := strconv.FormatInt(n, 10)
	return func(e sseEvent) bool { return e.ID == s }
}

// typeIs stops at the first event of type typ.
func typeIs(typ string) func(sseEvent) bool {
	return func(e sseEvent) bool { return e.Event == typ }
}

// checkReconnect checks that evs ends with the server's reconnect event
// naming last as the id to resume from.
func checkReconnect(t *testing.T, who string, evs []sseEvent, last int64) {
	t.Helper()
	if len(evs) == 0 || evs[len(evs)-1].Event != "reconnect" {
		t.Fatalf("%s: the stream did not end with a reconnect event: %v", who, evs)
	}
	var d struct {
		LastEventID int64 `json:"last_event_id"`
	}
	if err := json.Unmarshal([]byte(evs[len(evs)-1].Data), &d); err != nil || d.LastEventID != last {
		t.Fatalf("%s: reconnect %s (%v), want last_event_id %d", who, evs[len(evs)-1].Data, err, last)
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// lastID is the id of the last event of evs that has one; 0 if none has.
func lastID(t *testing.T, evs []sseEvent) int64 {
	t.Helper()
	for i := len(evs) - 1; i >= 0; i-- {
		if evs[i].ID != "" {
			return evs[i].seq(t)
		}
	}
	return 0
}

// metrics returns the body of the server's /metrics.
func (s *serveProc) metrics() string {
	s.t.Helper()
	resp, err := http.Get(s.url + "/metrics")
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		s.t.Fatal(err)
	}
	return string(b)
}
