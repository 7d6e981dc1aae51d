package server

import (
	"net"
	"net/http"
	"sync"
)

// LimitConnections caps the connections hs holds open through ln at max,
// and returns the listener to serve (ln itself when max is not positive):
// every connection holds a file
// descriptor, and a process out of them can accept nobody, not even a
// client with a key (nor open its store or call its model).
//
// At the cap, the server first closes a connection that is idle between
// requests (keep-alive), and otherwise accepts nothing until a connection
// closes: new clients wait in the kernel's accept queue, holding no
// descriptor of the server's, and are served as the connections before
// them end. A client that stalls holds its connection no longer than the
// read timeouts (http.Server.ReadHeaderTimeout for its headers,
// Limits.ReadTimeout for its body), so the wait is bounded by them.
//
// It sets hs.ConnState (calling a function already set there too), which
// tells it which connections are idle. Closing an idle connection races
// with a request that arrives on it at that moment, as an idle timeout
// does: the client sees the connection closed and may retry.
func LimitConnections(hs *http.Server, ln net.Listener, max int) net.Listener {
	if max <= 0 {
		return ln
	}
	l := &connLimit{Listener: ln, max: max, idle: map[net.Conn]bool{}, freed: make(chan struct{}, 1), closed: make(chan struct{})}
	prev := hs.ConnState
	hs.ConnState = func(c net.Conn, st http.ConnState) {
		l.state(c, st)
		if prev != nil {
			prev(c, st)
		}
	}
	return l
}

// connLimit is the listener of LimitConnections.
type connLimit struct {
	net.Listener
	max int

	mu   sync.Mutex
	open int               // guarded by mu: connections accepted, not yet closed
	idle map[net.Conn]bool // guarded by mu: those between requests

	freed     chan struct{} // one value: a connection closed or went idle
	closed    chan struct{} // closed by Close
	closeOnce sync.Once
}

// Accept waits for a free place, then accepts a connection into it.
func (l *connLimit) Accept() (net.Conn, error) {
	if err := l.acquire(); err != nil {
		return nil, err
	}
	c, err := l.Listener.Accept()
	if err != nil {
		l.release()
		return nil, err
	}
	return &limitedConn{Conn: c, l: l}, nil
}

// acquire takes a place: a free one, else an idle connection's (closed
// for it), else the first one freed.
func (l *connLimit) acquire() error {
	for {
		l.mu.Lock()
		if l.open < l.max {
			l.open++
			l.mu.Unlock()
			return nil
		}
		var victim net.Conn
		for c := range l.idle {
			victim = c
			break
		}
		delete(l.idle, victim)
		l.mu.Unlock()
		if victim != nil {
			_ = victim.Close() // its place is freed as it closes
			continue
		}
		select {
		case <-l.freed:
		case <-l.closed:
			return net.ErrClosed
		}
	}
}

func (l *connLimit) release() {
	l.mu.Lock()
	l.open--
	l.mu.Unlock()
	l.wake()
}

func (l *connLimit) wake() {
	select {
	case l.freed <- struct{}{}:
	default:
	}
}

// state follows the connections between requests (http.StateIdle).
func (l *connLimit) state(c net.Conn, st http.ConnState) {
	l.mu.Lock()
	if st == http.StateIdle {
		l.idle[c] = true
	} else {
		delete(l.idle, c)
	}
	l.mu.Unlock()
	if st == http.StateIdle {
		l.wake() // an Accept waiting for a place may take this one
	}
}

// Close stops Accept, including one waiting for a place.
func (l *connLimit) Close() error {
	l.closeOnce.Do(func() { close(l.closed) })
	return l.Listener.Close()
}

// limitedConn gives its place back once closed.
type limitedConn struct {
	net.Conn
	l    *connLimit
	once sync.Once
}

func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() {
		c.l.mu.Lock()
		delete(c.l.idle, net.Conn(c))
		c.l.mu.Unlock()
		c.l.release()
	})
	return err
}
