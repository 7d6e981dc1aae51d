package agentrt_test

import (
	"context"
	"errors"
	"iter"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/internal/pgtest"
	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/model/scripted"
	"github.com/agentrt/agentrt/session"
	"github.com/agentrt/agentrt/session/postgres"
)

// echoModel streams back the words of the last user message, one chunk
// each. While hold is set, it then waits for a value on release before
// it ends its reply: a test lets it go once a watcher elsewhere has shown
// the tokens, rather than race the relay with the commit that follows.
type echoModel struct {
	hold    atomic.Bool
	release chan struct{}
}

func newEchoModel() *echoModel { return &echoModel{release: make(chan struct{}, 8)} }

func (*echoModel) Name() string { return "echo" }

func (m *echoModel) Stream(ctx context.Context, req *model.Request) iter.Seq2[model.Chunk, error] {
	return func(yield func(model.Chunk, error) bool) {
		var text string
		for _, msg := range slices.Backward(req.Messages) {
			if msg.Role == model.RoleUser && len(msg.Parts) > 0 {
				text = msg.Parts[0].Text
				break
			}
		}
		for w := range strings.FieldsSeq(text) {
			if !yield(model.Chunk{Text: w + " "}, nil) {
				return
			}
		}
		if m.hold.Load() {
			select {
			case <-m.release:
			case <-time.After(holdGuard):
				yield(model.Chunk{}, errors.New("no watcher let the reply end: the relay did not bring it the tokens"))
				return
			case <-ctx.Done():
				yield(model.Chunk{}, ctx.Err())
				return
			}
		}
		yield(model.Chunk{FinishReason: model.FinishStop}, nil)
	}
}

// holdGuard is how long a held reply waits before it fails the test
// rather than hang it.
const holdGuard = 30 * time.Second

// stagedModel plays its replies in order: each streams its chunks, then
// waits for a value on release before its last chunk if it holds.
type stagedModel struct {
	mu      sync.Mutex
	replies []stagedReply // guarded by mu
	release chan struct{}
}

type stagedReply struct {
	chunks []model.Chunk // the last ends the reply
	hold   bool
}

func (*stagedModel) Name() string { return "staged" }

func (m *stagedModel) Stream(ctx context.Context, req *model.Request) iter.Seq2[model.Chunk, error] {
	return func(yield func(model.Chunk, error) bool) {
		m.mu.Lock()
		if len(m.replies) == 0 {
			m.mu.Unlock()
			yield(model.Chunk{}, errors.New("staged: no reply left"))
			return
		}
		r := m.replies[0]
		m.replies = m.replies[1:]
		m.mu.Unlock()
		last := len(r.chunks) - 1
		for _, c := range r.chunks[:last] {
			if !yield(c, nil) {
				return
			}
		}
		if r.hold {
			select {
			case <-m.release:
			case <-time.After(holdGuard):
				yield(model.Chunk{}, errors.New("no watcher let the reply end: the relay did not bring it the tokens"))
				return
			case <-ctx.Done():
				yield(model.Chunk{}, ctx.Err())
				return
			}
		}
		yield(r.chunks[last], nil)
	}
}

func textChunks(parts ...string) []model.Chunk {
	var out []model.Chunk
	for _, p := range parts {
		out = append(out, model.Chunk{Text: p})
	}
	return out
}

// process is a runner on a store of its own: another process, as far as
// the relay is concerned.
func process(t *testing.T, dsn, owner string, cfg agentrt.Config, agents ...*agentrt.Agent) *agentrt.Runner {
	t.Helper()
	st, err := postgres.Open(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Store, cfg.Agents, cfg.Owner = st, agents, owner
	r, err := agentrt.NewRunner(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		r.Close(context.Background())
		st.Close()
	})
	return r
}

// shown is an event as a watcher shows it: committed ones by type and
// seq, tokens by text.
func shown(e *session.Event) string {
	switch d := e.Data.(type) {
	case *session.Token:
		return "token " + d.Text
	case *session.ToolCallDelta:
		return "tool_call_delta " + d.Name + d.Arguments
	}
	return string(e.Type) + " " + strconv.FormatInt(e.Seq, 10)
}

// watchTurn watches session id (in ctx's tenant) on r from seq 0, and
// returns a channel closed once the watcher has shown the log up to seq
// from (it is subscribed then), and one that gets what it shows after
// from, up to the next run_finished. live, if not nil, is called with
// the number of live events shown so far after from, at each.
func watchTurn(t *testing.T, ctx context.Context, r *agentrt.Runner, id string, from int64, live func(n int)) (<-chan struct{}, <-chan []string) {
	ready, seen := make(chan struct{}), make(chan []string, 1)
	go func() {
		var evs []string
		pos, n := int64(0), 0
		for e, err := range r.Watch(ctx, id, 0) {
			if err != nil {
				t.Error(err)
				break
			}
			if e.Seq != 0 {
				pos = e.Seq
			}
			if pos <= from {
				if pos == from {
					close(ready)
				}
				continue
			}
			evs = append(evs, shown(e))
			if e.Seq == 0 && live != nil {
				n++
				live(n)
			}
			if e.Type == session.TypeRunFinished {
				break
			}
		}
		seen <- evs
	}()
	return ready, seen
}

