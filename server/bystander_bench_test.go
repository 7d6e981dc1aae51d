//go:build unix

package server_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/gateway"
	"github.com/agentrt/agentrt/server"
	"github.com/agentrt/agentrt/session/memstore"
)

// BenchmarkBystander: a client with a key makes requests one after
// another (GET /v1/agents, a new connection each, as a client that just
// arrived) while the server, configured as agentrt serve runs it (keys,
// read timeouts, the connection cap), holds:
//
//   - load=idle: nothing else;
//   - load=held: 4,500 stalled clients at once (1,500 that declared a
//     body with the key and sent 9 bytes of it, 1,500 the same with no
//     key, 1,500 that sent half their headers), the read timeout longer
//     than the run, so that all of them stay connected; those without a
//     key are refused (401) and reconnect;
//   - load=churn: the same 4,500, cut at a read timeout of a second, each
//     reconnecting as soon as it is cut.
//
// ns/op is a request's latency; p50-ms and p99-ms its quantiles. The
// numbers are in docs/benchmarks.md; nothing here asserts a time.
func BenchmarkBystander(b *testing.B) {
	for _, load := range []string{"idle", "held", "churn"} {
		b.Run("load="+load, func(b *testing.B) {
			readTimeout := time.Minute
			if load == "churn" {
				readTimeout = time.Second
			}
			url := newHostileTarget(b, readTimeout)
			if load != "idle" {
				stop := hostileLoad(b, url, 1500)
				defer stop()
			}
			hc := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: time.Minute}
			lat := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for range b.N {
				start := time.Now()
				req, _ := http.NewRequest("GET", url+"/v1/agents", nil)
				req.Header.Set("Authorization", "Bearer k1")
				resp, err := hc.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					b.Fatalf("GET /v1/agents: %d", resp.StatusCode)
				}
				lat = append(lat, time.Since(start))
			}
			b.StopTimer()
			reportQuantiles(b, lat)
		})
	}
}

// newHostileTarget serves the API as agentrt serve does (a key, the read
// timeouts, the connection cap) and returns its URL.
func newHostileTarget(b *testing.B, readTimeout time.Duration) string {
	b.Helper()
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil || lim.Cur < 2*4500+1000 {
		b.Skipf("needs %d open files (ulimit -n), has %d", 2*4500+1000, lim.Cur)
	}
	r, err := agentrt.NewRunner(agentrt.Config{Store: memstore.New(), Agents: []*agentrt.Agent{loadAgent(b, &slowEcho{})}})
	if err != nil {
		b.Fatal(err)
	}
	gw, err := gateway.New(gateway.Config{Runner: r})
	if err != nil {
		b.Fatal(err)
	}
	srv, err := server.New(server.Config{Runner: r, Gateway: gw, Keys: []server.Key{{Key: "k1", Tenant: "acme"}},
		Limits: server.Limits{ReadTimeout: readTimeout}})
	if err != nil {
		b.Fatal(err)
	}
	ts := httptest.NewUnstartedServer(srv.Handler())
	ts.Config.ReadHeaderTimeout = readTimeout
	ts.Config.IdleTimeout = 2 * time.Minute
	ts.Listener = server.LimitConnections(ts.Config, ts.Listener, 10_000)
	ts.Start()
	b.Cleanup(func() {
		ts.CloseClientConnections()
		_ = srv.Shutdown(context.Background())
		ts.Close()
		_ = r.Close(context.Background())
	})
	return ts.URL
}

// hostileLoad keeps n stalled clients of each kind connected to url,
// each reconnecting when the server cuts it, until stop.
func hostileLoad(b *testing.B, url string, n int) (stop func()) {
	b.Helper()
	addr := url[len("http://"):]
	heads := []string{
		fmt.Sprintf("POST /v1/sessions HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer k1\r\nContent-Length: 100000\r\n\r\n{\"agent\":", addr),
		fmt.Sprintf("POST /v1/sessions HTTP/1.1\r\nHost: %s\r\nContent-Length: 100000\r\n\r\n{\"agent\":", addr),
		fmt.Sprintf("GET /v1/agents HTTP/1.1\r\nHost: %s\r\nX-Slow: a", addr),
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var mu sync.Mutex
	conns := map[net.Conn]bool{}
	connected := make(chan struct{}, 3*n)
	for _, head := range heads {
		for range n {
			wg.Go(func() {
				first := true
				for ctx.Err() == nil {
					c, err := (&net.Dialer{}).DialContext(ctx, "tcp", addr)
					if err != nil {
						return
					}
					mu.Lock()
					if ctx.Err() != nil { // stop closed the others already
						mu.Unlock()
						c.Close()
						return
					}
					conns[c] = true
					mu.Unlock()
					_, _ = io.WriteString(c, head)
					if first {
						connected <- struct{}{}
						first = false
					}
					_, _ = io.Copy(io.Discard, bufio.NewReader(c)) // until the server cuts it, or stop
					mu.Lock()
					delete(conns, c)
					mu.Unlock()
					c.Close()
				}
			})
		}
	}
	for range 3 * n {
		<-connected
	}
	return func() {
		cancel()
		mu.Lock()
		for c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	}
}
