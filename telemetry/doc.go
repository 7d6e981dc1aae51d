// Package telemetry reports what a Runner's runs do as Prometheus metrics
// and OpenTelemetry traces.
//
// A Telemetry is an agentrt.Observer: it reads the events of every commit
// and the end of every run, so one of it, set on the Runner, sees every
// agent's runs — turns, resumptions after a crash or a person's answer,
// sub-agents' runs, failed model attempts — without a hook on any agent.
// It only reads: a run does not wait on an exporter, and a Telemetry
// without a registry or a tracer provider costs nothing.
//
// # Wiring
//
// A registry of your own, a tracer provider from the environment, the
// Telemetry as the runner's observer, and the registry behind /metrics:
//
//	reg := prometheus.NewRegistry()
//	tp, shutdown, err := telemetry.TracerProvider(ctx) // OTLP/HTTP when OTEL_EXPORTER_OTLP_ENDPOINT is set
//	defer shutdown(context.WithoutCancel(ctx))
//	tel, err := telemetry.New(telemetry.Config{Registry: reg, TracerProvider: tp})
//	r, err := agentrt.NewRunner(agentrt.Config{Store: store, Agents: agents, Observer: tel})
//	mux.Handle("GET /metrics", telemetry.Handler(reg))
//
// # Metrics
//
// Runs started (by reason: new, recovered, approval, resume, retry, store) and
// finished (by status), runs in progress, run duration, rounds, plan
// steps, model calls by model and outcome, tokens, cost and latency, tool
// calls by tool and outcome (ok, error, denied) and latency, and leases
// lost to another process. The server adds its own measures with
// OpenStreams (streaming clients) and GaugeFunc (pending human requests,
// inbox depth). docs/operations.md has the table.
//
// # Traces
//
// A span per run, "invoke_agent {agent}", with a child per model call
// attempt, "chat {model}", and per tool call, "execute_tool {tool}", named
// and attributed after the OpenTelemetry GenAI semantic conventions
// (gen_ai.agent.name, gen_ai.conversation.id = the session, gen_ai.request.model,
// gen_ai.usage.*, gen_ai.response.finish_reasons, gen_ai.tool.name,
// gen_ai.tool.call.id). A sub-agent's run is a child of its parent's
// execute_tool span; a run started with a context that carries a span (an
// HTTP request's) is a child of that span. Spans take their times from the
// events, so a trace shows what the log holds.
package telemetry
