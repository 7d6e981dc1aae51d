package agentrt_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/model/scripted"
	"github.com/agentrt/agentrt/session"
	"github.com/agentrt/agentrt/session/memstore"
	"github.com/agentrt/agentrt/session/storetest"
)

// A session is owned by one runner at a time across processes: a second
// runner (another process, another owner) is told who holds it.
func TestLeaseHeldByAnotherRunner(t *testing.T) {
	store := memstore.New()
	g := newGate()
	a := newEnv(t, store, agentrt.Config{Owner: "host-a:1:a"}, calcAgent(scripted.New("m", gateCall(), scripted.Reply{Text: "done"}), registry(t, g.tool())))
	b := newEnv(t, store, agentrt.Config{Owner: "host-b:2:b"}, calcAgent(scripted.New("m", scripted.Reply{Text: "b"}), registry(t, g.tool())))
	id := a.session(t, "calc")
	h, err := a.r.Start(context.Background(), id, agentrt.Input{Text: "go"})
	if err != nil {
		t.Fatal(err)
	}
	wait(t, g.started)
	_, err = agentrt.Collect(b.r.Resume(context.Background(), id))
	if errCode(err) != "lease_held" || !strings.Contains(err.Error(), "host-a:1:a") {
		t.Fatalf("resume from another runner: %v, want lease_held naming the owner", err)
	}
	// The fact once: not again in the words of the store's error.
	if n := strings.Count(err.Error(), "host-a:1:a"); n != 1 {
		t.Errorf("the error names the owner %d times: %v", n, err)
	}
	var held *session.LeaseHeldError
	if !errors.Is(err, session.ErrLeaseHeld) || !errors.As(err, &held) || held.Lease.Owner != "host-a:1:a" {
		t.Errorf("error does not wrap the store's LeaseHeldError: %v", err)
	}
	if _, err := a.r.Start(context.Background(), id, agentrt.Input{Text: "again"}); errCode(err) != "busy" {
		t.Errorf("second start in one runner: %v, want busy", err)
	}
	close(g.release)
	res, err := h.Wait(context.Background())
	if err != nil || res.Status != session.StatusDone || res.Text != "done" {
		t.Fatalf("wait: %+v %v", res, err)
	}
	// Released: the other runner may run it now.
	if res := b.run(t, id, "hi"); res.Status != session.StatusDone || res.Text != "b" {
		t.Fatalf("after release: %+v", res)
	}
	if s, _ := store.GetSession(context.Background(), id); s.Lease != nil {
		t.Errorf("lease after the runs: %+v", s.Lease)
	}
}

// A runner whose lease was taken over (it expired while the process
// stalled) writes nothing more: its next commit is fenced, and the run
// stops with lease_lost.
func TestLeaseLostFencesTheRun(t *testing.T) {
	clock := storetest.NewClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	store := memstore.New(memstore.WithClock(clock.Now))
	g := newGate()
	cfg := agentrt.Config{LeaseTTL: time.Hour}
	cfg.Owner = "a:1:a"
	a := newEnv(t, store, cfg, calcAgent(scripted.New("m", gateCall(), scripted.Reply{Text: "from a"}), registry(t, g.tool())))
	id := a.session(t, "calc")
	h, err := a.r.Start(context.Background(), id, agentrt.Input{Text: "go"})
	if err != nil {
		t.Fatal(err)
	}
	wait(t, g.started)
	clock.Advance(2 * time.Hour) // a's lease expired
	cfg.Owner = "b:2:b"
	g2 := newGate()
	close(g2.release)
	b := newEnv(t, store, cfg, calcAgent(scripted.New("m", scripted.Reply{Text: "from b"}), registry(t, g2.tool())))
	res := b.resume(t, id)
	if res.Status != session.StatusDone || res.Text != "from b" {
		t.Fatalf("b's resume: %+v", res)
	}
	before := storedLog(t, store, id)
	close(g.release) // a's tool comes back; a must not write its result
	ares, err := h.Wait(context.Background())
	if errCode(err) != "lease_lost" {
		t.Fatalf("a's run: %+v %v, want lease_lost", ares, err)
	}
	if diff := cmp.Diff(before, storedLog(t, store, id)); diff != "" {
		t.Errorf("the fenced runner wrote:\n%s", diff)
	}
}

// crashed returns a store holding a session whose run stopped during a
// tool call without releasing its lease, as a killed process leaves it:
// status running, lease held by owner until it expires.
func crashed(t *testing.T, store *memstore.Store, id, owner string) string {
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
		if _, err := store.Acquire(context.Background(), id, owner, time.Hour); err != nil {
			t.Fatal(err)
		}
	}
	return id
}

