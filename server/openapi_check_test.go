package server_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"maps"
	"mime"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
)

// apiDoc is server/openapi.json, read for the tests: its operations, and
// its schemas compiled for validation.
//
// The schemas are validated as the document writes them, with two
// changes. References to #/components/schemas/X point at #/$defs/X of a
// schema that carries the components as $defs, which is how a JSON
// Schema validator resolves them. And an object schema with properties
// that says nothing of others is made closed (unevaluatedProperties:
// false): the document leaves answers open, so that fields can be added
// without breaking clients, but the server must not send a field the
// document does not name — a renamed field fails here. A schema that is
// directly one branch of allOf, anyOf or oneOf is left as written, since
// closing it would judge the others' properties.
type apiDoc struct {
	raw  []byte
	root map[string]any
	defs map[string]any // components.schemas, rewritten as above
	ops  []*apiOp

	mu       sync.Mutex
	compiled map[string]*jsonschema.Resolved // by the schema's JSON
}

// apiOp is one operation of the document.
type apiOp struct {
	Method string // upper case
	Path   string // as the document writes it: /v1/sessions/{id}
	ID     string
	raw    map[string]any
	params []map[string]any // the path item's and the operation's, references resolved
	re     *regexp.Regexp   // matches the paths the template stands for
}

func (op *apiOp) String() string { return op.Method + " " + op.Path }

// apiMethods are the methods a path item may hold.
var apiMethods = []string{"get", "put", "post", "delete", "options", "head", "patch", "trace"}

func loadDoc(t testing.TB) *apiDoc {
	t.Helper()
	raw, err := os.ReadFile("openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	d := &apiDoc{raw: raw, compiled: map[string]*jsonschema.Resolved{}}
	if err := json.Unmarshal(raw, &d.root); err != nil {
		t.Fatalf("openapi.json: %v", err)
	}
	comps, _ := d.root["components"].(map[string]any)
	schemas, _ := comps["schemas"].(map[string]any)
	d.defs = rewriteRefs(schemas).(map[string]any)
	for name, s := range d.defs {
		d.defs[name] = closeSchemas(s, false)
	}
	for _, path := range sortedKeys(obj(d.root, "paths")) {
		item := obj(obj(d.root, "paths"), path)
		for _, m := range apiMethods {
			o, ok := item[m].(map[string]any)
			if !ok {
				continue
			}
			op := &apiOp{Method: strings.ToUpper(m), Path: path, raw: o, re: templateRE(path)}
			op.ID, _ = o["operationId"].(string)
			for _, src := range []map[string]any{item, o} {
				ps, _ := src["parameters"].([]any)
				for _, p := range ps {
					op.params = append(op.params, d.deref(t, p))
				}
			}
			d.ops = append(d.ops, op)
		}
	}
	return d
}

// templateRE matches the paths of an OpenAPI path template: each {name}
// is one non-empty segment.
func templateRE(path string) *regexp.Regexp {
	var b strings.Builder
	b.WriteString("^")
	for i, seg := range strings.Split(path, "/") {
		if i > 0 {
			b.WriteString("/")
		}
		if strings.HasPrefix(seg, "{") && strings.HasSuffix(seg, "}") {
			b.WriteString("[^/]+")
		} else {
			b.WriteString(regexp.QuoteMeta(seg))
		}
	}
	b.WriteString("$")
	return regexp.MustCompile(b.String())
}

// find returns the operation of method on a request path, and whether
// the document has the path at all (for any method).
func (d *apiDoc) find(method, path string) (op *apiOp, pathKnown bool) {
	for _, o := range d.ops {
		if !o.re.MatchString(path) {
			continue
		}
		pathKnown = true
		if o.Method == method || method == "HEAD" && o.Method == "GET" {
			return o, true
		}
	}
	return nil, pathKnown
}

// deref follows a $ref within the document (any kind of component).
func (d *apiDoc) deref(t testing.TB, v any) map[string]any {
	t.Helper()
	m, _ := v.(map[string]any)
	for range 8 {
		ref, ok := m["$ref"].(string)
		if !ok {
			return m
		}
		target, err := pointer(d.root, ref)
		if err != nil {
			t.Fatalf("openapi.json: %v", err)
		}
		m, _ = target.(map[string]any)
	}
	t.Fatalf("openapi.json: references nest too deep at %v", v)
	return nil
}

// pointer resolves a local reference ("#/components/…") in root.
func pointer(root any, ref string) (any, error) {
	frag, ok := strings.CutPrefix(ref, "#")
	if !ok {
		return nil, fmt.Errorf("reference %q is not local", ref)
	}
	cur := root
	for _, tok := range strings.Split(strings.TrimPrefix(frag, "/"), "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch c := cur.(type) {
		case map[string]any:
			v, ok := c[tok]
			if !ok {
				return nil, fmt.Errorf("reference %q: no %q", ref, tok)
			}
			cur = v
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(c) {
				return nil, fmt.Errorf("reference %q: no item %q", ref, tok)
			}
			cur = c[i]
		default:
			return nil, fmt.Errorf("reference %q: %q is inside a scalar", ref, tok)
		}
	}
	return cur, nil
}

