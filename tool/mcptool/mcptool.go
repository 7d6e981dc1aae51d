// Package mcptool gives agents the tools of MCP servers (the Model
// Context Protocol), through the official go-sdk client: servers started
// as commands (stdio) or reached over Streamable HTTP. A server's tools
// become tool.Tools named "SERVER.TOOL" (the separator is the Manager's),
// with the server's JSON Schemas.
//
// A server is connected on first use and shared by every run; a tool list
// change the server announces is read again on the next Tools call; a
// call that finds the server gone reconnects (after a backoff when it
// keeps failing) and, if that fails, is a tool error the model reads.
package mcptool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentrt/agentrt/tool"
)

// Server says how to reach one MCP server.
type Server struct {
	Name string
	// A stdio server: the command, its arguments, extra environment and
	// working directory.
	Command string
	Args    []string
	Env     map[string]string
	Dir     string
	// A Streamable HTTP server: its URL and extra headers.
	URL     string
	Headers map[string]string
	// Timeout bounds connecting and each call; zero means DefaultTimeout.
	Timeout time.Duration
}

// DefaultTimeout is a Server's Timeout when it is zero.
const DefaultTimeout = 60 * time.Second

// Manager holds the connections to MCP servers.
type Manager struct {
	sep   string
	mu    sync.Mutex
	conns map[string]*conn
}

// New returns a Manager for servers; sep joins a server's name and its
// tools' ("." when empty).
func New(servers []Server, sep string) (*Manager, error) {
	if sep == "" {
		sep = "."
	}
	m := &Manager{sep: sep, conns: map[string]*conn{}}
	for _, s := range servers {
		switch {
		case s.Name == "":
			return nil, errors.New("mcp: a server without a name")
		case (s.Command == "") == (s.URL == ""):
			return nil, fmt.Errorf("mcp server %q: give a command or a url, not both or neither", s.Name)
		}
		if s.Timeout <= 0 {
			s.Timeout = DefaultTimeout
		}
		m.conns[s.Name] = &conn{cfg: s}
	}
	return m, nil
}

// Names returns the servers' names, sorted.
func (m *Manager) Names() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]string, 0, len(m.conns))
	for n := range m.conns {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Close ends every connection (a stdio server's process with it).
func (m *Manager) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	var errs []error
	for _, c := range m.conns {
		errs = append(errs, c.close())
	}
	return errors.Join(errs...)
}

// Tools connects to the server (if it is not) and returns its tools.
func (m *Manager) Tools(ctx context.Context, server string) ([]tool.Tool, error) {
	m.mu.Lock()
	c := m.conns[server]
	m.mu.Unlock()
	if c == nil {
		return nil, fmt.Errorf("mcp: no server %q (have %s)", server, strings.Join(m.Names(), ", "))
	}
	list, err := c.list(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]tool.Tool, 0, len(list))
	for _, t := range list {
		schema, err := json.Marshal(t.InputSchema)
		if err != nil || string(schema) == "null" {
			schema = json.RawMessage(`{"type":"object"}`)
		}
		mt := &mcpTool{c: c, remote: t.Name, def: tool.Definition{
			Name: server + m.sep + t.Name, Description: t.Description, InputSchema: schema}}
		if t.OutputSchema != nil {
			if outSchema, err := json.Marshal(t.OutputSchema); err == nil {
				// A result is checked against the schema the server
				// declared: one that breaks it is not a valid result.
				mt.output, _ = tool.NewValidator(tool.Definition{Name: mt.def.Name, InputSchema: outSchema})
			}
		}
		out = append(out, mt)
	}
	return out, nil
}

// conn is one server's connection.
type conn struct {
	cfg Server

	mu       sync.Mutex
	sess     *mcp.ClientSession
	tools    []*mcp.Tool // the last list; nil when it must be read again
	failures int         // connections that failed in a row
	retryAt  time.Time   // no new attempt before
}

// session returns a live session, connecting if there is none.
func (c *conn) session(ctx context.Context) (*mcp.ClientSession, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.sess != nil {
		return c.sess, nil
	}
	if wait := time.Until(c.retryAt); wait > 0 {
		return nil, fmt.Errorf("mcp server %q failed %d time(s) in a row; next attempt in %s", c.cfg.Name, c.failures, wait.Round(time.Millisecond))
	}
	cctx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
	defer cancel()
	sess, err := c.connect(cctx)
	if err != nil {
		c.failures++
		c.retryAt = time.Now().Add(min(time.Duration(1<<min(c.failures-1, 5))*time.Second/2, 30*time.Second))
		return nil, err
	}
	c.sess, c.failures, c.tools = sess, 0, nil
	return sess, nil
}

