package server_test

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentrt/agentrt/server"
	"github.com/agentrt/agentrt/server/a2a"
	"github.com/agentrt/agentrt/server/agui"
	"github.com/agentrt/agentrt/server/mcp"
	"github.com/agentrt/agentrt/server/openai"
	"github.com/agentrt/agentrt/session/sqlite"
	"github.com/agentrt/agentrt/session/storetest"
)

// leak finds, in an answer's body, what a client must never read: the
// store's own words (the driver's, or the fault the test injects) and Go's
// (a decoder's message, a type name such as server.createRequest).
var leak = regexp.MustCompile(`(?i:sqlite|postgres|pgx|sqlstate|storetest|injected|` +
	`go struct|go value|unmarshal)|json: |\b[A-Z][a-z0-9]+[A-Z]\w*\.[a-z]|` +
	`\b(?:agentrt|server|session|gateway|openai|agui|a2a|mcp|model|tool|spec|jsonrpc|jsonschema)\.[a-z]*[A-Z]\w*|` +
	`map\[string\]|\[\](?:string|interface|any|\*?[a-z]+\.)|interface \{`)

// badBodies are bodies every route that takes one must refuse in words a
// client can act on: not an object, not JSON, fields of the wrong type
// (at the top and inside lists), which a decoder describes with Go's
// names.
var badBodies = []string{
	`null`, `[]`, `[1]`, `"text"`, `12`, `true`, `{`, `{"a":`, `{"a":1}}`, "\xff\xfe",
	`{"agent":5}`, `{"id":5}`, `{"metadata":5}`, `{"metadata":{"a":5}}`, `{"text":5}`, `{"parts":5}`, `{"parts":[5]}`,
	`{"decision":5}`, `{"selected":"x"}`, `{"at_seq":"x"}`, `{"model":5}`, `{"messages":5}`, `{"messages":[5]}`,
	`{"messages":[{"role":5}]}`, `{"messages":[{"role":"user","content":5}]}`, `{"input":5}`, `{"input":[5]}`,
	`{"input":[{"type":"message","role":5}]}`, `{"tools":5}`, `{"tools":[5]}`, `{"stream":"x"}`, `{"n":"x"}`,
	`{"threadId":5}`, `{"runId":5}`, `{"resume":5}`, `{"resume":[5]}`, `{"state":5,"threadId":"t","runId":"r","messages":5}`,
	`{"jsonrpc":5}`, `{"jsonrpc":"2.0","id":1,"method":5}`, `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":5}`,
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":5}`,
}

// goodBodies are bodies a route takes, for the requests that must reach
// the store (which then fails): by the route's pattern.
var goodBodies = map[string][]string{
	"POST /v1/sessions":                     {`{"agent":"assistant"}`},
	"POST /v1/sessions/{id}/messages":       {`{"text":"hi"}`},
	"POST /v1/sessions/{id}/requests/{rid}": {`{"decision":"approve"}`},
	"POST /v1/sessions/{id}/fork":           {`{"at_seq":1}`},
	"POST /v1/chat/completions":             {`{"model":"assistant","messages":[{"role":"user","content":"hi"}]}`},
	"POST /v1/responses":                    {`{"model":"assistant","input":"hi"}`, `{"model":"assistant","input":"hi","previous_response_id":"resp_x"}`},
	"POST /v1/agui/{agent}":                 {`{"threadId":"t1","runId":"r1","messages":[{"id":"m1","role":"user","content":"hi"}]}`, `{"threadId":"t1","runId":"r1","messages":[]}`},
	"POST /v1/a2a/{agent}":                  {`{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m1","role":"ROLE_USER","parts":[{"text":"hi"}]}}}`, `{"jsonrpc":"2.0","id":2,"method":"GetTask","params":{"id":"x"}}`},
	"POST /v1/mcp":                          {`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`},
	"POST /v1/sessions/{id}/cancel":         {`{}`},
	"POST /v1/sessions/{id}/interrupt":      {`{}`},
	"POST /v1/sessions/{id}/resume":         {`{}`},
	"POST /v1/responses/{id}/cancel":        {``},
	"DELETE /v1/sessions/{id}":              {``},
	"DELETE /v1/responses/{id}":             {``},
	"GET /v1/sessions/{id}/events":          {``},
	"GET /v1/responses/{id}":                {``},
}

