package server_test

import (
	"bufio"
	"context"
	"net/http"
	"net/http/httptest"
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
// that read it before KeepAlive had stored it was a data race.
func TestKeepAliveShortInterval(t *testing.T) {
	f := newFixture(t, options{config: func(c *server.Config) { c.Heartbeat = time.Nanosecond }})
	for range 200 {
		w := httptest.NewRecorder()
		k := f.srv.KeepAlive(w)
		k.Lock()
		_, _ = w.WriteString("data: {}\n\n") // an adapter's write
		k.Unlock()
		k.Stop()
	}
}
