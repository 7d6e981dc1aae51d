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
type KeepAlive struct {
	mu      sync.Mutex
	rc      *http.ResponseController
	w       http.ResponseWriter
	every   time.Duration
	t       *time.Timer
	wrote   bool // the adapter wrote since the last look: no comment due
	stopped bool
}

// KeepAlive starts the comments on w, whose response's headers must have
// been written.
func (s *Server) KeepAlive(w http.ResponseWriter) *KeepAlive {
	k := &KeepAlive{w: w, rc: http.NewResponseController(w), every: s.cfg.Heartbeat}
	// The first tick may come before AfterFunc returns (a short
	// interval): it waits for k.t under the lock.
	k.mu.Lock()
	k.t = time.AfterFunc(k.every, k.tick)
	k.mu.Unlock()
	return k
}

// Lock takes the stream for a write.
func (k *KeepAlive) Lock() { k.mu.Lock() }

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
		if _, err := k.w.Write([]byte(": keep-alive\n\n")); err == nil {
			_ = k.rc.Flush()
		}
	}
	k.wrote = false
	k.t.Reset(k.every)
}

// Stop ends the comments; none is written once it returns.
func (k *KeepAlive) Stop() {
	k.mu.Lock()
	k.stopped = true
	k.t.Stop()
	k.mu.Unlock()
}
