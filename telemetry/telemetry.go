package telemetry

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/session"
)

// Config configures a Telemetry. Zero values mean defaults; with neither
// a Registry nor a TracerProvider the Telemetry observes and reports
// nothing.
type Config struct {
	// Registry receives the metrics (see docs/operations.md); nil means
	// none. Pass a registry of your own (prometheus.NewRegistry), not the
	// process-wide default: two Telemetries, in tests say, would collide
	// there.
	Registry prometheus.Registerer
	// TracerProvider makes the spans; nil means none. TracerProvider
	// (the function) builds one from the OTEL_* environment.
	TracerProvider trace.TracerProvider
	// Provider names the provider of a model (gen_ai.provider.name:
	// "openai", "anthropic", ...) from the model name that events carry;
	// nil, or "" for a model, leaves the attribute out. The runtime's
	// events name models, not providers: the program that built the
	// models from its configuration knows which is which.
	Provider func(model string) string
	// Now is the clock for the end of a run that stopped without storing
	// it (every other time is an event's); nil means time.Now.
	Now func() time.Time
}

// Telemetry turns a Runner's log into Prometheus metrics and OpenTelemetry
// spans. It is an agentrt.Observer: set it as agentrt.Config.Observer, and
// it sees every run of every agent of the runner — turns, resumptions
// after a crash or a person's answer, sub-agents' runs — as it is
// committed.
//
// Its methods are safe for concurrent use.
type Telemetry struct {
	m        *metrics     // nil without a registry
	tracer   trace.Tracer // nil without a tracer provider
	provider func(string) string
	now      func() time.Time
	streams  *prometheus.GaugeVec

	mu sync.Mutex
	// runs are the runs in progress in this process, by session; guarded
	// by mu. Commits of one session come one at a time (a session runs at
	// most once at a time in a Runner), so a run's state is changed by one
	// goroutine at a time; its spans are read by its sub-agents' runs too,
	// under its own mutex.
	runs map[skey]*runState
	// delegations are the sessions of sub-agents at work, mapped to the
	// tool call of their parent that they work for; guarded by mu.
	delegations map[skey]callRef
}

var _ agentrt.Observer = (*Telemetry)(nil)

type skey struct{ tenant, session string }

// callRef names a tool call of a run in progress.
type callRef struct {
	parent skey
	callID string
}

// runState is what Telemetry knows of one run in progress.
type runState struct {
	agent    string // the label value
	runID    string
	start    time.Time
	lastErr  *session.Error // the run's last error event
	children []skey         // sessions in delegations of this run

	mu    sync.Mutex // guards span, ctx and tools: sub-agents' runs read them
	span  trace.Span // nil without traces
	ctx   context.Context
	model *modelCall           // the attempt under way
	tools map[string]*toolCall // calls announced without a result yet, by id
}

type modelCall struct {
	name  string // the label value
	start time.Time
	span  trace.Span
}

type toolCall struct {
	name    string // the label value
	start   time.Time
	blocked bool
	span    trace.Span
}

// New returns a Telemetry reporting to cfg's registry and tracer
// provider. It fails when the metrics cannot be registered (a registry
// that has them already).
func New(cfg Config) (*Telemetry, error) {
	t := &Telemetry{provider: cfg.Provider, now: cfg.Now, runs: map[skey]*runState{}, delegations: map[skey]callRef{}}
	if t.now == nil {
		t.now = time.Now
	}
	t.streams = prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: "agentrt", Name: "open_streams",
		Help: "Streaming clients connected to this process (SSE, WebSocket), by kind."}, []string{"kind"})
	if cfg.Registry != nil {
		m, err := newMetrics(cfg.Registry)
		if err != nil {
			return nil, err
		}
		if err := cfg.Registry.Register(t.streams); err != nil {
			return nil, err
		}
		t.m = m
	}
	if cfg.TracerProvider != nil {
		t.tracer = cfg.TracerProvider.Tracer(instrumentation)
	}
	return t, nil
}

// instrumentation names this package as the tracer's scope.
const instrumentation = "github.com/agentrt/agentrt/telemetry"

