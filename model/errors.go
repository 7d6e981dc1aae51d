package model

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// ErrorCode classifies a failed model call. The codes are stable: they
// appear in error events and the HTTP API.
type ErrorCode string

// Error codes.
const (
	// CodeRateLimited: the provider refused for now (HTTP 429).
	CodeRateLimited ErrorCode = "rate_limited"
	// CodeTimeout: a watchdog stopped the call (no first chunk, a stall
	// between chunks, the hard limit) or the server timed out.
	CodeTimeout ErrorCode = "timeout"
	// CodeContextLength: the request is too large for the model.
	CodeContextLength ErrorCode = "context_length"
	// CodeAuth: the key is missing, wrong or not allowed (401, 403).
	CodeAuth ErrorCode = "auth"
	// CodeBadRequest: the provider rejected the request as malformed.
	CodeBadRequest ErrorCode = "bad_request"
	// CodeServer: the provider or the network failed (5xx, overloaded,
	// connection reset, a response that is not what the API sends).
	CodeServer ErrorCode = "server"
	// CodeStreamIncomplete: the stream ended without its terminator.
	CodeStreamIncomplete ErrorCode = "stream_incomplete"
)

// Error is a failed model call, classified. Providers return it (wrapped
// or not) from Stream and Generate; the runtime decides from it whether to
// retry, fall back or fail.
type Error struct {
	Code ErrorCode
	// Provider and Model name the failing call ("openai", "gpt-4o-mini").
	Provider, Model string
	// Status is the HTTP status, or 0 when the failure was not an HTTP
	// error response (a stall, a stream cut short, a mid-stream error).
	Status int
	// Message is the provider's explanation, or ours.
	Message string
	// RetryAfter is how long the provider asked to wait before retrying
	// (retry-after / retry-after-ms), or 0.
	RetryAfter time.Duration
	// Retryable overrides the code's default verdict when not nil (a 429
	// for an exhausted quota is not worth retrying, for instance).
	Retryable *bool
	// Streamed reports that the failure came after part of the reply had
	// been streamed.
	Streamed bool
	// Err is the underlying error, if any.
	Err error
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("model")
	if e.Provider != "" || e.Model != "" {
		b.WriteString(" ")
		b.WriteString(strings.Trim(e.Provider+"/"+e.Model, "/"))
	}
	b.WriteString(": ")
	b.WriteString(string(e.Code))
	if e.Status != 0 {
		b.WriteString(" (HTTP ")
		b.WriteString(strconv.Itoa(e.Status))
		b.WriteString(")")
	}
	if e.Message != "" {
		b.WriteString(": ")
		b.WriteString(e.Message)
	}
	if e.Err != nil && (e.Message == "" || !strings.Contains(e.Message, e.Err.Error())) {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

func (e *Error) Unwrap() error { return e.Err }

// Recoverable reports whether the same request may succeed if retried:
// rate limits, timeouts, server failures and cut streams may; auth, bad
// requests and requests too large never do.
func (e *Error) Recoverable() bool {
	if e.Retryable != nil {
		return *e.Retryable
	}
	switch e.Code {
	case CodeRateLimited, CodeTimeout, CodeServer, CodeStreamIncomplete:
		return true
	}
	return false
}

// AsError returns the *Error in err's chain, if any.
func AsError(err error) (*Error, bool) {
	var e *Error
	ok := errors.As(err, &e)
	return e, ok
}

// StatusCode maps an HTTP error status to a code. A 400 whose message says
// the context is too long is CodeContextLength; ClassifyMessage refines
// the others.
func StatusCode(status int) ErrorCode {
	switch {
	case status == 401 || status == 403:
		return CodeAuth
	case status == 408 || status == 504:
		return CodeTimeout
	case status == 413:
		return CodeContextLength
	case status == 429:
		return CodeRateLimited
	case status >= 500:
		return CodeServer
	}
	return CodeBadRequest
}

// contextLengthHints are phrases providers use for a request too large
// for the model's context window.
var contextLengthHints = []string{
	"context_length_exceeded", "maximum context length", "context length",
	"prompt is too long", "too many tokens", "request_too_large", "context window",
}

// ClassifyMessage refines code with what an error's type, code and message
// say: a bad request about the context window is CodeContextLength, an
// "overloaded" error is CodeServer.
func ClassifyMessage(code ErrorCode, texts ...string) ErrorCode {
	all := strings.ToLower(strings.Join(texts, " "))
	switch {
	case containsAny(all, contextLengthHints):
		return CodeContextLength
	case strings.Contains(all, "overloaded"):
		return CodeServer
	case code == CodeBadRequest && (strings.Contains(all, "rate_limit") || strings.Contains(all, "rate limit")):
		return CodeRateLimited
	case code == CodeBadRequest && (strings.Contains(all, "authentication") || strings.Contains(all, "permission")):
		return CodeAuth
	}
	return code
}

func containsAny(s string, subs []string) bool {
	for _, x := range subs {
		if strings.Contains(s, x) {
			return true
		}
	}
	return false
}

// ParseRetryAfter reads a retry-after-ms or retry-after header value
// (seconds, or an HTTP date relative to now). It returns 0 when the value
// is absent or unusable, and caps absurd values at an hour.
func ParseRetryAfter(ms, after string, now time.Time) time.Duration {
	const most = time.Hour
	if ms != "" {
		if f, err := strconv.ParseFloat(strings.TrimSpace(ms), 64); err == nil && f > 0 {
			if f >= float64(most/time.Millisecond) {
				return most
			}
			return time.Duration(f * float64(time.Millisecond))
		}
	}
	after = strings.TrimSpace(after)
	if after == "" {
		return 0
	}
	if f, err := strconv.ParseFloat(after, 64); err == nil {
		switch {
		case !(f > 0): // also NaN
			return 0
		case f >= most.Seconds():
			return most
		}
		return time.Duration(f * float64(time.Second))
	}
	if t, err := http.ParseTime(after); err == nil {
		if d := t.Sub(now); d > 0 {
			return min(d, most)
		}
	}
	return 0
}

// Timeouts bound a model call with four watchdogs.
type Timeouts struct {
	// FirstFeedback is how long a stream may stay silent before a waiting
	// pulse (a Chunk with Pulse set) is yielded; again every FirstFeedback
	// until the first chunk.
	FirstFeedback time.Duration
	// FirstChunk bounds the wait for the first chunk of a stream, or for
	// the whole reply of a call that does not stream.
	FirstChunk time.Duration
	// Idle bounds the silence between two chunks.
	Idle time.Duration
	// Hard bounds the whole call, wall clock.
	Hard time.Duration
}

// DefaultTimeouts are the watchdogs' defaults: a pulse every 8 s, 120 s
// for the first chunk, 60 s between chunks, 300 s in all.
func DefaultTimeouts() Timeouts {
	return Timeouts{FirstFeedback: 8 * time.Second, FirstChunk: 120 * time.Second, Idle: 60 * time.Second, Hard: 300 * time.Second}
}

// WithDefaults returns t with its zero fields set to DefaultTimeouts'.
func (t Timeouts) WithDefaults() Timeouts {
	d := DefaultTimeouts()
	if t.FirstFeedback == 0 {
		t.FirstFeedback = d.FirstFeedback
	}
	if t.FirstChunk == 0 {
		t.FirstChunk = d.FirstChunk
	}
	if t.Idle == 0 {
		t.Idle = d.Idle
	}
	if t.Hard == 0 {
		t.Hard = d.Hard
	}
	return t
}

// RequestTimeout is the HTTP client's timeout for calls bounded by t: the
// largest of the bounds plus 15 s, so that the watchdogs, which
// say what happened, fire first.
func (t Timeouts) RequestTimeout() time.Duration {
	return max(t.FirstChunk, t.Idle, t.Hard) + 15*time.Second
}

// Environment variables that override the timeouts, in seconds.
const (
	EnvFirstFeedback = "AGENTRT_LLM_FIRST_FEEDBACK_SECONDS"
	EnvInvokeTimeout = "AGENTRT_LLM_INVOKE_TIMEOUT_SECONDS"
	EnvIdleTimeout   = "AGENTRT_LLM_HEARTBEAT_TIMEOUT_SECONDS"
	EnvHardTimeout   = "AGENTRT_LLM_HARD_TIMEOUT_SECONDS"
)

// TimeoutsFromEnv returns t with the fields whose environment variable is
// set (read with getenv) replaced. A value that is not a positive number of
// seconds is an error naming the variable.
func TimeoutsFromEnv(t Timeouts, getenv func(string) string) (Timeouts, error) {
	for _, v := range []struct {
		name string
		dst  *time.Duration
	}{
		{EnvFirstFeedback, &t.FirstFeedback},
		{EnvInvokeTimeout, &t.FirstChunk},
		{EnvIdleTimeout, &t.Idle},
		{EnvHardTimeout, &t.Hard},
	} {
		s := strings.TrimSpace(getenv(v.name))
		if s == "" {
			continue
		}
		f, err := strconv.ParseFloat(s, 64)
		if err != nil || !(f > 0) || f > 7*24*3600 { // !(f > 0) also rejects NaN
			return t, fmt.Errorf("%s=%q: want a positive number of seconds", v.name, s)
		}
		*v.dst = time.Duration(f * float64(time.Second))
	}
	return t, nil
}
