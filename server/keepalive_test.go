package server_test

import (
	"bufio"
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/agentrt/agentrt/server"
	"github.com/agentrt/agentrt/server/agui"
	"github.com/agentrt/agentrt/server/openai"
)

// A streamed turn that is quiet (its model thinks) carries keep-alive
// comments through the OpenAI and AG-UI adapters, which write their own
// server-sent events, and its stream is still whole after them: the model
// answers only once the test has read a comment, so no timing is assumed.
func TestAdapterStreamsKeepAlive(t *testing.T) {
	for _, tc := range []struct {
		name, path, body, last string
	}{
		{"openai", "/v1/chat/completions", `{"model":"assistant","stream":true,"messages":[{"role":"user","content":"slow"}]}`, "data: [DONE]"},
		{"openai responses", "/v1/responses", `{"model":"assistant","stream":true,"input":"slow"}`, `"type":"response.completed"`},
		{"agui", "/v1/agui/assistant", `{"threadId":"ka","runId":"r1","messages":[{"id":"m1","role":"user","content":"slow"}]}`, `"type":"RUN_FINISHED"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, options{hold: true, config: func(c *server.Config) { c.Heartbeat = 5 * time.Millisecond }})
			if _, err := openai.Mount(f.srv, openai.Config{}); err != nil {
				t.Fatal(err)
			}
			if err := agui.Mount(f.srv); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
			defer cancel()
			req, err := http.NewRequestWithContext(ctx, "POST", f.http.URL+tc.path, strings.NewReader(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", "application/json")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			br := bufio.NewReader(resp.Body)
			var lines []string
			released := false
			for {
				line, err := br.ReadString('\n')
				if err != nil {
					break
				}
				line = strings.TrimRight(line, "\n")
				lines = append(lines, line)
				if line == ": keep-alive" && !released {
					released = true
					close(f.model.hold)
				}
			}
			if !released {
				t.Fatalf("no keep-alive comment in the stream: %q", lines)
			}
			var data []string
			for _, l := range lines {
				if strings.HasPrefix(l, "data: ") {
					data = append(data, l)
				} else if l != "" && l != ": keep-alive" && !strings.HasPrefix(l, "event: ") {
					t.Errorf("a line that is neither an event nor a comment: %q", l)
				}
			}
			if len(data) == 0 || !strings.Contains(data[len(data)-1], tc.last) || !strings.Contains(strings.Join(data, "\n"), "slow") {
				t.Fatalf("the stream after the comments: %q; want the answer and %s last", data, tc.last)
			}
		})
	}
}

// A keep-alive whose first tick comes at once (an interval shorter than
// starting its timer takes) finds its timer set: under -race, a tick
// that read it before KeepAliveEvery had stored it was a data race.
func TestKeepAliveShortInterval(t *testing.T) {
	f := newFixture(t, options{})
	for range 2000 {
		w := httptest.NewRecorder()
		k := f.srv.KeepAliveEvery(w, time.Nanosecond)
		k.Lock() // a write of the adapter's, between the comments
		_, _ = w.WriteString("data: {}\n\n")
		k.Unlock()
		k.Stop()
	}
}

// A write under the keep-alive's lock has the server's WriteTimeout: to a
// client that reads nothing it fails once the connection's buffers are
// full, rather than hold the adapter for as long as the connection lives.
func TestKeepAliveWriteTimeout(t *testing.T) {
	f := newFixture(t, options{config: func(c *server.Config) { c.WriteTimeout = 20 * time.Millisecond }})
	failed := make(chan error, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		k := f.srv.KeepAliveEvery(w, time.Hour)
		defer k.Stop()
		chunk := []byte("data: " + strings.Repeat("x", 64<<10) + "\n\n")
		for {
			k.Lock()
			_, err := w.Write(chunk)
			if err == nil {
				err = http.NewResponseController(w).Flush()
			}
			k.Unlock()
			if err != nil {
				failed <- err
				return
			}
		}
	}))
	defer srv.Close()
	conn, err := net.Dial("tcp", strings.TrimPrefix(srv.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Write([]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n")); err != nil {
		t.Fatal(err)
	}
	// The client reads nothing.
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	select {
	case err := <-failed:
		if !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Errorf("the write to a client that reads nothing failed with %v; want its deadline exceeded", err)
		}
	case <-ctx.Done():
		t.Fatal("the write to a client that reads nothing did not fail within a minute")
	}
}
