//go:build unix

package cli_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentrt/agentrt/internal/testenv"
)

// Clients that hold connections and send nothing, against a real agentrt
// serve process: what each meets, and that a client with a key is
// answered meanwhile.

// needOpenFiles raises this process's limit on open files to at least n
// (as root, the hard limit too), and makes the processes it starts
// inherit it: the tests open thousands of sockets, and so does the server
// they start.
func needOpenFiles(t *testing.T, n uint64) {
	t.Helper()
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	lim.Cur, lim.Max = max(lim.Cur, n), max(lim.Max, n)
	lim.Cur = lim.Max
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatalf("this test needs %d open files (ulimit -n %d): %v", n, n, err)
	}
}

// stalledConn is a connection of a client that stops sending.
type stalledConn struct {
	c      net.Conn
	kind   string
	opened time.Time
}

// openStalled opens n connections to addr of kind: "keyed" declares a
// body of 100,000 bytes with key and sends 9 of them; "keyless" does so
// with no key; "slowloris" sends its request line and part of a header.
// They are closed when the test ends.
func openStalled(t *testing.T, addr, key, kind string, n int) ([]stalledConn, error) {
	var head string
	switch kind {
	case "keyed", "keyless":
		auth := ""
		if kind == "keyed" {
			auth = "Authorization: Bearer " + key + "\r\n"
		}
		head = fmt.Sprintf("POST /v1/sessions HTTP/1.1\r\nHost: %s\r\n%sContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{\"agent\":", addr, auth)
	case "slowloris":
		head = fmt.Sprintf("GET /v1/agents HTTP/1.1\r\nHost: %s\r\nX-Slow: a", addr)
	}
	out := make([]stalledConn, 0, n)
	for range n {
		c, err := net.DialTimeout("tcp", addr, 30*time.Second)
		if err != nil {
			return out, fmt.Errorf("%s connection %d: %w", kind, len(out)+1, err)
		}
		t.Cleanup(func() { c.Close() })
		if _, err := io.WriteString(c, head); err != nil {
			return out, fmt.Errorf("%s connection %d: %w", kind, len(out)+1, err)
		}
		out = append(out, stalledConn{c: c, kind: kind, opened: time.Now()})
	}
	return out, nil
}

