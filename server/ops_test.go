package server_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/agentrt/agentrt/server"
)

// An idle stream gets heartbeat comments.
func TestHeartbeat(t *testing.T) {
	f := newFixture(t, options{config: func(c *server.Config) { c.Heartbeat = time.Millisecond }})
	id := f.create(t, "")
	pings := 0
	for e := range f.stream(t, "GET", "/v1/sessions/"+id+"/events", "", nil) {
		if e.ping {
			if pings++; pings == 3 {
				break
			}
			continue
		}
		t.Fatalf("an idle session's stream gave %+v", e)
	}
}

// Shutdown tells open streams to reconnect from their last id (to
// another replica) and refuses new requests with shutting_down; health
// stays up, readiness goes down.
func TestShutdownEndsStreams(t *testing.T) {
	f := newFixture(t, options{})
	id := f.create(t, "")
	for range f.stream(t, "POST", "/v1/sessions/"+id+"/messages", "", map[string]any{"text": "hi"}) {
	}
	opened := make(chan struct{})
	got := make(chan []sseEvent)
	go func() {
		var evs []sseEvent
		first := true
		for e := range f.stream(t, "GET", "/v1/sessions/"+id+"/events", "", nil, "Last-Event-ID", "2") {
			evs = append(evs, e)
			if first {
				first = false
				close(opened)
			}
		}
		got <- evs
	}()
	<-opened
	if err := f.srv.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	evs := <-got
	last := evs[len(evs)-1]
	if last.typ != "reconnect" || string(last.data) != `{"last_event_id":`+itoa(evs[len(evs)-2].seq)+`,"reason":"reconnect from last_event_id"}` {
		t.Fatalf("the stream ended with %s %s", last.typ, last.data)
	}
	if code, body, _ := f.do(t, "GET", "/v1/agents", "", nil); code != http.StatusServiceUnavailable || errCode(body) != "shutting_down" {
		t.Errorf("a request after Shutdown: %d %s", code, body)
	}
	if code, _, _ := f.do(t, "GET", "/readyz", "", nil); code != http.StatusServiceUnavailable {
		t.Errorf("readyz after Shutdown: %d", code)
	}
	if code, _, _ := f.do(t, "GET", "/healthz", "", nil); code != http.StatusOK {
		t.Errorf("healthz after Shutdown: %d", code)
	}
}

// CORS is off unless origins are configured; then a preflight from an
// allowed origin is answered and others get no CORS headers.
func TestCORS(t *testing.T) {
	preflight := func(f *fixture, origin string) http.Header {
		req, _ := http.NewRequest("OPTIONS", f.http.URL+"/v1/sessions", nil)
		req.Header.Set("Origin", origin)
		req.Header.Set("Access-Control-Request-Method", "POST")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.Header
	}
	off := newFixture(t, options{})
	if h := preflight(off, "https://app.example.com"); h.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("CORS off answered a preflight: %v", h)
	}
	on := newFixture(t, options{config: func(c *server.Config) { c.CORS.Origins = []string{"https://app.example.com"} }})
	if h := preflight(on, "https://app.example.com"); h.Get("Access-Control-Allow-Origin") != "https://app.example.com" || h.Get("Access-Control-Allow-Headers") == "" {
		t.Errorf("an allowed origin's preflight: %v", h)
	}
	if h := preflight(on, "https://evil.example.com"); h.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("another origin's preflight: %v", h)
	}
}
