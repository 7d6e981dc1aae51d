package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/session"
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

// statusOf is the HTTP status and the body of err.
func statusOf(err error) (int, ErrorDetail) {
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return http.StatusGatewayTimeout, ErrorDetail{Code: agentrt.CodeRequestTimeout, Message: "the request took longer than the server allows; what it started goes on"}
	case errors.Is(err, session.ErrNotFound):
		if e := agentrt.AsError(err); e == nil || e.Code == "" {
			return http.StatusNotFound, ErrorDetail{Code: agentrt.CodeNotFound, Message: err.Error()}
		}
	}
	e := agentrt.AsError(err)
	if e == nil {
		return http.StatusInternalServerError, ErrorDetail{Code: agentrt.CodeInternal, Message: "internal error"}
	}
	code := e.ErrorCode()
	info, ok := agentrt.LookupCode(code)
	if !ok || info.HTTP == 0 {
		return http.StatusInternalServerError, ErrorDetail{Code: code, Message: message(e)}
	}
	return info.HTTP, ErrorDetail{Code: code, Message: message(e)}
}

// message is what the client reads of e: its own sentence, without the
// store's wrapped detail when e is a failure of the server's (which goes
// to the log).
func message(e *agentrt.Error) string {
	if e.Kind == agentrt.FailInternal || e.Kind == agentrt.FailStore {
		if e.Msg != "" {
			return e.Msg
		}
		return string(e.Kind) + " failure"
	}
	if e.Code == agentrt.CodeNotFound && e.Msg != "" {
		// Its sentence names what is missing; the store's wording of the
		// same (its wrapped error) says it again.
		return e.Msg
	}
	return strings.TrimSpace(e.Error())
}

// writeError answers err in the error shape, and logs it when it is the
// server's fault.
func writeError(w http.ResponseWriter, r *http.Request, log *slog.Logger, err error) {
	status, d := statusOf(err)
	if status >= 500 {
		log.LogAttrs(r.Context(), slog.LevelError, "request failed", slog.String("method", r.Method),
			slog.String("path", r.URL.Path), slog.Int("status", status), slog.String("code", d.Code), slog.String("error", err.Error()))
	}
	writeJSON(w, status, ErrorBody{Error: d})
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
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return badRequest("the request's JSON: %v", jsonError(err))
	}
	if dec.More() {
		return badRequest("the request's body holds more than one JSON value")
	}
	return nil
}

// jsonError says what is wrong with a body in words a client can act on.
func jsonError(err error) string {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		return fmt.Sprintf("%v (at byte %d)", se, se.Offset)
	case errors.As(err, &te):
		if te.Field != "" {
			return fmt.Sprintf("field %s: want %s, got a JSON %s", te.Field, te.Type, te.Value)
		}
		return fmt.Sprintf("want %s, got a JSON %s", te.Type, te.Value)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return "it ends too soon"
	}
	return strings.TrimPrefix(err.Error(), "json: ")
}

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

// statusWriter remembers the status a handler answered.
type statusWriter struct {
	http.ResponseWriter
	status int
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
		s.log.LogAttrs(r.Context(), level, "request", slog.String("method", r.Method), slog.String("route", rt.Pattern),
			slog.String("path", r.URL.Path), slog.Int("status", sw.status), slog.Duration("took", s.now().Sub(start)),
			slog.String("tenant", session.TenantOf(r.Context())))
	})
}

// cors answers browsers' preflight requests and marks answers for the
// allowed origins; with no origins configured it does nothing.
func (s *Server) cors(h http.Handler) http.Handler {
	if len(s.cfg.CORS.Origins) == 0 {
		return h
	}
	any := slices.Contains(s.cfg.CORS.Origins, "*")
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		origin := r.Header.Get("Origin")
		if origin != "" && (any || slices.Contains(s.cfg.CORS.Origins, origin)) {
			hd := w.Header()
			hd.Set("Access-Control-Allow-Origin", origin)
			hd.Add("Vary", "Origin")
			hd.Set("Access-Control-Expose-Headers", "Location, Retry-After, Agentrt-Input-Id")
			if r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != "" {
				hd.Set("Access-Control-Allow-Methods", "GET, POST, DELETE")
				hd.Set("Access-Control-Allow-Headers", "Authorization, Content-Type, Idempotency-Key, Last-Event-ID")
				hd.Set("Access-Control-Max-Age", fmt.Sprint(int((10 * time.Minute).Seconds())))
				w.WriteHeader(http.StatusNoContent)
				return
			}
		}
		h.ServeHTTP(w, r)
	})
}

// WriteError answers err in the API's error shape (ErrorBody, with the
// status of its code), as the server's own handlers do: for the adapters
// mounted on it.
func (s *Server) WriteError(w http.ResponseWriter, r *http.Request, err error) {
	writeError(w, r, s.log, err)
}
