package llmhttp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/agentrt/agentrt/model"
)

// maxErrorBody is how much of an error response is read.
const maxErrorBody = 64 << 10

// StatusError turns an HTTP response that is not a success into a
// *model.Error, reading (a bounded part of) its body for the provider's
// explanation. It closes the body.
func (c *Call) StatusError(resp *http.Response) *model.Error {
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	resp.Body.Close()
	e := c.BodyError(resp.StatusCode, resp.Header, body)
	e.RetryAfter = model.ParseRetryAfter(resp.Header.Get("retry-after-ms"), resp.Header.Get("retry-after"), time.Now())
	return e
}

// BodyError classifies an error body: status is the HTTP status (0 for an
// error event inside a stream). It understands the OpenAI shape
// {"error":{"message","type","code"}}, Anthropic's
// {"type":"error","error":{"type","message"}}, {"error":"text"} (Ollama and
// others), {"message":...}, HTML pages from proxies and plain text.
func (c *Call) BodyError(status int, h http.Header, body []byte) *model.Error {
	code := model.CodeServer
	if status != 0 {
		code = model.StatusCode(status)
	}
	msg, typ, ecode := explain(h, body)
	e := &model.Error{Provider: c.Provider, Model: c.Model, Status: status, Message: msg}
	if status == 0 || status == http.StatusOK {
		// An error object where a reply was expected: its type decides.
		code = typeCode(typ + " " + ecode)
	}
	e.Code = model.ClassifyMessage(code, typ, ecode, msg)
	if strings.Contains(ecode+" "+typ, "insufficient_quota") {
		// A 429 for an exhausted quota is not going away with a retry.
		no := false
		e.Retryable = &no
	}
	return e
}

// typeCode maps a provider's error type to a code, for error objects that
// come without a meaningful HTTP status.
func typeCode(t string) model.ErrorCode {
	t = strings.ToLower(t)
	switch {
	case strings.Contains(t, "rate_limit") || strings.Contains(t, "rate limit") || strings.Contains(t, "too_many"):
		return model.CodeRateLimited
	case strings.Contains(t, "overloaded") || strings.Contains(t, "server") || strings.Contains(t, "api_error") || strings.Contains(t, "internal"):
		return model.CodeServer
	case strings.Contains(t, "authentication") || strings.Contains(t, "permission") || strings.Contains(t, "invalid_api_key"):
		return model.CodeAuth
	case strings.Contains(t, "timeout"):
		return model.CodeTimeout
	case strings.Contains(t, "too_large"):
		return model.CodeContextLength
	case strings.Contains(t, "invalid_request") || strings.Contains(t, "not_found") || strings.Contains(t, "invalid"):
		return model.CodeBadRequest
	}
	return model.CodeServer
}

var titleRE = regexp.MustCompile(`(?is)<title[^>]*>(.*?)</title>`)

// explain extracts a message, an error type and an error code from an
// error body.
func explain(h http.Header, body []byte) (msg, typ, code string) {
	body = bytes.TrimSpace(body)
	if len(body) == 0 {
		return "empty response body", "", ""
	}
	if body[0] == '{' {
		var v struct {
			Error   json.RawMessage `json:"error"`
			Message string          `json:"message"`
			Type    string          `json:"type"`
			Detail  string          `json:"detail"`
		}
		if json.Unmarshal(body, &v) == nil {
			var inner struct {
				Message string          `json:"message"`
				Type    string          `json:"type"`
				Code    json.RawMessage `json:"code"`
			}
			var s string
			switch {
			case len(v.Error) > 0 && v.Error[0] == '{' && json.Unmarshal(v.Error, &inner) == nil:
				c := strings.Trim(string(inner.Code), `"`)
				if c == "null" {
					c = ""
				}
				return clip(inner.Message), inner.Type, c
			case len(v.Error) > 0 && json.Unmarshal(v.Error, &s) == nil && s != "": // not "error": null
				return clip(s), v.Type, ""
			case v.Message != "":
				return clip(v.Message), v.Type, ""
			case v.Detail != "":
				return clip(v.Detail), v.Type, ""
			}
		}
	}
	ct := h.Get("Content-Type")
	if strings.Contains(ct, "html") || bytes.HasPrefix(bytes.ToLower(body), []byte("<!doctype")) || bytes.HasPrefix(bytes.ToLower(body), []byte("<html")) {
		if m := titleRE.FindSubmatch(body); m != nil {
			return "an HTML page (from a proxy?): " + clip(string(bytes.TrimSpace(m[1]))), "", ""
		}
		return "an HTML page (from a proxy?)", "", ""
	}
	return clip(string(body)), "", ""
}

// clip shortens s for an error message and makes it valid UTF-8.
func clip(s string) string {
	const n = 300
	s = strings.ToValidUTF8(strings.TrimSpace(s), "\uFFFD")
	if len(s) > n {
		cut := n
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "…"
	}
	return s
}

// TransportError classifies a failure to send a request or read a
// response: a timeout of ours (the cause of ctx), the caller's
// cancellation (returned as is), or a network failure (CodeServer).
func (c *Call) TransportError(ctx context.Context, err error, streamed bool) error {
	if cause := context.Cause(ctx); cause != nil {
		var me *model.Error
		if errors.As(cause, &me) {
			me.Streamed = streamed
			return me
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
	e := &model.Error{Code: model.CodeServer, Provider: c.Provider, Model: c.Model, Err: err, Streamed: streamed}
	var ne net.Error
	switch {
	case errors.As(err, &ne) && ne.Timeout():
		e.Code = model.CodeTimeout
		e.Message = "the HTTP request timed out"
	case errors.Is(err, syscall.ECONNRESET) || errors.Is(err, io.ErrUnexpectedEOF):
		if streamed {
			e.Code = model.CodeStreamIncomplete
		}
		e.Message = "the connection was cut"
	case errors.Is(err, syscall.ECONNREFUSED):
		e.Message = "connection refused"
	default:
		e.Message = "the request failed"
	}
	return e
}

// Incomplete is the error for a stream that ended without its terminator.
func (c *Call) Incomplete(terminator string) *model.Error {
	return &model.Error{Code: model.CodeStreamIncomplete, Provider: c.Provider, Model: c.Model, Streamed: true,
		Message: fmt.Sprintf("the stream ended without %s: the reply may be cut short", terminator)}
}

// Malformed is the error for a stream or body that is not what the API
// sends. It is not worth retrying: the same request mostly gets the same
// answer back (a proxy in the way, a server that is not the API).
func (c *Call) Malformed(what string, err error, streamed bool) *model.Error {
	no := false
	return &model.Error{Code: model.CodeServer, Provider: c.Provider, Model: c.Model, Streamed: streamed,
		Message: "malformed " + what, Err: err, Retryable: &no}
}
