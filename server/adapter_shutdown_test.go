package server_test

import (
	"bufio"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/agentrt/agentrt/server/a2a"
	"github.com/agentrt/agentrt/server/agui"
	"github.com/agentrt/agentrt/server/openai"
)

// adapterStream opens a streamed turn through an adapter on f and returns
// a reader of its lines, once the stream has begun (its first data line
// read).
func adapterStream(t *testing.T, f *fixture, ctx context.Context, path, body string) (*bufio.Reader, func()) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, "POST", f.http.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		t.Fatalf("%s: %d", path, resp.StatusCode)
	}
	br := bufio.NewReader(resp.Body)
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			resp.Body.Close()
			t.Fatalf("%s: the stream ended before its first event: %v", path, err)
		}
		if strings.HasPrefix(line, "data: ") {
			return br, func() { resp.Body.Close() }
		}
	}
}

// rest reads the data lines left in a stream.
func rest(br *bufio.Reader) []string {
	var out []string
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			return out
		}
		if d, ok := strings.CutPrefix(strings.TrimRight(line, "\n"), "data: "); ok {
			out = append(out, d)
		}
	}
}

// The turns the adapters follow are streams Shutdown waits for: while its
// context lasts, a turn that runs is streamed to its end (its client may
// have no way to resume); once it ends, the adapters' streams end saying
// shutting_down in their protocol's shape (an OpenAI error event, an
// AG-UI RUN_ERROR; an A2A stream ends with no terminal state, as the task
// goes on), and new turns are refused.
func TestShutdownAndAdapterStreams(t *testing.T) {
	mount := func(t *testing.T, f *fixture) {
		if _, err := openai.Mount(f.srv, openai.Config{}); err != nil {
			t.Fatal(err)
		}
		if err := agui.Mount(f.srv); err != nil {
			t.Fatal(err)
		}
		if err := a2a.Mount(f.srv, a2a.Config{}); err != nil {
			t.Fatal(err)
		}
	}
	const chat = `{"model":"assistant","stream":true,"messages":[{"role":"user","content":"hello"}]}`
	const run = `{"threadId":"sd","runId":"r1","messages":[{"id":"m1","role":"user","content":"hello"}]}`
	const task = `{"jsonrpc":"2.0","id":1,"method":"SendStreamingMessage","params":{"message":{"messageId":"m1","contextId":"sd2","role":"ROLE_USER","parts":[{"text":"hello"}]}}}`
	// With a configuration the adapter's own stream leaves to a2a-go.
	const a2aGoTask = `{"jsonrpc":"2.0","id":1,"method":"SendStreamingMessage","params":{"message":{"messageId":"m1","contextId":"sd3","role":"ROLE_USER","parts":[{"text":"hello"}]},"configuration":{"historyLength":5}}}`
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()

	t.Run("waited for while the context lasts", func(t *testing.T) {
		f := newFixture(t, options{hold: true})
		mount(t, f)
		br, done := adapterStream(t, f, ctx, "/v1/chat/completions", chat)
		defer done()
		shut := make(chan error, 1)
		go func() { shut <- f.srv.Shutdown(ctx) }()
		select {
		case err := <-shut:
			t.Fatalf("Shutdown returned (%v) while a turn's stream was open", err)
		default:
		}
		close(f.model.hold)
		data := rest(br)
		if len(data) == 0 || data[len(data)-1] != "[DONE]" || !strings.Contains(strings.Join(data, ""), "echo") {
			t.Fatalf("the stream during Shutdown: %q; want the answer and [DONE]", data)
		}
		if err := <-shut; err != nil {
			t.Fatalf("Shutdown: %v", err)
		}
		code, body, _ := f.do(t, "POST", "/v1/chat/completions", "", map[string]any{"model": "assistant",
			"messages": []map[string]string{{"role": "user", "content": "late"}}})
		if code != http.StatusServiceUnavailable || !strings.Contains(string(body), "shutting_down") {
			t.Errorf("a chat completion after Shutdown: %d %s; want 503 shutting_down", code, body)
		}
	})

	t.Run("told once the context ends", func(t *testing.T) {
		f := newFixture(t, options{hold: true})
		mount(t, f)
		oa, done := adapterStream(t, f, ctx, "/v1/chat/completions", chat)
		defer done()
		ag, done2 := adapterStream(t, f, ctx, "/v1/agui/assistant", run)
		defer done2()
		tk, done3 := adapterStream(t, f, ctx, "/v1/a2a/assistant", task)
		defer done3()
		tg, done4 := adapterStream(t, f, ctx, "/v1/a2a/assistant", a2aGoTask)
		defer done4()
		ended, stop := context.WithCancel(ctx)
		stop()
		if err := f.srv.Shutdown(ended); err == nil {
			t.Fatal("Shutdown with its context ended and streams open: no error")
		}
		if data := rest(oa); len(data) == 0 || !strings.Contains(data[len(data)-1], `"code":"shutting_down"`) || strings.Contains(strings.Join(data, ""), "[DONE]") {
			t.Errorf("OpenAI stream at shutdown: %q; want an error event shutting_down and no [DONE]", data)
		}
		if data := rest(ag); len(data) == 0 || !strings.Contains(data[len(data)-1], `"RUN_ERROR"`) || !strings.Contains(data[len(data)-1], "shutting_down") {
			t.Errorf("AG-UI stream at shutdown: %q; want RUN_ERROR shutting_down last", data)
		}
		// The task does not end with the stream: the run goes on (in
		// another process, where there is one), and GetTask or
		// SubscribeToTask on any replica says how.
		if data := strings.Join(rest(tk), "\n"); strings.Contains(data, "TASK_STATE_FAILED") || strings.Contains(data, `"final"`) || strings.Contains(data, `"error"`) {
			t.Errorf("A2A stream at shutdown: %s; want it to end without a terminal state", data)
		}
		// a2a-go's execution of a task must end with a terminal state:
		// there the stream ends FAILED, saying why (it must end).
		if data := rest(tg); len(data) == 0 || !strings.Contains(data[len(data)-1], "TASK_STATE_FAILED") || !strings.Contains(data[len(data)-1], "the server shut down") {
			t.Errorf("A2A stream of a2a-go's at shutdown: %q; want it to end FAILED: the server shut down", data)
		}
		close(f.model.hold)
	})
}
