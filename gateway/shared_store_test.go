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

// onStore returns an env whose runner and gateway use shared: another
// process on the same store, as far as claims and leases can tell (its
// runner is another owner).
func onStore(t *testing.T, shared *memstore.Store, cfg gateway.Config) *env {
	t.Helper()
	e := newEnvWrapped(t, cfg, func(*memstore.Store) session.Store { return shared })
	e.store = shared
	return e
}

// seen records the inputs each run of a module saw.
type seen struct {
	mu    sync.Mutex
	turns [][]string
}

func (s *seen) module() *testModule {
	return &testModule{name: "moderation", order: 10, fn: func(_ context.Context, t *gateway.Turn) error {
		ids := make([]string, len(t.Inputs))
		for i, in := range t.Inputs {
			ids[i] = in.ID
		}
		s.mu.Lock()
		s.turns = append(s.turns, ids)
		s.mu.Unlock()
		return nil
	}}
}

// Two gateways (two processes, as the store sees them) serving one
// store: each source is served by one of them at a time, so every
// module runs once per turn — a moderation module never sees an input
// twice — and each input is answered once.
func TestTwoGatewaysServeASourceOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		shared := memstore.New()
		var mods seen
		a := onStore(t, shared, gateway.Config{Modules: []gateway.Module{mods.module()}})
		b := onStore(t, shared, gateway.Config{Modules: []gateway.Module{mods.module()}})
		var ids []string
		for i := range 20 {
			for _, e := range []*env{a, b} {
				ids = append(ids, e.submit(t, fmt.Sprint("chat", i), fmt.Sprint("hello ", i)).ID)
			}
		}
		stopA, stopB := a.run(t), b.run(t)
		time.Sleep(time.Second)
		synctest.Wait()
		stopA()
		stopB()

		count := map[string]int{}
		for _, turn := range mods.turns {
			for _, id := range turn {
				count[id]++
			}
		}
		for _, id := range ids {
			if count[id] != 1 {
				t.Errorf("input %s went through the moderation module %d times, want once", id, count[id])
			}
		}
		if len(mods.turns) != 20 {
			t.Errorf("%d turns, want 20 (one per source)", len(mods.turns))
		}
		pending, err := shared.PendingSources(context.Background(), 0)
		if err != nil || len(pending) != 0 {
			t.Errorf("pending sources %v, %v; want none", pending, err)
		}
		for i := range 20 {
			if starts := events[session.RunStarted](t, shared, fmt.Sprint("chat", i)); len(starts) != 1 || len(starts[0].Inputs) != 2 {
				t.Errorf("source chat%d: run_started %+v, want one turn answering both inputs", i, starts)
			}
		}
	})
}

// Input submitted through another process's gateway (`agentrt send`)
// for a source whose turn runs here interrupts that turn, as input
// submitted here does: the serving gateway sees it in the inbox. The
// restarted turn answers it; the refund is for order 43 only.
func TestInputFromAnotherProcessInterrupts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		shared := memstore.New()
		server := onStore(t, shared, gateway.Config{})
		sender := onStore(t, shared, gateway.Config{})
		server.bot.inModel = make(chan struct{}, 8)
		stop := server.run(t)
		defer stop()
		server.submit(t, "chat", "slow: order 42")
		<-server.bot.inModel // the turn's model call is under way
		newer := sender.submit(t, "chat", "sorry — order 43")
		time.Sleep(time.Second)
		synctest.Wait()

		if got := events[session.Interrupted](t, shared, "chat"); len(got) != 1 || !slices.Equal(got[0].Inputs, []string{newer.ID}) {
			t.Errorf("interrupted events %+v, want one naming the newer input", got)
		}
		finals := events[session.Final](t, shared, "chat")
		if len(finals) != 1 || finals[0].Text != `done: "refunded order 43"` {
			t.Errorf("finals %+v, want one answer, about order 43", finals)
		}
		if strings.Join(server.refunds, ",") != "43" {
			t.Errorf("refunds %v, want 43 only", server.refunds)
		}
		ins, _ := shared.Inputs(context.Background(), "chat", 0, 0)
		for _, in := range ins {
			if in.State != session.InputAnswered {
				t.Errorf("input %s is %s, want answered", in.ID, in.State)
			}
		}
	})
}

