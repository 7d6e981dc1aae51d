package model_test

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/agentrt/agentrt/model"
)

func TestParseRetryAfter(t *testing.T) {
	t.Parallel()
	now := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	date := func(d time.Duration) string { return now.Add(d).Format(http.TimeFormat) }
	tests := []struct {
		name      string
		ms, after string
		want      time.Duration // -1: anything in [0, 1h]
		bug       string        // the bug this case caught (fixed)
	}{
		{"neither", "", "", 0, ""},
		{"milliseconds", "250", "", 250 * time.Millisecond, ""},
		{"milliseconds win over seconds", "250", "7", 250 * time.Millisecond, ""},
		{"fractional milliseconds", "1.5", "", 1500 * time.Microsecond, ""},
		{"milliseconds with blanks", " 40 ", "", 40 * time.Millisecond, ""},
		{"zero milliseconds: seconds then", "0", "3", 3 * time.Second, ""},
		{"negative milliseconds: seconds then", "-5", "3", 3 * time.Second, ""},
		{"garbage milliseconds: seconds then", "soon", "3", 3 * time.Second, ""},
		{"seconds", "", "2", 2 * time.Second, ""},
		{"fractional seconds", "", "1.5", 1500 * time.Millisecond, ""},
		{"seconds with blanks", "", " 2 ", 2 * time.Second, ""},
		{"zero seconds", "", "0", 0, ""},
		{"negative seconds", "", "-1", 0, ""},
		{"garbage", "", "later", 0, ""},
		{"an HTTP date", "", date(30 * time.Second), 30 * time.Second, ""},
		{"an RFC 850 date", "", now.Add(time.Minute).Format("Monday, 02-Jan-06 15:04:05 GMT"), time.Minute,
			"only RFC 1123 dates are parsed; HTTP allows RFC 850 and asctime too (http.ParseTime reads all three)"},
		{"an HTTP date in the past", "", date(-time.Minute), 0, ""},
		{"an HTTP date far ahead: capped", "", date(48 * time.Hour), time.Hour, ""},
		{"huge milliseconds: capped", "99999999", "", time.Hour, ""},
		{"huge seconds: capped", "", "86400", time.Hour, ""},
		{"seconds past time.Duration: capped", "", "99999999999", time.Hour,
			"f*float64(time.Second) overflows int64; the conversion gives a large negative duration"},
		{"milliseconds past time.Duration: capped", "1e20", "", time.Hour, "the same overflow"},
		{"infinite seconds", "", "Inf", -1, "ParseFloat accepts Inf; converting it gives a large negative duration"},
		{"NaN seconds", "", "NaN", 0, "NaN passes f <= 0; converting it gives a large negative duration"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := model.ParseRetryAfter(tt.ms, tt.after, now)
			if tt.want < 0 && got >= 0 && got <= time.Hour {
				return
			}
			if got != tt.want {
				t.Errorf("ParseRetryAfter(%q, %q) = %v, want %v", tt.ms, tt.after, got, tt.want)
			}
			if got < 0 || got > time.Hour {
				t.Errorf("ParseRetryAfter(%q, %q) = %v, out of [0, 1h]", tt.ms, tt.after, got)
			}
		})
	}
}

