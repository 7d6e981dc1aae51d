package tool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"

	"github.com/google/jsonschema-go/jsonschema"
)

// An Option configures New.
//
// A Meta is an Option: passing one sets the tool's policy, as in
// New(name, desc, fn, Meta{Approval: ApprovalAsk}). (It cannot be spelled
// WithMeta: that name belongs to the function that wraps any Tool.)
type Option interface {
	apply(*options)
}

type options struct {
	meta   Meta
	schema *jsonschema.Schema
}

func (m Meta) apply(o *options) { o.meta = m }

type optionFunc func(*options)

func (f optionFunc) apply(o *options) { f(o) }

// WithInputSchema makes New use s as the tool's input schema instead of
// inferring one from In. Arguments are still decoded into an In, so s
// should describe In, perhaps more precisely (enums, bounds, patterns).
// s must not be modified afterwards.
func WithInputSchema(s *jsonschema.Schema) Option {
	return optionFunc(func(o *options) { o.schema = s })
}

// New turns fn into a Tool.
//
// The input schema is inferred from In with jsonschema.For (see its
// documentation for the rules: fields are required unless tagged
// omitempty or omitzero, unknown properties are rejected, a "jsonschema"
// tag is the property's description), unless WithInputSchema supplies one.
// In must be a struct, a pointer to one, or a map with string keys, since
// arguments are a JSON object. The schema is resolved once, here.
//
// The tool's Call checks the arguments against the schema and decodes them
// into an In before it calls fn; arguments that do not fit yield an
// *ArgumentError and fn does not run. The Out that fn returns is encoded
// with encoding/json: a string becomes a JSON string. An error from fn is
// the tool's failure, passed on as is.
//
// name must match ^[a-zA-Z0-9_.-]{1,64}$.
func New[In, Out any](name, description string, fn func(context.Context, In) (Out, error), opts ...Option) (Tool, error) {
	if err := checkName(name); err != nil {
		return nil, err
	}
	if fn == nil {
		return nil, fmt.Errorf("tool %q: nil function", name)
	}
	var o options
	for _, opt := range opts {
		if opt != nil {
			opt.apply(&o)
		}
	}
	s := o.schema
	if s == nil {
		var err error
		if s, err = inferSchema[In](); err != nil {
			return nil, fmt.Errorf("tool %q: %w", name, err)
		}
	}
	v, err := newValidator(name, s)
	if err != nil {
		return nil, err
	}
	raw, err := json.Marshal(s)
	if err != nil {
		return nil, fmt.Errorf("tool %q: encoding input schema: %w", name, err)
	}
	return &typed[In, Out]{
		def:  Definition{Name: name, Description: description, InputSchema: raw},
		meta: o.meta,
		v:    v,
		fn:   fn,
	}, nil
}

func inferSchema[In any]() (*jsonschema.Schema, error) {
	t := reflect.TypeFor[In]()
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct && !(t.Kind() == reflect.Map && t.Key().Kind() == reflect.String) {
		return nil, fmt.Errorf("input type %v must be a struct or a map with string keys: arguments are a JSON object", reflect.TypeFor[In]())
	}
	// For the non-pointer type: a pointer would let null through.
	return jsonschema.ForType(t, nil)
}

// Must returns t, and panics if err is not nil. It is for setup code, where
// an invalid tool is a programmer's error:
//
//	var weather = tool.Must(tool.New("weather", "...", getWeather))
func Must(t Tool, err error) Tool {
	if err != nil {
		panic(err)
	}
	return t
}

// checkName reports whether name matches ^[a-zA-Z0-9_.-]{1,64}$, the rule
// model providers apply to tool names.
func checkName(name string) error {
	if name == "" || len(name) > 64 {
		return fmt.Errorf("invalid tool name %q: want 1 to 64 characters", name)
	}
	for i := 0; i < len(name); i++ {
		switch c := name[i]; {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '_', c == '.', c == '-':
		default:
			return fmt.Errorf("invalid tool name %q: want only letters, digits, '_', '.' and '-'", name)
		}
	}
	return nil
}