// With the reject policy, input from another process for a running turn
// is refused — seen in the inbox, not only when submitted here.
func TestInputFromAnotherProcessRejected(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		shared := memstore.New()
		server := onStore(t, shared, gateway.Config{Policy: gateway.Reject})
		sender := onStore(t, shared, gateway.Config{Policy: gateway.Reject})
		first, stop := server.busy(t, "slow question")
		defer stop()
		late := sender.submit(t, "chat", "and another thing")
		time.Sleep(time.Second) // the server's watch looks at the inbox
		synctest.Wait()
		close(server.bot.release)
		synctest.Wait()

		ins, _ := shared.Inputs(context.Background(), "chat", 0, 0)
		states := map[string]session.InputState{}
		for _, in := range ins {
			states[in.ID] = in.State
		}
		if states[first.ID] != session.InputAnswered || states[late.ID] != session.InputRefused {
			t.Errorf("states %v, want the first answered, the late one refused", states)
		}
	})
}

// Answer for a source another process serves waits for that process to
// answer the input — its watch sees it, and interrupts its turn — and
// then returns without running anything here.
func TestAnswerWhileAnotherProcessServes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		shared := memstore.New()
		server := onStore(t, shared, gateway.Config{})
		cli := onStore(t, shared, gateway.Config{})
		server.bot.inModel = make(chan struct{}, 8)
		stop := server.run(t)
		defer stop()
		server.submit(t, "chat", "slow: order 42")
		<-server.bot.inModel
		sub := cli.submit(t, "chat", "order 43 instead")
		var c collect
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := cli.g.Answer(ctx, sub, c.yield); err != nil {
			t.Fatalf("Answer: %v (the serving process never answered the input)", err)
		}
		if len(c.events) != 0 {
			t.Errorf("Answer yielded %v; the other process ran the turn", c.types())
		}
		starts := events[session.RunStarted](t, shared, "chat")
		if len(starts) != 2 || !slices.Equal(starts[1].Inputs, []string{sub.ID}) {
			t.Fatalf("run_started %+v, want the restarted turn answering the input", starts)
		}
		if len(cli.bot.seen()) != 0 {
			t.Errorf("the answering process called its model %d times", len(cli.bot.seen()))
		}
		cli.r.Close(context.Background())
	})
}

// A module sees that newer input interrupted its turn (Turn.Interrupted),
// and the restarted turn starts uninterrupted.
func TestModuleSeesTheInterrupt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		entered, goOn := make(chan struct{}, 4), make(chan struct{})
		var mu sync.Mutex
		var flags []bool
		mod := &testModule{name: "recall", order: 20, fn: func(_ context.Context, t *gateway.Turn) error {
			entered <- struct{}{}
			if t.Restart == 0 {
				<-goOn
			}
			mu.Lock()
			flags = append(flags, t.Interrupted())
			mu.Unlock()
			return nil
		}}
		e := newEnv(t, gateway.Config{Modules: []gateway.Module{mod}})
		stop := e.run(t)
		defer stop()
		e.submit(t, "chat", "hi")
		<-entered
		e.submit(t, "chat", "hello again")
		close(goOn)
		time.Sleep(time.Second)
		synctest.Wait()
		mu.Lock()
		defer mu.Unlock()
		if !slices.Equal(flags, []bool{true, false}) {
			t.Errorf("Interrupted() in the two turns: %v, want [true false]", flags)
		}
		if starts := events[session.RunStarted](t, e.store, "chat"); len(starts) != 1 || len(starts[0].Inputs) != 2 {
			t.Errorf("run_started %+v, want one run (the interrupted turn stopped before the agent) answering both", starts)
		}
	})
}