func (c *conn) connect(ctx context.Context) (*mcp.ClientSession, error) {
	client := mcp.NewClient(&mcp.Implementation{Name: "agentrt", Version: "1"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			c.mu.Lock()
			c.tools = nil // read again on the next Tools
			c.mu.Unlock()
		},
	})
	var t mcp.Transport
	if c.cfg.Command != "" {
		path, err := exec.LookPath(c.cfg.Command)
		if err != nil {
			return nil, fmt.Errorf("mcp server %q: command %q: %w", c.cfg.Name, c.cfg.Command, err)
		}
		cmd := exec.Command(path, c.cfg.Args...)
		cmd.Dir = c.cfg.Dir
		cmd.Env = os.Environ()
		for k, v := range c.cfg.Env {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
		t = &mcp.CommandTransport{Command: cmd, TerminateDuration: 2 * time.Second}
	} else {
		hc := &http.Client{Transport: headerTransport{headers: c.cfg.Headers, base: http.DefaultTransport}}
		t = &mcp.StreamableClientTransport{Endpoint: c.cfg.URL, HTTPClient: hc}
	}
	sess, err := client.Connect(ctx, t, nil)
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("mcp server %q did not answer its initialization within %s", c.cfg.Name, c.cfg.Timeout)
		}
		return nil, fmt.Errorf("mcp server %q: cannot connect: %w", c.cfg.Name, err)
	}
	return sess, nil
}

// headerTransport adds a server's headers to its requests.
type headerTransport struct {
	headers map[string]string
	base    http.RoundTripper
}

func (h headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if len(h.headers) > 0 {
		r = r.Clone(r.Context())
		for k, v := range h.headers {
			r.Header.Set(k, v)
		}
	}
	return h.base.RoundTrip(r)
}

// list returns the server's tools, read again when it said they changed.
func (c *conn) list(ctx context.Context) ([]*mcp.Tool, error) {
	sess, err := c.session(ctx)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	cached := c.tools
	c.mu.Unlock()
	if cached != nil {
		return cached, nil
	}
	lctx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
	defer cancel()
	var out []*mcp.Tool
	for t, err := range sess.Tools(lctx, nil) {
		if err != nil {
			c.drop(sess)
			return nil, fmt.Errorf("mcp server %q: listing tools: %w", c.cfg.Name, err)
		}
		out = append(out, t)
	}
	c.mu.Lock()
	c.tools = out
	c.mu.Unlock()
	return out, nil
}

// drop forgets a session that failed, so that the next use reconnects.
func (c *conn) drop(sess *mcp.ClientSession) {
	c.mu.Lock()
	if c.sess == sess {
		c.sess = nil
	}
	c.mu.Unlock()
	_ = sess.Close()
}

func (c *conn) close() error {
	c.mu.Lock()
	sess := c.sess
	c.sess = nil
	c.mu.Unlock()
	if sess == nil {
		return nil
	}
	return sess.Close()
}

// mcpTool is one tool of a server.
type mcpTool struct {
	c      *conn
	remote string
	def    tool.Definition
	output *tool.Validator // the server's output schema; nil for none
}

func (t *mcpTool) Definition() tool.Definition { return t.def }

// Call calls the tool. A server that is gone is reconnected once; its
// failure, and the tool's own error, are errors the model reads.
func (t *mcpTool) Call(ctx context.Context, args json.RawMessage) (json.RawMessage, error) {
	res, err := t.call(ctx, args)
	if err != nil && ctx.Err() == nil && errors.Is(err, mcp.ErrConnectionClosed) {
		res, err = t.call(ctx, args) // the server died: once more, on a new connection
	}
	if err != nil {
		return nil, err
	}
	text := contentText(res.Content)
	if res.IsError {
		if text == "" {
			text = "the tool failed without saying why"
		}
		return nil, errors.New(text)
	}
	if res.StructuredContent != nil {
		out, err := json.Marshal(res.StructuredContent)
		if err != nil {
			return nil, fmt.Errorf("mcp server %q: tool %s returned a result that is not JSON: %v", t.c.cfg.Name, t.remote, err)
		}
		if t.output != nil {
			if err := t.output.Validate(out); err != nil {
				return nil, fmt.Errorf("mcp server %q: tool %s returned a result that breaks its own output schema: %v", t.c.cfg.Name, t.remote, err)
			}
		}
		return out, nil
	}
	if json.Valid([]byte(text)) && (strings.HasPrefix(strings.TrimSpace(text), "{") || strings.HasPrefix(strings.TrimSpace(text), "[")) {
		return json.RawMessage(text), nil
	}
	return json.Marshal(map[string]string{"text": text})
}

func (t *mcpTool) call(ctx context.Context, args json.RawMessage) (*mcp.CallToolResult, error) {
	sess, err := t.c.session(ctx)
	if err != nil {
		return nil, err
	}
	cctx, cancel := context.WithTimeout(ctx, t.c.cfg.Timeout)
	defer cancel()
	res, err := sess.CallTool(cctx, &mcp.CallToolParams{Name: t.remote, Arguments: args})
	if err != nil {
		if errors.Is(err, mcp.ErrConnectionClosed) {
			t.c.drop(sess)
			return nil, fmt.Errorf("mcp server %q stopped during the call: %w", t.c.cfg.Name, err)
		}
		if cctx.Err() != nil && ctx.Err() == nil {
			return nil, fmt.Errorf("mcp server %q did not answer within %s", t.c.cfg.Name, t.c.cfg.Timeout)
		}
		return nil, fmt.Errorf("mcp server %q: %w", t.c.cfg.Name, err)
	}
	return res, nil
}

// contentText joins a result's text contents.
func contentText(cs []mcp.Content) string {
	var parts []string
	for _, c := range cs {
		if tc, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}
