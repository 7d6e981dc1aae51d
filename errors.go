package agentrt

import (
	"errors"
)

// ErrorKind classifies runtime failures; it decides an *Error's default
// recoverability and the CLI's exit code (codes.go).
type ErrorKind string

// Error kinds. Each has a stable code used in error events and the HTTP API.
const (
	FailModel    ErrorKind = "model"        // the model call failed
	FailTool     ErrorKind = "tool"         // a tool failed outside the model's reach
	FailStore    ErrorKind = "store"        // the store failed
	FailConfig   ErrorKind = "config"       // the agent or runner is misconfigured
	FailLimit    ErrorKind = "limit"        // a limit or budget was reached
	FailHook     ErrorKind = "hook_blocked" // a hook refused to go on
	FailCanceled ErrorKind = "canceled"     // the caller canceled
	FailInput    ErrorKind = "bad_input"    // the caller's input is unusable
	FailState    ErrorKind = "bad_state"    // the session cannot do that now
	FailPolicy   ErrorKind = "policy"       // the policy failed to decide
	FailInternal ErrorKind = "internal"     // a bug
)

// Error is a runtime failure with a kind and a recoverability verdict.
type Error struct {
	Kind ErrorKind
	// Code is a stable machine-readable code; it defaults to the kind.
	Code string
	Msg  string
	Err  error
	// Recoverable overrides the kind's default when set.
	Recoverable *bool
}

func (e *Error) Error() string {
	switch {
	case e.Msg != "" && e.Err != nil:
		return e.Msg + ": " + e.Err.Error()
	case e.Msg != "":
		return e.Msg
	case e.Err != nil:
		return e.Err.Error()
	}
	return string(e.Kind)
}

func (e *Error) Unwrap() error { return e.Err }

// ErrorCode returns the stable code of e.
func (e *Error) ErrorCode() string {
	if e.Code != "" {
		return e.Code
	}
	return string(e.Kind)
}

// IsRecoverable reports whether retrying the same operation later may
// succeed: model and store failures and cancellation are recoverable;
// configuration, bad input and policy failures are not.
func (e *Error) IsRecoverable() bool {
	if e.Recoverable != nil {
		return *e.Recoverable
	}
	switch e.Kind {
	case FailModel, FailStore, FailCanceled, FailTool:
		return true
	}
	return false
}

// AsError returns err as an *Error, wrapping unknown errors as internal.
func AsError(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return &Error{Kind: FailInternal, Err: err}
}

// IsRecoverable reports whether err is a recoverable runtime error.
func IsRecoverable(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.IsRecoverable()
}
