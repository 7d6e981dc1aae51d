package server_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/gateway"
	"github.com/agentrt/agentrt/internal/pgtest"
	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/server"
	"github.com/agentrt/agentrt/session"
	"github.com/agentrt/agentrt/session/memstore"
	"github.com/agentrt/agentrt/session/postgres"
	"github.com/agentrt/agentrt/session/sqlite"
	"github.com/agentrt/agentrt/tool"
)

// What the load tests and the benchmarks share: a model with a model's
// latency, a server (or the floor: the same turn over plain net/http) with
// as many gateway workers as sessions run at once, and an SSE client that
// may run on any goroutine (it returns errors rather than failing the
// test, which only the test's goroutine may do).

// slowEcho is the echo model (helpers_test.go) after a delay: each reply
// waits delay, then streams "echo: " and the message a word a token, with
// tokenGap between tokens. While a gate is up (hold), replies wait for it
// before the delay, so that a test can hold every run at its model call
// (to measure what many open streams cost at once) and let them all go.
type slowEcho struct {
	delay    time.Duration
	tokenGap time.Duration
	gate     atomic.Pointer[chan struct{}]
}

// hold puts a gate up: replies wait until the returned func opens it
// (once; calling it again does nothing).
func (m *slowEcho) hold() (open func()) {
	ch := make(chan struct{})
	m.gate.Store(&ch)
	return sync.OnceFunc(func() {
		m.gate.Store(nil)
		close(ch)
	})
}

func (m *slowEcho) Name() string { return "slow-echo" }

func (m *slowEcho) Stream(ctx context.Context, req *model.Request) iter.Seq2[model.Chunk, error] {
	return func(yield func(model.Chunk, error) bool) {
		if g := m.gate.Load(); g != nil {
			select {
			case <-*g:
			case <-ctx.Done():
				yield(model.Chunk{}, ctx.Err())
				return
			}
		}
		if !wait(ctx, m.delay) {
			yield(model.Chunk{}, ctx.Err())
			return
		}
		for c, err := range (&echo{}).Stream(ctx, req) {
			if !yield(c, err) {
				return
			}
			if c.FinishReason == "" && !wait(ctx, m.tokenGap) {
				yield(model.Chunk{}, ctx.Err())
				return
			}
		}
	}
}

// wait is the model's latency: d, or until ctx ends (false).
func wait(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// loadAgent is the agent of the load tests: the fixture's assistant
// (helpers_test.go) on model m, whose deploy tool needs a person's
// approval.
func loadAgent(tb testing.TB, m model.Model) *agentrt.Agent {
	tb.Helper()
	deploy := tool.Must(tool.New("deploy", "deploys", func(ctx context.Context, in struct {
		Env string `json:"env"`
	}) (string, error) {
		return "deployed to " + in.Env, nil
	}))
	// add is the tool of the benchmarks' workload of tool calls
	// (-bench.workload tools), which calls it without asking anybody.
	add := tool.Must(tool.New("add", "adds two numbers", func(ctx context.Context, in struct {
		A int `json:"a"`
		B int `json:"b"`
	}) (int, error) {
		return in.A + in.B, nil
	}))
	tools, err := tool.NewRegistry(deploy, add)
	if err != nil {
		tb.Fatal(err)
	}
	return &agentrt.Agent{Name: "assistant", SystemPrompt: "You help.", Model: m, Tools: tools,
		Approval: agentrt.ApprovalPolicy{Ask: []string{"deploy"}}}
}

// loadServer is a server as agentrt serve runs it, on a store of the
// test's choosing, with the gateway's loop running.
type loadServer struct {
	r     *agentrt.Runner
	store session.Store
	gw    *gateway.Gateway
	srv   *server.Server
	http  *httptest.Server
	conns *connCount
}

type loadOptions struct {
	store session.Store // nil: memstore
	model *slowEcho     // nil: no delay
	llm   model.Model   // when set, the agent's model instead of model
	// workers are the gateway's workers (gateway.workers): the sessions
	// that run at once. Zero: the default, 64.
	workers int
}

func newLoadServer(tb testing.TB, o loadOptions) *loadServer {
	tb.Helper()
	if o.store == nil {
		o.store = memstore.New()
	}
	if o.model == nil {
		o.model = &slowEcho{}
	}
	ls := &loadServer{store: o.store}
	var err error
	var m model.Model = o.model
	if o.llm != nil {
		m = o.llm
	}
	ls.r, err = agentrt.NewRunner(agentrt.Config{Store: o.store, Agents: []*agentrt.Agent{loadAgent(tb, m)}})
	if err != nil {
		tb.Fatal(err)
	}
	ls.gw, err = gateway.New(gateway.Config{Runner: ls.r, Workers: o.workers})
	if err != nil {
		tb.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = ls.gw.Run(ctx) })
	// One client streams up to 1,000 turns at once here: its allowance of
	// streams is not what these tests measure.
	ls.srv, err = server.New(server.Config{Runner: ls.r, Gateway: ls.gw, Heartbeat: time.Hour, MaxStreams: 1 << 20})
	if err != nil {
		tb.Fatal(err)
	}
	ls.http = httptest.NewUnstartedServer(ls.srv.Handler())
	ls.conns = newConnCount()
	ls.http.Config.ConnState = ls.conns.track
	ls.http.Start()
	tb.Cleanup(func() {
		ls.http.CloseClientConnections()
		_ = ls.srv.Shutdown(context.Background())
		ls.http.Close()
		cancel()
		wg.Wait()
		_ = ls.r.Close(context.Background())
	})
	return ls
}