// response returns the operation's response for status (references
// resolved), or nil when the document does not list the status.
func (d *apiDoc) response(t testing.TB, op *apiOp, status int) map[string]any {
	t.Helper()
	r, ok := obj(op.raw, "responses")[strconv.Itoa(status)]
	if !ok {
		return nil
	}
	return d.deref(t, r)
}

// component returns components.responses[name].
func (d *apiDoc) component(t testing.TB, name string) map[string]any {
	t.Helper()
	r := obj(obj(d.root, "components"), "responses")[name]
	if r == nil {
		t.Fatalf("openapi.json has no components.responses.%s", name)
	}
	return d.deref(t, r)
}

// requestSchema is the JSON schema of the operation's body, and whether
// the document says the body is required; nil when it takes none.
func (d *apiDoc) requestSchema(t testing.TB, op *apiOp) (schema any, required bool) {
	t.Helper()
	rb, ok := op.raw["requestBody"]
	if !ok {
		return nil, false
	}
	b := d.deref(t, rb)
	required, _ = b["required"].(bool)
	return obj(obj(b, "content"), "application/json")["schema"], required
}

// validate checks v (JSON decoded into any) against schema, a schema of
// the document (a $ref to a component, or inline).
func (d *apiDoc) validate(schema, v any) error {
	rs, err := d.compile(schema)
	if err != nil {
		return err
	}
	return rs.Validate(v)
}

func (d *apiDoc) compile(schema any) (*jsonschema.Resolved, error) {
	key, err := json.Marshal(schema)
	if err != nil {
		return nil, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if rs, ok := d.compiled[string(key)]; ok {
		return rs, nil
	}
	root, ok := closeSchemas(rewriteRefs(schema), false).(map[string]any)
	if !ok {
		return nil, fmt.Errorf("schema %s is not an object", key)
	}
	root["$defs"] = d.defs
	b, err := json.Marshal(root)
	if err != nil {
		return nil, err
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("schema %s: %w", key, err)
	}
	rs, err := s.Resolve(nil)
	if err != nil {
		return nil, fmt.Errorf("schema %s: %w", key, err)
	}
	d.compiled[string(key)] = rs
	return rs, nil
}

// rewriteRefs returns a copy of v whose references to
// #/components/schemas/X point at #/$defs/X.
func rewriteRefs(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			if s, ok := e.(string); ok && k == "$ref" {
				out[k] = strings.Replace(s, "#/components/schemas/", "#/$defs/", 1)
				continue
			}
			out[k] = rewriteRefs(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = rewriteRefs(e)
		}
		return out
	}
	return v
}

