package gateway_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/gateway"
	"github.com/agentrt/agentrt/session"
)

// testModule records its runs and does what its fn says.
type testModule struct {
	name    string
	order   int
	timeout time.Duration
	masked  func(t *gateway.Turn) bool
	fn      func(ctx context.Context, t *gateway.Turn) error
}

func (m *testModule) Name() string { return m.name }
func (m *testModule) Order() int   { return m.order }
func (m *testModule) Run(ctx context.Context, t *gateway.Turn) error {
	if m.fn == nil {
		return nil
	}
	return m.fn(ctx, t)
}
func (m *testModule) Timeout() time.Duration {
	if m.timeout == 0 {
		return time.Minute
	}
	return m.timeout
}
func (m *testModule) Masked(t *gateway.Turn) bool { return m.masked != nil && m.masked(t) }

// A turn runs its modules by order — the groups in order, one group's
// modules at once — skips masked ones, and hands what earlier modules
// set to later ones (the agent's run at order 30 among them).
func TestModulePipeline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var (
			mu    sync.Mutex
			trace []string
		)
		log := func(s string) {
			mu.Lock()
			trace = append(trace, s)
			mu.Unlock()
		}
		// The two modules of order 20 each wait for the other to begin:
		// run one after the other, they would wait until their timeout.
		var both sync.WaitGroup
		both.Add(2)
		meet := func(name string) func(ctx context.Context, tr *gateway.Turn) error {
			return func(ctx context.Context, tr *gateway.Turn) error {
				both.Done()
				both.Wait()
				tr.Set(name, "ok")
				log(name)
				return nil
			}
		}
		mods := []gateway.Module{
			&testModule{name: "notify", order: 40, fn: func(ctx context.Context, tr *gateway.Turn) error {
				res, ok := tr.Result()
				recall, _ := tr.Get("recall")
				log("notify:" + string(res.Status) + ":" + recall.(string) + ":" + boolStr(ok))
				return nil
			}},
			&testModule{name: "moderate", order: 10, fn: func(context.Context, *gateway.Turn) error { log("moderate"); return nil }},
			&testModule{name: "recall", order: 20, timeout: time.Second, fn: meet("recall")},
			&testModule{name: "profile", order: 20, timeout: time.Second, fn: meet("profile")},
			&testModule{name: "skipped", order: 20, masked: func(*gateway.Turn) bool { return true },
				fn: func(context.Context, *gateway.Turn) error { log("skipped"); return nil }},
		}
		e := newEnv(t, gateway.Config{Modules: mods})
		stop := e.run(t)
		defer stop()
		e.submit(t, "chat", "hi")
		synctest.Wait()
		mu.Lock()
		got := strings.Join(trace, ",")
		mu.Unlock()
		if got != "moderate,profile,recall,notify:done:ok:true" && got != "moderate,recall,profile,notify:done:ok:true" {
			t.Fatalf("trace %q", got)
		}
		if n := len(events[session.RunStarted](t, e.store, "chat")); n != 1 {
			t.Fatalf("%d turns of the agent", n)
		}
	})
}

func boolStr(b bool) string {
	if b {
		return "true"
	}
	return "false"
}

