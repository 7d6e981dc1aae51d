package server_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"github.com/agentrt/agentrt/telemetry"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"iter"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/gateway"
	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/server"
	"github.com/agentrt/agentrt/session"
	"github.com/agentrt/agentrt/session/memstore"
	"github.com/agentrt/agentrt/tool"
)

// TestOpenAPIRoutes holds the document to the server's routes: the same
// endpoints (an endpoint added to the server, or mounted by an adapter,
// fails here until it is documented), public exactly where the server
// takes no key, and the responses its middleware gives them.
func TestOpenAPIRoutes(t *testing.T) {
	doc := loadDoc(t)
	e := newAPIEnv(t)

	var routes, documented []string
	byRoute := map[string]server.Route{}
	for _, rt := range e.srv.Routes() {
		k := rt.Method + " " + openAPIPath(rt.Pattern)
		routes = append(routes, k)
		byRoute[k] = rt
	}
	byOp := map[string]*apiOp{}
	for _, op := range doc.ops {
		documented = append(documented, op.String())
		byOp[op.String()] = op
	}
	slices.Sort(routes)
	slices.Sort(documented)
	if diff := cmp.Diff(routes, documented); diff != "" {
		t.Errorf("the server's routes (-) and the document's operations (+) differ:\n%s", diff)
	}

	for k, rt := range byRoute {
		op := byOp[k]
		if op == nil {
			continue
		}
		if public := isPublic(op); public != rt.Public {
			t.Errorf("%s: public in the document is %v, in the server %v", k, public, rt.Public)
		}
		has := func(status int) bool { return doc.response(t, op, status) != nil }
		if !rt.Public {
			// authenticate answers these before the handler runs.
			for _, status := range []int{401, 429, 503} {
				if !has(status) {
					t.Errorf("%s takes an API key but does not document %d", k, status)
				}
			}
		}
		// A route that streams gets no request timeout; every other
		// authenticated one does.
		if want := !rt.Stream && !rt.Public; has(504) != want {
			t.Errorf("%s: documents 504 %v; the server bounds it with a request timeout: %v", k, has(504), want)
		}
		if streams := documentsStream(t, doc, op); streams && !rt.Stream {
			t.Errorf("%s documents a text/event-stream answer, but the route is not a Stream route (its request timeout would cut the stream)", k)
		}
		// Path parameters: those the pattern names, declared and required.
		var want, got []string
		for _, seg := range strings.Split(op.Path, "/") {
			if name, ok := strings.CutPrefix(seg, "{"); ok {
				want = append(want, strings.TrimSuffix(name, "}"))
			}
		}
		for _, p := range op.params {
			if p["in"] == "path" {
				got = append(got, p["name"].(string))
				if p["required"] != true {
					t.Errorf("%s: path parameter %v is not required", k, p["name"])
				}
			}
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s: path parameters (-pattern +document):\n%s", k, diff)
		}
	}
}

// openAPIPath writes a ServeMux pattern's path as an OpenAPI path
// template: {name...} is {name}, and {$} (the exact path) is dropped.
func openAPIPath(pattern string) string {
	pattern = strings.ReplaceAll(pattern, "...}", "}")
	return strings.TrimSuffix(pattern, "{$}")
}

func documentsStream(t *testing.T, doc *apiDoc, op *apiOp) bool {
	for _, r := range obj(op.raw, "responses") {
		if _, ok := obj(doc.deref(t, r), "content")["text/event-stream"]; ok {
			return true
		}
	}
	return false
}

// TestOpenAPIDocument checks the document holds together: references
// resolve, every schema compiles, operation ids are unique, and every
// error response lists the codes it carries, each a code of the catalog
// (docs/errors.md) whose HTTP status is the response's.
func TestOpenAPIDocument(t *testing.T) {
	doc := loadDoc(t)
	if v := doc.root["openapi"]; v != "3.1.0" {
		t.Errorf("openapi is %v, want 3.1.0", v)
	}
	var walk func(path string, v any)
	walk = func(path string, v any) {
		switch x := v.(type) {
		case map[string]any:
			if ref, ok := x["$ref"].(string); ok {
				if _, err := pointer(doc.root, ref); err != nil {
					t.Errorf("%s: %v", path, err)
				}
			}
			for k, e := range x {
				walk(path+"/"+k, e)
			}
		case []any:
			for i, e := range x {
				walk(path+"/"+strconv.Itoa(i), e)
			}
		}
	}
	walk("#", doc.root)

	for _, name := range sortedKeys(doc.defs) {
		if _, err := doc.compile(map[string]any{"$ref": "#/components/schemas/" + name}); err != nil {
			t.Errorf("schema %s: %v", name, err)
		}
	}

	var catalog []string
	for _, c := range agentrt.Codes() {
		catalog = append(catalog, c.Code)
	}
	var enum []string
	for _, c := range obj(obj(obj(doc.defs, "ErrorDetail"), "properties"), "code")["enum"].([]any) {
		enum = append(enum, c.(string))
	}
	slices.Sort(catalog)
	if diff := cmp.Diff(catalog, enum); diff != "" {
		t.Errorf("ErrorDetail.code's enum (+) is not the catalog's codes (-):\n%s", diff)
	}

	ids := map[string]string{}
	for _, op := range doc.ops {
		if op.ID == "" {
			t.Errorf("%s has no operationId", op)
		} else if other, dup := ids[op.ID]; dup {
			t.Errorf("%s and %s share operationId %s", op, other, op.ID)
		}
		ids[op.ID] = op.String()
		if s, _ := op.raw["description"].(string); s == "" {
			t.Errorf("%s has no description", op)
		}
		responses := obj(op.raw, "responses")
		if len(responses) == 0 {
			t.Errorf("%s documents no responses", op)
		}
		for status := range responses {
			n, err := strconv.Atoi(status)
			if err != nil {
				t.Errorf("%s: response %q is not a status", op, status)
				continue
			}
			checkErrorResponse(t, doc, op.String()+" "+status, n, doc.response(t, op, n), op.Path == "/readyz")
		}
	}
	for _, name := range sortedKeys(obj(obj(doc.root, "components"), "responses")) {
		r := doc.component(t, name)
		codes := errorCodes(r)
		if len(codes) == 0 {
			t.Errorf("components.responses.%s lists no x-error-codes", name)
			continue
		}
		info, _ := agentrt.LookupCode(codes[0])
		checkErrorResponse(t, doc, "components.responses."+name, info.HTTP, r, false)
	}
}

