package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/internal/fakellm"
	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/model/openai"
	"github.com/agentrt/agentrt/server"
	"github.com/agentrt/agentrt/session"
	"github.com/agentrt/agentrt/session/memstore"
)

// The benchmarks of the HTTP API, each against a floor measured in the
// same run: a plain net/http handler that runs the same turn in memory
// (Runner.Run over memstore, no gateway, no auth, no watch) and writes
// the same events as SSE (floor, load_fixture_test.go). The server runs
// over memstore too unless a name says otherwise, so that the difference
// is what the server adds: the request's auth and logging, the input
// stored in the inbox and taken by the gateway's worker, the watch that
// streams the run's events, the client's buffer. docs/benchmarks.md has
// the figures, the bars and the commands.

// target is what a benchmark drives: the server or the floor.
type target struct {
	url   string
	path  func(id string) string // POST it {"text": …}: the turn's SSE
	r     *agentrt.Runner
	store session.Store
	conns *connCount
	// settle waits until the server is idle after its streams ended
	// (the gateway's workers let go of their sources); nil: at once.
	settle func(context.Context) error
	srv    *loadServer // nil for the floor
}

// workload is the turn the benchmarks of the HTTP API take: "echo", the
// echo model's one reply, in process; "tools", the workload of issue 28 —
// 4 model calls through the OpenAI client to a fake OpenAI server on
// loopback (internal/fakellm), the first 3 of which call the tool add.
var workload = flag.String("bench.workload", "echo", "the benchmarks' turn: echo or tools")

// agentModel is the model of a target's agent for the workload: m, or
// an OpenAI client of a fake server of its own that takes m's delay.
func agentModel(b *testing.B, m *slowEcho) model.Model {
	switch *workload {
	case "echo":
		return m
	case "tools":
		srv := fakellm.StartWith(b, fakellm.Options{ToolRounds: 3, Delay: m.delay, Forget: true})
		llm, err := openai.New(openai.Config{Model: "gpt-test", BaseURL: srv.URL + "/v1", APIKey: "test",
			HTTPClient: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 2048}}})
		if err != nil {
			b.Fatal(err)
		}
		return llm
	}
	b.Fatalf("-bench.workload %q: want echo or tools", *workload)
	return nil
}

// checkWorkload checks that a turn's stream is the workload's.
func checkWorkload(id string, evs []sseEvent) error {
	if *workload != "tools" {
		return nil
	}
	calls, results := 0, 0
	for _, e := range evs {
		switch e.typ {
		case "model_finished":
			calls++
		case "tool_result":
			results++
		}
	}
	if calls != 4 || results != 3 {
		var why []string
		for _, e := range evs {
			switch e.typ {
			case "control", "interrupted", "error", "run_finished":
				b, _ := json.Marshal(e.ev)
				why = append(why, string(b))
			}
		}
		return fmt.Errorf("session %s: %d model calls and %d tool results, want 4 and 3: %v\n%s", id, calls, results, typesOf(evs), strings.Join(why, "\n"))
	}
	return nil
}

func floorTarget(b *testing.B, m *slowEcho, route string) target {
	f := newFloor(b, agentModel(b, m))
	return target{url: f.http.URL, path: func(id string) string { return route + id }, r: f.r, store: f.r.Store(), conns: f.conns}
}

func serverTarget(b *testing.B, store session.Store, m *slowEcho, workers int) target {
	s := newLoadServer(b, loadOptions{store: store, model: m, llm: agentModel(b, m), workers: workers})
	return target{url: s.http.URL, path: messages, r: s.r, store: s.store, conns: s.conns, settle: s.settle, srv: s}
}

// targets are the floor and the server over memstore; with watch, the
// floor's turn through a watch between them (what of the server's cost
// is the watch's); with sqlite, the server over SQLite.
func targets(watch, sqlite bool) []string {
	names := []string{"floor"}
	if watch {
		names = append(names, "floor-watch")
	}
	names = append(names, "server")
	if sqlite {
		names = append(names, "server-sqlite")
		if os.Getenv("AGENTRT_TEST_POSTGRES") != "" {
			// Postgres as the tests reach it: the shared store's figures.
			names = append(names, "server-postgres")
		}
	}
	return names
}

