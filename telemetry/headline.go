package telemetry

import (
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// Figure is one headline figure of the metrics: a sum of a metric's
// series whose labels match.
type Figure struct {
	Name  string  // what it counts, for a person
	Value float64 // the sum
}

// headlines are the figures a person looks at first (the inspector's
// runtime page): each sums the series of one metric whose label Label is
// one of Values (all series when Label is empty).
var headlines = []struct {
	name, metric, label string
	values              []string
}{
	{"runs in progress", "agentrt_runs_active", "", nil},
	{"turns begun", "agentrt_runs_started_total", "reason", []string{"new"}},
	{"runs recovered after their process stopped", "agentrt_runs_started_total", "reason", []string{"recovered"}},
	{"runs failed", "agentrt_runs_finished_total", "status", []string{"failed"}},
	{"model calls", "agentrt_model_calls_total", "", nil},
	{"model calls that failed", "agentrt_model_calls_total", "outcome", []string{outcomeError}},
	{"tool calls", "agentrt_tool_calls_total", "", nil},
	{"tool calls that failed or were denied", "agentrt_tool_calls_total", "outcome", []string{outcomeError, outcomeDenied}},
	{"leases lost to another process", "agentrt_leases_lost_total", "", nil},
	{"model cost, USD", "agentrt_model_cost_usd_total", "", nil},
}

// Headline sums the metrics of g into the figures a person looks at first:
// runs in progress, turns, recoveries, failures, model and tool calls,
// leases lost and cost, since this process started.
func Headline(g prometheus.Gatherer) ([]Figure, error) {
	families, err := g.Gather()
	if err != nil {
		return nil, err
	}
	byName := make(map[string]*dto.MetricFamily, len(families))
	for _, f := range families {
		byName[f.GetName()] = f
	}
	out := make([]Figure, 0, len(headlines))
	for _, h := range headlines {
		fig := Figure{Name: h.name}
		if f := byName[h.metric]; f != nil {
			for _, m := range f.GetMetric() {
				if h.label != "" && !hasLabel(m, h.label, h.values) {
					continue
				}
				switch {
				case m.GetCounter() != nil:
					fig.Value += m.GetCounter().GetValue()
				case m.GetGauge() != nil:
					fig.Value += m.GetGauge().GetValue()
				}
			}
		}
		out = append(out, fig)
	}
	return out, nil
}

func hasLabel(m *dto.Metric, name string, values []string) bool {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			for _, v := range values {
				if l.GetValue() == v {
					return true
				}
			}
		}
	}
	return false
}