// checkErrorResponse checks a response of status n: an error one has an
// ErrorBody and lists the catalog's codes of that status.
func checkErrorResponse(t *testing.T, doc *apiDoc, where string, n int, r map[string]any, probe bool) {
	t.Helper()
	if s, _ := r["description"].(string); s == "" {
		t.Errorf("%s has no description", where)
	}
	codes := errorCodes(r)
	if n < 400 || probe {
		if len(codes) > 0 {
			t.Errorf("%s lists error codes but is not an error answer", where)
		}
		return
	}
	if len(codes) == 0 {
		t.Errorf("%s lists no x-error-codes", where)
	}
	for _, c := range codes {
		info, ok := agentrt.LookupCode(c)
		switch {
		case !ok:
			t.Errorf("%s lists %q, which is not a code of the catalog", where, c)
		case info.HTTP != n:
			t.Errorf("%s lists %q, which the server answers with %d", where, c, info.HTTP)
		}
	}
	if ref := obj(obj(r, "content"), "application/json")["schema"]; !cmp.Equal(ref, map[string]any{"$ref": "#/components/schemas/ErrorBody"}) {
		t.Errorf("%s: its body is %v, not an ErrorBody", where, ref)
	}
}

// TestOpenAPICheckerRefuses shows the conformance checker is not
// vacuous: answers of another shape than the document's fail it.
func TestOpenAPICheckerRefuses(t *testing.T) {
	doc := loadDoc(t)
	session := `{"id":"s","agent":"a","status":"idle","turn":0,"usage":{"input_tokens":0,"output_tokens":0},"last_seq":0,"created_at":"2025-01-01T00:00:00Z","updated_at":"2025-01-01T00:00:00Z"}`
	for _, tc := range []struct {
		name, schema, value string
		ok                  bool
	}{
		{"a session", "Session", session, true},
		{"a renamed field", "Session", strings.Replace(session, `"last_seq"`, `"lastSeq"`, 1), false},
		{"an extra field", "Session", strings.Replace(session, `"turn":0`, `"turn":0,"turns":0`, 1), false},
		{"an optional field renamed", "Accepted", `{"input_id":"i","session_id":"s","source":"s","dup":true}`, false},
		{"a status of no session", "Session", strings.Replace(session, `"idle"`, `"asleep"`, 1), false},
		{"an error", "ErrorBody", `{"error":{"code":"busy","message":"m"}}`, true},
		{"an error code outside the catalog", "ErrorBody", `{"error":{"code":"oops","message":"m"}}`, false},
		{"an event frame", "StreamFrame", `{"id":"3","event":"final","data":{"v":1,"seq":3,"session_id":"s","turn":1,"type":"final","time":"2025-01-01T00:00:00Z","data":{}}}`, true},
		{"a session's error event", "StreamFrame", `{"id":"3","event":"error","data":{"v":1,"seq":3,"session_id":"s","turn":1,"type":"error","time":"2025-01-01T00:00:00Z","data":{}}}`, true},
		{"the stream's error frame", "StreamFrame", `{"event":"stream_error","data":{"error":{"code":"store","message":"m"}}}`, true},
		{"an error body as an event", "StreamFrame", `{"event":"error","data":{"error":{"code":"store","message":"m"}}}`, false},
		{"a reconnect frame without its seq", "StreamFrame", `{"event":"reconnect","data":{"reason":"r"}}`, false},
		{"a frame with an id of no seq", "StreamFrame", `{"id":"x","event":"final","data":{"v":1,"session_id":"s","turn":1,"type":"final","time":"2025-01-01T00:00:00Z"}}`, false},
		{"a message with nothing in it", "MessageRequest", `{"source":"s"}`, false},
		{"a message with an unknown field", "MessageRequest", `{"text":"hi","txt":"hi"}`, false},
		{"a message", "MessageRequest", `{"text":"hi","source":"s","parts":[{"type":"data","data":{"a":1}}]}`, true},
	} {
		v, err := decodeJSON([]byte(tc.value))
		if err != nil {
			t.Fatal(err)
		}
		err = doc.validate(map[string]any{"$ref": "#/components/schemas/" + tc.schema}, v)
		if (err == nil) != tc.ok {
			t.Errorf("%s: valid %v, want %v (%v)", tc.name, err == nil, tc.ok, err)
		}
	}
}