// Recover resumes the sessions whose process stopped, exactly once across
// runners that call it at the same moment, and leaves alone those whose
// owner is alive.
func TestRecoverExactlyOnce(t *testing.T) {
	clock := storetest.NewClock(time.Now())
	store := memstore.New(memstore.WithClock(clock.Now))
	abandoned := crashed(t, store, "abandoned", "")        // released: the store failed, not the process
	leased := crashed(t, store, "leased", "elsewhere:9:x") // a live owner on another host
	g := newGate()
	close(g.release)
	var runners []*env
	for _, owner := range []string{"r1:1:a", "r2:2:b", "r3:3:c"} {
		runners = append(runners, newEnv(t, store, agentrt.Config{Owner: owner},
			calcAgent(scripted.New("m", scripted.Reply{Text: "recovered"}, scripted.Reply{Text: "recovered"}), registry(t, g.tool()))))
	}
	var mu sync.Mutex
	var runs []*agentrt.Run
	var wg sync.WaitGroup
	for _, e := range runners {
		wg.Go(func() {
			rs, err := e.r.Recover(context.Background())
			if err != nil {
				t.Error(err)
			}
			mu.Lock()
			runs = append(runs, rs...)
			mu.Unlock()
		})
	}
	wg.Wait()
	if len(runs) != 1 || runs[0].SessionID() != abandoned {
		t.Fatalf("recovered %d runs, want exactly %s once", len(runs), abandoned)
	}
	if res, err := runs[0].Wait(context.Background()); err != nil || res.Status != session.StatusDone {
		t.Fatalf("recovered run: %+v %v", res, err)
	}
	if s, _ := store.GetSession(context.Background(), leased); s.Status != session.StatusRunning {
		t.Fatalf("the leased session was touched: %s", s.Status)
	}
	// Once its owner's lease expires, it is recovered too.
	clock.Advance(2 * time.Hour)
	rs, err := runners[0].r.Recover(context.Background())
	if err != nil || len(rs) != 1 || rs[0].SessionID() != leased {
		t.Fatalf("after expiry: %d runs, %v", len(rs), err)
	}
	if res, err := rs[0].Wait(context.Background()); err != nil || res.Status != session.StatusDone {
		t.Fatalf("recovered run: %+v %v", res, err)
	}
	if got := g.ran.Load(); got != 2 {
		t.Errorf("the gate ran %d times on recovery, want 2 (once per session)", got)
	}
	if _, err := newEnv(t, plainStore{memstore.New()}, agentrt.Config{}).r.Recover(context.Background()); errCode(err) != "no_leases" {
		t.Errorf("Recover without leases: %v", err)
	}
}

// A lease that names the recovering runner is no sign that it runs the
// session: a process restarted under the same owner name (Config.Owner),
// or a run whose release the store refused, leaves one behind. Recover
// resumes such a session once the lease expired, as any other.
func TestRecoverSessionLeasedToItsOwnName(t *testing.T) {
	clock := storetest.NewClock(time.Now())
	store := memstore.New(memstore.WithClock(clock.Now))
	id := crashed(t, store, "s1", "host-a:1:a")
	clock.Advance(2 * time.Hour)
	g := newGate()
	close(g.release)
	e := newEnv(t, store, agentrt.Config{Owner: "host-a:1:a"}, calcAgent(scripted.New("m", scripted.Reply{Text: "recovered"}), registry(t, g.tool())))
	runs, err := e.r.Recover(context.Background())
	if err != nil || len(runs) != 1 || runs[0].SessionID() != id {
		t.Fatalf("Recover: %d runs, %v; want the session whose lease names this runner", len(runs), err)
	}
	if res, err := runs[0].Wait(context.Background()); err != nil || res.Status != session.StatusDone || res.Text != "recovered" {
		t.Fatalf("recovered run: %+v %v", res, err)
	}
}

// A session that crashes its process every time it is resumed is stopped
// after MaxRecoveries, failed with reason crash_loop; a person's resume
// tries again.
func TestCrashLoop(t *testing.T) {
	store := memstore.New()
	id := crashed(t, store, "s1", "")
	for i := 1; i <= 3; i++ {
		var faults storetest.Faults
		e := newEnv(t, storetest.Faulty(store, &faults), agentrt.Config{MaxRecoveries: 3}, calcAgent(scripted.New("m"), registry(t, newGate().tool())))
		faults.FailCommit(2, false) // the commit after run_resumed: the process "dies" before any progress
		if _, err := agentrt.Collect(e.r.Resume(context.Background(), id)); !errors.Is(err, storetest.ErrInjected) {
			t.Fatalf("resume %d: %v", i, err)
		}
	}
	g := newGate()
	close(g.release)
	e := newEnv(t, store, agentrt.Config{MaxRecoveries: 3}, calcAgent(scripted.New("m", scripted.Reply{Text: "fixed"}), registry(t, g.tool())))
	res := e.resume(t, id)
	if res.Status != session.StatusFailed || res.Err == nil || res.Err.Code != "crash_loop" || g.ran.Load() != 0 {
		t.Fatalf("fourth resume: %+v (gate ran %d)", res, g.ran.Load())
	}
	res = e.resume(t, id)
	if res.Status != session.StatusDone || res.Text != "fixed" {
		t.Fatalf("a person's resume: %+v", res)
	}
}
