// Package mcptool gives agents the tools of MCP servers (the Model
// Context Protocol), through the official go-sdk client: servers started
// as commands (stdio) or reached over Streamable HTTP. A server's tools
// become tool.Tools named "SERVER.TOOL" (the separator is the Manager's),
// with the server's JSON Schemas.
//
// A server is connected on first use and shared by every run; a tool list
// change the server announces (notifications/tools/list_changed) is read
// again on the next Tools call, or at once when OnToolsChanged asked to
// hear of it, and Sync carries it into a tool.Registry; a call that finds
// the server gone reconnects (after a backoff when it keeps failing) and,
// if that fails, is a tool error the model reads.
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

// Manager holds the connections to MCP servers. Its methods may be called
// concurrently.
type Manager struct {
	sep   string
	conns map[string]*conn // fixed by New

	mu        sync.Mutex
	closed    bool               // guarded by mu
	stopWatch context.CancelFunc // ends the watchers; guarded by mu
	watchers  sync.WaitGroup     // the goroutines OnToolsChanged started
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
		m.conns[s.Name] = &conn{cfg: s, sep: sep, changed: make(chan struct{}, 1)}
	}
	return m, nil
}

// Names returns the servers' names, sorted.
func (m *Manager) Names() []string {
	out := make([]string, 0, len(m.conns))
	for n := range m.conns {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Close ends every connection (a stdio server's process with it) and the
// goroutines OnToolsChanged started, and waits for them. Later calls, and
// tool calls after it, connect nothing: they fail. It is idempotent.
func (m *Manager) Close() error {
	m.mu.Lock()
	m.closed = true
	if m.stopWatch != nil {
		m.stopWatch() // a list being read again gives up
	}
	m.mu.Unlock()
	var errs []error
	for _, c := range m.conns {
		errs = append(errs, c.close())
	}
	m.watchers.Wait()
	return errors.Join(errs...)
}

// OnToolsChanged has fn called with a server's tools each time they may
// have changed: when the server announces a change of its list
// (notifications/tools/list_changed) or the connection to it was made
// again after it broke. The list is read again first, on a goroutine of
// the Manager's, one per server; fn gets the error when that fails. Calls
// for one server come one at a time, and announcements that arrive while
// a list is being read are answered by one more reading. Close stops the
// goroutines and waits for a call of fn under way. A server no one has
// asked for tools is never connected, so it is never read again either.
//
// Call it once, before or after the first Tools call; a second call
// panics.
func (m *Manager) OnToolsChanged(fn func(server string, tools []tool.Tool, err error)) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.stopWatch != nil {
		panic("mcptool: OnToolsChanged called twice")
	}
	ctx, cancel := context.WithCancel(context.Background())
	m.stopWatch = cancel
	if m.closed {
		cancel()
		return
	}
	for name, c := range m.conns {
		m.watchers.Add(1)
		go func() {
			defer m.watchers.Done()
			for {
				select {
				case <-ctx.Done():
					return
				case <-c.changed:
				}
				ts, err := m.Tools(ctx, name)
				if ctx.Err() != nil {
					return // closing: the list is of no use any more
				}
				fn(name, ts, err)
			}
		}()
	}
}

// Tools connects to the server (if it is not) and returns its tools. A
// tool the server describes as it did at the last call is the same
// tool.Tool as then, so that Sync leaves it in place.
func (m *Manager) Tools(ctx context.Context, server string) ([]tool.Tool, error) {
	c := m.conns[server]
	if c == nil {
		return nil, fmt.Errorf("mcp: no server %q (have %s)", server, strings.Join(m.Names(), ", "))
	}
	list, err := c.list(ctx)
	if err != nil {
		return nil, err
	}
	return c.toolsOf(list), nil
}

// toolsOf returns the tools of list, reusing those made before from the
// same descriptions.
func (c *conn) toolsOf(list []*mcp.Tool) []tool.Tool {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]tool.Tool, 0, len(list))
	made := make(map[string]*mcpTool, len(list))
	for _, t := range list {
		desc, err := json.Marshal(t)
		if err != nil {
			desc = nil // never equal to a kept one's
		}
		if old := c.made[t.Name]; old != nil && desc != nil && string(old.desc) == string(desc) {
			made[t.Name] = old
			out = append(out, old)
			continue
		}
		schema, err := json.Marshal(t.InputSchema)
		if err != nil || string(schema) == "null" {
			schema = json.RawMessage(`{"type":"object"}`)
		}
		mt := &mcpTool{c: c, remote: t.Name, desc: desc, def: tool.Definition{
			Name: c.cfg.Name + c.sep + t.Name, Description: t.Description, InputSchema: schema}}
		if t.OutputSchema != nil {
			if outSchema, err := json.Marshal(t.OutputSchema); err == nil {
				// A result is checked against the schema the server
				// declared: one that breaks it is not a valid result.
				mt.output, _ = tool.NewValidator(tool.Definition{Name: mt.def.Name, InputSchema: outSchema})
			}
		}
		made[t.Name] = mt
		out = append(out, mt)
	}
	c.made = made
	return out
}

