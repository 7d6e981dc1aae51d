package mcptool_test

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentrt/agentrt/internal/mcptest"
	"github.com/agentrt/agentrt/tool"
	"github.com/agentrt/agentrt/tool/mcptool"
)

func names(ts []tool.Tool) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = t.Definition().Name
	}
	return out
}

// A server that adds and removes tools is read again at once
// (OnToolsChanged), and Sync carries the change into registries: the new
// tool is callable, the removed one is an unknown tool, an unchanged one
// stays the same tool in its place, and a registry that keeps none of the
// changed tools does not change at all.
func TestOnToolsChangedAndSync(t *testing.T) {
	s, url := goServer(t)
	m, err := mcptool.New([]mcptool.Server{{Name: "go", URL: url}}, ".")
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	ts, err := m.Tools(t.Context(), "go")
	if err != nil {
		t.Fatal(err)
	}
	local := tool.Must(tool.New("local", "a tool of the program's", func(context.Context, struct{}) (string, error) { return "", nil }))
	all, err := tool.NewRegistry(local)
	if err != nil {
		t.Fatal(err)
	}
	hello, err := tool.NewRegistry()
	if err != nil {
		t.Fatal(err)
	}
	keepHello := func(n string) bool { return tool.Match("go.h*", n) }
	if err := mcptool.Sync(all, "go", ts, nil); err != nil {
		t.Fatal(err)
	}
	if err := mcptool.Sync(hello, "go", ts, keepHello); err != nil {
		t.Fatal(err)
	}
	helloBefore, _ := all.Get("go.hello")
	genHello := hello.Generation()

	var mu sync.Mutex
	var syncErr error
	lists := make(chan []string, 16)
	m.OnToolsChanged(func(server string, ts []tool.Tool, err error) {
		if err == nil {
			err = errors.Join(mcptool.Sync(all, server, ts, nil), mcptool.Sync(hello, server, ts, keepHello))
		}
		mu.Lock()
		syncErr = errors.Join(syncErr, err)
		mu.Unlock()
		lists <- names(ts)
	})
	s.AddTool(&mcp.Tool{Name: "added", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "new"}}}, nil
		})
	s.RemoveTools("fails")
	want := []string{"go.added", "go.broken", "go.hello"} // as the server lists them
	timeout := time.After(30 * time.Second)
	for got := []string(nil); !slices.Equal(got, want); {
		select {
		case got = <-lists:
		case <-timeout:
			t.Fatalf("the list never became %v (last: %v): list_changed was not heard", want, got)
		}
	}
	mu.Lock()
	if syncErr != nil {
		t.Fatal(syncErr)
	}
	mu.Unlock()
	// The tools that stay keep their places; the new one goes last.
	if diff := cmp.Diff([]string{"local", "go.broken", "go.hello", "go.added"}, all.Names()); diff != "" {
		t.Errorf("the registry after the change (-want +got):\n%s", diff)
	}
	if res := all.Call(t.Context(), "go.added", json.RawMessage(`{}`)); !res.OK || !strings.Contains(string(res.Output), "new") {
		t.Errorf("the added tool: %+v", res)
	}
	if res := all.Call(t.Context(), "go.fails", json.RawMessage(`{}`)); res.OK || !errors.Is(res.Err, tool.ErrUnknownTool) {
		t.Errorf("the removed tool: %+v, want an unknown tool", res)
	}
	if now, _ := all.Get("go.hello"); now != helloBefore {
		t.Error("an unchanged tool was replaced")
	}
	if hello.Generation() != genHello || !slices.Equal(hello.Names(), []string{"go.hello"}) {
		t.Errorf("a registry that keeps only go.hello changed: %v", hello.Names())
	}
}

