package agentrt_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/model/scripted"
	"github.com/agentrt/agentrt/session"
	"github.com/agentrt/agentrt/session/sqlite"
	"github.com/agentrt/agentrt/tool"
)

// The crash tests run a real child process (this test binary, re-executed
// with AGENTRT_CRASH_CHILD set) that runs a turn on a SQLite file and
// prints each committed event; the parent kills it with SIGKILL at a
// chosen event, then resumes the session in-process and checks that the
// turn finishes, that no completed tool call ran twice, and that the log
// has no gap and no duplicate.

func TestMain(m *testing.M) {
	if mode := os.Getenv("AGENTRT_CRASH_CHILD"); mode != "" {
		os.Exit(crashChild(mode))
	}
	os.Exit(m.Run())
}

// journalTool appends its argument to a file each time it runs, so the
// parent can count executions across processes. A call with "block": true
// never returns (until the process dies).
func journalTool(path string, honorBlock bool) tool.Tool {
	return tool.WithMeta(tool.Must(tool.New("journal", "records a line", func(ctx context.Context, in struct {
		Line  string `json:"line"`
		Block bool   `json:"block,omitempty"`
	}) (string, error) {
		f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			return "", err
		}
		fmt.Fprintln(f, in.Line)
		if err := f.Close(); err != nil {
			return "", err
		}
		if in.Block && honorBlock {
			<-ctx.Done()
			return "", ctx.Err()
		}
		return "recorded " + in.Line, nil
	})), tool.Meta{Timeout: time.Hour})
}

func crashAgent(m model.Model, journal string, child bool) *agentrt.Agent {
	reg, err := tool.NewRegistry(journalTool(journal, child))
	if err != nil {
		panic(err)
	}
	return &agentrt.Agent{Name: "crashy", Model: m, Tools: reg}
}

// crashScript is the conversation of each mode, as the child plays it.
func crashScript(mode string) []scripted.Reply {
	call := func(line string, block bool) scripted.Call {
		return scripted.ToolCall("journal", map[string]any{"line": line, "block": block})
	}
	switch mode {
	case "during-model":
		// Killed while the second model call is delayed.
		return []scripted.Reply{
			{ToolCalls: []scripted.Call{call("first", false)}},
			{Text: "never seen", Delay: time.Hour},
		}
	case "between-tools":
		// Two calls of one reply: "a" completes, "b" blocks; killed then.
		return []scripted.Reply{
			{ToolCalls: []scripted.Call{call("a", false), call("b", true)}},
		}
	}
	panic("unknown mode " + mode)
}

func crashChild(mode string) int {
	ctx := context.Background()
	store, err := sqlite.Open(ctx, os.Getenv("AGENTRT_CRASH_DB"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	r, err := agentrt.NewRunner(agentrt.Config{Store: store, Agents: []*agentrt.Agent{
		crashAgent(scripted.New("m", crashScript(mode)...), os.Getenv("AGENTRT_CRASH_JOURNAL"), true),
	}})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	enc := json.NewEncoder(os.Stdout)
	for e, err := range r.Run(ctx, "s1", agentrt.Input{Text: "go"}) {
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		if e.Seq != 0 {
			enc.Encode(e)
		}
	}
	return 0
}

// runUntil starts the child and kills it with SIGKILL once stop says so.
func runUntil(t *testing.T, mode, db, journal string, stop func(*session.Event) bool) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "AGENTRT_CRASH_CHILD="+mode, "AGENTRT_CRASH_DB="+db, "AGENTRT_CRASH_JOURNAL="+journal)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(out)
	killed := false
	for sc.Scan() {
		var e session.Event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("child printed %q: %v", sc.Text(), err)
		}
		if stop(&e) {
			if err := cmd.Process.Kill(); err != nil {
				t.Fatal(err)
			}
			killed = true
			break
		}
	}
	err = cmd.Wait()
	if !killed {
		t.Fatalf("child ended before the kill point (%v)", err)
	}
}

