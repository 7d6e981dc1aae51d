package telemetry_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/common/expfmt"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/model/scripted"
	"github.com/agentrt/agentrt/session"
	"github.com/agentrt/agentrt/session/memstore"
	"github.com/agentrt/agentrt/session/storetest"
	"github.com/agentrt/agentrt/telemetry"
	"github.com/agentrt/agentrt/tool"
)

// counters are the exposition lines of the named metrics (counters and
// gauges), without HELP and TYPE, sorted.
func counters(t *testing.T, g prometheus.Gatherer, names ...string) []string {
	t.Helper()
	b, err := testutil.GatherAndFormat(g, expfmt.TypeTextPlain, names...)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for l := range strings.Lines(string(b)) {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			out = append(out, l)
		}
	}
	slices.Sort(out)
	return out
}

// samples returns the sample counts of histogram name, by its labels
// written as in the exposition format ({model="m"}).
func samples(t *testing.T, g prometheus.Gatherer, name string) map[string]uint64 {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]uint64{}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			var ls []string
			for _, l := range m.GetLabel() {
				ls = append(ls, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
			}
			out["{"+strings.Join(ls, ",")+"}"] = m.GetHistogram().GetSampleCount()
			if m.GetHistogram().GetSampleSum() < 0 {
				t.Errorf("%s%v: negative sum", name, ls)
			}
		}
	}
	return out
}