// mountAdapters mounts the four protocol adapters on f's server, so that
// its Routes are every route agentrt serve has.
func mountAdapters(t *testing.T, f *fixture) {
	t.Helper()
	if _, err := openai.Mount(f.srv, openai.Config{}); err != nil {
		t.Fatal(err)
	}
	if err := agui.Mount(f.srv); err != nil {
		t.Fatal(err)
	}
	if err := a2a.Mount(f.srv, a2a.Config{}); err != nil {
		t.Fatal(err)
	}
	if err := mcp.Mount(f.srv, mcp.Config{}); err != nil {
		t.Fatal(err)
	}
}

// wsFrames are frames of the WebSocket API: malformed, and well formed
// about session {ID}, each with an id its reply echoes.
var wsFrames = []string{
	`null`, `[]`, `{"type":5}`, `{"type":"input","id":"i1","session":5}`, `{"type":"input","id":"i2","session":"{ID}","text":5}`,
	`{"type":"input","id":"i3","session":"{ID}","parts":[5]}`, `{"type":"input","id":"i4","session":"{ID}","metadata":{"a":5}}`,
	`{"type":"resolve","id":"r1","session":"{ID}","request_id":"req_nope","selected":"x"}`,
	`{"type":"input","id":"g1","session":"{ID}","text":"hi"}`, `{"type":"subscribe","id":"g2","session":"{ID}"}`,
	`{"type":"resolve","id":"g3","session":"{ID}","request_id":"req_nope","decision":"approve"}`,
	`{"type":"cancel","id":"g4","session":"{ID}"}`, `{"type":"unsubscribe","id":"g5","session":"{ID}"}`,
}