func TestTimeoutsFromEnv(t *testing.T) {
	t.Parallel()
	base := model.Timeouts{FirstFeedback: 1, FirstChunk: 2, Idle: 3, Hard: 4}
	env := func(kv ...string) func(string) string {
		return func(k string) string {
			for i := 0; i < len(kv); i += 2 {
				if kv[i] == k {
					return kv[i+1]
				}
			}
			return ""
		}
	}
	ok := []struct {
		name string
		env  func(string) string
		want model.Timeouts
	}{
		{"nothing set", env(), base},
		{"first feedback", env(model.EnvFirstFeedback, "5"), model.Timeouts{FirstFeedback: 5 * time.Second, FirstChunk: 2, Idle: 3, Hard: 4}},
		{"invoke timeout is the first chunk", env(model.EnvInvokeTimeout, "90"), model.Timeouts{FirstFeedback: 1, FirstChunk: 90 * time.Second, Idle: 3, Hard: 4}},
		{"heartbeat is idle", env(model.EnvIdleTimeout, "0.5"), model.Timeouts{FirstFeedback: 1, FirstChunk: 2, Idle: 500 * time.Millisecond, Hard: 4}},
		{"hard", env(model.EnvHardTimeout, " 600 "), model.Timeouts{FirstFeedback: 1, FirstChunk: 2, Idle: 3, Hard: 600 * time.Second}},
		{"blank is unset", env(model.EnvHardTimeout, "  "), base},
		{"a week is the most", env(model.EnvHardTimeout, "604800"), model.Timeouts{FirstFeedback: 1, FirstChunk: 2, Idle: 3, Hard: 7 * 24 * time.Hour}},
		{"all four", env(model.EnvFirstFeedback, "1", model.EnvInvokeTimeout, "2", model.EnvIdleTimeout, "3", model.EnvHardTimeout, "4"),
			model.Timeouts{FirstFeedback: time.Second, FirstChunk: 2 * time.Second, Idle: 3 * time.Second, Hard: 4 * time.Second}},
	}
	for _, tt := range ok {
		got, err := model.TimeoutsFromEnv(base, tt.env)
		if err != nil || got != tt.want {
			t.Errorf("%s: TimeoutsFromEnv = %+v, %v; want %+v", tt.name, got, err, tt.want)
		}
	}
	for _, name := range []string{model.EnvFirstFeedback, model.EnvInvokeTimeout, model.EnvIdleTimeout, model.EnvHardTimeout} {
		for _, bad := range []string{"abc", "0", "-1", "10s", "1e9", "604801", "Inf", "NaN"} {
			_, err := model.TimeoutsFromEnv(base, env(name, bad))
			if err == nil || !strings.Contains(err.Error(), name) || !strings.Contains(err.Error(), fmt.Sprintf("%q", bad)) {
				t.Errorf("%s=%q: error %v, want one naming the variable and the value", name, bad, err)
			}
		}
	}
}

func TestTimeoutsDefaults(t *testing.T) {
	t.Parallel()
	d := model.DefaultTimeouts()
	if got := (model.Timeouts{}).WithDefaults(); got != d {
		t.Errorf("zero WithDefaults = %+v, want %+v", got, d)
	}
	mine := model.Timeouts{Idle: time.Second}
	if got := mine.WithDefaults(); got.Idle != time.Second || got.Hard != d.Hard || got.FirstChunk != d.FirstChunk || got.FirstFeedback != d.FirstFeedback {
		t.Errorf("WithDefaults = %+v: set fields must stay, zero ones take the defaults %+v", got, d)
	}
	if got, want := d.RequestTimeout(), d.Hard+15*time.Second; got != want {
		t.Errorf("RequestTimeout = %v, want %v", got, want)
	}
	if got, want := (model.Timeouts{FirstChunk: time.Minute, Idle: 2 * time.Minute, Hard: 30 * time.Second}).RequestTimeout(), 2*time.Minute+15*time.Second; got != want {
		t.Errorf("RequestTimeout = %v, want %v (the largest bound + 15 s)", got, want)
	}
}

func TestStatusCode(t *testing.T) {
	t.Parallel()
	tests := map[int]model.ErrorCode{
		400: model.CodeBadRequest, 404: model.CodeBadRequest, 422: model.CodeBadRequest,
		401: model.CodeAuth, 403: model.CodeAuth,
		408: model.CodeTimeout, 504: model.CodeTimeout,
		413: model.CodeContextLength,
		429: model.CodeRateLimited,
		500: model.CodeServer, 502: model.CodeServer, 503: model.CodeServer, 529: model.CodeServer,
	}
	for status, want := range tests {
		if got := model.StatusCode(status); got != want {
			t.Errorf("StatusCode(%d) = %s, want %s", status, got, want)
		}
	}
}

