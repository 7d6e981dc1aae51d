package temporal_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentrt/agentrt/internal/app"
	"github.com/agentrt/agentrt/internal/cli"
	"github.com/agentrt/agentrt/internal/pgtest"
	"github.com/agentrt/agentrt/session"
	"github.com/agentrt/agentrt/session/postgres"
	"github.com/agentrt/agentrt/temporal"
	"github.com/agentrt/agentrt/temporal/internal/glue"
	"github.com/agentrt/agentrt/tool"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/log"
	"google.golang.org/protobuf/proto"
)

// TestMain runs the CLI when this test binary is a child process (agentrt
// serve or agentrt worker with the Temporal engine and childTools).
func TestMain(m *testing.M) {
	if os.Getenv("AGENTRT_TEMPORAL_CHILD") == "1" {
		os.Exit(cli.Execute(os.Args[1:], cli.Streams{In: os.Stdin, Out: os.Stdout, Err: os.Stderr},
			glue.Options(app.Options{ExtraTools: childTools()})))
	}
	os.Exit(m.Run())
}

// childTools are the children's extra tools: slow says "[test] slow
// blocks KEY" on stderr, appends "start KEY PID" to AGENTRT_JOURNAL, waits
// until the file AGENTRT_RELEASE exists, then appends "done KEY PID" — a
// side effect whose every start and completion a test counts across
// processes.
func childTools() []tool.Tool {
	slow := tool.Must(tool.New("slow", "deploys, slowly", func(ctx context.Context, _ struct{}) (string, error) {
		info, _ := tool.CallInfoFrom(ctx)
		key := info.IdempotencyKey
		journal := func(what string) error {
			f, err := os.OpenFile(os.Getenv("AGENTRT_JOURNAL"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
			if err != nil {
				return err
			}
			_, err = fmt.Fprintf(f, "%s %s %d\n", what, key, os.Getpid())
			return errors.Join(err, f.Close())
		}
		if err := journal("start"); err != nil {
			return "", err
		}
		fmt.Fprintln(os.Stderr, "[test] slow blocks "+key)
		t := time.NewTicker(20 * time.Millisecond)
		defer t.Stop()
		for {
			if _, err := os.Stat(os.Getenv("AGENTRT_RELEASE")); err == nil {
				break
			}
			select {
			case <-ctx.Done():
				return "", ctx.Err()
			case <-t.C: // polls the release file: another process writes it
			}
		}
		if err := journal("done"); err != nil {
			return "", err
		}
		return "deployed", nil
	}))
	// hold waits until the file AGENTRT_HOLD exists (a turn that runs
	// while the test sends more input).
	hold := tool.Must(tool.New("hold", "paints, slowly", func(ctx context.Context, _ struct{}) (string, error) {
		t := time.NewTicker(20 * time.Millisecond)
		defer t.Stop()
		for {
			if _, err := os.Stat(os.Getenv("AGENTRT_HOLD")); err == nil {
				return "painted", nil
			}
			select {
			case <-ctx.Done():
				return "", ctx.Err()
			case <-t.C: // polls the file: the test writes it
			}
		}
	}))
	return []tool.Tool{slow, hold}
}

// procTimeout bounds each child process and each wait of these tests.
const procTimeout = 3 * time.Minute

// temporalCLI is the Temporal CLI the test command built (AGENTRT_TEMPORAL_CLI),
// or one on PATH; without it the test skips, except under CI, where it fails.
func temporalCLI(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("AGENTRT_TEMPORAL_CLI"); p != "" {
		return p
	}
	if p, err := exec.LookPath("temporal"); err == nil {
		return p
	}
	if os.Getenv("CI") != "" {
		t.Fatal("AGENTRT_TEMPORAL_CLI is not set: the test command builds the Temporal CLI (scripts/test.sh)")
	}
	t.Skip("no Temporal CLI (make test builds one and sets AGENTRT_TEMPORAL_CLI)")
	return ""
}

// freePort is a port of 127.0.0.1 free a moment ago.
func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// devServer starts `temporal server start-dev` on 127.0.0.1 (in memory,
// no UI) and returns its frontend's address and a client of it.
func devServer(t testing.TB) (string, client.Client) {
	t.Helper()
	bin := temporalCLI(t)
	port := freePort(t)
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, "server", "start-dev", "--ip", "127.0.0.1", "--port", fmt.Sprint(port),
		"--headless", "--log-level", "error", "--http-port", fmt.Sprint(freePort(t)), "--metrics-port", fmt.Sprint(freePort(t)))
	cmd.Stdout, cmd.Stderr = io.Discard, io.Discard
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		_ = cmd.Wait()
	})
	deadline := time.Now().Add(procTimeout)
	for {
		dctx, dcancel := context.WithTimeout(context.Background(), 5*time.Second)
		c, err := client.DialContext(dctx, client.Options{HostPort: addr, Logger: log.NewStructuredLogger(slog.New(slog.DiscardHandler))})
		if err == nil {
			_, err = c.CheckHealth(dctx, &client.CheckHealthRequest{})
		}
		dcancel()
		if err == nil {
			t.Cleanup(c.Close)
			return addr, c
		}
		if c != nil {
			c.Close()
		}
		if time.Now().After(deadline) {
			t.Fatalf("the dev server did not come up: %v", err)
		}
		time.Sleep(100 * time.Millisecond) // the dev server starts in a few seconds; this polls its health
	}
}

