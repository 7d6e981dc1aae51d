package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/server"
)

// What a client that declares a body and does not send it meets, on real
// sockets: its answer does not wait for the body, a body that stops
// coming is cut, and a stream that answers a request is not cut by the
// deadline its body was read under.

// rawConn is a connection to the fixture's server that writes bytes as
// the test says, however wrong.
type rawConn struct {
	t  *testing.T
	c  net.Conn
	br *bufio.Reader
}

func dialRaw(t *testing.T, f *fixture) *rawConn {
	t.Helper()
	c, err := net.Dial("tcp", f.http.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &rawConn{t: t, c: c, br: bufio.NewReader(c)}
}

// head writes a request's line and headers, with a Content-Length of
// declared and a bearer key when key is set, and body (of however many
// bytes).
func (rc *rawConn) head(method, path, key string, declared int, body string) {
	rc.t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n",
		method, path, rc.c.RemoteAddr(), declared)
	if key != "" {
		fmt.Fprintf(&b, "Authorization: Bearer %s\r\n", key)
	}
	b.WriteString("\r\n")
	b.WriteString(body)
	if _, err := io.WriteString(rc.c, b.String()); err != nil {
		rc.t.Fatal(err)
	}
}

// answer reads the response within wait: its status, its error code and
// message, and whether the server closed the connection after it.
func (rc *rawConn) answer(wait time.Duration) (status int, e server.ErrorDetail, closed bool, err error) {
	_ = rc.c.SetReadDeadline(time.Now().Add(wait))
	resp, err := http.ReadResponse(rc.br, nil)
	if err != nil {
		return 0, e, false, err
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return 0, e, false, err
	}
	var eb server.ErrorBody
	_ = json.Unmarshal(b, &eb)
	// Closed: the server's FIN, or its reset when the client went on
	// writing a body the server no longer reads.
	_, err = rc.br.ReadByte()
	return resp.StatusCode, eb.Error, err != nil && !os.IsTimeout(err), nil
}

// wildcard is a wildcard of a route's pattern.
var wildcard = regexp.MustCompile(`\{[a-z]+\}`)

// A refusal written before the body is read waits for the body at most a
// second: every route's 401 to a client with no key that declared a body
// and sent none comes (the read deadline is an hour: it does not explain
// the answer), and the connection is closed; so do the mux's 404 and 405
// and a bad query's 400 to a client with a key. (A client that sends its
// body at once has it read, and keeps its connection: the conformance
// test's bodies over the limit.)
func TestRefusalsDoNotWaitForTheBody(t *testing.T) {
	f := newFixture(t, options{keys: []server.Key{{Key: "k1", Tenant: "acme"}}, config: func(c *server.Config) {
		c.Limits.ReadTimeout, c.Limits.RequestTimeout = time.Hour, time.Hour
	}})
	type refusal struct {
		method, path, key string
		status            int
		code              string
	}
	var cases []refusal
	for _, rt := range f.srv.Routes() {
		if !rt.Public {
			cases = append(cases, refusal{rt.Method, wildcard.ReplaceAllString(rt.Pattern, "x"), "", 401, agentrt.CodeUnauthorized})
		}
	}
	cases = append(cases,
		refusal{"POST", "/v1/nowhere", "k1", 404, agentrt.CodeNoRoute},
		refusal{"PUT", "/v1/sessions", "k1", 405, agentrt.CodeMethodNotAllowed},
		refusal{"POST", "/v1/sessions?a=%zz", "k1", 400, agentrt.CodeMalformedRequest})
	for _, c := range cases {
		t.Run(c.method+" "+c.path, func(t *testing.T) {
			t.Parallel()
			rc := dialRaw(t, f)
			rc.head(c.method, c.path, c.key, 100_000, "")
			status, e, closed, err := rc.answer(10 * time.Second)
			if err != nil {
				t.Fatalf("no answer to a stalled body: %v", err)
			}
			if status != c.status || e.Code != c.code || !closed {
				t.Fatalf("%d %s (closed: %v), want %d %s and the connection closed", status, e.Code, closed, c.status, c.code)
			}
		})
	}
}

