package agentrt

import (
	"context"
	"iter"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/session"
	"github.com/agentrt/agentrt/session/memstore"
	"github.com/agentrt/agentrt/session/storetest"
)

// parrot streams back the words of the last user message, one chunk each.
type parrot struct{}

func (parrot) Name() string { return "parrot" }

func (parrot) Stream(ctx context.Context, req *model.Request) iter.Seq2[model.Chunk, error] {
	return func(yield func(model.Chunk, error) bool) {
		var text string
		for _, m := range slices.Backward(req.Messages) {
			if m.Role == model.RoleUser && len(m.Parts) > 0 {
				text = m.Parts[0].Text
				break
			}
		}
		for w := range strings.FieldsSeq(text) {
			if !yield(model.Chunk{Text: w + " "}, nil) {
				return
			}
		}
		yield(model.Chunk{FinishReason: model.FinishStop}, nil)
	}
}

// bus is a session.Relay between the stores of one test, each a process:
// Publish hands the messages at once to every other store's subscribers,
// and tells the test what went, and in what order with the commits.
type bus struct {
	mu   sync.Mutex
	subs map[*busStore][]*func([]session.Relayed) // guarded by mu
	log  []string                                 // guarded by mu: "publish: …" and "commit: …", in order
	sent chan []session.Relayed                   // each Publish, once delivered
}

func newBus() *bus {
	return &bus{subs: make(map[*busStore][]*func([]session.Relayed)), sent: make(chan []session.Relayed, 256)}
}

// busStore is one process's store: the shared memstore and the bus.
// Subscribe waits for gate, if not nil.
type busStore struct {
	*memstore.Store
	bus  *bus
	gate chan struct{}
}

func (s *busStore) Publish(ctx context.Context, msgs []session.Relayed) error {
	msgs = slices.Clone(msgs)
	b := s.bus
	b.mu.Lock()
	var line []string
	for _, m := range msgs {
		switch {
		case m.Event != nil:
			line = append(line, string(m.Event.Type))
		default:
			line = append(line, []string{"live", "watching", "hello"}[m.Kind]+" "+m.SessionID)
		}
	}
	b.log = append(b.log, "publish: "+strings.Join(line, " "))
	for other, subs := range b.subs {
		if other != s {
			for _, d := range subs {
				(*d)(msgs)
			}
		}
	}
	b.mu.Unlock()
	b.sent <- msgs
	return nil
}

func (s *busStore) Subscribe(ctx context.Context, deliver func([]session.Relayed)) (func(), error) {
	if s.gate != nil {
		<-s.gate
	}
	b := s.bus
	d := &deliver
	b.mu.Lock()
	b.subs[s] = append(b.subs[s], d)
	deliver([]session.Relayed{{Kind: session.RelayListening}})
	b.mu.Unlock()
	return func() {
		b.mu.Lock()
		b.subs[s] = slices.DeleteFunc(b.subs[s], func(x *func([]session.Relayed)) bool { return x == d })
		b.mu.Unlock()
	}, nil
}

// Sync returns at once: Publish delivers before it returns.
func (s *busStore) Sync(ctx context.Context) error { return nil }

func (s *busStore) Commit(ctx context.Context, c *session.Commit) error {
	var types []string
	for _, e := range c.Events {
		types = append(types, string(e.Type))
	}
	s.bus.mu.Lock()
	s.bus.log = append(s.bus.log, "commit: "+strings.Join(types, " "))
	s.bus.mu.Unlock()
	return s.Store.Commit(ctx, c)
}

// await reads what the bus sent until a batch has a message that ok
// accepts.
func (b *bus) await(t *testing.T, what string, ok func(session.Relayed) bool) {
	t.Helper()
	for {
		select {
		case msgs := <-b.sent:
			if slices.ContainsFunc(msgs, ok) {
				return
			}
		case <-t.Context().Done():
			t.Fatalf("the bus never carried %s", what)
		}
	}
}

