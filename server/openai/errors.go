package openai

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/server"
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
// shape, with the status and the words the server gives it
// (server.StatusOf: nothing of the store's or Go's).
func toAPIError(err error) *Error {
	var ae *Error
	if errors.As(err, &ae) {
		return ae
	}
	status, d := server.StatusOf(err)
	return apiError(status, d.Code, "", "%s", d.Message)
}

func writeError(w http.ResponseWriter, err error) {
	e := toAPIError(err)
	writeJSON(w, e.Status, struct {
		Error *Error `json:"error"`
	}{e})
}