// ended reads what the server sends on c until it closes the connection
// or by passes: the status of its answer (0: none) and whether it closed.
func ended(c net.Conn, by time.Time) (status int, closed bool) {
	_ = c.SetReadDeadline(by)
	br := bufio.NewReader(c)
	if resp, err := http.ReadResponse(br, nil); err == nil {
		status = resp.StatusCode
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	_, err := io.Copy(io.Discard, br)
	// A reset counts: the server closed a connection the client had
	// written more to than it read.
	return status, err == nil || !os.IsTimeout(err)
}

// 1,500 clients with a key that declare a body and send 9 bytes of it,
// 1,500 with no key that do the same, and 1,500 that send half their
// headers and stop are connected at once; a client with a key is
// answered meanwhile (requests and a turn), and each stalled client is
// answered as its kind should be and disconnected within the bounds the
// config sets: a body that stops coming at server.read_timeout (408), a
// refusal at once (401, after at most a second for the rest of the body),
// headers at server.read_timeout. (The margin is for a loaded machine:
// the figures are in docs/benchmarks.md, measured, not asserted.)
func TestServeProcessStalledClients(t *testing.T) {
	t.Parallel()
	testenv.SkipShort(t, "runs agentrt serve and 4,500 connections")
	needOpenFiles(t, 16384)
	const readTimeout, margin = 5 * time.Second, 30 * time.Second
	e := newEnv(t, demoConfig+"server:\n  api_keys: [{key: k1, tenant: acme}]\n  read_timeout: 5s\n  request_timeout: 60s\n", nil)
	s := startServe(t, e, nil)
	line := s.waitLog("connections", "max_connections")
	addr := strings.TrimPrefix(s.url, "http://")

	var mu sync.Mutex
	var all []stalledConn
	var errs []error
	var wg sync.WaitGroup
	for _, kind := range []string{"keyed", "keyless", "slowloris"} {
		wg.Go(func() {
			cs, err := openStalled(t, addr, "k1", kind, 1500)
			mu.Lock()
			all = append(all, cs...)
			if err != nil {
				errs = append(errs, err)
			}
			mu.Unlock()
		})
	}
	wg.Wait()
	if len(errs) > 0 {
		t.Fatalf("opening the stalled connections: %v", errs)
	}
	opened := time.Now()

	api := newAPI(t, s.url, "k1")
	for range 20 {
		if code, body, _ := api.do("GET", "/v1/agents", nil); code != http.StatusOK {
			t.Fatalf("the bystander's GET /v1/agents: %d %s", code, body)
		}
	}
	api.createSession("bystander")
	api.turn("bystander", "hello")
	if took := time.Since(opened); took > readTimeout {
		t.Logf("the bystander's requests took %v, longer than the read timeout: the stalled clients may have been cut meanwhile", took)
	}

	want := map[string]struct {
		status int
		within time.Duration
	}{
		"keyed":     {http.StatusRequestTimeout, readTimeout + margin},
		"keyless":   {http.StatusUnauthorized, time.Second + margin},
		"slowloris": {0, readTimeout + margin},
	}
	type miss struct {
		kind   string
		status int
		closed bool
	}
	misses := map[string]int{}
	var first []miss
	var rw sync.WaitGroup
	for _, sc := range all {
		rw.Go(func() {
			w := want[sc.kind]
			status, closed := ended(sc.c, sc.opened.Add(w.within))
			if (w.status != 0 && status != w.status) || !closed {
				mu.Lock()
				misses[sc.kind]++
				if len(first) < 5 {
					first = append(first, miss{sc.kind, status, closed})
				}
				mu.Unlock()
			}
		})
	}
	rw.Wait()
	if len(misses) > 0 {
		t.Errorf("stalled clients not answered and disconnected in time, by kind: %v; the first: %+v", misses, first)
	}
	if text := s.stderrText(); strings.Contains(text, "too many open files") {
		t.Errorf("the server ran out of file descriptors:\n%s", text)
	}
	t.Logf("%s", line)
	s.stopOK()
}

// Under a limit of 1,024 open files (prlimit), 1,100 clients with a key
// that stall their bodies do not make the server run out of descriptors:
// it holds half the limit open (max_connections derived from it, logged),
// the rest wait to be accepted, and a client with a key is answered once
// the stalled ones before it are cut at the read timeout.
func TestServeProcessFileLimit(t *testing.T) {
	t.Parallel()
	testenv.SkipShort(t, "runs agentrt serve and 1,100 connections")
	prlimit := needTool(t, "prlimit")
	needOpenFiles(t, 16384)
	e := newEnv(t, demoConfig+"server:\n  api_keys: [{key: k1, tenant: acme}]\n  read_timeout: 2s\n", nil)
	s := startServeVia(t, e, nil, []string{prlimit, "--nofile=1024:1024", "--"})
	if line := s.waitLog("connections", "max_connections"); !containsAll(line, "max_connections=512", "open_files_limit=1024") {
		t.Errorf("the server's limits: %s, want 512 connections of a limit of 1024", line)
	}
	addr := strings.TrimPrefix(s.url, "http://")
	cs, err := openStalled(t, addr, "k1", "keyed", 1100)
	if err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(t.Context(), procTimeout)
	defer cancel()
	api := newAPI(t, s.url, "k1")
	req := api.request(ctx, "GET", "/v1/agents", nil)
	resp, err := api.hc.Do(req)
	if err != nil {
		t.Fatalf("the bystander behind 1,100 stalled clients: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("the bystander behind 1,100 stalled clients: %d", resp.StatusCode)
	}
	for _, c := range cs {
		c.c.Close()
	}
	if text := s.stderrText(); strings.Contains(text, "too many open files") {
		t.Errorf("the server ran out of file descriptors:\n%s", text)
	}
	s.stopOK()
}
