package llmhttp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/agentrt/agentrt/model"
)

var testCall = &Call{Provider: "openai", Model: "gpt-test"}

func TestBodyError(t *testing.T) {
	t.Parallel()
	html := http.Header{"Content-Type": {"text/html; charset=utf-8"}}
	no := false
	tests := []struct {
		name      string
		status    int
		h         http.Header
		body      string
		code      model.ErrorCode
		msg       string
		retryable *bool // nil: the code decides
	}{
		{"openai context length", 400, nil,
			`{"error":{"message":"This model's maximum context length is 128000 tokens.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`,
			model.CodeContextLength, "This model's maximum context length is 128000 tokens.", nil},
		{"openai bad request", 400, nil,
			`{"error":{"message":"Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.","type":"invalid_request_error","param":"messages.[2].role","code":null}}`,
			model.CodeBadRequest, "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.", nil},
		{"openai auth", 401, nil,
			`{"error":{"message":"Incorrect API key provided: sk-test.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`,
			model.CodeAuth, "Incorrect API key provided: sk-test.", nil},
		{"openai rate limit", 429, nil,
			`{"error":{"message":"Rate limit reached for gpt-4o","type":"tokens","param":null,"code":"rate_limit_exceeded"}}`,
			model.CodeRateLimited, "Rate limit reached for gpt-4o", nil},
		{"openai quota: not worth a retry", 429, nil,
			`{"error":{"message":"You exceeded your current quota.","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}`,
			model.CodeRateLimited, "You exceeded your current quota.", &no},
		{"openai server error", 500, nil,
			`{"error":{"message":"The server had an error while processing your request.","type":"server_error","code":500}}`,
			model.CodeServer, "The server had an error while processing your request.", nil},
		{"anthropic overloaded", 529, nil,
			`{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`,
			model.CodeServer, "Overloaded", nil},
		{"anthropic prompt too long", 400, nil,
			`{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 210000 tokens > 200000 maximum"}}`,
			model.CodeContextLength, "prompt is too long: 210000 tokens > 200000 maximum", nil},
		{"anthropic request too large", 413, nil,
			`{"type":"error","error":{"type":"request_too_large","message":"Request exceeds the maximum size"}}`,
			model.CodeContextLength, "Request exceeds the maximum size", nil},
		{"anthropic auth", 401, nil,
			`{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}`,
			model.CodeAuth, "invalid x-api-key", nil},
		{"ollama string error", 404, nil,
			`{"error":"model \"llama3\" not found, try pulling it first"}`,
			model.CodeBadRequest, `model "llama3" not found, try pulling it first`, nil},
		{"ollama string error, 500", 500, nil, `{"error":"llama runner process has terminated"}`,
			model.CodeServer, "llama runner process has terminated", nil},
		{"message only", 503, nil, `{"message":"Service temporarily unavailable","type":"unavailable"}`,
			model.CodeServer, "Service temporarily unavailable", nil},
		{"detail only", 404, nil, `{"detail":"Not Found"}`, model.CodeBadRequest, "Not Found", nil},
		{"the inner message wins", 400, nil, `{"error":{"message":"inner"},"message":"outer"}`, model.CodeBadRequest, "inner", nil},
		{"HTML with a title", 502, html,
			"<html>\n<head><title> 502 Bad Gateway </title></head>\n<body><center><h1>502 Bad Gateway</h1></center></body>\n</html>",
			model.CodeServer, "an HTML page (from a proxy?): 502 Bad Gateway", nil},
		{"HTML by its doctype", 503, nil, "<!DOCTYPE html><html><head><TITLE lang=en>Maintenance</TITLE></head></html>",
			model.CodeServer, "an HTML page (from a proxy?): Maintenance", nil},
		{"HTML without a title", 502, html, "<html><body>bad gateway</body></html>",
			model.CodeServer, "an HTML page (from a proxy?)", nil},
		{"plain text", 503, nil, "upstream connect error or disconnect/reset before headers\n",
			model.CodeServer, "upstream connect error or disconnect/reset before headers", nil},
		{"JSON that is not an error object", 500, nil, `{"status":"broken"}`, model.CodeServer, `{"status":"broken"}`, nil},
		{"broken JSON", 500, nil, `{"error":`, model.CodeServer, `{"error":`, nil},
		{"empty body", 500, nil, "", model.CodeServer, "empty response body", nil},
		{"blank body", 401, nil, " \r\n\t", model.CodeAuth, "empty response body", nil},
		{"invalid UTF-8", 500, nil, "bad \xff\xfe bytes", model.CodeServer, "bad \ufffd bytes", nil},
		{"invalid UTF-8 in JSON", 400, nil, "{\"error\":{\"message\":\"bad \xff\"}}", model.CodeBadRequest, "bad \ufffd", nil},

		// Status 0: an error event inside a stream; its type decides.
		{"stream: server error", 0, nil, `{"error":{"message":"The server had an error","type":"server_error"}}`,
			model.CodeServer, "The server had an error", nil},
		{"stream: anthropic rate limit", 0, nil, `{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}`,
			model.CodeRateLimited, "slow down", nil},
		{"stream: overloaded", 0, nil, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`,
			model.CodeServer, "Overloaded", nil},
		{"stream: invalid request", 0, nil, `{"error":{"message":"bad","type":"invalid_request_error"}}`,
			model.CodeBadRequest, "bad", nil},
		{"stream: auth", 0, nil, `{"error":{"message":"no","type":"authentication_error"}}`, model.CodeAuth, "no", nil},
		{"stream: timeout", 0, nil, `{"error":{"message":"slow","type":"timeout"}}`, model.CodeTimeout, "slow", nil},
		{"stream: context length by code", 0, nil, `{"error":{"message":"too big","type":"invalid_request_error","code":"context_length_exceeded"}}`,
			model.CodeContextLength, "too big", nil},
		{"stream: unknown type", 0, nil, `{"error":{"message":"?","type":"mystery"}}`, model.CodeServer, "?", nil},
		{"200 with an error object", 200, nil, `{"error":{"message":"upstream model is overloaded","type":"upstream_error"}}`,
			model.CodeServer, "upstream model is overloaded", nil},
		{"200 with a quota error", 200, nil, `{"error":{"message":"quota","type":"insufficient_quota"}}`,
			model.CodeServer, "quota", &no},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := testCall.BodyError(tt.status, tt.h, []byte(tt.body))
			if e.Code != tt.code || e.Message != tt.msg || e.Status != tt.status || e.Provider != "openai" || e.Model != "gpt-test" {
				t.Errorf("BodyError = {code %s, status %d, message %q, %s/%s}, want {%s, %d, %q}",
					e.Code, e.Status, e.Message, e.Provider, e.Model, tt.code, tt.status, tt.msg)
			}
			if (e.Retryable == nil) != (tt.retryable == nil) || (e.Retryable != nil && *e.Retryable != *tt.retryable) {
				t.Errorf("Retryable = %v, want %v", ptr(e.Retryable), ptr(tt.retryable))
			}
		})
	}
}

func ptr(b *bool) string {
	if b == nil {
		return "nil"
	}
	return fmt.Sprint(*b)
}

func TestExplain(t *testing.T) {
	t.Parallel()
	tests := []struct {
		body           string
		msg, typ, code string
	}{
		{`{"error":{"message":"m","type":"t","code":"c"}}`, "m", "t", "c"},
		{`{"error":{"message":"m","type":"t","code":null}}`, "m", "t", ""},
		{`{"error":{"message":"m","type":"t","code":429}}`, "m", "t", "429"},
		{`{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`, "Overloaded", "overloaded_error", ""},
		{`{"error":"plain","type":"outer"}`, "plain", "outer", ""},
		{`{"message":"m","type":"t"}`, "m", "t", ""},
	}
	for _, tt := range tests {
		msg, typ, code := explain(nil, []byte(tt.body))
		if msg != tt.msg || typ != tt.typ || code != tt.code {
			t.Errorf("explain(%s) = %q, %q, %q; want %q, %q, %q", tt.body, msg, typ, code, tt.msg, tt.typ, tt.code)
		}
	}
}

func TestExplainNullError(t *testing.T) {
	t.Parallel()
	// Some servers send "error": null beside the real message.
	for body, want := range map[string]string{
		`{"error":null,"message":"boom"}`: "boom",
		`{"error":"","detail":"boom"}`:    "boom",
		`{"error":null}`:                  `{"error":null}`,
	} {
		if msg, _, _ := explain(nil, []byte(body)); msg != want {
			t.Errorf("explain(%s) = %q, want %q", body, msg, want)
		}
	}
}

func TestExplainClips(t *testing.T) {
	t.Parallel()
	for _, body := range []string{
		strings.Repeat("x", 1<<20),
		strings.Repeat("é", 1<<16), // a cut may fall inside a rune
		strings.Repeat("ab😀", 1<<14),
		`{"error":{"message":"` + strings.Repeat("日本", 1<<14) + `"}}`,
		"<html><title>" + strings.Repeat("t", 5000) + "</title></html>",
	} {
		msg, _, _ := explain(nil, []byte(body))
		if len(msg) > 300+len("an HTML page (from a proxy?): ")+len("…") {
			t.Errorf("message of %d bytes from a body of %d", len(msg), len(body))
		}
		if !utf8.ValidString(msg) {
			t.Errorf("message %.40q… is not valid UTF-8", msg)
		}
		if !strings.HasSuffix(msg, "…") {
			t.Errorf("a clipped message %.40q does not say so", msg)
		}
	}
}

func TestStatusError(t *testing.T) {
	t.Parallel()
	body := &closeCheck{Reader: strings.NewReader(`{"error":{"message":"slow down","type":"requests","code":"rate_limit_exceeded"}}`)}
	resp := &http.Response{StatusCode: 429, Header: http.Header{"Retry-After-Ms": {"1500"}, "Retry-After": {"2"}}, Body: body}
	e := testCall.StatusError(resp)
	if e.Code != model.CodeRateLimited || e.RetryAfter != 1500*time.Millisecond || e.Message != "slow down" || e.Status != 429 {
		t.Errorf("StatusError = %+v", e)
	}
	if !body.closed {
		t.Error("the body was not closed")
	}
}

type closeCheck struct {
	io.Reader
	closed bool
}

func (c *closeCheck) Close() error { c.closed = true; return nil }

func TestTransportErrorRefused(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nobody listens there now
	client := &http.Client{Transport: &http.Transport{}}
	_, err = client.Post("http://"+addr+"/v1/chat/completions", "application/json", strings.NewReader("{}"))
	if err == nil {
		t.Fatal("a closed port answered")
	}
	got := testCall.TransportError(context.Background(), err, false)
	me, ok := model.AsError(got)
	if !ok || me.Code != model.CodeServer || me.Message != "connection refused" || !me.Recoverable() || me.Streamed || !errors.Is(got, err) {
		t.Errorf("TransportError(%v) = %#v", err, got)
	}
}

// resetServer accepts connections and answers each request with head (if
// any), then, once ready is closed, resets the connection.
func resetServer(t *testing.T, head string, ready <-chan struct{}) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			req, err := http.ReadRequest(bufio.NewReader(c))
			if err == nil {
				_, _ = io.Copy(io.Discard, req.Body)
				_, _ = io.WriteString(c, head)
			}
			<-ready
			_ = c.(*net.TCPConn).SetLinger(0) // close with RST
			c.Close()
		}
	}()
	return "http://" + ln.Addr().String()
}

func TestTransportErrorReset(t *testing.T) {
	t.Parallel()
	client := &http.Client{Transport: &http.Transport{}}
	t.Run("before the response", func(t *testing.T) {
		t.Parallel()
		ready := make(chan struct{})
		close(ready)
		_, err := client.Post(resetServer(t, "", ready)+"/v1", "application/json", strings.NewReader("{}"))
		if err == nil {
			t.Fatal("no error")
		}
		me, ok := model.AsError(testCall.TransportError(context.Background(), err, false))
		// The client may see the reset, or just an EOF where the
		// response should be: either way a recoverable server failure.
		if !ok || me.Code != model.CodeServer || !me.Recoverable() {
			t.Errorf("TransportError(%v) = %v", err, me)
		}
	})
	t.Run("mid-stream", func(t *testing.T) {
		t.Parallel()
		head := "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n" +
			"f\r\ndata: {\"a\":1}\n\n\r\n"
		ready := make(chan struct{})
		resp, err := client.Post(resetServer(t, head, ready)+"/v1", "application/json", strings.NewReader("{}"))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		first := make([]byte, 15)
		if _, err := io.ReadFull(resp.Body, first); err != nil || string(first) != "data: {\"a\":1}\n\n" {
			t.Fatalf("first event %q, %v", first, err)
		}
		close(ready)
		_, err = io.ReadAll(resp.Body)
		if err == nil {
			t.Fatal("the body read to its end")
		}
		me, ok := model.AsError(testCall.TransportError(context.Background(), err, true))
		if !ok || me.Code != model.CodeStreamIncomplete || !me.Streamed || me.Message != "the connection was cut" {
			t.Errorf("TransportError(%v) = %#v, want stream_incomplete, the connection was cut", err, me)
		}
	})
}

type timeoutErr struct{}

func (timeoutErr) Error() string   { return "i/o timeout" }
func (timeoutErr) Timeout() bool   { return true }
func (timeoutErr) Temporary() bool { return true }

func TestTransportErrorKinds(t *testing.T) {
	t.Parallel()
	ours := &model.Error{Code: model.CodeTimeout, Message: "no reply within 5s"}
	watched, cancel := context.WithCancelCause(context.Background())
	cancel(ours)
	caller, stop := context.WithCancel(context.Background())
	stop()

	if got := testCall.TransportError(watched, errors.New("context canceled"), true); got != ours || !ours.Streamed {
		t.Errorf("a watchdog's cause: got %v, want the cause itself, marked streamed", got)
	}
	if got := testCall.TransportError(caller, errors.New("x"), false); !errors.Is(got, context.Canceled) {
		t.Errorf("the caller's cancellation: got %v, want context.Canceled", got)
	}
	tests := []struct {
		err      error
		streamed bool
		code     model.ErrorCode
		msg      string
	}{
		{&net.OpError{Op: "read", Err: timeoutErr{}}, false, model.CodeTimeout, "the HTTP request timed out"},
		{io.ErrUnexpectedEOF, false, model.CodeServer, "the connection was cut"},
		{fmt.Errorf("read: %w", io.ErrUnexpectedEOF), true, model.CodeStreamIncomplete, "the connection was cut"},
		{errors.New("tls: bad certificate"), false, model.CodeServer, "the request failed"},
		{errors.New("tls: bad certificate"), true, model.CodeServer, "the request failed"},
	}
	for _, tt := range tests {
		me, ok := model.AsError(testCall.TransportError(context.Background(), tt.err, tt.streamed))
		if !ok || me.Code != tt.code || me.Message != tt.msg || me.Streamed != tt.streamed || !errors.Is(me, tt.err) {
			t.Errorf("TransportError(%v, %v) = %#v, want %s %q", tt.err, tt.streamed, me, tt.code, tt.msg)
		}
	}
}

// stringCases are strings an escaper gets wrong.
var stringCases = []string{
	"", "plain", `quote " and backslash \`, "\n\r\t\b\f", "\x00\x01\x1f\x7f",
	"<script>&</script>", "\u2028\u2029", "é😀日本", "\xff", "a\xc3", "\xe2\x82", "\xed\xa0\x80", // a UTF-8-encoded surrogate
	"\xf4\x90\x80\x80", "\ufffd", `\u0041`, "/",
}

func encodingJSON(t testing.TB, s string) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(s); err != nil {
		t.Fatal(err)
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

func checkString(t testing.TB, s string) {
	got := AppendString([]byte("prefix"), s)
	if !bytes.HasPrefix(got, []byte("prefix")) {
		t.Fatalf("AppendString lost dst: %q", got)
	}
	got = got[len("prefix"):]
	want := encodingJSON(t, s)
	var a, b string
	if err := json.Unmarshal(got, &a); err != nil {
		t.Fatalf("AppendString(%q) = %s: not a JSON string: %v", s, got, err)
	}
	if err := json.Unmarshal(want, &b); err != nil {
		t.Fatal(err)
	}
	if a != b {
		t.Fatalf("AppendString(%q) decodes to %q, encoding/json's to %q", s, a, b)
	}
	// Byte for byte too, but for \b and \f, which encoding/json has
	// written short since Go 1.22 and we write as \u0008 and \u000c.
	if !strings.ContainsAny(s, "\b\f") && !bytes.Equal(got, want) {
		t.Fatalf("AppendString(%q) = %s, encoding/json writes %s", s, got, want)
	}
}

func TestAppendString(t *testing.T) {
	t.Parallel()
	for _, s := range stringCases {
		checkString(t, s)
	}
}

func FuzzAppendString(f *testing.F) {
	for _, s := range stringCases {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) { checkString(t, s) })
}

func TestAppendKey(t *testing.T) {
	t.Parallel()
	b := []byte("{")
	b = AppendKey(b, "a")
	b = AppendInt(b, -7)
	b = AppendKey(b, "b")
	b = append(b, '[', '{')
	b = AppendKey(b, "c")
	b = AppendFloat(b, 0.1)
	b = append(b, '}', ']')
	b = AppendKey(b, "d")
	b = AppendFloat(b, 0)
	b = append(b, '}')
	if want := `{"a":-7,"b":[{"c":0.1}],"d":0}`; string(b) != want {
		t.Errorf("got %s, want %s", b, want)
	}
}

func TestAppendFloat(t *testing.T) {
	t.Parallel()
	for _, f := range []float64{0, 1, -1, 0.7, 1e-7, 1e21, 123456789, 2.5e-300, 1.7976931348623157e308} {
		b := AppendFloat(nil, f)
		var back float64
		if err := json.Unmarshal(b, &back); err != nil || back != f {
			t.Errorf("AppendFloat(%v) = %s: decodes to %v, %v", f, b, back, err)
		}
	}
}

func TestStrings(t *testing.T) {
	t.Parallel()
	var a Strings
	if s := a.Make(nil); s != "" {
		t.Errorf("Make(nil) = %q", s)
	}
	scratch := make([]byte, 0, 64)
	var made, want []string
	for i := range 5000 {
		scratch = fmt.Appendf(scratch[:0], "s%d-%s", i, strings.Repeat("x", i%40))
		want = append(want, string(scratch))
		made = append(made, a.Make(scratch))
		for j := range scratch {
			scratch[j] = '#' // the caller reuses its buffer
		}
		if i%1000 == 999 {
			a.Reset() // strings made so far live on
		}
	}
	big := bytes.Repeat([]byte("B"), 20000) // bigger than a block
	bigS := a.Make(big)
	big[0] = '#'
	want, made = append(want, strings.Repeat("B", 20000)), append(made, bigS)
	after := a.Make([]byte("after"))
	want, made = append(want, "after"), append(made, after)
	for i := range made {
		if made[i] != want[i] {
			t.Fatalf("string %d is %q, was made as %q", i, made[i], want[i])
		}
	}
}

func TestStringsBlocks(t *testing.T) { // not parallel: AllocsPerRun
	var a Strings
	b := []byte("0123456789abcdef") // 16 bytes
	var caps []int
	for range 2000 {
		a.Make(b)
		if c := cap(a.block); len(caps) == 0 || caps[len(caps)-1] != c {
			caps = append(caps, c)
		}
	}
	// Blocks double from 256 bytes up to 16 KiB, then stay there.
	want := []int{256, 512, 1024, 2048, 4096, 8192, 16384}
	if fmt.Sprint(caps) != fmt.Sprint(want) {
		t.Errorf("block sizes %v, want %v", caps, want)
	}
	// Strings too big to share a block get their own allocation and
	// leave the block as it was.
	before := len(a.block)
	a.Make(bytes.Repeat([]byte("z"), 9000))
	if len(a.block) != before {
		t.Errorf("a 9000-byte string went into the block")
	}
	// Amortised: a hundred short strings cost a handful of blocks.
	allocs := testing.AllocsPerRun(100, func() {
		a.Reset()
		for range 100 {
			a.Make(b)
		}
	})
	if allocs > 4 {
		t.Errorf("%v allocations for 100 strings, want at most 4 (one per block)", allocs)
	}
}
