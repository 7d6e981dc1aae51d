package agentrt_test

import (
	"context"
	"iter"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/model/scripted"
	"github.com/agentrt/agentrt/session"
)

// attempts lists the model_started and error events of a log as
// "started m#1", "error code m#1 retry=…".
func attempts(events []*session.Event) []string {
	var out []string
	for _, e := range events {
		switch d := e.Data.(type) {
		case *session.ModelStarted:
			s := "started " + d.Model + "#" + itoa(d.Attempt)
			if d.Mode != "" {
				s += " " + d.Mode
			}
			out = append(out, s)
		case *session.Error:
			s := "error " + d.Code
			if d.Model != "" {
				s += " " + d.Model + "#" + itoa(d.Attempt)
			}
			if d.RetryInMS > 0 {
				s += " retry=" + (time.Duration(d.RetryInMS) * time.Millisecond).String()
			}
			if d.Recoverable {
				s += " recoverable"
			}
			out = append(out, s)
		case *session.ModelFinished:
			out = append(out, "finished "+d.Model)
		}
	}
	return out
}

func itoa(n int) string { return strconv.Itoa(n) }

func TestRetryHonoursRetryAfter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := scripted.New("m",
			scripted.Reply{ErrorCode: model.CodeRateLimited, RetryAfter: 10 * time.Second},
			scripted.Reply{Text: "done"},
		)
		a := &agentrt.Agent{Name: "a", Model: m, Retry: agentrt.RetryPolicy{InitialDelay: time.Millisecond, MaxDelay: time.Minute}}
		e := newEnv(t, nil, agentrt.Config{}, a)
		id := e.session(t, "a")
		start := time.Now()
		res := e.run(t, id, "hi")
		if res.Status != session.StatusDone || res.Text != "done" {
			t.Fatalf("result %+v", res)
		}
		if waited := time.Since(start); waited != 10*time.Second {
			t.Errorf("waited %v, want the 10s the provider asked for", waited)
		}
		want := []string{"started m#1", "error rate_limited m#1 retry=10s recoverable", "started m#2", "finished m"}
		if diff := cmp.Diff(want, attempts(storedLog(t, e.store, id))); diff != "" {
			t.Errorf("attempts (-want +got):\n%s", diff)
		}
	})
}

func TestRetryBacksOffThenFallsBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		primary := scripted.New("primary",
			scripted.Reply{ErrorCode: model.CodeServer},
			scripted.Reply{ErrorCode: model.CodeServer},
			scripted.Reply{ErrorCode: model.CodeTimeout},
		)
		fallback := scripted.New("fallback", scripted.Reply{Text: "from the fallback"})
		a := &agentrt.Agent{Name: "a", Model: primary, Fallbacks: []model.Model{fallback},
			Retry: agentrt.RetryPolicy{MaxAttempts: 3, InitialDelay: time.Second, MaxDelay: 4 * time.Second}}
		e := newEnv(t, nil, agentrt.Config{}, a)
		id := e.session(t, "a")
		start := time.Now()
		res := e.run(t, id, "hi")
		if res.Status != session.StatusDone || res.Text != "from the fallback" {
			t.Fatalf("result %+v", res)
		}
		log := storedLog(t, e.store, id)
		var waits time.Duration
		for _, ev := range log {
			if d, ok := ev.Data.(*session.Error); ok {
				waits += time.Duration(d.RetryInMS) * time.Millisecond
				if d.Model == "primary" && d.Attempt == 1 && (d.RetryInMS < 500 || d.RetryInMS > 1500) {
					t.Errorf("first backoff %dms, want 1s ± 50%%", d.RetryInMS)
				}
			}
		}
		// Each announced wait is rounded down to the millisecond.
		if elapsed := time.Since(start); elapsed < waits || elapsed >= waits+2*time.Millisecond {
			t.Errorf("elapsed %v, want the announced waits %v", elapsed, waits)
		}
		got := attempts(log)
		for i := range got {
			got[i] = stripRetry(got[i]) // the waits are random; checked above
		}
		want := []string{
			"started primary#1", "error server primary#1 recoverable",
			"started primary#2", "error server primary#2 recoverable",
			"started primary#3", "error timeout primary#3 recoverable",
			"started fallback#4", "finished fallback",
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("attempts (-want +got):\n%s", diff)
		}
	})
}

// stripRetry drops the retry= field of an attempts entry.
func stripRetry(s string) string {
	var keep []string
	for _, f := range strings.Fields(s) {
		if !strings.HasPrefix(f, "retry=") {
			keep = append(keep, f)
		}
	}
	return strings.Join(keep, " ")
}

func TestNonRecoverableSkipsRetries(t *testing.T) {
	primary := scripted.New("primary", scripted.Reply{ErrorCode: model.CodeAuth, Error: "bad key"})
	fallback := scripted.New("fallback", scripted.Reply{Text: "ok"})
	a := &agentrt.Agent{Name: "a", Model: primary, Fallbacks: []model.Model{fallback}}
	e := newEnv(t, nil, agentrt.Config{}, a)
	id := e.session(t, "a")
	if res := e.run(t, id, "hi"); res.Status != session.StatusDone {
		t.Fatalf("result %+v", res)
	}
	want := []string{"started primary#1", "error auth primary#1", "started fallback#2", "finished fallback"}
	if diff := cmp.Diff(want, attempts(storedLog(t, e.store, id))); diff != "" {
		t.Errorf("attempts (-want +got):\n%s", diff)
	}
}

