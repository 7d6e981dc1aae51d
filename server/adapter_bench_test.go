package server_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentrt/agentrt/server/a2a"
	"github.com/agentrt/agentrt/server/agui"
	"github.com/agentrt/agentrt/server/mcp"
	"github.com/agentrt/agentrt/server/openai"
)

// The benchmarks of the protocol adapters: the same scripted turn (the
// echo model, a new session each turn, created beforehand and not timed)
// streamed through the server's native SSE endpoint and through each
// adapter's streaming endpoint, on one server with every adapter mounted.
// The clients speak each protocol's wire format over plain net/http (no
// SDK), so that the difference is the adapter's. docs/benchmarks.md has
// the figures and the bar: each adapter ≤ 1.1× native.

// protocols are the sub-benchmarks of BenchmarkAdapterTurnLatency.
var protocols = []string{"native", "openai", "agui", "a2a", "mcp"}

// adapterServer is a load server (over memstore) with the four adapters
// mounted.
func adapterServer(b *testing.B, m *slowEcho, workers int) target {
	b.Helper()
	tg := serverTarget(b, nil, m, workers)
	if _, err := openai.Mount(tg.srv.srv, openai.Config{}); err != nil {
		b.Fatal(err)
	}
	if err := agui.Mount(tg.srv.srv); err != nil {
		b.Fatal(err)
	}
	if err := a2a.Mount(tg.srv.srv, a2a.Config{}); err != nil {
		b.Fatal(err)
	}
	if err := mcp.Mount(tg.srv.srv, mcp.Config{}); err != nil {
		b.Fatal(err)
	}
	return tg
}

// protocolTurn streams one turn of session id with text through a
// protocol's streaming endpoint and checks that the stream is complete.
type protocolTurn func(ctx context.Context, c *client, id, text string) error

// newProtocolTurn returns the turn of protocol name on tg; for MCP it
// first opens an MCP session (initialize), which the turns share, as a
// client would.
func newProtocolTurn(b *testing.B, tg target, c *client, name string) protocolTurn {
	b.Helper()
	switch name {
	case "native":
		return tg.turn
	case "openai":
		return openaiTurn
	case "agui":
		return aguiTurn
	case "a2a":
		return a2aTurn
	case "mcp":
		sid, err := mcpInitialize(context.Background(), c)
		if err != nil {
			b.Fatal(err)
		}
		var next int
		var mu sync.Mutex
		return func(ctx context.Context, c *client, id, text string) error {
			mu.Lock()
			next++
			n := next
			mu.Unlock()
			return mcpTurn(ctx, c, sid, n, id, text)
		}
	}
	b.Fatalf("no protocol %q", name)
	return nil
}

// BenchmarkAdapterTurnLatency: one client, sequential turns, each a new
// session, the model taking no time: ns/op is the latency of a turn from
// the request to the stream's last byte, through the native endpoint
// (protocol=native) or an adapter. Bar: each adapter ≤ 1.1× native.
func BenchmarkAdapterTurnLatency(b *testing.B) {
	for _, name := range protocols {
		b.Run("protocol="+name, func(b *testing.B) {
			tg := adapterServer(b, &slowEcho{}, 0)
			c := newClient(b, tg.url, 1)
			turn := newProtocolTurn(b, tg, c, name)
			ctx := context.Background()
			ids := tg.sessions(b, b.N)
			lat := make([]time.Duration, 0, b.N)
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				start := time.Now()
				if err := turn(ctx, c, ids[i], "hello there"); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(start))
			}
			b.StopTimer()
			reportQuantiles(b, lat)
		})
	}
}

