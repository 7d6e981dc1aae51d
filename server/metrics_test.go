package server_test

import (
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/agentrt/agentrt/server"
	"github.com/agentrt/agentrt/session"
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

// The inspector's runtime page shows the headline figures of this
// process's metrics; a failure to read them is said, not hidden.
func TestUIRuntimeHeadline(t *testing.T) {
	reg := prometheus.NewRegistry()
	tel, err := telemetry.New(telemetry.Config{Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	var failing atomic.Bool
	f := newFixture(t, options{observer: tel, config: func(c *server.Config) {
		c.Headline = func() ([]server.Figure, error) {
			if failing.Load() {
				return nil, errors.New("a gauge failed")
			}
			figs, err := telemetry.Headline(reg)
			out := make([]server.Figure, len(figs))
			for i, f := range figs {
				out[i] = server.Figure{Name: f.Name, Value: f.Value}
			}
			return out, err
		}
	}})
	ctx := session.WithTenant(t.Context(), session.DefaultTenant)
	if _, err := f.r.CreateSession(ctx, "assistant", "H", nil); err != nil {
		t.Fatal(err)
	}
	runTurn(t, f, ctx, "H", "hi")
	c := uiClient(t)
	rt := get(t, c, f.http.URL+"/ui/runtime")
	for _, want := range []string{"<dt>turns begun</dt><dd class=\"num\">1</dd>", "<dt>model calls</dt><dd class=\"num\">1</dd>",
		"<dt>runs recovered after their process stopped</dt><dd class=\"num\">0</dd>"} {
		if !strings.Contains(rt.body, want) {
			t.Errorf("the runtime page lacks %s:\n%s", want, rt.body)
		}
	}
	failing.Store(true)
	if rt := get(t, c, f.http.URL+"/ui/runtime"); rt.status != 200 || !strings.Contains(rt.body, "The metrics could not be read: a gauge failed") {
		t.Errorf("a failed read of the metrics: %d\n%s", rt.status, rt.body)
	}
}
