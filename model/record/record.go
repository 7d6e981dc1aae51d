// Package record pins a program's HTTP traffic with a model provider in a
// file, so that tests run offline against the real wire bytes.
//
// A Transport is an http.RoundTripper. In Record mode it sends every
// request through a real transport and, on Close, writes the exchanges to
// a file; in Replay mode it answers from that file and never touches the
// network:
//
//	tr, err := record.Open("testdata/chat.record", record.ReplayOrRecord, nil)
//	if err != nil {
//		t.Fatal(err)
//	}
//	t.Cleanup(func() {
//		if err := tr.Close(); err != nil {
//			t.Error(err)
//		}
//	})
//	client := tr.Client() // hand this to the provider
//
// ReplayOrRecord records on the first run, when the file does not exist
// yet, and replays from then on; delete the file to record afresh.
//
// # Matching
//
// A request matches a recorded exchange when its method, URL (with
// credentials scrubbed from the query) and body (after the ScrubBody
// options) are the same, byte for byte. Headers do not take part. Each
// recorded exchange is replayed once, the first unused match winning, so a
// request made twice replays the two responses recorded for it in order.
// A request with no match fails with an error wrapping ErrNoMatch that
// names the closest recorded request and where it differs.
//
// # Credentials
//
// The values of the headers Authorization, Proxy-Authorization, X-Api-Key,
// Api-Key, Cookie, Set-Cookie, OpenAI-Organization, OpenAI-Project and
// X-Goog-Api-Key, and of the query parameters key, api_key, apikey and token
// (in any case), are written to the file as REDACTED, as are those named by
// ScrubHeader and ScrubQuery. Scrubbing changes only the file: the real
// server still receives the credentials and the caller still sees the
// server's response headers as sent.
//
// # File format
//
// A recording is text: the line "agentrt-record v1", then the exchanges one
// after another. Each is a line "request <n> response <m>", then n bytes of
// request, a newline, m bytes of response and a newline:
//
//	agentrt-record v1
//	request 158 response 83
//	POST https://api.example.com/v1/chat HTTP/1.1
//	Host: api.example.com
//	Authorization: REDACTED
//	Content-Type: application/json
//	Content-Length: 15
//
//	{"prompt":"hi"}
//	HTTP/1.1 200 OK
//	Content-Type: application/json
//	Content-Length: 16
//
//	{"text":"Hello"}
//
// The request is in HTTP/1.1 form with an absolute URL and the response in
// HTTP form with the body de-chunked and a Content-Length; both have their
// headers sorted, end header lines with a bare newline, and hold bodies as
// the exact bytes. Trailers are not recorded. A replayed response
// therefore always has a Content-Length, even when the live one was
// chunked. Bodies may contain CR LF, so mark recordings -text in
// .gitattributes to keep Git from rewriting them.
//
// Recording reads a whole response before RoundTrip returns it, so a
// stream arrives at once while recording; replay hands the body out
// through an ordinary reader, so it reads incrementally.
package record

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
)

// Mode says whether a Transport replays, records or decides by itself.
type Mode int

// The modes of Open.
const (
	// Replay serves only from the file; a request not in it is an error.
	Replay Mode = iota
	// Record sends every request through the wrapped transport and writes
	// the exchanges to the file on Close, replacing it.
	Record
	// ReplayOrRecord replays if the file exists, else records.
	ReplayOrRecord
)

// String returns the mode's name, as in "Replay".
func (m Mode) String() string {
	switch m {
	case Replay:
		return "Replay"
	case Record:
		return "Record"
	case ReplayOrRecord:
		return "ReplayOrRecord"
	}
	return fmt.Sprintf("Mode(%d)", int(m))
}

// ErrNoMatch is wrapped by the error RoundTrip returns in replay for a
// request that matches no unused recorded exchange.
var ErrNoMatch = errors.New("no recorded exchange matches")

