package server_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"iter"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/gateway"
	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/server"
	"github.com/agentrt/agentrt/session"
	"github.com/agentrt/agentrt/session/memstore"
	"github.com/agentrt/agentrt/tool"
)

// echo is a model for any number of sessions at once: it answers the last
// user message with "echo: " and the message, in tokens of a word each;
// a message "call NAME ARGS" makes it call tool NAME with ARGS first.
type echo struct {
	// hold, when set, is waited for (or the call's ctx) before a reply.
	hold chan struct{}
}

func (m *echo) Name() string { return "echo" }

func (m *echo) Stream(ctx context.Context, req *model.Request) iter.Seq2[model.Chunk, error] {
	return func(yield func(model.Chunk, error) bool) {
		if m.hold != nil {
			select {
			case <-m.hold:
			case <-ctx.Done():
				yield(model.Chunk{}, ctx.Err())
				return
			}
		}
		last := req.Messages[len(req.Messages)-1]
		if last.Role == model.RoleUser {
			if rest, ok := strings.CutPrefix(last.Text(), "call "); ok {
				name, args, _ := strings.Cut(rest, " ")
				yield(model.Chunk{ToolCalls: []model.ToolCallDelta{{Index: 0, ID: "call_1", Name: name, Arguments: args}},
					FinishReason: model.FinishToolCalls}, nil)
				return
			}
		}
		text := "echo: " + last.Text()
		for i, w := range strings.SplitAfter(text, " ") {
			c := model.Chunk{Text: w}
			if i == len(strings.SplitAfter(text, " "))-1 {
				c.FinishReason = model.FinishStop
				c.Usage = &model.Usage{InputTokens: 10, OutputTokens: 5}
			}
			if !yield(c, nil) {
				return
			}
		}
	}
}

// fixture is a server over a runner and a gateway whose loop runs.
type fixture struct {
	r     *agentrt.Runner
	store session.Store
	gw    *gateway.Gateway
	srv   *server.Server
	http  *httptest.Server
	model *echo
	gate  *gateTool
}

type options struct {
	store  session.Store
	keys   []server.Key
	config func(*server.Config)
	owner  string
	hold   bool
	// observer watches the runner's runs (metrics, traces).
	observer agentrt.Observer
	// gateway changes the gateway's configuration.
	gateway func(*gateway.Config)
	// agents are more agents beside the assistant.
	agents []*agentrt.Agent
	// noLoop leaves the gateway's loop off: it would resume, at its
	// start, the runs a test set up as stopped.
	noLoop bool
}

// gateTool waits until released, or its ctx ends.
// namedModels is a set of models by name (agentrt.ModelSet): the models
// a fork may change to.
type namedModels map[string]model.Model

func (ms namedModels) Names() []string { return slices.Sorted(maps.Keys(ms)) }

func (ms namedModels) Model(name string) (model.Model, error) {
	if m, ok := ms[name]; ok {
		return m, nil
	}
	return nil, fmt.Errorf("no model %q", name)
}

// renamed is a model under another name.
type renamed struct {
	model.Model
	name string
}

func (m renamed) Name() string { return m.name }

type gateTool struct {
	started chan struct{}
	release chan struct{}
}