// settle waits until the gateway has no input pending and serves no
// source: a stream ends at its run's run_finished, and the gateway's
// worker still has the source's claim to release in the store after it.
// The gateway tells nobody when it is idle, so this looks every few
// milliseconds; it waits for the work to end, it does not order the code
// under test.
func (ls *loadServer) settle(ctx context.Context) error {
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		p, err := ls.gw.Pending(ctx)
		if err != nil {
			return err
		}
		if len(p) == 0 && ls.gw.Serving() == 0 {
			return nil
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			return fmt.Errorf("the gateway still serves %d sources, %d pending: %w", ls.gw.Serving(), len(p), ctx.Err())
		}
	}
}

// floor is what the server is measured against: a plain net/http handler
// that runs the same turn over memstore with Runner.Run (no gateway, no
// auth, no watch) and writes each event it yields as the server's SSE
// does. POST /floor/{id} {"text": …} streams the turn of session id;
// POST /watch/{id} streams it through a watch (watched).
type floor struct {
	r     *agentrt.Runner
	http  *httptest.Server
	conns *connCount
}

func newFloor(tb testing.TB, m model.Model) *floor {
	tb.Helper()
	r, err := agentrt.NewRunner(agentrt.Config{Store: memstore.New(), Agents: []*agentrt.Agent{loadAgent(tb, m)}})
	if err != nil {
		tb.Fatal(err)
	}
	f := &floor{r: r, conns: newConnCount()}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /floor/{id}", f.turn)
	mux.HandleFunc("POST /watch/{id}", f.watched)
	f.http = httptest.NewUnstartedServer(mux)
	f.http.Config.ConnState = f.conns.track
	f.http.Start()
	tb.Cleanup(func() {
		f.http.CloseClientConnections()
		f.http.Close()
		_ = r.Close(context.Background())
	})
	return f
}

func (f *floor) turn(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Text string `json:"text"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	f.write(w, f.r.Run(r.Context(), r.PathValue("id"), agentrt.Input{Text: req.Text}))
}

// watched is the turn as the server runs it without the gateway: the run
// started in the background (Runner.Start) once a watch of the session
// is subscribed, and the watch's events written until the run's
// run_finished. POST /watch/{id} {"text": …}. It tells what of the
// server's cost is the watch rather than the gateway.
func (f *floor) watched(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Text string `json:"text"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	id := r.PathValue("id")
	var startErr error
	events := f.r.WatchSubscribed(ctx, id, 0, func() {
		_, startErr = f.r.Start(ctx, id, agentrt.Input{Text: req.Text})
	})
	f.write(w, func(yield func(*session.Event, error) bool) {
		for ev, err := range events {
			if startErr != nil {
				yield(nil, startErr)
				return
			}
			if !yield(ev, err) || err != nil || ev.Type == session.TypeRunFinished {
				return
			}
		}
	})
}

