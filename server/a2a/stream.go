package a2a

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"time"

	spec "github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/agentrt/agentrt/server"
)

// methodStream is the JSON-RPC method of SendStreamingMessage.
const methodStream = "SendStreamingMessage"

// rpcRequest is a JSON-RPC request as a2a-go's server reads it.
type rpcRequest struct {
	JSONRPC string          `json:"jsonrpc"`
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params,omitempty"`
	ID      any             `json:"id"`
}

// rpcResult is a JSON-RPC response carrying one event of a stream, in
// a2a-go's server's shape (its fields in its order).
type rpcResult struct {
	JSONRPC string              `json:"jsonrpc"`
	ID      any                 `json:"id"`
	Result  spec.StreamResponse `json:"result"`
}

// serveStream serves a SendStreamingMessage that starts a task (no task
// id, no historyLength), req of JSON-RPC request id, itself, and reports
// whether it did: the task's input is stored (handler.newTask), and its
// events are written as a2a-go's JSON-RPC server writes a stream — an
// SSE event a result, each with a random id, in the same JSON — from the
// turn's batches, flushed once a batch, with keep-alive comments every
// keepAlive while the turn is quiet. a2a-go's server goes through a
// goroutine and a flush an event and its task manager copies the task
// several times an event; this is the common case, at the native
// stream's cost.
//
// Any other request, and one that newTask refuses or finds sent before,
// is left to a2a-go (false), with its body as it came: newTask stored
// nothing, and a2a-go's handler (handler.SendStreamingMessage) runs it
// again, answering the same error, or the task sent before, in its own
// encoding.
func (ep *agentEndpoint) serveStream(w http.ResponseWriter, r *http.Request, rpcID any, req *spec.SendMessageRequest, keepAlive time.Duration) bool {
	if req.Message == nil || req.Message.TaskID != "" || !direct(req) {
		return false
	}
	_, id, dup, err := ep.h.accept(r.Context(), req)
	if err != nil || dup {
		return false
	}
	defer ep.h.tasks.release(id)

	startSSE(w)
	ka := ep.srv.KeepAliveEvery(w, keepAlive)
	defer ka.Stop()
	s := &sseWriter{w: w, rc: http.NewResponseController(w), ka: ka, resp: rpcResult{JSONRPC: "2.0", ID: rpcID}}
	if err := ep.h.streamBatches(r.Context(), id, s.batch); err != nil {
		// Nothing was written but the headers: say why as a2a-go would
		// (an internal error).
		s.fail(public(r.Context(), ep.h.log, err, taskSubject(id)))
	}
	return true
}

// startSSE writes the headers of an SSE stream.
func startSSE(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("Connection", "keep-alive")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
}

// sseWriter writes a stream's events as a2a-go's JSON-RPC server does.
type sseWriter struct {
	w    http.ResponseWriter
	rc   *http.ResponseController
	ka   *server.KeepAlive
	resp rpcResult
	buf  []byte
}

// batch writes evs, then flushes; false: the client is gone.
func (s *sseWriter) batch(evs []spec.Event) bool {
	s.buf = s.buf[:0]
	for _, ev := range evs {
		s.resp.Result.Event = ev
		b, err := json.Marshal(s.resp)
		if err != nil {
			s.fail(err)
			return false
		}
		s.buf = append(append(append(append(append(s.buf, "id: "...), eventID()...), "\ndata: "...), b...), "\n\n"...)
	}
	return s.send()
}

// fail writes a JSON-RPC error ending the stream; err is public (its
// message is what the client reads).
func (s *sseWriter) fail(err error) {
	b, _ := json.Marshal(struct {
		JSONRPC string `json:"jsonrpc"`
		ID      any    `json:"id"`
		Error   any    `json:"error"`
	}{"2.0", s.resp.ID, rpcErrorObject(err)})
	s.buf = append(append(append(append(append(s.buf[:0], "id: "...), eventID()...), "\ndata: "...), b...), "\n\n"...)
	s.send()
}

func (s *sseWriter) send() bool {
	if s.ka != nil {
		s.ka.Lock()
		defer s.ka.Unlock()
	}
	if _, err := s.w.Write(s.buf); err != nil {
		return false
	}
	return s.rc.Flush() == nil
}

// validID reports whether id is a JSON-RPC request id a2a-go's server
// takes: a string, a number or null.
func validID(id any) bool {
	switch id.(type) {
	case nil, string, float64:
		return true
	}
	return false
}

// eventID is an SSE event's id as a2a-go's server gives it: a random
// UUID (version 4). Clients do not resume an A2A stream by it.
func eventID() []byte {
	var u [16]byte
	_, _ = rand.Read(u[:])
	u[6] = u[6]&0x0f | 0x40
	u[8] = u[8]&0x3f | 0x80
	var out [36]byte
	hex.Encode(out[0:8], u[0:4])
	out[8] = '-'
	hex.Encode(out[9:13], u[4:6])
	out[13] = '-'
	hex.Encode(out[14:18], u[6:8])
	out[18] = '-'
	hex.Encode(out[19:23], u[8:10])
	out[23] = '-'
	hex.Encode(out[24:], u[10:])
	return out[:]
}