func newFixture(t *testing.T, o options) *fixture {
	t.Helper()
	if o.store == nil {
		o.store = memstore.New()
	}
	f := &fixture{store: o.store, model: &echo{}, gate: &gateTool{started: make(chan struct{}, 16), release: make(chan struct{})}}
	if o.hold {
		f.model.hold = make(chan struct{})
	}
	gate := tool.Must(tool.New("gate", "waits", func(ctx context.Context, in struct{}) (string, error) {
		f.gate.started <- struct{}{}
		select {
		case <-f.gate.release:
			return "passed", nil
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}))
	deploy := tool.Must(tool.New("deploy", "deploys", func(ctx context.Context, in struct {
		Env string `json:"env"`
	}) (string, error) {
		return "deployed to " + in.Env, nil
	}))
	tools, err := tool.NewRegistry(gate, deploy)
	if err != nil {
		t.Fatal(err)
	}
	a := &agentrt.Agent{Name: "assistant", SystemPrompt: "You help.", Model: f.model, Tools: tools,
		Approval: agentrt.ApprovalPolicy{Ask: []string{"deploy"}},
		Models:   namedModels{"echo": f.model, "shout": renamed{f.model, "shout"}}}
	f.r, err = agentrt.NewRunner(agentrt.Config{Store: o.store, Agents: append([]*agentrt.Agent{a}, o.agents...), Owner: o.owner, Observer: o.observer})
	if err != nil {
		t.Fatal(err)
	}
	gc := gateway.Config{Runner: f.r}
	if o.gateway != nil {
		o.gateway(&gc)
	}
	f.gw, err = gateway.New(gc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	if !o.noLoop {
		wg.Go(func() { _ = f.gw.Run(ctx) })
	}
	cfg := server.Config{Runner: f.r, Gateway: f.gw, Keys: o.keys, Heartbeat: time.Hour}
	if o.config != nil {
		o.config(&cfg)
	}
	f.srv, err = server.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	f.http = httptest.NewServer(f.srv.Handler())
	t.Cleanup(func() {
		f.http.CloseClientConnections()
		_ = f.srv.Shutdown(context.Background())
		f.http.Close()
		cancel()
		wg.Wait()
		_ = f.r.Close(context.Background())
	})
	return f
}

// do makes a request with an optional bearer key and JSON body, and
// returns the status and body.
func (f *fixture) do(t *testing.T, method, path, key string, body any, hdr ...string) (int, []byte, http.Header) {
	t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		j, err := json.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(j)
	}
	req, err := http.NewRequest(method, f.http.URL+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json") // hdr may say otherwise
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, out, resp.Header
}

// create makes a session and returns its id.
func (f *fixture) create(t *testing.T, key string) string {
	t.Helper()
	code, body, _ := f.do(t, "POST", "/v1/sessions", key, map[string]any{"agent": "assistant"})
	if code != http.StatusCreated {
		t.Fatalf("create session: %d %s", code, body)
	}
	var s server.SessionInfo
	if err := json.Unmarshal(body, &s); err != nil {
		t.Fatal(err)
	}
	return s.ID
}

// sseEvent is one event of a stream.
type sseEvent struct {
	id   string
	typ  string
	data []byte
	ev   *session.Event
	seq  int64
	ping bool // a heartbeat comment
}

// stream opens an event stream and yields its events (and heartbeat
// comments) until it ends or the caller stops, which closes it.
func (f *fixture) stream(t *testing.T, method, path, key string, body any, hdr ...string) iter.Seq[sseEvent] {
	t.Helper()
	return f.streamCtx(t, context.Background(), method, path, key, body, hdr...)
}

// streamCtx is stream with the request's context.
func (f *fixture) streamCtx(t *testing.T, ctx context.Context, method, path, key string, body any, hdr ...string) iter.Seq[sseEvent] {
	t.Helper()
	var rd io.Reader
	if body != nil {
		j, _ := json.Marshal(body)
		rd = bytes.NewReader(j)
	}
	req, err := http.NewRequestWithContext(ctx, method, f.http.URL+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "text/event-stream")
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		t.Fatalf("%s %s: %d %s %s", method, path, resp.StatusCode, resp.Header.Get("Content-Type"), b)
	}
	return func(yield func(sseEvent) bool) {
		defer resp.Body.Close()
		br := bufio.NewReader(resp.Body)
		var cur sseEvent
		for {
			line, err := br.ReadString('\n')
			if err != nil {
				return
			}
			line = strings.TrimRight(line, "\n")
			switch {
			case line == "":
				if cur.typ == "" && !cur.ping {
					continue
				}
				if cur.data != nil && cur.typ != "reconnect" && cur.typ != "stream_error" {
					var ev session.Event
					if err := json.Unmarshal(cur.data, &ev); err != nil {
						t.Errorf("event %s: %v: %s", cur.typ, err, cur.data)
						return
					}
					cur.ev = &ev
					cur.seq = ev.Seq
				}
				if !yield(cur) {
					return
				}
				cur = sseEvent{}
			case strings.HasPrefix(line, ":"):
				cur.ping = true
			case strings.HasPrefix(line, "id: "):
				cur.id = line[4:]
			case strings.HasPrefix(line, "event: "):
				cur.typ = line[7:]
			case strings.HasPrefix(line, "data: "):
				cur.data = []byte(line[6:])
			}
		}
	}
}

// seqs are the ids of the committed events among evs, checked to equal
// their events' seqs.
func seqs(t *testing.T, evs []sseEvent) []int64 {
	t.Helper()
	var out []int64
	for _, e := range evs {
		if e.ev == nil || e.ev.Seq == 0 {
			if e.id != "" {
				t.Errorf("a live %s event has id %q", e.typ, e.id)
			}
			continue
		}
		if e.id != strconv.FormatInt(e.ev.Seq, 10) {
			t.Errorf("event %s has id %q and seq %d", e.typ, e.id, e.ev.Seq)
		}
		out = append(out, e.ev.Seq)
	}
	return out
}

// waitStatus follows session id's log until its status is want.
func (f *fixture) waitStatus(t *testing.T, id string, want session.Status, tenant ...string) {
	t.Helper()
	base := context.Background()
	if len(tenant) > 0 {
		base = session.WithTenant(base, tenant[0])
	}
	ctx, cancel := context.WithTimeout(base, time.Minute)
	defer cancel()
	for ev, err := range f.r.Watch(ctx, id, 0) {
		if err != nil {
			t.Fatal(err)
		}
		if ev.Type != session.TypeRunFinished {
			continue
		}
		if s, err := f.store.GetSession(ctx, id); err == nil && s.Status == want {
			return
		}
	}
	s, _ := f.store.GetSession(base, id)
	t.Fatalf("session %s: status %v, want %s", id, s, want)
}
