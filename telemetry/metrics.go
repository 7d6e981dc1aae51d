package telemetry

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// MaxLabelValues is how many distinct values one label (agent, model,
// tool) takes before further ones are counted under OtherLabel. Agents and
// models come from the configuration, but a tool's name comes from the
// model, which may invent any number of them: without a bound, a model
// that makes up names would make up time series.
const MaxLabelValues = 256

// OtherLabel is the label value of everything past MaxLabelValues.
const OtherLabel = "_other"

// Buckets of the duration histograms, in seconds. A model call takes from
// a fraction of a second to minutes; a tool from microseconds (a
// calculator) to minutes (a sub-agent, a shell); a run from a second to
// the better part of an hour.
var (
	modelBuckets = []float64{0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 40, 80, 160, 320}
	toolBuckets  = []float64{0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300}
	runBuckets   = []float64{0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600}
)

// metrics are the collectors of one Telemetry, registered in its
// Registerer.
type metrics struct {
	runsStarted   *prometheus.CounterVec   // agent, reason
	runsFinished  *prometheus.CounterVec   // agent, status
	runsActive    *prometheus.GaugeVec     // agent
	runDuration   *prometheus.HistogramVec // agent, status
	rounds        *prometheus.CounterVec   // agent
	planSteps     *prometheus.CounterVec   // agent, status
	modelCalls    *prometheus.CounterVec   // model, outcome
	modelTokens   *prometheus.CounterVec   // model, kind
	modelCost     *prometheus.CounterVec   // model
	modelDuration *prometheus.HistogramVec // model
	toolCalls     *prometheus.CounterVec   // tool, outcome
	toolDuration  *prometheus.HistogramVec // tool
	leasesLost    *prometheus.CounterVec   // agent, code

	agents, models, tools labelSet
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	counter := func(name, help string, labels ...string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "agentrt", Name: name, Help: help}, labels)
	}
	histogram := func(name, help string, buckets []float64, labels ...string) *prometheus.HistogramVec {
		return prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: "agentrt", Name: name, Help: help, Buckets: buckets}, labels)
	}
	m := &metrics{
		runsStarted: counter("runs_started_total",
			"Runs begun in this process, by agent and reason: new for a turn, else why a run was resumed (recovered, approval, resume, retry, store).",
			"agent", "reason"),
		runsFinished: counter("runs_finished_total",
			"Runs of this process that stopped, by agent and status (done, waiting, paused, failed, canceled, interrupted; not_stored when the run stopped without storing its end).",
			"agent", "status"),
		runsActive: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: "agentrt", Name: "runs_active",
			Help: "Runs in progress in this process, by agent."}, []string{"agent"}),
		runDuration: histogram("run_duration_seconds",
			"How long runs ran in this process, from run_started or run_resumed to their end, by agent and status.",
			runBuckets, "agent", "status"),
		rounds: counter("rounds_total",
			"Think-act rounds begun (round_started), by agent.", "agent"),
		planSteps: counter("plan_steps_total",
			"Plan steps finished, by agent and status (completed, failed, skipped).", "agent", "status"),
		modelCalls: counter("model_calls_total",
			"Model call attempts, by model and outcome (ok; error, retried or not; canceled when the run stopped during the call).",
			"model", "outcome"),
		modelTokens: counter("model_tokens_total",
			"Tokens of successful model calls as the provider reported them, by model and kind (input, output).",
			"model", "kind"),
		modelCost: counter("model_cost_usd_total",
			"Cost of successful model calls in US dollars, for models with a price, by model.", "model"),
		modelDuration: histogram("model_call_duration_seconds",
			"Latency of successful model call attempts, by model.", modelBuckets, "model"),
		toolCalls: counter("tool_calls_total",
			"Tool call results, by tool and outcome (ok, error, denied: blocked without running).",
			"tool", "outcome"),
		toolDuration: histogram("tool_call_duration_seconds",
			"Latency of the tool calls that ran in this process, by tool.", toolBuckets, "tool"),
		leasesLost: counter("leases_lost_total",
			"Runs of this process stopped because their session's lease was taken over by another process (lease_lost) or expired unrenewed (lease_expired), by agent and code.",
			"agent", "code"),
	}
	for _, c := range []prometheus.Collector{m.runsStarted, m.runsFinished, m.runsActive, m.runDuration, m.rounds,
		m.planSteps, m.modelCalls, m.modelTokens, m.modelCost, m.modelDuration, m.toolCalls, m.toolDuration, m.leasesLost} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("telemetry: register metrics: %w", err)
		}
	}
	return m, nil
}

