//go:build unix

package server_test

import (
	"bytes"
	"context"
	"fmt"
	"html"
	"net"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/internal/testenv"
	"github.com/agentrt/agentrt/server"
	"github.com/agentrt/agentrt/session"
)

// dumpDOM loads url in headless Chromium, with a profile of its own, and
// returns the page's DOM once its script is done: virtual time waits for
// the page's fetches.
func dumpDOM(t *testing.T, bin, url string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync", "--disable-breakpad",
		"--user-data-dir="+t.TempDir(), "--virtual-time-budget=30000", "--dump-dom", url)
	// Chromium's helper processes are in its process group, ended with it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 10 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // what is left of the group
	}
	if err != nil {
		t.Fatalf("chromium --dump-dom %s: %v\n%s", url, err, stderr.String())
	}
	return stdout.String()
}

// pageOutcomes are the lines a test page wrote into its <pre id="out">.
func pageOutcomes(t *testing.T, dom string) []string {
	t.Helper()
	m := regexp.MustCompile(`(?s)<pre id="out">(.*?)</pre>`).FindStringSubmatch(dom)
	if m == nil || !strings.Contains(dom, "<title>done</title>") {
		t.Fatalf("the page did not finish its script; its DOM:\n%s", dom)
	}
	return strings.Split(strings.TrimSpace(html.UnescapeString(m[1])), "\n")
}

// testPage is a page whose script makes each of tries (a name and the
// init of a fetch of POST /v1/sessions, as JavaScript) one after the
// other and writes "name: outcome" lines: the status and what the page
// could read, "opaque" for a no-cors answer, or "blocked" when the
// browser refused the page the answer (or sent nothing).
func testPage(api string, tries [][2]string) string {
	var calls strings.Builder
	for _, tr := range tries {
		fmt.Fprintf(&calls, "  await attempt(%q, %s);\n", tr[0], tr[1])
	}
	return `<!doctype html><html><head><title>running</title></head><body><pre id="out"></pre><script>
const out = [];
async function attempt(name, init) {
  try {
    const r = await fetch(` + "`" + api + "/v1/sessions`" + `, init);
    if (r.type === "opaque") { out.push(name + ": opaque"); return; }
    const body = await r.json();
    out.push(name + ": " + r.status + " " + (body.id || body.error.code) + " " + r.headers.get("Location"));
  } catch (e) {
    out.push(name + ": blocked");
  }
}
(async () => {
` + calls.String() + `  document.getElementById("out").textContent = out.join("\n");
  document.title = "done";
})();
</script></body></html>`
}

// served is one request the API saw, and its answer's status.
type served struct {
	method, path, origin, contentType string
	status                            int
}

// recorded is an API handler that keeps what it served.
type recorded struct {
	h    http.Handler
	mu   sync.Mutex
	seen []served // guarded by mu
}

func (rec *recorded) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	sw := &statusRecorder{ResponseWriter: w}
	rec.h.ServeHTTP(sw, r)
	rec.mu.Lock()
	defer rec.mu.Unlock()
	rec.seen = append(rec.seen, served{r.Method, r.URL.Path, r.Header.Get("Origin"), r.Header.Get("Content-Type"), sw.status})
}

// from returns what a page of origin sent, in order.
func (rec *recorded) from(origin string) []served {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	var out []served
	for _, s := range rec.seen {
		if s.origin == origin {
			out = append(out, s)
		}
	}
	return out
}

type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (w *statusRecorder) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusRecorder) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// pageServer serves page at / on addr (127.0.0.1:0, 127.0.0.2:0: a page
// origin of its own).
func pageServer(t *testing.T, addr string, page func() string) *httptest.Server {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	ps := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write([]byte(page()))
	}))
	ps.Listener.Close()
	ps.Listener = ln
	ps.Start()
	t.Cleanup(ps.Close)
	return ps
}

