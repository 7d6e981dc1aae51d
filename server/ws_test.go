package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/gateway"
	"github.com/agentrt/agentrt/model/scripted"
	"github.com/agentrt/agentrt/server"
	"github.com/agentrt/agentrt/session"
	"github.com/agentrt/agentrt/session/memstore"
	"github.com/agentrt/agentrt/tool"
)

// wsEnv is a server over a runner on memstore, with its gateway running,
// behind an httptest server.
type wsEnv struct {
	r     *agentrt.Runner
	gw    *gateway.Gateway
	store *memstore.Store
	srv   *server.Server
	ts    *httptest.Server
	url   string // ws://…/v1/ws
	logs  *wsLogTap
}

func newWSEnv(t *testing.T, cfg server.Config, agents ...*agentrt.Agent) *wsEnv {
	t.Helper()
	return newWSEnvWith(t, wsSetup{}, cfg, agents...)
}

// wsSetup changes what newWSEnvWith builds.
type wsSetup struct {
	// listener, when set, wraps the server's listener.
	listener func(net.Listener) net.Listener
	// store, when set, wraps the memstore the runner uses.
	store func(*memstore.Store) session.Store
}

func newWSEnvWith(t *testing.T, setup wsSetup, cfg server.Config, agents ...*agentrt.Agent) *wsEnv {
	t.Helper()
	store := memstore.New()
	var rs session.Store = store
	if setup.store != nil {
		rs = setup.store(store)
	}
	r, err := agentrt.NewRunner(agentrt.Config{Store: rs, Agents: agents})
	if err != nil {
		t.Fatal(err)
	}
	gw, err := gateway.New(gateway.Config{Runner: r})
	if err != nil {
		t.Fatal(err)
	}
	gctx, stopGateway := context.WithCancel(context.Background())
	gwDone := make(chan error, 1)
	go func() { gwDone <- gw.Run(gctx) }()
	logs := &wsLogTap{msgs: make(chan string, 256)}
	cfg.Runner, cfg.Gateway = r, gw
	if cfg.Log == nil {
		cfg.Log = slog.New(logs)
	}
	srv, err := server.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewUnstartedServer(srv.Handler())
	if setup.listener != nil {
		ts.Listener = setup.listener(ts.Listener)
	}
	ts.Start()
	t.Cleanup(func() {
		// Shutdown first: it ends the WebSocket connections, which
		// httptest's Close does not wait for.
		if err := srv.Shutdown(context.Background()); err != nil {
			t.Errorf("shutdown: %v", err)
		}
		ts.Close()
		stopGateway()
		<-gwDone
		if err := r.Close(context.Background()); err != nil {
			t.Errorf("close the runner: %v", err)
		}
	})
	return &wsEnv{r: r, gw: gw, store: store, srv: srv, ts: ts, url: "ws" + strings.TrimPrefix(ts.URL, "http") + "/v1/ws", logs: logs}
}

// session creates a session of tenant (empty: the default tenant).
func (e *wsEnv) session(t *testing.T, tenant, agent, id string) {
	t.Helper()
	ctx := context.Background()
	if tenant != "" {
		ctx = session.WithTenant(ctx, tenant)
	}
	if _, err := e.r.CreateSession(ctx, agent, id, nil); err != nil {
		t.Fatal(err)
	}
}

// storedJSON is session id's stored log, each event as AppendJSON writes it.
func (e *wsEnv) storedJSON(t *testing.T, tenant, id string) []string {
	t.Helper()
	ctx := context.Background()
	if tenant != "" {
		ctx = session.WithTenant(ctx, tenant)
	}
	var out []string
	for ev, err := range e.store.Events(ctx, id, 0) {
		if err != nil {
			t.Fatal(err)
		}
		b, err := ev.AppendJSON(nil)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, string(b))
	}
	return out
}

// logTap is a slog handler that hands the messages of the server's
// WebSocket logs to the test.
type wsLogTap struct{ msgs chan string }

func (*wsLogTap) Enabled(context.Context, slog.Level) bool { return true }
func (l *wsLogTap) Handle(_ context.Context, r slog.Record) error {
	if strings.Contains(r.Message, "websocket") {
		select {
		case l.msgs <- r.Message:
		default:
		}
	}
	return nil
}
func (l *wsLogTap) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *wsLogTap) WithGroup(string) slog.Handler      { return l }

// dial opens a WebSocket with the bearer key (none when empty) and
// starts reading it.
func (e *wsEnv) dial(t *testing.T, key string) *wsClient {
	t.Helper()
	c, resp, err := websocket.Dial(context.Background(), e.url, wsDialOptions(key))
	if err != nil {
		t.Fatalf("dial: %v (%s)", err, wsRespBody(resp))
	}
	return wsStartReading(t, c)
}

func wsDialOptions(key string) *websocket.DialOptions {
	opts := &websocket.DialOptions{HTTPHeader: http.Header{}}
	if key != "" {
		opts.HTTPHeader.Set("Authorization", "Bearer "+key)
	}
	return opts
}

func wsRespBody(resp *http.Response) string {
	if resp == nil || resp.Body == nil {
		return "no response"
	}
	b, _ := io.ReadAll(resp.Body)
	return fmt.Sprintf("%d %s", resp.StatusCode, b)
}

// frame is any frame the server sends, decoded loosely.
type wsFrame struct {
	Type        string           `json:"type"`
	ID          string           `json:"id"`
	Session     string           `json:"session"`
	Code        string           `json:"code"`
	Message     string           `json:"message"`
	Event       json.RawMessage  `json:"event"`
	InputID     string           `json:"input_id"`
	SessionID   string           `json:"session_id"`
	Source      string           `json:"source"`
	RunID       string           `json:"run_id"`
	Duplicate   bool             `json:"duplicate"`
	Pending     int              `json:"pending"`
	Acted       bool             `json:"acted"`
	Status      string           `json:"status"`
	Control     *session.Control `json:"control"`
	After       int64            `json:"after"`
	LastSeq     int64            `json:"last_seq"`
	LastEventID int64            `json:"last_event_id"`
	Reason      string           `json:"reason"`
}