// sub names a sub-benchmark of target name, as key=value so that
// benchstat can compare them: benchstat -col /target.
func sub(name string) string { return "target=" + name }

func newTarget(b *testing.B, name string, m *slowEcho, workers int) target {
	switch name {
	case "floor":
		return floorTarget(b, m, "/floor/")
	case "floor-watch":
		return floorTarget(b, m, "/watch/")
	case "server":
		return serverTarget(b, memstore.New(), m, workers)
	case "server-sqlite":
		return serverTarget(b, stores[0].open(b), m, workers)
	case "server-postgres":
		return serverTarget(b, stores[1].open(b), m, workers)
	}
	b.Fatalf("no target %q", name)
	return target{}
}

// sessions creates n sessions of the assistant, straight through the
// runner (the same for the floor and the server, and not timed).
func (t target) sessions(b *testing.B, n int) []string {
	b.Helper()
	ids := make([]string, n)
	for i := range ids {
		s, err := t.r.CreateSession(context.Background(), "assistant", "", nil)
		if err != nil {
			b.Fatal(err)
		}
		ids[i] = s.ID
	}
	return ids
}

// turn streams a turn of session id and checks the stream.
func (t target) turn(ctx context.Context, c *client, id, text string) error {
	body, err := c.open(ctx, "POST", t.path(id), `{"text":"`+text+`"}`)
	if err != nil {
		return err
	}
	defer body.Close()
	evs, err := readEvents(body, nil)
	if err != nil {
		return err
	}
	if _, err := checkStream(id, evs); err != nil {
		return err
	}
	return checkWorkload(id, evs)
}

// BenchmarkTurnLatency: one client, sequential turns, each a new session
// (created beforehand, not timed) answered by a model that takes no
// time: ns/op is the latency of a turn over HTTP, from the request to
// the stream's last byte. Bars (issue 28, on -bench.workload tools):
// memory ≤ 1.2×, SQLite ≤ 1.5× the floor.
func BenchmarkTurnLatency(b *testing.B) {
	for _, name := range targets(true, true) {
		b.Run(sub(name), func(b *testing.B) {
			tg := newTarget(b, name, &slowEcho{}, 0)
			c := newClient(b, tg.url, 1)
			ctx := context.Background()
			ids := tg.sessions(b, b.N)
			lat := make([]time.Duration, 0, b.N)
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				start := time.Now()
				if err := tg.turn(ctx, c, ids[i], "hello there"); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(start))
			}
			b.StopTimer()
			reportQuantiles(b, lat)
		})
	}
}

// BenchmarkThroughput: 16 clients, each taking turns back to back (each
// a new session, the model taking no time): ns/op is the time per turn
// across them, and turns/s its inverse. Bars (issue 28, on
// -bench.workload tools): memory ≥ 0.8×, SQLite ≥ 0.5× the floor.
func BenchmarkThroughput(b *testing.B) {
	const clients = 16
	for _, name := range targets(true, true) {
		b.Run(sub(name), func(b *testing.B) {
			tg := newTarget(b, name, &slowEcho{}, 0)
			c := newClient(b, tg.url, clients)
			ctx := context.Background()
			ids := tg.sessions(b, b.N)
			var next atomic.Int64
			b.ReportAllocs()
			b.ResetTimer()
			start := time.Now()
			var wg sync.WaitGroup
			for range clients {
				wg.Go(func() {
					for {
						i := next.Add(1) - 1
						if i >= int64(b.N) {
							return
						}
						if err := tg.turn(ctx, c, ids[i], "hello there"); err != nil {
							b.Error(err)
							return
						}
					}
				})
			}
			wg.Wait()
			b.StopTimer()
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "turns/s")
		})
	}
}

