package mcptool_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentrt/agentrt/internal/mcptest"
	"github.com/agentrt/agentrt/tool"
	"github.com/agentrt/agentrt/tool/mcptool"
)

func everything(t *testing.T) *mcptool.Manager {
	t.Helper()
	m, err := mcptool.New([]mcptool.Server{{Name: "ev", Command: "node", Args: []string{mcptest.Server(t, "server-everything"), "stdio"}}}, ".")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

func registryOf(t *testing.T, m *mcptool.Manager, server string) *tool.Registry {
	t.Helper()
	ts, err := m.Tools(t.Context(), server)
	if err != nil {
		t.Fatal(err)
	}
	reg, err := tool.NewRegistry(ts...)
	if err != nil {
		t.Fatalf("the server's tools do not register: %v", err)
	}
	return reg
}

// The reference server over stdio: its tools with their schemas, a call,
// a call with bad arguments (refused before it reaches the server), a
// structured result.
func TestStdioServer(t *testing.T) {
	reg := registryOf(t, everything(t), "ev")
	def, ok := reg.Get("ev.echo")
	if !ok || !strings.Contains(string(def.Definition().InputSchema), `"message"`) {
		t.Fatalf("ev.echo: %v %+v", ok, def)
	}
	res := reg.Call(t.Context(), "ev.echo", json.RawMessage(`{"message":"hello mcp"}`))
	if !res.OK || !strings.Contains(string(res.Output), "hello mcp") {
		t.Fatalf("echo: %+v", res)
	}
	if res := reg.Call(t.Context(), "ev.echo", json.RawMessage(`{}`)); res.OK || !strings.Contains(res.Error, "message") {
		t.Errorf("echo without its message: %+v", res)
	}
	if res := reg.Call(t.Context(), "ev.get-sum", json.RawMessage(`{"a":2,"b":40}`)); !res.OK || !strings.Contains(string(res.Output), "42") {
		t.Errorf("get-sum: %+v", res)
	}
}

// A server that dies is started again on the next call; the call it died
// in is a tool error.
func TestServerKilledMidCall(t *testing.T) {
	m := everything(t)
	reg := registryOf(t, m, "ev")
	ctx := t.Context()
	done := make(chan tool.Result, 1)
	go func() {
		done <- reg.Call(ctx, "ev.trigger-long-running-operation", json.RawMessage(`{"duration":30,"steps":3}`))
	}()
	// Find the server's process and kill it while the call runs.
	deadline := time.Now().Add(20 * time.Second)
	for {
		out, _ := exec.Command("pgrep", "-P", strconv.Itoa(os.Getpid()), "-f", "server-everything/dist/index.js stdio").Output()
		if pids := strings.Fields(string(out)); len(pids) > 0 {
			for _, p := range pids {
				_ = exec.Command("kill", "-9", p).Run()
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the server's process was not found")
		}
		time.Sleep(20 * time.Millisecond) // polling for the process, not a delay
	}
	res := <-done
	if res.OK || !strings.Contains(res.Error, "ev") {
		t.Fatalf("the call the server died in: %+v", res)
	}
	if res := reg.Call(ctx, "ev.echo", json.RawMessage(`{"message":"again"}`)); !res.OK || !strings.Contains(string(res.Output), "again") {
		t.Fatalf("after the restart: %+v", res)
	}
}

// Over Streamable HTTP, on 127.0.0.1.
func TestHTTPServer(t *testing.T) {
	entry := mcptest.Server(t, "server-everything")
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	cmd := exec.Command("node", entry, "streamableHttp")
	cmd.Env = append(os.Environ(), fmt.Sprintf("PORT=%d", port))
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	deadline := time.Now().Add(20 * time.Second)
	for {
		if c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port)); err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the HTTP server did not start listening")
		}
		time.Sleep(20 * time.Millisecond) // polling for the port, not a delay
	}
	m, err := mcptool.New([]mcptool.Server{{Name: "web", URL: fmt.Sprintf("http://127.0.0.1:%d/mcp", port), Headers: map[string]string{"X-Test": "1"}}}, "_")
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	reg := registryOf(t, m, "web")
	if res := reg.Call(t.Context(), "web_echo", json.RawMessage(`{"message":"over http"}`)); !res.OK || !strings.Contains(string(res.Output), "over http") {
		t.Fatalf("echo over HTTP: %+v", res)
	}
}