// An Option configures Open.
type Option struct{ apply func(*scrubber) }

// ScrubHeader adds request and response headers whose values are written
// to the file as REDACTED.
func ScrubHeader(names ...string) Option {
	return Option{func(s *scrubber) {
		for _, n := range names {
			s.headers[http.CanonicalHeaderKey(n)] = true
		}
	}}
}

// ScrubQuery adds URL query parameters whose values are written to the file
// as REDACTED. Names match in any case.
func ScrubQuery(params ...string) Option {
	return Option{func(s *scrubber) {
		for _, p := range params {
			s.query[strings.ToLower(p)] = true
		}
	}}
}

// ScrubBody adds a function that rewrites request bodies before they are
// recorded and before they are matched in replay. It must not modify its
// argument, and should return the same bytes for the same input. Several
// ScrubBody options apply in order. Response bodies are recorded as
// received.
func ScrubBody(f func([]byte) []byte) Option {
	return Option{func(s *scrubber) { s.body = append(s.body, f) }}
}

// A Transport records or replays HTTP exchanges; see the package doc.
// RoundTrip, Unused and Close may be called concurrently.
type Transport struct {
	path  string
	mode  Mode // Replay or Record, never ReplayOrRecord
	next  http.RoundTripper
	scrub *scrubber

	// inflight counts RoundTrips under way, so that Close in Record mode
	// writes only after they have finished.
	inflight sync.WaitGroup

	closeOnce sync.Once
	closeErr  error // set by the first Close

	mu       sync.Mutex // guards the fields below
	closed   bool
	replay   []*exchange // Replay mode: the file's exchanges
	used     []bool      // Replay mode: used[i] once replay[i] has been served
	recorded [][]byte    // Record mode: serialized exchanges, in completion order
}

// Open returns a Transport for the recording at path in mode m. In Replay
// mode, and in ReplayOrRecord mode when the file exists, it reads and checks
// the whole file. next is the transport that Record mode sends requests
// through; nil means http.DefaultTransport.
func Open(path string, m Mode, next http.RoundTripper, opts ...Option) (*Transport, error) {
	t := &Transport{path: path, mode: m, next: next, scrub: newScrubber(opts)}
	if t.next == nil {
		t.next = http.DefaultTransport
	}
	switch m {
	case Replay:
	case Record:
		return t, nil
	case ReplayOrRecord:
		t.mode = Replay
		if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
			t.mode = Record
			return t, nil
		}
	default:
		return nil, fmt.Errorf("record: %s: invalid mode %v", path, m)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("record: %w (run in Record mode to create it)", err)
		}
		return nil, fmt.Errorf("record: %w", err)
	}
	t.replay, err = parseFile(path, data)
	if err != nil {
		return nil, err
	}
	t.used = make([]bool, len(t.replay))
	return t, nil
}

// Mode reports whether t replays or records: Replay or Record, never
// ReplayOrRecord.
func (t *Transport) Mode() Mode { return t.mode }

// Client returns an http.Client that sends its requests through t. It has
// no timeout.
func (t *Transport) Client() *http.Client { return &http.Client{Transport: t} }

var errClosed = errors.New("transport is closed")

// RoundTrip records or replays one exchange. In Record mode an error from
// the wrapped transport, or from reading the response body, is returned
// as is and the exchange is not recorded.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		closeBody(req)
		return nil, fmt.Errorf("record: %s: %w", t.path, errClosed)
	}
	t.inflight.Add(1)
	t.mu.Unlock()
	defer t.inflight.Done()

	if t.mode == Record {
		return t.record(req)
	}
	return t.replayOne(req)
}