// Sync refuses a server's tool whose name a tool of the program's holds,
// and changes nothing then.
func TestSyncNameTaken(t *testing.T) {
	_, url := goServer(t)
	m, err := mcptool.New([]mcptool.Server{{Name: "go", URL: url}}, ".")
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	ts, err := m.Tools(t.Context(), "go")
	if err != nil {
		t.Fatal(err)
	}
	mine := tool.Must(tool.New("go.hello", "the program's own", func(context.Context, struct{}) (string, error) { return "", nil }))
	reg, err := tool.NewRegistry(mine)
	if err != nil {
		t.Fatal(err)
	}
	if err := mcptool.Sync(reg, "go", ts, nil); err == nil || !strings.Contains(err.Error(), `mcp server "go": duplicate tool name "go.hello"`) {
		t.Fatalf("Sync: %v", err)
	}
	if got, _ := reg.Get("go.hello"); got != mine || reg.Len() != 1 {
		t.Errorf("a failed Sync changed the registry: %v", reg.Names())
	}
}

// Close ends a stdio server's process and the Manager's goroutines, and
// a call after it starts no new process: it is a tool error.
func TestCloseEndsEverything(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pid")
	cmd, env := mcptest.StdioServer(t, pidFile)
	m, err := mcptool.New([]mcptool.Server{{Name: "kid", Command: cmd, Env: env}}, ".")
	if err != nil {
		t.Fatal(err)
	}
	m.OnToolsChanged(func(string, []tool.Tool, error) {})
	reg := registryOf(t, m, "kid")
	if res := reg.Call(t.Context(), "kid.ping", nil); !res.OK || !strings.Contains(string(res.Output), "pong") {
		t.Fatalf("ping: %+v", res)
	}
	pid := mcptest.PID(t, pidFile)
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if mcptest.Alive(pid) {
		t.Errorf("the server's process %d is still there after Close", pid)
	}
	mcptest.NoGoroutines(t, "agentrt/tool/mcptool.", "modelcontextprotocol/go-sdk/")
	if err := m.Close(); err != nil {
		t.Errorf("a second Close: %v", err)
	}
	if err := removeFile(pidFile); err != nil {
		t.Fatal(err)
	}
	if res := reg.Call(t.Context(), "kid.ping", nil); res.OK || !strings.Contains(res.Error, `mcp server "kid": the connections are closed`) {
		t.Errorf("a call after Close: %+v", res)
	}
	if fileExists(pidFile) {
		t.Error("a call after Close started the server again")
	}
}

// Close leaves no connection to a Streamable HTTP server open: the server
// sees every connection closed.
func TestCloseClosesHTTPConnections(t *testing.T) {
	s := mcp.NewServer(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	s.AddTool(&mcp.Tool{Name: "hello", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "hi"}}}, nil
		})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	open := map[net.Conn]bool{}
	allClosed := make(chan struct{}, 1)
	srv := &http.Server{Handler: mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil),
		ConnState: func(c net.Conn, st http.ConnState) {
			mu.Lock()
			defer mu.Unlock()
			switch st {
			case http.StateNew:
				open[c] = true
			case http.StateClosed, http.StateHijacked:
				delete(open, c)
				if len(open) == 0 {
					select {
					case allClosed <- struct{}{}:
					default:
					}
				}
			}
		}}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })

	m, err := mcptool.New([]mcptool.Server{{Name: "web", URL: "http://" + l.Addr().String()}}, ".")
	if err != nil {
		t.Fatal(err)
	}
	reg := registryOf(t, m, "web")
	if res := reg.Call(t.Context(), "web.hello", nil); !res.OK {
		t.Fatalf("hello: %+v", res)
	}
	// Drain the signal of a connection that closed before Close.
	select {
	case <-allClosed:
	default:
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	for {
		mu.Lock()
		n := len(open)
		mu.Unlock()
		if n == 0 {
			break
		}
		select {
		case <-allClosed:
		case <-time.After(30 * time.Second):
			t.Fatalf("%d connection(s) to the server still open after Close", n)
		}
	}
}

func removeFile(p string) error { return os.Remove(p) }

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
