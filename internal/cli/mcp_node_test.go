package cli_test

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/internal/testenv"
)

// MCP clients nobody here wrote, from testdata/node: the MCP Inspector's
// CLI against agentrt mcp serve (stdio) and agentrt serve (/v1/mcp), and
// the MCP conformance suite's server scenarios against /v1/mcp.

// mcpNode runs a Node program of an npm package of testdata/node from
// dir (relative to the package), and returns its stdout; it fails the
// test unless the program exits 0.
func mcpNode(t *testing.T, pkg, dir string, args ...string) string {
	t.Helper()
	node := needTool(t, "node")
	_, file, _, _ := runtime.Caller(0)
	base := filepath.Join(filepath.Dir(file), "..", "..", "testdata", "node", "node_modules", "@modelcontextprotocol", pkg)
	if _, err := os.Stat(filepath.Join(base, "package.json")); err != nil {
		t.Fatalf("the npm packages of testdata/node are not installed (scripts/test.sh installs them, or npm ci --prefix testdata/node): %v", err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), procTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, args...)
	cmd.Dir = filepath.Join(base, dir)
	var errb strings.Builder
	cmd.Stderr = &errb
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node %s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), err, out, errb.String())
	}
	return string(out)
}

// inspected is what the Inspector's CLI prints of tools/list and
// tools/call.
type inspected struct {
	Tools []struct {
		Name        string `json:"name"`
		Description string `json:"description"`
	} `json:"tools"`
	IsError bool `json:"isError"`
	Content []struct {
		Text string `json:"text"`
	} `json:"content"`
	StructuredContent struct {
		SessionID string `json:"session_id"`
		Status    string `json:"status"`
		Answer    string `json:"answer"`
	} `json:"structuredContent"`
}

// Text is the text of a tools/call result.
func (in inspected) Text() string {
	var b strings.Builder
	for _, c := range in.Content {
		b.WriteString(c.Text)
	}
	return b.String()
}

func inspect(t *testing.T, target []string, args ...string) inspected {
	t.Helper()
	out := mcpNode(t, "inspector-cli", "build", append(append([]string{"index.js"}, target...), args...)...)
	var in inspected
	if err := json.Unmarshal([]byte(out), &in); err != nil {
		t.Fatalf("the inspector printed %q: %v", out, err)
	}
	return in
}

// checkInspected checks tools/list and a tools/call of the demo
// assistant through the Inspector's CLI, and returns the call's session.
func checkInspected(t *testing.T, target []string) string {
	t.Helper()
	l := inspect(t, target, "--method", "tools/list")
	if len(l.Tools) != 1 || l.Tools[0].Name != "assistant" || l.Tools[0].Description == "" {
		t.Errorf("tools/list: %+v; want the assistant, described", l.Tools)
	}
	c := inspect(t, target, "--method", "tools/call", "--tool-name", "assistant", "--tool-arg", "message=what is 21*2+5")
	sc := c.StructuredContent
	if c.IsError || sc.Status != "done" || !strings.Contains(sc.Answer, "47") || sc.SessionID == "" {
		t.Fatalf("tools/call: %+v; want the answer 47, done, with its session", c)
	}
	return sc.SessionID
}

// The Inspector's CLI lists and calls the agents over stdio.
func TestMCPServeStdioInspector(t *testing.T) {
	t.Parallel()
	testenv.SkipShort(t, "runs agentrt mcp serve and node")
	e := newEnv(t, demoConfig, nil)
	id := checkInspected(t, []string{binary(t), "--config", e.config, "mcp", "serve"})
	// The session is in the store, like any other.
	r := e.must(0, "sessions", "show", id)
	if !strings.Contains(r.out, "done") {
		t.Errorf("sessions show %s: %s; want done", id, r.out)
	}
}

// The Inspector's CLI lists and calls the agents at /v1/mcp of agentrt
// serve; the session it started is read over the REST API; and the
// conformance suite's server scenarios that apply to a server of tools
// pass.
func TestServeMCPInspectorAndConformance(t *testing.T) {
	t.Parallel()
	testenv.SkipShort(t, "runs agentrt serve and node")
	e := newEnv(t, demoConfig, nil)
	s := startServe(t, e, nil)
	url := s.url + "/v1/mcp"
	target := []string{url, "--transport", "http"}
	id := checkInspected(t, target)
	// A session id of the client's making starts a session of that id;
	// an argument the tool's schema does not have is an error result.
	mine := inspect(t, target, "--method", "tools/call", "--tool-name", "assistant",
		"--tool-arg", "message=what is 2+2", "--tool-arg", "session=inspector-1")
	if mine.IsError || mine.StructuredContent.SessionID != "inspector-1" || mine.StructuredContent.Status != "done" {
		t.Errorf("tools/call with session inspector-1: %+v; want a turn of a new session inspector-1", mine)
	}
	typo := inspect(t, target, "--method", "tools/call", "--tool-name", "assistant",
		"--tool-arg", "message=hi", "--tool-arg", "sesion=inspector-2")
	if !typo.IsError || !strings.Contains(typo.Text(), "malformed_request") || !strings.Contains(typo.Text(), "sesion") {
		t.Errorf("tools/call with an argument the schema does not have: %+v; want an error result naming it", typo)
	}
	resp, err := http.Get(s.url + "/v1/sessions/" + id)
	if err != nil {
		t.Fatal(err)
	}
	var info struct {
		Status string `json:"status"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&info)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || info.Status != "done" {
		t.Errorf("GET /v1/sessions/%s: %d %+v; want the MCP call's session, done", id, resp.StatusCode, info)
	}
	// The other scenarios call the conformance suite's own test tools,
	// resources and prompts, which a server of agents does not have.
	for _, sc := range []string{"server-initialize", "ping", "tools-list", "server-sse-multiple-streams", "dns-rebinding-protection"} {
		out := mcpNode(t, "conformance", "dist", "index.js", "server", "--url", url, "--scenario", sc)
		if !strings.Contains(out, " 0 failed") || strings.Contains(out, "FAILURE") {
			t.Errorf("conformance scenario %s:\n%s", sc, out)
		}
	}
	s.stopOK()
}