func newSessionDB(t *testing.T) (db, journal string) {
	t.Helper()
	dir := t.TempDir()
	db, journal = filepath.Join(dir, "agentrt.db"), filepath.Join(dir, "journal")
	store, err := sqlite.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	r, err := agentrt.NewRunner(agentrt.Config{Store: store, Agents: []*agentrt.Agent{crashAgent(scripted.New("m"), journal, false)}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.CreateSession(context.Background(), "crashy", "s1", nil); err != nil {
		t.Fatal(err)
	}
	store.Close()
	return db, journal
}

func journalLines(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Fields(string(b))
}

func resumeAfterCrash(t *testing.T, db, journal string, rest ...scripted.Reply) (*agentrt.Result, []*session.Event) {
	t.Helper()
	store, err := sqlite.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	s, err := store.GetSession(context.Background(), "s1")
	if err != nil {
		t.Fatal(err)
	}
	if s.Status != session.StatusRunning {
		t.Fatalf("after the kill the session is %s, want running", s.Status)
	}
	r, err := agentrt.NewRunner(agentrt.Config{Store: store, Agents: []*agentrt.Agent{crashAgent(scripted.New("m", rest...), journal, false)}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := agentrt.Collect(r.Resume(context.Background(), "s1"))
	if err != nil {
		t.Fatal(err)
	}
	return res, storedLog(t, store, "s1")
}

func TestCrashDuringModelCall(t *testing.T) {
	t.Parallel()
	db, journal := newSessionDB(t)
	runUntil(t, "during-model", db, journal, func(e *session.Event) bool {
		d, ok := e.Data.(*session.ModelStarted)
		return ok && e.Seq > 3 && d.Attempt == 1 // the second model call
	})
	res, log := resumeAfterCrash(t, db, journal, scripted.Reply{Text: "finished after the crash"})
	if res.Status != session.StatusDone || res.Text != "finished after the crash" {
		t.Fatalf("resume: %+v", res)
	}
	if got := journalLines(t, journal); len(got) != 1 {
		t.Errorf("the completed tool call ran %d times: %v", len(got), got)
	}
	var resumed, attempt2 bool
	for _, e := range log {
		switch d := e.Data.(type) {
		case *session.RunResumed:
			resumed = d.Reason == "recovered" && d.From == session.StatusRunning
		case *session.ModelStarted:
			attempt2 = attempt2 || d.Attempt == 2
		}
	}
	if !resumed || !attempt2 {
		t.Errorf("log lacks run_resumed(recovered) or model attempt 2: %v", types(log))
	}
}

func TestCrashBetweenToolCalls(t *testing.T) {
	t.Parallel()
	db, journal := newSessionDB(t)
	runUntil(t, "between-tools", db, journal, func(e *session.Event) bool {
		d, ok := e.Data.(*session.ToolResult)
		return ok && d.OK // "a" completed; "b" is blocked
	})
	// In the new process "b" does not block (the journal sees it again).
	res, log := resumeAfterCrash(t, db, journal, scripted.Reply{Text: "both done"})
	if res.Status != session.StatusDone || res.Text != "both done" {
		t.Fatalf("resume: %+v", res)
	}
	counts := map[string]int{}
	for _, l := range journalLines(t, journal) {
		counts[l]++
	}
	// a completed before the kill and must not run again. b never
	// completed: it ran after the resume, and in the child too if the kill
	// came after it started (running it again is right: at-least-once).
	if counts["a"] != 1 || counts["b"] < 1 || counts["b"] > 2 {
		t.Errorf("executions = %v, want a:1 b:1 or 2", counts)
	}
	// b's re-run is announced as its second attempt.
	var calls []string
	var results int
	for _, e := range log {
		switch d := e.Data.(type) {
		case *session.ToolCall:
			calls = append(calls, fmt.Sprintf("%s#%d", d.CallID[len(d.CallID)-1:], max(d.Attempt, 1)))
		case *session.ToolResult:
			results++
		}
	}
	if len(calls) != 3 || calls[2] != calls[1][:len(calls[1])-1]+"2" || results != 2 {
		t.Errorf("log has tool_calls %v and %d tool_results, want a, b, b again as attempt 2, and 2 results", calls, results)
	}
}