// BenchmarkConcurrentStreams: one op is 1,000 sessions each streaming a
// turn at once, the model taking 50 ms a reply, with 1,000 gateway
// workers (gateway.workers) so that all run at once. Bar: wall time ≤
// 1.2× floor. After the timed ops, one more op holds every run at its
// model call until all 1,000 streams are open, with the clients in a
// process of their own (clientProcess), and measures this process's
// heap then against before: heap-KB/session is the server's alone (its
// connection, the stream, the run); bar with SQLite ≤ 80 KB.
func BenchmarkConcurrentStreams(b *testing.B) {
	const sessions = 1000
	for _, name := range targets(false, true) {
		b.Run(sub(name), func(b *testing.B) {
			m := &slowEcho{delay: 50 * time.Millisecond}
			tg := newTarget(b, name, m, sessions)
			c := newClient(b, tg.url, sessions)
			ctx := context.Background()
			b.ResetTimer()
			for range b.N {
				b.StopTimer()
				ids := tg.sessions(b, sessions)
				b.StartTimer()
				if err := streamAll(ctx, c, ids, tg.path, nil, nil); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			if *workload != "echo" {
				return // the heap's op holds the echo model's replies
			}

			ids := tg.sessions(b, sessions)
			c.tr.CloseIdleConnections()
			tg.conns.waitClosed()
			if tg.settle != nil {
				if err := tg.settle(ctx); err != nil {
					b.Fatal(err)
				}
			}
			before := measureHeap()
			var open heap
			release := m.hold()
			err := clientProcess(b, tg.url, tg.path("{id}"), ids, func() {
				open = measureHeap()
				release()
			})
			release()
			if err != nil {
				b.Fatal(err)
			}
			inuse, _, g := open.per(before, sessions)
			b.ReportMetric(float64(inuse)/1024, "heap-KB/session")
			b.ReportMetric(g, "goroutines/session")
		})
	}
}

// clientEnv, when set, makes BenchmarkLoadClientProcess the client of a
// benchmark's server: streamAll in a process of its own.
const clientEnv = "AGENTRT_LOAD_CLIENT"

// clientProcess runs streamAll against the server at url in another
// process (this test binary again, BenchmarkLoadClientProcess), so that what
// the clients hold is not in this process's heap: path is a session's
// stream, "{id}" standing for its id. It calls started once the client
// says that every stream has its run_started, and returns when the
// client is done: an error if a stream failed its checks.
func clientProcess(b *testing.B, url, path string, ids []string, started func()) error {
	cmd := exec.Command(os.Args[0], "-test.run=^$", "-test.bench=^BenchmarkLoadClientProcess$", "-test.benchtime=1x", "-test.count=1")
	cmd.Env = append(os.Environ(), clientEnv+"="+url)
	cmd.Stdin = strings.NewReader(path + "\n" + strings.Join(ids, "\n") + "\n")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	said := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(out)
		opened := false
		for sc.Scan() {
			if sc.Text() == "open" && !opened {
				opened = true
				said <- true
			}
		}
		if !opened {
			said <- false
		}
	}()
	if <-said {
		started()
	}
	if err := cmd.Wait(); err != nil {
		return fmt.Errorf("the client process: %v\n%s", err, stderr.String())
	}
	return nil
}

// BenchmarkLoadClientProcess is the client process of clientProcess, not
// a measure of its own: without AGENTRT_LOAD_CLIENT (clientProcess sets
// it) it returns at once.
func BenchmarkLoadClientProcess(t *testing.B) {
	url := os.Getenv(clientEnv)
	if url == "" {
		return
	}
	in, err := io.ReadAll(os.Stdin)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Fields(string(in))
	path, ids := lines[0], lines[1:]
	c := newClient(t, url, len(ids))
	err = streamAll(context.Background(), c, ids, func(id string) string { return strings.ReplaceAll(path, "{id}", id) }, nil, func() {
		fmt.Println("open")
	})
	if err != nil {
		t.Fatal(err)
	}
}

