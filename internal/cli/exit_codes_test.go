package cli_test

import (
	"strings"
	"testing"

	rt "github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/internal/cli"
	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/model/scripted"
)

// lastErrorCode is the code of the last error event of session id.
func lastErrorCode(t *testing.T, e *env, id string) string {
	t.Helper()
	errs := ofType(parseEvents(t, e.must(cli.ExitOK, "sessions", "events", id).out), "error")
	if len(errs) == 0 {
		t.Fatalf("session %s has no error event", id)
	}
	code, _ := data(t, errs[len(errs)-1])["code"].(string)
	return code
}

// wantCatalogExit fails unless r exited with the catalog's exit code for
// code.
func wantCatalogExit(t *testing.T, r result, code string) {
	t.Helper()
	c, ok := rt.LookupCode(code)
	if !ok {
		t.Fatalf("code %q is not in the catalog", code)
	}
	if r.code != c.Exit {
		t.Errorf("agentrt ended with %s and exit %d; the catalog says exit %d\n%v", code, r.code, c.Exit, r)
	}
}

// wantEventCode fails unless session id's last error event has code want.
func wantEventCode(t *testing.T, e *env, id, want string) {
	t.Helper()
	if got := lastErrorCode(t, e, id); got != want {
		t.Fatalf("session %s's last error is %q, want %q", id, got, want)
	}
}

// The catalog's exit codes (rt.Codes, docs/errors.md) are the ones
// the agentrt command exits with: a run that ends in an error event, a
// run paused at a budget, and calls refused before anything ran.
func TestExitCodesAreTheCatalogs(t *testing.T) {
	t.Parallel()
	t.Run("run failed", func(t *testing.T) {
		t.Parallel()
		call := "  - tool_calls: [{name: calculator, arguments: {expression: \"1+1\"}}]\n"
		e := newEnv(t, `
models:
  s: {provider: scripted, script: loop.yaml}
agents:
  assistant:
    model: s
    tools: [calculator]
    loop_detection: {warning: 2, critical: 3}
`, map[string]string{"loop.yaml": "replies:\n  - text: ok\n" + call + call + call})
		e.must(cli.ExitOK, "run", "--session", "l1", "hi")
		r := e.run("run", "--session", "l1", "1+1?")
		wantEventCode(t, e, "l1", rt.CodeLoopDetected)
		wantCatalogExit(t, r, rt.CodeLoopDetected)
	})
	t.Run("model refused the key", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, `
models:
  s: {provider: scripted, script: auth.yaml}
agents:
  assistant: {model: s}
`, map[string]string{"auth.yaml": "replies:\n  - {error_code: auth, error: key refused}\n"})
		r := e.run("run", "--session", "m1", "hi")
		wantEventCode(t, e, "m1", string(model.CodeAuth))
		wantCatalogExit(t, r, string(model.CodeAuth))
	})
	t.Run("budget", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, `
models:
  s: {provider: scripted, script: calls.yaml}
agents:
  assistant:
    model: s
    tools: [calculator]
    limits: {max_steps: 1}
`, map[string]string{"calls.yaml": "replies:\n  - tool_calls: [{name: calculator, arguments: {expression: \"1+1\"}}]\n  - tool_calls: [{name: calculator, arguments: {expression: \"2+2\"}}]\n  - text: done\n"})
		r := e.run("run", "--session", "b1", "go")
		wantEventCode(t, e, "b1", rt.CodeMaxSteps)
		wantCatalogExit(t, r, rt.CodeMaxSteps)
	})
	t.Run("refused calls", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, `
models:
  s: {provider: demo}  # replaced by opts.Models
agents:
  deployer:
    model: s
    tools: [calculator]
    approval: {ask: [calculator]}
`, nil)
		e.opts.Models = map[string]model.Model{"s": scripted.New("s",
			scripted.Reply{ToolCalls: []scripted.Call{scripted.ToolCall("calculator", `{"expression":"6*7"}`)}},
			scripted.Reply{Text: "42"},
		)}
		sid, req := pendingApproval(t, e.must(cli.ExitWaiting, "run", "--session", "a1", "deploy"))
		// A new input while the session waits for a person is refused:
		// the outcome says how to answer.
		r := e.run("run", "--session", sid, "again")
		if !strings.Contains(r.err, "so the input was not run") {
			t.Errorf("a run on a waiting session: %v", r)
		}
		wantCatalogExit(t, r, rt.CodeWaiting)
		e.must(cli.ExitOK, "approve", sid, req)
		if r := e.run("approve", sid, req); !strings.Contains(r.err, "was already resolved") {
			t.Errorf("a second approve: %v", r)
		} else {
			wantCatalogExit(t, r, rt.CodeAlreadyResolved)
		}
		if r := e.run("sessions", "show", "missing"); !strings.Contains(r.err, `session "missing" not found`) {
			t.Errorf("sessions show missing: %v", r)
		} else {
			wantCatalogExit(t, r, rt.CodeNotFound)
		}
	})
}
