package cli_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentrt/agentrt/internal/cli"
	"github.com/agentrt/agentrt/internal/testenv"
	"github.com/agentrt/agentrt/session"
)

// stuckModuleBound is how long after SIGTERM a process whose gateway
// holds a module that ignores its context may take to exit: the server's
// grace (1 s here) for its streams, then the gateway's (the same 1 s) for
// the module, then the runner's and the store's close; well under the
// module's own time limit (an hour).
const stuckModuleBound = 15 * time.Second

// SIGTERM while a gateway module that ignores its context holds a turn:
// agentrt serve and agentrt gateway abandon it after the shutdown grace,
// say so, and exit 0; the turn's input stays pending for the next
// process.
func TestProcessStopAbandonsAStuckModule(t *testing.T) {
	t.Parallel()
	testenv.SkipShort(t, "runs child processes")
	const config = demoConfig + "server: {shutdown_grace: 1s}\n"
	stuck := []string{"AGENTRT_GATE=stuck"}
	check := func(t *testing.T, e *env, code int, took time.Duration, stderr string) {
		t.Helper()
		if code != cli.ExitOK {
			t.Fatalf("exit %d after SIGTERM; stderr:\n%s", code, stderr)
		}
		if took > stuckModuleBound {
			t.Errorf("took %s to exit after SIGTERM, want at most %s", took, stuckModuleBound)
		}
		if !strings.Contains(stderr, "module stuck: still running 1s after its turn was stopped (it ignores its context): abandoned") {
			t.Errorf("the log does not say the module was abandoned:\n%s", stderr)
		}
		if ins := e.inputs("chat"); len(ins) != 1 || ins[0].State != session.InputPending {
			t.Errorf("inbox %+v, want the turn's input pending", ins)
		}
	}
	t.Run("serve", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, config, nil)
		s := startServe(t, e, stuck)
		e.sent("--source", "chat", "hi")
		s.waitLog(blockedLine("stuck"))
		code, took := s.stop()
		check(t, e, code, took, s.stderrText())
	})
	t.Run("gateway", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, config, nil)
		g := startChild(t, e.dir, stuck, "--config", e.config, "gateway")
		e.sent("--source", "chat", "hi")
		g.waitStderr(blockedLine("stuck"))
		start := time.Now()
		g.signal(syscall.SIGTERM)
		code := g.wait()
		took := time.Since(start)
		check(t, e, code, took, g.stderrText())
		if !strings.Contains(g.stderrText(), "agentrt gateway: stopped") {
			t.Errorf("agentrt gateway did not say it stopped:\n%s", g.stderrText())
		}
	})
}

// A module abandoned at its time limit is counted while it runs on:
// agentrt serve's /metrics says so.
func TestServeCountsAbandonedModules(t *testing.T) {
	t.Parallel()
	testenv.SkipShort(t, "runs agentrt serve")
	e := newEnv(t, demoConfig, nil)
	s := startServe(t, e, []string{"AGENTRT_GATE=stuck", "AGENTRT_STUCK_TIMEOUT=100ms"})
	e.sent("--source", "chat", "hi")
	s.waitLog("module stuck: timed out after 100ms")
	b := s.metrics()
	if !strings.Contains(b, "\nagentrt_gateway_modules_abandoned 1\n") {
		t.Errorf("/metrics does not count the abandoned module:\n%s", b)
	}
	s.stopOK()
}

// Turns past gateway.workers wait for a free worker, and agentrt serve
// says so: a warning in its log, and the gauges of busy workers and
// waiting sources in /metrics.
func TestServeShowsTurnsWaitingForAWorker(t *testing.T) {
	t.Parallel()
	testenv.SkipShort(t, "runs agentrt serve")
	e := newEnv(t, demoConfig+"gateway: {workers: 1}\nserver: {shutdown_grace: 1s}\n", nil)
	s := startServe(t, e, []string{"AGENTRT_GATE=stuck"})
	e.sent("--source", "chat", "hi")
	s.waitLog(blockedLine("stuck"))
	// A session's own input, posted while the one worker is held: the
	// session says its turn queues.
	post := func(path, body string, want int) {
		t.Helper()
		resp, err := http.Post(s.url+path, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Fatalf("POST %s: %d %s; want %d", path, resp.StatusCode, b, want)
		}
	}
	post("/v1/sessions", `{"id":"queued"}`, http.StatusCreated)
	post("/v1/sessions/queued/messages", `{"text":"hello"}`, http.StatusAccepted)
	s.waitLog("turns wait for a free gateway worker")
	resp, err := http.Get(s.url + "/v1/sessions/queued")
	if err != nil {
		t.Fatal(err)
	}
	var info struct {
		Status string `json:"status"`
		Queued *struct {
			Inputs  int       `json:"inputs"`
			Since   time.Time `json:"since"`
			Waiting string    `json:"waiting"`
		} `json:"queued"`
	}
	err = json.NewDecoder(resp.Body).Decode(&info)
	resp.Body.Close()
	if err != nil || info.Queued == nil || info.Queued.Inputs != 1 || info.Queued.Waiting != "worker" || info.Queued.Since.IsZero() {
		t.Errorf("GET /v1/sessions/queued: %+v %v; want queued: 1 input waiting for a worker, since when", info.Queued, err)
	}
	b := s.metrics()
	for _, want := range []string{"\nagentrt_gateway_workers_busy 1\n", "\nagentrt_gateway_sources_waiting 1\n"} {
		if !strings.Contains(b, want) {
			t.Errorf("/metrics lacks %q:\n%s", strings.TrimSpace(want), b)
		}
	}
	if !strings.Contains(s.stderrText(), "busy=1 waiting=1") {
		t.Errorf("the warning does not say how many:\n%s", s.stderrText())
	}
	code, _ := s.stop()
	if code != cli.ExitOK {
		t.Errorf("exit %d after SIGTERM; stderr:\n%s", code, s.stderrText())
	}
}