// runTurn runs a turn on r and returns what its caller saw, after seq
// from, as a watcher shows it.
func runTurn(t *testing.T, ctx context.Context, r *agentrt.Runner, id, text string) []string {
	t.Helper()
	var out []string
	for e, err := range r.Run(ctx, id, agentrt.Input{Text: text}) {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, shown(e))
	}
	return out
}

// Two processes on one Postgres: a watcher in B sees the tokens of A's
// run, each where A's caller sees it — after the committed event it
// follows, before the next — through a turn with a tool call (tokens,
// tool-call deltas, a second model call). Each model call holds its
// reply's end until B has shown its live events: what is tested is
// where they land, not who wins between B's read of the commit that
// follows them and the relay (TestRelayPublishesWatchedSessions tests
// that A publishes them before that commit).
func TestRelayTokensAcrossProcesses(t *testing.T) {
	dsn, _ := pgtest.Schema(t)
	call := func(id, name string, args ...string) []model.Chunk {
		var out []model.Chunk
		for i, a := range args {
			d := model.ToolCallDelta{Index: 0, Arguments: a}
			if i == 0 {
				d.ID, d.Name = id, name
			}
			out = append(out, model.Chunk{ToolCalls: []model.ToolCallDelta{d}})
		}
		return out
	}
	m := &stagedModel{release: make(chan struct{}, 2), replies: []stagedReply{
		{chunks: append(textChunks("warming ", "up"), model.Chunk{FinishReason: model.FinishStop})},
		{chunks: append(append(textChunks("let ", "me co", "mpute"), call("c1", "calculator", `{"expr`, `ession"`, `:"2*3"}`)...),
			model.Chunk{FinishReason: model.FinishToolCalls}), hold: true},
		{chunks: append(textChunks("the ", "answer ", "is ", "six"), model.Chunk{FinishReason: model.FinishStop}), hold: true},
	}}
	a := process(t, dsn, "process-a", agentrt.Config{}, calcAgent(m, registry(t)))
	b := process(t, dsn, "process-b", agentrt.Config{}, calcAgent(scripted.New("unused"), nil))
	ctx := t.Context()
	s, err := a.CreateSession(ctx, "calc", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	warm := runTurn(t, ctx, a, s.ID, "warm up")
	ready, seen := watchTurn(t, ctx, b, s.ID, int64(len(warm)-2), func(n int) { // the warm turn's events, less its two tokens
		if n == 6 || n == 10 { // the first call's 3 tokens and 3 deltas; the second's 4 tokens
			m.release <- struct{}{}
		}
	})
	<-ready
	want := runTurn(t, ctx, a, s.ID, "2*3?")
	got := <-seen
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("B's watcher (-A's caller +B's watcher):\n%s", diff)
	}
	if n := len(slices.DeleteFunc(slices.Clone(got), func(s string) bool { return !strings.HasPrefix(s, "token ") })); n != 7 {
		t.Errorf("%d tokens relayed, want 7", n)
	}
}

// Tokens go to the session they belong to: the same id in another tenant
// is another session, and its watchers never see them.
func TestRelayKeepsTenantsApart(t *testing.T) {
	dsn, _ := pgtest.Schema(t)
	m := newEchoModel()
	a := process(t, dsn, "process-a", agentrt.Config{}, &agentrt.Agent{Name: "echo", Model: m})
	b := process(t, dsn, "process-b", agentrt.Config{}, &agentrt.Agent{Name: "echo", Model: newEchoModel()})
	acme, beta := session.WithTenant(t.Context(), "acme"), session.WithTenant(t.Context(), "beta")
	for _, ctx := range []context.Context{acme, beta} {
		if _, err := a.CreateSession(ctx, "echo", "shared-id", nil); err != nil {
			t.Fatal(err)
		}
		runTurn(t, ctx, a, "shared-id", "first") // 6 events
	}
	release := func(n int) {
		if n == 3 { // each turn streams three words: let it end
			m.release <- struct{}{}
		}
	}
	readyA, seenAcme := watchTurn(t, acme, b, "shared-id", 6, release)
	readyB, seenBeta := watchTurn(t, beta, b, "shared-id", 6, release)
	<-readyA
	<-readyB
	m.hold.Store(true)
	wantBeta := runTurn(t, beta, a, "shared-id", "beta words only")
	wantAcme := runTurn(t, acme, a, "shared-id", "acme words only")
	if diff := cmp.Diff(wantBeta, <-seenBeta); diff != "" {
		t.Errorf("beta's watcher (-beta's caller +watcher):\n%s", diff)
	}
	// acme's watcher was there while beta's run streamed: had its tokens
	// leaked, they would be among what it showed.
	if diff := cmp.Diff(wantAcme, <-seenAcme); diff != "" {
		t.Errorf("acme's watcher (-acme's caller +watcher):\n%s", diff)
	}
}