func TestAllModelsFailFailsTheRun(t *testing.T) {
	primary := scripted.New("primary", scripted.Reply{ErrorCode: model.CodeContextLength, Error: "prompt is too long"})
	fallback := scripted.New("fallback", scripted.Reply{ErrorCode: model.CodeBadRequest, Error: "no such model"})
	a := &agentrt.Agent{Name: "a", Model: primary, Fallbacks: []model.Model{fallback}}
	e := newEnv(t, nil, agentrt.Config{}, a)
	id := e.session(t, "a")
	res, err := agentrt.Collect(e.r.Run(context.Background(), id, agentrt.Input{Text: "hi"}))
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != session.StatusFailed {
		t.Fatalf("status %s, want failed", res.Status)
	}
	log := storedLog(t, e.store, id)
	want := []string{"started primary#1", "error context_length primary#1", "started fallback#2", "error bad_request"}
	if diff := cmp.Diff(want, attempts(log)); diff != "" {
		t.Errorf("attempts (-want +got):\n%s", diff)
	}
	last := log[len(log)-2].Data.(*session.Error)
	if last.Recoverable || last.Message == "" {
		t.Errorf("final error %+v: want a non-recoverable error with a message", last)
	}
	if d := log[len(log)-1].Data.(*session.RunFinished); d.Status != "failed" {
		t.Errorf("run_finished %+v", d)
	}
}

func TestUnclassifiedErrorIsNotRetried(t *testing.T) {
	m := scripted.New("m", scripted.Reply{Error: "boom"}, scripted.Reply{Text: "never"})
	e := newEnv(t, nil, agentrt.Config{}, &agentrt.Agent{Name: "a", Model: m})
	id := e.session(t, "a")
	res, err := agentrt.Collect(e.r.Run(context.Background(), id, agentrt.Input{Text: "hi"}))
	if err != nil || res.Status != session.StatusFailed {
		t.Fatalf("status %v, err %v; want failed", res.Status, err)
	}
	if m.Calls() != 1 {
		t.Errorf("model called %d times, want 1", m.Calls())
	}
}

// breakingModel streams some text, then breaks with a cut stream; asked
// without streaming, it answers whole.
type breakingModel struct {
	streams, generates int
}

func (b *breakingModel) Name() string { return "breaking" }

func (b *breakingModel) Stream(ctx context.Context, req *model.Request) iter.Seq2[model.Chunk, error] {
	return func(yield func(model.Chunk, error) bool) {
		b.streams++
		if !yield(model.Chunk{Pulse: true}, nil) || !yield(model.Chunk{Text: "Hel"}, nil) {
			return
		}
		yield(model.Chunk{}, &model.Error{Code: model.CodeStreamIncomplete, Streamed: true, Message: "cut"})
	}
}

func (b *breakingModel) Generate(ctx context.Context, req *model.Request) (*model.Response, error) {
	b.generates++
	r := &model.Response{FinishReason: model.FinishStop}
	r.Message = model.TextMessage(model.RoleAssistant, "Hello")
	return r, nil
}

func TestBrokenStreamFallsBackToGenerate(t *testing.T) {
	m := &breakingModel{}
	e := newEnv(t, nil, agentrt.Config{}, &agentrt.Agent{Name: "a", Model: m})
	id := e.session(t, "a")
	var live []string
	for ev, err := range e.r.Run(context.Background(), id, agentrt.Input{Text: "hi"}) {
		if err != nil {
			t.Fatal(err)
		}
		if d, ok := ev.Data.(*session.Token); ok {
			if d.Pulse {
				live = append(live, "pulse")
			} else {
				live = append(live, d.Text)
			}
		}
	}
	if diff := cmp.Diff([]string{"pulse", "Hel", "Hello"}, live); diff != "" {
		t.Errorf("live tokens (-want +got):\n%s", diff)
	}
	want := []string{"started breaking#1", "error stream_incomplete breaking#1 recoverable", "started breaking#2 generate", "finished breaking"}
	if diff := cmp.Diff(want, attempts(storedLog(t, e.store, id))); diff != "" {
		t.Errorf("attempts (-want +got):\n%s", diff)
	}
	if m.streams != 1 || m.generates != 1 {
		t.Errorf("%d streams, %d generates; want 1 and 1", m.streams, m.generates)
	}
}

func TestCancelDuringBackoff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := scripted.New("m", scripted.Reply{ErrorCode: model.CodeRateLimited, RetryAfter: time.Hour})
		e := newEnv(t, nil, agentrt.Config{}, &agentrt.Agent{Name: "a", Model: m, Retry: agentrt.RetryPolicy{MaxDelay: 2 * time.Hour}})
		id := e.session(t, "a")
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		start := time.Now()
		res, err := agentrt.Collect(e.r.Run(ctx, id, agentrt.Input{Text: "hi"}))
		if err != nil {
			t.Fatal(err)
		}
		if res.Status != session.StatusCanceled {
			t.Errorf("status %s, want canceled", res.Status)
		}
		if waited := time.Since(start); waited != time.Minute {
			t.Errorf("waited %v, want the context's minute", waited)
		}
	})
}

func TestRetryPolicyValidated(t *testing.T) {
	_, err := agentrt.NewRunner(agentrt.Config{Agents: []*agentrt.Agent{{Name: "a", Model: scripted.New("m"), Retry: agentrt.RetryPolicy{MaxAttempts: -1}}}})
	if err == nil {
		t.Error("negative MaxAttempts accepted")
	}
	_, err = agentrt.NewRunner(agentrt.Config{Agents: []*agentrt.Agent{{Name: "a", Model: scripted.New("m"), Fallbacks: []model.Model{nil}}}})
	if err == nil {
		t.Error("nil fallback accepted")
	}
}
