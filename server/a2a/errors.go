package a2a

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"maps"
	"reflect"
	"strings"
	"time"

	spec "github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	"github.com/a2aproject/a2a-go/v2/errordetails"

	"github.com/agentrt/agentrt"
)

// Errors of the A2A API. A client reads an error's JSON-RPC code (A2A's
// kind of error) and its message, a sentence of the adapter's own that
// says what was wrong and what to do: never a2a-go's chain of wrapped
// steps ("executor setup failed: failed to load exec ctx: ..."), a Go
// type's name or what the store said (which goes to the log).
//
// The adapter's own errors are made with rpcError, whose message is the
// sentence the client reads. Every error leaving the JSON-RPC handler
// goes through public (the handler is wrapped in publicHandler), which
// keeps such a sentence, gives the runtime's errors their sentence
// without their cause, and says in its own words what a2a-go refused.

// rpcError is an error of kind code (one of a2a's sentinel errors) whose
// message is format's sentence.
func rpcError(code error, format string, args ...any) error {
	return &spec.Error{Err: code, Message: fmt.Sprintf(format, args...)}
}

// kinds are a2a's kinds of errors, each with its JSON-RPC code, in the
// order public looks for them in an error's chain.
var kinds = []struct {
	err  error
	code int
}{
	{spec.ErrTaskNotFound, -32001},
	{spec.ErrTaskNotCancelable, -32002},
	{spec.ErrPushNotificationNotSupported, -32003},
	{spec.ErrUnsupportedOperation, -32004},
	{spec.ErrUnsupportedContentType, -32005},
	{spec.ErrInvalidAgentResponse, -32006},
	{spec.ErrExtendedCardNotConfigured, -32007},
	{spec.ErrExtensionSupportRequired, -32008},
	{spec.ErrVersionNotSupported, -32009},
	{spec.ErrUnauthenticated, -31401},
	{spec.ErrUnauthorized, -31403},
	{spec.ErrParseError, -32700},
	{spec.ErrInvalidRequest, -32600},
	{spec.ErrMethodNotFound, -32601},
	{spec.ErrInvalidParams, -32602},
	{spec.ErrServerError, -32000},
	{spec.ErrInternalError, -32603},
}

// kindOf is the kind of err and its JSON-RPC code: the first of kinds
// its chain holds, else an internal error.
func kindOf(err error) (code int, kind error) {
	for _, k := range kinds {
		if errors.Is(err, k.err) {
			return k.code, k.err
		}
	}
	return -32603, spec.ErrInternalError
}

// public is err as a client reads it (see above); subject names what the
// request was about ("task task_…"), for a2a-go's errors that do not.
// A failure of the server's is logged with its cause.
func public(ctx context.Context, log *slog.Logger, err error, subject string) error {
	if err == nil {
		return nil
	}
	_, kind := kindOf(err)
	var own *spec.Error
	if errors.As(err, &own) && own.Message != "" {
		return &spec.Error{Err: kind, Message: own.Message, Details: own.Details, TypedDetails: own.TypedDetails}
	}
	var e *agentrt.Error
	if errors.As(err, &e) {
		if !errors.Is(err, kind) || kind == spec.ErrInternalError {
			kind = kindOfRuntime(e)
		}
		if kind == spec.ErrInternalError {
			log.LogAttrs(ctx, slog.LevelError, "a2a: request failed", slog.String("code", e.ErrorCode()), slog.String("error", err.Error()))
		}
		return (&spec.Error{Err: kind, Message: runtimeMessage(e)}).WithErrorInfoMeta(map[string]string{"agentrt.code": e.ErrorCode()})
	}
	msg := kind.Error()
	switch {
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		msg = "the request ended before it was answered"
	case kind == spec.ErrTaskNotFound && subject != "":
		msg = subject + " not found"
	case kind == spec.ErrInternalError:
		log.LogAttrs(ctx, slog.LevelError, "a2a: request failed", slog.String("error", err.Error()))
		msg = "internal error: the server could not answer the request (its log says why)"
	default:
		// a2a-go's own refusal, which its wording would tell through the
		// steps that led to it: the kind says what it was.
		log.LogAttrs(ctx, slog.LevelDebug, "a2a: request refused", slog.String("error", err.Error()))
	}
	return &spec.Error{Err: kind, Message: msg}
}

