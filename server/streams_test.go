package server_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/coder/websocket"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/model/scripted"
	"github.com/agentrt/agentrt/server"
)

// answered is a slog handler that hands the test the route of each
// request the server has answered: the request log is written once the
// handler, and what counted its stream, have returned.
type answered struct{ routes chan string }

func (*answered) Enabled(context.Context, slog.Level) bool { return true }
func (a *answered) Handle(_ context.Context, r slog.Record) error {
	if r.Message == "request" {
		r.Attrs(func(at slog.Attr) bool {
			if at.Key == "route" {
				select {
				case a.routes <- at.Value.String():
				default: // the test has more than it waits for
				}
			}
			return true
		})
	}
	return nil
}
func (a *answered) WithAttrs([]slog.Attr) slog.Handler { return a }
func (a *answered) WithGroup(string) slog.Handler      { return a }

// openSSE opens an event stream of path with key and returns its close.
func openSSE(t *testing.T, f *fixture, path, key string) (status int, code string, stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, "GET", f.http.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		var e server.ErrorBody
		_ = json.NewDecoder(resp.Body).Decode(&e)
		resp.Body.Close()
		cancel()
		return resp.StatusCode, e.Error.Code, func() {}
	}
	return resp.StatusCode, "", func() {
		cancel()
		resp.Body.Close()
	}
}

// A key holds at most its allowance of streams at once: one more, on any
// route that may stream (the route table's, and an adapter's route
// mounted on the server), is 429 too_many_streams before anything is
// done, while a request that asks for no stream and another key's
// streams go on; a stream that ends gives its place back.
func TestStreamsPerKey(t *testing.T) {
	logs := &answered{routes: make(chan string, 1024)}
	f := newFixture(t, options{keys: []server.Key{{Key: "a", Tenant: "acme"}, {Key: "b", Tenant: "acme", MaxStreams: 3}},
		config: func(c *server.Config) { c.MaxStreams, c.Log = 2, slog.New(logs) }})
	var adapterTurns atomic.Int32
	f.srv.Mount("POST", "/v1/test/turns", true, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		adapterTurns.Add(1)
		w.WriteHeader(http.StatusOK)
	}))
	id := f.create(t, "a")
	events := "/v1/sessions/" + id + "/events"
	drain := func() {
		for {
			select {
			case <-logs.routes:
			default:
				return
			}
		}
	}

	var stops []func()
	for range 2 {
		status, code, stop := openSSE(t, f, events, "a")
		if status != http.StatusOK {
			t.Fatalf("stream %d of key a: %d %s", len(stops)+1, status, code)
		}
		stops = append(stops, stop)
	}
	for _, rt := range f.srv.Routes() {
		if !rt.Stream {
			continue
		}
		t.Run(rt.Method+" "+rt.Pattern, func(t *testing.T) {
			path := wildcard.ReplaceAllString(rt.Pattern, id)
			var body io.Reader
			if rt.Method == "POST" {
				body = strings.NewReader(`{"text":"hi"}`)
			}
			req, err := http.NewRequest(rt.Method, f.http.URL+path, body)
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Authorization", "Bearer a")
			if body != nil {
				req.Header.Set("Content-Type", "application/json")
			}
			req.Header.Set("Accept", "text/event-stream")
			req.Header.Set("Connection", "Upgrade")
			req.Header.Set("Upgrade", "websocket")
			req.Header.Set("Sec-WebSocket-Version", "13")
			req.Header.Set("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ==")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			var e server.ErrorBody
			if resp.StatusCode >= 400 { // else a stream, which does not end
				_ = json.NewDecoder(resp.Body).Decode(&e)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusTooManyRequests || e.Error.Code != agentrt.CodeTooManyStreams {
				t.Errorf("a third stream of key a: %d %+v, want 429 %s", resp.StatusCode, e.Error, agentrt.CodeTooManyStreams)
			}
		})
	}
	if n := adapterTurns.Load(); n != 0 {
		t.Errorf("the adapter's handler ran %d times for a key with no room", n)
	}
	if code, body, _ := f.do(t, "GET", events, "a", nil); code != http.StatusOK {
		t.Errorf("the log as JSON, with key a's streams all taken: %d %s", code, body)
	}
	if code, body, _ := f.do(t, "POST", "/v1/sessions/"+id+"/messages", "a", map[string]any{"text": "hi"}); code != http.StatusAccepted {
		t.Errorf("an input as JSON, with key a's streams all taken: %d %s", code, body)
	}
	for range 3 {
		status, code, stop := openSSE(t, f, events, "b")
		if status != http.StatusOK {
			t.Fatalf("a stream of key b, whose max_streams is 3: %d %s", status, code)
		}
		defer stop()
	}
	if status, code, _ := openSSE(t, f, events, "b"); status != http.StatusTooManyRequests || code != agentrt.CodeTooManyStreams {
		t.Errorf("a fourth stream of key b: %d %s, want 429 %s", status, code, agentrt.CodeTooManyStreams)
	}

	// One of a's streams ends: once the server has answered it, a's next
	// stream is let in.
	drain()
	stops[0]()
	for r := range logs.routes {
		if r == "/v1/sessions/{id}/events" {
			break
		}
	}
	status, code, stop := openSSE(t, f, events, "a")
	if status != http.StatusOK {
		t.Fatalf("a stream of key a after one of its two ended: %d %s", status, code)
	}
	stop()
	stops[1]()
}

// A WebSocket's subscriptions are streams of its key too: a connection
// (one stream) and its subscriptions hold at most the key's allowance;
// one more subscription is refused with an error frame, and an
// unsubscribe gives its place back. Without keys, the clients on this
// machine share one allowance.
func TestWSSubscriptionsCount(t *testing.T) {
	e := newWSEnv(t, server.Config{MaxStreams: 3}, wsTextAgent("a", scripted.Reply{Text: "hello"}))
	for _, id := range []string{"s1", "s2", "s3"} {
		e.session(t, "", "a", id)
	}
	cl := e.dial(t, "")
	for _, id := range []string{"s1", "s2"} {
		cl.send(t, wsMsg{"type": "subscribe", "id": id, "session": id})
		if f := cl.await(t, id); f.Type != "subscribed" {
			t.Fatalf("subscribe %s: %+v", id, f)
		}
	}
	cl.send(t, wsMsg{"type": "subscribe", "id": "s3", "session": "s3"})
	if f := cl.await(t, "s3"); f.Type != "error" || f.Code != agentrt.CodeTooManyStreams {
		t.Fatalf("a third subscription of a connection with an allowance of 3: %+v, want an error frame %s", f, agentrt.CodeTooManyStreams)
	}
	_, resp, err := websocket.Dial(context.Background(), e.url, wsDialOptions(""))
	if err == nil || resp == nil || resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("a second connection with the allowance taken: %v (%s), want 429", err, wsRespBody(resp))
	}
	cl.send(t, wsMsg{"type": "unsubscribe", "id": "u1", "session": "s1"})
	if f := cl.await(t, "u1"); f.Type != "unsubscribed" {
		t.Fatalf("unsubscribe: %+v", f)
	}
	cl.send(t, wsMsg{"type": "subscribe", "id": "s3b", "session": "s3"})
	if f := cl.await(t, "s3b"); f.Type != "subscribed" {
		t.Fatalf("a subscription after an unsubscribe: %+v", f)
	}
}
