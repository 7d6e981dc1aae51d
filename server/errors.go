package server

import (
	"bytes"
	"context"
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"reflect"
	"strings"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/session"
	"github.com/agentrt/agentrt/tool"
)

// ErrorBody is the body of every error answer.
type ErrorBody struct {
	Error ErrorDetail `json:"error"`
}

// ErrorDetail is an error's stable code (docs/errors.md) and a sentence
// for a person.
type ErrorDetail struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// StatusOf is the HTTP status of err and what a client reads of it: its
// stable code and a sentence with none of the store's or Go's words in it
// (those go to the log). The protocol adapters say their errors with it,
// in their own shapes (a tool result, a JSON-RPC error, OpenAI's).
func StatusOf(err error) (int, ErrorDetail) { return statusOf(err) }

// statusOf is the HTTP status and the body of err.
func statusOf(err error) (int, ErrorDetail) {
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return http.StatusGatewayTimeout, ErrorDetail{Code: agentrt.CodeRequestTimeout, Message: "the request took longer than the server allows; what it started goes on"}
	case errors.Is(err, session.ErrNotFound):
		if e := agentrt.AsError(err); e == nil || e.Code == "" {
			return http.StatusNotFound, ErrorDetail{Code: agentrt.CodeNotFound, Message: meaning(agentrt.CodeNotFound)}
		}
	}
	var e *agentrt.Error
	if !errors.As(err, &e) {
		return http.StatusInternalServerError, ErrorDetail{Code: agentrt.CodeInternal, Message: "internal error"}
	}
	code := e.ErrorCode()
	status := http.StatusInternalServerError
	if info, ok := agentrt.LookupCode(code); ok && info.HTTP != 0 {
		status = info.HTTP
	}
	return status, ErrorDetail{Code: code, Message: publicMessage(err)}
}

// publicMessage is what a client reads of err, which holds an
// *agentrt.Error: that error's sentence, the context wrapped around it
// (fmt.Errorf("request %s: %w", …)), and what it wraps in turn when that
// is ours too (another *agentrt.Error, a tool's argument error, a model
// provider's error) — never what a store or a library said underneath
// (sqlite's, pgx's, encoding/json's), which is for the log; nor anything
// under a failure of the server's own (internal, store).
func publicMessage(err error) string {
	var e *agentrt.Error
	if !errors.As(err, &e) {
		return ""
	}
	prefix, _ := strings.CutSuffix(err.Error(), e.Error())
	if prefix == err.Error() {
		prefix = "" // not a plain wrapping: say e alone
	}
	msg := e.Msg
	if e.Err != nil && e.Kind != agentrt.FailInternal && e.Kind != agentrt.FailStore {
		var ie *agentrt.Error
		var ae *tool.ArgumentError
		var me *model.Error
		var lh *session.LeaseHeldError
		var inner string
		switch {
		case errors.As(e.Err, &ie):
			// Another error of ours, unless a failure of the server's,
			// which e says in its own words.
			if ie.Kind != agentrt.FailInternal && ie.Kind != agentrt.FailStore {
				inner = publicMessage(e.Err)
			}
		case errors.As(e.Err, &ae), errors.As(e.Err, &me), errors.As(e.Err, &lh):
			// Sentences for people: what the arguments lack, what the
			// model said, who runs the session and until when.
			inner = e.Err.Error()
		}
		switch {
		case msg == "":
			msg = inner
		case inner != "" && !strings.HasSuffix(msg, inner):
			msg += ": " + inner
		}
	}
	if msg == "" {
		msg = meaning(e.ErrorCode())
	}
	return prefix + strings.TrimSpace(msg)
}

// meaning is the catalog's sentence for code, for an error that has none
// of its own to show.
func meaning(code string) string {
	if info, ok := agentrt.LookupCode(code); ok {
		return info.Meaning
	}
	return code + " failure"
}

// writeError answers err in the error shape (the request's protocol's,
// when an adapter gave its paths one: ShapeErrors), and logs it when it
// is the server's fault.
func writeError(w http.ResponseWriter, r *http.Request, log *slog.Logger, err error) {
	status, d := statusOf(err)
	if status >= 500 {
		log.LogAttrs(r.Context(), slog.LevelError, "request failed", slog.String("method", r.Method),
			slog.String("path", r.URL.Path), slog.Int("status", status), slog.String("code", d.Code), slog.String("error", err.Error()))
	}
	if shape, ok := r.Context().Value(shapeKey{}).(ErrorShape); ok {
		shape(w, status, d)
		return
	}
	writeJSON(w, status, ErrorBody{Error: d})
}

// ErrorShape writes an error answer in a protocol's own shape: status,
// and the code and sentence the server would put in its ErrorBody.
type ErrorShape func(w http.ResponseWriter, status int, d ErrorDetail)

