package fetch_test

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/internal/fetch"
)

var png = append([]byte("\x89PNG\r\n\x1a\n"), make([]byte, 64)...)

// server serves png at /shot.png with no Content-Type (the bytes tell),
// and redirects /to?u=URL to URL; hits counts the requests it got.
func server(t *testing.T) (srv *httptest.Server, hits *atomic.Int64) {
	t.Helper()
	hits = new(atomic.Int64)
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		switch r.URL.Path {
		case "/shot.png":
			w.Header()["Content-Type"] = nil
			_, _ = w.Write(png)
		case "/doc":
			w.Header().Set("Content-Type", "application/pdf")
			w.Header().Set("Content-Disposition", `attachment; filename="report.pdf"`)
			_, _ = w.Write([]byte("%PDF-1.7 body"))
		case "/to":
			http.Redirect(w, r, r.URL.Query().Get("u"), http.StatusFound)
		case "/loop":
			http.Redirect(w, r, "/loop", http.StatusFound)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv, hits
}

// only allows one address besides the public ones: a test's server.
func only(a string) func(netip.Addr) bool {
	want := netip.MustParseAddr(a)
	return func(ip netip.Addr) bool { return ip == want }
}

func newFetcher(t *testing.T, cfg fetch.Config) *fetch.Fetcher {
	t.Helper()
	f, err := fetch.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// A fetch allowed the test server's address gets its bytes, their type
// (sniffed when the answer gives none) and a name.
func TestFetch(t *testing.T) {
	t.Parallel()
	srv, _ := server(t)
	f := newFetcher(t, fetch.Config{Hosts: []string{"127.0.0.1"}, Allow: only("127.0.0.1")})
	for _, tc := range []struct {
		path string
		want fetch.File
	}{
		{"/shot.png", fetch.File{Name: "shot.png", Type: "image/png", Data: png}},
		{"/doc?sig=secret", fetch.File{Name: "report.pdf", Type: "application/pdf", Data: []byte("%PDF-1.7 body")}},
		{"/to?u=/shot.png", fetch.File{Name: "shot.png", Type: "image/png", Data: png}},
	} {
		got, err := f.Fetch(t.Context(), srv.URL+tc.path)
		if err != nil {
			t.Fatalf("%s: %v", tc.path, err)
		}
		if diff := cmp.Diff(tc.want, *got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.path, diff)
		}
	}
	_, err := f.Fetch(t.Context(), srv.URL+"/missing?sig=secret")
	if err == nil || !strings.Contains(err.Error(), "404") || strings.Contains(err.Error(), "secret") {
		t.Errorf("a missing file: %v, want its 404 without the URL's query", err)
	}
}

// With the default address check (public addresses only) and every host
// allowed, a URL that reaches loopback, a private, link-local or metadata
// address — by its address, a name, a mapped IPv6 form or a redirect — is
// refused before a byte is sent to it, and says why.
func TestFetchRefused(t *testing.T) {
	t.Parallel()
	srv, hits := server(t)
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	f := newFetcher(t, fetch.Config{Hosts: []string{"*"}})
	for _, tc := range []struct {
		url, want string
	}{
		{srv.URL + "/shot.png", "127.0.0.1 is a loopback address"},
		{fmt.Sprintf("http://localhost:%d/shot.png", port), "is a loopback address"},
		{fmt.Sprintf("http://[::1]:%d/shot.png", port), "::1 is a loopback address"},
		{fmt.Sprintf("http://[::ffff:127.0.0.1]:%d/shot.png", port), "127.0.0.1 is a loopback address"},
		{"http://10.1.2.3/x.png", "10.1.2.3 is a private address"},
		{"http://192.168.0.1/x.png", "is a private address"},
		{"http://169.254.169.254/latest/meta-data/", "169.254.169.254 is a link-local address"},
		{"http://100.64.0.1/x.png", "carrier-grade NAT"},
		{"http://0.0.0.0/x.png", "unspecified"},
		{"http://[fd00::1]/x.png", "private"},
		{"http://[fe80::1%25eth0]/x.png", "link-local"},
		{"http://[64:ff9b::a9fe:a9fe]/x.png", "carries 169.254.169.254"},
		{"file:///etc/passwd", "not an http or https URL"},
		{"gopher://example.com/", "not an http or https URL"},
		{"http://user:pw@example.com/", "credentials"},
	} {
		got, err := f.Fetch(t.Context(), tc.url)
		if !errors.Is(err, fetch.ErrRefused) || !strings.Contains(err.Error(), tc.want) || got != nil {
			t.Errorf("%s: %v, %v; want refused: %q", tc.url, got, err, tc.want)
		}
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("the loopback server got %d requests, want none", n)
	}

	// A redirect is checked as the URL was: the first server is allowed
	// (its address alone), where it sends the client is not.
	hits.Store(0)
	allowed := newFetcher(t, fetch.Config{Hosts: []string{"*"}, Allow: only("127.0.0.1")})
	for _, to := range []string{
		fmt.Sprintf("http://127.0.0.2:%d/shot.png", port),
		"http://169.254.169.254/latest/meta-data/",
		fmt.Sprintf("http://[::1]:%d/shot.png", port),
		"file:///etc/passwd",
	} {
		u := srv.URL + "/to?u=" + url.QueryEscape(to)
		got, err := allowed.Fetch(t.Context(), u)
		if !errors.Is(err, fetch.ErrRefused) || got != nil {
			t.Errorf("a redirect to %s: %v, %v; want refused", to, got, err)
		}
	}
	if n := hits.Load(); n != 4 {
		t.Errorf("the server got %d requests, want the 4 that redirected", n)
	}
	// A host not listed, after a redirect too, and redirects without end.
	listed := newFetcher(t, fetch.Config{Hosts: []string{"127.0.0.1"}, Allow: func(netip.Addr) bool { return true }})
	for u, want := range map[string]string{
		fmt.Sprintf("http://localhost:%d/shot.png", port):                                "host localhost is not one this server fetches from",
		srv.URL + "/to?u=" + url.QueryEscape(fmt.Sprintf("http://localhost:%d/x", port)): "host localhost is not one",
		srv.URL + "/loop": "more than 5 redirects",
	} {
		if _, err := listed.Fetch(t.Context(), u); !errors.Is(err, fetch.ErrRefused) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want refused: %q", u, err, want)
		}
	}
	none := newFetcher(t, fetch.Config{Allow: func(netip.Addr) bool { return true }})
	if _, err := none.Fetch(t.Context(), srv.URL+"/shot.png"); !errors.Is(err, fetch.ErrRefused) || !strings.Contains(err.Error(), "fetches no URLs") {
		t.Errorf("no hosts: %v, want refused", err)
	}
}