// Committed implements agentrt.Observer: it counts and traces the events
// of one commit.
func (t *Telemetry) Committed(ctx context.Context, info agentrt.HookInfo, events []*session.Event) {
	if t.m == nil && t.tracer == nil {
		return
	}
	k := skey{info.Tenant, info.SessionID}
	rs := t.run(k)
	for _, e := range events {
		switch d := e.Data.(type) {
		case *session.RunStarted:
			rs = t.startRun(ctx, k, info, e, "new", d.Parent)
		case *session.RunResumed:
			rs = t.startRun(ctx, k, info, e, d.Reason, nil)
		case *session.RunFinished:
			if rs != nil {
				t.endRun(k, rs, string(d.Status), e.Time, d.Usage.InputTokens, d.Usage.OutputTokens, nil)
				rs = nil
			} else if t.m != nil {
				// A run that ended as it began (a resumption refused
				// after too many crashes): it ran nothing, but it
				// finished.
				t.m.runsFinished.WithLabelValues(t.m.agents.of(info.Agent), string(d.Status)).Inc()
			}
		case *session.RoundStarted:
			if t.m != nil {
				t.m.rounds.WithLabelValues(t.m.agents.of(info.Agent)).Inc()
			}
		case *session.PlanStepFinished:
			if t.m != nil {
				t.m.planSteps.WithLabelValues(t.m.agents.of(info.Agent), d.Status).Inc()
			}
		case *session.ModelStarted:
			if rs != nil {
				t.startModel(rs, d, e.Time)
			}
		case *session.ModelFinished:
			if rs != nil {
				t.finishModel(rs, d, e.Time)
			}
		case *session.Error:
			if rs != nil {
				rs.lastErr = d
				t.failModel(rs, d, e.Time)
			}
		case *session.ToolCall:
			if rs != nil {
				t.startTool(rs, d, e.Time)
			}
		case *session.ToolResult:
			t.finishTool(rs, d, e.Time)
		case *session.SubagentStarted:
			if rs != nil {
				t.delegate(k, rs, skey{info.Tenant, d.ChildSession}, d.CallID)
			}
		}
	}
}

// RunEnded implements agentrt.Observer: a run that stopped without
// storing its end ends here, with err.
func (t *Telemetry) RunEnded(info agentrt.HookInfo, err error) {
	if t.m == nil && t.tracer == nil {
		return
	}
	k := skey{info.Tenant, info.SessionID}
	if err != nil && t.m != nil {
		if code := agentrt.AsError(err).ErrorCode(); code == agentrt.CodeLeaseLost || code == agentrt.CodeLeaseExpired {
			t.m.leasesLost.WithLabelValues(t.m.agents.of(info.Agent), code).Inc()
		}
	}
	if rs := t.run(k); rs != nil {
		// A run whose end was stored is closed already (its
		// run_finished); one still open here did not store it.
		if err == nil {
			err = errors.New("the run stopped without a run_finished")
		}
		t.endRun(k, rs, statusNotStored, t.now(), 0, 0, err)
	}
}

// statusNotStored is the status label of a run that stopped without
// storing how it ended.
const statusNotStored = "not_stored"

// run returns the run in progress in session k, if any.
func (t *Telemetry) run(k skey) *runState {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.runs[k]
}

// startRun records a run begun (or resumed) in session k with event e.
func (t *Telemetry) startRun(ctx context.Context, k skey, info agentrt.HookInfo, e *session.Event, reason string, parent *session.ParentRef) *runState {
	if old := t.run(k); old != nil {
		// Not expected: every run's end is observed before the session's
		// next run begins. Should it happen, the old one is closed, not
		// leaked.
		t.endRun(k, old, statusNotStored, e.Time, 0, 0, errors.New("a new run began before this one's end was seen"))
	}
	rs := &runState{agent: info.Agent, runID: e.RunID, start: e.Time}
	if t.m != nil {
		rs.agent = t.m.agents.of(info.Agent)
		t.m.runsStarted.WithLabelValues(rs.agent, reason).Inc()
		t.m.runsActive.WithLabelValues(rs.agent).Inc()
	}
	if t.tracer != nil {
		rs.ctx, rs.span = t.tracer.Start(t.parentOf(ctx, k, parent), "invoke_agent "+info.Agent,
			trace.WithTimestamp(e.Time), trace.WithSpanKind(trace.SpanKindInternal),
			trace.WithAttributes(runAttrs(info, e, reason)...))
	}
	t.mu.Lock()
	t.runs[k] = rs
	t.mu.Unlock()
	return rs
}