// closeSchemas closes the object schemas of v as apiDoc's comment says,
// in place; branch says v is directly a branch of allOf, anyOf or oneOf.
// It walks schemas only: the values under properties, $defs, items and
// the other keywords that hold schemas.
func closeSchemas(v any, branch bool) any {
	s, ok := v.(map[string]any)
	if !ok {
		return v
	}
	_, props := s["properties"]
	_, ap := s["additionalProperties"]
	_, up := s["unevaluatedProperties"]
	if props && !ap && !up && !branch {
		s["unevaluatedProperties"] = false
	}
	for _, k := range []string{"properties", "$defs", "patternProperties"} {
		if m, ok := s[k].(map[string]any); ok {
			for name, sub := range m {
				m[name] = closeSchemas(sub, false)
			}
		}
	}
	for _, k := range []string{"items", "additionalProperties", "not", "contains", "if", "then", "else", "unevaluatedProperties", "propertyNames"} {
		if sub, ok := s[k]; ok {
			s[k] = closeSchemas(sub, false)
		}
	}
	for _, k := range []string{"allOf", "anyOf", "oneOf", "prefixItems"} {
		if subs, ok := s[k].([]any); ok {
			for i, sub := range subs {
				subs[i] = closeSchemas(sub, k != "prefixItems")
			}
		}
	}
	return s
}

// errorCodes are the x-error-codes of a response.
func errorCodes(resp map[string]any) []string {
	var out []string
	cs, _ := resp["x-error-codes"].([]any)
	for _, c := range cs {
		s, _ := c.(string)
		out = append(out, s)
	}
	return out
}

// obj returns m[key] as an object, or nil.
func obj(m map[string]any, key string) map[string]any {
	v, _ := m[key].(map[string]any)
	return v
}

func sortedKeys(m map[string]any) []string { return slices.Sorted(maps.Keys(m)) }

// frame is one server-sent event as an SSE parser gives it: the fields
// of StreamFrame, data parsed as JSON.
type frame = map[string]any

// frameReader reads the frames of a text/event-stream body, per the
// HTML standard's parsing rules (comments skipped, "data" lines joined
// with newlines), as the fields StreamFrame describes.
type frameReader struct {
	r *bufio.Reader
}

func newFrameReader(r io.Reader) *frameReader { return &frameReader{r: bufio.NewReader(r)} }

// next returns the next frame, io.EOF at the end of the stream.
func (fr *frameReader) next() (frame, error) {
	f := frame{}
	var data []string
	hasData := false
	for {
		line, err := fr.r.ReadString('\n')
		if err != nil {
			if errors.Is(err, io.EOF) && line == "" && len(f) == 0 && !hasData {
				return nil, io.EOF
			}
			if errors.Is(err, io.EOF) {
				return nil, fmt.Errorf("the stream ends inside a frame (%q)", line)
			}
			return nil, err
		}
		line = strings.TrimSuffix(strings.TrimSuffix(line, "\n"), "\r")
		if line == "" {
			if len(f) == 0 && !hasData {
				continue // a comment's blank line, or a frame of comments only
			}
			if hasData {
				joined := strings.Join(data, "\n")
				var v any
				if err := json.Unmarshal([]byte(joined), &v); err != nil {
					return nil, fmt.Errorf("a frame's data is not JSON: %q", joined)
				}
				f["data"] = v
			}
			return f, nil
		}
		if strings.HasPrefix(line, ":") {
			continue
		}
		name, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch name {
		case "data":
			data, hasData = append(data, value), true
		case "id", "event":
			f[name] = value
		case "retry":
			n, err := strconv.Atoi(value)
			if err != nil {
				return nil, fmt.Errorf("retry %q is not a number", value)
			}
			f[name] = float64(n) // as encoding/json decodes numbers
		default:
			return nil, fmt.Errorf("a frame has a field %q no SSE client knows", name)
		}
	}
}