// ShapeErrors makes every error the server answers on path, or on a path
// under it (path + "/…"), take shape instead of ErrorBody: its own
// refusals (no key, a rate, a method the route does not take, no route,
// shutting down) and those adapters write with WriteError. A protocol
// whose clients read only their own error shape (OpenAI's) thus gets it
// on every answer. Call it while setting up, as Mount, before the server
// serves.
func (s *Server) ShapeErrors(path string, shape ErrorShape) {
	s.shapes = append(s.shapes, pathShape{path, shape})
}

type pathShape struct {
	path  string
	shape ErrorShape
}

type shapeKey struct{}

// shaped hands writeError the error shape of the request's path, if one
// was given (ShapeErrors). It wraps everything else, so that every
// refusal on the path takes the shape.
func (s *Server) shaped(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for _, ps := range s.shapes {
			if rest, ok := strings.CutPrefix(r.URL.Path, ps.path); ok && (rest == "" || rest[0] == '/') {
				r = r.WithContext(context.WithValue(r.Context(), shapeKey{}, ps.shape))
				break
			}
		}
		h.ServeHTTP(w, r)
	})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status = http.StatusInternalServerError
		b = []byte(`{"error":{"code":"internal","message":"the answer could not be encoded"}}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}

func badRequest(format string, args ...any) error {
	return &agentrt.Error{Kind: agentrt.FailInput, Code: agentrt.CodeMalformedRequest, Msg: fmt.Sprintf(format, args...)}
}

// decode reads a request's JSON body into v: one object, no unknown
// fields, nested at most maxDepth deep. An empty body leaves v as it is
// when empty is true.
func decode(r *http.Request, v any, maxDepth int, empty bool) error {
	b, err := io.ReadAll(r.Body)
	if err != nil {
		if e := agentrt.AsError(err); e != nil && e.Code == agentrt.CodeBodyTimeout {
			return e
		}
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return &agentrt.Error{Kind: agentrt.FailInput, Code: agentrt.CodeBodyTooLarge,
				Msg: fmt.Sprintf("the request's body is over %d bytes", mbe.Limit)}
		}
		return badRequest("the request's body could not be read: %v", err)
	}
	if len(bytes.TrimSpace(b)) == 0 {
		if empty {
			return nil
		}
		return badRequest("the request needs a JSON body")
	}
	if d := depth(b); d > maxDepth {
		return badRequest("the request's JSON nests %d deep, more than the %d allowed", d, maxDepth)
	}
	_, err = DecodeJSON(b, v, true)
	return err
}

// DecodeJSON decodes b, a request's body, into v, a pointer to a struct.
// b must hold one JSON object: null, a list or a scalar would leave v as
// it was, and pass for an empty request. With strict, a field v does not
// have is refused. The error is an *agentrt.Error (malformed_request)
// that says what is wrong in JSON's words, never Go's (no Go type names,
// no decoder's wording); field names the field at fault when there is
// one ("messages", "metadata.a"), for a protocol whose errors name it.
func DecodeJSON(b []byte, v any, strict bool) (field string, err error) {
	if kind := topKind(b); kind != "" {
		return "", badRequest("the request's body is %s: send a JSON object", kind)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	if strict {
		dec.DisallowUnknownFields()
	}
	if err := dec.Decode(v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			field = jsonField(te.Field)
		}
		return field, badRequest("the request's JSON: %v", jsonError(err))
	}
	if dec.More() {
		return "", badRequest("the request's body holds more than one JSON value")
	}
	return "", nil
}

// topKind names the JSON value b holds when it is not an object ("null",
// "a list", …), and is "" for an object, or for what is not JSON at all
// (which the decoder describes).
func topKind(b []byte) string {
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return ""
	}
	switch c := b[0]; {
	case c == '{':
		return ""
	case c == '[':
		return "a list"
	case c == '"':
		return "a string"
	case c == '-' || c >= '0' && c <= '9':
		return "a number"
	case bytes.Equal(b, []byte("null")):
		return "null"
	case bytes.Equal(b, []byte("true")) || bytes.Equal(b, []byte("false")):
		return "a boolean"
	}
	return ""
}

// jsonError says what is wrong with a body in words a client can act on:
// JSON's, not Go's (a field's type is "a string" or "a list", never
// []session.InputPart).
func jsonError(err error) string {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		return fmt.Sprintf("%v (at byte %d)", se, se.Offset)
	case errors.As(err, &te):
		if f := jsonField(te.Field); f != "" {
			return fmt.Sprintf("field %s: want %s, got a JSON %s", f, jsonKind(te.Type), te.Value)
		}
		return fmt.Sprintf("want %s, got a JSON %s", jsonKind(te.Type), te.Value)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return "it ends too soon"
	}
	msg := strings.TrimPrefix(err.Error(), "json: ")
	if strings.HasPrefix(msg, "unknown field ") {
		return msg
	}
	// A type's own decoding refused the value (a time, an enum): its
	// words may be Go's.
	return "a value is not of the kind its field takes"
}

// jsonField is the path of a field as encoding/json gives it, without the
// Go names of the embedded structs it passes through
// ("MessageRequest.text" is the frame's field text): a segment that
// starts with a capital letter and has more after it is one, as the
// JSON names of the API's fields are lower case.
func jsonField(path string) string {
	segs := strings.Split(path, ".")
	out := segs[:0]
	for i, s := range segs {
		if i < len(segs)-1 && s != "" && s[0] >= 'A' && s[0] <= 'Z' {
			continue
		}
		out = append(out, s)
	}
	return strings.Join(out, ".")
}

// jsonKind names, in JSON's words, the value Go type t decodes from.
func jsonKind(t reflect.Type) string {
	if t == nil {
		return "another kind of value"
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Implements(textUnmarshaler) || reflect.PointerTo(t).Implements(textUnmarshaler) {
		return "a string"
	}
	switch t.Kind() {
	case reflect.Struct, reflect.Map:
		return "an object"
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			return "a string" // base64
		}
		return "a list"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a whole number"
	case reflect.Float32, reflect.Float64:
		return "a number"
	}
	return "another kind of value"
}

var textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()

// depth is how deeply b's JSON nests (arrays and objects), ignoring what
// is inside strings. It does not check b is JSON.
func depth(b []byte) int {
	d, most := 0, 0
	in, esc := false, false
	for _, c := range b {
		switch {
		case in:
			switch {
			case esc:
				esc = false
			case c == '\\':
				esc = true
			case c == '"':
				in = false
			}
		case c == '"':
			in = true
		case c == '{' || c == '[':
			d++
			most = max(most, d)
		case c == '}' || c == ']':
			d--
		}
	}
	return most
}

// limitBody caps a request's body, and refuses a query string that does
// not parse (url.Values would drop the bad parameters silently).
func (s *Server) limitBody(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if _, err := url.ParseQuery(r.URL.RawQuery); err != nil {
			writeError(w, r, s.log, badRequest("the query string: %v", err))
			return
		}
		if r.Body != nil {
			r.Body = http.MaxBytesReader(w, r.Body, s.cfg.Limits.MaxBodyBytes)
		}
		h(w, r)
	}
}

// timeout bounds a request that does not stream.
func (s *Server) timeout(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), s.cfg.Limits.RequestTimeout)
		defer cancel()
		h(w, r.WithContext(ctx))
	}
}

// timeoutUnless bounds a request of a route that may stream when it asks
// for no stream (JSON instead of server-sent events).
func (s *Server) timeoutUnless(streams func(*http.Request) bool, h http.HandlerFunc) http.HandlerFunc {
	bounded := s.timeout(h)
	return func(w http.ResponseWriter, r *http.Request) {
		if streams(r) {
			h(w, r)
			return
		}
		bounded(w, r)
	}
}

// statusWriter remembers the status a handler answered, and who made the
// request once authenticate knows (for logged, which wraps authenticate
// and so cannot read its context).
type statusWriter struct {
	http.ResponseWriter
	status            int
	tenant, principal string
}

// noteCaller records the request's tenant and principal on the
// statusWriter under w, for its log line.
func noteCaller(w http.ResponseWriter, tenant, principal string) {
	for {
		if sw, ok := w.(*statusWriter); ok {
			sw.tenant, sw.principal = tenant, principal
			return
		}
		u, ok := w.(interface{ Unwrap() http.ResponseWriter })
		if !ok {
			return
		}
		w = u.Unwrap()
	}
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection (flushes,
// deadlines, hijacking for WebSocket).
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// logged logs each request once it is answered.
func (s *Server) logged(rt Route, h http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := s.now()
		sw := &statusWriter{ResponseWriter: w}
		h(sw, r)
		level := slog.LevelDebug
		if sw.status >= 500 {
			level = slog.LevelWarn
		}
		if !s.log.Enabled(r.Context(), level) {
			return
		}
		// The key's tenant and principal, as authenticate found them;
		// none for a public route or a request it refused.
		s.log.LogAttrs(r.Context(), level, "request", slog.String("method", r.Method), slog.String("route", rt.Pattern),
			slog.String("path", r.URL.Path), slog.Int("status", sw.status), slog.Duration("took", s.now().Sub(start)),
			slog.String("tenant", sw.tenant), slog.String("principal", sw.principal))
	})
}

// WriteError answers err in the API's error shape (ErrorBody, or the
// shape ShapeErrors gave its path, with the status of its code), as the
// server's own handlers do: for the adapters mounted on it.
func (s *Server) WriteError(w http.ResponseWriter, r *http.Request, err error) {
	writeError(w, r, s.log, err)
}
