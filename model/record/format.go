package record

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
)

// header is the first line of every recording.
const header = "agentrt-record v1\n"

// An exchange is a recorded request and its response, as read for replay.
type exchange struct {
	n      int // 1-based position in the file
	method string
	url    string
	body   []byte

	status      string
	statusCode  int
	proto       string
	protoMajor  int
	protoMinor  int
	header      http.Header
	respBody    []byte
	respBodyLen int64 // the response's ContentLength
}

// response returns a fresh response for req, with a body over the
// recorded bytes.
func (ex *exchange) response(req *http.Request) *http.Response {
	return &http.Response{
		Status:        ex.status,
		StatusCode:    ex.statusCode,
		Proto:         ex.proto,
		ProtoMajor:    ex.protoMajor,
		ProtoMinor:    ex.protoMinor,
		Header:        ex.header.Clone(),
		Body:          io.NopCloser(bytes.NewReader(ex.respBody)),
		ContentLength: ex.respBodyLen,
		Request:       req,
	}
}

// appendExchange appends one exchange in the file format to dst.
func appendExchange(dst, req, resp []byte) []byte {
	dst = fmt.Appendf(dst, "request %d response %d\n", len(req), len(resp))
	dst = append(dst, req...)
	dst = append(dst, '\n')
	dst = append(dst, resp...)
	return append(dst, '\n')
}

// writeRequest serializes req with the given URL, header and body.
func writeRequest(req *http.Request, url string, h http.Header, body []byte) []byte {
	method := req.Method
	if method == "" {
		method = http.MethodGet
	}
	host := req.Host
	if host == "" {
		host = req.URL.Host
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "%s %s HTTP/1.1\n", method, url)
	fmt.Fprintf(&b, "Host: %s\n", sanitize(host))
	writeHeader(&b, h, "Host")
	if len(body) > 0 {
		fmt.Fprintf(&b, "Content-Length: %d\n", len(body))
	}
	b.WriteByte('\n')
	b.Write(body)
	return b.Bytes()
}

// writeResponse serializes resp with the given header and body.
func writeResponse(resp *http.Response, h http.Header, body []byte) []byte {
	proto := resp.Proto
	if proto == "" {
		proto = "HTTP/1.1"
	}
	code := strconv.Itoa(resp.StatusCode)
	text := strings.TrimPrefix(resp.Status, code+" ")
	if resp.Status == "" {
		text = http.StatusText(resp.StatusCode)
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "%s %s %s\n", proto, code, sanitize(text))
	writeHeader(&b, h)
	fmt.Fprintf(&b, "Content-Length: %d\n\n", len(body))
	b.Write(body)
	return b.Bytes()
}

// writeHeader writes h sorted by key, one line per value, leaving out the
// framing headers, which the writers set themselves, and skip.
func writeHeader(b *bytes.Buffer, h http.Header, skip ...string) {
	for _, k := range slices.Sorted(maps.Keys(h)) {
		switch ck := http.CanonicalHeaderKey(k); {
		case ck == "Content-Length", ck == "Transfer-Encoding", ck == "Trailer", slices.Contains(skip, ck):
			continue
		}
		for _, v := range h[k] {
			fmt.Fprintf(b, "%s: %s\n", k, sanitize(v))
		}
	}
}

// sanitize makes v fit on one header line, as net/http does.
func sanitize(v string) string {
	return strings.TrimSpace(strings.NewReplacer("\r", " ", "\n", " ").Replace(v))
}

// parseFile reads a recording; path labels errors.
func parseFile(path string, data []byte) ([]*exchange, error) {
	first, rest, ok := bytes.Cut(data, []byte("\n"))
	if !ok || string(first)+"\n" != header {
		return nil, fmt.Errorf("record: %s: not a recording: first line is %s, want %q", path, quoteShort(first), strings.TrimSuffix(header, "\n"))
	}
	var exs []*exchange
	for n := 1; len(rest) > 0; n++ {
		var ex *exchange
		var err error
		ex, rest, err = parseExchange(n, rest)
		if err != nil {
			return nil, fmt.Errorf("record: %s: exchange %d: %w", path, n, err)
		}
		exs = append(exs, ex)
	}
	return exs, nil
}

// parseExchange reads exchange n from the start of data and returns the
// rest.
func parseExchange(n int, data []byte) (*exchange, []byte, error) {
	line, rest, ok := bytes.Cut(data, []byte("\n"))
	if !ok {
		return nil, nil, fmt.Errorf("truncated: the file ends inside the line %s", quoteShort(line))
	}
	reqLen, respLen, err := parseLengths(string(line))
	if err != nil {
		return nil, nil, err
	}
	reqBytes, rest, err := cutBlob("request", reqLen, rest)
	if err != nil {
		return nil, nil, err
	}
	respBytes, rest, err := cutBlob("response", respLen, rest)
	if err != nil {
		return nil, nil, err
	}

	req, body, err := parseRequest(reqBytes)
	if err != nil {
		return nil, nil, fmt.Errorf("request: %w", err)
	}
	ex := &exchange{n: n, method: req.Method, url: req.RequestURI, body: body}
	if err := ex.parseResponse(respBytes, req); err != nil {
		return nil, nil, fmt.Errorf("response: %w", err)
	}
	return ex, rest, nil
}

