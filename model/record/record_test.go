package record_test

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/model/record"
)

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// offline is the next transport of replaying Transports: it fails the test
// if anything reaches it.
func offline(t *testing.T) http.RoundTripper {
	return roundTripFunc(func(r *http.Request) (*http.Response, error) {
		t.Errorf("replay reached the network: %s %s", r.Method, r.URL)
		return nil, errors.New("offline")
	})
}

// sseEvents are the stream's events, one with CR LF line endings.
var sseEvents = []string{"data: {\"delta\":\"Hel\"}\n\n", "data: {\"delta\":\"lo\"}\r\n\r\n", "data: [DONE]\n\n"}

// newServer starts a provider-like server on 127.0.0.1:
//
//	POST /v1/chat     echoes the body and counts calls, as JSON
//	POST /v1/stream   answers with server-sent events, flushed one by one
//	anything else     404
func newServer(t *testing.T) *httptest.Server {
	t.Helper()
	var calls atomic.Int64
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/chat", func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Request-Id", "req-"+strconv.FormatInt(calls.Add(1), 10))
		fmt.Fprintf(w, `{"call":%d,"echo":%s}`, calls.Load(), body)
	})
	mux.HandleFunc("POST /v1/stream", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Cache-Control", "no-cache")
		for _, ev := range sseEvents {
			io.WriteString(w, ev)
			w.(http.Flusher).Flush()
		}
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

func open(t *testing.T, path string, m record.Mode, next http.RoundTripper, opts ...record.Option) *record.Transport {
	t.Helper()
	tr, err := record.Open(path, m, next, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

func closeT(t *testing.T, tr *record.Transport) {
	t.Helper()
	if err := tr.Close(); err != nil {
		t.Fatal(err)
	}
}

// got is what a test compares of a response.
type got struct {
	Status string
	Code   int
	Header http.Header
	Body   string
}

func do(t *testing.T, c *http.Client, method, url, body string) got {
	t.Helper()
	g, err := try(c, method, url, body)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func try(c *http.Client, method, url, body string) (got, error) {
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, r)
	if err != nil {
		return got{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		return got{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return got{}, err
	}
	return got{resp.Status, resp.StatusCode, resp.Header, string(b)}, nil
}

func TestRecordThenReplay(t *testing.T) {
	t.Parallel()
	srv := newServer(t)
	path := filepath.Join(t.TempDir(), "testdata", "chat.record")
	requests := []struct{ method, path, body string }{
		{"POST", "/v1/chat", `{"prompt":"hi","n":1}`},
		{"POST", "/v1/stream", `{"prompt":"hi","stream":true}`},
		{"GET", "/v1/missing", ""},
	}

	rec := open(t, path, record.Record, nil)
	if rec.Mode() != record.Record {
		t.Errorf("Mode() = %v, want Record", rec.Mode())
	}
	var live []got
	for _, r := range requests {
		live = append(live, do(t, rec.Client(), r.method, srv.URL+r.path, r.body))
	}
	closeT(t, rec)
	srv.Close()

	if want := `{"call":1,"echo":{"prompt":"hi","n":1}}`; live[0].Body != want {
		t.Errorf("server saw body %q, want %q", live[0].Body, want)
	}
	if _, chunked := live[1].Header["Content-Length"]; chunked {
		t.Fatalf("the stream was not chunked: header %v", live[1].Header)
	}

	rep := open(t, path, record.Replay, offline(t))
	for i, r := range requests {
		want := live[i]
		want.Header = want.Header.Clone()
		want.Header.Set("Content-Length", strconv.Itoa(len(want.Body)))
		if diff := cmp.Diff(want, do(t, rep.Client(), r.method, srv.URL+r.path, r.body)); diff != "" {
			t.Errorf("replay of %s %s (-live +replayed):\n%s", r.method, r.path, diff)
		}
	}
	if u := rep.Unused(); len(u) != 0 {
		t.Errorf("Unused() = %q, want none", u)
	}
	closeT(t, rep)
}

func TestReplayStreamsIncrementally(t *testing.T) {
	t.Parallel()
	srv := newServer(t)
	path := filepath.Join(t.TempDir(), "stream.record")
	rec := open(t, path, record.Record, nil)
	recorded := do(t, rec.Client(), "POST", srv.URL+"/v1/stream", "{}").Body
	closeT(t, rec)

	rep := open(t, path, record.Replay, offline(t))
	req, err := http.NewRequest("POST", srv.URL+"/v1/stream", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := rep.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.Request != req {
		t.Errorf("resp.Request = %p, want the request %p", resp.Request, req)
	}
	// Read line by line, as an SSE client does.
	var lines []string
	br := bufio.NewReaderSize(resp.Body, 16)
	for {
		line, err := br.ReadString('\n')
		if line != "" {
			lines = append(lines, line)
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	wantLines := []string{"data: {\"delta\":\"Hel\"}\n", "\n", "data: {\"delta\":\"lo\"}\r\n", "\r\n", "data: [DONE]\n", "\n"}
	if diff := cmp.Diff(wantLines, lines); diff != "" {
		t.Errorf("lines (-want +got):\n%s", diff)
	}
	if got, want := strings.Join(lines, ""), strings.Join(sseEvents, ""); got != want || want != recorded {
		t.Errorf("replayed stream %q, recorded %q, sent %q", got, recorded, want)
	}
}

func TestSameRequestReplaysInOrder(t *testing.T) {
	t.Parallel()
	srv := newServer(t)
	path := filepath.Join(t.TempDir(), "twice.record")
	rec := open(t, path, record.Record, nil)
	for range 2 {
		do(t, rec.Client(), "POST", srv.URL+"/v1/chat", `{"q":1}`)
	}
	closeT(t, rec)

	rep := open(t, path, record.Replay, offline(t))
	for i := range 2 {
		want := fmt.Sprintf(`{"call":%d,"echo":{"q":1}}`, i+1)
		if g := do(t, rep.Client(), "POST", srv.URL+"/v1/chat", `{"q":1}`); g.Body != want {
			t.Errorf("replay %d: body %q, want %q", i+1, g.Body, want)
		}
	}
	_, err := try(rep.Client(), "POST", srv.URL+"/v1/chat", `{"q":1}`)
	if !errors.Is(err, record.ErrNoMatch) {
		t.Fatalf("third replay: error %v, want ErrNoMatch", err)
	}
	if want := "exchanges 1, 2 recorded it but were all already replayed"; !strings.Contains(err.Error(), want) {
		t.Errorf("third replay: error %q, want it to contain %q", err, want)
	}
}

// recording builds a file from request and response texts.
func recording(exchanges ...[2]string) string {
	s := "agentrt-record v1\n"
	for _, e := range exchanges {
		s += fmt.Sprintf("request %d response %d\n%s\n%s\n", len(e[0]), len(e[1]), e[0], e[1])
	}
	return s
}

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

const (
	chatBody = "{\"model\":\"m1\",\"messages\":[{\"text\":\"hello\"}]}\n\n"
	okResp   = "HTTP/1.1 200 OK\nContent-Type: application/json\nContent-Length: 9\n\n{\"ok\":1}\n"
	modelReq = "GET https://api.example.com/v1/models?limit=5 HTTP/1.1\nHost: api.example.com\n\n"
)

var chatReq = fmt.Sprintf("POST https://api.example.com/v1/chat HTTP/1.1\nHost: api.example.com\nContent-Length: %d\n\n%s", len(chatBody), chatBody)

func TestReplayNoMatch(t *testing.T) {
	t.Parallel()
	path := writeFile(t, "chat.record", recording([2]string{chatReq, okResp}, [2]string{modelReq, okResp}))
	tests := []struct {
		name, method, url, body, want string
	}{
		{
			name:   "different body",
			method: "POST", url: "https://api.example.com/v1/chat",
			body: "{\"model\":\"m2\",\"messages\":[{\"text\":\"hello\"}]}\n\n",
			want: `POST https://api.example.com/v1/chat; closest is exchange 1, same method and URL, body differs at byte 11: ` +
				`recorded "{\"model\":\"m1\",\"messages\":[{\"tex"..., got "{\"model\":\"m2\",\"messages\":[{\"tex"...`,
		},
		{
			name:   "longer body",
			method: "POST", url: "https://api.example.com/v1/chat",
			body: "{\"model\":\"m1\",\"messages\":[{\"text\":\"hello\"}]}\n\nmore",
			want: `POST https://api.example.com/v1/chat; closest is exchange 1, same method and URL, body differs at byte 46: ` +
				`recorded ..."{\"text\":\"hello\"}]}\n\n" (end), got ..."{\"text\":\"hello\"}]}\n\nmore" (end)`,
		},
		{
			name:   "different method",
			method: "GET", url: "https://api.example.com/v1/chat",
			want: `GET https://api.example.com/v1/chat; closest is exchange 1, same URL, method POST`,
		},
		{
			name:   "different query",
			method: "GET", url: "https://api.example.com/v1/models?limit=6",
			want: `GET https://api.example.com/v1/models?limit=6; closest is exchange 2, GET https://api.example.com/v1/models?limit=5`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tr := open(t, path, record.Replay, offline(t))
			var body io.Reader
			if tt.body != "" {
				body = strings.NewReader(tt.body)
			}
			req, err := http.NewRequest(tt.method, tt.url, body)
			if err != nil {
				t.Fatal(err)
			}
			_, err = tr.RoundTrip(req)
			if !errors.Is(err, record.ErrNoMatch) {
				t.Fatalf("error %v, want ErrNoMatch", err)
			}
			want := "record: " + path + ": no recorded exchange matches " + tt.want
			if diff := cmp.Diff(want, err.Error()); diff != "" {
				t.Errorf("error (-want +got):\n%s", diff)
			}
		})
	}

	t.Run("empty recording", func(t *testing.T) {
		t.Parallel()
		tr := open(t, writeFile(t, "empty.record", recording()), record.Replay, offline(t))
		_, err := try(tr.Client(), "GET", "https://api.example.com/", "")
		if err == nil || !strings.Contains(err.Error(), "GET https://api.example.com/; the recording has no exchanges") {
			t.Errorf("error %v, want one saying the recording is empty", err)
		}
	})
}

func TestUnused(t *testing.T) {
	t.Parallel()
	tr := open(t, writeFile(t, "chat.record", recording([2]string{chatReq, okResp}, [2]string{modelReq, okResp})), record.Replay, offline(t))
	do(t, tr.Client(), "GET", "https://api.example.com/v1/models?limit=5", "")
	want := []string{"exchange 1: POST https://api.example.com/v1/chat"}
	if diff := cmp.Diff(want, tr.Unused()); diff != "" {
		t.Errorf("Unused() (-want +got):\n%s", diff)
	}
}

func TestScrub(t *testing.T) {
	t.Parallel()
	headers := []string{"Authorization", "Proxy-Authorization", "X-Api-Key", "Api-Key", "Cookie",
		"OpenAI-Organization", "OpenAI-Project", "X-Goog-Api-Key", "X-Custom-Secret"}
	params := []string{"key", "api_key", "apikey", "token", "API_KEY", "sig"}

	var mu sync.Mutex
	received := http.Header{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		received = r.Header.Clone()
		mu.Unlock()
		http.SetCookie(w, &http.Cookie{Name: "session", Value: "secret-set-cookie"})
		w.Header().Set("X-Api-Key", "secret-response-key")
		io.WriteString(w, "ok")
	}))
	defer srv.Close()

	send := func(c *http.Client, n int) got {
		t.Helper()
		q := make([]string, len(params))
		for i, p := range params {
			q[i] = fmt.Sprintf("%s=secret-q%d-%d", p, i, n)
		}
		url := strings.Replace(srv.URL, "//", "//user:secret-userinfo@", 1) + "/v1/chat?model=m&" + strings.Join(q, "&") + "&x=y#frag"
		req, err := http.NewRequest("POST", url, strings.NewReader(`{"password":"secret-body"}`))
		if err != nil {
			t.Fatal(err)
		}
		for _, h := range headers {
			req.Header.Set(h, fmt.Sprintf("secret-%s-%d", h, n))
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return got{resp.Status, resp.StatusCode, resp.Header, string(b)}
	}
	opts := []record.Option{
		record.ScrubHeader("x-custom-secret"),
		record.ScrubQuery("sig"),
		record.ScrubBody(func(b []byte) []byte {
			return bytes.ReplaceAll(b, []byte("secret-body"), []byte("BODY-REDACTED"))
		}),
	}

	path := filepath.Join(t.TempDir(), "scrub.record")
	rec := open(t, path, record.Record, nil, opts...)
	live := send(rec.Client(), 1)
	closeT(t, rec)

	// Scrubbing is for the file only.
	mu.Lock()
	if got, want := received.Get("X-Goog-Api-Key"), "secret-X-Goog-Api-Key-1"; got != want {
		t.Errorf("server got X-Goog-Api-Key %q, want %q", got, want)
	}
	mu.Unlock()
	if got := live.Header.Get("Set-Cookie"); !strings.Contains(got, "secret-set-cookie") {
		t.Errorf("caller got Set-Cookie %q, want the server's", got)
	}

	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if i := bytes.Index(data, []byte("secret")); i >= 0 {
		t.Errorf("recording holds a secret at byte %d:\n%s", i, data)
	}
	for _, want := range append(headers, "Set-Cookie") {
		if !bytes.Contains(data, []byte("\n"+http.CanonicalHeaderKey(want)+": REDACTED\n")) {
			t.Errorf("recording lacks %q: REDACTED:\n%s", want, data)
		}
	}
	for _, p := range params {
		if !bytes.Contains(data, []byte(p+"=REDACTED")) {
			t.Errorf("recording lacks %s=REDACTED:\n%s", p, data)
		}
	}

	// Other secrets still match the scrubbed recording.
	rep := open(t, path, record.Replay, offline(t), opts...)
	if got := send(rep.Client(), 2); got.Body != live.Body {
		t.Errorf("replayed body %q, want %q", got.Body, live.Body)
	}
}

func TestOpenBadFile(t *testing.T) {
	t.Parallel()
	good := [2]string{modelReq, okResp}
	tests := []struct {
		name, content, want string
	}{
		{"empty", "", `not a recording: first line is "", want "agentrt-record v1"`},
		{"wrong header", "httprr trace v1\n", `not a recording: first line is "httprr trace v1", want "agentrt-record v1"`},
		{"truncated line", recording(good) + "request 10 resp", `exchange 2: truncated: the file ends inside the line "request 10 resp"`},
		{"malformed line", recording(good) + "request ten response 3\n", `exchange 2: malformed line "request ten response 3", want "request <bytes> response <bytes>"`},
		{"negative length", "agentrt-record v1\nrequest -1 response 3\n", `exchange 1: malformed line "request -1 response 3"`},
		{"truncated request", recording(good)[:60], fmt.Sprintf(`exchange 1: truncated: the request is %d bytes and a newline, but 19 bytes are left`, len(modelReq))},
		{"truncated response", strings.TrimSuffix(recording(good), "\n"), fmt.Sprintf(`exchange 1: truncated: the response is %d bytes and a newline, but %[1]d bytes are left`, len(okResp))},
		{"request length overruns", strings.Replace(recording(good), fmt.Sprintf("request %d", len(modelReq)), fmt.Sprintf("request %d", len(modelReq)+1), 1),
			fmt.Sprintf(`exchange 1: the request of %d bytes is followed by 'H', not a newline: is its length right?`, len(modelReq)+1)},
		{"response length overruns", strings.Replace(recording(good), fmt.Sprintf("response %d", len(okResp)), "response 999999999", 1),
			fmt.Sprintf(`exchange 1: truncated: the response is 999999999 bytes and a newline, but %d bytes are left`, len(okResp)+1)},
		{"unparseable request", recording([2]string{"hello", okResp}), `exchange 1: request: malformed HTTP request "hello"`},
		{"relative URL", recording([2]string{"GET /v1/models HTTP/1.1\nHost: x\n\n", okResp}), `exchange 1: request: URL "/v1/models" is not absolute`},
		{"request body longer than Content-Length", recording([2]string{strings.Replace(chatReq, "Content-Length: 46", "Content-Length: 40", 1), okResp}), `exchange 1: request: 6 bytes after the body of 40 bytes: does Content-Length match?`},
		{"request body shorter than Content-Length", recording([2]string{strings.Replace(chatReq, "Content-Length: 46", "Content-Length: 50", 1), okResp}), `exchange 1: request: body: unexpected EOF`},
		{"unparseable response", recording(good, [2]string{modelReq, "HTTP/1.1 OK\n\n"}), `exchange 2: response: malformed HTTP status code "OK"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			path := writeFile(t, "bad.record", tt.content)
			for _, m := range []record.Mode{record.Replay, record.ReplayOrRecord} {
				_, err := record.Open(path, m, nil)
				want := "record: " + path + ": " + tt.want
				if err == nil || !strings.HasPrefix(err.Error(), want) {
					t.Errorf("Open(%v) = %v, want error starting %q", m, err, want)
				}
			}
		})
	}

	t.Run("missing", func(t *testing.T) {
		t.Parallel()
		path := filepath.Join(t.TempDir(), "missing.record")
		_, err := record.Open(path, record.Replay, nil)
		if !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), path) {
			t.Errorf("Open = %v, want fs.ErrNotExist naming %s", err, path)
		}
	})

	t.Run("invalid mode", func(t *testing.T) {
		t.Parallel()
		if _, err := record.Open("x.record", record.Mode(7), nil); err == nil || !strings.Contains(err.Error(), "invalid mode Mode(7)") {
			t.Errorf("Open = %v, want an invalid mode error", err)
		}
	})
}

func TestReplayOrRecord(t *testing.T) {
	t.Parallel()
	srv := newServer(t)
	path := filepath.Join(t.TempDir(), "first.record")

	first := open(t, path, record.ReplayOrRecord, nil)
	if first.Mode() != record.Record {
		t.Fatalf("without a file: Mode() = %v, want Record", first.Mode())
	}
	live := do(t, first.Client(), "POST", srv.URL+"/v1/chat", `{"q":"x"}`)
	closeT(t, first)
	srv.Close()

	second := open(t, path, record.ReplayOrRecord, offline(t))
	if second.Mode() != record.Replay {
		t.Fatalf("with a file: Mode() = %v, want Replay", second.Mode())
	}
	if g := do(t, second.Client(), "POST", srv.URL+"/v1/chat", `{"q":"x"}`); g.Body != live.Body {
		t.Errorf("replayed body %q, want %q", g.Body, live.Body)
	}
	closeT(t, second)
}

func TestRecordFailingTransport(t *testing.T) {
	t.Parallel()
	srv := newServer(t)
	boom := errors.New("connection refused")
	next := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		if r.URL.Path == "/v1/fail" {
			r.Body.Close()
			return nil, boom
		}
		return http.DefaultTransport.RoundTrip(r)
	})
	path := filepath.Join(t.TempDir(), "fail.record")
	rec := open(t, path, record.Record, next)
	req, err := http.NewRequest("POST", srv.URL+"/v1/fail", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rec.RoundTrip(req); !errors.Is(err, boom) {
		t.Errorf("RoundTrip error %v, want %v", err, boom)
	}
	do(t, rec.Client(), "POST", srv.URL+"/v1/chat", "{}")
	closeT(t, rec)

	rep := open(t, path, record.Replay, offline(t))
	want := []string{"exchange 1: POST " + srv.URL + "/v1/chat"}
	if diff := cmp.Diff(want, rep.Unused()); diff != "" {
		t.Errorf("recorded exchanges (-want +got):\n%s", diff)
	}
}

// onceReader is a request body that net/http cannot rewind by itself.
type onceReader struct{ io.Reader }

func TestRecordRestoresBody(t *testing.T) {
	t.Parallel()
	srv := newServer(t)
	path := filepath.Join(t.TempDir(), "body.record")
	rec := open(t, path, record.Record, nil)

	withGetBody, err := http.NewRequest("POST", srv.URL+"/v1/chat", strings.NewReader(`{"a":1}`))
	if err != nil {
		t.Fatal(err)
	}
	withoutGetBody, err := http.NewRequest("POST", srv.URL+"/v1/chat", onceReader{strings.NewReader(`{"b":2}`)})
	if err != nil {
		t.Fatal(err)
	}
	if withGetBody.GetBody == nil || withoutGetBody.GetBody != nil {
		t.Fatal("test requests do not have and lack GetBody as meant")
	}
	var bodies []string
	for _, req := range []*http.Request{withGetBody, withoutGetBody} {
		resp, err := rec.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		bodies = append(bodies, string(b))
	}
	closeT(t, rec)
	want := []string{`{"call":1,"echo":{"a":1}}`, `{"call":2,"echo":{"b":2}}`}
	if diff := cmp.Diff(want, bodies); diff != "" {
		t.Errorf("server echoes (-want +got):\n%s", diff)
	}

	rep := open(t, path, record.Replay, offline(t))
	for i, body := range []string{`{"a":1}`, `{"b":2}`} {
		if g := do(t, rep.Client(), "POST", srv.URL+"/v1/chat", body); g.Body != want[i] {
			t.Errorf("replayed %s: %q, want %q", body, g.Body, want[i])
		}
	}
}

func TestClose(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "new", "dir")
	path := filepath.Join(dir, "empty.record")
	rec := open(t, path, record.Record, nil)
	closeT(t, rec)
	closeT(t, rec) // idempotent

	if _, err := try(rec.Client(), "GET", "http://127.0.0.1:1/", ""); err == nil || !strings.Contains(err.Error(), "transport is closed") {
		t.Errorf("RoundTrip after Close: %v, want a closed error", err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || entries[0].Name() != "empty.record" {
		t.Errorf("directory holds %v, want just empty.record", entries)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(data) != "agentrt-record v1\n" {
		t.Errorf("empty recording is %q", data)
	}
}

func TestConcurrent(t *testing.T) {
	t.Parallel()
	srv := newServer(t)
	path := filepath.Join(t.TempDir(), "concurrent.record")
	const n = 16

	run := func(tr *record.Transport) []string {
		bodies := make([]string, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				g, err := try(tr.Client(), "POST", srv.URL+"/v1/chat", fmt.Sprintf(`{"i":%d}`, i))
				if err != nil {
					t.Error(err)
					return
				}
				// Strip the call counter, which depends on scheduling.
				_, bodies[i], _ = strings.Cut(g.Body, ",")
			})
			wg.Go(func() { tr.Unused() })
		}
		wg.Wait()
		return bodies
	}

	rec := open(t, path, record.Record, nil)
	live := run(rec)
	closeT(t, rec)
	srv.Close()

	rep := open(t, path, record.Replay, offline(t))
	if diff := cmp.Diff(live, run(rep)); diff != "" {
		t.Errorf("replayed bodies (-live +replayed):\n%s", diff)
	}
	if u := rep.Unused(); len(u) != 0 {
		t.Errorf("Unused() = %q", u)
	}
}