// BenchmarkPausedClient: 16 clients take turns back to back (each a new
// session) while, in "paused", one more client holds a stream it does not
// read: the events of a session whose log (about 10 MB) is more than the
// socket buffers and the server's buffer for a client (1,024 events)
// hold, so that the server's writer for it is blocked and its reader
// waits for it, for the whole measurement. The log is there in "alone"
// too (the same heap for the garbage collector), only nobody streams it.
// p99-ms is the other clients' p99 latency of a turn; bar: paused ≤ 1.05×
// alone. The model takes no time (model=0ms) or 50 ms a reply
// (model=50ms). benchstat -col /client compares them.
func BenchmarkPausedClient(b *testing.B) {
	const clients = 16
	for _, delay := range []time.Duration{0, 50 * time.Millisecond} {
		for _, paused := range []bool{false, true} {
			name := fmt.Sprintf("model=%dms/client=alone", delay.Milliseconds())
			if paused {
				name = fmt.Sprintf("model=%dms/client=paused", delay.Milliseconds())
			}
			b.Run(name, func(b *testing.B) {
				m := &slowEcho{}
				tg := serverTarget(b, memstore.New(), m, 0)
				c := newClient(b, tg.url, clients)
				ctx := context.Background()
				backlog, last := fillBacklog(b, tg)
				if paused {
					stop := pauseAClient(b, tg, last)
					defer stop()
				}
				m.delay = delay // no run is running: the backlog was written without it
				ids := tg.sessions(b, b.N)
				lat := make([]time.Duration, b.N)
				var next atomic.Int64
				b.ResetTimer()
				var wg sync.WaitGroup
				for range clients {
					wg.Go(func() {
						for {
							i := next.Add(1) - 1
							if i >= int64(b.N) {
								return
							}
							start := time.Now()
							if err := tg.turn(ctx, c, ids[i], "hello there"); err != nil {
								b.Error(err)
								return
							}
							lat[i] = time.Since(start)
						}
					})
				}
				wg.Wait()
				b.StopTimer()
				reportQuantiles(b, lat)
				b.ReportMetric(backlog, "backlog-MB")
			})
		}
	}
}

// fillBacklog fills session "paused" with about 10 MB of events (200
// turns of 16 words of 1,000 characters), written by a runner of its own
// on the server's store, as another process would, with compaction off so
// that the history only grows. It returns the log's size in MB and its
// last seq.
func fillBacklog(b *testing.B, tg target) (mbytes float64, last int64) {
	b.Helper()
	ctx := context.Background()
	a := loadAgent(b, &slowEcho{})
	a.Compaction.Off = true
	filler, err := agentrt.NewRunner(agentrt.Config{Store: tg.store, Agents: []*agentrt.Agent{a}})
	if err != nil {
		b.Fatal(err)
	}
	word := strings.Repeat("x", 999) + " "
	text := strings.TrimSpace(strings.Repeat(word, 16))
	s, err := filler.CreateSession(ctx, "assistant", "paused", nil)
	if err != nil {
		b.Fatal(err)
	}
	for range 200 {
		res, err := agentrt.Collect(filler.Run(ctx, s.ID, agentrt.Input{Text: text}))
		if err != nil || res.Status != session.StatusDone {
			b.Fatalf("filling the paused session: %+v %v", res, err)
		}
	}
	if err := filler.Close(ctx); err != nil {
		b.Fatal(err)
	}
	size := 0
	for ev, err := range tg.store.Events(ctx, s.ID, 0) {
		if err != nil {
			b.Fatal(err)
		}
		j, _ := ev.AppendJSON(nil)
		size += len(j)
		last = ev.Seq
	}
	return float64(size) / (1 << 20), last
}