func (t *Transport) record(req *http.Request) (*http.Response, error) {
	body, send, err := readRequestBody(req)
	if err != nil {
		return nil, fmt.Errorf("record: %s: reading request body: %w", t.path, err)
	}
	resp, err := t.next.RoundTrip(send)
	if err != nil {
		return nil, err
	}
	respBody, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	ex := appendExchange(nil,
		writeRequest(req, t.scrub.url(req.URL), t.scrub.header(req.Header), t.scrub.applyBody(body)),
		writeResponse(resp, t.scrub.header(resp.Header), respBody))

	t.mu.Lock()
	t.recorded = append(t.recorded, ex)
	t.mu.Unlock()

	resp.Body = io.NopCloser(bytes.NewReader(respBody))
	resp.Request = req
	return resp, nil
}

func (t *Transport) replayOne(req *http.Request) (*http.Response, error) {
	body, err := readAllBody(req)
	if err != nil {
		return nil, fmt.Errorf("record: %s: reading request body: %w", t.path, err)
	}
	if err := req.Context().Err(); err != nil {
		return nil, err
	}
	method, url, body := req.Method, t.scrub.url(req.URL), t.scrub.applyBody(body)
	if method == "" {
		method = http.MethodGet
	}

	t.mu.Lock()
	defer t.mu.Unlock()
	for i, ex := range t.replay {
		if !t.used[i] && ex.method == method && ex.url == url && bytes.Equal(ex.body, body) {
			t.used[i] = true
			return ex.response(req), nil
		}
	}
	return nil, fmt.Errorf("record: %s: %w %s %s%s", t.path, ErrNoMatch, method, url, t.closest(method, url, body))
}

// Unused describes the recorded exchanges that have not been replayed, as
// in "exchange 2: POST https://api.example.com/v1/chat". It returns nil in
// Record mode.
func (t *Transport) Unused() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []string
	for i, ex := range t.replay {
		if !t.used[i] {
			out = append(out, fmt.Sprintf("exchange %d: %s %s", ex.n, ex.method, ex.url))
		}
	}
	return out
}

// Close ends t; later RoundTrips fail. In Record mode it waits for the
// RoundTrips under way and then writes the file, atomically, creating its
// directory if need be. Close is idempotent: every call returns the first
// call's result.
func (t *Transport) Close() error {
	t.closeOnce.Do(func() {
		t.mu.Lock()
		t.closed = true
		t.mu.Unlock()
		if t.mode != Record {
			return
		}
		t.inflight.Wait()
		t.mu.Lock()
		data := slices.Concat(append([][]byte{[]byte(header)}, t.recorded...)...)
		t.mu.Unlock()
		t.closeErr = writeFileAtomic(t.path, data)
	})
	return t.closeErr
}

func writeFileAtomic(path string, data []byte) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("record: %w", err)
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("record: %w", err)
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Chmod(0o644)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		os.Remove(f.Name())
		return fmt.Errorf("record: writing %s: %w", path, err)
	}
	return nil
}

// readRequestBody returns the body of req and a request to send in its
// place that still carries it. When req has GetBody, the body is read
// from a copy and req itself is sent, untouched.
func readRequestBody(req *http.Request) ([]byte, *http.Request, error) {
	if req.Body == nil || req.Body == http.NoBody {
		return nil, req, nil
	}
	if req.GetBody != nil {
		rc, err := req.GetBody()
		if err != nil {
			closeBody(req)
			return nil, nil, err
		}
		body, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			closeBody(req)
			return nil, nil, err
		}
		return body, req, nil
	}
	body, err := readAllBody(req)
	if err != nil {
		return nil, nil, err
	}
	send := req.Clone(req.Context())
	send.Body = io.NopCloser(bytes.NewReader(body))
	send.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	send.ContentLength = int64(len(body))
	return body, send, nil
}

// readAllBody reads and closes req's body, as a RoundTripper must.
func readAllBody(req *http.Request) ([]byte, error) {
	if req.Body == nil {
		return nil, nil
	}
	defer req.Body.Close()
	return io.ReadAll(req.Body)
}

func closeBody(req *http.Request) {
	if req.Body != nil {
		req.Body.Close()
	}
}