// TestOpenAPIConformance drives every endpoint of a real server (a
// Runner over memstore, an agent whose model asks for a tool that needs
// approval, the gateway's loop running) through its successes and its
// errors, and checks each answer against the document: its status is
// documented for the operation, its headers and content type are, its
// JSON body fits the documented schema (closed: no field the document
// does not name), an error's code is one the response lists, and each
// frame of a stream fits StreamFrame. Each request body sent is checked
// against the documented request schema too: the ones the server takes
// fit it, and the ones the test means to be malformed do not.
func TestOpenAPIConformance(t *testing.T) {
	doc := loadDoc(t)
	e := newAPIEnv(t)
	e.run(t)
	c := newAPIClient(t, doc, e.srv.Handler())

	t.Run("any path", func(t *testing.T) {
		c.send(t, call{method: "GET", path: "/v2/nothing"}, 404, "no_route")
		a := c.send(t, call{method: "POST", path: "/healthz"}, 405, "method_not_allowed")
		if got := a.header.Get("Allow"); got != "GET" {
			t.Errorf("Allow: %q, want GET", got)
		}
		c.send(t, call{method: "PUT", path: "/openapi.json", body: "{}"}, 405, "method_not_allowed")
		c.send(t, call{method: "GET", path: "/v1/sessions/x/cancel"}, 405, "method_not_allowed")
		c.send(t, call{method: "HEAD", path: "/healthz"}, 200, "")
	})

	t.Run("operations", func(t *testing.T) {
		c.send(t, call{method: "GET", path: "/healthz", key: noKey}, 200, "")
		c.send(t, call{method: "GET", path: "/metrics", key: noKey}, 200, "")
		c.send(t, call{method: "POST", path: "/metrics", key: noKey}, 405, "method_not_allowed")
		c.send(t, call{method: "GET", path: "/readyz", key: noKey}, 200, "")
		a := c.send(t, call{method: "GET", path: "/openapi.json", key: noKey}, 200, "")
		if !bytes.Equal(a.body, doc.raw) {
			t.Error("GET /openapi.json does not serve server/openapi.json")
		}
	})

	t.Run("keys", func(t *testing.T) {
		a := c.send(t, call{method: "GET", path: "/v1/agents", key: noKey}, 401, "unauthorized")
		if a.header.Get("WWW-Authenticate") == "" {
			t.Error("401 without WWW-Authenticate")
		}
		c.send(t, call{method: "GET", path: "/v1/agents", key: "not-a-key"}, 401, "unauthorized")
		c.send(t, call{method: "GET", path: "/v1/agents", key: slowKey}, 200, "")
		c.send(t, call{method: "GET", path: "/v1/agents", key: slowKey}, 429, "too_many_requests")
	})

	t.Run("every endpoint", func(t *testing.T) {
		for _, op := range doc.ops {
			schema, required := doc.requestSchema(t, op)
			if !isPublic(op) {
				c.send(t, call{method: op.Method, path: examplePath(op), key: noKey, invalid: required}, 401, "unauthorized")
			}
			if schema != nil {
				c.send(t, call{method: op.Method, path: examplePath(op), body: `{"pad":"` + strings.Repeat("x", 70<<10) + `"}`, invalid: true}, 413, "body_too_large")
			}
		}
	})

	t.Run("rate", func(t *testing.T) {
		// The slow key made its one request: every endpoint refuses it.
		for _, op := range doc.ops {
			if !isPublic(op) {
				_, required := doc.requestSchema(t, op)
				a := c.send(t, call{method: op.Method, path: examplePath(op), key: slowKey, invalid: required}, 429, "too_many_requests")
				if n, err := strconv.Atoi(a.header.Get("Retry-After")); err != nil || n < 3600 {
					t.Errorf("Retry-After %q for a key of one request in 30 years", a.header.Get("Retry-After"))
				}
			}
		}
	})

	t.Run("agents", func(t *testing.T) {
		a := c.send(t, call{method: "GET", path: "/v1/agents"}, 200, "")
		want := map[string]any{"agents": []any{map[string]any{"name": "assistant", "default": true, "model": "clerk",
			"tools": []any{map[string]any{"name": "refund", "description": "refunds an order", "parameters": a.path("agents", 0, "tools", 0, "parameters")}}}}}
		if diff := cmp.Diff(want, a.json); diff != "" {
			t.Errorf("GET /v1/agents (-want +got):\n%s", diff)
		}
	})

	t.Run("create and list sessions", func(t *testing.T) {
		a := c.send(t, call{method: "POST", path: "/v1/sessions"}, 201, "")
		if loc, id := a.header.Get("Location"), a.path("id"); loc != fmt.Sprint("/v1/sessions/", id) {
			t.Errorf("Location %q for session %v", loc, id)
		}
		c.send(t, call{method: "POST", path: "/v1/sessions", body: `{"id":"chat","metadata":{"team":"billing"}}`}, 201, "")
		c.send(t, call{method: "POST", path: "/v1/sessions", body: `{"id":"chat"}`}, 409, "session_exists")
		c.send(t, call{method: "POST", path: "/v1/sessions", body: `{"agent":"nobody"}`}, 404, "unknown_agent")
		c.send(t, call{method: "POST", path: "/v1/sessions", body: `{"id":"no spaces"}`, invalid: true}, 400, "bad_session_id")
		c.send(t, call{method: "POST", path: "/v1/sessions", body: `{"id":"_rules.assistant"}`, invalid: true}, 400, "bad_session_id")
		c.send(t, call{method: "POST", path: "/v1/sessions", body: `{"name":"chat"}`, invalid: true}, 400, "malformed_request")
		c.send(t, call{method: "POST", path: "/v1/sessions", body: `{"id":`, invalid: true}, 400, "malformed_request")
		c.send(t, call{method: "POST", path: "/v1/sessions", body: `{"metadata":{"pad":"` + strings.Repeat("x", 70<<10) + `"}}`}, 413, "body_too_large")

		a = c.send(t, call{method: "GET", path: "/v1/sessions?limit=1"}, 200, "")
		if a.path("next") == nil {
			t.Error("a page of one of two sessions has no next")
		}
		c.send(t, call{method: "GET", path: fmt.Sprintf("/v1/sessions?status=idle&agent=assistant&after=%v", a.path("next"))}, 200, "")
		c.send(t, call{method: "GET", path: "/v1/sessions?after=nobody"}, 404, "not_found")
		c.send(t, call{method: "GET", path: "/v1/sessions?limit=0"}, 400, "malformed_request")
		c.send(t, call{method: "GET", path: "/v1/sessions?status=asleep"}, 400, "malformed_request")
	})

	var rid string
	t.Run("input, and a request for a person", func(t *testing.T) {
		idem := map[string]string{"Idempotency-Key": "order-42"}
		a := c.send(t, call{method: "POST", path: "/v1/sessions/chat/messages", header: idem, body: `{"text":"please refund order 42"}`}, 202, "")
		input := a.path("input_id")

		// The run that answers it, to its end (waiting for an approval),
		// through the session's event stream.
		s := c.stream(t, call{method: "GET", path: "/v1/sessions/chat/events"})
		var started bool
		for f := range s.frames(t) {
			typ := dig(f, "data", "type")
			if typ == "run_started" {
				inputs, _ := dig(f, "data", "data", "inputs").([]any)
				started = slices.Contains(inputs, input)
			}
			if typ == "run_finished" {
				if st := dig(f, "data", "data", "status"); st != "waiting" {
					t.Fatalf("the run ended %v, want waiting", st)
				}
				break
			}
		}
		s.close()
		if !started {
			t.Errorf("no run_started names input %v", input)
		}

		a = c.send(t, call{method: "POST", path: "/v1/sessions/chat/messages", header: idem, body: `{"text":"please refund order 42"}`}, 202, "")
		if a.path("duplicate") != true || a.path("input_id") != input || a.path("run_id") == nil {
			t.Errorf("a repeated Idempotency-Key: %s", a.body)
		}
		c.send(t, call{method: "POST", path: "/v1/sessions/chat/messages", header: idem, body: `{"text":"refund order 43"}`}, 409, "key_conflict")
		c.send(t, call{method: "POST", path: "/v1/sessions/chat/messages", header: map[string]string{"Idempotency-Key": strings.Repeat("k", 257)},
			body: `{"text":"refund order 44"}`}, 400, "bad_idempotency_key")
		c.send(t, call{method: "POST", path: "/v1/sessions/chat/messages", body: `{"text":""}`, invalid: true}, 400, "empty_input")
		c.send(t, call{method: "POST", path: "/v1/sessions/chat/messages", body: `{"text":"x","parts":[{"type":"image"}]}`, invalid: true}, 400, "bad_part")
		c.send(t, call{method: "POST", path: "/v1/sessions/chat/messages", body: `{"text":"hi","source":" "}`}, 400, "unknown_source")
		c.send(t, call{method: "POST", path: "/v1/sessions/chat/messages", invalid: true}, 400, "malformed_request")
		c.send(t, call{method: "POST", path: "/v1/sessions/chat/messages", body: `{"text":"hi","from":"me"}`, invalid: true}, 400, "malformed_request")
		c.send(t, call{method: "POST", path: "/v1/sessions/chat/messages", body: `{"text":"` + strings.Repeat("x", 2<<10) + `"}`}, 413, "input_too_large")
		c.send(t, call{method: "POST", path: "/v1/sessions/chat/messages", body: `{"text":"` + strings.Repeat("x", 70<<10) + `"}`}, 413, "body_too_large")
		c.send(t, call{method: "POST", path: "/v1/sessions/nobody/messages", body: `{"text":"hi"}`}, 404, "not_found")

		a = c.send(t, call{method: "GET", path: "/v1/sessions/chat"}, 200, "")
		if a.path("status") != "waiting" || a.path("requests", 0, "kind") != "approval" {
			t.Fatalf("the session waiting for an approval: %s", a.body)
		}
		rid = a.path("requests", 0, "id").(string)
		c.send(t, call{method: "GET", path: "/v1/sessions/nobody"}, 404, "not_found")
		c.send(t, call{method: "POST", path: "/v1/sessions/chat/resume"}, 409, "waiting")
		// The person's inbox lists it.
		a = c.send(t, call{method: "GET", path: "/v1/requests?status=pending&kind=approval&limit=10"}, 200, "")
		if a.path("requests", 0, "session_id") != "chat" || a.path("requests", 0, "request", "request_id") != rid {
			t.Errorf("the inbox: %s, want chat's request %s", a.body, rid)
		}
		c.send(t, call{method: "GET", path: "/v1/requests?status=answered"}, 400, "malformed_request")
	})

	t.Run("answer the request", func(t *testing.T) {
		if rid == "" {
			t.Fatal("no request to answer: the subtest before failed to get one")
		}
		path := "/v1/sessions/chat/requests/" + rid
		c.send(t, call{method: "POST", path: "/v1/sessions/chat/requests/nothing", body: `{"decision":"approve"}`}, 404, "unknown_request")
		c.send(t, call{method: "POST", path: "/v1/sessions/nobody/requests/" + rid, body: `{"decision":"approve"}`}, 404, "not_found")
		c.send(t, call{method: "POST", path: path, body: `{"decision":"maybe"}`, invalid: true}, 400, "bad_decision")
		c.send(t, call{method: "POST", path: path, body: `{"decision":"approve","by":"me"}`, invalid: true}, 400, "malformed_request")
		c.send(t, call{method: "POST", path: path, invalid: true}, 400, "malformed_request")
		before := e.lastSeq(t, "chat")
		a := c.send(t, call{method: "POST", path: path, body: `{"decision":"approve","reason":"a good customer"}`}, 200, "")
		if a.path("pending") != 0.0 || a.path("run_id") == nil || a.path("event", "type") != "input_resolved" || a.path("event", "data", "by") != "alice" {
			t.Errorf("the answer: %s", a.body)
		}
		if st := e.waitRun(t, "chat", before); st != session.StatusDone {
			t.Fatalf("the approved run ended %s", st)
		}
		c.send(t, call{method: "POST", path: path, body: `{"decision":"approve"}`}, 409, "already_resolved")
	})

	t.Run("input with its run's stream", func(t *testing.T) {
		s := c.stream(t, call{method: "POST", path: "/v1/sessions/chat/messages", body: `{"text":"hello"}`})
		defer s.close()
		if s.header.Get("Agentrt-Input-Id") == "" {
			t.Error("no Agentrt-Input-Id")
		}
		// The turn's committed events, to its end; its live tokens may be
		// there too (those the stream was in time for).
		var types []string
		for f := range s.frames(t) {
			if typ := dig(f, "data", "type"); typ != "token" {
				types = append(types, fmt.Sprint(typ))
			}
		}
		want := []string{"run_started", "round_started", "model_started", "model_finished", "final", "run_finished"}
		if diff := cmp.Diff(want, types); diff != "" {
			t.Errorf("the stream of the input's run (-want +got):\n%s", diff)
		}
	})

	t.Run("events", func(t *testing.T) {
		a := c.send(t, call{method: "GET", path: "/v1/sessions/chat/events"}, 200, "")
		last := a.path("last_seq").(float64)
		if n := len(a.path("events").([]any)); float64(n) != last {
			t.Errorf("%d events, last_seq %v", n, last)
		}
		a = c.send(t, call{method: "GET", path: "/v1/sessions/chat/events?after=2&limit=3"}, 200, "")
		if a.path("events", 0, "seq") != 3.0 || len(a.path("events").([]any)) != 3 {
			t.Errorf("after=2&limit=3: %s", a.body)
		}
		a = c.send(t, call{method: "GET", path: "/v1/sessions/chat/events?after=1", header: map[string]string{"Last-Event-ID": "4"}}, 200, "")
		if a.path("events", 0, "seq") != 5.0 {
			t.Errorf("Last-Event-ID 4 did not win over after=1: %s", a.body)
		}
		c.send(t, call{method: "GET", path: "/v1/sessions/chat/events", header: map[string]string{"Last-Event-ID": "seven"}}, 400, "malformed_request")
		c.send(t, call{method: "GET", path: "/v1/sessions/chat/events?limit=0"}, 400, "malformed_request")
		c.send(t, call{method: "GET", path: "/v1/sessions/nobody/events"}, 404, "not_found")
		c.send(t, call{method: "GET", path: "/v1/sessions/nobody/events", sse: true}, 404, "not_found")

		// What a model call was sent: the chat's first call is event 3.
		a = c.send(t, call{method: "GET", path: "/v1/sessions/chat/events/3/sent"}, 200, "")
		if a.path("seq") != 3.0 || a.path("request", "messages", 0, "role") != "user" {
			t.Errorf("what the first call was sent: %s", a.body)
		}
		c.send(t, call{method: "GET", path: "/v1/sessions/chat/events/x/sent"}, 400, "malformed_request")
		c.send(t, call{method: "GET", path: "/v1/sessions/chat/events/1/sent"}, 404, "not_found")
		c.send(t, call{method: "GET", path: "/v1/sessions/nobody/events/3/sent"}, 404, "not_found")

		c.send(t, call{method: "POST", path: "/v1/sessions", body: `{"id":"unreadable"}`}, 201, "")
		c.send(t, call{method: "GET", path: "/v1/sessions/unreadable/events"}, 503, "store")
		c.send(t, call{method: "GET", path: "/v1/sessions/unreadable/events/3/sent"}, 503, "store")
		// Its stream ends with an error frame.
		s := c.stream(t, call{method: "GET", path: "/v1/sessions/unreadable/events"})
		defer s.close()
		frames := slices.Collect(s.frames(t))
		if len(frames) != 1 || frames[0]["event"] != "stream_error" || frames[0]["id"] != nil || dig(frames[0], "data", "error", "code") != "store" {
			t.Errorf("the stream of a log that cannot be read: %v, want one stream_error frame (store)", frames)
		}
	})

	t.Run("fork and delete", func(t *testing.T) {
		a := c.send(t, call{method: "POST", path: "/v1/sessions/chat/fork", body: `{"at_seq":3,"id":"chat-fork"}`}, 201, "")
		if a.header.Get("Location") != "/v1/sessions/chat-fork" || a.path("metadata", "forked_from") != "chat" || a.path("last_seq") != 3.0 {
			t.Errorf("the fork: %s %s", a.header.Get("Location"), a.body)
		}
		c.send(t, call{method: "POST", path: "/v1/sessions/chat/fork", body: `{"at_seq":3,"id":"chat-fork"}`}, 409, "session_exists")
		c.send(t, call{method: "POST", path: "/v1/sessions/chat/fork", body: `{"at_seq":100000}`}, 400, "bad_seq")
		c.send(t, call{method: "POST", path: "/v1/sessions/chat/fork", body: `{"at_seq":0}`, invalid: true}, 400, "bad_seq")
		c.send(t, call{method: "POST", path: "/v1/sessions/chat/fork", body: `{"at_seq":2,"id":"a fork"}`, invalid: true}, 400, "bad_session_id")
		c.send(t, call{method: "POST", path: "/v1/sessions/chat/fork", body: `{"at":2}`, invalid: true}, 400, "malformed_request")
		c.send(t, call{method: "POST", path: "/v1/sessions/nobody/fork", body: `{"at_seq":1}`}, 404, "not_found")

		c.send(t, call{method: "DELETE", path: "/v1/sessions/chat-fork"}, 204, "")
		c.send(t, call{method: "DELETE", path: "/v1/sessions/chat-fork"}, 404, "not_found")
	})

	t.Run("cancel and resume", func(t *testing.T) {
		e.ask(t, c, "stop", "refund order 7")
		a := c.send(t, call{method: "POST", path: "/v1/sessions/stop/cancel", body: `{"reason":"changed my mind"}`}, 200, "")
		if a.path("acted") != true || a.path("status") != "canceled" || a.path("control", "by") != "alice" || a.path("control", "kind") != "cancel" {
			t.Errorf("cancel: %s", a.body)
		}
		c.send(t, call{method: "POST", path: "/v1/sessions/stop/cancel"}, 409, "not_running")
		c.send(t, call{method: "POST", path: "/v1/sessions/stop/cancel", body: `{"why":"x"}`, invalid: true}, 400, "malformed_request")
		c.send(t, call{method: "POST", path: "/v1/sessions/nobody/cancel"}, 404, "not_found")

		before := e.lastSeq(t, "stop")
		a = c.send(t, call{method: "POST", path: "/v1/sessions/stop/resume", body: `{}`}, 202, "")
		if a.path("session_id") != "stop" || a.path("run_id") == "" {
			t.Errorf("resume: %s", a.body)
		}
		// The canceled call was withdrawn: the model answers its result.
		if st := e.waitRun(t, "stop", before); st != session.StatusDone {
			t.Fatalf("the resumed run ended %s, want done", st)
		}
		c.send(t, call{method: "POST", path: "/v1/sessions/stop/resume"}, 409, "nothing_to_resume")
		c.send(t, call{method: "POST", path: "/v1/sessions/stop/resume", body: `{"now":true}`, invalid: true}, 400, "malformed_request")
		c.send(t, call{method: "POST", path: "/v1/sessions/nobody/resume"}, 404, "not_found")
	})

	t.Run("interrupt", func(t *testing.T) {
		e.ask(t, c, "pause", "refund order 9")
		a := c.send(t, call{method: "POST", path: "/v1/sessions/pause/interrupt", body: `{}`}, 200, "")
		if a.path("acted") != true || a.path("status") != "interrupted" || a.path("control", "kind") != "interrupt" {
			t.Errorf("interrupt: %s", a.body)
		}
		c.send(t, call{method: "POST", path: "/v1/sessions/pause/interrupt"}, 409, "not_running")
		c.send(t, call{method: "POST", path: "/v1/sessions/pause/interrupt", body: `[]`, invalid: true}, 400, "malformed_request")
		c.send(t, call{method: "POST", path: "/v1/sessions/nobody/interrupt"}, 404, "not_found")
	})

	t.Run("turn-start hooks", func(t *testing.T) {
		e.ask(t, c, "gate", "refund order 12")
		a := c.send(t, call{method: "GET", path: "/v1/sessions/gate"}, 200, "")
		e.gate.Store(gateRefuse)
		c.send(t, call{method: "POST", path: fmt.Sprint("/v1/sessions/gate/requests/", a.path("requests", 0, "id")), body: `{"decision":"reject"}`}, 422, "hook_blocked")
		c.send(t, call{method: "POST", path: "/v1/sessions/gate/resume"}, 422, "hook_blocked")
		e.gate.Store(gatePanic)
		c.send(t, call{method: "POST", path: "/v1/sessions/gate/resume"}, 500, "hook_panic")
		e.gate.Store(gateOpen)
		before := e.lastSeq(t, "gate")
		c.send(t, call{method: "POST", path: "/v1/sessions/gate/resume"}, 202, "")
		if st := e.waitRun(t, "gate", before); st != session.StatusDone {
			t.Fatalf("the resumed run ended %s", st)
		}
	})

	t.Run("standing decisions", func(t *testing.T) {
		e.ask(t, c, "rules", "refund order 11")
		a := c.send(t, call{method: "GET", path: "/v1/sessions/rules"}, 200, "")
		before := e.lastSeq(t, "rules")
		c.send(t, call{method: "POST", path: fmt.Sprint("/v1/sessions/rules/requests/", a.path("requests", 0, "id")),
			body: `{"decision":"approve","always":{"scope":"agent"}}`}, 200, "")
		if st := e.waitRun(t, "rules", before); st != session.StatusDone {
			t.Fatalf("the approved run ended %s", st)
		}
		// The agent's rule log is the runtime's own.
		c.send(t, call{method: "DELETE", path: "/v1/sessions/_rules.assistant"}, 403, "protected")
		c.send(t, call{method: "POST", path: "/v1/sessions/_rules.assistant/messages", body: `{"text":"hi"}`}, 400, "bad_session_id")
	})

	t.Run("a running run", func(t *testing.T) {
		c.send(t, call{method: "POST", path: "/v1/sessions", body: `{"id":"hang"}`}, 201, "")
		c.send(t, call{method: "POST", path: "/v1/sessions/hang/messages", body: `{"text":"hang on"}`}, 202, "")
		<-e.clerk.hanging // the run is in its model call
		c.send(t, call{method: "DELETE", path: "/v1/sessions/hang"}, 409, "busy")
		c.send(t, call{method: "POST", path: "/v1/sessions/hang/messages", body: `{"text":"and more"}`}, 409, "input_rejected")
		a := c.send(t, call{method: "POST", path: "/v1/sessions/hang/cancel"}, 200, "")
		if a.path("acted") != true || a.path("status") != "canceled" {
			t.Errorf("cancel of a running run: %s", a.body)
		}
		c.send(t, call{method: "DELETE", path: "/v1/sessions/hang"}, 204, "")
	})

	t.Run("request timeout", func(t *testing.T) {
		// Another server over the same runner, whose store never answers
		// for session "slow": only the request's timeout ends the wait.
		short, err := server.New(server.Config{Runner: e.r, Gateway: e.g, Keys: e.keys, Log: slog.New(slog.DiscardHandler),
			Limits: server.Limits{RequestTimeout: 20 * time.Millisecond}})
		if err != nil {
			t.Fatal(err)
		}
		sc := c.of(t, short.Handler())
		for _, op := range doc.ops {
			if strings.Contains(op.Path, "{id}") && doc.response(t, op, 504) != nil {
				sc.send(t, call{method: op.Method, path: strings.Replace(examplePath(op), "chat", "slow", 1), body: exampleBodies[op.ID]}, 504, "request_timeout")
			}
		}
	})

	t.Run("websocket", func(t *testing.T) {
		// Not a handshake; a handshake from another site's page; then the
		// upgrade itself (its frames are docs/http-api.md's, tested in
		// ws_test.go).
		c.send(t, call{method: "GET", path: "/v1/ws"}, 400, "malformed_request")
		c.send(t, call{method: "GET", path: "/v1/ws", header: map[string]string{"Connection": "Upgrade", "Upgrade": "websocket",
			"Sec-WebSocket-Version": "13", "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==", "Origin": "https://elsewhere.example"}}, 403, "origin_not_allowed")
		c.upgrade(t, "/v1/ws")
	})

	t.Run("shutdown", func(t *testing.T) {
		last := e.lastSeq(t, "chat")
		s := c.stream(t, call{method: "GET", path: "/v1/sessions/chat/events", header: map[string]string{"Last-Event-ID": strconv.FormatInt(last-1, 10)}})
		defer s.close()
		next, stop := iter.Pull(s.frames(t))
		defer stop()
		if f, ok := next(); !ok || f["id"] != strconv.FormatInt(last, 10) {
			t.Fatalf("resumed after %d: %v", last-1, f)
		}
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		defer cancel()
		if err := e.srv.Shutdown(ctx); err != nil {
			t.Fatal(err)
		}
		f, ok := next()
		if !ok || f["event"] != "reconnect" || dig(f, "data", "last_event_id") != float64(last) {
			t.Errorf("the stream at shutdown: %v", f)
		}
		if f, ok := next(); ok {
			t.Errorf("a frame after reconnect: %v", f)
		}
		for _, op := range doc.ops {
			if !isPublic(op) {
				_, required := doc.requestSchema(t, op)
				c.send(t, call{method: op.Method, path: examplePath(op), invalid: required}, 503, "shutting_down")
			}
		}
		a := c.send(t, call{method: "GET", path: "/readyz", key: noKey}, 503, "")
		if a.path("status") != "unavailable" {
			t.Errorf("readyz when shutting down: %s", a.body)
		}
		c.send(t, call{method: "GET", path: "/healthz", key: noKey}, 200, "")
	})

	c.seen.check(t, doc)
}

