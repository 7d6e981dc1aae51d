package server_test

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/agentrt/agentrt/server"
	"github.com/agentrt/agentrt/telemetry"
)

// GET /metrics serves the registry without a key; open streams are
// counted while they are open.
func TestMetricsAndOpenStreams(t *testing.T) {
	reg := prometheus.NewRegistry()
	tel, err := telemetry.New(telemetry.Config{Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, options{keys: []server.Key{{Key: "k", Tenant: "a"}}, observer: tel, config: func(c *server.Config) {
		c.Metrics = telemetry.Handler(reg)
		c.Streams = func(kind string) server.Gauge { return tel.OpenStreams(kind) }
	}})
	id := f.create(t, "k")
	for range f.stream(t, "POST", "/v1/sessions/"+id+"/messages", "k", map[string]any{"text": "hi"}) {
	}
	open := tel.OpenStreams("sse")
	for e := range f.stream(t, "GET", "/v1/sessions/"+id+"/events", "k", nil) {
		if e.seq == 1 {
			if got := testutil.ToFloat64(open); got != 1 {
				t.Errorf("open sse streams while one is open: %v", got)
			}
			break
		}
	}
	// The server sees the client gone when its connection closes.
	deadline := time.Now().Add(time.Minute)
	for testutil.ToFloat64(open) != 0 {
		if time.Now().After(deadline) {
			t.Fatal("the stream is still counted a minute after its client left")
		}
		time.Sleep(time.Millisecond)
	}
	code, body, hdr := f.do(t, "GET", "/metrics", "", nil)
	if code != 200 || !strings.HasPrefix(hdr.Get("Content-Type"), "text/plain") {
		t.Fatalf("/metrics without a key: %d %s", code, hdr.Get("Content-Type"))
	}
	for _, want := range []string{`agentrt_open_streams{kind="sse"} 0`, `agentrt_runs_finished_total`} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics has no %s", want)
		}
	}
}
