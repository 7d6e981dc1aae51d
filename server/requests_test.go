package server_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/server"
	"github.com/agentrt/agentrt/session"
)

// Bad input gets a clear error in the error shape, with the code and
// status of docs/errors.md, and nothing is stored.
func TestBadRequests(t *testing.T) {
	f := newFixture(t, options{config: func(c *server.Config) { c.Limits.MaxBodyBytes = 4096; c.Limits.MaxJSONDepth = 4 }})
	id := f.create(t, "")
	deep := strings.Repeat(`{"a":`, 6) + "1" + strings.Repeat("}", 6)
	for _, c := range []struct {
		name, method, path, body string
		hdr                      []string
		status                   int
		code, says               string
	}{
		{"not JSON", "POST", "/v1/sessions/" + id + "/messages", `{"text":`, nil, 400, "malformed_request", "ends too soon"},
		{"syntax", "POST", "/v1/sessions/" + id + "/messages", `{"text" "x"}`, nil, 400, "malformed_request", "at byte"},
		{"unknown field", "POST", "/v1/sessions/" + id + "/messages", `{"txt":"x"}`, nil, 400, "malformed_request", `unknown field \"txt\"`},
		{"wrong type", "POST", "/v1/sessions/" + id + "/messages", `{"text":5}`, nil, 400, "malformed_request", "field text"},
		{"two values", "POST", "/v1/sessions/" + id + "/messages", `{"text":"a"}{"text":"b"}`, nil, 400, "malformed_request", "more than one"},
		{"too deep", "POST", "/v1/sessions/" + id + "/messages", `{"text":"a","metadata":` + deep + `}`, nil, 400, "malformed_request", "nests"},
		{"too large", "POST", "/v1/sessions/" + id + "/messages", `{"text":"` + strings.Repeat("x", 5000) + `"}`, nil, 413, "body_too_large", "4096"},
		{"no body", "POST", "/v1/sessions/" + id + "/messages", "", nil, 400, "malformed_request", "needs a JSON body"},
		{"empty input", "POST", "/v1/sessions/" + id + "/messages", `{"text":""}`, nil, 400, "empty_input", ""},
		{"bad part", "POST", "/v1/sessions/" + id + "/messages", `{"parts":[{"type":"image"}]}`, nil, 400, "", ""},
		{"unknown session", "POST", "/v1/sessions/nope/messages", `{"text":"x"}`, nil, 404, "not_found", "nope"},
		{"unknown session events", "GET", "/v1/sessions/nope/events", "", nil, 404, "not_found", ""},
		{"unknown session stream", "GET", "/v1/sessions/nope/events", "", []string{"Accept", "text/event-stream"}, 404, "not_found", ""},
		{"bad after", "GET", "/v1/sessions/" + id + "/events?after=x", "", nil, 400, "malformed_request", "after"},
		{"bad Last-Event-ID", "GET", "/v1/sessions/" + id + "/events", "", []string{"Last-Event-ID", "-3"}, 400, "malformed_request", "Last-Event-ID"},
		{"bad limit", "GET", "/v1/sessions?limit=0", "", nil, 400, "malformed_request", "limit"},
		{"bad status", "GET", "/v1/sessions?status=asleep", "", nil, 400, "malformed_request", "status"},
		{"unknown agent", "POST", "/v1/sessions", `{"agent":"nobody"}`, nil, 404, "unknown_agent", ""},
		{"bad session id", "POST", "/v1/sessions", `{"id":"a b"}`, nil, 400, "bad_session_id", ""},
		{"hidden session id", "POST", "/v1/sessions", `{"id":"_claim.x"}`, nil, 400, "bad_session_id", ""},
		{"session exists", "POST", "/v1/sessions", `{"id":"` + id + `"}`, nil, 409, "session_exists", ""},
		{"unknown request", "POST", "/v1/sessions/" + id + "/requests/req_nope", `{"decision":"approve"}`, nil, 404, "unknown_request", ""},
		{"fork past the log", "POST", "/v1/sessions/" + id + "/fork", `{"at_seq":99}`, nil, 400, "bad_seq", ""},
		{"nothing to resume", "POST", "/v1/sessions/" + id + "/resume", ``, nil, 409, "nothing_to_resume", ""},
		{"resume with a body of fields", "POST", "/v1/sessions/" + id + "/resume", `{"x":1}`, nil, 400, "malformed_request", ""},
		{"method", "PUT", "/v1/sessions/" + id, ``, nil, 405, "method_not_allowed", "GET, DELETE"},
		{"no route", "GET", "/v2/things", ``, nil, 404, "no_route", ""},
	} {
		var body any
		if c.body != "" {
			body = c.body
		}
		code, out, hdr := f.do(t, c.method, c.path, "", body, c.hdr...)
		if code != c.status || (c.code != "" && errCode(out) != c.code) || !strings.Contains(string(out), c.says) {
			t.Errorf("%s: %d %s, want %d %s saying %q", c.name, code, out, c.status, c.code, c.says)
		}
		if !strings.HasPrefix(hdr.Get("Content-Type"), "application/json") {
			t.Errorf("%s: Content-Type %q", c.name, hdr.Get("Content-Type"))
		}
		var eb server.ErrorBody
		if err := json.Unmarshal(out, &eb); err != nil || eb.Error.Code == "" || eb.Error.Message == "" {
			t.Errorf("%s: %s is not {\"error\":{\"code\",\"message\"}}", c.name, out)
		}
	}
	if evs := storedTypes(t, f, id); len(evs) != 0 {
		t.Errorf("bad requests stored events: %v", evs)
	}
}

