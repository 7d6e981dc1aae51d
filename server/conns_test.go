package server_test

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/agentrt/agentrt/server"
)

// connServer serves f's handler on a real socket with at most limit
// connections (server.LimitConnections), and counts how many are open at
// once, below the limit: a connection counts until its socket closes.
type connServer struct {
	ts   *httptest.Server
	mu   sync.Mutex
	open int // guarded by mu
	most int // guarded by mu
}

func newConnServer(t *testing.T, f *fixture, limit int, configure func(*http.Server)) *connServer {
	t.Helper()
	cs := &connServer{ts: httptest.NewUnstartedServer(f.srv.Handler())}
	if configure != nil {
		configure(cs.ts.Config)
	}
	cs.ts.Listener = server.LimitConnections(cs.ts.Config, &countingListener{Listener: cs.ts.Listener, cs: cs}, limit)
	cs.ts.Start()
	t.Cleanup(cs.ts.Close)
	return cs
}

func (cs *connServer) mostOpen() int {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	return cs.most
}

type countingListener struct {
	net.Listener
	cs *connServer
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	l.cs.mu.Lock()
	l.cs.open++
	l.cs.most = max(l.cs.most, l.cs.open)
	l.cs.mu.Unlock()
	return &countedConn{Conn: c, cs: l.cs}, nil
}

type countedConn struct {
	net.Conn
	cs   *connServer
	once sync.Once
}

func (c *countedConn) Close() error {
	c.once.Do(func() {
		c.cs.mu.Lock()
		c.cs.open--
		c.cs.mu.Unlock()
	})
	return c.Conn.Close()
}

// get makes a request on a client of its own (its own connections) and
// returns the status, or fails within wait.
func (cs *connServer) get(t *testing.T, tr *http.Transport, wait time.Duration) int {
	t.Helper()
	hc := &http.Client{Transport: tr, Timeout: wait}
	resp, err := hc.Get(cs.ts.URL + "/healthz")
	if err != nil {
		t.Fatalf("GET /healthz: %v", err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// At the cap, a connection idle between requests gives its place to a
// new client at once (the idle timeout is an hour: it does not explain
// it), and no more than the cap are ever open.
func TestConnectionCapClosesIdle(t *testing.T) {
	f := newFixture(t, options{})
	const most = 3
	cs := newConnServer(t, f, most, func(hs *http.Server) { hs.IdleTimeout = time.Hour })
	for i := range most + 2 {
		tr := &http.Transport{}
		t.Cleanup(tr.CloseIdleConnections)
		if code := cs.get(t, tr, 10*time.Second); code != http.StatusOK {
			t.Fatalf("client %d: %d", i, code)
		}
	}
	if n := cs.mostOpen(); n > most {
		t.Errorf("%d connections open at once, more than the cap of %d", n, most)
	}
}

// At the cap with no idle connection, a new client waits for a place
// rather than being refused: the connections of clients that send half
// their headers and stop are closed at the header timeout, and it is
// served.
func TestConnectionCapWaits(t *testing.T) {
	f := newFixture(t, options{})
	const most = 2
	cs := newConnServer(t, f, most, func(hs *http.Server) { hs.ReadHeaderTimeout = 300 * time.Millisecond })
	addr := cs.ts.Listener.Addr().String()
	for range most {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		fmt.Fprintf(c, "GET /healthz HTTP/1.1\r\nHost: %s\r\nX-Slow: ", addr)
	}
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	if code := cs.get(t, tr, 20*time.Second); code != http.StatusOK {
		t.Fatalf("a client waiting for a place: %d", code)
	}
	if n := cs.mostOpen(); n > most {
		t.Errorf("%d connections open at once, more than the cap of %d", n, most)
	}
}
