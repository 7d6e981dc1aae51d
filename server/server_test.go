package server_test

import (
	"context"
	"encoding/json"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/server"
	"github.com/agentrt/agentrt/session"
	"github.com/agentrt/agentrt/session/sqlite"
)

// A message sent with Accept: text/event-stream streams the run that
// answers it, from run_started to run_finished, each committed event with
// its seq as id and the live tokens between them without one.
func TestMessageStreamsItsRun(t *testing.T) {
	f := newFixture(t, options{})
	id := f.create(t, "")
	var got []sseEvent
	for e := range f.stream(t, "POST", "/v1/sessions/"+id+"/messages", "", map[string]any{"text": "hello there"}) {
		got = append(got, e)
	}
	if len(got) == 0 || got[0].typ != "run_started" || got[len(got)-1].typ != "run_finished" {
		t.Fatalf("streamed %v, want run_started … run_finished", typesOf(got))
	}
	s := seqs(t, got)
	for i := range s {
		if s[i] != int64(i+1) {
			t.Fatalf("seqs %v: want 1, 2, 3, … with no gap", s)
		}
	}
	var text strings.Builder
	for _, e := range got {
		if e.typ == "token" {
			if d, ok := e.ev.Data.(*session.Token); ok {
				text.WriteString(d.Text)
			}
		}
	}
	if text.String() != "echo: hello there" {
		t.Errorf("the tokens spell %q, want the reply", text.String())
	}
	if !slices.Contains(typesOf(got), "final") {
		t.Errorf("no final in %v", typesOf(got))
	}
}

func typesOf(evs []sseEvent) []string {
	var out []string
	for _, e := range evs {
		if e.typ != "" {
			out = append(out, e.typ)
		}
	}
	return out
}

// Without the stream, a message is 202 {input_id, session_id, source} at
// once; the same Idempotency-Key is the same input, and with other
// content a conflict.
func TestMessageAcceptedAndIdempotent(t *testing.T) {
	f := newFixture(t, options{})
	id := f.create(t, "")
	code, body, _ := f.do(t, "POST", "/v1/sessions/"+id+"/messages", "", map[string]any{"text": "one"}, "Idempotency-Key", "k1")
	if code != http.StatusAccepted {
		t.Fatalf("POST messages: %d %s", code, body)
	}
	var first server.Accepted
	if err := json.Unmarshal(body, &first); err != nil || first.InputID == "" || first.SessionID != id || first.Source != id {
		t.Fatalf("accepted %s (%v)", body, err)
	}
	f.waitStatus(t, id, session.StatusDone)
	code, body, _ = f.do(t, "POST", "/v1/sessions/"+id+"/messages", "", map[string]any{"text": "one"}, "Idempotency-Key", "k1")
	var again server.Accepted
	_ = json.Unmarshal(body, &again)
	if code != http.StatusAccepted || again.InputID != first.InputID || !again.Duplicate || again.RunID == "" {
		t.Fatalf("the same key again: %d %s; want the first input, a duplicate, with the run that answered it", code, body)
	}
	code, body, _ = f.do(t, "POST", "/v1/sessions/"+id+"/messages", "", map[string]any{"text": "two"}, "Idempotency-Key", "k1")
	if code != http.StatusConflict || errCode(body) != "key_conflict" {
		t.Fatalf("the key with other content: %d %s", code, body)
	}
	evs := storedTypes(t, f, id)
	if n := count(evs, "run_started"); n != 1 {
		t.Fatalf("%d turns for one idempotent input: %v", n, evs)
	}
}

func storedTypes(t *testing.T, f *fixture, id string, tenant ...string) []string {
	t.Helper()
	ctx := context.Background()
	if len(tenant) > 0 {
		ctx = session.WithTenant(ctx, tenant[0])
	}
	var out []string
	for ev, err := range f.store.Events(ctx, id, 0) {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, string(ev.Type))
	}
	return out
}

func count(xs []string, x string) int {
	n := 0
	for _, y := range xs {
		if y == x {
			n++
		}
	}
	return n
}

func errCode(body []byte) string {
	var b server.ErrorBody
	_ = json.Unmarshal(body, &b)
	return b.Error.Code
}

// The event stream resumes from Last-Event-ID (or ?after=) with no gap
// and no duplicate — on a new server over the same store too.
func TestEventsResumeAcrossARestart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "agentrt.db")
	st, err := sqlite.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, options{store: st})
	id := f.create(t, "")
	for range f.stream(t, "POST", "/v1/sessions/"+id+"/messages", "", map[string]any{"text": "first turn"}) {
	}
	var all []int64
	for e := range f.stream(t, "GET", "/v1/sessions/"+id+"/events", "", nil) {
		if e.ev != nil && e.ev.Seq > 0 {
			all = append(all, e.ev.Seq)
			if e.typ == "run_finished" {
				break
			}
		}
	}
	last := all[len(all)-1]

	// A client that got up to 4 reconnects.
	var resumed []int64
	for e := range f.stream(t, "GET", "/v1/sessions/"+id+"/events", "", nil, "Last-Event-ID", "4") {
		if e.ev != nil && e.ev.Seq > 0 {
			resumed = append(resumed, e.ev.Seq)
			if e.ev.Seq == last {
				break
			}
		}
	}
	if diff := cmp.Diff(all[4:], resumed); diff != "" {
		t.Fatalf("resumed after 4 (-want +got):\n%s", diff)
	}

	// Another server on the same database: a second turn, and a client
	// resuming from the first turn's last id gets exactly the rest.
	st2, err := sqlite.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	g := newFixture(t, options{store: st2})
	code, body, _ := g.do(t, "POST", "/v1/sessions/"+id+"/messages", "", map[string]any{"text": "second turn"})
	if code != http.StatusAccepted {
		t.Fatalf("%d %s", code, body)
	}
	var after []int64
	for e := range g.stream(t, "GET", "/v1/sessions/"+id+"/events?after="+itoa(last), "", nil) {
		if e.ev != nil && e.ev.Seq > 0 {
			after = append(after, e.ev.Seq)
			if e.typ == "run_finished" {
				break
			}
		}
	}
	if len(after) == 0 || after[0] != last+1 {
		t.Fatalf("after %d on the new server: %v", last, after)
	}
	for i := 1; i < len(after); i++ {
		if after[i] != after[i-1]+1 {
			t.Fatalf("a gap or duplicate: %v", after)
		}
	}
}

func itoa(n int64) string { return strings.TrimSpace(strings.ReplaceAll(jsonOf(n), `"`, "")) }

func jsonOf(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
