package app

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/agentrt/agentrt/config"
)

// connTracker counts a server's open connections and says when none is
// left.
type connTracker struct {
	mu   sync.Mutex
	open map[net.Conn]bool
	none chan struct{} // cap 1: a connection closed and none is left
}

func (c *connTracker) state(conn net.Conn, st http.ConnState) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch st {
	case http.StateNew:
		c.open[conn] = true
	case http.StateClosed, http.StateHijacked:
		delete(c.open, conn)
		if len(c.open) == 0 {
			select {
			case c.none <- struct{}{}:
			default:
			}
		}
	}
}

func (c *connTracker) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.open)
}

// waitNone waits until the server has no connection open; it fails t if
// some are still open after 30 seconds (an idle connection a client keeps
// would stay for 90).
func (c *connTracker) waitNone(t *testing.T) {
	t.Helper()
	timeout := time.After(30 * time.Second)
	for c.count() > 0 {
		select {
		case <-c.none:
		case <-timeout:
			t.Fatalf("%d connection(s) still open", c.count())
		}
	}
}

// Close closes the connections the providers' clients keep to the
// model's server for later requests: an app built and closed again and
// again (a server's reloads, the CLI's tests) leaves none behind.
func TestCloseClosesProviderConnections(t *testing.T) {
	tr := &connTracker{open: map[net.Conn]bool{}, none: make(chan struct{}, 1)}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// A streamed Chat Completions reply of one word.
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, `data: {"id":"c1","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":"hello"},"finish_reason":null}]}`+"\n\n")
		fmt.Fprint(w, `data: {"id":"c1","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`+"\n\n")
		fmt.Fprint(w, "data: [DONE]\n\n")
	}))
	srv.Config.ConnState = tr.state
	srv.Start()
	defer srv.Close()
	cfg, err := config.Parse("agentrt.yaml", []byte(`
models:
  m: {provider: openai, model: m, base_url: "`+srv.URL+`/v1", api_key: k}
agents:
  a: {model: m}
`), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, recording := range []bool{false, true} {
		t.Run(fmt.Sprintf("recording=%v", recording), func(t *testing.T) {
			env := map[string]string{}
			rec := filepath.Join(t.TempDir(), "traffic.txt")
			if recording {
				// The recording's transport sends the requests.
				env[EnvRecord] = rec
			}
			a, err := Build(context.Background(), cfg, Options{StoreDSN: "memory:", Getenv: func(k string) string { return env[k] }})
			if err != nil {
				t.Fatal(err)
			}
			res, err := a.Runner.Ask(context.Background(), "a", "hi")
			if err != nil {
				t.Fatal(err)
			}
			if res.Text != "hello" {
				t.Fatalf("the answer: %q", res.Text)
			}
			if tr.count() == 0 {
				t.Fatal("the client kept no connection: nothing to test")
			}
			if err := a.Close(); err != nil {
				t.Fatal(err)
			}
			tr.waitNone(t)
			if _, err := os.Stat(rec); recording && err != nil {
				t.Errorf("the recording was not written: %v", err)
			}
		})
	}
}

// The look for a local Ollama keeps no connection to it.
func TestOllamaProbeKeepsNoConnection(t *testing.T) {
	tr := &connTracker{open: map[net.Conn]bool{}, none: make(chan struct{}, 1)}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"models":[{"name":"qwen3:latest"}]}`)
	}))
	srv.Config.ConnState = tr.state
	srv.Start()
	defer srv.Close()
	a, err := Build(context.Background(), config.Default(), Options{StoreDSN: "memory:", OllamaURL: srv.URL,
		Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if ag, _ := a.Runner.Agent(config.DefaultAgent); ag.Model.Name() != "qwen3:latest" {
		t.Fatalf("the probe did not find the model: %s", ag.Model.Name())
	}
	tr.waitNone(t)
}