// Relaying off, in the process that runs or in the one that watches: the
// watcher sees the committed events only.
func TestRelayOffShowsCommitsOnly(t *testing.T) {
	for _, tc := range []struct {
		name       string
		aOff, bOff bool
	}{{"off where the run is", true, false}, {"off where the watcher is", false, true}} {
		t.Run(tc.name, func(t *testing.T) {
			dsn, _ := pgtest.Schema(t)
			a := process(t, dsn, "process-a", agentrt.Config{NoRelay: tc.aOff}, &agentrt.Agent{Name: "echo", Model: newEchoModel()})
			b := process(t, dsn, "process-b", agentrt.Config{NoRelay: tc.bOff}, &agentrt.Agent{Name: "echo", Model: newEchoModel()})
			ctx := t.Context()
			if _, err := a.CreateSession(ctx, "echo", "s1", nil); err != nil {
				t.Fatal(err)
			}
			runTurn(t, ctx, a, "s1", "first")
			ready, seen := watchTurn(t, ctx, b, "s1", 6, nil)
			<-ready
			ran := runTurn(t, ctx, a, "s1", "some words here")
			committed := slices.DeleteFunc(slices.Clone(ran), func(s string) bool { return strings.HasPrefix(s, "token ") })
			if len(committed) == len(ran) {
				t.Fatalf("the run streamed no tokens: %v", ran)
			}
			if diff := cmp.Diff(committed, <-seen); diff != "" {
				t.Errorf("B's watcher (-committed +watcher):\n%s", diff)
			}
		})
	}
}

// gatedRelay is a Postgres store whose subscriptions are handed the live
// events of other processes late: once armed, not before a Sync call —
// as when the relay's notification is handled after the log was read.
type gatedRelay struct {
	*postgres.Store
	mu    sync.Mutex
	armed bool          // guarded by mu
	open  chan struct{} // closed by the first Sync once armed
	once  sync.Once
}

func (s *gatedRelay) arm() {
	s.mu.Lock()
	s.armed = true
	s.mu.Unlock()
}

func (s *gatedRelay) release() { s.once.Do(func() { close(s.open) }) }

func (s *gatedRelay) Subscribe(ctx context.Context, deliver func([]session.Relayed)) (func(), error) {
	return s.Store.Subscribe(ctx, func(msgs []session.Relayed) {
		s.mu.Lock()
		armed := s.armed
		s.mu.Unlock()
		if armed && slices.ContainsFunc(msgs, func(m session.Relayed) bool { return m.Kind == session.RelayLive }) {
			<-s.open
		}
		deliver(msgs)
	})
}

func (s *gatedRelay) Sync(ctx context.Context) error {
	s.mu.Lock()
	if s.armed {
		s.release()
	}
	s.mu.Unlock()
	return s.Store.Sync(ctx)
}

// A watcher that reads from the log the commit ending a model call of a
// run elsewhere before the relay has handed it the call's tokens waits
// for them (Relay.Sync), and shows them first.
func TestRelayWatcherWaitsForTheRelay(t *testing.T) {
	dsn, _ := pgtest.Schema(t)
	a := process(t, dsn, "process-a", agentrt.Config{}, &agentrt.Agent{Name: "echo", Model: newEchoModel()})
	st, err := postgres.Open(t.Context(), dsn, postgres.WithPollInterval(20*time.Millisecond)) // its listener is held up: it polls
	if err != nil {
		t.Fatal(err)
	}
	gated := &gatedRelay{Store: st, open: make(chan struct{})}
	b, err := agentrt.NewRunner(agentrt.Config{Store: gated, Owner: "process-b"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		gated.release() // the listener goes on: the runner and the store can close
		b.Close(context.Background())
		st.Close()
	})
	ctx := t.Context()
	if _, err := a.CreateSession(ctx, "echo", "s1", nil); err != nil {
		t.Fatal(err)
	}
	runTurn(t, ctx, a, "s1", "first")
	ready, seen := watchTurn(t, ctx, b, "s1", 6, nil)
	<-ready
	gated.arm()
	want := runTurn(t, ctx, a, "s1", "late but in place")
	if diff := cmp.Diff(want, <-seen); diff != "" {
		t.Errorf("B's watcher (-A's caller +B's watcher):\n%s", diff)
	}
}