func TestClassifyMessage(t *testing.T) {
	t.Parallel()
	tests := []struct {
		code  model.ErrorCode
		texts []string
		want  model.ErrorCode
	}{
		{model.CodeBadRequest, []string{"invalid_request_error", "context_length_exceeded", "This model's maximum context length is 128000 tokens."}, model.CodeContextLength},
		{model.CodeBadRequest, []string{"invalid_request_error", "", "prompt is too long: 210000 tokens > 200000 maximum"}, model.CodeContextLength},
		{model.CodeBadRequest, []string{"", "", "Input exceeds the CONTEXT WINDOW of this model"}, model.CodeContextLength},
		{model.CodeContextLength, []string{"request_too_large"}, model.CodeContextLength},
		{model.CodeServer, []string{"overloaded_error", "", "Overloaded"}, model.CodeServer},
		{model.CodeRateLimited, []string{"", "", "the engine is overloaded"}, model.CodeServer},
		{model.CodeBadRequest, []string{"rate_limit_error"}, model.CodeRateLimited},
		{model.CodeBadRequest, []string{"", "", "Rate limit reached"}, model.CodeRateLimited},
		{model.CodeBadRequest, []string{"authentication_error"}, model.CodeAuth},
		{model.CodeBadRequest, []string{"permission_error"}, model.CodeAuth},
		// Refinements of bad requests only: a server error about rate
		// limits stays a server error.
		{model.CodeServer, []string{"", "", "rate limit service unavailable"}, model.CodeServer},
		{model.CodeTimeout, []string{"authentication"}, model.CodeTimeout},
		{model.CodeBadRequest, []string{"invalid_request_error", "", "messages: tool_call_id not found"}, model.CodeBadRequest},
		{model.CodeAuth, nil, model.CodeAuth},
	}
	for _, tt := range tests {
		if got := model.ClassifyMessage(tt.code, tt.texts...); got != tt.want {
			t.Errorf("ClassifyMessage(%s, %q) = %s, want %s", tt.code, tt.texts, got, tt.want)
		}
	}
}

func TestErrorText(t *testing.T) {
	t.Parallel()
	cause := errors.New("read tcp: connection reset by peer")
	tests := []struct {
		e    *model.Error
		want string
	}{
		{&model.Error{Code: model.CodeTimeout}, "model: timeout"},
		{&model.Error{Code: model.CodeTimeout, Provider: "openai"}, "model openai: timeout"},
		{&model.Error{Code: model.CodeTimeout, Model: "gpt-4o"}, "model gpt-4o: timeout"},
		{&model.Error{Code: model.CodeRateLimited, Provider: "openai", Model: "gpt-4o", Status: 429, Message: "Rate limit reached"},
			"model openai/gpt-4o: rate_limited (HTTP 429): Rate limit reached"},
		{&model.Error{Code: model.CodeServer, Provider: "openai", Model: "m", Message: "the connection was cut", Err: cause},
			"model openai/m: server: the connection was cut: read tcp: connection reset by peer"},
		{&model.Error{Code: model.CodeServer, Err: cause}, "model: server: read tcp: connection reset by peer"},
		// The cause is not repeated when the message already says it.
		{&model.Error{Code: model.CodeServer, Message: "failed: " + cause.Error(), Err: cause}, "model: server: failed: read tcp: connection reset by peer"},
	}
	for _, tt := range tests {
		if got := tt.e.Error(); got != tt.want {
			t.Errorf("Error() = %q, want %q", got, tt.want)
		}
	}
}

func TestErrorWrapping(t *testing.T) {
	t.Parallel()
	e := &model.Error{Code: model.CodeServer, Err: io.ErrUnexpectedEOF}
	wrapped := fmt.Errorf("run: %w", e)
	if !errors.Is(wrapped, io.ErrUnexpectedEOF) {
		t.Error("errors.Is does not see the cause through Unwrap")
	}
	if got, ok := model.AsError(wrapped); !ok || got != e {
		t.Errorf("AsError = %v, %v; want the *Error", got, ok)
	}
	if _, ok := model.AsError(io.EOF); ok {
		t.Error("AsError found an *Error in io.EOF")
	}
	if _, ok := model.AsError(nil); ok {
		t.Error("AsError found an *Error in nil")
	}
}

func TestRecoverable(t *testing.T) {
	t.Parallel()
	yes, no := true, false
	want := map[model.ErrorCode]bool{
		model.CodeRateLimited:      true,
		model.CodeTimeout:          true,
		model.CodeServer:           true,
		model.CodeStreamIncomplete: true,
		model.CodeContextLength:    false,
		model.CodeAuth:             false,
		model.CodeBadRequest:       false,
		"something new":            false,
	}
	for code, w := range want {
		if got := (&model.Error{Code: code}).Recoverable(); got != w {
			t.Errorf("%s: Recoverable() = %v, want %v", code, got, w)
		}
		if !(&model.Error{Code: code, Retryable: &yes}).Recoverable() {
			t.Errorf("%s with Retryable true: not recoverable", code)
		}
		if (&model.Error{Code: code, Retryable: &no}).Recoverable() {
			t.Errorf("%s with Retryable false: recoverable", code)
		}
	}
}
