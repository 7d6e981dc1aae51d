package openai_test

import (
	"context"
	"iter"
	"net/http"
	"sync"
	"testing"

	oa "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/session"
	"github.com/agentrt/agentrt/session/memstore"
)

// turns is a model whose calls each say "done" once let go: the nth
// call waits for gates[n] (or its call's end); started gets each call's
// number as it begins.
type turns struct {
	gates   []chan struct{}
	started chan int
	mu      sync.Mutex
	n       int // calls so far; guarded by mu
}

func (*turns) Name() string { return "turns" }

func (m *turns) Stream(ctx context.Context, req *model.Request) iter.Seq2[model.Chunk, error] {
	return func(yield func(model.Chunk, error) bool) {
		m.mu.Lock()
		n := m.n
		m.n++
		m.mu.Unlock()
		m.started <- n
		select {
		case <-m.gates[n]:
		case <-ctx.Done():
			yield(model.Chunk{}, ctx.Err())
			return
		}
		yield(model.Chunk{Text: "done", FinishReason: model.FinishStop, Usage: &model.Usage{InputTokens: 1, OutputTokens: 1}}, nil)
	}
}

// racyStore is a store that, once armed, runs race when a reading of a
// session's log has read it to its end: what happens between a reader's
// look at the log and what it does next.
type racyStore struct {
	*memstore.Store
	mu   sync.Mutex
	race func() // guarded by mu; run once
}

func (s *racyStore) Events(ctx context.Context, id string, after int64) iter.Seq2[*session.Event, error] {
	return func(yield func(*session.Event, error) bool) {
		for ev, err := range s.Store.Events(ctx, id, after) {
			if !yield(ev, err) || err != nil {
				return
			}
		}
		s.mu.Lock()
		race := s.race
		s.race = nil
		s.mu.Unlock()
		if race != nil {
			race()
		}
	}
}

// A cancel names the run it read as the response's: when that run ends
// between the reading and the cancel, and the session's next turn (the
// next response) runs by then, the cancel is refused (409 not_running,
// the response completed) and the next response goes on to its end.
func TestResponsesCancelNamesItsRun(t *testing.T) {
	t.Parallel()
	m := &turns{gates: []chan struct{}{make(chan struct{}), make(chan struct{})}, started: make(chan int, 2)}
	st := &racyStore{Store: memstore.New()}
	f := newFixtureWith(t, fixtureConfig{store: st, agents: []*agentrt.Agent{{Name: "turns", Model: m}}})
	c := f.client("")
	p := respParams("first")
	p.Model, p.Background = "turns", oa.Bool(true)
	first, err := c.Responses.New(t.Context(), p)
	if err != nil {
		t.Fatal(err)
	}
	<-m.started
	var next *responses.Response
	st.mu.Lock()
	st.race = func() {
		// The cancel has read that the first response runs: its run ends
		// and the next response's begins before the cancel lands.
		close(m.gates[0])
		follow(t, c, first.ID, "response.completed")
		q := respParams("second")
		q.Model, q.Background, q.PreviousResponseID = "turns", oa.Bool(true), oa.String(first.ID)
		var err error
		if next, err = c.Responses.New(context.Background(), q); err != nil {
			t.Error(err)
			return
		}
		<-m.started
	}
	st.mu.Unlock()
	if _, err := c.Responses.Cancel(t.Context(), first.ID); !apiErrorIs(err, http.StatusConflict, "not_running") {
		t.Fatalf("cancel of the response whose run ended meanwhile: %v; want 409 not_running", err)
	}
	if next == nil {
		t.Fatal("the race did not run")
	}
	if got, err := c.Responses.Get(t.Context(), next.ID, responses.ResponseGetParams{}); err != nil || got.Status != "in_progress" {
		t.Fatalf("the next response after the cancel of the first: %s %v; want it still in progress", got.Status, err)
	}
	close(m.gates[1])
	if got := follow(t, c, next.ID, "response.completed"); got.Status != "completed" || got.OutputText() != "done" {
		t.Fatalf("the next response: %s %q; want it completed", got.Status, got.OutputText())
	}
}

// Under the interrupt policy (the default), a response created on a
// session while an earlier response's turn runs restarts that turn, and
// its new run answers both inputs: cancelling the later response cancels
// that run, and the earlier response ends cancelled with it (as
// docs/protocols.md says); the session's next turn runs as usual.
func TestResponsesCancelMergedTurn(t *testing.T) {
	t.Parallel()
	f, g := newGated(t)
	c := f.client("")
	p := respParams("first")
	p.Model, p.Background = "slow", oa.Bool(true)
	first, err := c.Responses.New(t.Context(), p)
	if err != nil {
		t.Fatal(err)
	}
	follow(t, c, first.ID, "response.in_progress")
	q := respParams("second")
	q.Model, q.Background, q.PreviousResponseID = "slow", oa.Bool(true), oa.String(first.ID)
	second, err := c.Responses.New(t.Context(), q)
	if err != nil {
		t.Fatal(err)
	}
	follow(t, c, second.ID, "response.in_progress")
	if got, err := c.Responses.Cancel(t.Context(), second.ID); err != nil || got.Status != "cancelled" {
		t.Fatalf("cancel of the later response: %s %v", got.Status, err)
	}
	for _, r := range []*responses.Response{first, second} {
		if got, err := c.Responses.Get(t.Context(), r.ID, responses.ResponseGetParams{}); err != nil || got.Status != "cancelled" {
			t.Errorf("response %s after the cancel: %s %v; want cancelled (one run answered both)", r.ID, got.Status, err)
		}
	}
	close(g.release)
	q.Input, q.PreviousResponseID = responses.ResponseNewParamsInputUnion{OfString: oa.String("third")}, oa.String(second.ID)
	third, err := c.Responses.New(t.Context(), q)
	if err != nil {
		t.Fatal(err)
	}
	if got := follow(t, c, third.ID, "response.completed"); got.Status != "completed" {
		t.Fatalf("the next turn: %s", got.Status)
	}
}
