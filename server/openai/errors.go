package openai

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/session"
)

// Error is an error as the OpenAI API answers it: the HTTP status, and
// {"error":{"message","type","param","code"}}. Code is agentrt's stable
// error code (docs/errors.md) or OpenAI's where one fits
// (model_not_found).
type Error struct {
	Status  int     `json:"-"`
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    string  `json:"code"`
}

func (e *Error) Error() string { return e.Message }

// errorType is OpenAI's error type for an HTTP status.
func errorType(status int) string {
	switch {
	case status == http.StatusUnauthorized:
		return "authentication_error"
	case status == http.StatusForbidden:
		return "permission_error"
	case status == http.StatusNotFound:
		return "not_found_error"
	case status == http.StatusConflict:
		return "conflict_error"
	case status == http.StatusTooManyRequests:
		return "rate_limit_error"
	case status >= 500:
		return "server_error"
	}
	return "invalid_request_error"
}

func apiError(status int, code, param, format string, args ...any) *Error {
	e := &Error{Status: status, Message: fmt.Sprintf(format, args...), Type: errorType(status), Code: code}
	if param != "" {
		e.Param = &param
	}
	return e
}

func badRequest(param, format string, args ...any) *Error {
	return apiError(http.StatusBadRequest, agentrt.CodeMalformedRequest, param, format, args...)
}

func modelNotFound(name string) *Error {
	return apiError(http.StatusNotFound, "model_not_found", "model",
		"The model %q does not exist: the models are the server's agents (GET /v1/models)", name)
}

// toAPIError turns an error of the runtime or the gateway into OpenAI's
// shape, with the status the catalog of error codes gives it.
func toAPIError(err error) *Error {
	var ae *Error
	if errors.As(err, &ae) {
		return ae
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return apiError(http.StatusGatewayTimeout, agentrt.CodeRequestTimeout, "", "the request took longer than the server allows; what it started goes on")
	}
	e := agentrt.AsError(err)
	code := e.ErrorCode()
	if errors.Is(err, session.ErrNotFound) && e.Code == "" {
		code = agentrt.CodeNotFound
	}
	status := http.StatusInternalServerError
	if info, ok := agentrt.LookupCode(code); ok && info.HTTP != 0 {
		status = info.HTTP
	}
	msg := strings.TrimSpace(e.Error())
	if e.Kind == agentrt.FailInternal || e.Kind == agentrt.FailStore {
		// The wrapped detail is the server's, not the client's.
		msg = e.Msg
		if msg == "" {
			msg = string(e.Kind) + " failure"
		}
	}
	return apiError(status, code, "", "%s", msg)
}

func writeError(w http.ResponseWriter, err error) {
	e := toAPIError(err)
	writeJSON(w, e.Status, struct {
		Error *Error `json:"error"`
	}{e})
}