// Sync brings reg up to date with a server's tools, as Tools or an
// OnToolsChanged call gave them: in one tool.Registry.Replace it removes
// the server's tools that reg holds and tools lacks, and adds the tools
// that keep accepts (nil keeps all) and reg does not hold yet. A tool
// whose description changed is put in its old place. Tools of other
// servers, and tools that are not MCP tools, are left alone. It does
// nothing when nothing changed, so readers of reg keep what they derived
// from it.
func Sync(reg *tool.Registry, server string, tools []tool.Tool, keep func(name string) bool) error {
	held := map[string]*mcpTool{}
	for _, n := range reg.Names() {
		t, _ := reg.Get(n)
		if mt, ok := t.(*mcpTool); ok && mt.c.cfg.Name == server {
			held[n] = mt
		}
	}
	var remove []string
	var add []tool.Tool
	listed := make(map[string]bool, len(tools))
	for _, t := range tools {
		n := t.Definition().Name
		if keep != nil && !keep(n) {
			continue
		}
		listed[n] = true
		if mt, ok := t.(*mcpTool); ok && held[n] == mt {
			continue // unchanged
		}
		if held[n] != nil {
			remove = append(remove, n)
		}
		add = append(add, t)
	}
	for n := range held {
		if !listed[n] {
			remove = append(remove, n)
		}
	}
	if err := reg.Replace(remove, add...); err != nil {
		return fmt.Errorf("mcp server %q: %w", server, err)
	}
	return nil
}

// conn is one server's connection.
type conn struct {
	cfg     Server
	sep     string
	changed chan struct{} // cap 1: the tools may have changed

	mu       sync.Mutex
	closed   bool // Close was called: connect no more
	sess     *mcp.ClientSession
	tools    []*mcp.Tool         // the last list; nil when it must be read again
	stale    uint64              // counts the times tools was found out of date
	made     map[string]*mcpTool // the tools made from the last list, by remote name
	connects int                 // connections made
	failures int                 // connections that failed in a row
	retryAt  time.Time           // no new attempt before
	http     *http.Transport     // a Streamable HTTP server's connections
}

// listChanged is the server's notifications/tools/list_changed.
func (c *conn) listChanged() {
	c.mu.Lock()
	c.tools, c.stale = nil, c.stale+1 // read again on the next Tools
	c.mu.Unlock()
	c.signal()
}

// signal says the tools may have changed, to OnToolsChanged's goroutine.
func (c *conn) signal() {
	select {
	case c.changed <- struct{}{}:
	default: // one is pending already: it reads the newest list
	}
}

// session returns a live session, connecting if there is none.
func (c *conn) session(ctx context.Context) (*mcp.ClientSession, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.sess != nil {
		return c.sess, nil
	}
	if c.closed {
		return nil, fmt.Errorf("mcp server %q: the connections are closed", c.cfg.Name)
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
	c.sess, c.failures, c.tools, c.stale = sess, 0, nil, c.stale+1
	if c.connects++; c.connects > 1 {
		c.signal() // a server started again may offer other tools
	}
	return sess, nil
}

func (c *conn) connect(ctx context.Context) (*mcp.ClientSession, error) {
	client := mcp.NewClient(&mcp.Implementation{Name: "agentrt", Version: "1"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { c.listChanged() },
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
		if c.http == nil {
			// The server's own, so that closing it leaves no idle
			// connection behind (http.DefaultTransport's would stay).
			c.http = http.DefaultTransport.(*http.Transport).Clone()
		}
		hc := &http.Client{Transport: headerTransport{headers: c.cfg.Headers, base: c.http}}
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
	cached, stale := c.tools, c.stale
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
	if c.stale == stale {
		// Kept only if no change was announced while it was read: such
		// a list may be the old one, and the next Tools reads it again.
		c.tools = out
	}
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
	sess, tr := c.sess, c.http
	c.sess, c.closed = nil, true
	c.mu.Unlock()
	var err error
	if sess != nil {
		err = sess.Close()
	}
	if tr != nil {
		tr.CloseIdleConnections()
	}
	return err
}

// mcpTool is one tool of a server.
type mcpTool struct {
	c      *conn
	remote string
	desc   []byte // the server's description of it, as JSON
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