// Real Chromium, against a server without API keys (the default) that
// lists one page origin in CORS: that page's fetch with a JSON body and
// Authorization is let through by a preflight, creates its session and
// reads the answer and its Location; a page of another origin is refused
// its preflight (nothing is sent), and its "simple" posts — a JSON body
// as text/plain or as a form, which need no preflight, and a no-cors one
// — reach the server and are refused there: none creates a session.
func TestBrowserCORS(t *testing.T) {
	t.Parallel()
	bin := testenv.Chromium(t)
	// api is set once the API server is up, after the pages' servers
	// (Chromium's requests are no synchronisation the race detector sees).
	var api atomic.Value
	json := func(id string) string {
		return fmt.Sprintf(`{method: "POST", headers: {"Authorization": "Bearer browser", "Content-Type": "application/json"}, body: JSON.stringify({id: %q})}`, id)
	}
	simple := func(id, ct, mode string) string {
		return fmt.Sprintf(`{method: "POST", mode: %q, headers: {"Content-Type": %q}, body: JSON.stringify({id: %q})}`, mode, ct, id)
	}
	allowedPage := pageServer(t, "127.0.0.1:0", func() string {
		return testPage(api.Load().(string), [][2]string{{"json", json("from-allowed")}, {"plain", simple("allowed-plain", "text/plain", "cors")}})
	})
	foreignPage := pageServer(t, "127.0.0.2:0", func() string {
		return testPage(api.Load().(string), [][2]string{
			{"json", json("foreign-json")},
			{"plain", simple("foreign-plain", "text/plain", "cors")},
			{"form", simple("foreign-form", "application/x-www-form-urlencoded", "cors")},
			{"no-cors", simple("foreign-no-cors", "text/plain", "no-cors")},
		})
	})
	allowed, foreign := allowedPage.URL, foreignPage.URL

	f := newFixture(t, options{config: func(c *server.Config) { c.CORS.Origins = []string{allowed} }})
	rec := &recorded{h: f.srv.Handler()}
	apiServer := httptest.NewServer(rec)
	t.Cleanup(apiServer.Close)
	api.Store(apiServer.URL)

	got := pageOutcomes(t, dumpDOM(t, bin, allowed+"/"))
	want := []string{
		"json: 201 from-allowed /v1/sessions/from-allowed",
		"plain: 415 unsupported_media_type null",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the allowed page's fetches (-want +got):\n%s", diff)
	}
	wantServed := []served{
		{"OPTIONS", "/v1/sessions", allowed, "", http.StatusNoContent},
		{"POST", "/v1/sessions", allowed, "application/json", http.StatusCreated},
		{"POST", "/v1/sessions", allowed, "text/plain", http.StatusUnsupportedMediaType},
	}
	if diff := cmp.Diff(wantServed, rec.from(allowed), cmp.AllowUnexported(served{})); diff != "" {
		t.Errorf("what the allowed page sent, and its answers (-want +got):\n%s", diff)
	}

	got = pageOutcomes(t, dumpDOM(t, bin, foreign+"/"))
	want = []string{"json: blocked", "plain: blocked", "form: blocked", "no-cors: opaque"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the foreign page's fetches (-want +got):\n%s", diff)
	}
	wantServed = []served{
		{"OPTIONS", "/v1/sessions", foreign, "", http.StatusForbidden},
		{"POST", "/v1/sessions", foreign, "text/plain", http.StatusForbidden},
		{"POST", "/v1/sessions", foreign, "application/x-www-form-urlencoded", http.StatusForbidden},
		{"POST", "/v1/sessions", foreign, "text/plain", http.StatusForbidden},
	}
	if diff := cmp.Diff(wantServed, rec.from(foreign), cmp.AllowUnexported(served{})); diff != "" {
		t.Errorf("what the foreign page sent, and its answers (-want +got):\n%s", diff)
	}

	ctx := session.WithTenant(t.Context(), session.DefaultTenant)
	list, err := f.store.ListSessions(ctx, session.ListOptions{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, s := range list {
		ids = append(ids, s.ID)
	}
	if diff := cmp.Diff([]string{"from-allowed"}, ids); diff != "" {
		t.Errorf("the sessions the pages made (-want +got):\n%s", diff)
	}
}
