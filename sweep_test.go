package agentrt_test

import (
	"context"
	"errors"
	"fmt"
	"github.com/agentrt/agentrt/internal/testenv"
	"os"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/model/scripted"
	"github.com/agentrt/agentrt/session"
	"github.com/agentrt/agentrt/session/memstore"
	"github.com/agentrt/agentrt/session/storetest"
)

// indexedOnly is a store with leases and the two indexes, and nothing
// else, whose scan of every tenant's sessions fails the test: Recover
// must find what it resumes through the indexes.
type indexedOnly struct {
	session.Store
	session.Leaser
	session.LeaseIndex
	session.RequestIndex
	t *testing.T
}

func indexed(t *testing.T, s session.Store) indexedOnly {
	return indexedOnly{s, s.(session.Leaser), s.(session.LeaseIndex), s.(session.RequestIndex), t}
}

func (s indexedOnly) ListSessions(ctx context.Context, opt session.ListOptions) ([]*session.Session, error) {
	if opt.AllTenants {
		s.t.Errorf("ListSessions across tenants (%+v): Recover scanned the sessions", opt)
	}
	return s.Store.ListSessions(ctx, opt)
}

// leasedOnly is a store with leases and none of the indexes.
type leasedOnly struct {
	session.Store
	session.Leaser
}

// stoppedRun leaves session id of store as a process that stopped
// during a tool call leaves it: status running, its run's tool call
// without a result. The lease is then owner's for ttl, or nobody's if
// owner is empty.
func stoppedRun(t *testing.T, store session.Store, id, owner string, ttl time.Duration) {
	t.Helper()
	var faults storetest.Faults
	g := newGate()
	close(g.release)
	e := newEnv(t, storetest.Faulty(store, &faults), agentrt.Config{Owner: "setup:1:s"}, calcAgent(scripted.New("m", gateCall()), registry(t, g.tool())))
	if _, err := e.r.CreateSession(context.Background(), "calc", id, nil); err != nil {
		t.Fatal(err)
	}
	faults.FailCommit(3, false) // the tool's result
	if _, err := agentrt.Collect(e.r.Run(context.Background(), id, agentrt.Input{Text: "go"})); !errors.Is(err, storetest.ErrInjected) {
		t.Fatalf("setup run: %v", err)
	}
	if owner != "" {
		if _, err := store.(session.Leaser).Acquire(context.Background(), id, owner, ttl); err != nil {
			t.Fatal(err)
		}
	}
	if s, err := store.GetSession(context.Background(), id); err != nil || s.Status != session.StatusRunning {
		t.Fatalf("%s after the setup run: %+v, %v", id, s, err)
	}
}

// recovered waits for runs and returns their sessions, sorted; each must
// end done.
func recovered(t *testing.T, runs []*agentrt.Run) []string {
	t.Helper()
	var ids []string
	for _, h := range runs {
		res, err := h.Wait(context.Background())
		if err != nil || res.Status != session.StatusDone {
			t.Errorf("recovered run of %s: %+v, %v", h.SessionID(), res, err)
		}
		ids = append(ids, h.SessionID())
	}
	slices.Sort(ids)
	return ids
}

