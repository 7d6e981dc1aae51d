package mcptool

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A change announced while the list is being read is not lost: the list
// that reading returns may be the old one, so it is not kept, and the
// next Tools reads the list again.
func TestChangeAnnouncedWhileListing(t *testing.T) {
	ctx := t.Context()
	c := &conn{cfg: Server{Name: "mem", Timeout: DefaultTimeout}, sep: ".", changed: make(chan struct{}, 1)}
	s := mcp.NewServer(&mcp.Implementation{Name: "mem", Version: "1"}, nil)
	noop := func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{}, nil
	}
	s.AddTool(&mcp.Tool{Name: "old", InputSchema: json.RawMessage(`{"type":"object"}`)}, noop)
	announce := true
	s.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			res, err := next(ctx, method, req)
			if method == "tools/list" && announce {
				// The list is made; the server changes and says so
				// before the reply reaches the client.
				announce = false
				s.AddTool(&mcp.Tool{Name: "new", InputSchema: json.RawMessage(`{"type":"object"}`)}, noop)
				c.listChanged()
			}
			return res, err
		}
	})
	ct, st := mcp.NewInMemoryTransports()
	if _, err := s.Connect(ctx, st, nil); err != nil {
		t.Fatal(err)
	}
	sess, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	c.sess = sess
	defer c.close()

	first, err := c.list(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(first) != 1 || first[0].Name != "old" {
		t.Fatalf("the first list: %v", first)
	}
	second, err := c.list(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(second) != 2 {
		t.Errorf("the list after the change: %d tools, want 2 (the old list was kept)", len(second))
	}
}
