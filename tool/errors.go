package tool

import (
	"errors"
	"fmt"
)

// Sentinel errors found (wrapped) in Result.Err; test them with errors.Is.
var (
	// ErrUnknownTool: the model named a tool the Registry does not hold.
	ErrUnknownTool = errors.New("unknown tool")
	// ErrTimeout: the call ran past its timeout (Meta.Timeout, else the
	// Registry's default).
	ErrTimeout = errors.New("timed out")
)

// ArgumentError reports arguments that do not fit a tool's input schema:
// not JSON, not an object, a missing or unknown property, a value of the
// wrong type or out of range. The model caused it and can fix it, so its
// message names the offending property.
type ArgumentError struct {
	Tool string // the tool's name
	// Path locates the offending value inside the arguments, like
	// "filters[2].name"; it is empty when the problem is the whole object.
	Path string
	Msg  string // what is wrong, e.g. `missing required property "city"`
	Err  error  // the underlying error, if any (a JSON syntax error, say)
}

func (e *ArgumentError) Error() string {
	if e.Path == "" {
		return fmt.Sprintf("tool %q: invalid arguments: %s", e.Tool, e.Msg)
	}
	return fmt.Sprintf("tool %q: invalid argument %q: %s", e.Tool, e.Path, e.Msg)
}

func (e *ArgumentError) Unwrap() error { return e.Err }

// PanicError reports a tool that panicked. Registry.Call recovers the panic
// and returns it as a failed Result whose Err is a *PanicError.
type PanicError struct {
	Tool  string
	Value any    // what the tool passed to panic
	Stack []byte // the panicking goroutine's stack, for logs; never shown to the model
}

func (e *PanicError) Error() string {
	return fmt.Sprintf("tool %q panicked: %v", e.Tool, e.Value)
}

// Unwrap returns the panic value if it is an error.
func (e *PanicError) Unwrap() error {
	err, _ := e.Value.(error)
	return err
}