// A body that stops coming is cut after the read timeout, with or without
// a key (keyless, the loopback client is let in and its body read), and
// one that trickles in is cut at the request timeout: 408 body_timeout,
// and the connection closed.
func TestStalledBodyIsCut(t *testing.T) {
	const readTimeout, requestTimeout = 200 * time.Millisecond, time.Second
	limits := func(c *server.Config) { c.Limits.ReadTimeout, c.Limits.RequestTimeout = readTimeout, requestTimeout }
	keyed := newFixture(t, options{keys: []server.Key{{Key: "k1", Tenant: "acme"}}, config: limits})
	keyless := newFixture(t, options{config: limits})
	for _, c := range []struct {
		name string
		f    *fixture
		key  string
	}{{"keyed", keyed, "k1"}, {"keyless", keyless, ""}} {
		t.Run(c.name, func(t *testing.T) {
			rc := dialRaw(t, c.f)
			rc.head("POST", "/v1/sessions", c.key, 100_000, `{"agent":`)
			status, e, closed, err := rc.answer(readTimeout + 10*time.Second)
			if err != nil {
				t.Fatalf("no answer to a stalled body: %v", err)
			}
			if status != http.StatusRequestTimeout || e.Code != agentrt.CodeBodyTimeout || !closed {
				t.Fatalf("%d %+v (closed: %v), want 408 %s and the connection closed", status, e, closed, agentrt.CodeBodyTimeout)
			}
		})
	}
	t.Run("trickle", func(t *testing.T) {
		rc := dialRaw(t, keyed)
		rc.head("POST", "/v1/sessions", "k1", 100_000, `{"agent":`)
		// A byte every half read timeout: each read makes progress, the
		// whole never comes.
		ctx, stop := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		wg.Go(func() {
			tick := time.NewTicker(readTimeout / 2)
			defer tick.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case <-tick.C:
					if _, err := rc.c.Write([]byte(" ")); err != nil {
						return
					}
				}
			}
		})
		status, e, closed, err := rc.answer(requestTimeout + 10*time.Second)
		stop()
		wg.Wait()
		if err != nil {
			t.Fatalf("no answer to a trickling body: %v", err)
		}
		if status != http.StatusRequestTimeout || e.Code != agentrt.CodeBodyTimeout || !strings.Contains(e.Message, "request_timeout") || !closed {
			t.Fatalf("%d %+v (closed: %v), want 408 %s for the whole body and the connection closed", status, e, closed, agentrt.CodeBodyTimeout)
		}
	})
}

// The deadline a body is read under ends with the body: a stream that
// answers the request goes on for longer than the read timeout, both when
// the handler reads the body (a turn's stream) and when it does not (a
// body sent to an event stream, which net/http reads before the stream's
// headers go). (http.Server's ReadTimeout, a deadline from the request's
// start, would not do: it cuts a long upload.)
func TestStreamOutlivesTheReadTimeout(t *testing.T) {
	const readTimeout = 100 * time.Millisecond
	f := newFixture(t, options{hold: true, config: func(c *server.Config) {
		c.Limits.ReadTimeout = readTimeout
		c.Heartbeat = 3 * readTimeout
	}})
	id := f.create(t, "")
	events := f.stream(t, "GET", "/v1/sessions/"+id+"/events", "", map[string]any{"ignored": true})
	turn := f.stream(t, "POST", "/v1/sessions/"+id+"/messages", "", map[string]any{"text": "hi"})
	// Two heartbeats: the streams lived for more than five read
	// timeouts. Then the turn ends, and both streams see it.
	var wg sync.WaitGroup
	for name, s := range map[string]func(func(sseEvent) bool){"events": events, "turn": turn} {
		pings := 0
		done := make(chan struct{})
		wg.Go(func() {
			defer func() {
				if pings < 2 {
					close(done)
				}
			}()
			for ev := range s {
				if ev.ping {
					if pings++; pings == 2 {
						close(done)
					}
					continue
				}
				if ev.typ == "run_finished" {
					return
				}
			}
			t.Errorf("the %s stream ended before its run did (%d heartbeats)", name, pings)
		})
		<-done
	}
	close(f.model.hold)
	wg.Wait()
}