func relayRunner(t *testing.T, st session.Store, clk *storetest.Clock, cfg Config) *Runner {
	t.Helper()
	cfg.Store = st
	cfg.Agents = []*Agent{{Name: "a", Model: parrot{}}}
	r, err := NewRunner(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if r.hub.relay != nil {
		r.hub.relay.now = clk.Now
	}
	t.Cleanup(func() { r.Close(context.Background()) })
	return r
}

// liveOf runs a turn on r and returns what its caller saw: committed
// events by type and seq, live ones by type and text.
func liveOf(t *testing.T, r *Runner, id, text string) []string {
	t.Helper()
	var out []string
	for e, err := range r.Run(t.Context(), id, Input{Text: text}) {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, describe(e))
	}
	return out
}

func describe(e *session.Event) string {
	if tok, ok := e.Data.(*session.Token); ok {
		return "token " + tok.Text
	}
	return string(e.Type)
}

// The relay publishes a session's live events only while another process
// watches it — or while it has just started listening and cannot know —
// and the watcher there sees them where the run's caller does.
func TestRelayPublishesWatchedSessions(t *testing.T) {
	clk := storetest.NewClock(time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC))
	mem, bus := memstore.New(), newBus()
	a := relayRunner(t, &busStore{Store: mem, bus: bus}, clk, Config{})
	b := relayRunner(t, &busStore{Store: mem, bus: bus}, clk, Config{})
	ra := a.hub.relay
	ctx := t.Context()
	if _, err := a.CreateSession(ctx, "a", "s1", nil); err != nil {
		t.Fatal(err)
	}
	if !ra.learning.Load() {
		t.Fatal("a knows who watches before it has listened")
	}
	// a listens, says hello, and relays everything while it learns.
	ra.await(ctx)
	bus.await(t, "a's hello", func(m session.Relayed) bool { return m.Kind == session.RelayHello })
	liveOf(t, a, "s1", "while learning")
	bus.await(t, "a's tokens while it learns", func(m session.Relayed) bool { return m.Kind == session.RelayLive })

	// Its hello unanswered for relayLearn: nobody watches anything.
	clk.Advance(relayLearn)
	ra.tick()
	if ra.learning.Load() {
		t.Fatal("a still learning after relayLearn")
	}
	rounds := ra.rounds.Load()
	liveOf(t, a, "s1", "nobody watches")
	if n := ra.rounds.Load(); n != rounds {
		t.Errorf("%d Publish calls for a session nobody watches", n-rounds)
	}

	// b watches: it says so, and a relays s1's tokens to it, each in its
	// place between the committed events.
	wctx, stopWatching := context.WithCancel(ctx)
	defer stopWatching()
	seen := make(chan []string, 1)
	subscribed := make(chan struct{})
	go func() {
		var evs []string
		last := int64(0)
		for e, err := range b.Watch(wctx, "s1", 0) {
			if err != nil {
				t.Error(err)
				break
			}
			if e.Seq != 0 {
				last = e.Seq
			}
			if last <= 12 { // the two turns before
				if last == 12 {
					close(subscribed)
				}
				continue
			}
			evs = append(evs, describe(e))
			if e.Type == session.TypeRunFinished {
				break
			}
		}
		seen <- evs
	}()
	<-subscribed
	bus.await(t, "b's notice", func(m session.Relayed) bool { return m.Kind == session.RelayWatching && m.SessionID == "s1" })
	bus.mu.Lock()
	from := len(bus.log)
	bus.mu.Unlock()
	want := liveOf(t, a, "s1", "watched from b")
	if diff := cmp.Diff(want, <-seen); diff != "" {
		t.Errorf("b's watcher (-a's caller +b's watcher):\n%s", diff)
	}
	if !slices.Contains(want, "token from ") {
		t.Errorf("a's caller saw no tokens: %v", want)
	}
	// The tokens went before the commit that ends their model call.
	bus.mu.Lock()
	log := slices.Clone(bus.log[from:])
	bus.mu.Unlock()
	tokens := slices.IndexFunc(log, func(l string) bool { return strings.HasPrefix(l, "publish: token") })
	finished := slices.IndexFunc(log, func(l string) bool { return strings.HasPrefix(l, "commit: model_finished") })
	if tokens < 0 || finished < 0 || tokens > finished {
		t.Errorf("the tokens were not published before model_finished committed:\n%s", strings.Join(log, "\n"))
	}

	// b stops watching; once its notice no longer holds, a stops relaying.
	stopWatching()
	clk.Advance(relayTTL)
	ra.tick()
	rounds = ra.rounds.Load()
	liveOf(t, a, "s1", "no longer watched")
	if n := ra.rounds.Load(); n != rounds {
		t.Errorf("%d Publish calls after b's notice expired", n-rounds)
	}

	// a listens anew (its connection broke): it may have missed notices,
	// so it relays everything again for a while, and says hello.
	ra.deliver([]session.Relayed{{Kind: session.RelayListening}})
	if !ra.learning.Load() {
		t.Error("a listening anew is not learning")
	}
}

