package gateway_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/gateway"
	"github.com/agentrt/agentrt/session"
	"github.com/agentrt/agentrt/session/memstore"
)

// A source may pile up at most MaxPending inputs and MaxPendingBytes
// bytes: past either, Submit refuses the input with source_full, saying
// which bound and what to do, and stores nothing; other sources are not
// affected, a retry of a waiting input (its key) is its duplicate as
// ever, and once the source's turn has answered what waited, there is
// room again.
func TestSourceFull(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, gateway.Config{MaxPending: 3, MaxInputBytes: 1000, MaxPendingBytes: 2000,
			Sources: map[string]gateway.SourceConfig{"vip": {MaxPending: 5}}})
		ctx := context.Background()
		send := func(source, text, key string) (*gateway.Submitted, error) {
			return e.g.Submit(ctx, gateway.Input{Source: source, Text: text, Key: key})
		}
		full := func(what string, err error, says ...string) {
			t.Helper()
			if agentrt.AsError(err).ErrorCode() != agentrt.CodeSourceFull {
				t.Fatalf("%s: %v, want source_full", what, err)
			}
			for _, s := range append(says, "send it again once its turn has answered them") {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("%s: %q does not say %q", what, err, s)
				}
			}
		}
		// No Run: what is sent waits.
		first, err := send("chat", "one", "k1")
		if err != nil {
			t.Fatal(err)
		}
		for _, text := range []string{"two", "three"} {
			if _, err := send("chat", text, ""); err != nil {
				t.Fatal(err)
			}
		}
		_, err = send("chat", "four", "k4")
		full("a fourth input", err, "source chat has 3 inputs waiting", "max_pending 3")
		if again, err := send("chat", "one", "k1"); err != nil || !again.Duplicate || again.ID != first.ID {
			t.Errorf("the first input again, with its key: %+v, %v; want its duplicate", again, err)
		}
		for i := range 5 {
			if _, err := send("vip", fmt.Sprint("vip ", i), ""); err != nil {
				t.Fatalf("vip's input %d under its own bound of 5: %v", i, err)
			}
		}
		_, err = send("vip", "six", "")
		full("vip's sixth input", err, "max_pending 5")
		// The case: inputs of 900 bytes under a limit of 1000
		// each; two wait (1800 bytes), a third would make 2700.
		big := strings.Repeat("x", 900)
		for range 2 {
			if _, err := send("big", big, ""); err != nil {
				t.Fatal(err)
			}
		}
		_, err = send("big", big, "")
		full("a third input of 900 bytes", err, "source big has 1800 bytes waiting", "this input's 900", "max_pending_bytes 2000")
		if ins, _ := e.store.Inputs(ctx, "chat", 0, 0); len(ins) != 3 {
			t.Errorf("source chat stored %d inputs, want the 3 taken", len(ins))
		}

		stop := e.run(t)
		defer stop()
		synctest.Wait()
		if _, err := send("chat", "four", "k4"); err != nil {
			t.Errorf("the fourth input once the turn answered the rest: %v", err)
		}
	})
}

// readCounter is a store that remembers the most inputs one read of a
// source's inbox returned.
type readCounter struct {
	*memstore.Store
	most atomic.Int64
}

func (c *readCounter) saw(n int) {
	for {
		m := c.most.Load()
		if int64(n) <= m || c.most.CompareAndSwap(m, int64(n)) {
			return
		}
	}
}

func (c *readCounter) Pending(ctx context.Context, source string, limit int) ([]session.InboxInput, error) {
	ins, err := c.Store.Pending(ctx, source, limit)
	c.saw(len(ins))
	return ins, err
}

func (c *readCounter) Inputs(ctx context.Context, source string, after int64, limit int) ([]session.InboxInput, error) {
	ins, err := c.Store.Inputs(ctx, source, after, limit)
	c.saw(len(ins))
	return ins, err
}