// A module's error, panic or timeout fails the turn: its inputs are set
// aside (refused, with the reason), the agent does not run, the gateway
// reports it, and other sources go on. A module that stops the turn
// refuses its inputs with its reason.
func TestModuleFailures(t *testing.T) {
	// The timed-out module ignores its context until the test ends.
	var stuck chan struct{}
	for _, tc := range []struct {
		name string
		fn   func(ctx context.Context, tr *gateway.Turn) error
		code string
		why  string
	}{
		{"error", func(context.Context, *gateway.Turn) error { return errors.New("the moderation service is down") },
			agentrt.CodeModuleFailed, "the moderation service is down"},
		{"panic", func(context.Context, *gateway.Turn) error { panic("boom") }, agentrt.CodeModuleFailed, "panicked: boom"},
		{"timeout", func(ctx context.Context, _ *gateway.Turn) error { <-ctx.Done(); <-stuck; return nil },
			agentrt.CodeModuleFailed, "timed out after 1s"},
		{"stop", func(_ context.Context, tr *gateway.Turn) error { tr.Stop("abusive language"); return nil },
			agentrt.CodeTurnStopped, "abusive language"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				stuck = make(chan struct{})
				defer close(stuck)
				var reported []error
				var mu sync.Mutex
				mod := &testModule{name: "moderate", order: 10, timeout: time.Second,
					fn: func(ctx context.Context, tr *gateway.Turn) error {
						if tr.Source != "bad" {
							return nil
						}
						return tc.fn(ctx, tr)
					}}
				e := newEnv(t, gateway.Config{Modules: []gateway.Module{mod}, OnError: func(source string, err error) {
					mu.Lock()
					reported = append(reported, err)
					mu.Unlock()
				}})
				stop := e.run(t)
				defer stop()
				e.submit(t, "bad", "hello")
				e.submit(t, "good", "hello")
				time.Sleep(2 * time.Second)
				synctest.Wait()
				ins, _ := e.store.Inputs(context.Background(), "bad", 0, 0)
				if len(ins) != 1 || ins[0].State != session.InputRefused || !strings.HasPrefix(ins[0].Reason, tc.code) ||
					!strings.Contains(ins[0].Reason, tc.why) {
					t.Fatalf("the bad source's input %+v, want refused %s (%s)", ins, tc.code, tc.why)
				}
				if n := len(events[session.RunStarted](t, e.store, "good")); n != 1 {
					t.Errorf("the good source's turns: %d", n)
				}
				if _, err := e.store.GetSession(context.Background(), "bad"); err == nil {
					t.Errorf("the agent ran for the bad source")
				}
				mu.Lock()
				defer mu.Unlock()
				if len(reported) == 0 || agentrt.AsError(reported[0]).ErrorCode() != tc.code {
					t.Errorf("reported %v", reported)
				}
			})
		})
	}
}

// An input's metadata may mask modules for its turn.
func TestMaskedByMetadata(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ran := false
		mod := &testModule{name: "moderate", order: 10, fn: func(context.Context, *gateway.Turn) error { ran = true; return nil }}
		e := newEnv(t, gateway.Config{Modules: []gateway.Module{mod}})
		stop := e.run(t)
		defer stop()
		if _, err := e.g.Submit(context.Background(), gateway.Input{Source: "chat", Text: "hi",
			Metadata: map[string]string{"agentrt.mask": "moderate, other"}}); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if ran {
			t.Fatal("a masked module ran")
		}
		if n := len(events[session.RunStarted](t, e.store, "chat")); n != 1 {
			t.Fatalf("%d turns", n)
		}
	})
}

func TestBadModules(t *testing.T) {
	e := newEnv(t, gateway.Config{})
	for _, mods := range [][]gateway.Module{
		{nil},
		{&testModule{name: "a"}, &testModule{name: "a"}},
	} {
		if _, err := gateway.New(gateway.Config{Runner: e.r, Modules: mods}); err == nil {
			t.Errorf("modules %v accepted", mods)
		}
	}
	if _, err := gateway.New(gateway.Config{Runner: e.r, Policy: "steal"}); err == nil {
		t.Error("an unknown policy accepted")
	}
}

// A module that ignores its context does not hold the gateway's stop:
// once Run's context ends, it has ShutdownGrace (or what remains of its
// own time limit, if sooner) to return, then it is abandoned — reported,
// counted while its goroutine runs on — Run returns, and the turn's input
// stays pending for the next gateway.
func TestStopAbandonsAStuckModule(t *testing.T) {
	for _, tc := range []struct {
		name    string
		timeout time.Duration // the module's own limit (Timeouter); <0: none
		grace   time.Duration
		want    time.Duration // how long Run takes to return after its context ends
	}{
		{"the grace", time.Hour, 3 * time.Second, 3 * time.Second},
		{"its own limit, sooner", 5 * time.Second, 10 * time.Second, 4 * time.Second},
		{"no limit of its own", -1, 2 * time.Second, 2 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				stuck := make(chan struct{}) // the module returns once the test ends
				release := sync.OnceFunc(func() { close(stuck) })
				defer release()
				entered := make(chan struct{}, 1)
				mod := &testModule{name: "enrich", order: 10, timeout: tc.timeout,
					fn: func(context.Context, *gateway.Turn) error {
						entered <- struct{}{}
						<-stuck // ignores its context
						return nil
					}}
				var mu sync.Mutex
				var reported []string
				e := newEnv(t, gateway.Config{Modules: []gateway.Module{mod}, ShutdownGrace: tc.grace,
					OnError: func(source string, err error) {
						mu.Lock()
						reported = append(reported, source+": "+err.Error())
						mu.Unlock()
					}})
				ctx, cancel := context.WithCancel(context.Background())
				done := make(chan struct{})
				go func() { e.g.Run(ctx); close(done) }()
				in := e.submit(t, "chat", "hi")
				<-entered
				time.Sleep(time.Second) // the module has run for a second
				stopped := time.Now()
				cancel()
				select {
				case <-done:
				case <-time.After(time.Hour):
					t.Fatal("Run did not return an hour after its context ended: it waits for the stuck module")
				}
				if took := time.Since(stopped); took != tc.want {
					t.Errorf("Run returned %s after its context ended, want %s", took, tc.want)
				}
				if n := e.g.Abandoned(); n != 1 {
					t.Errorf("Abandoned() = %d, want 1", n)
				}
				mu.Lock()
				if len(reported) != 1 || !strings.Contains(reported[0], "chat: module enrich: still running") || !strings.Contains(reported[0], "abandoned") {
					t.Errorf("reported %q, want the abandoned module of source chat", reported)
				}
				mu.Unlock()
				ins, _ := e.store.Inputs(context.Background(), "chat", 0, 0)
				if len(ins) != 1 || ins[0].ID != in.ID || ins[0].State != session.InputPending {
					t.Errorf("inbox %+v, want the input pending, for the next gateway", ins)
				}
				release()
				synctest.Wait()
				if n := e.g.Abandoned(); n != 0 {
					t.Errorf("Abandoned() = %d once the module returned, want 0", n)
				}
				e.r.Close(context.Background())
			})
		})
	}
}

