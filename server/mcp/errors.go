package mcp

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/server"
)

// errorWriter holds back the refusals the SDK's Streamable HTTP handler
// writes as plain text (http.Error: a session another key opened, a
// payload that is not JSON-RPC, a missing header), so that finish can
// answer them in the server's error shape, {"error":{"code","message"}},
// with the SDK's status. Everything else passes through as written.
type errorWriter struct {
	http.ResponseWriter
	status int          // the refusal's status, once held
	text   bytes.Buffer // its text
}

func (w *errorWriter) WriteHeader(code int) {
	if code >= 400 && w.status == 0 && strings.HasPrefix(w.Header().Get("Content-Type"), "text/plain") {
		w.status = code
		return
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *errorWriter) Write(b []byte) (int, error) {
	if w.status != 0 {
		return w.text.Write(b)
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection (flushes,
// deadlines) for the SDK's streams.
func (w *errorWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// finish writes the refusal held, if there is one, with the SDK's status
// (a 415 stays a 415).
func (w *errorWriter) finish(srv *server.Server, r *http.Request) {
	if w.status == 0 {
		return
	}
	said := strings.TrimSpace(w.text.String())
	if w.status >= 500 {
		// The server's failure: its words go to the log.
		srv.WriteError(w.ResponseWriter, r, &agentrt.Error{Kind: agentrt.FailInternal,
			Msg: "the MCP endpoint failed (the server's log says why)", Err: errors.New(said)})
		return
	}
	code, msg := refusal(w.status, said)
	h := w.Header()
	h.Del("X-Content-Type-Options")
	h.Set("Content-Type", "application/json")
	b, _ := json.Marshal(server.ErrorBody{Error: server.ErrorDetail{Code: code, Message: msg}})
	w.ResponseWriter.WriteHeader(w.status)
	_, _ = w.ResponseWriter.Write(append(b, '\n'))
}

// refusal is the code and the sentence of a refusal the SDK wrote with
// status and text: the SDK's own sentence where it says what to do, ours
// where it would show a decoder's words or says too little.
func refusal(status int, text string) (code, msg string) {
	switch {
	case status == http.StatusUnauthorized:
		return agentrt.CodeUnauthorized, text
	case status == http.StatusForbidden && text == "session user mismatch":
		return agentrt.CodeForbidden, "this MCP session was opened with another API key: use that key, or initialize a session of your own"
	case status == http.StatusForbidden:
		return agentrt.CodeForbidden, text
	case status == http.StatusNotFound:
		return agentrt.CodeNotFound, "no MCP session of that Mcp-Session-Id (it ended, or another replica holds it): initialize a new one"
	case status == http.StatusMethodNotAllowed:
		return agentrt.CodeMethodNotAllowed, "the MCP endpoint takes POST, GET and DELETE"
	case status == http.StatusRequestEntityTooLarge:
		return agentrt.CodeBodyTooLarge, text
	case strings.HasPrefix(text, "malformed payload"):
		return agentrt.CodeMalformedRequest, "the body is not a JSON-RPC 2.0 message"
	case strings.HasPrefix(text, "failed to read body"):
		return agentrt.CodeMalformedRequest, "the request's body could not be read"
	}
	return agentrt.CodeMalformedRequest, text
}