// A source that piled up more than its bounds — inputs stored by
// processes racing past Submit's count, or before the bounds were
// lowered — is answered a bounded turn at a time: no turn merges more
// than MaxPending inputs or MaxPendingBytes bytes, and no read of the
// inbox, the worker's or its watch's, returns more inputs than a turn
// may take, however many wait.
func TestTurnsTakeWhatTheBoundsAllow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var store *readCounter
		rec, seen := recorder()
		e := newEnvWrapped(t, gateway.Config{MaxPending: 4, MaxInputBytes: 1000, MaxPendingBytes: 2000,
			Modules: []gateway.Module{rec}},
			func(m *memstore.Store) session.Store { store = &readCounter{Store: m}; return store })
		ctx := context.Background()
		// Stored as another process would, past the bounds.
		var want []string
		for i := range 10 {
			in, _, err := e.store.Submit(ctx, &session.InboxInput{ID: fmt.Sprint("small", i), Source: "chat", SessionID: "chat",
				Parts: []session.InputPart{{Type: "text", Text: fmt.Sprint("hello ", i)}}})
			if err != nil {
				t.Fatal(err)
			}
			want = append(want, in.ID)
		}
		for i := range 5 {
			in, _, err := e.store.Submit(ctx, &session.InboxInput{ID: fmt.Sprint("big", i), Source: "chat", SessionID: "chat",
				Parts: []session.InputPart{{Type: "text", Text: strings.Repeat("x", 900)}}})
			if err != nil {
				t.Fatal(err)
			}
			want = append(want, in.ID)
		}
		stop := e.run(t)
		defer stop()
		synctest.Wait()
		var got []string
		var sizes []int
		for _, tr := range seen() {
			got = append(got, tr.Inputs...)
			sizes = append(sizes, len(tr.Inputs))
		}
		if !slices.Equal(got, want) {
			t.Fatalf("the turns answered %v, want %v in order", got, want)
		}
		// 4 small, 4 small, 2 small and 2 big (14 + 1800 bytes), 2 big
		// (a third would make 2700), the last big.
		if wantSizes := []int{4, 4, 4, 2, 1}; !slices.Equal(sizes, wantSizes) {
			t.Errorf("the turns took %v inputs, want %v", sizes, wantSizes)
		}
		if n := store.most.Load(); n > 4 {
			t.Errorf("a read of the inbox returned %d inputs, more than a turn may take (4)", n)
		}
		for _, st := range events[session.RunStarted](t, e.store, "chat") {
			if len(st.Input) > 2000 {
				t.Errorf("a turn's merged input holds %d bytes, more than max_pending_bytes (2000)", len(st.Input))
			}
		}
	})
}

// Newer input restarts a turn at most MaxRestarts times: past that, it
// is queued — the turn answers what it has, the turn after answers the
// newer input — and the turn says so (Turn.Queued).
func TestRestartsOfATurnAreBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var queued [][]string
		after := &testModule{name: "after", order: gateway.AgentOrder + 10, fn: func(_ context.Context, tr *gateway.Turn) error {
			mu.Lock()
			queued = append(queued, tr.Queued())
			mu.Unlock()
			return nil
		}}
		e := newEnv(t, gateway.Config{MaxRestarts: 2, Modules: []gateway.Module{after}})
		e.bot.inModel = make(chan struct{}, 8)
		e.bot.release = make(chan struct{}) // "slow" calls wait for an interrupt, or for this
		stop := e.run(t)
		defer stop()
		e.submit(t, "chat", "slow 1")
		<-e.bot.inModel
		for _, text := range []string{"slow 2", "slow 3"} {
			e.submit(t, "chat", text) // interrupts; the restart's model call waits again
			<-e.bot.inModel
		}
		last := e.submit(t, "chat", "slow 4") // the turn restarted twice: queued
		synctest.Wait()
		close(e.bot.release)
		synctest.Wait()
		starts := events[session.RunStarted](t, e.store, "chat")
		var turns []string
		for _, st := range starts {
			turns = append(turns, st.TurnID)
		}
		if len(turns) != 4 || turns[0] != turns[1] || turns[1] != turns[2] || turns[3] == turns[0] {
			t.Fatalf("run_started turn ids %v, want three runs of one turn, then another turn", turns)
		}
		if !slices.Equal(starts[3].Inputs, []string{last.ID}) {
			t.Errorf("the turn after answers %v, want the queued input %s", starts[3].Inputs, last.ID)
		}
		if n := len(events[session.Interrupted](t, e.store, "chat")); n != 2 {
			t.Errorf("%d interruptions, want 2", n)
		}
		mu.Lock()
		defer mu.Unlock()
		if len(queued) != 2 || !slices.Equal(queued[0], []string{last.ID}) || len(queued[1]) != 0 {
			t.Errorf("Turn.Queued of the turns that finished: %v, want [%s] then none", queued, last.ID)
		}
	})
}

// While a turn runs, the watch that looks for newer input submitted by
// other processes reads a bounded page after what it saw, each poll: not
// every pending input of the source, however many pile up.
func TestTheInboxWatchReadsBoundedPages(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var store *readCounter
		e := newEnvWrapped(t, gateway.Config{Policy: gateway.Queue, MaxPending: 4},
			func(m *memstore.Store) session.Store { store = &readCounter{Store: m}; return store })
		_, stop := e.busy(t, "slow")
		defer stop()
		for i := range 20 {
			if _, _, err := e.store.Submit(context.Background(), &session.InboxInput{ID: fmt.Sprint("other", i), Source: "chat", SessionID: "chat",
				Parts: []session.InputPart{{Type: "text", Text: "more"}}}); err != nil {
				t.Fatal(err)
			}
		}
		time.Sleep(10 * gateway.DefaultPoll) // ten looks
		synctest.Wait()
		if n := store.most.Load(); n > 4 {
			t.Errorf("a look at the inbox returned %d inputs, want at most a turn's bound (4)", n)
		}
		close(e.bot.release)
		synctest.Wait()
		if p, _ := e.g.Pending(context.Background()); len(p) != 0 {
			t.Errorf("pending after the turns: %+v", p)
		}
	})
}