// parentOf returns the context a run of session k starts its span in: the
// span of the tool call of its parent run that it works for, when it is a
// sub-agent's run in progress here, else ctx (which may carry the
// caller's span: an HTTP request's, say).
func (t *Telemetry) parentOf(ctx context.Context, k skey, parent *session.ParentRef) context.Context {
	t.mu.Lock()
	ref, ok := t.delegations[k]
	if !ok && parent != nil {
		ref, ok = callRef{parent: skey{k.tenant, parent.SessionID}, callID: parent.CallID}, true
	}
	var prs *runState
	if ok {
		prs = t.runs[ref.parent]
	}
	t.mu.Unlock()
	if prs == nil {
		return ctx
	}
	prs.mu.Lock()
	defer prs.mu.Unlock()
	if tc := prs.tools[ref.callID]; tc != nil && tc.span != nil {
		return trace.ContextWithSpan(ctx, tc.span)
	}
	if prs.span != nil {
		return trace.ContextWithSpan(ctx, prs.span)
	}
	return ctx
}

// delegate records that session child works for call callID of rs.
func (t *Telemetry) delegate(k skey, rs *runState, child skey, callID string) {
	t.mu.Lock()
	t.delegations[child] = callRef{parent: k, callID: callID}
	t.mu.Unlock()
	rs.children = append(rs.children, child)
}

// endRun ends rs, the run of session k, with status at time end; err is
// why a run that did not store its end stopped.
func (t *Telemetry) endRun(k skey, rs *runState, status string, end time.Time, in, out int64, err error) {
	t.mu.Lock()
	if t.runs[k] == rs {
		delete(t.runs, k)
	}
	for _, c := range rs.children {
		if ref, ok := t.delegations[c]; ok && ref.parent == k {
			delete(t.delegations, c)
		}
	}
	t.mu.Unlock()
	failed := status == string(session.StatusFailed) || status == string(session.StatusCanceled) || status == statusNotStored
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if mc := rs.model; mc != nil {
		// The run stopped during the call: canceled, interrupted, or its
		// process lost the session.
		rs.model = nil
		if t.m != nil {
			t.m.modelCalls.WithLabelValues(mc.name, outcomeCanceled).Inc()
		}
		endSpan(mc.span, end, true, outcomeCanceled, "the run stopped ("+status+") during the call")
	}
	for id, tc := range rs.tools {
		// A call without a result: a sub-agent's waiting for a person
		// (its result comes after the resumption), or one the run
		// stopped during.
		delete(rs.tools, id)
		endSpan(tc.span, end, failed, outcomeCanceled, "the run stopped ("+status+") before the call had a result")
	}
	if t.m != nil {
		t.m.runsFinished.WithLabelValues(rs.agent, status).Inc()
		t.m.runsActive.WithLabelValues(rs.agent).Dec()
		t.m.runDuration.WithLabelValues(rs.agent, status).Observe(seconds(rs.start, end))
	}
	if rs.span == nil {
		return
	}
	rs.span.SetAttributes(runEndAttrs(status, in, out)...)
	switch {
	case err != nil:
		setError(rs.span, agentrt.AsError(err).ErrorCode(), err.Error())
	case failed && rs.lastErr != nil:
		setError(rs.span, rs.lastErr.Code, rs.lastErr.Message)
	case failed:
		setError(rs.span, status, "the run "+status)
	}
	rs.span.End(trace.WithTimestamp(end))
}

// Model call outcomes.
const (
	outcomeOK       = "ok"
	outcomeError    = "error"
	outcomeCanceled = "canceled"
	outcomeDenied   = "denied"
)

func (t *Telemetry) startModel(rs *runState, d *session.ModelStarted, at time.Time) {
	name := d.Model
	if t.m != nil {
		name = t.m.models.of(d.Model)
	}
	mc := &modelCall{name: name, start: at}
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if rs.span != nil {
		_, mc.span = t.tracer.Start(rs.ctx, spanName("chat", d.Model), trace.WithTimestamp(at),
			trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(t.modelAttrs(d)...))
	}
	rs.model = mc
}