// A turn with two concurrent calls (one fails), a denied call and an
// answer: runs, rounds, model calls, tokens and tool outcomes, counted
// exactly.
func TestMetricsOfATurn(t *testing.T) {
	rg := newRig(t, nil, agentrt.Config{}, toolsAgent(t, toolsScript()))
	id := rg.session(t, "calc")
	if res := rg.run(t, context.Background(), id, "2+3, then clean up"); res.Status != session.StatusDone {
		t.Fatalf("run: %+v", res)
	}
	want := []string{
		`agentrt_model_calls_total{model="m",outcome="ok"} 3`,
		`agentrt_model_tokens_total{kind="input",model="m"} 30`,
		`agentrt_model_tokens_total{kind="output",model="m"} 15`,
		`agentrt_rounds_total{agent="calc"} 3`,
		`agentrt_runs_active{agent="calc"} 0`,
		`agentrt_runs_finished_total{agent="calc",status="done"} 1`,
		`agentrt_runs_started_total{agent="calc",reason="new"} 1`,
		`agentrt_tool_calls_total{outcome="denied",tool="rm"} 1`,
		`agentrt_tool_calls_total{outcome="error",tool="fail"} 1`,
		`agentrt_tool_calls_total{outcome="ok",tool="calculator"} 1`,
	}
	got := counters(t, rg.reg, "agentrt_model_calls_total", "agentrt_model_tokens_total", "agentrt_rounds_total",
		"agentrt_runs_active", "agentrt_runs_finished_total", "agentrt_runs_started_total", "agentrt_tool_calls_total",
		"agentrt_leases_lost_total", "agentrt_model_cost_usd_total")
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("metrics (-want +got):\n%s", diff)
	}
	// Latencies: every model call; the tools that ran (not the denied
	// one); the run.
	if diff := cmp.Diff(map[string]uint64{`{model="m"}`: 3}, samples(t, rg.reg, "agentrt_model_call_duration_seconds")); diff != "" {
		t.Errorf("model latency samples (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]uint64{`{tool="calculator"}`: 1, `{tool="fail"}`: 1}, samples(t, rg.reg, "agentrt_tool_call_duration_seconds")); diff != "" {
		t.Errorf("tool latency samples (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]uint64{`{agent="calc",status="done"}`: 1}, samples(t, rg.reg, "agentrt_run_duration_seconds")); diff != "" {
		t.Errorf("run duration samples (-want +got):\n%s", diff)
	}
	if err := testutil.GatherAndCompare(rg.reg, strings.NewReader(""), "agentrt_nothing"); err != nil {
		t.Error(err)
	}
}

// The headline figures sum the turn's metrics: 1 turn, 3 model calls, 3
// tool calls of which 2 failed or were denied; nothing recovered.
func TestHeadline(t *testing.T) {
	rg := newRig(t, nil, agentrt.Config{}, toolsAgent(t, toolsScript()))
	id := rg.session(t, "calc")
	if res := rg.run(t, context.Background(), id, "2+3, then clean up"); res.Status != session.StatusDone {
		t.Fatalf("run: %+v", res)
	}
	figs, err := telemetry.Headline(rg.reg)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, f := range figs {
		got[f.Name] = f.Value
	}
	want := map[string]float64{
		"runs in progress": 0, "turns begun": 1, "runs recovered after their process stopped": 0, "runs failed": 0,
		"model calls": 3, "model calls that failed": 0, "tool calls": 3, "tool calls that failed or were denied": 2,
		"leases lost to another process": 0, "model cost, USD": 0,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("headline (-want +got):\n%s", diff)
	}
}

// A model that fails for good counts as an error and hands over to the
// fallback, whose success counts as such; only successful attempts time
// the model.
func TestMetricsOfAFallback(t *testing.T) {
	bad := scripted.New("m1", scripted.Reply{ErrorCode: model.CodeAuth, Error: "bad key"})
	good := scripted.New("m2", reply("fine"))
	a := &agentrt.Agent{Name: "calc", Model: bad, Fallbacks: []model.Model{good}}
	rg := newRig(t, nil, agentrt.Config{}, a)
	if res := rg.run(t, context.Background(), rg.session(t, "calc"), "hi"); res.Status != session.StatusDone {
		t.Fatalf("run: %+v", res)
	}
	want := []string{
		`agentrt_model_calls_total{model="m1",outcome="error"} 1`,
		`agentrt_model_calls_total{model="m2",outcome="ok"} 1`,
		`agentrt_runs_finished_total{agent="calc",status="done"} 1`,
	}
	if diff := cmp.Diff(want, counters(t, rg.reg, "agentrt_model_calls_total", "agentrt_runs_finished_total")); diff != "" {
		t.Errorf("metrics (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]uint64{`{model="m2"}`: 1}, samples(t, rg.reg, "agentrt_model_call_duration_seconds")); diff != "" {
		t.Errorf("model latency samples (-want +got):\n%s", diff)
	}
}

// A model failure that ends the run: the call and the run count as
// failed.
func TestMetricsOfAFailedRun(t *testing.T) {
	bad := scripted.New("m1", scripted.Reply{ErrorCode: model.CodeAuth, Error: "bad key"})
	rg := newRig(t, nil, agentrt.Config{}, &agentrt.Agent{Name: "calc", Model: bad})
	if res := rg.run(t, context.Background(), rg.session(t, "calc"), "hi"); res.Status != session.StatusFailed {
		t.Fatalf("run: %+v", res)
	}
	want := []string{
		`agentrt_model_calls_total{model="m1",outcome="error"} 1`,
		`agentrt_runs_active{agent="calc"} 0`,
		`agentrt_runs_finished_total{agent="calc",status="failed"} 1`,
	}
	if diff := cmp.Diff(want, counters(t, rg.reg, "agentrt_model_calls_total", "agentrt_runs_finished_total", "agentrt_runs_active")); diff != "" {
		t.Errorf("metrics (-want +got):\n%s", diff)
	}
}

// A sub-agent's run, a run that waits for a person and its resumption
// are runs of their agents, counted by status and by reason.
func TestMetricsOfSubagentsAndResumptions(t *testing.T) {
	reg, err := tool.NewRegistry(agentrt.SubAgent("calc", ""))
	if err != nil {
		t.Fatal(err)
	}
	boss := &agentrt.Agent{Name: "boss", Model: scripted.New("boss-m", reply("", "calc", `{"task":"6*7"}`), reply("It is 42.")), Tools: reg}
	calc := toolsAgent(t, scripted.New("calc-m", reply("", "calculator", `{"expression":"6*7"}`), reply("42")))
	calc.Approval.Ask = []string{"calculator"}
	rg := newRig(t, nil, agentrt.Config{}, boss, calc)
	id := rg.session(t, "boss")
	if res := rg.run(t, context.Background(), id, "6*7?"); res.Status != session.StatusWaiting {
		t.Fatalf("run: %+v", res)
	}
	st, err := rg.r.Load(context.Background(), id)
	if err != nil || len(st.Requests) != 1 {
		t.Fatalf("load: %v %+v", err, st)
	}
	if _, err := rg.r.Resolve(context.Background(), id, st.Requests[0].ID, agentrt.Resolution{Decision: session.DecisionApprove, By: "ana"}); err != nil {
		t.Fatal(err)
	}
	res, err := agentrt.Collect(rg.r.Resume(context.Background(), id))
	if err != nil || res.Status != session.StatusDone {
		t.Fatalf("resume: %+v %v", res, err)
	}
	want := []string{
		`agentrt_runs_active{agent="boss"} 0`,
		`agentrt_runs_active{agent="calc"} 0`,
		`agentrt_runs_finished_total{agent="boss",status="done"} 1`,
		`agentrt_runs_finished_total{agent="boss",status="waiting"} 1`,
		`agentrt_runs_finished_total{agent="calc",status="done"} 1`,
		`agentrt_runs_finished_total{agent="calc",status="waiting"} 1`,
		`agentrt_runs_started_total{agent="boss",reason="approval"} 1`,
		`agentrt_runs_started_total{agent="boss",reason="new"} 1`,
		`agentrt_runs_started_total{agent="calc",reason="approval"} 1`,
		`agentrt_runs_started_total{agent="calc",reason="new"} 1`,
		`agentrt_tool_calls_total{outcome="ok",tool="calc"} 1`,
		`agentrt_tool_calls_total{outcome="ok",tool="calculator"} 1`,
	}
	got := counters(t, rg.reg, "agentrt_runs_active", "agentrt_runs_finished_total", "agentrt_runs_started_total", "agentrt_tool_calls_total")
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("metrics (-want +got):\n%s", diff)
	}
}

// A run whose session another process took over stops without storing
// its end (a lost lease, and a run not stored); the process that took it
// over counts a recovery.
func TestMetricsOfALeaseTakeover(t *testing.T) {
	clock := storetest.NewClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	store := memstore.New(memstore.WithClock(clock.Now))
	started, release := make(chan struct{}, 1), make(chan struct{})
	a := newRig(t, store, agentrt.Config{LeaseTTL: time.Hour, Owner: "a:1:a"}, gateAgent(t, scripted.New("m", reply("", "gate", `{}`), reply("from a")), started, release))
	id := a.session(t, "calc")
	h, err := a.r.Start(context.Background(), id, agentrt.Input{Text: "go"})
	if err != nil {
		t.Fatal(err)
	}
	<-started
	clock.Advance(2 * time.Hour) // a's lease expired: b takes the session over
	open := make(chan struct{})
	close(open) // b's call of the gate passes at once
	b := newRig(t, store, agentrt.Config{LeaseTTL: time.Hour, Owner: "b:2:b"}, gateAgent(t, scripted.New("m", reply("from b")), make(chan struct{}, 1), open))
	res, err := agentrt.Collect(b.r.Resume(context.Background(), id))
	if err != nil || res.Status != session.StatusDone {
		t.Fatalf("b's resume: %+v %v", res, err)
	}
	close(release) // a's call returns; its result's commit is fenced
	if _, err := h.Wait(context.Background()); agentrt.AsError(err).ErrorCode() != agentrt.CodeLeaseLost {
		t.Fatalf("a's run: %v, want lease_lost", err)
	}
	wantA := []string{
		`agentrt_leases_lost_total{agent="calc",code="lease_lost"} 1`,
		`agentrt_runs_active{agent="calc"} 0`,
		`agentrt_runs_finished_total{agent="calc",status="not_stored"} 1`,
		`agentrt_runs_started_total{agent="calc",reason="new"} 1`,
	}
	names := []string{"agentrt_leases_lost_total", "agentrt_runs_active", "agentrt_runs_finished_total", "agentrt_runs_started_total"}
	if diff := cmp.Diff(wantA, counters(t, a.reg, names...)); diff != "" {
		t.Errorf("a's metrics (-want +got):\n%s", diff)
	}
	wantB := []string{
		`agentrt_runs_active{agent="calc"} 0`,
		`agentrt_runs_finished_total{agent="calc",status="done"} 1`,
		`agentrt_runs_started_total{agent="calc",reason="recovered"} 1`,
	}
	if diff := cmp.Diff(wantB, counters(t, b.reg, names...)); diff != "" {
		t.Errorf("b's metrics (-want +got):\n%s", diff)
	}
}

// A run whose commit fails stops without storing its end; resumed, it
// counts as recovered, and its calls are not counted twice.
func TestMetricsOfAFailedCommit(t *testing.T) {
	var faults storetest.Faults
	store := storetest.Faulty(memstore.New(), &faults)
	m := scripted.New("m", reply("", "calculator", `{"expression":"2+3"}`), reply("5"))
	rg := newRig(t, store, agentrt.Config{}, toolsAgent(t, m))
	id := rg.session(t, "calc")
	faults.FailCommit(3, false) // the tool's result
	if _, err := agentrt.Collect(rg.r.Run(context.Background(), id, agentrt.Input{Text: "2+3"})); !errors.Is(err, storetest.ErrInjected) {
		t.Fatalf("run: %v, want the injected failure", err)
	}
	names := []string{"agentrt_runs_finished_total", "agentrt_runs_started_total", "agentrt_tool_calls_total", "agentrt_leases_lost_total", "agentrt_runs_active"}
	want := []string{
		`agentrt_runs_active{agent="calc"} 0`,
		`agentrt_runs_finished_total{agent="calc",status="not_stored"} 1`,
		`agentrt_runs_started_total{agent="calc",reason="new"} 1`,
	}
	if diff := cmp.Diff(want, counters(t, rg.reg, names...)); diff != "" {
		t.Errorf("after the failed commit (-want +got):\n%s", diff)
	}
	res, err := agentrt.Collect(rg.r.Resume(context.Background(), id))
	if err != nil || res.Status != session.StatusDone {
		t.Fatalf("resume: %+v %v", res, err)
	}
	want = []string{
		`agentrt_runs_active{agent="calc"} 0`,
		`agentrt_runs_finished_total{agent="calc",status="done"} 1`,
		`agentrt_runs_finished_total{agent="calc",status="not_stored"} 1`,
		`agentrt_runs_started_total{agent="calc",reason="new"} 1`,
		`agentrt_runs_started_total{agent="calc",reason="recovered"} 1`,
		`agentrt_tool_calls_total{outcome="ok",tool="calculator"} 1`,
	}
	if diff := cmp.Diff(want, counters(t, rg.reg, names...)); diff != "" {
		t.Errorf("after the resumption (-want +got):\n%s", diff)
	}
}

// gateAgent is an agent "calc" on m with one tool, "gate", which says it
// started and waits for release.
func gateAgent(t *testing.T, m model.Model, started chan<- struct{}, release <-chan struct{}) *agentrt.Agent {
	t.Helper()
	gate := tool.Must(tool.New("gate", "waits", func(ctx context.Context, _ struct{}) (string, error) {
		started <- struct{}{}
		select {
		case <-release:
			return "passed", nil
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}))
	reg, err := tool.NewRegistry(gate)
	if err != nil {
		t.Fatal(err)
	}
	return &agentrt.Agent{Name: "calc", Model: m, Tools: reg}
}

// Past MaxLabelValues distinct tool names (a model that invents them),
// the rest are counted under OtherLabel.
func TestToolLabelsAreBounded(t *testing.T) {
	reg := prometheus.NewRegistry()
	tel, err := telemetry.New(telemetry.Config{Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	info := agentrt.HookInfo{Tenant: "default", SessionID: "s", RunID: "r", Agent: "calc"}
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ev := func(seq int64, d session.Data) *session.Event {
		return &session.Event{Seq: seq, SessionID: "s", RunID: "r", Type: d.EventType(), Time: at.Add(time.Duration(seq) * time.Millisecond), Data: d}
	}
	tel.Committed(context.Background(), info, []*session.Event{ev(1, &session.RunStarted{Input: "go"})})
	n := telemetry.MaxLabelValues + 3
	seq := int64(1)
	for i := range n {
		name, id := fmt.Sprintf("made_up_%03d", i), fmt.Sprintf("c%d", i)
		tel.Committed(context.Background(), info, []*session.Event{
			ev(seq+1, &session.ToolCall{CallID: id, Name: name}),
			ev(seq+2, &session.ToolResult{CallID: id, Name: name, Error: "unknown tool"}),
		})
		seq += 2
	}
	got := counters(t, reg, "agentrt_tool_calls_total")
	if len(got) != telemetry.MaxLabelValues+1 {
		t.Errorf("%d series, want %d", len(got), telemetry.MaxLabelValues+1)
	}
	if want := `agentrt_tool_calls_total{outcome="error",tool="_other"} 3`; !slices.Contains(got, want) {
		t.Errorf("no %s among %d series", want, len(got))
	}
	if diff := cmp.Diff(map[string]uint64{`{tool="_other"}`: 3}, filter(samples(t, reg, "agentrt_tool_call_duration_seconds"), "_other")); diff != "" {
		t.Errorf("latency samples of the others (-want +got):\n%s", diff)
	}
}

// filter keeps the entries of m whose key contains s.
func filter(m map[string]uint64, s string) map[string]uint64 {
	out := map[string]uint64{}
	for k, v := range m {
		if strings.Contains(k, s) {
			out[k] = v
		}
	}
	return out
}

// A second Telemetry on the same registry is refused, saying why.
func TestNewRefusesARegisteredRegistry(t *testing.T) {
	reg := prometheus.NewRegistry()
	if _, err := telemetry.New(telemetry.Config{Registry: reg}); err != nil {
		t.Fatal(err)
	}
	_, err := telemetry.New(telemetry.Config{Registry: reg})
	var are prometheus.AlreadyRegisteredError
	if !errors.As(err, &are) || !strings.Contains(err.Error(), "telemetry: register") {
		t.Fatalf("second New: %v, want an AlreadyRegisteredError", err)
	}
}

// The server's own measures: streams it counts, and gauges computed at
// each scrape; a gauge that cannot be computed fails the scrape, saying
// why.
func TestServerGauges(t *testing.T) {
	reg := prometheus.NewRegistry()
	tel, err := telemetry.New(telemetry.Config{Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	tel.OpenStreams("sse").Add(2)
	tel.OpenStreams("ws").Inc()
	tel.OpenStreams("sse").Dec()
	pending := 7.0
	if err := telemetry.GaugeFunc(reg, "pending_requests", "Human requests pending.", 0, func(context.Context) (float64, error) {
		return pending, nil
	}); err != nil {
		t.Fatal(err)
	}
	var inboxErr error
	if err := telemetry.GaugeFunc(reg, "inbox_depth", "Inputs waiting.", time.Minute, func(ctx context.Context) (float64, error) {
		if _, ok := ctx.Deadline(); !ok {
			return 0, errors.New("no deadline")
		}
		return 3, inboxErr
	}); err != nil {
		t.Fatal(err)
	}
	want := []string{
		`agentrt_inbox_depth 3`,
		`agentrt_open_streams{kind="sse"} 1`,
		`agentrt_open_streams{kind="ws"} 1`,
		`agentrt_pending_requests 7`,
	}
	if diff := cmp.Diff(want, counters(t, reg, "agentrt_open_streams", "agentrt_pending_requests", "agentrt_inbox_depth")); diff != "" {
		t.Errorf("gauges (-want +got):\n%s", diff)
	}
	srv := httptest.NewServer(telemetry.Handler(reg))
	defer srv.Close()
	get := func() (int, string) {
		resp, err := http.Get(srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := get(); code != http.StatusOK || !strings.Contains(body, "agentrt_pending_requests 7") {
		t.Errorf("scrape: %d\n%s", code, body)
	}
	inboxErr = errors.New("the store is down")
	if code, body := get(); code != http.StatusInternalServerError || !strings.Contains(body, "the store is down") {
		t.Errorf("scrape with a failing gauge: %d\n%s", code, body)
	}
	if err := telemetry.GaugeFunc(reg, "pending_requests", "again", 0, func(context.Context) (float64, error) { return 0, nil }); err == nil {
		t.Error("a gauge registered twice: no error")
	}
	if err := telemetry.GaugeFunc(reg, "", "no name", 0, nil); err == nil {
		t.Error("a gauge without a name or function: no error")
	}
}
