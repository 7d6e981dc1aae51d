package server_test

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/session"
)

// A JSON page of a session's log is bounded in bytes as well as in
// events: GET …/events?limit=10000 of a log of large events stops at
// about 1 MiB (its last event may take it over), and the pages that
// follow, each after the last seq of the one before, give the whole log
// with no gap.
func TestEventsPageBytes(t *testing.T) {
	f := newFixture(t, options{})
	id := f.create(t, "")
	const words = 200 << 10
	for i := range 4 {
		text := strconv.Itoa(i) + strings.Repeat("x", words)
		for ev := range f.stream(t, "POST", "/v1/sessions/"+id+"/messages", "", map[string]any{"text": text}) {
			if ev.typ == "run_finished" {
				break
			}
		}
	}
	type page struct {
		Events  []*session.Event `json:"events"`
		LastSeq int64            `json:"last_seq"`
	}
	var got []int64
	after, pages := int64(0), 0
	for {
		code, body, _ := f.do(t, "GET", "/v1/sessions/"+id+"/events?limit=10000&after="+strconv.FormatInt(after, 10), "", nil)
		if code != http.StatusOK {
			t.Fatalf("page after %d: %d %s", after, code, body)
		}
		if len(body) > 1<<20+3*words {
			t.Fatalf("a page of %d bytes: more than 1 MiB and an event", len(body))
		}
		var p page
		if err := json.Unmarshal(body, &p); err != nil {
			t.Fatal(err)
		}
		pages++
		for _, ev := range p.Events {
			got = append(got, ev.Seq)
		}
		if len(p.Events) == 0 || p.Events[len(p.Events)-1].Seq == p.LastSeq {
			break
		}
		after = p.Events[len(p.Events)-1].Seq
	}
	var want []int64
	for ev, err := range f.store.Events(t.Context(), id, 0) {
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, ev.Seq)
	}
	if pages < 2 || len(got) != len(want) {
		t.Fatalf("%d pages gave %d events, want the log's %d in more than one page", pages, len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("the pages' seqs %v, want %v", got, want)
		}
	}
}