// write writes events as the server's SSE does, until they end.
func (f *floor) write(w http.ResponseWriter, events iter.Seq2[*session.Event, error]) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	buf := make([]byte, 0, 1024)
	for ev, err := range events {
		if err != nil {
			buf = append(buf[:0], "event: error\ndata: "...)
			buf = strconv.AppendQuote(buf, err.Error())
			buf = append(buf, "\n\n"...)
			_, _ = w.Write(buf)
			return
		}
		buf = buf[:0]
		if ev.Seq != 0 {
			buf = append(buf, "id: "...)
			buf = strconv.AppendInt(buf, ev.Seq, 10)
			buf = append(buf, '\n')
		}
		buf = append(buf, "event: "...)
		buf = append(buf, ev.Type...)
		buf = append(buf, "\ndata: "...)
		buf, _ = ev.AppendJSON(buf)
		buf = append(buf, "\n\n"...)
		if _, err := w.Write(buf); err != nil {
			return
		}
		if err := rc.Flush(); err != nil {
			return
		}
	}
}

// connCount counts a server's open connections, so that a test can wait
// until every connection its clients closed is closed at the server too
// (its goroutine and buffers gone) before it measures the heap.
type connCount struct {
	mu   sync.Mutex
	n    int
	zero *sync.Cond // signalled when n drops to 0
}

func newConnCount() *connCount {
	c := &connCount{}
	c.zero = sync.NewCond(&c.mu)
	return c
}

func (c *connCount) track(_ net.Conn, st http.ConnState) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch st {
	case http.StateNew:
		c.n++
	case http.StateClosed, http.StateHijacked:
		if c.n--; c.n == 0 {
			c.zero.Broadcast()
		}
	}
}

// waitClosed waits until the server has no connection open.
func (c *connCount) waitClosed() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for c.n > 0 {
		c.zero.Wait()
	}
}

// client is an HTTP client for many streams at once; its methods may be
// called from any goroutine.
type client struct {
	base string
	tr   *http.Transport
	c    *http.Client
}

// newClient returns a client of base keeping up to conns idle connections,
// closed when the test ends.
func newClient(tb testing.TB, base string, conns int) *client {
	tr := &http.Transport{MaxIdleConns: conns, MaxIdleConnsPerHost: conns, IdleConnTimeout: time.Minute}
	tb.Cleanup(tr.CloseIdleConnections)
	return &client{base: base, tr: tr, c: &http.Client{Transport: tr}}
}

// create makes a session of the assistant and returns its id.
func (c *client) create(ctx context.Context) (string, error) {
	code, body, err := c.do(ctx, "POST", "/v1/sessions", `{"agent":"assistant"}`)
	if err != nil {
		return "", err
	}
	if code != http.StatusCreated {
		return "", fmt.Errorf("create a session: %d %s", code, body)
	}
	var s server.SessionInfo
	if err := json.Unmarshal(body, &s); err != nil {
		return "", err
	}
	return s.ID, nil
}

// do makes a request with a JSON body ("" for none) and returns its
// status and body.
func (c *client) do(ctx context.Context, method, path, body string) (int, []byte, error) {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return 0, nil, err
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.c.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

// open starts an event stream: method path with body ("" for none),
// Accept: text/event-stream and the headers hdr (name, value, …). The
// caller closes the body.
func (c *client) open(ctx context.Context, method, path, body string, hdr ...string) (io.ReadCloser, error) {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "text/event-stream")
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := c.c.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return nil, fmt.Errorf("%s %s: %d %s %s", method, path, resp.StatusCode, resp.Header.Get("Content-Type"), b)
	}
	return resp.Body, nil
}

