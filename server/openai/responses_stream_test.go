package openai_test

import (
	"context"
	"encoding/json"
	"iter"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	oa "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/ssestream"
	"github.com/openai/openai-go/v3/responses"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/session/sqlite"
)

// streamed is an event of a response's stream, as a test compares it.
type streamed struct {
	Type  string
	Seq   int64
	Delta string
}

// readStream reads a response stream to its end.
func readStream(t *testing.T, st *ssestream.Stream[responses.ResponseStreamEventUnion]) []streamed {
	t.Helper()
	var out []streamed
	for st.Next() {
		ev := st.Current()
		out = append(out, streamed{Type: ev.Type, Seq: ev.SequenceNumber, Delta: ev.Delta})
	}
	if err := st.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// deltaText is the text of the output_text deltas of evs.
func deltaText(evs []streamed) string {
	var b strings.Builder
	for _, e := range evs {
		if e.Type == "response.output_text.delta" {
			b.WriteString(e.Delta)
		}
	}
	return b.String()
}

// A streamed response sends the model's tokens as they come, one
// output_text.delta each, numbered by where their text ends in the
// message; openai-go's accumulator adds them up to the stored text.
func TestResponsesStreamTokens(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	c := f.client("")
	st := c.Responses.NewStreaming(t.Context(), respParams("stream me"))
	var got []streamed
	var acc responses.ResponseAccumulator
	var accumulated, final string
	for st.Next() {
		ev := st.Current()
		got = append(got, streamed{Type: ev.Type, Seq: ev.SequenceNumber, Delta: ev.Delta})
		if ev.Type == "response.output_text.done" {
			// What the deltas came to, before the done event says it.
			accumulated = acc.Snapshot().OutputText()
		}
		var wire responses.ResponsesServerEventUnion
		if err := json.Unmarshal([]byte(ev.RawJSON()), &wire); err != nil {
			t.Fatal(err)
		}
		if err := acc.AddEvent(wire); err != nil {
			t.Fatalf("openai-go's accumulator refuses %s: %v", ev.Type, err)
		}
		if ev.Type == "response.completed" {
			final = ev.Response.OutputText()
		}
	}
	if err := st.Err(); err != nil {
		t.Fatal(err)
	}
	// "echo: stream me": tokens "echo: ", "stream ", "me" end at bytes 6,
	// 13 and 15 of the message, whose numbers start at 2.
	want := []streamed{
		{"response.created", 0, ""},
		{"response.in_progress", 1, ""},
		{"response.output_item.added", 2, ""},
		{"response.content_part.added", 3, ""},
		{"response.output_text.delta", 9, "echo: "},
		{"response.output_text.delta", 16, "stream "},
		{"response.output_text.delta", 18, "me"},
		{"response.output_text.done", 19, ""},
		{"response.content_part.done", 20, ""},
		{"response.output_item.done", 21, ""},
		{"response.completed", 22, ""},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("the stream (-want +got):\n%s", diff)
	}
	if accumulated != "echo: stream me" || final != "echo: stream me" {
		t.Errorf("the deltas came to %q, the response says %q; want %q", accumulated, final, "echo: stream me")
	}
	r, err := acc.ReconstructedResponse()
	if err != nil || r.OutputText() != "echo: stream me" {
		t.Errorf("openai-go's accumulated response: %v, %v", r, err)
	}
}

// A stream read again after any sequence number — a token's included —
// is the rest of the same stream: the same events with the same numbers,
// and deltas whose text is the rest of the message, nothing twice; on a
// new server over the same database too.
func TestResponsesResumeAfterEveryNumber(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "agentrt.db")
	st, err := sqlite.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	f := newFixtureWith(t, fixtureConfig{store: st})
	c := f.client("")
	first, err := c.Responses.New(t.Context(), respParams("hello"))
	if err != nil {
		t.Fatal(err)
	}
	p := respParams("resume me after any token")
	p.PreviousResponseID = oa.String(first.ID)
	var id string
	var live []streamed
	s := c.Responses.NewStreaming(t.Context(), p)
	for s.Next() {
		ev := s.Current()
		live = append(live, streamed{Type: ev.Type, Seq: ev.SequenceNumber, Delta: ev.Delta})
		id = ev.Response.ID // on created and completed
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	if n := countOf(live, "response.output_text.delta"); n != 6 || deltaText(live) != "echo: resume me after any token" {
		t.Fatalf("the live stream's %d deltas: %q; want a delta a word", n, deltaText(live))
	}
	f.checkResumes(t, id, live)

	// The server stops; another one opens the database.
	f.close()
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	st2, err := sqlite.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st2.Close() })
	g := newFixtureWith(t, fixtureConfig{store: st2})
	g.checkResumes(t, id, live)
	got, err := g.client("").Responses.Get(t.Context(), id, responses.ResponseGetParams{})
	if err != nil || got.OutputText() != "echo: resume me after any token" || got.PreviousResponseID != first.ID {
		t.Fatalf("after the restart, %s: %q previous %q, %v", id, got.OutputText(), got.PreviousResponseID, err)
	}
}