func (f wsFrame) event(t *testing.T) *session.Event {
	t.Helper()
	var ev session.Event
	if err := json.Unmarshal(f.Event, &ev); err != nil {
		t.Fatalf("the event of %+v: %v", f, err)
	}
	return &ev
}

// wsClient reads its connection in the background (so that it answers
// pings) and hands the frames to the test.
type wsClient struct {
	c       *websocket.Conn
	frames  chan wsFrame
	done    chan struct{} // closed when reading stopped
	err     error         // why, once done is closed
	pending []wsFrame     // frames read and put aside by await
}

func wsStartReading(t *testing.T, c *websocket.Conn) *wsClient {
	c.SetReadLimit(-1)
	cl := &wsClient{c: c, frames: make(chan wsFrame, 1<<12), done: make(chan struct{})}
	go func() {
		defer close(cl.done)
		for {
			typ, b, err := c.Read(context.Background())
			if err != nil {
				cl.err = err
				return
			}
			var f wsFrame
			if typ != websocket.MessageText || json.Unmarshal(b, &f) != nil {
				f = wsFrame{Type: "undecodable", Message: string(b)}
			}
			cl.frames <- f
		}
	}()
	t.Cleanup(func() {
		_ = c.CloseNow()
		<-cl.done
	})
	return cl
}

func (cl *wsClient) send(t *testing.T, v any) {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	cl.sendRaw(t, string(b))
}

func (cl *wsClient) sendRaw(t *testing.T, s string) {
	t.Helper()
	if err := cl.c.Write(context.Background(), websocket.MessageText, []byte(s)); err != nil {
		t.Fatalf("write: %v", err)
	}
}

// next returns the next frame: one put aside first, else the next read.
func (cl *wsClient) next(t *testing.T) wsFrame {
	t.Helper()
	if len(cl.pending) > 0 {
		f := cl.pending[0]
		cl.pending = cl.pending[1:]
		return f
	}
	select {
	case f := <-cl.frames:
		return f
	case <-cl.done:
		select {
		case f := <-cl.frames:
			return f
		default:
		}
		t.Fatalf("the connection ended: %v", cl.err)
		return wsFrame{}
	}
}

// await returns the first frame that is not an event and has id,
// putting aside the frames before it.
func (cl *wsClient) await(t *testing.T, id string) wsFrame {
	t.Helper()
	var aside []wsFrame
	defer func() { cl.pending = append(aside, cl.pending...) }()
	for {
		f := cl.next(t)
		if f.Type != "event" && f.ID == id {
			return f
		}
		aside = append(aside, f)
	}
}

// events reads the event frames of session until stop says so, putting
// aside other frames; it returns them in order.
func (cl *wsClient) events(t *testing.T, sess string, stop func(*session.Event) bool) []wsFrame {
	t.Helper()
	var aside, out []wsFrame
	defer func() { cl.pending = append(aside, cl.pending...) }()
	for {
		f := cl.next(t)
		if f.Type != "event" || f.Session != sess {
			if f.Type == "error" || f.Type == "reconnect" {
				t.Fatalf("while reading the events of %s: %+v", sess, f)
			}
			aside = append(aside, f)
			continue
		}
		out = append(out, f)
		if stop(f.event(t)) {
			return out
		}
	}
}

// finished stops at the run_finished of status st.
func wsFinished(st session.Status) func(*session.Event) bool {
	return func(ev *session.Event) bool {
		rf, ok := ev.Data.(*session.RunFinished)
		return ok && rf.Status == st
	}
}

func wsOfType(typ session.Type) func(*session.Event) bool {
	return func(ev *session.Event) bool { return ev.Type == typ }
}

// committed is the JSON of the committed events among frames.
func wsCommitted(t *testing.T, frames []wsFrame) []string {
	t.Helper()
	var out []string
	for _, f := range frames {
		if f.event(t).Seq != 0 {
			out = append(out, string(f.Event))
		}
	}
	return out
}

// seqs is the seqs of the committed events among frames.
func wsSeqs(t *testing.T, frames []wsFrame) []int64 {
	t.Helper()
	var out []int64
	for _, f := range frames {
		if s := f.event(t).Seq; s != 0 {
			out = append(out, s)
		}
	}
	return out
}

func wsSpan(from, to int64) []int64 {
	var out []int64
	for s := from; s <= to; s++ {
		out = append(out, s)
	}
	return out
}

type wsMsg = map[string]any

func wsTextAgent(name string, replies ...scripted.Reply) *agentrt.Agent {
	return &agentrt.Agent{Name: name, Model: scripted.New("m", replies...)}
}

// gate is a tool that waits for the test (or for its run to end).
type wsGate struct{ release chan struct{} }

func newWSGate() *wsGate { return &wsGate{release: make(chan struct{})} }