// kindOfRuntime is the A2A kind of a runtime error: bad input is invalid
// params, a missing session a task not found, a state that does not
// allow the request an invalid request; anything else the server's.
func kindOfRuntime(e *agentrt.Error) error {
	switch {
	case e.ErrorCode() == agentrt.CodeNotFound:
		return spec.ErrTaskNotFound
	case e.Kind == agentrt.FailInput:
		return spec.ErrInvalidParams
	case e.Kind == agentrt.FailState, e.Kind == agentrt.FailPolicy:
		return spec.ErrInvalidRequest
	}
	return spec.ErrInternalError
}

// runtimeMessage is the sentence of runtime error e a client reads: its
// own, without its cause when it is a failure of the store's or the
// server's (the cause goes to the log).
func runtimeMessage(e *agentrt.Error) string {
	if e.Kind == agentrt.FailStore || e.Kind == agentrt.FailInternal {
		if e.Msg != "" {
			return e.Msg
		}
		return string(e.Kind) + " failure"
	}
	return strings.TrimSpace(e.Error())
}

// publicText is err as a sentence for a task's status message (a task
// that failed because following its session did).
func publicText(err error) string {
	if e := (*agentrt.Error)(nil); errors.As(err, &e) {
		return runtimeMessage(e)
	}
	var own *spec.Error
	if errors.As(err, &own) && own.Message != "" {
		return own.Message
	}
	return "internal error"
}

// rpcErrorObject is a JSON-RPC error object as a2a-go's server writes
// one: the code, the message, and the error's reason as a
// google.rpc.ErrorInfo.
func rpcErrorObject(err error) map[string]any {
	code, kind := kindOf(err)
	meta := map[string]string{"timestamp": time.Now().UTC().Format(time.RFC3339)}
	var own *spec.Error
	if errors.As(err, &own) {
		for _, d := range own.TypedDetails {
			if m, ok := d.Value["metadata"].(map[string]string); ok && d.TypeURL == errordetails.ErrorInfoType {
				maps.Copy(meta, m)
			}
		}
	}
	return map[string]any{"code": code, "message": err.Error(),
		"data": []*errordetails.Typed{errordetails.NewErrorInfo(spec.ErrorReason(kind), spec.ProtocolDomain, meta)}}
}

// paramsOf is the type of each method's params, which checkParams
// decodes as a2a-go's server will.
var paramsOf = map[string]func() any{
	"SendMessage":                      func() any { return new(spec.SendMessageRequest) },
	methodStream:                       func() any { return new(spec.SendMessageRequest) },
	"GetTask":                          func() any { return new(spec.GetTaskRequest) },
	"ListTasks":                        func() any { return new(spec.ListTasksRequest) },
	"CancelTask":                       func() any { return new(spec.CancelTaskRequest) },
	"SubscribeToTask":                  func() any { return new(spec.SubscribeToTaskRequest) },
	"GetTaskPushNotificationConfig":    func() any { return new(spec.GetTaskPushConfigRequest) },
	"CreateTaskPushNotificationConfig": func() any { return new(spec.PushConfig) },
	"ListTaskPushNotificationConfigs":  func() any { return new(spec.ListTaskPushConfigRequest) },
	"DeleteTaskPushNotificationConfig": func() any { return new(spec.DeleteTaskPushConfigRequest) },
	"GetExtendedAgentCard":             func() any { return new(spec.GetExtendedAgentCardRequest) },
}

// checkParams decodes the params of a request for method as a2a-go's
// server will, and returns the error a client reads when they do not
// decode (a2a-go's would name the Go types it decodes into). v is the
// decoded params (nil for a method it does not know, which a2a-go
// refuses).
func checkParams(method string, params json.RawMessage) (v any, err error) {
	mk, ok := paramsOf[method]
	if !ok {
		return nil, nil
	}
	v = mk()
	if len(params) == 0 {
		return v, nil
	}
	if err := json.Unmarshal(params, v); err != nil {
		var te *json.UnmarshalTypeError
		var se *json.SyntaxError
		switch {
		case errors.As(err, &te) && te.Field != "":
			return nil, rpcError(spec.ErrInvalidParams, "params.%s: want %s, got %s", te.Field, jsonType(te.Type), te.Value)
		case errors.As(err, &te):
			return nil, rpcError(spec.ErrInvalidParams, "params: want %s, got %s", jsonType(te.Type), te.Value)
		case errors.As(err, &se):
			return nil, rpcError(spec.ErrParseError, "params are not JSON: %v", se)
		default:
			return nil, rpcError(spec.ErrInvalidParams, "params of %s: %s", method, err)
		}
	}
	return v, nil
}

// jsonType names in JSON's words what a value of Go type t is.
func jsonType(t reflect.Type) string {
	if t == nil {
		return "a value"
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Struct, reflect.Map:
		return "an object"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	}
	return "another value"
}

