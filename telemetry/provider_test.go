package telemetry_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/model/scripted"
	"github.com/agentrt/agentrt/session"
	"github.com/agentrt/agentrt/session/memstore"
	"github.com/agentrt/agentrt/telemetry"
)

// otelEnv clears the variables TracerProvider reads, then sets kv (name,
// value pairs), for this test only.
func otelEnv(t *testing.T, kv ...string) {
	for _, name := range []string{"OTEL_SDK_DISABLED", "OTEL_TRACES_EXPORTER", "OTEL_EXPORTER_OTLP_ENDPOINT",
		"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
		"OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_TRACES_HEADERS", "OTEL_SERVICE_NAME", "OTEL_RESOURCE_ATTRIBUTES",
		"OTEL_TRACES_SAMPLER", "OTEL_TRACES_SAMPLER_ARG"} {
		t.Setenv(name, "")
	}
	for i := 0; i+1 < len(kv); i += 2 {
		t.Setenv(kv[i], kv[i+1])
	}
}

// collector is an OTLP/HTTP trace receiver on 127.0.0.1: it keeps the
// requests' paths, headers and spans.
type collector struct {
	*httptest.Server
	mu       sync.Mutex
	paths    []string
	headers  []http.Header
	spans    []string // span names
	services []string // service.name of each resource
}

func newCollector(t *testing.T) *collector {
	c := &collector{}
	c.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(r.Body)
		if err != nil || r.Header.Get("Content-Type") != "application/x-protobuf" {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		var req coltrace.ExportTraceServiceRequest
		if err := proto.Unmarshal(b, &req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		c.paths = append(c.paths, r.URL.Path)
		c.headers = append(c.headers, r.Header.Clone())
		for _, rs := range req.GetResourceSpans() {
			for _, a := range rs.GetResource().GetAttributes() {
				if a.GetKey() == "service.name" {
					c.services = append(c.services, a.GetValue().GetStringValue())
				}
			}
			for _, ss := range rs.GetScopeSpans() {
				for _, s := range ss.GetSpans() {
					c.spans = append(c.spans, s.GetName())
				}
			}
		}
		w.Header().Set("Content-Type", "application/x-protobuf")
		out, _ := proto.Marshal(&coltrace.ExportTraceServiceResponse{})
		_, _ = w.Write(out)
	}))
	t.Cleanup(c.Close)
	return c
}