func (g *wsGate) tool() tool.Tool {
	return tool.Must(tool.New("wait", "waits for the test", func(ctx context.Context, _ struct{}) (string, error) {
		select {
		case <-g.release:
			return "released", nil
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}))
}

func wsGatedAgent(t *testing.T, g *wsGate, replies ...scripted.Reply) *agentrt.Agent {
	t.Helper()
	reg, err := tool.NewRegistry(g.tool())
	if err != nil {
		t.Fatal(err)
	}
	script := append([]scripted.Reply{{ToolCalls: []scripted.Call{scripted.ToolCall("wait", `{}`)}}}, replies...)
	return &agentrt.Agent{Name: "gated", Model: scripted.New("m", script...), Tools: reg}
}

// Input, then subscribe: the subscription replays the turn the input
// started, each event exactly as the store has it (SSE's data), from
// run_started (which names the input) to run_finished.
func TestWSInputThenSubscribe(t *testing.T) {
	e := newWSEnv(t, server.Config{}, wsTextAgent("a", scripted.Reply{Text: "hello there"}))
	e.session(t, "", "a", "s1")
	cl := e.dial(t, "")

	cl.send(t, wsMsg{"type": "input", "id": "i1", "session": "s1", "text": "hi"})
	acc := cl.await(t, "i1")
	if acc.Type != "accepted" || acc.InputID == "" || acc.SessionID != "s1" || acc.Source != "s1" {
		t.Fatalf("input: %+v", acc)
	}
	cl.send(t, wsMsg{"type": "subscribe", "id": "sub", "session": "s1"})
	if f := cl.await(t, "sub"); f.Type != "subscribed" || f.Session != "s1" || f.After != 0 {
		t.Fatalf("subscribe: %+v", f)
	}
	frames := cl.events(t, "s1", wsFinished(session.StatusDone))
	for _, f := range frames {
		if f.ID != "sub" || f.event(t).SessionID != "s1" {
			t.Fatalf("event frame %+v", f)
		}
	}
	first := frames[0].event(t)
	rs, ok := first.Data.(*session.RunStarted)
	if first.Seq != 1 || !ok || len(rs.Inputs) != 1 || rs.Inputs[0] != acc.InputID {
		t.Fatalf("first event %+v, want the run_started of input %s", first, acc.InputID)
	}
	if diff := cmp.Diff(e.storedJSON(t, "", "s1"), wsCommitted(t, frames)); diff != "" {
		t.Errorf("event frames differ from the stored log (-stored +frames):\n%s", diff)
	}
}

// A connection's frames are carried out in the order they came: inputs
// reach their source's inbox in the order the client sent them, and the
// replies come in that order.
func TestWSInputOrder(t *testing.T) {
	const n = 20
	replies := make([]scripted.Reply, 4*n)
	for i := range replies {
		replies[i] = scripted.Reply{Text: "ok"}
	}
	e := newWSEnv(t, server.Config{}, wsTextAgent("a", replies...))
	e.session(t, "", "a", "s1")
	cl := e.dial(t, "")
	for i := range n {
		cl.send(t, wsMsg{"type": "input", "id": fmt.Sprint(i), "session": "s1", "text": fmt.Sprint("message ", i)})
	}
	var replied []string
	for range n {
		f := cl.next(t)
		if f.Type != "accepted" || f.ID != fmt.Sprint(len(replied)) {
			t.Fatalf("reply %d: %+v", len(replied), f)
		}
		replied = append(replied, f.InputID)
	}
	ins, err := e.store.Inputs(context.Background(), "s1", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	var stored []string
	for _, in := range ins {
		stored = append(stored, in.ID)
	}
	if diff := cmp.Diff(replied, stored); diff != "" {
		t.Errorf("the inbox's order differs from the frames' (-sent +stored):\n%s", diff)
	}
}

// A subscription made while a run goes on gets the run's live tokens,
// each after the committed event it follows, with the committed events.
func TestWSLiveTokens(t *testing.T) {
	g := newWSGate()
	const text = "one two three four five"
	e := newWSEnv(t, server.Config{}, wsGatedAgent(t, g, scripted.Reply{Text: text, Chunks: 5}))
	e.session(t, "", "gated", "s1")
	cl := e.dial(t, "")
	cl.send(t, wsMsg{"type": "subscribe", "id": "sub", "session": "s1"})
	cl.await(t, "sub")
	cl.send(t, wsMsg{"type": "input", "id": "i1", "session": "s1", "text": "go"})
	// The subscription is live once it has delivered the run's tool call.
	cl.events(t, "s1", wsOfType(session.TypeToolCall))
	close(g.release)
	frames := cl.events(t, "s1", wsFinished(session.StatusDone))
	var got strings.Builder
	n := 0
	for _, f := range frames {
		if tok, ok := f.event(t).Data.(*session.Token); ok {
			got.WriteString(tok.Text)
			n++
		}
	}
	if n < 2 || got.String() != text {
		t.Errorf("%d tokens %q, want the reply %q in pieces", n, got.String(), text)
	}
}

// countGauge is a server.Gauge that counts.
type countGauge struct{ atomic.Int64 }

func (g *countGauge) Inc() { g.Add(1) }
func (g *countGauge) Dec() { g.Add(-1) }

// One connection follows two sessions at once, each event frame naming
// its subscription; the connection counts as one client, one open "ws"
// stream.
func TestWSTwoSessions(t *testing.T) {
	streams := map[string]*countGauge{"ws": {}, "sse": {}}
	e := newWSEnv(t, server.Config{Streams: func(kind string) server.Gauge { return streams[kind] }},
		wsTextAgent("a", scripted.Reply{Text: "hi"}, scripted.Reply{Text: "hi"}))
	e.session(t, "", "a", "s1")
	e.session(t, "", "a", "s2")
	cl := e.dial(t, "")
	cl.send(t, wsMsg{"type": "subscribe", "id": "one", "session": "s1"})
	cl.send(t, wsMsg{"type": "subscribe", "id": "two", "session": "s2"})
	cl.await(t, "one")
	cl.await(t, "two")
	if n := e.srv.Clients(); n != 1 {
		t.Errorf("Clients() = %d with one connection of two subscriptions, want 1", n)
	}
	if ws, sse := streams["ws"].Load(), streams["sse"].Load(); ws != 1 || sse != 0 {
		t.Errorf("open streams: ws %d, sse %d; want one ws", ws, sse)
	}
	cl.send(t, wsMsg{"type": "input", "session": "s1", "text": "a"})
	cl.send(t, wsMsg{"type": "input", "session": "s2", "text": "b"})

	// Read until both turns are done, whatever their interleaving.
	got := map[string][]wsFrame{}
	doneCount := 0
	for doneCount < 2 {
		f := cl.next(t)
		if f.Type != "event" {
			continue // the accepted replies
		}
		ev := f.event(t)
		want := map[string]string{"s1": "one", "s2": "two"}[ev.SessionID]
		if f.Session != ev.SessionID || f.ID != want {
			t.Fatalf("frame of subscription %s/%s carries an event of %s", f.ID, f.Session, ev.SessionID)
		}
		got[f.Session] = append(got[f.Session], f)
		if wsFinished(session.StatusDone)(ev) {
			doneCount++
		}
	}
	for _, id := range []string{"s1", "s2"} {
		if diff := cmp.Diff(e.storedJSON(t, "", id), wsCommitted(t, got[id])); diff != "" {
			t.Errorf("%s: event frames differ from the stored log (-stored +frames):\n%s", id, diff)
		}
	}
}

// Subscribing with after=N resumes after event N: from the store, then
// live as the run goes on, with no gap and no duplicate at the seam; and
// after a whole turn, on another connection.
func TestWSResumeAfter(t *testing.T) {
	g := newWSGate()
	e := newWSEnv(t, server.Config{}, wsGatedAgent(t, g, scripted.Reply{Text: "first"}, scripted.Reply{Text: "second"}))
	e.session(t, "", "gated", "s1")

	a := e.dial(t, "")
	a.send(t, wsMsg{"type": "subscribe", "id": "a", "session": "s1"})
	a.await(t, "a")
	a.send(t, wsMsg{"type": "input", "session": "s1", "text": "go"})
	upTo := a.events(t, "s1", wsOfType(session.TypeToolCall))
	callSeq := upTo[len(upTo)-1].event(t).Seq

	// A second client resumes after the event before the tool call while
	// the run waits in the tool: it gets the tool call from the store,
	// then the rest live.
	b := e.dial(t, "")
	b.send(t, wsMsg{"type": "subscribe", "id": "b", "session": "s1", "after": callSeq - 1})
	if f := b.await(t, "b"); f.Type != "subscribed" || f.After != callSeq-1 || f.LastSeq < callSeq {
		t.Fatalf("subscribe after %d: %+v", callSeq-1, f)
	}
	close(g.release)
	rest := b.events(t, "s1", wsFinished(session.StatusDone))
	last := rest[len(rest)-1].event(t).Seq
	if diff := cmp.Diff(wsSpan(callSeq, last), wsSeqs(t, rest)); diff != "" {
		t.Errorf("seqs after %d (-want +got):\n%s", callSeq-1, diff)
	}
	stored := e.storedJSON(t, "", "s1")
	if diff := cmp.Diff(stored[callSeq-1:last], wsCommitted(t, rest)); diff != "" {
		t.Errorf("resumed frames differ from the stored log (-stored +frames):\n%s", diff)
	}

	// A turn later, a new connection resumes after the first turn.
	c := e.dial(t, "")
	c.send(t, wsMsg{"type": "input", "id": "i2", "session": "s1", "text": "again"})
	c.await(t, "i2")
	c.send(t, wsMsg{"type": "subscribe", "id": "c", "session": "s1", "after": last})
	c.await(t, "c")
	second := c.events(t, "s1", wsFinished(session.StatusDone))
	end := second[len(second)-1].event(t).Seq
	if diff := cmp.Diff(wsSpan(last+1, end), wsSeqs(t, second)); diff != "" {
		t.Errorf("seqs of the second turn (-want +got):\n%s", diff)
	}
}

func wsDeployAgent(t *testing.T, runs *atomic.Int32) *agentrt.Agent {
	t.Helper()
	deploy := tool.WithMeta(tool.Must(tool.New("deploy", "deploys", func(_ context.Context, in struct {
		Env string `json:"env"`
	}) (string, error) {
		runs.Add(1)
		return "deployed to " + in.Env, nil
	})), tool.Meta{Approval: tool.ApprovalAsk})
	reg, err := tool.NewRegistry(deploy)
	if err != nil {
		t.Fatal(err)
	}
	m := scripted.New("m",
		scripted.Reply{ToolCalls: []scripted.Call{scripted.ToolCall("deploy", `{"env":"prod"}`)}},
		scripted.Reply{Text: "done", Expect: &scripted.Expect{LastToolResultContains: "deployed to prod"}},
	)
	return &agentrt.Agent{Name: "ops", Model: m, Tools: reg}
}

// An approval resolved over the WebSocket, by the key's principal,
// continues the run; the subscription follows it to its end.
func TestWSResolveApproval(t *testing.T) {
	var runs atomic.Int32
	e := newWSEnv(t, server.Config{Keys: []server.Key{{Key: "k1", Tenant: "default", Principal: "ops-team"}}}, wsDeployAgent(t, &runs))
	e.session(t, "", "ops", "s1")
	cl := e.dial(t, "k1")
	cl.send(t, wsMsg{"type": "subscribe", "id": "sub", "session": "s1"})
	cl.await(t, "sub")
	cl.send(t, wsMsg{"type": "input", "session": "s1", "text": "deploy"})
	asked := cl.events(t, "s1", wsOfType(session.TypeInputRequired))
	req := asked[len(asked)-1].event(t).Data.(*session.InputRequired)

	cl.send(t, wsMsg{"type": "resolve", "id": "r1", "session": "s1", "request_id": req.RequestID, "decision": "approve", "reason": "go ahead"})
	res := cl.await(t, "r1")
	if res.Type != "resolved" || res.Session != "s1" || res.Pending != 0 || res.RunID == "" {
		t.Fatalf("resolve: %+v", res)
	}
	if d, ok := res.event(t).Data.(*session.InputResolved); !ok || d.By != "ops-team" || d.Decision != "approve" || d.RequestID != req.RequestID {
		t.Fatalf("the resolution's event: %+v", res.event(t).Data)
	}
	cl.events(t, "s1", wsFinished(session.StatusDone))
	if runs.Load() != 1 {
		t.Errorf("deploy ran %d times, want 1", runs.Load())
	}
	// The request is answered: answering it again says so.
	cl.send(t, wsMsg{"type": "resolve", "id": "r2", "session": "s1", "request_id": req.RequestID, "decision": "approve"})
	if f := cl.await(t, "r2"); f.Type != "error" || f.Code != agentrt.CodeAlreadyResolved || f.Session != "s1" {
		t.Errorf("resolve again: %+v", f)
	}
}

// cancel and interrupt stop a run wherever it is (here, in a model call
// that would not end by itself), recorded with the principal and reason;
// the reply says what they did.
func TestWSControl(t *testing.T) {
	for _, tc := range []struct {
		typ  string
		want session.Status
	}{
		{"cancel", session.StatusCanceled},
		{"interrupt", session.StatusInterrupted},
	} {
		t.Run(tc.typ, func(t *testing.T) {
			e := newWSEnv(t, server.Config{}, wsTextAgent("a", scripted.Reply{Text: "never", Delay: time.Hour}))
			e.session(t, "", "a", "s1")
			cl := e.dial(t, "")
			cl.send(t, wsMsg{"type": "subscribe", "id": "sub", "session": "s1"})
			cl.await(t, "sub")
			cl.send(t, wsMsg{"type": "input", "session": "s1", "text": "go"})
			cl.events(t, "s1", wsOfType(session.TypeModelStarted))

			cl.send(t, wsMsg{"type": tc.typ, "id": "c1", "session": "s1", "reason": "stop it"})
			f := cl.await(t, "c1")
			if f.Type != "controlled" || f.Session != "s1" || !f.Acted || f.Status != string(tc.want) ||
				f.Control == nil || string(f.Control.Kind) != tc.typ || f.Control.Reason != "stop it" || f.Control.By != "local" {
				t.Fatalf("%s: %+v (control %+v)", tc.typ, f, f.Control)
			}
			cl.events(t, "s1", wsFinished(tc.want))
		})
	}
}

// A client that goes away leaves its run running: the run ends done.
func TestWSCloseKeepsTheRun(t *testing.T) {
	g := newWSGate()
	e := newWSEnv(t, server.Config{}, wsGatedAgent(t, g, scripted.Reply{Text: "finished anyway"}))
	e.session(t, "", "gated", "s1")
	cl := e.dial(t, "")
	cl.send(t, wsMsg{"type": "subscribe", "id": "sub", "session": "s1"})
	cl.await(t, "sub")
	cl.send(t, wsMsg{"type": "input", "session": "s1", "text": "go"})
	cl.events(t, "s1", wsOfType(session.TypeToolCall))
	if err := cl.c.Close(websocket.StatusNormalClosure, "bye"); err != nil {
		t.Fatal(err)
	}
	close(g.release)
	for ev, err := range e.r.Watch(context.Background(), "s1", 0) {
		if err != nil {
			t.Fatal(err)
		}
		if rf, ok := ev.Data.(*session.RunFinished); ok {
			if rf.Status != session.StatusDone {
				t.Fatalf("the run ended %s after its client left, want done", rf.Status)
			}
			break
		}
	}
}

// A key reaches its own tenant's sessions only: another tenant's session
// is not_found for every frame, as over HTTP.
func TestWSOtherTenant(t *testing.T) {
	e := newWSEnv(t, server.Config{Keys: []server.Key{{Key: "ka", Tenant: "ta"}, {Key: "kb", Tenant: "tb"}}},
		wsTextAgent("a", scripted.Reply{Text: "hi"}))
	e.session(t, "tb", "a", "theirs")
	cl := e.dial(t, "ka")
	for _, f := range []wsMsg{
		{"type": "input", "id": "x", "session": "theirs", "text": "hi"},
		{"type": "subscribe", "id": "x", "session": "theirs"},
		{"type": "resolve", "id": "x", "session": "theirs", "request_id": "req_1", "decision": "approve"},
		{"type": "cancel", "id": "x", "session": "theirs"},
		{"type": "interrupt", "id": "x", "session": "theirs"},
	} {
		cl.send(t, f)
		if got := cl.await(t, "x"); got.Type != "error" || got.Code != agentrt.CodeNotFound || got.Session != "theirs" {
			t.Errorf("%s of another tenant's session: %+v", f["type"], got)
		}
	}
	owner := e.dial(t, "kb")
	owner.send(t, wsMsg{"type": "subscribe", "id": "x", "session": "theirs"})
	if got := owner.await(t, "x"); got.Type != "subscribed" {
		t.Errorf("subscribe of its own tenant's session: %+v", got)
	}
}

// Every kind of bad frame gets an error frame with the catalog's code
// (and the frame's id when it could be read), and the connection goes on.
func TestWSBadFrames(t *testing.T) {
	e := newWSEnv(t, server.Config{Limits: server.Limits{MaxBodyBytes: 4096, MaxJSONDepth: 4}},
		wsTextAgent("a", scripted.Reply{Text: "hi"}))
	e.session(t, "", "a", "s1")
	cl := e.dial(t, "")
	cl.send(t, wsMsg{"type": "subscribe", "id": "sub", "session": "s1"})
	cl.await(t, "sub")
	for _, tc := range []struct {
		name, frame, id, code string
	}{
		{"not JSON", `{"type":`, "", agentrt.CodeMalformedRequest},
		{"not an object", `[1,2]`, "", agentrt.CodeMalformedRequest},
		{"a string id as a number", `{"type":"input","id":7}`, "", agentrt.CodeMalformedRequest},
		{"no type", `{"id":"x","session":"s1"}`, "x", agentrt.CodeMalformedRequest},
		{"unknown type", `{"type":"launch","id":"x"}`, "x", agentrt.CodeMalformedRequest},
		{"no session", `{"type":"input","id":"x","text":"hi"}`, "x", agentrt.CodeMalformedRequest},
		{"unknown field", `{"type":"input","id":"x","session":"s1","text":"hi","urgent":true}`, "x", agentrt.CodeMalformedRequest},
		{"field of the wrong type", `{"type":"input","id":"x","session":"s1","text":5}`, "x", agentrt.CodeMalformedRequest},
		{"two values", `{"type":"input","id":"x","session":"s1","text":"hi"} {}`, "", agentrt.CodeMalformedRequest},
		{"nested too deep", `{"type":"input","id":"x","session":"s1","text":"hi","metadata":{"a":[[[[1]]]]}}`, "x", agentrt.CodeMalformedRequest},
		{"too large", `{"type":"input","id":"x","session":"s1","text":"` + strings.Repeat("a", 5000) + `"}`, "", agentrt.CodeBodyTooLarge},
		{"empty input", `{"type":"input","id":"x","session":"s1"}`, "x", agentrt.CodeEmptyInput},
		{"bad session id", `{"type":"input","id":"x","session":"no spaces","text":"hi"}`, "x", agentrt.CodeNotFound},
		{"negative after", `{"type":"subscribe","id":"x","session":"s1","after":-1}`, "x", agentrt.CodeMalformedRequest},
		{"subscribed already", `{"type":"subscribe","id":"x","session":"s1"}`, "x", agentrt.CodeMalformedRequest},
		{"unsubscribe what is not followed", `{"type":"unsubscribe","id":"x","session":"nope"}`, "x", agentrt.CodeMalformedRequest},
		{"resolve without request_id", `{"type":"resolve","id":"x","session":"s1","decision":"approve"}`, "x", agentrt.CodeMalformedRequest},
		{"resolve what is not pending", `{"type":"resolve","id":"x","session":"s1","request_id":"req_9","decision":"approve"}`, "x", agentrt.CodeUnknownRequest},
		{"cancel with nothing running", `{"type":"cancel","id":"x","session":"s1"}`, "x", agentrt.CodeNotRunning},
	} {
		cl.sendRaw(t, tc.frame)
		f := cl.next(t)
		if f.Type != "error" || f.Code != tc.code || f.ID != tc.id || f.Message == "" {
			t.Errorf("%s: got %+v, want an error %s with id %q", tc.name, f, tc.code, tc.id)
		}
	}
	// The connection is still open and the subscription still works.
	cl.send(t, wsMsg{"type": "unsubscribe", "id": "u", "session": "s1"})
	if f := cl.await(t, "u"); f.Type != "unsubscribed" || f.Session != "s1" {
		t.Errorf("unsubscribe after the bad frames: %+v", f)
	}
}

// hangingStore is a memstore whose session "slow" is found once, after
// which reading it waits for the caller's context.
type hangingStore struct {
	*memstore.Store
	reads atomic.Int32
}

func (s *hangingStore) GetSession(ctx context.Context, id string) (*session.Session, error) {
	if id == "slow" && s.reads.Add(1) > 1 {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return s.Store.GetSession(ctx, id)
}

// A subscription whose watch does not start within the request timeout
// is refused with request_timeout, and the connection goes on.
func TestWSSubscribeTimeout(t *testing.T) {
	hs := &hangingStore{}
	e := newWSEnvWith(t, wsSetup{store: func(m *memstore.Store) session.Store { hs.Store = m; return hs }},
		server.Config{Limits: server.Limits{RequestTimeout: 20 * time.Millisecond}}, wsTextAgent("a"))
	e.session(t, "", "a", "slow")
	cl := e.dial(t, "")
	cl.send(t, wsMsg{"type": "subscribe", "id": "s", "session": "slow"})
	if f := cl.await(t, "s"); f.Type != "error" || f.Code != agentrt.CodeRequestTimeout || f.Session != "slow" {
		t.Fatalf("subscribe of a session the store does not answer for: %+v", f)
	}
	cl.send(t, wsMsg{"type": "unsubscribe", "id": "u", "session": "slow"})
	if f := cl.await(t, "u"); f.Type != "error" || f.Code != agentrt.CodeMalformedRequest {
		t.Errorf("the subscription that timed out is still there: %+v", f)
	}
}

// A frame that is not text ends the connection with 1003; a text frame
// that is not UTF-8 with 1007 (RFC 6455 §8.1); one far over the size
// limit with 1009.
func TestWSClosingFrames(t *testing.T) {
	e := newWSEnv(t, server.Config{Limits: server.Limits{MaxBodyBytes: 1024}})
	for _, tc := range []struct {
		name    string
		typ     websocket.MessageType
		payload string
		want    websocket.StatusCode
	}{
		{"binary", websocket.MessageBinary, strings.Repeat("{", 10), websocket.StatusUnsupportedData},
		{"far too large", websocket.MessageText, strings.Repeat("{", 64<<10), websocket.StatusMessageTooBig},
		{"invalid UTF-8", websocket.MessageText, `{"type":"input","id":"1","session":"s","text":"caf` + "\xe9" + `"}`, websocket.StatusInvalidFramePayloadData},
		{"truncated UTF-8", websocket.MessageText, `{"type":"subscribe","id":"1","session":"` + "\xe2\x82" + `"}`, websocket.StatusInvalidFramePayloadData},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cl := e.dial(t, "")
			// The write may fail once the server has closed; the close
			// status is what counts.
			_ = cl.c.Write(context.Background(), tc.typ, []byte(tc.payload))
			select {
			case <-cl.done:
			case f := <-cl.frames:
				t.Fatalf("the server answered %+v, want the connection closed with %v", f, tc.want)
			case <-time.After(10 * time.Second):
				t.Fatalf("the connection is still open, want it closed with %v", tc.want)
			}
			if got := websocket.CloseStatus(cl.err); got != tc.want {
				t.Errorf("closed with %v (%v), want %v", got, cl.err, tc.want)
			}
		})
	}
}

// GET /v1/ws is authenticated like every route, before the upgrade; its
// origin is the server's own or one of CORS's; every frame counts against
// the key's rate.
func TestWSHandshake(t *testing.T) {
	day := time.Date(2026, 5, 1, 9, 0, 0, 0, time.UTC)
	e := newWSEnv(t, server.Config{
		Keys: []server.Key{{Key: "k1", Tenant: "default"}, {Key: "slow", Tenant: "default", Rate: 1, Burst: 2}},
		CORS: server.CORS{Origins: []string{"https://app.example.com"}},
		Now:  func() time.Time { return day }, // the rate's tokens never come back
	})
	host := strings.TrimPrefix(e.ts.URL, "http://")
	for _, tc := range []struct {
		name, key, origin string
		status            int
		code              string
	}{
		{"no key", "", "", http.StatusUnauthorized, agentrt.CodeUnauthorized},
		{"unknown key", "nope", "", http.StatusUnauthorized, agentrt.CodeUnauthorized},
		{"another site's page", "k1", "https://evil.example.com", http.StatusForbidden, agentrt.CodeOriginNotAllowed},
		{"a look-alike of an allowed origin", "k1", "http://app.example.com", http.StatusForbidden, agentrt.CodeOriginNotAllowed},
		{"the server's own page", "k1", "http://" + host, http.StatusSwitchingProtocols, ""},
		{"an allowed origin", "k1", "https://app.example.com", http.StatusSwitchingProtocols, ""},
		{"no origin (not a browser)", "k1", "", http.StatusSwitchingProtocols, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := wsDialOptions(tc.key)
			if tc.origin != "" {
				opts.HTTPHeader.Set("Origin", tc.origin)
			}
			c, resp, err := websocket.Dial(context.Background(), e.url, opts)
			if resp == nil || resp.StatusCode != tc.status {
				t.Fatalf("dial: %v (%s), want status %d", err, wsRespBody(resp), tc.status)
			}
			if c != nil {
				_ = c.CloseNow()
				return
			}
			var body server.ErrorBody
			if err := json.NewDecoder(resp.Body).Decode(&body); err != nil || body.Error.Code != tc.code {
				t.Errorf("body %+v (%v), want code %s", body, err, tc.code)
			}
		})
	}

	t.Run("not a handshake", func(t *testing.T) {
		req, _ := http.NewRequest(http.MethodGet, e.ts.URL+"/v1/ws", nil)
		req.Header.Set("Authorization", "Bearer k1")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var body server.ErrorBody
		_ = json.NewDecoder(resp.Body).Decode(&body)
		if resp.StatusCode != http.StatusBadRequest || body.Error.Code != agentrt.CodeMalformedRequest {
			t.Errorf("plain GET: %d %+v", resp.StatusCode, body)
		}
	})

	t.Run("rate", func(t *testing.T) {
		// A burst of two: the handshake and one frame.
		cl := e.dial(t, "slow")
		cl.send(t, wsMsg{"type": "unsubscribe", "id": "one", "session": "s1"})
		if f := cl.await(t, "one"); f.Code != agentrt.CodeMalformedRequest {
			t.Fatalf("first frame: %+v", f)
		}
		cl.send(t, wsMsg{"type": "unsubscribe", "id": "two", "session": "s1"})
		if f := cl.await(t, "two"); f.Type != "error" || f.Code != agentrt.CodeTooManyRequests {
			t.Errorf("second frame over the rate: %+v", f)
		}
	})
}