// parseLengths reads a line "request <n> response <m>".
func parseLengths(line string) (req, resp int, err error) {
	f := strings.Split(line, " ")
	if len(f) == 4 && f[0] == "request" && f[2] == "response" {
		req, err1 := strconv.ParseUint(f[1], 10, 31)
		resp, err2 := strconv.ParseUint(f[3], 10, 31)
		if err1 == nil && err2 == nil {
			return int(req), int(resp), nil
		}
	}
	return 0, 0, fmt.Errorf("malformed line %s, want \"request <bytes> response <bytes>\"", quoteShort([]byte(line)))
}

// cutBlob cuts n bytes and the newline after them from the start of data.
func cutBlob(what string, n int, data []byte) (blob, rest []byte, err error) {
	if n >= len(data) {
		return nil, nil, fmt.Errorf("truncated: the %s is %d bytes and a newline, but %d bytes are left", what, n, len(data))
	}
	if data[n] != '\n' {
		return nil, nil, fmt.Errorf("the %s of %d bytes is followed by %q, not a newline: is its length right?", what, n, data[n])
	}
	return data[:n], data[n+1:], nil
}

func parseRequest(b []byte) (*http.Request, []byte, error) {
	r := bytes.NewReader(b)
	br := bufio.NewReader(r)
	req, err := http.ReadRequest(br)
	if err != nil {
		return nil, nil, err
	}
	if !req.URL.IsAbs() || req.URL.Host == "" {
		return nil, nil, fmt.Errorf("URL %q is not absolute", req.RequestURI)
	}
	body, err := readBody(req.Body, br, r)
	if err != nil {
		return nil, nil, err
	}
	return req, body, nil
}

func (ex *exchange) parseResponse(b []byte, req *http.Request) error {
	r := bytes.NewReader(b)
	br := bufio.NewReader(r)
	resp, err := http.ReadResponse(br, req)
	if err != nil {
		return err
	}
	body, err := readBody(resp.Body, br, r)
	if err != nil {
		return err
	}
	ex.status = resp.Status
	ex.statusCode = resp.StatusCode
	ex.proto, ex.protoMajor, ex.protoMinor = resp.Proto, resp.ProtoMajor, resp.ProtoMinor
	ex.header = resp.Header
	ex.respBody = body
	ex.respBodyLen = resp.ContentLength
	return nil
}

// readBody reads a parsed message's body and checks that it took all
// the message's bytes, which br buffers from r.
func readBody(body io.ReadCloser, br *bufio.Reader, r *bytes.Reader) ([]byte, error) {
	b, err := io.ReadAll(body)
	if err != nil {
		return nil, fmt.Errorf("body: %w", err)
	}
	if left := br.Buffered() + r.Len(); left > 0 {
		return nil, fmt.Errorf("%d bytes after the body of %d bytes: does Content-Length match?", left, len(b))
	}
	return b, nil
}

// quoteShort quotes b, cut short if it is long.
func quoteShort(b []byte) string {
	const limit = 60
	if len(b) > limit {
		return strconv.Quote(string(b[:limit])) + "..."
	}
	return strconv.Quote(string(b))
}

// closest explains why no exchange matched a request, naming the
// recorded request nearest to it. t.mu must be held.
func (t *Transport) closest(method, url string, body []byte) string {
	if len(t.replay) == 0 {
		return "; the recording has no exchanges"
	}
	var replayed []string // exchanges that matched but were used
	var best *exchange    // same method and URL, longest common body prefix
	bestUsed, bestPrefix := false, -1
	var sameURL *exchange
	for i, ex := range t.replay {
		if ex.url != url {
			continue
		}
		if ex.method != method {
			if sameURL == nil {
				sameURL = ex
			}
			continue
		}
		if bytes.Equal(ex.body, body) {
			replayed = append(replayed, strconv.Itoa(ex.n))
			continue
		}
		p := commonPrefix(ex.body, body)
		if best == nil || (bestUsed && !t.used[i]) || (bestUsed == t.used[i] && p > bestPrefix) {
			best, bestUsed, bestPrefix = ex, t.used[i], p
		}
	}
	switch {
	case len(replayed) == 1:
		return fmt.Sprintf("; exchange %s recorded it but was already replayed", replayed[0])
	case len(replayed) > 1:
		return fmt.Sprintf("; exchanges %s recorded it but were all already replayed", strings.Join(replayed, ", "))
	case best != nil:
		used := ""
		if bestUsed {
			used = " (already replayed)"
		}
		return fmt.Sprintf("; closest is exchange %d%s, same method and URL, body differs at byte %d: recorded %s, got %s",
			best.n, used, bestPrefix, snippet(best.body, bestPrefix), snippet(body, bestPrefix))
	case sameURL != nil:
		return fmt.Sprintf("; closest is exchange %d, same URL, method %s", sameURL.n, sameURL.method)
	}
	near, nearPrefix := t.replay[0], -1
	for _, ex := range t.replay {
		if p := commonPrefix([]byte(ex.url), []byte(url)); p > nearPrefix {
			near, nearPrefix = ex, p
		}
	}
	return fmt.Sprintf("; closest is exchange %d, %s %s", near.n, near.method, near.url)
}

func commonPrefix(a, b []byte) int {
	n := min(len(a), len(b))
	for i := range n {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}

// snippet quotes the bytes of b around offset i.
func snippet(b []byte, i int) string {
	const around = 20
	start, end := max(0, i-around), min(len(b), i+around)
	s := strconv.Quote(string(b[start:end]))
	if start > 0 {
		s = "..." + s
	}
	if end < len(b) {
		s += "..."
	} else {
		s += " (end)"
	}
	return s
}
