package agentrt_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/model/scripted"
	"github.com/agentrt/agentrt/session"
	"github.com/agentrt/agentrt/session/memstore"
	"github.com/agentrt/agentrt/tool"
	"github.com/agentrt/agentrt/tool/builtin"
)

// fixedClock returns a clock that advances one millisecond per reading.
func fixedClock() func() time.Time {
	var mu sync.Mutex
	t := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	return func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		t = t.Add(time.Millisecond)
		return t
	}
}

func seqIDs() func() string {
	var mu sync.Mutex
	n := 0
	return func() string {
		mu.Lock()
		defer mu.Unlock()
		n++
		return fmt.Sprintf("id%d", n)
	}
}

func registry(t testing.TB, tools ...tool.Tool) *tool.Registry {
	t.Helper()
	r, err := tool.NewRegistry(append([]tool.Tool{builtin.Calculator()}, tools...)...)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

type env struct {
	r     *agentrt.Runner
	store session.Store
}

func newEnv(t testing.TB, store session.Store, cfg agentrt.Config, agents ...*agentrt.Agent) *env {
	t.Helper()
	if store == nil {
		store = memstore.New()
	}
	cfg.Store = store
	cfg.Agents = agents
	if cfg.Now == nil {
		cfg.Now = fixedClock()
	}
	if cfg.NewID == nil {
		cfg.NewID = seqIDs()
	}
	r, err := agentrt.NewRunner(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &env{r: r, store: store}
}

func (e *env) session(t testing.TB, agent string) string {
	t.Helper()
	s, err := e.r.CreateSession(context.Background(), agent, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	return s.ID
}

func (e *env) run(t testing.TB, id, text string) *agentrt.Result {
	t.Helper()
	res, err := agentrt.Collect(e.r.Run(context.Background(), id, agentrt.Input{Text: text}))
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	return res
}

func (e *env) resume(t testing.TB, id string) *agentrt.Result {
	t.Helper()
	res, err := agentrt.Collect(e.r.Resume(context.Background(), id))
	if err != nil {
		t.Fatalf("resume: %v", err)
	}
	return res
}

func types(events []*session.Event) []session.Type {
	out := make([]session.Type, len(events))
	for i, e := range events {
		out[i] = e.Type
	}
	return out
}

// storedLog reads the whole log and checks seq starts at 1 with no gap.
func storedLog(t testing.TB, s session.Store, id string) []*session.Event {
	t.Helper()
	var out []*session.Event
	for e, err := range s.Events(context.Background(), id, 0) {
		if err != nil {
			t.Fatal(err)
		}
		if e.Seq != int64(len(out)+1) {
			t.Fatalf("event %d has seq %d: gap or duplicate", len(out)+1, e.Seq)
		}
		out = append(out, e)
	}
	return out
}

func toolResults(events []*session.Event) []*session.ToolResult {
	var out []*session.ToolResult
	for _, e := range events {
		if d, ok := e.Data.(*session.ToolResult); ok {
			out = append(out, d)
		}
	}
	return out
}

// gate is a tool that waits until released (or its context ends), and
// says when a call has started.
type gate struct {
	started chan string
	release chan struct{}
	ran     atomic.Int32
}

func newGate() *gate { return &gate{started: make(chan string, 16), release: make(chan struct{})} }

func (g *gate) tool() tool.Tool {
	return tool.Must(tool.New("gate", "waits", func(ctx context.Context, in struct {
		N int `json:"n"`
	}) (string, error) {
		g.ran.Add(1)
		g.started <- "started"
		select {
		case <-g.release:
			return "passed", nil
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}))
}

func gateCall() scripted.Reply {
	return scripted.Reply{ToolCalls: []scripted.Call{scripted.ToolCall("gate", `{"n":1}`)}}
}

func errCode(err error) string {
	var re *agentrt.Error
	if errors.As(err, &re) {
		return re.ErrorCode()
	}
	return ""
}

// wait waits for ch with a guard against a hang.
func wait[T any](t *testing.T, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(30 * time.Second):
		t.Fatal("timed out")
	}
	var zero T
	return zero
}

// plainStore hides the optional capabilities of a store.
type plainStore struct{ session.Store }
