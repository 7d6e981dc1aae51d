package cli_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentrt/agentrt/internal/cli"
)

// killDuringDelegation runs a parent agent that delegates to a child whose
// second model call waits an hour, and kills the process (SIGKILL) there.
// It returns the process runner, the config that finishes both agents'
// conversations, and the child's session.
func killDuringDelegation(t *testing.T) (p *proc, resumeConfig, child string) {
	t.Helper()
	e := newEnv(t, `
models:
  b: {provider: scripted, script: boss.yaml}
  r: {provider: scripted, script: child.yaml}
agents:
  boss: {model: b, tools: [researcher]}
  researcher: {model: r, tools: [calculator]}
`, map[string]string{
		"boss.yaml":  "replies:\n  - tool_calls: [{name: researcher, arguments: {task: \"compute 6*7\"}}]\n  - text: never said\n",
		"child.yaml": "replies:\n  - tool_calls: [{name: calculator, arguments: {expression: \"6*7\"}}]\n  - text: never said\n    delay: 1h\n",
		// The same conversations, each going on by its second reply in
		// the process that resumes them.
		"boss-resume.yaml":  "replies:\n  - tool_calls: [{name: researcher, arguments: {task: \"compute 6*7\"}}]\n  - text: \"the researcher says 42\"\n    expect: {last_tool_result_contains: '\"answer\":\"42\"'}\n",
		"child-resume.yaml": "replies:\n  - tool_calls: [{name: calculator, arguments: {expression: \"6*7\"}}]\n  - text: \"42\"\n    expect: {last_tool_result_contains: '\"result\":42'}\n",
	})
	config, err := os.ReadFile(e.config)
	if err != nil {
		t.Fatal(err)
	}
	resumeConfig = filepath.Join(e.dir, "resume-agentrt.yaml")
	writeFile(t, resumeConfig, strings.NewReplacer("boss.yaml", "boss-resume.yaml", "child.yaml", "child-resume.yaml").Replace(string(config)))
	p = newProc(t, e.dir)

	ctx, cancel := context.WithTimeout(t.Context(), procTimeout)
	defer cancel()
	cmd, stdout, errb := p.start(ctx, "--config", e.config, "run", "--agent", "boss", "--json", "--session", "p1", "go")
	sc := bufio.NewScanner(stdout)
	for child == "" && sc.Scan() {
		var ev event
		if json.Unmarshal(sc.Bytes(), &ev) == nil && ev.Type == "subagent_started" {
			child, _ = data(t, ev)["child_session"].(string)
		}
	}
	if child == "" {
		t.Fatalf("no subagent_started; stderr:\n%s", errb.String())
	}
	deadline := time.Now().Add(procTimeout)
	for {
		out := p.run("--config", e.config, "sessions", "events", child).out
		if strings.Count(out, `"type":"model_started"`) >= 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the child never reached its second model call:\n%s", out)
		}
		time.Sleep(20 * time.Millisecond) // polling the store, not a delay
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, stdout)
	_ = cmd.Wait()
	return p, resumeConfig, child
}

// agentrt recover after a crash during a delegation: recovery resumes the
// parent, whose run resumes the child (recovery leaves the child to it),
// and the child's answer reaches the parent exactly once.
func TestProcessRecoverDuringDelegation(t *testing.T) {
	t.Parallel()
	p, resumeConfig, child := killDuringDelegation(t)
	r := p.must(cli.ExitOK, "--config", resumeConfig, "recover")
	if !strings.Contains(r.err, "recovered 1 session: p1 (done)") {
		t.Errorf("recover stderr:\n%s", r.err)
	}
	cevs := parseEvents(t, p.must(cli.ExitOK, "--config", resumeConfig, "sessions", "events", child).out)
	checkSeq(t, cevs, 1)
	if rs := ofType(cevs, "run_resumed"); len(rs) != 1 {
		t.Errorf("child resumed %d times: %v", len(rs), types(cevs))
	}
	if fin := ofType(cevs, "run_finished"); len(fin) != 1 || data(t, fin[0])["status"] != "done" {
		t.Errorf("child: %v", types(cevs))
	}
	pevs := parseEvents(t, p.must(cli.ExitOK, "--config", resumeConfig, "sessions", "events", "p1").out)
	checkSeq(t, pevs, 1)
	if fin := ofType(pevs, "subagent_finished"); len(fin) != 1 || data(t, fin[0])["answer"] != "42" {
		t.Errorf("parent: %v", types(pevs))
	}
	if errs := ofType(pevs, "subagent_error"); len(errs) != 0 {
		t.Errorf("parent recorded a failed delegation: %v", data(t, errs[0]))
	}
	if fin := ofType(pevs, "run_finished"); len(fin) != 1 || data(t, fin[0])["status"] != "done" {
		t.Errorf("parent: %v", types(pevs))
	}
	// Nothing is left to recover.
	if r := p.must(cli.ExitOK, "--config", resumeConfig, "recover"); !strings.Contains(r.err, "nothing to recover") {
		t.Errorf("second recover: %s", r.err)
	}
}