// The server pings every Heartbeat: a client that answers stays
// connected, one that does not is dropped. The pong may take up to
// WriteTimeout: generous, so that a loaded machine (CI under -race) does
// not drop the client that answers, which would leave the test waiting
// for pings that never come.
func TestWSPing(t *testing.T) {
	e := newWSEnv(t, server.Config{Heartbeat: 5 * time.Millisecond, WriteTimeout: 3 * time.Second})

	t.Run("answered", func(t *testing.T) {
		pings := make(chan struct{}, 16)
		opts := wsDialOptions("")
		opts.OnPingReceived = func(context.Context, []byte) bool {
			select {
			case pings <- struct{}{}:
			default:
			}
			return true
		}
		c, resp, err := websocket.Dial(context.Background(), e.url, opts)
		if err != nil {
			t.Fatalf("dial: %v (%s)", err, wsRespBody(resp))
		}
		cl := wsStartReading(t, c)
		for range 3 {
			<-pings
		}
		cl.send(t, wsMsg{"type": "unsubscribe", "id": "u", "session": "s1"})
		if f := cl.await(t, "u"); f.Type != "error" {
			t.Errorf("after three pings: %+v", f)
		}
	})

	t.Run("unanswered", func(t *testing.T) {
		// A client that never reads what the server sends, so never
		// answers its ping.
		conn, err := net.Dial("tcp", strings.TrimPrefix(e.ts.URL, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		fmt.Fprintf(conn, "GET /v1/ws HTTP/1.1\r\nHost: %s\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n"+
			"Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n", conn.RemoteAddr())
		br := bufio.NewReader(conn)
		resp, err := http.ReadResponse(br, nil)
		if err != nil || resp.StatusCode != http.StatusSwitchingProtocols {
			t.Fatalf("handshake: %v %v", resp, err)
		}
		// Everything the server sends until it closes the connection.
		b, err := io.ReadAll(br)
		if err != nil && !errors.Is(err, net.ErrClosed) && !strings.Contains(err.Error(), "reset") {
			t.Fatal(err)
		}
		if len(b) < 2 || b[0] != 0x89 {
			t.Fatalf("the server sent % x before it closed, want a ping (0x89) first", b)
		}
	})
}

// Shutdown tells each subscription where to resume, closes the
// connection with 1001 and waits for it.
func TestWSShutdown(t *testing.T) {
	e := newWSEnv(t, server.Config{}, wsTextAgent("a", scripted.Reply{Text: "hi"}))
	e.session(t, "", "a", "s1")
	cl := e.dial(t, "")
	cl.send(t, wsMsg{"type": "subscribe", "id": "sub", "session": "s1"})
	cl.await(t, "sub")
	cl.send(t, wsMsg{"type": "input", "session": "s1", "text": "hi"})
	frames := cl.events(t, "s1", wsFinished(session.StatusDone))
	last := frames[len(frames)-1].event(t).Seq
	if n := e.srv.Clients(); n != 1 {
		t.Errorf("Clients() = %d, want 1", n)
	}

	done := make(chan error, 1)
	go func() { done <- e.srv.Shutdown(context.Background()) }()
	f := cl.next(t)
	for f.Type == "accepted" {
		f = cl.next(t)
	}
	if f.Type != "reconnect" || f.ID != "sub" || f.Session != "s1" || f.LastEventID != last {
		t.Errorf("on shutdown: %+v, want reconnect after %d", f, last)
	}
	<-cl.done
	if got := websocket.CloseStatus(cl.err); got != websocket.StatusGoingAway {
		t.Errorf("closed with %v (%v), want going away", got, cl.err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n := e.srv.Clients(); n != 0 {
		t.Errorf("Clients() = %d after Shutdown, want 0", n)
	}
	if _, resp, err := websocket.Dial(context.Background(), e.url, wsDialOptions("")); err == nil || resp == nil || resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("dial after Shutdown: %v (%s), want 503", err, wsRespBody(resp))
	}
}

// wsSmallSendBuffers gives the connections it accepts a small send buffer.
type wsSmallSendBuffers struct{ net.Listener }

func (l wsSmallSendBuffers) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetWriteBuffer(16 << 10)
	}
	return c, err
}

// A client that stops reading is dropped once a write to it takes longer
// than WriteTimeout, and loses nothing: subscribing again after the last
// event it got, on any replica, it gets the rest with no gap and no
// duplicate.
func TestWSStalledClient(t *testing.T) {
	// Small socket buffers on both ends, so that the server's writes to a
	// client that does not read block after a few events.
	e := newWSEnvWith(t, wsSetup{listener: func(l net.Listener) net.Listener { return wsSmallSendBuffers{l} }},
		server.Config{ClientBuffer: 4, WriteTimeout: 50 * time.Millisecond}, wsTextAgent("a"))
	e.session(t, "", "a", "s1")
	ctx := context.Background()
	const n, size = 48, 16 << 10
	evs := make([]*session.Event, n)
	for i := range evs {
		evs[i] = &session.Event{V: 1, Seq: int64(i + 1), SessionID: "s1", Type: session.TypeModelFinished, Time: time.Now().UTC(),
			Data: &session.ModelFinished{Content: strings.Repeat("x", size)}}
	}
	if err := e.store.Commit(ctx, &session.Commit{SessionID: "s1", Events: evs, Status: session.StatusIdle, Time: time.Now()}); err != nil {
		t.Fatal(err)
	}

	opts := wsDialOptions("")
	var tcp *net.TCPConn
	opts.HTTPClient = &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		if err == nil {
			tcp = c.(*net.TCPConn)
			_ = tcp.SetReadBuffer(16 << 10)
		}
		return c, err
	}}}
	c, resp, err := websocket.Dial(ctx, e.url, opts)
	if err != nil {
		t.Fatalf("dial: %v (%s)", err, wsRespBody(resp))
	}
	defer c.CloseNow()
	if err := c.Write(ctx, websocket.MessageText, []byte(`{"type":"subscribe","id":"sub","session":"s1"}`)); err != nil {
		t.Fatal(err)
	}
	for m := range e.logs.msgs {
		if strings.Contains(m, "websocket client dropped") {
			break
		}
	}
	// What reached the client before the server gave up on it.
	_ = tcp.SetReadBuffer(1 << 20)
	cl := wsStartReading(t, c)
	if f := cl.next(t); f.Type != "subscribed" {
		t.Fatalf("first frame %+v", f)
	}
	var got []int64
	for {
		select {
		case f := <-cl.frames:
			if f.Type == "reconnect" && len(got) > 0 && f.LastEventID == got[len(got)-1] {
				// The subscription fell behind first (its buffer stayed
				// full for WriteTimeout) and said where to go on from, which
				// a loaded machine may deliver before the drop: as good.
				continue
			}
			if f.Type != "event" {
				t.Fatalf("after %d events: %+v", len(got), f)
			}
			got = append(got, f.event(t).Seq)
			continue
		case <-cl.done:
		}
		if len(cl.frames) == 0 {
			break
		}
	}
	if len(got) >= n {
		t.Fatalf("the client got all %d events: it never stalled the server", len(got))
	}

	// Another server on the same runner, with the default write timeout:
	// the client subscribes again there after the last event it got.
	e2, err := server.New(server.Config{Runner: e.r, Gateway: e.gw, Log: slog.New(e.logs)})
	if err != nil {
		t.Fatal(err)
	}
	ts2 := httptest.NewServer(e2.Handler())
	t.Cleanup(func() {
		_ = e2.Shutdown(ctx)
		ts2.Close()
	})
	c2, resp, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(ts2.URL, "http")+"/v1/ws", wsDialOptions(""))
	if err != nil {
		t.Fatalf("dial: %v (%s)", err, wsRespBody(resp))
	}
	cl2 := wsStartReading(t, c2)
	cl2.send(t, wsMsg{"type": "subscribe", "id": "again", "session": "s1", "after": int64(len(got))})
	cl2.await(t, "again")
	for len(got) < n {
		f := cl2.next(t)
		if f.Type != "event" {
			t.Fatalf("resubscribed, after %d events: %+v", len(got), f)
		}
		got = append(got, f.event(t).Seq)
	}
	if diff := cmp.Diff(wsSpan(1, n), got); diff != "" {
		t.Errorf("seqs across the reconnect (-want +got):\n%s", diff)
	}
}

// upgrade opens a WebSocket on path with the main key, for the OpenAPI
// conformance test, and records the answer in its coverage.
func (c *apiClient) upgrade(t *testing.T, path string) {
	t.Helper()
	ws, resp, err := websocket.Dial(t.Context(), "ws"+strings.TrimPrefix(c.base, "http")+path,
		&websocket.DialOptions{HTTPClient: c.hc, HTTPHeader: http.Header{"Authorization": {"Bearer " + mainKey}}})
	if err != nil {
		t.Fatalf("GET %s: %v (%s)", path, err, wsRespBody(resp))
	}
	c.seen.add("GET "+path, resp.StatusCode)
	if err := ws.Close(websocket.StatusNormalClosure, ""); err != nil {
		t.Errorf("close: %v", err)
	}
}
