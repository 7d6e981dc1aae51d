package telemetry

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"strings"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// ServiceName is the service.name of agentrt's spans unless
// OTEL_SERVICE_NAME (or service.name in OTEL_RESOURCE_ATTRIBUTES) says
// otherwise.
const ServiceName = "agentrt"

// TracerProvider returns the tracer provider the OTEL_* environment asks
// for. With OTEL_EXPORTER_OTLP_TRACES_ENDPOINT or
// OTEL_EXPORTER_OTLP_ENDPOINT set, it exports spans with OTLP over HTTP
// (protobuf) in batches; the exporter reads the rest of
// OTEL_EXPORTER_OTLP_* (headers, timeout, compression, certificates) and
// the SDK the sampler (OTEL_TRACES_SAMPLER). Otherwise — or with
// OTEL_SDK_DISABLED=true or OTEL_TRACES_EXPORTER=none — it is a no-op
// provider: nothing recorded, nothing sent, nearly nothing spent.
//
// shutdown sends the spans not yet sent and stops the exporter; call it as
// the program ends, with a deadline. A malformed endpoint, or a protocol
// or exporter this package does not speak (only OTLP over HTTP with
// protobuf), is an error naming the variable.
func TracerProvider(ctx context.Context) (tp trace.TracerProvider, shutdown func(context.Context) error, err error) {
	off := noop.NewTracerProvider()
	none := func(context.Context) error { return nil }
	if strings.EqualFold(strings.TrimSpace(os.Getenv("OTEL_SDK_DISABLED")), "true") {
		return off, none, nil
	}
	switch v := strings.TrimSpace(os.Getenv("OTEL_TRACES_EXPORTER")); v {
	case "", "otlp":
	case "none":
		return off, none, nil
	default:
		return nil, nil, fmt.Errorf("telemetry: OTEL_TRACES_EXPORTER %q: this program exports traces with otlp (or none)", v)
	}
	endpoint := ""
	for _, name := range []string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT"} {
		v := strings.TrimSpace(os.Getenv(name))
		if v == "" {
			continue
		}
		if err := checkEndpoint(v); err != nil {
			return nil, nil, fmt.Errorf("telemetry: %s: %w", name, err)
		}
		if endpoint == "" {
			endpoint = v // the traces-specific one wins
		}
	}
	if endpoint == "" {
		return off, none, nil
	}
	for _, name := range []string{"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"} {
		if v := strings.TrimSpace(os.Getenv(name)); v != "" && v != "http/protobuf" {
			return nil, nil, fmt.Errorf("telemetry: %s %q: this program exports traces with http/protobuf only", name, v)
		}
	}
	exp, err := otlptracehttp.New(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("telemetry: OTLP exporter: %w", err)
	}
	res, err := resource.Merge(
		resource.NewSchemaless(semconv.ServiceName(ServiceName)),
		resource.Environment(), // OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES: theirs win
	)
	if err != nil {
		_ = exp.Shutdown(ctx)
		return nil, nil, fmt.Errorf("telemetry: resource: %w", err)
	}
	p := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	return p, p.Shutdown, nil
}

// checkEndpoint refuses what the exporter would silently ignore: an
// endpoint that is not an http or https URL with a host.
func checkEndpoint(v string) error {
	u, err := url.Parse(v)
	if err != nil {
		return fmt.Errorf("%q is not a URL: %w", v, err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%q is not an http:// or https:// URL with a host (for example http://127.0.0.1:4318)", v)
	}
	return nil
}