// The claims that keep a source in one process are hidden sessions:
// ListSessions does not show them.
func TestClaimsAreHidden(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, gateway.Config{})
		stop := e.run(t)
		e.submit(t, "chat", "hi")
		time.Sleep(time.Second)
		synctest.Wait()
		stop()
		page, _, err := e.r.ListSessions(context.Background(), session.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, s := range page {
			ids = append(ids, s.ID)
		}
		if !slices.Equal(ids, []string{"chat"}) {
			t.Errorf("sessions %v, want [chat]", ids)
		}
	})
}

// Under the queue policy, Answer for a source another process serves
// says so at once (lease_held) and leaves the input pending, for that
// process's next turn.
func TestAnswerQueuedBehindAnotherProcess(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		shared := memstore.New()
		server := onStore(t, shared, gateway.Config{Policy: gateway.Queue})
		cli := onStore(t, shared, gateway.Config{Policy: gateway.Queue})
		_, stop := server.busy(t, "slow question")
		defer stop()
		sub := cli.submit(t, "chat", "next question")
		err := cli.g.Answer(context.Background(), sub, nil)
		if code := agentrt.AsError(err).ErrorCode(); code != agentrt.CodeLeaseHeld {
			t.Fatalf("Answer: %v (code %q), want lease_held", err, code)
		}
		ins, _ := shared.Inputs(context.Background(), "chat", sub.Seq-1, 1)
		if len(ins) != 1 || ins[0].State != session.InputPending {
			t.Fatalf("the input: %+v, want pending", ins)
		}
		close(server.bot.release)
		time.Sleep(time.Second)
		synctest.Wait()
		if starts := events[session.RunStarted](t, shared, "chat"); len(starts) != 2 || !slices.Equal(starts[1].Inputs, []string{sub.ID}) {
			t.Errorf("run_started %+v, want the server's next turn answering the input", starts)
		}
		cli.r.Close(context.Background())
	})
}

// foreignStore is a shared memstore as one process sees it, with the
// count of other processes' writes (session.Foreign) the test moves, and
// a count of the inbox reads the serving gateway's watch makes.
type foreignStore struct {
	*memstore.Store
	n      atomic.Int64
	inputs atomic.Int64
}

func (f *foreignStore) Foreign() int64 { return f.n.Load() }

func (f *foreignStore) Inputs(ctx context.Context, source string, after int64, limit int) ([]session.InboxInput, error) {
	f.inputs.Add(1)
	return f.Store.Inputs(ctx, source, after, limit)
}

// With a store that tells when other processes wrote (SQLite's
// data_version), the watch of a running turn reads the inbox only when
// one did: a look with nothing foreign is skipped (input submitted here
// reaches the turn through Submit), and one after a foreign write finds
// the other process's input and applies the policy to it.
func TestWatchReadsOnlyAfterForeignWrites(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		shared := memstore.New()
		fs := &foreignStore{Store: shared}
		server := newEnvWrapped(t, gateway.Config{Policy: gateway.Reject}, func(*memstore.Store) session.Store { return fs })
		server.store = shared
		sender := onStore(t, shared, gateway.Config{Policy: gateway.Reject})
		first, stop := server.busy(t, "slow question")
		defer stop()
		time.Sleep(gateway.DefaultPoll) // the watch's first look reads, and finds nothing
		synctest.Wait()
		reads := fs.inputs.Load()
		late := sender.submit(t, "chat", "and another thing") // the store has not told yet
		time.Sleep(2 * time.Second)                           // ten looks of the watch
		synctest.Wait()
		if n := fs.inputs.Load() - reads; n != 0 {
			t.Errorf("the watch read the inbox %d times with nothing foreign; want 0", n)
		}
		state := func(id string) session.InputState { return inputState(shared, "chat", id) }
		if s := state(late.ID); s != session.InputPending {
			t.Errorf("the late input is %s before the store told of it; want pending", s)
		}
		fs.n.Add(1) // the store finds the other process's write
		time.Sleep(time.Second)
		synctest.Wait()
		if s := state(late.ID); s != session.InputRefused {
			t.Errorf("the late input is %s after the store told of a foreign write; want refused (policy reject)", s)
		}
		close(server.bot.release)
		synctest.Wait()
		if s := state(first.ID); s != session.InputAnswered {
			t.Errorf("the first input is %s; want answered", s)
		}
	})
}