// child is a running agentrt process.
type child struct {
	t    *testing.T
	cmd  *exec.Cmd
	mu   sync.Mutex
	err  []string // its stderr, by line
	more chan struct{}
	done chan struct{}
}

func startChild(t *testing.T, dir string, env []string, args ...string) *child {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), procTimeout)
	t.Cleanup(cancel)
	cmd := exec.CommandContext(ctx, os.Args[0], args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), append([]string{"AGENTRT_TEMPORAL_CHILD=1"}, env...)...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout = io.Discard
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &child{t: t, cmd: cmd, more: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(c.done)
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			c.mu.Lock()
			c.err = append(c.err, sc.Text())
			close(c.more)
			c.more = make(chan struct{})
			c.mu.Unlock()
		}
		_ = cmd.Wait()
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-c.done:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-c.done
		}
		if t.Failed() {
			c.mu.Lock()
			t.Logf("%v stderr:\n%s", args, strings.Join(c.err, "\n"))
			c.mu.Unlock()
		}
	})
	return c
}

// wait returns the first line of c's stderr matching re, waiting for it
// (ok false: c ended first, or the time is up).
func (c *child) wait(re *regexp.Regexp, d time.Duration) (string, bool) {
	timer := time.NewTimer(d)
	defer timer.Stop()
	seen := 0
	for {
		c.mu.Lock()
		lines, more := c.err, c.more
		c.mu.Unlock()
		for ; seen < len(lines); seen++ {
			if re.MatchString(lines[seen]) {
				return lines[seen], true
			}
		}
		select {
		case <-more:
		case <-c.done:
			return "", false
		case <-timer.C:
			return "", false
		}
	}
}

var servingAddr = regexp.MustCompile(`"?addr"?[=:]"?(http://[0-9.]+:[0-9]+)`)

// deployment is an agentrt serve and two agentrt workers with engine:
// temporal on one Postgres schema and a dev server.
type deployment struct {
	t       *testing.T
	dir     string
	url     string
	workers []*child
	serve   *child
	tc      client.Client
	journal string
	release string
	hold    string
	queue   string
	dsn     string
}