// streamAll streams a turn in each of sessions ids at once (POST
// path(id), {"text": …}) and checks every stream with checkRun against
// store (with no store, with checkStream). started, when set, is called
// once every stream has its run_started (with the model's gate up —
// slowEcho.hold — every stream is open then and every run waits at its
// model call, until started opens the gate).
func streamAll(ctx context.Context, c *client, ids []string, path func(id string) string, store session.Store, started func()) error {
	var open sync.WaitGroup
	if started != nil {
		open.Add(len(ids))
	}
	errs := make([]error, len(ids))
	var wg sync.WaitGroup
	for i, id := range ids {
		wg.Go(func() {
			var once sync.Once
			if started != nil {
				defer once.Do(open.Done) // a stream that failed early
			}
			body, err := c.open(ctx, "POST", path(id), fmt.Sprintf(`{"text":"hello from %d"}`, i))
			if err != nil {
				errs[i] = err
				return
			}
			defer body.Close()
			evs, err := readEvents(body, func(e sseEvent) bool {
				if started != nil && e.typ == "run_started" {
					once.Do(open.Done)
				}
				return false
			})
			if err != nil {
				errs[i] = fmt.Errorf("session %s: %w", id, err)
				return
			}
			if store == nil {
				_, err = checkStream(id, evs)
			} else {
				_, err = checkRun(ctx, store, id, 0, evs)
			}
			errs[i] = err
		})
	}
	if started != nil {
		open.Wait()
		started()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// readEvents reads server-sent events from r until it ends, or stop says
// so of an event (included), or an event fails to decode. Committed and
// live events get ev (decoded from data) and seq; data keeps the bytes
// as sent.
func readEvents(r io.Reader, stop func(sseEvent) bool) ([]sseEvent, error) {
	br := bufio.NewReader(r)
	var out []sseEvent
	var cur sseEvent
	var long []byte // a line longer than br's buffer
	for {
		line, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			long = append(long, line...)
			continue
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = nil
			}
			return out, err
		}
		if long != nil {
			line, long = append(long, line...), nil
		}
		line = bytes.TrimSuffix(line, []byte("\n"))
		switch {
		case len(line) == 0:
			if cur.typ == "" && !cur.ping {
				continue
			}
			// A session's events, error among them, have a seq as id; the
			// stream's own error (no id) and reconnect are not events.
			if cur.data != nil && cur.typ != "reconnect" && cur.typ != "stream_error" && (cur.typ != "error" || cur.id != "") {
				var ev session.Event
				if err := json.Unmarshal(cur.data, &ev); err != nil {
					return out, fmt.Errorf("event %s: %v: %s", cur.typ, err, cur.data)
				}
				cur.ev, cur.seq = &ev, ev.Seq
			}
			out = append(out, cur)
			if stop != nil && stop(cur) {
				return out, nil
			}
			cur = sseEvent{}
		case line[0] == ':':
			cur.ping = true
		case bytes.HasPrefix(line, []byte("id: ")):
			cur.id = string(line[4:])
		case bytes.HasPrefix(line, []byte("event: ")):
			cur.typ = string(line[7:])
		case bytes.HasPrefix(line, []byte("data: ")):
			cur.data = bytes.Clone(line[6:])
		}
	}
}

// checkRun checks a stream of one turn of session id: it starts with
// run_started and ends with run_finished; its committed events have
// seqs after+1, after+2, … with no gap and no duplicate, each its seq as
// its SSE id; its live events have no id; the data of every committed
// event is what the store holds for that seq, byte for byte; and the
// store has nothing after the last. It returns the stream's last seq.
func checkRun(ctx context.Context, store session.Store, id string, after int64, evs []sseEvent) (int64, error) {
	if len(evs) == 0 || evs[0].typ != "run_started" || evs[len(evs)-1].typ != "run_finished" {
		return 0, fmt.Errorf("session %s: streamed %v, want run_started … run_finished", id, typesOf(evs))
	}
	streamed, err := committed(id, after, evs)
	if err != nil {
		return 0, err
	}
	return after + int64(len(streamed)), sameAsStored(ctx, store, id, after, streamed)
}