// Servers that cannot be used say exactly why.
func TestBadServers(t *testing.T) {
	for _, tc := range []struct {
		name string
		s    mcptool.Server
		want string
	}{
		{"no such command", mcptool.Server{Command: "no-such-mcp-server"}, `command "no-such-mcp-server": exec: "no-such-mcp-server": executable file not found`},
		{"exits at once", mcptool.Server{Command: "false"}, "cannot connect"},
		{"not MCP", mcptool.Server{Command: "sh", Args: []string{"-c", "echo hello, I am not MCP; sleep 5"}}, "cannot connect"},
		{"hangs at initialize", mcptool.Server{Command: "sleep", Args: []string{"30"}, Timeout: 300 * time.Millisecond}, "did not answer its initialization within 300ms"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.s.Name = "bad"
			m, err := mcptool.New([]mcptool.Server{tc.s}, ".")
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			_, err = m.Tools(context.Background(), "bad")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Tools: %v, want %q", err, tc.want)
			}
			if !strings.Contains(err.Error(), `mcp server "bad"`) {
				t.Errorf("the error does not name the server: %v", err)
			}
		})
	}
	if _, err := mcptool.New([]mcptool.Server{{Name: "x", Command: "a", URL: "http://b"}}, "."); err == nil || !strings.Contains(err.Error(), "give a command or a url, not both or neither") {
		t.Errorf("both: %v", err)
	}
}

// The filesystem reference server: write, read and list in a directory it
// is allowed; a path outside it is a tool error the model reads.
func TestFilesystemServer(t *testing.T) {
	dir := t.TempDir()
	m, err := mcptool.New([]mcptool.Server{{Name: "fs", Command: "node", Args: []string{mcptest.Server(t, "server-filesystem"), dir}}}, ".")
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	reg := registryOf(t, m, "fs")
	ctx := t.Context()
	file := dir + "/notes.txt"
	if res := reg.Call(ctx, "fs.write_file", json.RawMessage(`{"path":`+strconv.Quote(file)+`,"content":"deploy on tuesday"}`)); !res.OK {
		t.Fatalf("write_file: %+v", res)
	}
	if res := reg.Call(ctx, "fs.read_text_file", json.RawMessage(`{"path":`+strconv.Quote(file)+`}`)); !res.OK || !strings.Contains(string(res.Output), "deploy on tuesday") {
		t.Fatalf("read_text_file: %+v", res)
	}
	if res := reg.Call(ctx, "fs.list_directory", json.RawMessage(`{"path":`+strconv.Quote(dir)+`}`)); !res.OK || !strings.Contains(string(res.Output), "notes.txt") {
		t.Fatalf("list_directory: %+v", res)
	}
	if res := reg.Call(ctx, "fs.read_text_file", json.RawMessage(`{"path":"/etc/passwd"}`)); res.OK || res.Error == "" {
		t.Fatalf("a path outside the allowed directory: %+v", res)
	}
}

// The memory reference server keeps a knowledge graph across calls.
func TestMemoryServer(t *testing.T) {
	m, err := mcptool.New([]mcptool.Server{{Name: "kg", Command: "node", Args: []string{mcptest.Server(t, "server-memory")},
		Env: map[string]string{"MEMORY_FILE_PATH": t.TempDir() + "/kg.jsonl"}}}, ".")
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	reg := registryOf(t, m, "kg")
	ctx := t.Context()
	if res := reg.Call(ctx, "kg.create_entities", json.RawMessage(`{"entities":[{"name":"ana","entityType":"person","observations":["deploys on tuesdays"]}]}`)); !res.OK {
		t.Fatalf("create_entities: %+v", res)
	}
	if res := reg.Call(ctx, "kg.search_nodes", json.RawMessage(`{"query":"ana"}`)); !res.OK || !strings.Contains(string(res.Output), "deploys on tuesdays") {
		t.Fatalf("search_nodes: %+v", res)
	}
}