func deploy(t *testing.T) *deployment {
	t.Helper()
	addr, tc := devServer(t)
	dsn, _ := pgtest.Schema(t)
	dir := t.TempDir()
	d := &deployment{t: t, dir: dir, tc: tc, journal: filepath.Join(dir, "journal"), release: filepath.Join(dir, "release"),
		hold: filepath.Join(dir, "hold"), queue: "agentrt-" + filepath.Base(dir), dsn: dsn}
	write := func(name, body string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("talker.yaml", "replies:\n  - text: \"Hello from a worker of Temporal, word by word.\"\n    chunks: 8\n    delay: 200ms\n")
	write("deployer.yaml", "replies:\n  - tool_calls: [{name: slow, arguments: {}}]\n  - text: deployed, once\n    expect: {last_tool_result_contains: deployed}\n")
	var counter strings.Builder
	counter.WriteString("replies:\n")
	for i := range 100 {
		fmt.Fprintf(&counter, "  - text: \"answer %d\"\n", i+1)
	}
	write("counter.yaml", counter.String())
	write("manager.yaml", "replies:\n  - tool_calls: [{name: helper, arguments: {task: \"compute 6*7\"}}]\n  - text: The helper says 42.\n    expect: {last_tool_result_contains: \"42\"}\n")
	write("helper.yaml", "replies:\n  - text: \"42\"\n")
	write("painter.yaml", "replies:\n  - tool_calls: [{name: hold, arguments: {}}]\n  - text: red and blue\n    expect: {last_user_contains: \"and the blue one\"}\n")
	write("approver.yaml", "replies:\n  - tool_calls: [{name: slow, arguments: {}}]\n  - text: approved and deployed\n")
	write("agentrt.yaml", fmt.Sprintf(`store: %q
lease_ttl: 2s
control_poll: 100ms
engine: temporal
temporal: {address: %q, task_queue: %q, heartbeat_timeout: 3s}
server: {shutdown_grace: 1s}
models:
  talker: {provider: scripted, script: talker.yaml}
  deployer: {provider: scripted, script: deployer.yaml}
  approver: {provider: scripted, script: approver.yaml}
  counter: {provider: scripted, script: counter.yaml}
  manager: {provider: scripted, script: manager.yaml}
  helper: {provider: scripted, script: helper.yaml}
  painter: {provider: scripted, script: painter.yaml}
agents:
  talker: {model: talker}
  deployer: {model: deployer, tools: [slow]}
  approver: {model: approver, tools: [slow], approval: {ask: [slow]}}
  counter: {model: counter}
  manager: {model: manager, tools: [helper]}
  helper: {model: helper}
  painter: {model: painter, tools: [hold], gateway: {policy: steer}}
`, dsn, addr, d.queue))
	env := []string{"AGENTRT_JOURNAL=" + d.journal, "AGENTRT_RELEASE=" + d.release, "AGENTRT_HOLD=" + d.hold}
	ready := regexp.MustCompile(`agentrt worker: stepping`)
	for _, name := range []string{"worker-a", "worker-b"} {
		w := startChild(t, dir, append(env, "AGENTRT_OWNER="+name), "--config", "agentrt.yaml", "worker")
		if _, ok := w.wait(ready, procTimeout); !ok {
			t.Fatalf("%s did not start", name)
		}
		d.workers = append(d.workers, w)
	}
	d.serve = startChild(t, dir, append(env, "AGENTRT_OWNER=serve"), "--config", "agentrt.yaml", "serve", "--addr", "127.0.0.1:0")
	line, ok := d.serve.wait(regexp.MustCompile("serving"), procTimeout)
	if !ok {
		t.Fatal("agentrt serve did not start")
	}
	m := servingAddr.FindStringSubmatch(line)
	if m == nil {
		t.Fatalf("no address in %q", line)
	}
	d.url = m[1]
	return d
}

// post sends body to path and decodes the answer into out (when not
// nil); it returns the status.
func (d *deployment) post(path, body string, out any) int {
	d.t.Helper()
	res, err := http.Post(d.url+path, "application/json", strings.NewReader(body))
	if err != nil {
		d.t.Fatal(err)
	}
	defer res.Body.Close()
	if out != nil {
		_ = json.NewDecoder(res.Body).Decode(out)
	}
	return res.StatusCode
}

// sessionEvent is an event of the HTTP API.
type sessionEvent struct {
	Seq   int64           `json:"seq"`
	Type  string          `json:"type"`
	RunID string          `json:"run_id"`
	Data  json.RawMessage `json:"data"`
}

// watch reads session id's events over SSE from after seq until one
// for which stop is true, and returns them all (token events included).
func (d *deployment) watch(id string, after int64, stop func(sessionEvent) bool) []sessionEvent {
	d.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), procTimeout)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", fmt.Sprintf("%s/v1/sessions/%s/events?after=%d", d.url, id, after), nil)
	req.Header.Set("Accept", "text/event-stream")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		d.t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != 200 {
		b, _ := io.ReadAll(res.Body)
		d.t.Fatalf("watch %s: %d %s", id, res.StatusCode, b)
	}
	var out []sessionEvent
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var e sessionEvent
		if err := json.Unmarshal([]byte(data), &e); err != nil {
			continue
		}
		out = append(out, e)
		if stop(e) {
			return out
		}
	}
	d.t.Fatalf("the watch of %s ended before it should: %v (%d events)", id, sc.Err(), len(out))
	return nil
}

func finished(e sessionEvent) bool { return e.Type == "run_finished" }

// scheduled is an activity a session's workflow scheduled.
type scheduled struct{ name, queue, summary string }