// runOnce runs one turn of an agent observed by a Telemetry on tp's
// tracer provider.
func runOnce(t *testing.T, ctx context.Context, tel *telemetry.Telemetry) {
	t.Helper()
	r, err := agentrt.NewRunner(agentrt.Config{Store: memstore.New(), Observer: tel,
		Agents: []*agentrt.Agent{{Name: "calc", Model: scripted.New("m", reply("hello"))}}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := agentrt.Collect(r.Run(ctx, "s1", agentrt.Input{Text: "hi", Agent: "calc"}))
	if err != nil || res.Status != session.StatusDone {
		t.Fatalf("run: %+v %v", res, err)
	}
}

// With an OTLP endpoint in the environment, a run's spans reach it over
// HTTP, with the headers the environment gives, as service "agentrt"
// unless the environment names another.
func TestTracerProviderExportsOTLP(t *testing.T) {
	cases := []struct {
		name     string
		env      func(url string) []string
		path     string
		service  string
		header   string
		wantHead string
	}{
		{"endpoint", func(u string) []string { return []string{"OTEL_EXPORTER_OTLP_ENDPOINT", u} },
			"/v1/traces", "agentrt", "", ""},
		{"traces endpoint wins, used as it is", func(u string) []string {
			return []string{"OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:1", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", u + "/collect",
				"OTEL_SERVICE_NAME", "gateway", "OTEL_EXPORTER_OTLP_HEADERS", "authorization=Bearer%20t0k"}
		}, "/collect", "gateway", "Authorization", "Bearer t0k"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			col := newCollector(t)
			otelEnv(t, c.env(col.URL)...)
			ctx := context.Background()
			tp, shutdown, err := telemetry.TracerProvider(ctx)
			if err != nil {
				t.Fatal(err)
			}
			tel, err := telemetry.New(telemetry.Config{TracerProvider: tp})
			if err != nil {
				t.Fatal(err)
			}
			runOnce(t, ctx, tel)
			if err := shutdown(ctx); err != nil { // sends what the batcher holds
				t.Fatalf("shutdown: %v", err)
			}
			col.mu.Lock()
			defer col.mu.Unlock()
			slices.Sort(col.spans)
			if diff := cmp.Diff([]string{"chat m", "invoke_agent calc"}, col.spans); diff != "" {
				t.Errorf("spans received (-want +got):\n%s", diff)
			}
			for _, p := range col.paths {
				if p != c.path {
					t.Errorf("posted to %s, want %s", p, c.path)
				}
			}
			for _, s := range col.services {
				if s != c.service {
					t.Errorf("service.name %q, want %q", s, c.service)
				}
			}
			if c.header != "" {
				for _, h := range col.headers {
					if got := h.Get(c.header); got != c.wantHead {
						t.Errorf("%s: %q, want %q", c.header, got, c.wantHead)
					}
				}
			}
		})
	}
}

// Without an endpoint, or with traces turned off, the provider records
// nothing and sends nothing.
func TestTracerProviderOff(t *testing.T) {
	col := newCollector(t)
	for name, env := range map[string][]string{
		"no endpoint":   nil,
		"exporter none": {"OTEL_EXPORTER_OTLP_ENDPOINT", col.URL, "OTEL_TRACES_EXPORTER", "none"},
		"sdk disabled":  {"OTEL_EXPORTER_OTLP_ENDPOINT", col.URL, "OTEL_SDK_DISABLED", "true"},
	} {
		t.Run(name, func(t *testing.T) {
			otelEnv(t, env...)
			ctx := context.Background()
			tp, shutdown, err := telemetry.TracerProvider(ctx)
			if err != nil {
				t.Fatal(err)
			}
			_, s := tp.Tracer("test").Start(ctx, "x")
			if s.IsRecording() {
				t.Error("a span of the provider records")
			}
			s.End()
			tel, err := telemetry.New(telemetry.Config{TracerProvider: tp})
			if err != nil {
				t.Fatal(err)
			}
			runOnce(t, ctx, tel)
			if err := shutdown(ctx); err != nil {
				t.Fatal(err)
			}
		})
	}
	col.mu.Lock()
	defer col.mu.Unlock()
	if len(col.paths) != 0 {
		t.Errorf("%d exports received, want none", len(col.paths))
	}
}

// What the provider cannot honour is an error naming the variable, not a
// silent no-op.
func TestTracerProviderRefusesBadEnvironment(t *testing.T) {
	cases := []struct {
		env  []string
		want string
	}{
		{[]string{"OTEL_EXPORTER_OTLP_ENDPOINT", "127.0.0.1:4318"}, "OTEL_EXPORTER_OTLP_ENDPOINT"},
		{[]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "ftp://127.0.0.1:4318"}, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"},
		{[]string{"OTEL_EXPORTER_OTLP_ENDPOINT", "http://%zz"}, "OTEL_EXPORTER_OTLP_ENDPOINT"},
		{[]string{"OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4317", "OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"}, "OTEL_EXPORTER_OTLP_PROTOCOL"},
		{[]string{"OTEL_TRACES_EXPORTER", "zipkin"}, "OTEL_TRACES_EXPORTER"},
	}
	for _, c := range cases {
		t.Run(strings.Join(c.env, "="), func(t *testing.T) {
			otelEnv(t, c.env...)
			tp, _, err := telemetry.TracerProvider(context.Background())
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("TracerProvider: %v, %v; want an error naming %s", tp, err, c.want)
			}
		})
	}
}