// decodeJSON decodes b as JSON into any, numbers as float64 as the
// validator expects.
func decodeJSON(b []byte) (any, error) {
	var v any
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, errors.New("more than one JSON value")
	}
	return v, nil
}

// call is a request of the conformance test.
type call struct {
	method string
	path   string // with its query
	body   string // "": none
	header map[string]string
	key    string // the API key: "" mainKey, noKey none
	sse    bool   // ask for a stream (Accept: text/event-stream)
	// invalid says the body is not one the document's request schema
	// takes (the server refuses it, and the schema must too).
	invalid bool
}

// apiClient sends calls to a server and checks each answer against the
// document.
type apiClient struct {
	doc  *apiDoc
	base string
	hc   *http.Client
	seen *coverage
}

func newAPIClient(t *testing.T, doc *apiDoc, h http.Handler) *apiClient {
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	return &apiClient{doc: doc, base: ts.URL, hc: ts.Client(), seen: &coverage{ops: map[string]map[int]bool{}}}
}

// of returns a client of another server, which records in c's coverage.
func (c *apiClient) of(t *testing.T, h http.Handler) *apiClient {
	o := newAPIClient(t, c.doc, h)
	o.seen = c.seen
	return o
}

// answer is a checked answer.
type answer struct {
	status int
	header http.Header
	body   []byte
	json   any
}

// path returns the value at keys of the answer's JSON (see dig).
func (a *answer) path(keys ...any) any { return dig(a.json, keys...) }

// dig returns the value at keys (object keys and array indexes) of v,
// JSON decoded into any; nil if there is none.
func dig(v any, keys ...any) any {
	for _, k := range keys {
		switch k := k.(type) {
		case string:
			m, _ := v.(map[string]any)
			v = m[k]
		case int:
			s, _ := v.([]any)
			if k >= len(s) {
				return nil
			}
			v = s[k]
		}
	}
	return v
}

func (c *apiClient) request(t *testing.T, ctx context.Context, cl call) (*http.Response, *apiOp, bool) {
	t.Helper()
	op, known := c.doc.find(cl.method, urlPathOf(cl.path))
	if op != nil {
		c.checkBody(t, op, cl)
	}
	var body io.Reader
	if cl.body != "" {
		body = strings.NewReader(cl.body)
	}
	req, err := http.NewRequestWithContext(ctx, cl.method, c.base+cl.path, body)
	if err != nil {
		t.Fatal(err)
	}
	if cl.body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	switch cl.key {
	case "":
		req.Header.Set("Authorization", "Bearer "+mainKey)
	case noKey:
	default:
		req.Header.Set("Authorization", "Bearer "+cl.key)
	}
	if cl.sse {
		req.Header.Set("Accept", "text/event-stream")
	}
	for k, v := range cl.header {
		req.Header.Set(k, v)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", cl.method, cl.path, err)
	}
	return resp, op, known
}

// checkBody checks the body of cl against the operation's request
// schema: it fits unless cl is meant to be invalid.
func (c *apiClient) checkBody(t *testing.T, op *apiOp, cl call) {
	t.Helper()
	schema, required := c.doc.requestSchema(t, op)
	var err error
	switch {
	case schema == nil && cl.body != "":
		err = errors.New("the operation takes no body")
	case schema == nil:
		return
	case cl.body == "" && required:
		err = errors.New("the body is required")
	case cl.body == "":
	default:
		var v any
		if v, err = decodeJSON([]byte(cl.body)); err == nil {
			err = c.doc.validate(schema, v)
		}
	}
	if valid := err == nil; valid == cl.invalid {
		t.Errorf("%s %s: body %.80q: valid per the document %v, but the test means it to be valid %v (%v)", cl.method, cl.path, cl.body, valid, !cl.invalid, err)
	}
}

