package cli_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"

	"github.com/agentrt/agentrt/internal/testenv"
)

// Node clients of agentrt serve, from testdata/node (the test command
// installs their npm packages): a browser's EventSource, and Node's own
// fetch reading the stream.

// nodeScript returns the path of a script of testdata/node, with node's
// path. Without node or the packages, the test is skipped, except under
// CI (CI set), where it fails: the test command installs both.
func nodeScript(t *testing.T, name string) (node, script string) {
	t.Helper()
	node = needTool(t, "node")
	_, file, _, _ := runtime.Caller(0)
	dir := filepath.Join(filepath.Dir(file), "..", "..", "testdata", "node")
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "eventsource", "package.json")); err != nil {
		t.Fatalf("the npm packages of testdata/node are not installed (scripts/test.sh installs them, or npm ci --prefix testdata/node): %v", err)
	}
	return node, filepath.Join(dir, name)
}

// nodeLine is a line a script of testdata/node prints.
type nodeLine struct {
	Kind    string `json:"kind"` // open, event, reconnect, dropped
	Type    string `json:"type"`
	ID      string `json:"id"`
	Last    int64  `json:"last"`
	Message string `json:"message"`
}

// nodeClient is a script of testdata/node following an event stream.
type nodeClient struct {
	t     *testing.T
	lines chan nodeLine // closed when its output ends
	done  chan struct{} // closed when it has exited
	errb  bytes.Buffer
	err   error // set before done closes
	seen  []nodeLine
}

func startNode(t *testing.T, script, url string, runs int) *nodeClient {
	t.Helper()
	node, path := nodeScript(t, script)
	ctx, cancel := context.WithTimeout(t.Context(), procTimeout)
	cmd := exec.CommandContext(ctx, node, path, url, strconv.Itoa(runs))
	nc := &nodeClient{t: t, lines: make(chan nodeLine, 1024), done: make(chan struct{})}
	cmd.Stderr = &nc.errb
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(nc.done)
		defer cancel()
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			var l nodeLine
			if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
				l = nodeLine{Kind: "garbage", Message: sc.Text()}
			}
			nc.lines <- l
		}
		close(nc.lines)
		nc.err = cmd.Wait()
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-nc.done
	})
	return nc
}

// until reads lines until one that stop accepts.
func (nc *nodeClient) until(what string, stop func(nodeLine) bool) {
	nc.t.Helper()
	for l := range nc.lines {
		nc.seen = append(nc.seen, l)
		if stop(l) {
			return
		}
	}
	<-nc.done
	nc.t.Fatalf("the node client ended (%v) before %s; it printed %+v\nstderr:\n%s", nc.err, what, nc.seen, nc.errb.String())
}

// finish reads the rest of the output and expects the script to exit 0.
func (nc *nodeClient) finish() []nodeLine {
	nc.t.Helper()
	for l := range nc.lines {
		nc.seen = append(nc.seen, l)
	}
	<-nc.done
	if nc.err != nil {
		nc.t.Fatalf("the node client: %v; it printed %+v\nstderr:\n%s", nc.err, nc.seen, nc.errb.String())
	}
	return nc.seen
}

// A Node client follows a session's event stream; the server that serves
// it stops (SIGTERM) and another starts on the same address and store. The
// client reconnects by itself with the last id it had, and gets every
// event once: the first turn's from the first server, the second turn's
// (run on the second server) after the restart. With EventSource, as a
// browser page would, and with Node 20's fetch.
func TestServeProcessNodeClientsResume(t *testing.T) {
	t.Parallel()
	testenv.SkipShort(t, "runs agentrt serve and node")
	for _, script := range []string{"sse-resume.mjs", "sse-fetch.mjs"} {
		t.Run(script, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, demoConfig, nil)
			s1 := startServe(t, e, nil)
			api := newAPI(t, s1.url, "")
			api.createSession("s1")
			first := lastID(t, api.turn("s1", "what is 21*2+5"))

			nc := startNode(t, script, s1.url+"/v1/sessions/s1/events", 2)
			nc.until("the first turn's last event", func(l nodeLine) bool { return l.Kind == "event" && l.ID == itoa(first) })
			s1.stopOK()
			nc.until("the server's reconnect event", func(l nodeLine) bool { return l.Kind == "reconnect" })

			s2 := startServe(t, e, nil, "--addr", "127.0.0.1:"+s1.port())
			newAPI(t, s2.url, "").send("s1", "what is 2+3")
			lines := nc.finish()
			s2.stopOK()

			var evs []sseEvent
			opens := 0
			for _, l := range lines {
				switch l.Kind {
				case "open":
					opens++
				case "event":
					evs = append(evs, sseEvent{ID: l.ID, Event: l.Type})
				case "reconnect":
					if l.Last != first {
						t.Errorf("reconnect from %d, want %d", l.Last, first)
					}
				case "dropped":
				default:
					t.Errorf("the client printed %+v", l)
				}
			}
			if opens < 2 {
				t.Errorf("the client opened %d connection(s), want one to each server; it printed %+v", opens, lines)
			}
			last := lastID(t, evs)
			checkIDs(t, script, evs, 1, last)
			if fin := eventsOf(evs, "run_finished"); len(fin) != 2 || fin[1].ID != itoa(last) {
				t.Errorf("run_finished events %v, want the two turns', the second last", fin)
			}
			logged := parseEvents(t, newProcChild(t, e).mustOut("--config", e.config, "sessions", "events", "s1", "--json"))
			if n := logged[len(logged)-1].Seq; n != last {
				t.Errorf("the log ends at %d, the client at %d", n, last)
			}
		})
	}
}

// A run that fails ends with an error event: the Node clients get it with
// its id, like any other. In a page, EventSource hands an event named
// "error" to the same listener as a broken connection (onerror), as a
// MessageEvent with data where a broken connection has none;
// sse-resume.mjs tells them apart that way.
func TestServeProcessNodeClientsSeeAFailedRun(t *testing.T) {
	t.Parallel()
	testenv.SkipShort(t, "runs agentrt serve and node")
	for _, script := range []string{"sse-resume.mjs", "sse-fetch.mjs"} {
		t.Run(script, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, `
models:
  s: {provider: scripted, script: fail.yaml}
agents:
  assistant: {model: s}
`, map[string]string{"fail.yaml": "replies:\n  - error: the provider refused the key\n    error_code: auth\n"})
			s := startServe(t, e, nil)
			api := newAPI(t, s.url, "")
			api.createSession("s1")
			evs := api.turn("s1", "hi")
			if st := runStatus(t, evs[len(evs)-1]); st != "failed" {
				t.Fatalf("the run ended %s, want failed", st)
			}
			last := lastID(t, evs)

			var got []sseEvent
			for _, l := range startNode(t, script, s.url+"/v1/sessions/s1/events", 1).finish() {
				if l.Kind == "event" {
					got = append(got, sseEvent{ID: l.ID, Event: l.Type})
				}
			}
			checkIDs(t, script, got, 1, last)
			if errs := eventsOf(got, "error"); len(errs) != 1 || errs[0].ID != itoa(last-1) {
				t.Errorf("error events %v, want the one before run_finished", errs)
			}
			s.stopOK()
		})
	}
}