// BenchmarkOpenAIConcurrentStreams: one op is 1,000 sessions each
// streaming a chat completion (stream: true) at once, the model taking
// 50 ms a reply, with 1,000 gateway workers so that all run at once, as
// BenchmarkConcurrentStreams does for the native endpoint
// (protocol=native here, for the ratio in the same run). Every stream
// must end complete: for OpenAI a finish_reason and [DONE].
func BenchmarkOpenAIConcurrentStreams(b *testing.B) {
	const sessions = 1000
	for _, name := range []string{"native", "openai"} {
		b.Run("protocol="+name, func(b *testing.B) {
			tg := adapterServer(b, &slowEcho{delay: 50 * time.Millisecond}, sessions)
			c := newClient(b, tg.url, sessions)
			turn := newProtocolTurn(b, tg, c, name)
			ctx := context.Background()
			b.ResetTimer()
			for range b.N {
				b.StopTimer()
				ids := tg.sessions(b, sessions)
				b.StartTimer()
				errs := make([]error, sessions)
				var wg sync.WaitGroup
				for i, id := range ids {
					wg.Go(func() { errs[i] = turn(ctx, c, id, fmt.Sprintf("hello from %d", i)) })
				}
				wg.Wait()
				if err := errors.Join(errs...); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// sseData reads a server-sent event stream to its end (or until stop
// says so of a data payload, included) and returns the data payloads.
func sseData(r io.Reader, stop func([]byte) bool) ([][]byte, error) {
	br := bufio.NewReader(r)
	var out [][]byte
	var long []byte
	for {
		line, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			long = append(long, line...)
			continue
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = nil
			}
			return out, err
		}
		if long != nil {
			line, long = append(long, line...), nil
		}
		data, ok := bytes.CutPrefix(bytes.TrimRight(line, "\r\n"), []byte("data:"))
		if !ok {
			continue
		}
		data = bytes.Clone(bytes.TrimPrefix(data, []byte(" ")))
		out = append(out, data)
		if stop != nil && stop(data) {
			return out, nil
		}
	}
}

// openaiTurn streams a chat completion of session id (the Agentrt-Session
// header): complete when a chunk has a finish_reason and the stream ends
// with [DONE].
func openaiTurn(ctx context.Context, c *client, id, text string) error {
	body, err := c.open(ctx, "POST", "/v1/chat/completions",
		`{"model":"assistant","stream":true,"messages":[{"role":"user","content":"`+text+`"}]}`,
		"Content-Type", "application/json", "Agentrt-Session", id)
	if err != nil {
		return err
	}
	defer body.Close()
	data, err := sseData(body, func(d []byte) bool { return string(d) == "[DONE]" })
	if err != nil {
		return fmt.Errorf("session %s: %w", id, err)
	}
	if len(data) == 0 || string(data[len(data)-1]) != "[DONE]" {
		return fmt.Errorf("session %s: the chat completion stream did not end with [DONE]: %q", id, data)
	}
	var content strings.Builder
	finished := false
	for _, d := range data[:len(data)-1] {
		var chunk struct {
			Choices []struct {
				Delta        struct{ Content string }
				FinishReason *string `json:"finish_reason"`
			}
		}
		if err := json.Unmarshal(d, &chunk); err != nil {
			return fmt.Errorf("session %s: chunk %s: %v", id, d, err)
		}
		for _, ch := range chunk.Choices {
			content.WriteString(ch.Delta.Content)
			finished = finished || ch.FinishReason != nil && *ch.FinishReason != ""
		}
	}
	if !finished || content.String() != "echo: "+text {
		return fmt.Errorf("session %s: finish_reason seen %v, content %q; want a finish_reason and %q", id, finished, content.String(), "echo: "+text)
	}
	return nil
}

// aguiTurn runs a turn of thread id over AG-UI: complete when the stream
// ends with RUN_FINISHED after RUN_STARTED.
func aguiTurn(ctx context.Context, c *client, id, text string) error {
	body, err := c.open(ctx, "POST", "/v1/agui/assistant",
		`{"threadId":"`+id+`","runId":"r-`+id+`","state":{},"tools":[],"context":[],"forwardedProps":{},`+
			`"messages":[{"id":"m-`+id+`","role":"user","content":"`+text+`"}]}`,
		"Content-Type", "application/json")
	if err != nil {
		return err
	}
	defer body.Close()
	data, err := sseData(body, nil)
	if err != nil {
		return fmt.Errorf("session %s: %w", id, err)
	}
	var types []string
	for _, d := range data {
		var ev struct{ Type string }
		if err := json.Unmarshal(d, &ev); err != nil {
			return fmt.Errorf("session %s: AG-UI event %s: %v", id, d, err)
		}
		types = append(types, ev.Type)
	}
	if len(types) < 2 || types[0] != "RUN_STARTED" || types[len(types)-1] != "RUN_FINISHED" {
		return fmt.Errorf("session %s: AG-UI events %v, want RUN_STARTED … RUN_FINISHED", id, types)
	}
	return nil
}

// a2aTurn sends a message in context id with SendStreamingMessage
// (JSON-RPC over HTTP, SSE): complete when the stream's last event is the
// task's final status, completed.
func a2aTurn(ctx context.Context, c *client, id, text string) error {
	body, err := c.open(ctx, "POST", "/v1/a2a/assistant",
		`{"jsonrpc":"2.0","id":1,"method":"SendStreamingMessage","params":{"message":{"messageId":"m-`+id+
			`","contextId":"`+id+`","role":"ROLE_USER","parts":[{"text":"`+text+`"}]}}}`,
		"Content-Type", "application/json")
	if err != nil {
		return err
	}
	defer body.Close()
	data, err := sseData(body, nil)
	if err != nil {
		return fmt.Errorf("session %s: %w", id, err)
	}
	if len(data) == 0 {
		return fmt.Errorf("session %s: an empty A2A stream", id)
	}
	for _, d := range data {
		if bytes.Contains(d, []byte(`"error"`)) {
			return fmt.Errorf("session %s: A2A error %s", id, d)
		}
	}
	if last := data[len(data)-1]; !bytes.Contains(last, []byte("TASK_STATE_COMPLETED")) {
		return fmt.Errorf("session %s: the A2A stream ended with %s, want the task completed", id, last)
	}
	return nil
}

// mcpInitialize opens an MCP session over Streamable HTTP (initialize,
// then notifications/initialized) and returns its id.
func mcpInitialize(ctx context.Context, c *client) (string, error) {
	req, err := http.NewRequestWithContext(ctx, "POST", c.base+mcp.Path, strings.NewReader(
		`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}`))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := c.c.Do(req)
	if err != nil {
		return "", err
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	sid := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != http.StatusOK || sid == "" {
		return "", fmt.Errorf("MCP initialize: %d, session %q: %s", resp.StatusCode, sid, b)
	}
	req, err = http.NewRequestWithContext(ctx, "POST", c.base+mcp.Path, strings.NewReader(`{"jsonrpc":"2.0","method":"notifications/initialized"}`))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Session-Id", sid)
	resp, err = c.c.Do(req)
	if err != nil {
		return "", err
	}
	b, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return "", fmt.Errorf("MCP notifications/initialized: %d %s", resp.StatusCode, b)
	}
	return sid, nil
}

// mcpTurn calls the agent's tool in MCP session sid with the agentrt
// session id (tools/call, request n): complete when the stream's last
// message is the call's result, not an error, with the answer.
func mcpTurn(ctx context.Context, c *client, sid string, n int, id, text string) error {
	body, err := c.open(ctx, "POST", mcp.Path,
		fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"assistant","arguments":{"message":%q,"session":%q}}}`, n, text, id),
		"Content-Type", "application/json", "Accept", "application/json, text/event-stream", "Mcp-Session-Id", sid)
	if err != nil {
		return err
	}
	defer body.Close()
	data, err := sseData(body, nil)
	if err != nil {
		return fmt.Errorf("session %s: %w", id, err)
	}
	if len(data) == 0 {
		return fmt.Errorf("session %s: an empty MCP stream", id)
	}
	var res struct {
		ID     int
		Result *struct {
			IsError           bool
			StructuredContent struct{ Answer string }
		}
		Error json.RawMessage
	}
	last := data[len(data)-1]
	if err := json.Unmarshal(last, &res); err != nil {
		return fmt.Errorf("session %s: MCP message %s: %v", id, last, err)
	}
	if res.ID != n || res.Result == nil || res.Result.IsError || res.Result.StructuredContent.Answer != "echo: "+text {
		return fmt.Errorf("session %s: the MCP stream ended with %s, want the result of call %d answering %q", id, last, n, "echo: "+text)
	}
	return nil
}
