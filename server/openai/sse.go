package openai

import (
	"encoding/json"
	"net/http"
	"sync"
)

// sse writes server-sent events as OpenAI's streams do: "data: JSON"
// events, flushed one by one, ended by "data: [DONE]".
type sse struct {
	w   http.ResponseWriter
	rc  *http.ResponseController
	buf []byte
	// ka, when set, is held around each write: the server's keep-alive
	// comments go between them.
	ka sync.Locker
}

func newSSE(w http.ResponseWriter) *sse {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	return &sse{w: w, rc: http.NewResponseController(w)}
}

func (s *sse) write(b []byte) error {
	s.buf = append(append(append(s.buf[:0], "data: "...), b...), "\n\n"...)
	return s.send()
}

// send writes and flushes the buffer.
func (s *sse) send() error {
	if s.ka != nil {
		s.ka.Lock()
		defer s.ka.Unlock()
	}
	if _, err := s.w.Write(s.buf); err != nil {
		return err
	}
	return s.rc.Flush()
}

// data sends v as an event.
func (s *sse) data(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return s.write(b)
}

// event sends v as an event named name, as the Responses API's streams
// name theirs.
func (s *sse) event(name string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	s.buf = append(append(append(append(append(s.buf[:0], "event: "...), name...), "\ndata: "...), b...), "\n\n"...)
	return s.send()
}

// fail ends the stream with an error event, which OpenAI's clients raise
// as the error it carries.
func (s *sse) fail(e *Error) error {
	return s.data(struct {
		Error *Error `json:"error"`
	}{e})
}

// done ends the stream.
func (s *sse) done() error { return s.write([]byte("[DONE]")) }
