package mcptest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// childEnv, set in a test binary's environment, names the file its pid
// goes to and makes it the MCP server StdioServer describes.
const childEnv = "AGENTRT_MCPTEST_STDIO_PIDFILE"

// ServeIfChild serves an MCP server over stdio, and exits, when this test
// binary runs as the child StdioServer describes; otherwise it returns at
// once. Call it first in TestMain.
//
// The server has one tool, "ping", which answers "pong". It writes its
// pid to the file its environment names before it serves, and exits when
// its stdin closes, as a stdio MCP server does.
func ServeIfChild() {
	pidFile := os.Getenv(childEnv)
	if pidFile == "" {
		return
	}
	if err := os.WriteFile(pidFile, []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "mcptest child:", err)
		os.Exit(2)
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "mcptest-child", Version: "1"}, nil)
	s.AddTool(&mcp.Tool{Name: "ping", Description: "answers pong", InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "pong"}}}, nil
		})
	if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil && !errors.Is(err, context.Canceled) {
		fmt.Fprintln(os.Stderr, "mcptest child:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// StdioServer returns how to start a stdio MCP server written in Go (see
// ServeIfChild, which the package's TestMain must call): this test binary
// as the command, and the environment that makes it the server and has
// it write its pid to pidFile.
func StdioServer(t testing.TB, pidFile string) (command string, env map[string]string) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return exe, map[string]string{childEnv: pidFile}
}

// PID reads the pid a child started by StdioServer wrote.
func PID(t testing.TB, pidFile string) int {
	t.Helper()
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatalf("the MCP server's pid: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatalf("the MCP server's pid file holds %q", b)
	}
	return pid
}

// Alive reports whether the process pid exists (a zombie that nobody
// waited for counts: it still holds its entry).
func Alive(pid int) bool {
	p, err := os.FindProcess(pid)
	if err != nil {
		return false
	}
	err = p.Signal(syscall.Signal(0))
	return err == nil || errors.Is(err, syscall.EPERM)
}

// NoGoroutines fails t if goroutines whose stack mentions one of substrs
// remain: those a component should have ended. A goroutine that is on its
// way out (the go-sdk's stdio reader ends only once the closed pipe has
// unblocked its read, after Close returned) gets the time it needs: the
// check yields the processor until they are gone, and fails with their
// stacks if some are still there after 10 seconds.
func NoGoroutines(t testing.TB, substrs ...string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		gs := goroutines(substrs)
		if len(gs) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("%d goroutine(s) left:\n%s", len(gs), strings.Join(gs, "\n\n"))
			return
		}
		runtime.Gosched()
	}
}

// goroutines returns the stacks of the goroutines, but the caller's,
// whose stack mentions one of substrs.
func goroutines(substrs []string) []string {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	var out []string
	for i, g := range strings.Split(string(buf), "\n\n") {
		if i == 0 {
			continue // the caller's own
		}
		for _, s := range substrs {
			if strings.Contains(g, s) {
				out = append(out, g)
				break
			}
		}
	}
	return out
}