// No error body, on any route, says what the store or Go said: a
// malformed body, a body of the wrong shape, an unknown session, a
// session that exists already, and every request again while the store
// fails its reads, then its writes; the same of the WebSocket API's error
// frames and of the MCP tools' error results.
//
// A2A is left out: its JSON-RPC errors are a2a-go's, and the A2A part of
// issue 27 takes its internal chains out of them.
func TestErrorBodiesSayNoInternals(t *testing.T) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "agentrt.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	faults := &storetest.Faults{}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	f := newFixture(t, options{store: storetest.Faulty(st, faults), config: func(c *server.Config) { c.Log = quiet }})
	known := f.create(t, "")
	mountAdapters(t, f)
	client := &http.Client{Timeout: 30 * time.Second}
	check := func(t *testing.T, what string, status int, b []byte) {
		t.Helper()
		if m := leak.Find(b); m != nil {
			t.Errorf("%s: %d says %q: %s", what, status, m, bytes.TrimSpace(b))
		}
	}
	try := func(t *testing.T, method, path, body string) {
		t.Helper()
		var rd io.Reader
		if body != "" {
			rd = strings.NewReader(body)
		}
		req, err := http.NewRequest(method, f.http.URL+path, rd)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json")
		if path == "/v1/mcp" {
			req.Header.Set("Accept", "application/json, text/event-stream") // as MCP requires
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("%s %s %s: %v", method, path, body, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		// An error answer, or an error inside an answer that began well:
		// a stream's error event.
		if resp.StatusCode >= 400 || bytes.Contains(b, []byte(`"error`)) || bytes.Contains(b, []byte(`_ERROR`)) {
			check(t, fmt.Sprintf("%s %s %q", method, path, body), resp.StatusCode, b)
		}
	}
	// sweep makes every request of every route but A2A's, with the
	// session id id.
	sweep := func(t *testing.T, id string, bodies func(method, pattern string) []string) {
		t.Helper()
		fill := strings.NewReplacer("{id}", id, "{ID}", id, "{agent}", "assistant", "{model}", "assistant", "{rid}", "req_nope")
		routes := f.srv.Routes()
		// Deletes last: the others are about a session that exists.
		slices.SortStableFunc(routes, func(a, b server.Route) int {
			return cmp.Compare(boolInt(a.Method == "DELETE"), boolInt(b.Method == "DELETE"))
		})
		for _, rt := range routes {
			if strings.HasPrefix(rt.Pattern, "/v1/a2a") || rt.Pattern == "/openapi.json" {
				continue
			}
			for _, b := range bodies(rt.Method, rt.Pattern) {
				try(t, rt.Method, fill.Replace(rt.Pattern), fill.Replace(b))
			}
		}
	}
	malformed := func(method, _ string) []string {
		if method == "GET" {
			return []string{""}
		}
		return badBodies
	}
	good := func(method, pattern string) []string {
		if b, ok := goodBodies[method+" "+pattern]; ok {
			return b
		}
		return []string{""}
	}
	// frames sends every frame of wsFrames about session id on a
	// WebSocket opened before the store fails, and checks each reply.
	ws := wsStartReading(t, dialWS(t, f))
	frames := func(t *testing.T, id string) {
		t.Helper()
		for i, fr := range wsFrames {
			fr = strings.ReplaceAll(fr, "{ID}", id)
			ws.sendRaw(t, fr)
			var head struct {
				ID string `json:"id"`
			}
			_ = json.Unmarshal([]byte(fr), &head)
			reply := ws.await(t, head.ID)
			if reply.Type == "error" {
				check(t, fmt.Sprintf("frame %d %s", i, fr), 0, []byte(reply.Message))
			}
		}
	}
	// tools calls the agent's MCP tool, over a session opened before the
	// store fails, and checks each error result.
	mcs := mcpSession(t, f)
	tools := func(t *testing.T, id string) {
		t.Helper()
		for _, args := range []map[string]any{{"message": "hi", "session": id}, {"message": "hi"}, {"message": "hi", "sesion": id}} {
			res, err := mcs.CallTool(t.Context(), &sdk.CallToolParams{Name: "assistant", Arguments: args})
			if err != nil {
				check(t, fmt.Sprintf("MCP call %v", args), 0, []byte(err.Error()))
				continue
			}
			if res.IsError {
				check(t, fmt.Sprintf("MCP call %v", args), 0, []byte(structured(t, res)))
			}
		}
	}
	t.Run("malformed", func(t *testing.T) {
		sweep(t, known, malformed)
		known = f.create(t, "")
		frames(t, known)
	})
	t.Run("unknown session", func(t *testing.T) {
		sweep(t, "nope", good)
		frames(t, "nope")
	})
	t.Run("session exists", func(t *testing.T) {
		known = f.create(t, "")
		try(t, "POST", "/v1/sessions", `{"agent":"assistant","id":"`+known+`"}`)
		try(t, "POST", "/v1/sessions/"+known+"/fork", `{"at_seq":0,"id":"`+known+`"}`)
	})
	t.Run("failing reads", func(t *testing.T) {
		known = f.create(t, "")
		faults.FailRead(1, true)
		defer faults.FailRead(0, false)
		sweep(t, known, good)
		frames(t, known)
		tools(t, known)
	})
	t.Run("failing writes", func(t *testing.T) {
		known = f.create(t, "")
		faults.FailCommit(1, true)
		faults.FailInboxWrite(1, true)
		faults.FailLease(1, true)
		defer func() {
			faults.FailCommit(0, false)
			faults.FailInboxWrite(0, false)
			faults.FailLease(0, false)
		}()
		sweep(t, "fresh", good)
		frames(t, known)
		sweep(t, known, good)
		tools(t, "fresh-2")
	})
}

// dialWS opens a WebSocket on f's server, without a key.
func dialWS(t *testing.T, f *fixture) *websocket.Conn {
	t.Helper()
	c, resp, err := websocket.Dial(t.Context(), "ws"+strings.TrimPrefix(f.http.URL, "http")+"/v1/ws", nil)
	if err != nil {
		t.Fatalf("dial: %v (%s)", err, wsRespBody(resp))
	}
	return c
}

// mcpSession is an MCP client session of f's /v1/mcp, without a key.
func mcpSession(t *testing.T, f *fixture) *sdk.ClientSession {
	t.Helper()
	c := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, nil)
	cs, err := c.Connect(t.Context(), &sdk.StreamableClientTransport{Endpoint: f.http.URL + "/v1/mcp"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