// labelSet bounds the values of one label (see MaxLabelValues).
type labelSet struct {
	mu   sync.Mutex
	seen map[string]struct{} // guarded by mu
}

// of returns v, or OtherLabel once MaxLabelValues others were seen.
func (s *labelSet) of(v string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.seen[v]; ok {
		return v
	}
	if len(s.seen) >= MaxLabelValues {
		return OtherLabel
	}
	if s.seen == nil {
		s.seen = make(map[string]struct{})
	}
	s.seen[v] = struct{}{}
	return v
}

// Handler serves the metrics of g (a *prometheus.Registry, say) in the
// Prometheus text format, for GET /metrics. A gatherer's error (a gauge
// function that failed) fails the scrape with status 500, saying why,
// rather than serving a partial picture that looks whole.
func Handler(g prometheus.Gatherer) http.Handler {
	return promhttp.HandlerFor(g, promhttp.HandlerOpts{ErrorHandling: promhttp.HTTPErrorOnError})
}

// The server's own measures. The runtime cannot see these (they live in
// the server's connections and in the store), so the server reports them
// through the functions below, under names that belong with the rest.

// OpenStreams returns the gauge of streaming clients connected to this
// process, labelled kind ("sse", "ws", ...): the server adds one when a
// stream opens and takes it away when the stream ends. It is registered
// with the Telemetry's registry at New; without a registry it is a gauge
// nobody gathers.
func (t *Telemetry) OpenStreams(kind string) prometheus.Gauge {
	return t.streams.WithLabelValues(kind)
}

// DefaultGaugeTimeout bounds one call of a gauge function at a scrape
// when GaugeFunc is given no timeout.
const DefaultGaugeTimeout = 5 * time.Second

// GaugeFunc registers with reg a gauge named agentrt_<name> whose value fn
// computes at each scrape, within timeout (zero means
// DefaultGaugeTimeout): the human requests pending (name
// "pending_requests") or the inputs waiting in the gateway's inbox
// ("inbox_depth"), read from the store. When fn fails the scrape fails
// with its error rather than report a stale or made-up value.
func GaugeFunc(reg prometheus.Registerer, name, help string, timeout time.Duration, fn func(ctx context.Context) (float64, error)) error {
	if name == "" || fn == nil {
		return fmt.Errorf("telemetry: a gauge function needs a name and a function")
	}
	if timeout <= 0 {
		timeout = DefaultGaugeTimeout
	}
	g := &funcGauge{desc: prometheus.NewDesc("agentrt_"+name, help, nil, nil), fn: fn, timeout: timeout}
	if err := reg.Register(g); err != nil {
		return fmt.Errorf("telemetry: register gauge %s: %w", name, err)
	}
	return nil
}

// funcGauge is a gauge computed at each scrape by a function that may
// fail, which prometheus.GaugeFunc cannot say.
type funcGauge struct {
	desc    *prometheus.Desc
	fn      func(ctx context.Context) (float64, error)
	timeout time.Duration
}

func (g *funcGauge) Describe(ch chan<- *prometheus.Desc) { ch <- g.desc }

func (g *funcGauge) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), g.timeout)
	defer cancel()
	v, err := g.fn(ctx)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(g.desc, err)
		return
	}
	ch <- prometheus.MustNewConstMetric(g.desc, prometheus.GaugeValue, v)
}