// An approval over HTTP continues the run once, and records the key's
// principal as who decided.
func TestResolveOverHTTP(t *testing.T) {
	f := newFixture(t, options{keys: []server.Key{{Key: "k", Tenant: "acme", Principal: "ana@acme"}}})
	id := f.create(t, "k")
	f.do(t, "POST", "/v1/sessions/"+id+"/messages", "k", map[string]any{"text": `call deploy {"env":"prod"}`})
	f.waitStatus(t, id, session.StatusWaiting, "acme")
	code, body, _ := f.do(t, "GET", "/v1/sessions/"+id, "k", nil)
	var info server.SessionInfo
	if err := json.Unmarshal(body, &info); err != nil || code != 200 || info.Status != session.StatusWaiting || len(info.Requests) != 1 {
		t.Fatalf("the waiting session: %d %s", code, body)
	}
	rid := info.Requests[0].ID
	if info.Requests[0].Kind != session.RequestApproval {
		t.Fatalf("request %+v", info.Requests[0])
	}
	code, body, _ = f.do(t, "POST", "/v1/sessions/"+id+"/requests/"+rid, "k", map[string]any{"decision": "approve", "reason": "looks fine", "by": "mallory"})
	if code != http.StatusBadRequest {
		t.Fatalf("a body naming who decided: %d %s; want it refused (the key says who)", code, body)
	}
	code, body, _ = f.do(t, "POST", "/v1/sessions/"+id+"/requests/"+rid, "k", map[string]any{"decision": "approve", "reason": "looks fine"})
	var res server.ResolveResponse
	if err := json.Unmarshal(body, &res); err != nil || code != 200 || res.Pending != 0 || res.RunID == "" {
		t.Fatalf("approve: %d %s", code, body)
	}
	if d, ok := res.Event.Data.(*session.InputResolved); !ok || d.By != "ana@acme" || d.Decision != "approve" {
		t.Fatalf("the recorded decision: %+v", res.Event.Data)
	}
	f.waitStatus(t, id, session.StatusDone, "acme")
	code, body, _ = f.do(t, "POST", "/v1/sessions/"+id+"/requests/"+rid, "k", map[string]any{"decision": "reject"})
	if code != http.StatusConflict || errCode(body) != "already_resolved" {
		t.Errorf("the same request again: %d %s", code, body)
	}
	evs := storedTypes(t, f, id, "acme")
	if n := count(evs, "tool_result"); n != 1 {
		t.Errorf("the approved call ran %d times: %v", n, evs)
	}
}

// Cancel from the API stops a run in a tool call, records who asked, and
// the run ends canceled; a client closing its stream never does.
func TestCancelAndDisconnect(t *testing.T) {
	f := newFixture(t, options{keys: []server.Key{{Key: "k", Tenant: "acme", Principal: "ops"}}})
	id := f.create(t, "k")
	// A client streams the turn and goes away once the tool is called.
	for e := range f.stream(t, "POST", "/v1/sessions/"+id+"/messages", "k", map[string]any{"text": "call gate {}"}) {
		if e.typ == "tool_call" {
			break
		}
	}
	<-f.gate.started
	ctx := session.WithTenant(context.Background(), "acme")
	if s, _ := f.store.GetSession(ctx, id); s.Status != session.StatusRunning {
		t.Fatalf("after the client left: %s, want still running", s.Status)
	}
	code, body, _ := f.do(t, "POST", "/v1/sessions/"+id+"/cancel", "k", map[string]any{"reason": "enough"})
	if code != 200 || !strings.Contains(string(body), `"acted":true`) {
		t.Fatalf("cancel: %d %s", code, body)
	}
	s, _ := f.store.GetSession(ctx, id)
	if s.Status != session.StatusCanceled {
		t.Fatalf("after cancel: %s", s.Status)
	}
	var ctl *session.Control
	for ev, err := range f.store.Events(ctx, id, 0) {
		if err != nil {
			t.Fatal(err)
		}
		if c, ok := ev.Data.(*session.Control); ok {
			ctl = c
		}
	}
	if ctl == nil || ctl.By != "ops" || ctl.Reason != "enough" {
		t.Fatalf("the audited control: %+v", ctl)
	}

	// A second session: the client leaves, the run finishes anyway.
	id2 := f.create(t, "k")
	for e := range f.stream(t, "POST", "/v1/sessions/"+id2+"/messages", "k", map[string]any{"text": "call gate {}"}) {
		if e.typ == "tool_call" {
			break
		}
	}
	<-f.gate.started
	close(f.gate.release)
	f.waitStatus(t, id2, session.StatusDone, "acme")
}