// checkStream is checkRun of a session's first turn without the store:
// run_started … run_finished, seqs 1, 2, … with no gap and no duplicate.
// The benchmarks check their streams with it while they are timed.
func checkStream(id string, evs []sseEvent) (int64, error) {
	if len(evs) == 0 || evs[0].typ != "run_started" || evs[len(evs)-1].typ != "run_finished" {
		return 0, fmt.Errorf("session %s: streamed %v, want run_started … run_finished", id, typesOf(evs))
	}
	streamed, err := committed(id, 0, evs)
	return int64(len(streamed)), err
}

// committed returns the data of the committed events of evs, checking
// that their seqs run after+1, after+2, … with no gap and no duplicate,
// each with its seq as its SSE id, and that the live ones have no id.
func committed(id string, after int64, evs []sseEvent) ([][]byte, error) {
	var out [][]byte
	for _, e := range evs {
		if e.ev == nil {
			continue
		}
		if e.seq == 0 {
			if e.id != "" {
				return nil, fmt.Errorf("session %s: a live %s event has id %q", id, e.typ, e.id)
			}
			continue
		}
		want := after + int64(len(out)) + 1
		if e.seq != want || e.id != strconv.FormatInt(e.seq, 10) {
			return nil, fmt.Errorf("session %s: event %s has seq %d and id %q, want %d (a gap or a duplicate)", id, e.typ, e.seq, e.id, want)
		}
		out = append(out, e.data)
	}
	return out, nil
}

// sameAsStored checks that the store's events of session id after seq
// after are streamed, byte for byte, and none besides.
func sameAsStored(ctx context.Context, store session.Store, id string, after int64, streamed [][]byte) error {
	i := 0
	for ev, err := range store.Events(ctx, id, after) {
		if err != nil {
			return err
		}
		b, err := ev.AppendJSON(nil)
		if err != nil {
			return err
		}
		if i >= len(streamed) {
			return fmt.Errorf("session %s: the store has seq %d (%s), which was not streamed", id, ev.Seq, ev.Type)
		}
		if !bytes.Equal(b, streamed[i]) {
			return fmt.Errorf("session %s: seq %d streamed as\n%s\nstored as\n%s", id, ev.Seq, streamed[i], b)
		}
		i++
	}
	if i != len(streamed) {
		return fmt.Errorf("session %s: %d events streamed after %d, %d stored", id, len(streamed), after, i)
	}
	return nil
}

// heap is the heap once the garbage is collected (twice: finalizers free
// more on the second): in use (spans holding any live object, what
// the process keeps) and allocated (the live objects alone), and the
// goroutines.
type heap struct {
	inuse, alloc uint64
	goroutines   int
}

func measureHeap() heap {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return heap{inuse: m.HeapInuse, alloc: m.HeapAlloc, goroutines: runtime.NumGoroutine()}
}

// per is what h holds beyond base, per one of n.
func (h heap) per(base heap, n int) (inuse, alloc int64, goroutines float64) {
	return (int64(h.inuse) - int64(base.inuse)) / int64(n), (int64(h.alloc) - int64(base.alloc)) / int64(n),
		float64(h.goroutines-base.goroutines) / float64(n)
}

// stores are the durable stores the load tests run on: SQLite in a temp
// dir and Postgres in a schema of the test's own (AGENTRT_TEST_POSTGRES;
// under CI a missing one fails the test).
var stores = []struct {
	name string
	open func(tb testing.TB) session.Store
}{
	{"sqlite", func(tb testing.TB) session.Store {
		st, err := sqlite.Open(context.Background(), filepath.Join(tb.TempDir(), "agentrt.db"))
		if err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(func() { st.Close() })
		return st
	}},
	{"postgres", func(tb testing.TB) session.Store {
		dsn, _ := pgtest.Schema(tb)
		st, err := postgres.Open(context.Background(), dsn)
		if err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(func() { st.Close() })
		return st
	}},
}

// mb is n bytes in MiB.
func mb(n uint64) float64 { return float64(n) / (1 << 20) }