// typed is the Tool New returns.
type typed[In, Out any] struct {
	def  Definition
	meta Meta
	v    *Validator
	fn   func(context.Context, In) (Out, error)
}

func (t *typed[In, Out]) Definition() Definition { return t.def }
func (t *typed[In, Out]) Meta() Meta             { return t.meta }

func (t *typed[In, Out]) Call(ctx context.Context, args json.RawMessage) (json.RawMessage, error) {
	c, err := t.prepare(normalize(args))
	if err != nil {
		return nil, err
	}
	c.run(ctx)
	return c.result()
}

func (t *typed[In, Out]) validator() *Validator { return t.v }

// prepare validates args against the schema and decodes them into an In.
//
// It decodes first: json.Unmarshal checks the syntax anyway, and once it
// has, the schema check need not check it again. When decoding fails, the
// Validator explains why if it can, in terms of the schema. Every call is
// checked against the schema, whatever In would accept.
func (t *typed[In, Out]) prepare(args json.RawMessage) (invocation, error) {
	c := &typedCall[In, Out]{t: t}
	if err := json.Unmarshal(args, &c.in); err != nil {
		if verr := t.v.Validate(args); verr != nil {
			return nil, verr
		}
		return nil, decodeError(t.def.Name, err)
	}
	if err := t.v.validateJSON(args); err != nil {
		return nil, err
	}
	return c, nil
}

func (t *typed[In, Out]) withMeta(m Meta) Tool {
	c := *t
	c.meta = m
	return &c
}

// typedCall is one call of a typed tool.
type typedCall[In, Out any] struct {
	callState
	t   *typed[In, Out]
	in  In
	out Out
	err error
}

func (c *typedCall[In, Out]) run(ctx context.Context) { c.out, c.err = c.t.fn(ctx, c.in) }

func (c *typedCall[In, Out]) result() (json.RawMessage, error) {
	if c.err != nil {
		return nil, c.err
	}
	b, err := json.Marshal(c.out)
	if err != nil {
		return nil, fmt.Errorf("tool %q: encoding result: %w", c.t.def.Name, err)
	}
	return b, nil
}

// decodeError turns an error from decoding valid arguments into an In,
// which the schema did not foresee (a number too large for an int32
// field, say), into an *ArgumentError.
func decodeError(tool string, err error) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return &ArgumentError{Tool: tool, Path: te.Field, Msg: fmt.Sprintf("cannot use JSON %s as Go %v", te.Value, te.Type), Err: err}
	}
	return &ArgumentError{Tool: tool, Msg: err.Error(), Err: err}
}

// preparer is implemented by tools that the Registry may call in parts:
// it checks the arguments with the tool's own Validator and prepares the
// call (decoding the arguments) on the caller's goroutine, runs only the
// tool's function on a goroutine of its own if the tool is isolated, and
// encodes the result back on the caller's goroutine. Fresh goroutines
// start with a small stack, and encoding/json would grow it on every call.
type preparer interface {
	validator() *Validator
	prepare(args json.RawMessage) (invocation, error)
}

// WithMeta returns t with Meta m: MetaOf reports m, and Registry.Call
// applies m.Timeout. For a tool made by New the result is a copy of t;
// for any other it is a wrapper, whose Unwrap method returns t for checks
// of optional interfaces that t implements.
func WithMeta(t Tool, m Meta) Tool {
	if w, ok := t.(interface{ withMeta(Meta) Tool }); ok {
		return w.withMeta(m)
	}
	return &metaTool{Tool: t, meta: m}
}

type metaTool struct {
	Tool
	meta Meta
}

func (t *metaTool) Meta() Meta           { return t.meta }
func (t *metaTool) Unwrap() Tool         { return t.Tool }
func (t *metaTool) withMeta(m Meta) Tool { return &metaTool{Tool: t.Tool, meta: m} }