// isPublic reports whether the document says op takes no API key.
func isPublic(op *apiOp) bool {
	sec, ok := op.raw["security"].([]any)
	return ok && len(sec) == 0
}

// examplePath is op's path with its parameters filled in.
func examplePath(op *apiOp) string {
	return strings.NewReplacer("{id}", "chat", "{rid}", "r1", "{seq}", "3").Replace(op.Path)
}

// exampleBodies are bodies the operations take, by operationId.
var exampleBodies = map[string]string{
	"postMessage":    `{"text":"hi"}`,
	"resolveRequest": `{"decision":"approve"}`,
	"forkSession":    `{"at_seq":1}`,
}

const (
	mainKey = "key-of-alice"
	slowKey = "key-of-a-slow-client"
	noKey   = "-"
)

// apiEnv is a server over a real runner and gateway.
type apiEnv struct {
	store *faultyStore
	clerk *clerk
	r     *agentrt.Runner
	g     *gateway.Gateway
	keys  []server.Key
	srv   *server.Server
	// gate is what the agent's turn-start hook does for session "gate".
	gate atomic.Int32
}

// What the turn-start hook does for session "gate".
const (
	gateOpen = iota
	gateRefuse
	gatePanic
)

func newAPIEnv(t *testing.T) *apiEnv {
	t.Helper()
	e := &apiEnv{store: &faultyStore{Store: memstore.New()}, clerk: &clerk{hanging: make(chan struct{}, 1)}}
	refund := tool.Must(tool.New("refund", "refunds an order", func(ctx context.Context, in struct {
		Order string `json:"order"`
	}) (string, error) {
		return "refunded order " + in.Order, nil
	}))
	reg, err := tool.NewRegistry(refund)
	if err != nil {
		t.Fatal(err)
	}
	a := &agentrt.Agent{Name: "assistant", Model: e.clerk, Tools: reg}
	a.Approval.Ask = []string{"refund"}
	a.Compaction.Off = true
	a.Hooks.TurnStart(0, func(ctx context.Context, info agentrt.HookInfo, input string) error {
		if info.SessionID != "gate" {
			return nil
		}
		switch e.gate.Load() {
		case gateRefuse:
			return errors.New("the shop is closed")
		case gatePanic:
			panic("the shop is on fire")
		}
		return nil
	})
	if e.r, err = agentrt.NewRunner(agentrt.Config{Store: e.store, Agents: []*agentrt.Agent{a}}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := e.r.Close(ctx); err != nil {
			t.Errorf("close the runner: %v", err)
		}
	})
	// Input to session "hang" while its turn runs is refused at once.
	e.g, err = gateway.New(gateway.Config{Runner: e.r, MaxInputBytes: 1 << 10,
		Sources: map[string]gateway.SourceConfig{"hang": {Policy: gateway.Reject}}})
	if err != nil {
		t.Fatal(err)
	}
	e.keys = []server.Key{
		{Key: mainKey, Tenant: session.DefaultTenant, Principal: "alice"},
		// One request, then none for ages.
		{Key: slowKey, Tenant: session.DefaultTenant, Rate: 1e-9, Burst: 1},
	}
	e.srv, err = server.New(server.Config{Runner: e.r, Gateway: e.g, Keys: e.keys, Log: slog.New(slog.DiscardHandler),
		Limits: server.Limits{MaxBodyBytes: 64 << 10}, Metrics: telemetry.Handler(goMetrics())})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// run runs the gateway's loop until the test ends.