// send sends cl and checks the answer: status want, documented, of the
// documented shape, and with error code code.
func (c *apiClient) send(t *testing.T, cl call, want int, code string) *answer {
	t.Helper()
	resp, op, known := c.request(t, t.Context(), cl)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	a := &answer{status: resp.StatusCode, header: resp.Header, body: b}
	if resp.StatusCode != want {
		t.Fatalf("%s %s: %d %s, want %d", cl.method, cl.path, resp.StatusCode, b, want)
	}
	var r map[string]any
	switch {
	case op != nil:
		c.seen.add(op.String(), want)
		if r = c.doc.response(t, op, want); r == nil {
			t.Errorf("%s %s: %d is not documented for %s", cl.method, cl.path, want, op)
			return a
		}
	case known:
		c.seen.add(urlPathOf(cl.path)+" (another method)", want)
		r = c.doc.component(t, "MethodNotAllowed")
	default:
		r = c.doc.component(t, "NoRoute")
	}
	where := fmt.Sprintf("%s %s → %d", cl.method, cl.path, want)
	c.checkHeaders(t, where, r, resp.Header)
	content := obj(r, "content")
	if cl.method == "HEAD" {
		return a // the GET's headers, no body
	}
	if len(content) == 0 {
		if len(b) != 0 {
			t.Errorf("%s: a body (%.100q) where the document has none", where, b)
		}
		return a
	}
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	media := obj(content, mt)
	if media != nil && mt == "text/plain" {
		if len(b) == 0 {
			t.Errorf("%s: an empty text body", where)
		}
		return a
	}
	if media == nil || mt != "application/json" {
		t.Errorf("%s: Content-Type %q; the document has %v", where, mt, sortedKeys(content))
		return a
	}
	if a.json, err = decodeJSON(b); err != nil {
		t.Errorf("%s: the body is not JSON: %v", where, err)
		return a
	}
	if err := c.doc.validate(media["schema"], a.json); err != nil {
		t.Errorf("%s: the body does not fit the document: %v\n%s", where, err, b)
	}
	if want >= 400 && len(errorCodes(r)) > 0 {
		got, _ := a.path("error", "code").(string)
		if !slices.Contains(errorCodes(r), got) {
			t.Errorf("%s: code %q is not one the response lists (%v)", where, got, errorCodes(r))
		}
		if got != code {
			t.Errorf("%s: code %q, want %q", where, got, code)
		}
	}
	return a
}

// urlPathOf is the path of a request target, without its query.
func urlPathOf(p string) string {
	p, _, _ = strings.Cut(p, "?")
	return p
}

// checkHeaders checks the documented headers of response r: present
// when required, and of their schema.
func (c *apiClient) checkHeaders(t *testing.T, where string, r map[string]any, h http.Header) {
	t.Helper()
	for name, spec := range obj(r, "headers") {
		hs := c.doc.deref(t, spec)
		v := h.Get(name)
		if v == "" {
			if hs["required"] == true {
				t.Errorf("%s: no %s header", where, name)
			}
			continue
		}
		schema := hs["schema"]
		var val any = v
		if obj(hs, "schema")["type"] == "integer" {
			n, err := strconv.Atoi(v)
			if err != nil {
				t.Errorf("%s: %s %q is not an integer", where, name, v)
				continue
			}
			val = float64(n)
		}
		if err := c.doc.validate(schema, val); err != nil {
			t.Errorf("%s: header %s %q: %v", where, name, v, err)
		}
	}
}

// sseStream is a checked text/event-stream answer.
type sseStream struct {
	c      *apiClient
	where  string
	header http.Header
	resp   *http.Response
	cancel context.CancelFunc
	fr     *frameReader
	schema any
}