// Sources past Workers wait for a free worker, and say so: Busy and
// Waiting count them, and OnFull hears of it once (at most once a
// minute); once the turns end, the waiting ones run.
func TestWaitingForAWorkerShows(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		hold := make(chan struct{})
		mod := &testModule{name: "hold", order: 10, fn: func(ctx context.Context, _ *gateway.Turn) error {
			select {
			case <-hold:
			case <-ctx.Done():
			}
			return nil
		}}
		var mu sync.Mutex
		var told [][2]int
		e := newEnv(t, gateway.Config{Modules: []gateway.Module{mod}, Workers: 2,
			OnFull: func(busy, waiting int) {
				mu.Lock()
				told = append(told, [2]int{busy, waiting})
				mu.Unlock()
			}})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { e.g.Run(ctx); close(done) }()
		for _, src := range []string{"a", "b", "c", "d", "e"} {
			e.submit(t, src, "hi")
		}
		for range 3 {
			time.Sleep(gateway.DefaultPoll) // Run looks at the inbox again
			synctest.Wait()
		}
		if b, w := e.g.Busy(), e.g.Waiting(); b != 2 || w != 3 {
			t.Errorf("Busy %d, Waiting %d; want 2 and 3", b, w)
		}
		// Each source says so: two served, three waiting for a worker,
		// each with its input pending.
		served, left := 0, 0
		for _, src := range []string{"a", "b", "c", "d", "e"} {
			st, err := e.g.Source(context.Background(), src)
			if err != nil {
				t.Fatal(err)
			}
			if st.Pending != 1 || st.Source != src || st.Serving == st.WaitingForWorker {
				t.Errorf("source %s: %+v; want 1 pending, served or waiting for a worker", src, st)
			}
			if st.Serving {
				served++
			}
			if st.WaitingForWorker {
				left++
			}
		}
		if served != 2 || left != 3 {
			t.Errorf("%d sources served and %d waiting for a worker; want 2 and 3", served, left)
		}
		mu.Lock()
		// Once, at the first look that left a source waiting (the
		// submits may still have been coming: one to three waited then).
		if len(told) != 1 || told[0][0] != 2 || told[0][1] < 1 || told[0][1] > 3 {
			t.Errorf("OnFull heard %v; want once, 2 busy and 1 to 3 waiting", told)
		}
		mu.Unlock()
		close(hold)
		for range 3 {
			time.Sleep(gateway.DefaultPoll)
			synctest.Wait()
		}
		if b, w := e.g.Busy(), e.g.Waiting(); b != 0 || w != 0 {
			t.Errorf("after the turns: Busy %d, Waiting %d; want 0 and 0", b, w)
		}
		if st, err := e.g.Source(context.Background(), "e"); err != nil || st.Pending != 0 || st.Serving || st.WaitingForWorker {
			t.Errorf("source e after its turn: %+v %v; want nothing pending, not served, not waiting", st, err)
		}
		states, err := e.store.PendingSources(context.Background(), 0)
		if err != nil || len(states) != 0 {
			t.Errorf("pending sources %v %v; want every input answered", states, err)
		}
		cancel()
		<-done
	})
}
