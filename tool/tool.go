package tool

import (
	"context"
	"encoding/json"
	"time"
)

// Definition describes a tool to a model and to people.
type Definition struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"input_schema"`
}

// Tool is something a model can call.
//
// Call receives the model's arguments as a raw JSON object and returns the
// result as JSON. An error is a tool failure: the runtime hands its text to
// the model as a failed tool result and the run goes on. Call must be safe
// for concurrent use: the calls of one model reply run concurrently.
type Tool interface {
	Definition() Definition
	Call(ctx context.Context, args json.RawMessage) (json.RawMessage, error)
}

// Approval is a tool's approval policy.
type Approval string

// Approval policies. The zero value means auto.
const (
	ApprovalAuto Approval = "auto" // run without asking
	ApprovalAsk  Approval = "ask"  // wait for a human to approve or reject
	ApprovalDeny Approval = "deny" // never run; the model is told so
)

// Meta is per-tool policy the runtime applies around a call.
type Meta struct {
	Approval Approval      `json:"approval,omitempty"`
	Timeout  time.Duration `json:"timeout,omitempty"` // zero means the runtime default
	// Isolate runs each call on a goroutine of its own, so that
	// Registry.Call returns at the timeout, or when its context ends, even
	// if the tool ignores its context. Set it for tools that may block
	// without heeding their context (a library call that takes none, a
	// blocking syscall). It costs a goroutine hand-off per call, a few
	// microseconds; without it a tool runs on the caller's goroutine.
	Isolate bool `json:"isolate,omitempty"`
	// AtMostOnce marks a tool whose calls must not be repeated blindly: it
	// charges a card, sends a message, moves money. A call of it that was
	// running when its process stopped (so that its result was never
	// stored) is not run again when the session resumes; it becomes a
	// request for a person, who marks it done (with its result), failed,
	// or to be retried. Without it a call in flight at a crash runs again
	// (at least once), with the same CallInfo.IdempotencyKey.
	AtMostOnce bool `json:"at_most_once,omitempty"`
	// AsksUser marks a tool the runtime does not run: a call of it becomes
	// a human request (a prompt, or a select when the arguments carry
	// options: builtin.AskUserInput), and the person's answer is the
	// call's result.
	AsksUser bool `json:"asks_user,omitempty"`
	// Delegates marks a tool whose calls hand their task to an agent
	// outside the runtime (a remote A2A agent): the runtime gives each
	// call a Delegation (DelegationFrom) and records what it reports in
	// the calling session's log as it records an in-process sub-agent's.
	Delegates bool `json:"delegates,omitempty"`
}

// CallInfo identifies one call of a tool across attempts and processes.
// The runtime puts it in the context of every call it makes; read it with
// CallInfoFrom.
type CallInfo struct {
	SessionID string
	CallID    string
	// IdempotencyKey is the same for every attempt of the call, in any
	// process: pass it to the services a tool calls (as an idempotency
	// key, a request id) so that they can recognise a repeated request.
	IdempotencyKey string
	// Attempt is 1 the first time the call runs, and 2 or more when it
	// runs again because the process running it stopped before its result
	// was stored.
	Attempt int
}

type callInfoKey struct{}

// WithCallInfo returns ctx carrying info.
func WithCallInfo(ctx context.Context, info CallInfo) context.Context {
	return context.WithValue(ctx, callInfoKey{}, info)
}

// CallInfoFrom returns the CallInfo in ctx, if any. Its IdempotencyKey
// is set.
func CallInfoFrom(ctx context.Context) (CallInfo, bool) {
	info, ok := ctx.Value(callInfoKey{}).(CallInfo)
	if ok && info.IdempotencyKey == "" {
		info.IdempotencyKey = IdempotencyKey(info.SessionID, info.CallID)
	}
	return info, ok
}

// IdempotencyKey is the key of call callID of session sessionID.
func IdempotencyKey(sessionID, callID string) string { return sessionID + "/" + callID }

// MetaTool is implemented by tools that carry their own Meta.
type MetaTool interface {
	Tool
	Meta() Meta
}

// MetaOf returns t's Meta, or the zero Meta.
func MetaOf(t Tool) Meta {
	if m, ok := t.(MetaTool); ok {
		return m.Meta()
	}
	return Meta{}
}

// Result is the outcome of one call, success or failure, as the model sees it.
type Result struct {
	OK bool `json:"ok"`
	// Output is the tool's JSON result when OK.
	Output json.RawMessage `json:"result,omitempty"`
	// Error says what went wrong when not OK, in words a model can act on.
	Error   string        `json:"error,omitempty"`
	Latency time.Duration `json:"-"`
	// Err is the failure as a Go value when not OK, for programs rather
	// than models: test it with errors.Is (ErrUnknownTool, ErrTimeout,
	// context.Canceled) or errors.As (*ArgumentError, *PanicError). Its
	// text is Error.
	Err error `json:"-"`
}
