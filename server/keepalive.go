package server

import (
	"net/http"
	"sync"
	"time"
)

// KeepAlive sends an SSE comment on a stream that has been quiet for the
// server's heartbeat interval, so that proxies and clients with an idle
// timeout keep a long turn's connection open (a model that thinks for a
// minute, a run that waits for a tool). A protocol adapter that writes
// its own server-sent events holds it (Lock, Unlock) around each of its
// writes, which the comments go between, and calls Stop before its
// handler returns. Clients ignore comments: the SSE format says so.
//
// Each write, the adapter's and the comments, must be done within the
// server's WriteTimeout (Lock sets the connection's write deadline): a
// client that stops reading makes the adapter's next write fail, as on
// the native streams, rather than hold it — and what it follows — for as
// long as the connection lives.
type KeepAlive struct {
	mu      sync.Mutex
	rc      *http.ResponseController
	w       http.ResponseWriter
	every   time.Duration
	timeout time.Duration // for each write
	t       *time.Timer
	wrote   bool // the adapter wrote since the last look: no comment due
	stopped bool
}

// KeepAlive starts the comments on w, whose response's headers must have
// been written.
func (s *Server) KeepAlive(w http.ResponseWriter) *KeepAlive {
	return s.KeepAliveEvery(w, s.cfg.Heartbeat)
}

// KeepAliveEvery is KeepAlive at an interval of the adapter's own (its
// configuration's keep-alive); every must be positive.
func (s *Server) KeepAliveEvery(w http.ResponseWriter, every time.Duration) *KeepAlive {
	k := &KeepAlive{w: w, rc: http.NewResponseController(w), every: every, timeout: s.cfg.WriteTimeout}
	// The first tick may come before AfterFunc returns (a short
	// interval): it waits for k.t under the lock.
	k.mu.Lock()
	k.t = time.AfterFunc(k.every, k.tick)
	k.mu.Unlock()
	return k
}

// Lock takes the stream for a write, which has the server's
// WriteTimeout.
func (k *KeepAlive) Lock() {
	k.mu.Lock()
	_ = k.rc.SetWriteDeadline(time.Now().Add(k.timeout))
}

// Unlock gives the stream back after a write.
func (k *KeepAlive) Unlock() {
	k.wrote = true
	k.mu.Unlock()
}

// tick writes a comment when nothing was written since the last tick:
// the stream stays quiet for at most two intervals.
func (k *KeepAlive) tick() {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.stopped {
		return
	}
	if !k.wrote {
		// A failed write is the adapter's to find on its next one.
		_ = k.rc.SetWriteDeadline(time.Now().Add(k.timeout))
		if _, err := k.w.Write([]byte(": keep-alive\n\n")); err == nil {
			_ = k.rc.Flush()
		}
	}
	k.wrote = false
	k.t.Reset(k.every)
}

// Stop ends the comments; none is written once it returns. The write
// deadline is cleared: the connection may serve another request after
// this one, whose writes may set none.
func (k *KeepAlive) Stop() {
	k.mu.Lock()
	k.stopped = true
	k.t.Stop()
	_ = k.rc.SetWriteDeadline(time.Time{})
	k.mu.Unlock()
}