// pauseAClient opens a stream of session "paused" from the start and
// does not read it. stop checks what the server did with it and what the
// client got: a server holds a client that takes nothing for WriteTimeout
// (30 s), then drops it; so within that time the server must still hold
// the stream, and after it may have dropped it. The client then reads
// what came (1, 2, … in order, up to last, a reconnect event or the
// stream's end) and, if that is not all, reconnects with Last-Event-ID
// and must get exactly the rest. stop reports how long the client was
// paused (paused-s) and whether the server dropped it (dropped).
func pauseAClient(b *testing.B, tg target, last int64) (stop func()) {
	b.Helper()
	ctx := context.Background()
	pc := newClient(b, tg.url, 1)
	body, err := pc.open(ctx, "GET", "/v1/sessions/paused/events", "")
	if err != nil {
		b.Fatal(err)
	}
	// The first event says the server's pump has the stream; then the
	// client reads nothing more until stop. (br holds what it read ahead.)
	br := bufio.NewReader(body)
	first, err := readEvents(br, func(sseEvent) bool { return true })
	if err != nil || len(first) != 1 {
		b.Fatalf("the paused stream's first event: %v %v", typesOf(first), err)
	}
	start := time.Now()
	return func() {
		defer body.Close()
		paused := time.Since(start)
		held := tg.srv.srv.Clients()
		if paused < server.DefaultWriteTimeout && held != 1 {
			b.Errorf("after %v paused the server holds %d streams, want the paused one (it may drop it after %v)", paused, held, server.DefaultWriteTimeout)
		}
		evs, err := readEvents(br, func(e sseEvent) bool { return e.seq == last || e.typ == "reconnect" })
		if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
			b.Fatal(err)
		}
		got, err := committed("paused", 0, append(first, evs...))
		if err != nil {
			b.Fatal(err)
		}
		if int64(len(got)) < last {
			rest, err := pc.open(ctx, "GET", "/v1/sessions/paused/events", "", "Last-Event-ID", strconv.Itoa(len(got)))
			if err != nil {
				b.Fatal(err)
			}
			more, err := readEvents(rest, func(e sseEvent) bool { return e.seq == last })
			rest.Close()
			if err != nil {
				b.Fatal(err)
			}
			if _, err := committed("paused", int64(len(got)), more); err != nil {
				b.Fatalf("the reconnect after %d: %v", len(got), err)
			}
		}
		b.ReportMetric(paused.Seconds(), "paused-s")
		dropped := 0.0
		if held == 0 {
			dropped = 1
		}
		b.ReportMetric(dropped, "dropped")
	}
}

// reportQuantiles reports the p50 and p99 of lat in ms.
func reportQuantiles(b *testing.B, lat []time.Duration) {
	if len(lat) == 0 {
		return
	}
	s := slices.Clone(lat)
	slices.Sort(s)
	q := func(p float64) float64 { return float64(s[min(len(s)-1, int(p*float64(len(s))))]) / 1e6 }
	b.ReportMetric(q(0.50), "p50-ms")
	b.ReportMetric(q(0.99), "p99-ms")
}

var waitingMany = flag.Int("waiting.many", 100_000, "BenchmarkWaitingSessions: how many sessions wait at the second measure")

// BenchmarkWaitingSessions: sessions waiting for a person, made as
// TestLoadWaitingSessionsHoldNothing makes them (a turn each through the
// server's runner, on SQLite), 1,000 and then -waiting.many (100,000);
// at each, the server lists them all, and the goroutines and the heap are
// measured (goroutines-1k, heap-MB-1k, … -100k; live-MB: the live
// objects alone). One op makes them all: run it with -benchtime 1x
// (minutes: about 1,000 turns a second here).
func BenchmarkWaitingSessions(b *testing.B) {
	few, many := 1000, *waitingMany
	ctx := context.Background()
	for range b.N {
		b.StopTimer()
		s := newLoadServer(b, loadOptions{store: stores[0].open(b)})
		c := newClient(b, s.http.URL, 4)
		b.StartTimer()
		if err := makeWaiting(ctx, s.r, 0, few); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		base, err := waitingHeap(ctx, s, c, few)
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		if err := makeWaiting(ctx, s.r, few, many); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		more, err := waitingHeap(ctx, s, c, many)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(base.goroutines), "goroutines-1k")
		b.ReportMetric(float64(more.goroutines), fmt.Sprintf("goroutines-%dk", many/1000))
		b.ReportMetric(mb(base.inuse), "heap-MB-1k")
		b.ReportMetric(mb(more.inuse), fmt.Sprintf("heap-MB-%dk", many/1000))
		b.ReportMetric(mb(base.alloc), "live-MB-1k")
		b.ReportMetric(mb(more.alloc), fmt.Sprintf("live-MB-%dk", many/1000))
	}
}
