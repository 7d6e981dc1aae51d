package cli_test

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentrt/agentrt/internal/cli"
)

// agentrt mcp check, agentrt tools and agentrt config check look at the
// config and its servers; none creates the config's SQLite store.
func TestChecksCreateNoStore(t *testing.T) {
	t.Parallel()
	s := mcp.NewServer(&mcp.Implementation{Name: "go", Version: "1"}, nil)
	s.AddTool(&mcp.Tool{Name: "hello", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "hi"}}}, nil
		})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	e := newEnv(t, `
mcp_servers:
  go: {url: "http://`+l.Addr().String()+`"}
models:
  d: {provider: demo}
agents:
  assistant: {model: d, tools: ["go.*"], memory: {enabled: true}}
`, nil)
	db := filepath.Join(e.dir, "agentrt.db")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"mcp", "check"}, "go: ok, 1 tool(s): go.hello"},
		{[]string{"tools"}, "go.hello"},
		{[]string{"config", "check"}, ": ok (1 agent, 1 model)"},
	} {
		r := e.must(cli.ExitOK, tc.args...)
		if !strings.Contains(r.out, tc.want) {
			t.Errorf("agentrt %s: %v, want %q", strings.Join(tc.args, " "), r, tc.want)
		}
		if _, err := os.Stat(db); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("agentrt %s created the store %s (stat: %v)", strings.Join(tc.args, " "), db, err)
		}
	}
}