func (t *Telemetry) finishModel(rs *runState, d *session.ModelFinished, at time.Time) {
	rs.mu.Lock()
	mc := rs.model
	rs.model = nil
	rs.mu.Unlock()
	if mc == nil {
		// A reply no model_started announced (a plan's step, recorded as
		// the model's call of its tool): no call was made.
		return
	}
	if t.m != nil {
		t.m.modelCalls.WithLabelValues(mc.name, outcomeOK).Inc()
		t.m.modelTokens.WithLabelValues(mc.name, "input").Add(float64(d.Usage.InputTokens))
		t.m.modelTokens.WithLabelValues(mc.name, "output").Add(float64(d.Usage.OutputTokens))
		if d.Usage.CostUSD > 0 {
			t.m.modelCost.WithLabelValues(mc.name).Add(d.Usage.CostUSD)
		}
		t.m.modelDuration.WithLabelValues(mc.name).Observe(seconds(mc.start, at))
	}
	if mc.span != nil {
		mc.span.SetAttributes(modelEndAttrs(d)...)
		mc.span.End(trace.WithTimestamp(at))
	}
}

// failModel ends the attempt under way, if any, with error event d: a
// failed attempt that is retried or handed to a fallback (d names the
// model), or the failure that ends the run.
func (t *Telemetry) failModel(rs *runState, d *session.Error, at time.Time) {
	rs.mu.Lock()
	mc := rs.model
	rs.model = nil
	rs.mu.Unlock()
	if mc == nil {
		return
	}
	outcome := outcomeError
	if d.Code == agentrt.CodeCanceled {
		outcome = outcomeCanceled
	}
	if t.m != nil {
		t.m.modelCalls.WithLabelValues(mc.name, outcome).Inc()
	}
	endSpan(mc.span, at, true, d.Code, d.Message)
}

func (t *Telemetry) startTool(rs *runState, d *session.ToolCall, at time.Time) {
	name := d.Name
	if t.m != nil {
		name = t.m.tools.of(d.Name)
	}
	tc := &toolCall{name: name, start: at, blocked: d.Blocked != ""}
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if rs.span != nil {
		_, tc.span = t.tracer.Start(rs.ctx, spanName("execute_tool", d.Name), trace.WithTimestamp(at),
			trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(toolAttrs(d)...))
		if tc.blocked {
			startBlocked(tc.span, d.Blocked)
		}
	}
	if rs.tools == nil {
		rs.tools = make(map[string]*toolCall)
	}
	rs.tools[d.CallID] = tc
}

// finishTool counts a call's result and ends its span. rs is nil for a
// result stored outside a run (a person's answer to the model's question,
// recorded by Resolve): it is counted, but no call ran here.
func (t *Telemetry) finishTool(rs *runState, d *session.ToolResult, at time.Time) {
	var tc *toolCall
	if rs != nil {
		rs.mu.Lock()
		tc = rs.tools[d.CallID]
		delete(rs.tools, d.CallID)
		rs.mu.Unlock()
	}
	outcome := outcomeError
	switch {
	case tc != nil && tc.blocked:
		outcome = outcomeDenied
	case d.OK:
		outcome = outcomeOK
	}
	if t.m != nil {
		name := d.Name
		if tc != nil {
			name = tc.name
		} else {
			name = t.m.tools.of(name)
		}
		t.m.toolCalls.WithLabelValues(name, outcome).Inc()
		if tc != nil && !tc.blocked {
			t.m.toolDuration.WithLabelValues(name).Observe(seconds(tc.start, at))
		}
	}
	if tc != nil && tc.span != nil {
		if !d.OK && !tc.blocked { // a blocked call's span says so already
			setError(tc.span, outcomeError, d.Error)
		}
		tc.span.End(trace.WithTimestamp(at))
	}
}

// seconds is the time from start to end, never negative (a clock that
// went back, or events of a run resumed from another process's).
func seconds(start, end time.Time) float64 {
	if start.IsZero() || end.Before(start) {
		return 0
	}
	return end.Sub(start).Seconds()
}