// checkResumes reads response id's stream after each number of live, the
// stream as it was first read, and checks it is the rest of live.
func (f *fixture) checkResumes(t *testing.T, id string, live []streamed) {
	t.Helper()
	c := f.client("")
	text := deltaText(live)
	for i, at := range live {
		rest := readStream(t, c.Responses.GetStreaming(t.Context(), id, responses.ResponseGetParams{StartingAfter: oa.Int(at.Seq)}))
		if got, want := deltaText(rest), strings.TrimPrefix(text, deltaText(live[:i+1])); got != want {
			t.Errorf("after %d: the deltas say %q; want %q", at.Seq, got, want)
		}
		// Read from the log, the rest of the text is one delta, numbered
		// as the last token was.
		var wantRest, gotRest []streamed
		for _, e := range live[i+1:] {
			if e.Type != "response.output_text.delta" {
				wantRest = append(wantRest, e)
			}
		}
		var lastDelta int64
		for _, e := range rest {
			if e.Seq <= at.Seq {
				t.Errorf("after %d: event %s numbered %d", at.Seq, e.Type, e.Seq)
			}
			if e.Type == "response.output_text.delta" {
				lastDelta = e.Seq
				continue
			}
			gotRest = append(gotRest, e)
		}
		if diff := cmp.Diff(wantRest, gotRest); diff != "" {
			t.Errorf("after %d (-want +got):\n%s", at.Seq, diff)
		}
		if lastDelta != 0 && lastDelta != lastSeqOf(live, "response.output_text.delta") {
			t.Errorf("after %d: the rest of the text is numbered %d; the last token was %d", at.Seq, lastDelta, lastSeqOf(live, "response.output_text.delta"))
		}
	}
}

func countOf(evs []streamed, typ string) int {
	n := 0
	for _, e := range evs {
		if e.Type == typ {
			n++
		}
	}
	return n
}

func lastSeqOf(evs []streamed, typ string) int64 {
	var n int64
	for _, e := range evs {
		if e.Type == typ {
			n = e.Seq
		}
	}
	return n
}

// gated is a model that says "one two three": it streams "one " and
// "two ", then waits for release (or its call's end) before "three".
type gated struct{ release chan struct{} }

func (gated) Name() string { return "gated" }

func (g gated) Stream(ctx context.Context, req *model.Request) iter.Seq2[model.Chunk, error] {
	return func(yield func(model.Chunk, error) bool) {
		for _, w := range []string{"one ", "two "} {
			if !yield(model.Chunk{Text: w}, nil) {
				return
			}
		}
		select {
		case <-g.release:
		case <-ctx.Done():
			yield(model.Chunk{}, ctx.Err())
			return
		}
		yield(model.Chunk{Text: "three", FinishReason: model.FinishStop, Usage: &model.Usage{InputTokens: 4, OutputTokens: 3}}, nil)
	}
}

// newGated is a fixture with an agent "slow" whose model is g.
func newGated(t *testing.T) (*fixture, gated) {
	t.Helper()
	g := gated{release: make(chan struct{})}
	return newFixtureWith(t, fixtureConfig{agents: []*agentrt.Agent{{Name: "slow", Model: g}}}), g
}

// A client that resumes while the model still streams, after a token it
// had, gets the rest of the message once the reply is stored, with the
// numbers of the stream it left.
func TestResponsesResumeWhileStreaming(t *testing.T) {
	t.Parallel()
	f, g := newGated(t)
	c := f.client("")
	p := respParams("count")
	p.Model = "slow"
	s := c.Responses.NewStreaming(t.Context(), p)
	var live []streamed
	var id string
	for len(live) == 0 || deltaText(live) != "one two " {
		if !s.Next() {
			t.Fatalf("the stream ended early: %v", s.Err())
		}
		ev := s.Current()
		live = append(live, streamed{Type: ev.Type, Seq: ev.SequenceNumber, Delta: ev.Delta})
		if ev.Type == "response.created" {
			id = ev.Response.ID
		}
	}
	n := live[len(live)-1].Seq
	// GetStreaming returns with the headers, which the server sends once
	// it follows the session: the model call began before.
	resumed := c.Responses.GetStreaming(t.Context(), id, responses.ResponseGetParams{StartingAfter: oa.Int(n)})
	close(g.release)
	rest := readStream(t, resumed)
	live = append(live, readStream(t, s)...)
	if deltaText(live) != "one two three" {
		t.Fatalf("the live stream's text: %q", deltaText(live))
	}
	var want []streamed
	for _, e := range live {
		if e.Seq > n {
			want = append(want, e)
		}
	}
	if diff := cmp.Diff(want, rest); diff != "" {
		t.Errorf("resumed after %d (-want +got):\n%s", n, diff)
	}
}