// activities are the activities of every run of session id's workflow, in
// the order of its runs (newest first) and of their histories.
func (d *deployment) activities(id string) []scheduled {
	d.t.Helper()
	ctx := context.Background()
	wid := temporal.WorkflowID("default", id)
	page, err := d.tc.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Query: fmt.Sprintf("WorkflowId = %q", wid)})
	if err != nil {
		d.t.Fatal(err)
	}
	var out []scheduled
	for _, run := range page.Executions {
		it := d.tc.GetWorkflowHistory(ctx, wid, run.Execution.RunId, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		for it.HasNext() {
			e, err := it.Next()
			if err != nil {
				d.t.Fatal(err)
			}
			if a := e.GetActivityTaskScheduledEventAttributes(); a != nil {
				var summary string
				if p := e.GetUserMetadata().GetSummary(); p != nil {
					_ = json.Unmarshal(p.Data, &summary)
				}
				out = append(out, scheduled{a.ActivityType.Name, a.TaskQueue.Name, summary})
			}
		}
	}
	return out
}

// A deployment on Temporal: a turn streamed over SSE with the worker's
// live tokens; kill -9 of the worker running a tool → the other worker
// finishes the turn, the tool completed once (tried again with the same
// idempotency key); an approval answered over HTTP continues the run.
func TestOnTemporal(t *testing.T) {
	d := deploy(t)

	t.Run("live tokens over SSE", func(t *testing.T) {
		d.t = t
		if code := d.post("/v1/sessions", `{"id":"s1","agent":"talker"}`, nil); code != 201 && code != 200 {
			t.Fatalf("create: %d", code)
		}
		done := make(chan []sessionEvent, 1)
		go func() { done <- d.watch("s1", 0, finished) }()
		if code := d.post("/v1/sessions/s1/messages", `{"text":"hi"}`, nil); code != 202 {
			t.Fatalf("message: %d", code)
		}
		evs := <-done
		tokens, final := 0, -1
		for i, e := range evs {
			switch e.Type {
			case "token":
				if final < 0 {
					tokens++
				}
			case "final":
				final = i
			}
		}
		if tokens < 2 || final < 0 {
			t.Fatalf("%d tokens before the final (at %d) of %d events", tokens, final, len(evs))
		}
	})

	t.Run("kill -9 of the worker running a tool", func(t *testing.T) {
		d.t = t
		d.post("/v1/sessions", `{"id":"s2","agent":"deployer"}`, nil)
		if code := d.post("/v1/sessions/s2/messages", `{"text":"deploy"}`, nil); code != 202 {
			t.Fatalf("message: %d", code)
		}
		blocks := regexp.MustCompile(`\[test\] slow blocks`)
		var victim, other *child
		found := make(chan *child, 2)
		for _, w := range d.workers {
			go func() {
				if _, ok := w.wait(blocks, procTimeout); ok {
					found <- w
				}
			}()
		}
		select {
		case victim = <-found:
		case <-time.After(procTimeout):
			t.Fatal("no worker ran the tool")
		}
		for _, w := range d.workers {
			if w != victim {
				other = w
			}
		}
		if err := victim.cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		<-victim.done
		if err := os.WriteFile(d.release, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if _, ok := other.wait(blocks, procTimeout); !ok {
			t.Fatal("the other worker did not take the tool over")
		}
		evs := d.watch("s2", 0, finished)
		last := evs[len(evs)-1]
		if !strings.Contains(string(last.Data), `"status":"done"`) {
			t.Fatalf("the run ended %s", last.Data)
		}
		b, err := os.ReadFile(d.journal)
		if err != nil {
			t.Fatal(err)
		}
		var starts, dones []string
		for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			f := strings.Fields(l)
			switch f[0] {
			case "start":
				starts = append(starts, f[1])
			case "done":
				dones = append(dones, f[1])
			}
		}
		if len(dones) != 1 || len(starts) != 2 || starts[0] != starts[1] || dones[0] != starts[0] {
			t.Fatalf("the tool's journal: starts %v, dones %v (want two starts of one key, one completion)", starts, dones)
		}
		// The tool call was an activity of its own, on the queue of the
		// worker holding the session: the killed one's, then the other's.
		var tools []string
		for _, a := range d.activities("s2") {
			if a.name == temporal.ActivityTool {
				if a.summary != "tool slow" || !strings.HasPrefix(a.queue, d.queue+"@") {
					t.Errorf("a tool activity %+v", a)
				}
				tools = append(tools, a.queue)
			}
		}
		if len(tools) != 2 || tools[0] == tools[1] {
			t.Errorf("the tool's activities ran on %v: want two, on two workers' own queues", tools)
		}
		// The killed worker's place is taken: a new one for what follows.
		w := startChild(t, d.dir, []string{"AGENTRT_JOURNAL=" + d.journal, "AGENTRT_RELEASE=" + d.release, "AGENTRT_HOLD=" + d.hold, "AGENTRT_OWNER=worker-c"},
			"--config", "agentrt.yaml", "worker")
		if _, ok := w.wait(regexp.MustCompile(`agentrt worker: stepping`), procTimeout); !ok {
			t.Fatal("worker-c did not start")
		}
		d.workers = []*child{other, w}
	})

	t.Run("an approval answered over HTTP", func(t *testing.T) {
		d.t = t
		d.post("/v1/sessions", `{"id":"s3","agent":"approver"}`, nil)
		if code := d.post("/v1/sessions/s3/messages", `{"text":"deploy"}`, nil); code != 202 {
			t.Fatalf("message: %d", code)
		}
		evs := d.watch("s3", 0, finished)
		var req struct {
			RequestID string `json:"request_id"`
		}
		for _, e := range evs {
			if e.Type == "input_required" {
				_ = json.Unmarshal(e.Data, &req)
			}
		}
		if req.RequestID == "" {
			t.Fatalf("no request: %v", evs)
		}
		if code := d.post("/v1/sessions/s3/requests/"+req.RequestID, `{"decision":"approve"}`, nil); code/100 != 2 {
			t.Fatalf("resolve: %d", code)
		}
		evs = d.watch("s3", evs[len(evs)-1].Seq, finished)
		if last := evs[len(evs)-1]; !strings.Contains(string(last.Data), `"status":"done"`) {
			t.Fatalf("after the approval the run ended %s", last.Data)
		}
	})

	t.Run("a sub-agent's child workflow", func(t *testing.T) {
		d.t = t
		d.post("/v1/sessions", `{"id":"s5","agent":"manager"}`, nil)
		if code := d.post("/v1/sessions/s5/messages", `{"text":"what is 6*7?"}`, nil); code != 202 {
			t.Fatalf("message: %d", code)
		}
		evs := d.watch("s5", 0, finished)
		var child struct {
			ChildSession string `json:"child_session"`
		}
		final := ""
		for _, e := range evs {
			switch e.Type {
			case "subagent_started":
				_ = json.Unmarshal(e.Data, &child)
			case "final":
				final = string(e.Data)
			}
		}
		if child.ChildSession == "" || !strings.Contains(final, "The helper says 42.") {
			t.Fatalf("the delegation: child %q, final %s", child.ChildSession, final)
		}
		// The sub-agent's session was stepped by a workflow of its own.
		page, err := d.tc.ListWorkflow(context.Background(), &workflowservice.ListWorkflowExecutionsRequest{
			Query: fmt.Sprintf("WorkflowId = %q", temporal.WorkflowID("default", child.ChildSession))})
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Executions) != 1 {
			t.Fatalf("%d workflows for the sub-agent's session %s, want one", len(page.Executions), child.ChildSession)
		}
		// A child workflow of the parent's session's.
		if p := page.Executions[0].ParentExecution; p == nil || p.WorkflowId != temporal.WorkflowID("default", "s5") {
			t.Errorf("the sub-agent's workflow's parent: %+v", p)
		}
	})

	t.Run("the steer policy", func(t *testing.T) {
		d.t = t
		d.post("/v1/sessions", `{"id":"s6","agent":"painter"}`, nil)
		if code := d.post("/v1/sessions/s6/messages", `{"text":"paint it red"}`, nil); code != 202 {
			t.Fatalf("the first message: %d", code)
		}
		d.watch("s6", 0, func(e sessionEvent) bool { return e.Type == "tool_call" })
		var in struct {
			ID string `json:"input_id"`
		}
		if code := d.post("/v1/sessions/s6/messages", `{"text":"and the blue one"}`, &in); code != 202 {
			t.Fatalf("the second message: %d", code)
		}
		// The input goes to the worker holding the session, for the
		// turn's next model call; then the tool ends.
		store, err := postgres.Open(context.Background(), d.dsn)
		if err != nil {
			t.Fatal(err)
		}
		defer store.Close()
		deadline := time.Now().Add(procTimeout)
		for {
			s, err := store.GetSession(context.Background(), "s6")
			if err == nil && s.Control != nil && s.Control.Kind == session.ControlSteer {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("no steering request reached the worker: %+v %v", s, err)
			}
			time.Sleep(10 * time.Millisecond) // the store has no notification of it
		}
		if err := os.WriteFile(d.hold, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		evs := d.watch("s6", 0, finished)
		runs, steered := 0, 0
		for _, e := range evs {
			switch e.Type {
			case "run_started":
				runs++
			case "input_steered":
				var st struct {
					Inputs []string `json:"inputs"`
				}
				_ = json.Unmarshal(e.Data, &st)
				if len(st.Inputs) == 1 && st.Inputs[0] == in.ID {
					steered++
				}
			case "run_finished":
				if !strings.Contains(string(e.Data), `"done"`) {
					t.Errorf("the turn ended: %s", e.Data)
				}
			}
		}
		if runs != 1 || steered != 1 {
			t.Fatalf("%d runs, %d input_steered answering %s: %+v", runs, steered, in.ID, evs)
		}
	})

	t.Run("the histories of a 100-turn session", func(t *testing.T) {
		d.t = t
		const turns = 100
		d.post("/v1/sessions", `{"id":"s4","agent":"counter"}`, nil)
		var after int64
		var seen []string
		for i := range turns {
			if code := d.post("/v1/sessions/s4/messages", fmt.Sprintf(`{"text":"turn %d: %s"}`, i+1, strings.Repeat("words ", 200)), nil); code != 202 {
				t.Fatalf("turn %d: %d", i+1, code)
			}
			evs := d.watch("s4", after, finished)
			after = evs[len(evs)-1].Seq
			for _, e := range evs {
				if e.Seq != 0 {
					seen = append(seen, fmt.Sprintf("%d %s %s", e.Seq, e.Type, e.RunID))
				}
			}
		}
		// Each turn is a workflow run of its own, continued as new: its
		// history holds the turn's steps, and nothing of the conversation.
		ctx := context.Background()
		wid := temporal.WorkflowID("default", "s4")
		var runs []string
		var next []byte
		for {
			page, err := d.tc.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{
				Query: fmt.Sprintf("WorkflowId = %q", wid), NextPageToken: next})
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range page.Executions {
				if e.Type.Name != temporal.WorkflowName {
					t.Errorf("a run of type %s", e.Type.Name)
				}
				runs = append(runs, e.Execution.RunId)
			}
			if next = page.NextPageToken; len(next) == 0 {
				break
			}
		}
		maxEvents, maxBytes, total := 0, 0, 0
		var shapes []string
		for _, run := range runs {
			events, bytes := 0, 0
			var shape []string
			it := d.tc.GetWorkflowHistory(ctx, wid, run, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
			for it.HasNext() {
				e, err := it.Next()
				if err != nil {
					t.Fatal(err)
				}
				events++
				bytes += proto.Size(e)
				sh := strings.TrimPrefix(e.EventType.String(), "EVENT_TYPE_")
				if a := e.GetActivityTaskScheduledEventAttributes(); a != nil {
					sh += "(" + a.ActivityType.Name + "@" + a.TaskQueue.Name + ")"
				}
				if a := e.GetActivityTaskCompletedEventAttributes(); a != nil && a.Result != nil && len(a.Result.Payloads) > 0 {
					sh += "(" + string(a.Result.Payloads[0].Data) + ")"
				}
				shape = append(shape, sh)
			}
			shapes = append(shapes, strings.Join(shape, " "))
			maxEvents, maxBytes, total = max(maxEvents, events), max(maxBytes, bytes), total+bytes
		}
		if len(runs) < turns {
			t.Fatalf("%d workflow runs for %d turns:\n%s\n%s", len(runs), turns, strings.Join(shapes, "\n"), strings.Join(seen, "\n"))
		}
		t.Logf("%d turns, %d workflow runs: at most %d events and %d bytes a run (%d bytes in all)", turns, len(runs), maxEvents, maxBytes, total)
		// The bound docs/temporal.md states: a text turn is two steps.
		if maxEvents > 40 || maxBytes > 16<<10 {
			t.Errorf("a workflow run of %d events, %d bytes: more than the 40 events and 16 KiB a turn of two steps takes", maxEvents, maxBytes)
		}
	})
}
