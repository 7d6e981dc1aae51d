package server

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"sync/atomic"
	"time"

	"github.com/agentrt/agentrt"
)

// A client that declares a body and sends it slowly, or not at all, must
// not hold a connection (and its file descriptor) for longer than the
// server allows, whether or not it has a key. Two things bound it:
//
//   - each read of a body waits at most Limits.ReadTimeout for bytes, and
//     the whole body must have come within Limits.RequestTimeout of the
//     request's start: a read deadline on the connection, set as the body
//     is read. (net/http clears it when it begins its background read of
//     the connection, once the body has been read to its end, so that a
//     stream answering the request is not cut by it.) It bounds
//     net/http's own read of a body the handler left unread, too;
//   - a refusal (status 400 or more) written before the body was read to
//     its end waits for it at most refusalGrace. net/http reads an unread
//     body of up to 256 KiB before it writes the headers, to keep the
//     connection: a 401 to a client with no key that declared 100,000
//     bytes and sent none waited for them.
//
// The guard is the handler's outermost layer, so that it covers every
// answer: the routes' refusals (auth, limits), the mux's 404 and 405, the
// adapters' own.

// guardBody puts the body of every request that has one under the read
// deadlines, and makes the refusals written before it is read not wait
// for it.
func (s *Server) guardBody(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body == nil || r.Body == http.NoBody || r.ContentLength == 0 {
			h.ServeHTTP(w, r)
			return
		}
		// One allocation for the body, the writer and their controller.
		g := &guard{body: guardedBody{src: r.Body, rc: *http.NewResponseController(w), every: s.cfg.Limits.ReadTimeout,
			by: time.Now().Add(s.cfg.Limits.RequestTimeout), total: s.cfg.Limits.RequestTimeout}}
		if g.body.arm() != nil {
			// No connection to set a deadline on (a ResponseRecorder).
			h.ServeHTTP(w, r)
			return
		}
		g.w = guardedWriter{ResponseWriter: w, b: &g.body}
		r.Body = &g.body
		h.ServeHTTP(&g.w, r)
	})
}

// guard is what guardBody puts around one request.
type guard struct {
	body guardedBody
	w    guardedWriter
}

// guardedBody is a request's body read under the read deadlines. Read is
// called by one goroutine at a time (the handler's); ended may be asked
// by any.
type guardedBody struct {
	src   io.ReadCloser
	rc    http.ResponseController
	every time.Duration // for each read
	by    time.Time     // for the whole body
	total time.Duration // what by is, from the request's start
	ended atomic.Bool   // read to its end
	err   error         // a deadline passed: every read fails with it
}

// arm sets the deadline of the next read. (The connection's deadlines
// are of the wall clock, not of the server's Config.Now.)
func (b *guardedBody) arm() error {
	d := time.Now().Add(b.every)
	if b.by.Before(d) {
		d = b.by
	}
	return b.rc.SetReadDeadline(d)
}

func (b *guardedBody) Read(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	if b.ended.Load() {
		return 0, io.EOF
	}
	_ = b.arm()
	n, err := b.src.Read(p)
	switch {
	case err == io.EOF:
		b.ended.Store(true)
	case errors.Is(err, os.ErrDeadlineExceeded):
		msg := fmt.Sprintf("the request's body stopped coming: the server waits at most %s for each part of it; send the body with the headers, without pauses", b.every)
		if !time.Now().Before(b.by) {
			msg = fmt.Sprintf("the request's body did not come whole within %s of the request (server.request_timeout); send it faster, or send less", b.total)
		}
		b.err = &agentrt.Error{Kind: agentrt.FailInput, Code: agentrt.CodeBodyTimeout, Msg: msg, Err: err}
		err = b.err
	}
	return n, err
}

func (b *guardedBody) Close() error { return b.src.Close() }

// guardedWriter looks, before the answer's headers go, at whether the
// request's body was read to its end.
type guardedWriter struct {
	http.ResponseWriter
	b       *guardedBody
	checked bool
}

func (w *guardedWriter) WriteHeader(code int) {
	w.check(code)
	w.ResponseWriter.WriteHeader(code)
}

func (w *guardedWriter) Write(p []byte) (int, error) {
	w.check(http.StatusOK)
	return w.ResponseWriter.Write(p)
}

// Unwrap lets http.ResponseController reach the connection.
func (w *guardedWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// check bounds how long a refusal of a body not read to its end waits
// for it. net/http reads what is left of the body (up to 256 KiB) before
// it writes the headers, to keep the connection: long enough for a client
// that is sending its body (whose answer a closed connection could lose),
// not for as long as a stalled one would hold it: then the connection is
// closed after the answer.
func (w *guardedWriter) check(code int) {
	if w.checked || code < http.StatusOK {
		return
	}
	w.checked = true
	if code < http.StatusBadRequest || w.b.ended.Load() {
		return
	}
	d := time.Now().Add(min(refusalGrace, w.b.every))
	if w.b.by.Before(d) {
		d = w.b.by
	}
	_ = w.b.rc.SetReadDeadline(d)
}

// refusalGrace is the most a refusal waits for the rest of a body.
const refusalGrace = time.Second