// stream sends cl asking for a stream, and checks the answer is one the
// document has.
func (c *apiClient) stream(t *testing.T, cl call) *sseStream {
	t.Helper()
	cl.sse = true
	ctx, cancel := context.WithCancel(t.Context())
	resp, op, _ := c.request(t, ctx, cl)
	s := &sseStream{c: c, where: cl.method + " " + cl.path + " (stream)", header: resp.Header, resp: resp, cancel: cancel, fr: newFrameReader(resp.Body)}
	if op == nil || resp.StatusCode != 200 {
		s.close()
		t.Fatalf("%s: %d, want a stream", s.where, resp.StatusCode)
	}
	c.seen.add(op.String(), 200)
	r := c.doc.response(t, op, 200)
	c.checkHeaders(t, s.where, r, resp.Header)
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	media := obj(obj(r, "content"), "text/event-stream")
	if mt != "text/event-stream" || media == nil {
		s.close()
		t.Fatalf("%s: Content-Type %q, and the document has %v", s.where, mt, sortedKeys(obj(r, "content")))
	}
	if s.schema = media["x-itemSchema"]; s.schema == nil {
		t.Fatalf("%s: the document gives no x-itemSchema for its frames", s.where)
	}
	// The first frame tells a browser how long to wait to reconnect.
	f, err := s.fr.next()
	if err != nil || f["retry"] == nil || len(f) != 1 {
		t.Fatalf("%s: first frame %v (%v), want retry", s.where, f, err)
	}
	s.check(t, f)
	return s
}

// frames yields the stream's frames after the first, checked, until it
// ends.
func (s *sseStream) frames(t *testing.T) iter.Seq[frame] {
	return func(yield func(frame) bool) {
		for {
			f, err := s.fr.next()
			if err != nil {
				if !errors.Is(err, io.EOF) {
					t.Errorf("%s: %v", s.where, err)
				}
				return
			}
			s.check(t, f)
			if !yield(f) {
				return
			}
		}
	}
}

// check checks a frame against the document: StreamFrame's schema, and
// an event's frame has its seq as id and its type as event.
func (s *sseStream) check(t *testing.T, f frame) {
	t.Helper()
	if err := s.c.doc.validate(s.schema, f); err != nil {
		t.Errorf("%s: frame %v does not fit the document: %v", s.where, f, err)
		return
	}
	ev, ok := f["data"].(map[string]any)
	if !ok || ev["v"] == nil {
		return // not an event
	}
	if f["event"] != ev["type"] {
		t.Errorf("%s: frame event %v for an event of type %v", s.where, f["event"], ev["type"])
	}
	var want any
	if seq, ok := ev["seq"].(float64); ok {
		want = strconv.FormatInt(int64(seq), 10)
	}
	if f["id"] != want {
		t.Errorf("%s: frame id %v for an event of seq %v", s.where, f["id"], ev["seq"])
	}
}

func (s *sseStream) close() {
	s.cancel()
	s.resp.Body.Close()
}

// coverage records the statuses each operation answered.
type coverage struct {
	mu  sync.Mutex
	ops map[string]map[int]bool
}

func (cv *coverage) add(op string, status int) {
	cv.mu.Lock()
	defer cv.mu.Unlock()
	if cv.ops[op] == nil {
		cv.ops[op] = map[int]bool{}
	}
	cv.ops[op][status] = true
}

// check requires every operation to have answered a success and an
// error (for an operation that answers no error, its path one for
// another method), and logs the documented statuses no call produced.
func (cv *coverage) check(t *testing.T, doc *apiDoc) {
	t.Helper()
	for _, op := range doc.ops {
		got := cv.ops[op.String()]
		ok, failed := false, cv.ops[op.Path+" (another method)"][405]
		var missing []string
		for st := range obj(op.raw, "responses") {
			n, _ := strconv.Atoi(st)
			if got[n] {
				ok = ok || n < 300
				failed = failed || n >= 400
				continue
			}
			missing = append(missing, st)
		}
		if !ok {
			t.Errorf("%s: no call got a success", op)
		}
		if !failed {
			t.Errorf("%s: no call got an error", op)
		}
		slices.Sort(missing)
		if len(missing) > 0 {
			t.Logf("%s: not exercised: %s", op, strings.Join(missing, ", "))
		}
	}
}