// BenchmarkEcho is server-everything's echo over stdio through an
// agentrt tool (the Registry: schema check, then the client) beside a
// direct call through the go-sdk client, on one connection each, in the
// same run.
func BenchmarkEcho(b *testing.B) {
	entry := mcptest.Server(b, "server-everything")
	args := json.RawMessage(`{"message":"hello"}`)
	b.Run("agentrt", func(b *testing.B) {
		m, err := mcptool.New([]mcptool.Server{{Name: "ev", Command: "node", Args: []string{entry, "stdio"}}}, ".")
		if err != nil {
			b.Fatal(err)
		}
		defer m.Close()
		ts, err := m.Tools(context.Background(), "ev")
		if err != nil {
			b.Fatal(err)
		}
		reg, err := tool.NewRegistry(ts...)
		if err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			if res := reg.Call(context.Background(), "ev.echo", args); !res.OK {
				b.Fatal(res.Error)
			}
		}
	})
	b.Run("go-sdk", func(b *testing.B) {
		client := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
		sess, err := client.Connect(context.Background(), &mcp.CommandTransport{Command: exec.Command("node", entry, "stdio")}, nil)
		if err != nil {
			b.Fatal(err)
		}
		defer sess.Close()
		for b.Loop() {
			res, err := sess.CallTool(context.Background(), &mcp.CallToolParams{Name: "echo", Arguments: args})
			if err != nil || res.IsError {
				b.Fatal(err, res)
			}
		}
	})
}

// goServer serves an MCP server written with the go-sdk over Streamable
// HTTP on 127.0.0.1, for what the reference servers cannot be made to do.
func goServer(t *testing.T) (*mcp.Server, string) {
	t.Helper()
	s := mcp.NewServer(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	s.AddTool(&mcp.Tool{Name: "hello", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "hi"}}}, nil
		})
	// A tool whose result breaks its own output schema: not a valid result.
	s.AddTool(&mcp.Tool{Name: "broken", InputSchema: json.RawMessage(`{"type":"object"}`),
		OutputSchema: json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{StructuredContent: map[string]any{"n": "not a number"}}, nil
		})
	// A tool that fails.
	s.AddTool(&mcp.Tool{Name: "fails", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "the disk is full"}}}, nil
		})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	return s, "http://" + l.Addr().String()
}

// A server that adds a tool says so (tools/list_changed): the next Tools
// reads the list again. A tool error and an invalid result are errors the
// model reads.
func TestListChangedAndBadResults(t *testing.T) {
	s, url := goServer(t)
	m, err := mcptool.New([]mcptool.Server{{Name: "go", URL: url}}, ".")
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	reg := registryOf(t, m, "go")
	if res := reg.Call(t.Context(), "go.fails", json.RawMessage(`{}`)); res.OK || res.Error != "the disk is full" {
		t.Errorf("a failing tool: %+v", res)
	}
	if res := reg.Call(t.Context(), "go.broken", json.RawMessage(`{}`)); res.OK || !strings.Contains(res.Error, `mcp server "go": tool broken returned a result that breaks its own output schema`) {
		t.Errorf("an invalid result: %+v", res)
	}
	s.AddTool(&mcp.Tool{Name: "added", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "new"}}}, nil
		})
	deadline := time.Now().Add(10 * time.Second)
	for {
		ts, err := m.Tools(t.Context(), "go")
		if err != nil {
			t.Fatal(err)
		}
		if slices.ContainsFunc(ts, func(x tool.Tool) bool { return x.Definition().Name == "go.added" }) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the added tool never showed: list_changed was not heard")
		}
		time.Sleep(10 * time.Millisecond) // polling for the notification, not a delay
	}
}