// A process that starts listening says hello; the others answer at once
// with the sessions they watch, so it need not wait for their refresh.
func TestRelayHelloIsAnswered(t *testing.T) {
	clk := storetest.NewClock(time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC))
	mem, bus := memstore.New(), newBus()
	b := relayRunner(t, &busStore{Store: mem, bus: bus}, clk, Config{})
	ctx := t.Context()
	if _, err := b.CreateSession(ctx, "a", "s1", nil); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	watching := make(chan struct{})
	go func() {
		close(watching)
		for range b.Watch(wctx, "s1", 0) {
		}
	}()
	<-watching
	bus.await(t, "b's notice", func(m session.Relayed) bool { return m.Kind == session.RelayWatching })
	// A new process: its hello gets b's answer.
	a := relayRunner(t, &busStore{Store: mem, bus: bus}, clk, Config{})
	a.hub.relay.await(ctx)
	bus.await(t, "b's answer", func(m session.Relayed) bool { return m.Kind == session.RelayWatching })
	// The bus has seen the answer; a hears it on its own goroutine.
	deadline := time.Now().Add(30 * time.Second)
	for {
		a.hub.mu.Lock()
		_, known := a.hub.remote[skey{session.DefaultTenant, "s1"}]
		a.hub.mu.Unlock()
		if known {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("a does not know b watches s1")
		}
		time.Sleep(time.Millisecond)
	}
}

// Relaying off: the runner neither subscribes nor publishes.
func TestRelayOff(t *testing.T) {
	clk := storetest.NewClock(time.Now())
	mem, bus := memstore.New(), newBus()
	a := relayRunner(t, &busStore{Store: mem, bus: bus}, clk, Config{NoRelay: true})
	if a.hub.relay != nil {
		t.Fatal("NoRelay: the runner has a relay")
	}
	if _, err := a.CreateSession(t.Context(), "a", "s1", nil); err != nil {
		t.Fatal(err)
	}
	liveOf(t, a, "s1", "hello")
	bus.mu.Lock()
	defer bus.mu.Unlock()
	if len(bus.subs) != 0 || slices.ContainsFunc(bus.log, func(l string) bool { return strings.HasPrefix(l, "publish") }) {
		t.Errorf("subscribers %v, log %v", bus.subs, bus.log)
	}
}

// Two processes that start listening at about the same time: B said it
// watches s1 before A listened, and A said hello before B listened, so
// neither heard the other. B, once listening, says again what it
// watches.
func TestRelayNoticesCrossTheStart(t *testing.T) {
	clk := storetest.NewClock(time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC))
	mem, bus := memstore.New(), newBus()
	gate := make(chan struct{})
	a := relayRunner(t, &busStore{Store: mem, bus: bus}, clk, Config{})
	b := relayRunner(t, &busStore{Store: mem, bus: bus, gate: gate}, clk, Config{})
	ctx := t.Context()
	if _, err := a.CreateSession(ctx, "a", "s1", nil); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		for range b.Watch(wctx, "s1", 0) {
		}
	}()
	// B's notice goes while nobody listens; then A listens and says
	// hello, which B, not listening yet, does not hear.
	bus.await(t, "b's notice", func(m session.Relayed) bool { return m.Kind == session.RelayWatching })
	a.hub.relay.await(ctx)
	bus.await(t, "a's hello", func(m session.Relayed) bool { return m.Kind == session.RelayHello })
	close(gate) // B listens
	bus.await(t, "b's hello", func(m session.Relayed) bool { return m.Kind == session.RelayHello })
	a.hub.mu.Lock()
	_, known := a.hub.remote[skey{session.DefaultTenant, "s1"}]
	a.hub.mu.Unlock()
	if !known {
		t.Error("a does not know that b watches s1")
	}
}
