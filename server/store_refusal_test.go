package server_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/session"
	"github.com/agentrt/agentrt/session/memstore"
	"github.com/agentrt/agentrt/session/storetest"
)

// The store refuses writes while a turn calls a tool (a disk that fills
// up): the turn's stream ends with a stream_error saying the run stopped
// without storing its end (not heartbeats for ever), the server is not
// ready while the store refuses writes, and once it accepts them the run
// is resumed by this server to its end, the tool not run again; the
// server is ready again.
func TestStoreRefusalEndsTheStreamAndTheRunGoesOn(t *testing.T) {
	var faults storetest.Faults
	mem := memstore.New()
	f := newFixture(t, options{store: storetest.Faulty(mem, &faults)})
	id := f.create(t, "")
	if code, body, _ := f.do(t, "GET", "/readyz", "", nil); code != http.StatusOK {
		t.Fatalf("readyz before: %d %s", code, body)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a stream that never ends fails
	defer cancel()
	var evs []sseEvent
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		for e := range f.streamCtx(t, ctx, "POST", "/v1/sessions/"+id+"/messages", "", map[string]any{"text": "call gate {}"}) {
			evs = append(evs, e)
		}
	}()
	select {
	case <-f.gate.started:
	case <-ctx.Done():
		t.Fatal("the tool was never called")
	}
	faults.FailCommit(1, true)
	faults.FailLease(1, true)
	close(f.gate.release)
	<-ended
	if ctx.Err() != nil {
		t.Fatalf("the turn's stream did not end when its run stopped: %v", evs)
	}
	last := evs[len(evs)-1]
	var body struct {
		Error struct{ Code, Message string }
	}
	if last.typ != "stream_error" || json.Unmarshal(last.data, &body) != nil || body.Error.Code != agentrt.CodeEndNotStored ||
		!strings.Contains(body.Error.Message, "resumes it once the store accepts writes") {
		t.Fatalf("the turn's stream ended with %s %s, want a stream_error end_not_stored saying what happens next", last.typ, last.data)
	}
	if strings.Contains(string(last.data), "injected") {
		t.Errorf("the stream's error carries the store's own wording: %s", last.data)
	}
	code, rbody, _ := f.do(t, "GET", "/readyz", "", nil)
	if code != http.StatusServiceUnavailable || !strings.Contains(string(rbody), "refused writes") {
		t.Errorf("readyz while the store refuses writes: %d %s", code, rbody)
	}

	// The store accepts writes again: the run goes on here.
	stored := seqs(t, evs)
	after := stored[len(stored)-1]
	faults.FailCommit(0, false)
	faults.FailLease(0, false)
	var resumed []sseEvent
	for e := range f.streamCtx(t, ctx, "GET", "/v1/sessions/"+id+"/events", "", nil, "Last-Event-ID", itoa(after)) {
		if e.ev == nil {
			continue
		}
		resumed = append(resumed, e)
		if e.typ == string(session.TypeRunFinished) {
			break
		}
	}
	if len(resumed) == 0 || resumed[len(resumed)-1].typ != string(session.TypeRunFinished) {
		t.Fatalf("the run was not resumed once the store accepted writes: %v", resumed)
	}
	if rs, ok := resumed[0].ev.Data.(*session.RunResumed); !ok || rs.Reason != agentrt.ResumeStore {
		t.Errorf("the run went on with %s, want run_resumed with reason store", resumed[0].data)
	}
	if rf := resumed[len(resumed)-1].ev.Data.(*session.RunFinished); rf.Status != session.StatusDone {
		t.Errorf("the resumed run ended %s", rf.Status)
	}
	if n := len(f.gate.started); n != 0 {
		t.Errorf("the tool ran %d more times, want none: its result was in hand", n)
	}
	if code, body, _ := f.do(t, "GET", "/readyz", "", nil); code != http.StatusOK {
		t.Errorf("readyz after the store accepted writes: %d %s", code, body)
	}
}