// publicHandler is the request handler a2a-go's JSON-RPC server calls:
// h, with every error made public.
type publicHandler struct {
	h   a2asrv.RequestHandler
	log *slog.Logger
}

var _ a2asrv.RequestHandler = publicHandler{}

func taskSubject(id spec.TaskID) string { return "task " + string(id) }

func (p publicHandler) err(ctx context.Context, err error, subject string) error {
	return public(ctx, p.log, err, subject)
}

// stream makes the error that ends events public.
func (p publicHandler) stream(ctx context.Context, events iter.Seq2[spec.Event, error], subject string) iter.Seq2[spec.Event, error] {
	return func(yield func(spec.Event, error) bool) {
		for ev, err := range events {
			if err != nil {
				yield(nil, p.err(ctx, err, subject))
				return
			}
			if !yield(ev, nil) {
				return
			}
		}
	}
}

func (p publicHandler) GetTask(ctx context.Context, req *spec.GetTaskRequest) (*spec.Task, error) {
	t, err := p.h.GetTask(ctx, req)
	return t, p.err(ctx, err, taskSubject(req.ID))
}

func (p publicHandler) ListTasks(ctx context.Context, req *spec.ListTasksRequest) (*spec.ListTasksResponse, error) {
	l, err := p.h.ListTasks(ctx, req)
	return l, p.err(ctx, err, "")
}

func (p publicHandler) CancelTask(ctx context.Context, req *spec.CancelTaskRequest) (*spec.Task, error) {
	t, err := p.h.CancelTask(ctx, req)
	return t, p.err(ctx, err, taskSubject(req.ID))
}

func (p publicHandler) SendMessage(ctx context.Context, req *spec.SendMessageRequest) (spec.SendMessageResult, error) {
	r, err := p.h.SendMessage(ctx, req)
	return r, p.err(ctx, err, messageSubject(req))
}

func (p publicHandler) SubscribeToTask(ctx context.Context, req *spec.SubscribeToTaskRequest) iter.Seq2[spec.Event, error] {
	return p.stream(ctx, p.h.SubscribeToTask(ctx, req), taskSubject(req.ID))
}

func (p publicHandler) SendStreamingMessage(ctx context.Context, req *spec.SendMessageRequest) iter.Seq2[spec.Event, error] {
	return p.stream(ctx, p.h.SendStreamingMessage(ctx, req), messageSubject(req))
}

func (p publicHandler) GetTaskPushConfig(ctx context.Context, req *spec.GetTaskPushConfigRequest) (*spec.PushConfig, error) {
	c, err := p.h.GetTaskPushConfig(ctx, req)
	return c, p.err(ctx, err, taskSubject(req.TaskID))
}

func (p publicHandler) ListTaskPushConfigs(ctx context.Context, req *spec.ListTaskPushConfigRequest) (*spec.ListTaskPushConfigResponse, error) {
	l, err := p.h.ListTaskPushConfigs(ctx, req)
	return l, p.err(ctx, err, taskSubject(req.TaskID))
}

func (p publicHandler) CreateTaskPushConfig(ctx context.Context, req *spec.PushConfig) (*spec.PushConfig, error) {
	c, err := p.h.CreateTaskPushConfig(ctx, req)
	return c, p.err(ctx, err, taskSubject(req.TaskID))
}

func (p publicHandler) DeleteTaskPushConfig(ctx context.Context, req *spec.DeleteTaskPushConfigRequest) error {
	return p.err(ctx, p.h.DeleteTaskPushConfig(ctx, req), taskSubject(req.TaskID))
}

func (p publicHandler) GetExtendedAgentCard(ctx context.Context, req *spec.GetExtendedAgentCardRequest) (*spec.AgentCard, error) {
	c, err := p.h.GetExtendedAgentCard(ctx, req)
	return c, p.err(ctx, err, "")
}

// messageSubject names the task a message is on, if any.
func messageSubject(req *spec.SendMessageRequest) string {
	if req == nil || req.Message == nil || req.Message.TaskID == "" {
		return ""
	}
	return taskSubject(req.Message.TaskID)
}

// partKind names the kind of part p in the protocol's words.
func partKind(p *spec.Part) string {
	switch p.Content.(type) {
	case spec.Text:
		return "a text part"
	case spec.Data:
		return "a data part"
	case spec.Raw:
		return "a file part (bytes)"
	case spec.URL:
		return "a file part (url)"
	}
	return "a part with no content"
}