// The body is read through the limit, whether or not its length is
// announced; a server that does not answer within the time limit is
// given up on.
func TestFetchBounds(t *testing.T) {
	t.Parallel()
	body := strings.Repeat("x", 101)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/announced":
			w.Header().Set("Content-Length", fmt.Sprint(len(body)))
			_, _ = w.Write([]byte(body))
		case "/chunked":
			for i := range body {
				_, _ = w.Write([]byte(body[i : i+1]))
				w.(http.Flusher).Flush()
			}
		case "/exact":
			_, _ = w.Write([]byte(body[:100]))
		case "/stall":
			<-r.Context().Done()
		}
	}))
	t.Cleanup(srv.Close)
	f := newFetcher(t, fetch.Config{Hosts: []string{"*"}, Allow: only("127.0.0.1"), MaxBytes: 100, Timeout: 200 * time.Millisecond})
	for _, p := range []string{"/announced", "/chunked"} {
		if _, err := f.Fetch(t.Context(), srv.URL+p); !errors.Is(err, fetch.ErrTooLarge) {
			t.Errorf("%s: %v, want too large", p, err)
		}
	}
	if got, err := f.Fetch(t.Context(), srv.URL+"/exact"); err != nil || len(got.Data) != 100 || got.Type != "text/plain" {
		t.Errorf("/exact: %+v %v, want its 100 bytes, text/plain", got, err)
	}
	if _, err := f.Fetch(t.Context(), srv.URL+"/stall"); err == nil || !strings.Contains(err.Error(), "within 200ms") {
		t.Errorf("/stall: %v, want no answer within the time limit", err)
	}
}

// Check refuses every address that is not public, in whatever form.
func TestCheck(t *testing.T) {
	t.Parallel()
	for a, public := range map[string]bool{
		"8.8.8.8": true, "1.1.1.1": true, "2606:4700:4700::1111": true, "203.0.113.9": true,
		"127.0.0.1": false, "127.1.2.3": false, "::1": false, "10.0.0.1": false, "172.16.0.1": false, "172.31.255.255": false,
		"192.168.1.1": false, "fc00::1": false, "fd12::1": false, "169.254.169.254": false, "fe80::1": false,
		"0.0.0.0": false, "::": false, "224.0.0.1": false, "ff02::1": false, "100.64.0.1": false, "100.127.255.254": false,
		"255.255.255.255": false, "::ffff:127.0.0.1": false, "::ffff:10.0.0.1": false, "::ffff:169.254.169.254": false,
		"64:ff9b::7f00:1": false, "2002:a9fe:a9fe::": false, "::10.0.0.1": false, "fec0::1": false,
		"64:ff9b::808:808": true, "172.32.0.1": true, "100.128.0.1": true,
	} {
		err := fetch.Check(netip.MustParseAddr(a))
		if (err == nil) != public {
			t.Errorf("Check(%s) = %v; public: %v", a, err, public)
		}
	}
}

// Hosts are names, *.names, addresses or *.
func TestCheckHost(t *testing.T) {
	t.Parallel()
	for h, ok := range map[string]bool{
		"images.example.com": true, "*.example.com": true, "*": true, "203.0.113.7": true, "[2001:db8::1]": true, "Example.COM.": true,
		"": false, "*.": false, "a*b.com": false, "http://x.com": false, "x.com:80": false, "x..com": false, "**.x.com": false,
	} {
		if _, err := fetch.CheckHost(h); (err == nil) != ok {
			t.Errorf("CheckHost(%q) = %v, want ok %v", h, err, ok)
		}
	}
}