// Recover finds, through the store's indexes and without scanning its
// sessions, the runs whose process stopped: a session whose lease
// expired, one leased to a process of this host that is gone, one whose
// lease nobody holds; and the waiting sessions whose requests expired. It
// leaves alone a session whose owner is alive, here or elsewhere.
func TestRecoverThroughIndexes(t *testing.T) {
	host, _ := os.Hostname()
	if host == "" {
		t.Fatal("this host has no name: its dead processes cannot be told")
	}
	for _, is := range indexedStores() {
		t.Run(is.name, func(t *testing.T) {
			storeClock := storetest.NewClock(time.Now())
			store := is.open(t, storeClock.Now)
			stoppedRun(t, store, "free", "", 0)
			stoppedRun(t, store, "expired", "elsewhere:9:x", time.Hour)
			stoppedRun(t, store, "dead", fmt.Sprintf("%s:%d:dead", host, 1<<30), 100*time.Hour) // no such process
			stoppedRun(t, store, "live-here", fmt.Sprintf("%s:%d:other", host, os.Getpid()), 100*time.Hour)
			stoppedRun(t, store, "live-elsewhere", "elsewhere:8:y", 100*time.Hour)

			// A request that expires in an hour, by the runner's clock.
			runClock := storetest.NewClock(time.Date(2026, 5, 1, 9, 0, 0, 0, time.UTC))
			var deploys atomic.Int32
			m := scripted.New("m",
				scripted.Reply{ToolCalls: []scripted.Call{scripted.ToolCall("deploy", `{"env":"prod"}`)}},
				scripted.Reply{Text: "not deployed", Expect: &scripted.Expect{LastToolResultContains: "rejected this call: expired"}},
			)
			a := calcAgent(m, registry(t, askTool(t, &deploys)))
			a.Approval = agentrt.ApprovalPolicy{ExpiresFor: map[string]time.Duration{"deploy": time.Hour}}
			asker := newEnv(t, store, agentrt.Config{Now: runClock.Now, Owner: "asker:1:a"}, a)
			if _, err := asker.r.CreateSession(context.Background(), "calc", "asks", nil); err != nil {
				t.Fatal(err)
			}
			if res := asker.run(t, "asks", "deploy"); res.Status != session.StatusWaiting {
				t.Fatalf("the asking run: %s", res.Status)
			}

			g := newGate()
			close(g.release)
			replies := make([]scripted.Reply, 8)
			for i := range replies {
				replies[i] = scripted.Reply{Text: "recovered"}
			}
			recoverer := newEnv(t, indexed(t, store), agentrt.Config{Now: runClock.Now, Owner: "r1:1:a"},
				calcAgent(scripted.New("m", replies...), registry(t, g.tool(), askTool(t, &deploys))))
			runs, err := recoverer.r.Recover(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if got := recovered(t, runs); !slices.Equal(got, []string{"dead", "free"}) {
				t.Errorf("recovered at first %v, want [dead free]", got)
			}
			// An hour later: the lease that expired, and the request.
			storeClock.Advance(2 * time.Hour)
			runClock.Advance(time.Hour)
			runs, err = recoverer.r.Recover(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if got := recovered(t, runs); !slices.Equal(got, []string{"asks", "expired"}) {
				t.Errorf("recovered an hour later %v, want [asks expired]", got)
			}
			if deploys.Load() != 0 {
				t.Errorf("deploy ran %d times: its request expired, rejected", deploys.Load())
			}
			for _, id := range []string{"live-here", "live-elsewhere"} {
				if s, err := store.GetSession(context.Background(), id); err != nil || s.Status != session.StatusRunning {
					t.Errorf("%s, whose owner is alive: %+v, %v", id, s, err)
				}
			}
			if runs, err := recoverer.r.Recover(context.Background()); err != nil || len(runs) != 0 {
				t.Errorf("a third Recover: %d runs, %v", len(runs), err)
			}
		})
	}
}

// A store without the indexes is swept as before: Recover lists every
// running and waiting session.
func TestRecoverWithoutIndexes(t *testing.T) {
	storeClock := storetest.NewClock(time.Now())
	mem := memstore.New(memstore.WithClock(storeClock.Now))
	store := leasedOnly{mem, mem}
	stoppedRun(t, store, "free", "", 0)
	stoppedRun(t, store, "expired", "elsewhere:9:x", time.Hour)
	g := newGate()
	close(g.release)
	e := newEnv(t, store, agentrt.Config{}, calcAgent(scripted.New("m", scripted.Reply{Text: "ok"}, scripted.Reply{Text: "ok"}), registry(t, g.tool())))
	runs, err := e.r.Recover(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got := recovered(t, runs); !slices.Equal(got, []string{"free"}) {
		t.Errorf("recovered %v, want [free]", got)
	}
	storeClock.Advance(2 * time.Hour)
	runs, err = e.r.Recover(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got := recovered(t, runs); !slices.Equal(got, []string{"expired"}) {
		t.Errorf("recovered after the expiry %v, want [expired]", got)
	}
}

// Recover pages through the index: more stopped runs than a page holds
// are all recovered, once each.
func TestRecoverManyPages(t *testing.T) {
	testenv.SkipShort(t, "stops 450 runs")
	store := memstore.New()
	ctx := context.Background()
	const n = 450 // over two pages of recovery
	for i := range n {
		id := fmt.Sprintf("s%03d", i)
		if err := store.CreateSession(ctx, &session.Session{ID: id, Agent: "calc", Status: session.StatusIdle}); err != nil {
			t.Fatal(err)
		}
		started := &session.Event{V: 1, Seq: 1, SessionID: id, RunID: "r1", Turn: 1, Type: session.TypeRunStarted, Time: time.Now(), Data: &session.RunStarted{Input: "go"}}
		if err := store.Commit(ctx, &session.Commit{SessionID: id, Events: []*session.Event{started}, Status: session.StatusRunning, Turn: 1}); err != nil {
			t.Fatal(err)
		}
	}
	replies := make([]scripted.Reply, n)
	for i := range replies {
		replies[i] = scripted.Reply{Text: "recovered"}
	}
	e := newEnv(t, indexed(t, store), agentrt.Config{}, calcAgent(scripted.New("m", replies...), registry(t)))
	runs, err := e.r.Recover(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := recovered(t, runs); len(got) != n || len(slices.Compact(got)) != n {
		t.Errorf("recovered %d sessions (%d distinct), want %d", len(got), len(slices.Compact(got)), n)
	}
}

// Sweep with a store without leases says so at once, rather than sweep
// in vain; a period that is not positive is refused.
func TestSweepErrors(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, plainStore{memstore.New()}, agentrt.Config{}, calcAgent(scripted.New("m"), registry(t)))
	if err := e.r.Sweep(ctx, time.Hour); errCode(err) != agentrt.CodeNoLeases {
		t.Errorf("Sweep without leases: %v, want no_leases", err)
	}
	m := newEnv(t, nil, agentrt.Config{}, calcAgent(scripted.New("m"), registry(t)))
	for _, every := range []time.Duration{0, -time.Second} {
		if err := m.r.Sweep(ctx, every); errCode(err) != agentrt.CodeConfig {
			t.Errorf("Sweep every %v: %v, want config", every, err)
		}
	}
	if err := (&agentrt.Sweeper{Every: time.Second}).Run(ctx); errCode(err) != agentrt.CodeConfig {
		t.Errorf("a Sweeper without a Runner: %v, want config", err)
	}
	// A closed runner: the sweep that finds it so ends the sweeper.
	stoppedRun(t, m.store, "s1", "", 0)
	if err := m.r.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if err := m.r.Sweep(ctx, time.Hour); errCode(err) != agentrt.CodeClosed {
		t.Errorf("Sweep of a closed runner: %v, want closed", err)
	}
}