func (e *apiEnv) run(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = e.g.Run(ctx)
	}()
	// Cleanups run last first: the loop stops before the runner closes.
	t.Cleanup(func() {
		cancel()
		<-done
	})
}

func (e *apiEnv) lastSeq(t *testing.T, id string) int64 {
	t.Helper()
	ss, err := e.store.GetSession(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	return ss.LastSeq
}

// waitRun waits for the next run_finished of session id after seq, and
// returns how the run ended.
func (e *apiEnv) waitRun(t *testing.T, id string, after int64) session.Status {
	t.Helper()
	for ev, err := range e.r.Watch(t.Context(), id, after) {
		if err != nil {
			t.Fatal(err)
		}
		if rf, ok := ev.Data.(*session.RunFinished); ok {
			return rf.Status
		}
	}
	t.Fatal("the watch ended")
	return ""
}

// ask creates session id and sends it text, whose run asks for an
// approval, and waits for the run to wait.
func (e *apiEnv) ask(t *testing.T, c *apiClient, id, text string) {
	t.Helper()
	c.send(t, call{method: "POST", path: "/v1/sessions", body: fmt.Sprintf(`{"id":%q}`, id)}, 201, "")
	c.send(t, call{method: "POST", path: "/v1/sessions/" + id + "/messages", body: fmt.Sprintf(`{"text":%q}`, text)}, 202, "")
	if st := e.waitRun(t, id, 0); st != session.StatusWaiting {
		t.Fatalf("session %s: the run ended %s, want waiting", id, st)
	}
}

// clerk is the agent's model: it asks for a refund when the user
// mentions one, answers a tool's result, waits for its call to be
// canceled when the user says "hang", and otherwise answers the text.
type clerk struct {
	hanging chan struct{} // receives when a "hang" call begins
}

func (m *clerk) Name() string { return "clerk" }

func (m *clerk) Stream(ctx context.Context, req *model.Request) iter.Seq2[model.Chunk, error] {
	return func(yield func(model.Chunk, error) bool) {
		last := req.Messages[len(req.Messages)-1]
		var user string
		for _, msg := range slices.Backward(req.Messages) {
			if msg.Role == model.RoleUser {
				user = msg.Text()
				break
			}
		}
		switch {
		case last.Role == model.RoleTool:
			yield(model.Chunk{Text: "done: " + last.Text(), FinishReason: model.FinishStop}, nil)
		case strings.Contains(user, "hang"):
			select {
			case m.hanging <- struct{}{}:
			case <-ctx.Done():
			}
			<-ctx.Done()
			yield(model.Chunk{}, ctx.Err())
		case strings.Contains(user, "refund"):
			yield(model.Chunk{ToolCalls: []model.ToolCallDelta{{ID: fmt.Sprint("call_", len(req.Messages)), Name: "refund",
				Arguments: `{"order":"42"}`}}, FinishReason: model.FinishToolCalls}, nil)
		default:
			yield(model.Chunk{Text: "answer to: " + user, FinishReason: model.FinishStop}, nil)
		}
	}
}

// faultyStore is a memstore whose log of session "unreadable" cannot be
// read, and which never answers for session "slow" (until the caller
// gives up).
type faultyStore struct {
	*memstore.Store
}

var errLogLost = errors.New("the log is on a disk that failed")

func (s *faultyStore) Events(ctx context.Context, id string, after int64) iter.Seq2[*session.Event, error] {
	if id == "unreadable" {
		return func(yield func(*session.Event, error) bool) { yield(nil, errLogLost) }
	}
	return s.Store.Events(ctx, id, after)
}

func (s *faultyStore) Follow(ctx context.Context, id string, after int64) iter.Seq2[*session.Event, error] {
	if id == "unreadable" {
		return func(yield func(*session.Event, error) bool) { yield(nil, errLogLost) }
	}
	return s.Store.Follow(ctx, id, after)
}

func (s *faultyStore) Acquire(ctx context.Context, id, owner string, ttl time.Duration) (session.Lease, error) {
	if id == "slow" {
		<-ctx.Done()
		return session.Lease{}, ctx.Err()
	}
	return s.Store.Acquire(ctx, id, owner, ttl)
}

func (s *faultyStore) GetSession(ctx context.Context, id string) (*session.Session, error) {
	if id == "slow" {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return s.Store.GetSession(ctx, id)
}

// goMetrics is a registry with the Go runtime's metrics.
func goMetrics() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector())
	return reg
}
