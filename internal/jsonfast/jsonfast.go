// Package jsonfast decodes and encodes the simple Go types that tool
// arguments and results use, without reflection on the hot path, and
// declines whatever it is not certain to handle exactly as encoding/json
// does.
//
// A Decoder or Encoder compiles a plan for its type once; each call then
// walks the plan with field offsets. Neither is a replacement for
// encoding/json: when one declines (returns false), the caller falls back
// to encoding/json, which then decides, with its own errors, what the input
// means. A call that succeeds gives exactly the result encoding/json would
// give:
//
//	var dec = jsonfast.NewDecoder[Args]() // nil if Args is outside the fast path
//
//	func decode(data []byte) (Args, error) {
//		var a Args
//		if dec.Decode(data, &a) { // a nil Decoder declines
//			return a, nil
//		}
//		a = Args{} // Decode may have written part of a
//		err := json.Unmarshal(data, &a)
//		return a, err
//	}
//
// # Types on the fast path
//
// A type is on the fast path if it is, recursively, made of bool, string,
// the signed and unsigned integer types except uintptr, float32, float64,
// named types of those kinds, structs, and slices of such types other than
// byte slices (which encoding/json writes in base64). Struct fields are
// named as encoding/json names them: exported fields only, by their json
// tag name if they have one, else by their Go name; json:"-" leaves a field
// out.
//
// NewDecoder and NewEncoder return nil for any other type, and for types
// whose encoding/json behaviour is not plain: pointers, maps, interfaces,
// arrays, embedded fields, recursive types, json.Number, types with JSON or
// text (un)marshaling methods, the ",string" tag option (and ",omitzero"
// when encoding), two fields with one JSON name, more than 64 fields in one
// struct, and field names with characters other than ASCII letters, digits,
// '_', '.' and '-', or named "-" (json:"-,"). A Decoder's type must be a
// struct, since arguments are a JSON object; an Encoder's may be any type
// on the fast path.
//
// # Why offsets are safe
//
// A plan holds each field's offset within its struct, taken from reflect
// when the plan is compiled, and each slice element's size. A call adds
// those to the address of the value it was given (a *T, which holds a T,
// which is laid out as the plan says) or of a slice's backing array (within
// its length), so every address stays inside the object it was derived
// from. Every load and store goes through a pointer of the field's own
// type or of one with the same size, alignment and pointer map (a []Level,
// Level being a named string, is grown as a []string; an []int64 or a
// []float64 as a []uint64), so the compiler emits the write barriers the
// garbage collector needs, and the collector scans new backing arrays
// correctly. Slices of structs, whose layout only reflect knows, are grown
// by reflect.Value.Grow. The tests run under the race detector, which turns
// on the compiler's checkptr instrumentation of these conversions.
//
// The tests compare the fast path with encoding/json as built, so they
// also hold it to encoding/json's behaviour under GOEXPERIMENT=jsonv2.
package jsonfast

import (
	"reflect"
	"sync"
	"unsafe"

	"github.com/agentrt/agentrt/internal/jsonscan"
)

// A Decoder decodes JSON objects into a T on the fast path. It is safe for
// concurrent use. A nil *Decoder is valid and declines every input.
type Decoder[T any] struct {
	plan *node
}

// NewDecoder returns a Decoder for T, or nil if T is not a struct on the
// fast path (see the package documentation). It compiles a plan for T;
// call it once per type and keep the result.
func NewDecoder[T any]() *Decoder[T] {
	return newDecoder[T](false)
}

// NewSchemaDecoder is NewDecoder for a caller that checks arguments
// against the JSON Schema that jsonschema-go infers from T (jsonschema.For):
// its Decode also declines an object, at any depth, that lacks a field
// tagged neither omitempty nor omitzero, which encoding/json would leave
// zero but the inferred schema requires. Then whatever Decode takes fits
// the inferred schema: in every other respect Decode is as strict as the
// schema or stricter (exact keys, as the schema forbids other
// properties; no null; integers in the range of their Go type, as the
// schema's bounds say; numbers that are integer literals for integer
// fields), so such a caller need not check what Decode took. The tool
// package's tests hold the two to that.
func NewSchemaDecoder[T any]() *Decoder[T] {
	return newDecoder[T](true)
}

func newDecoder[T any](require bool) *Decoder[T] {
	t := reflect.TypeFor[T]()
	if t.Kind() != reflect.Struct {
		return nil
	}
	n, ok := compile(t, forDecode, require)
	if !ok {
		return nil
	}
	return &Decoder[T]{plan: n}
}

// scanners holds idle Scanners, so that a Decode does not allocate one
// (with its depth stack) on each call.
var scanners = sync.Pool{New: func() any { return new(jsonscan.Scanner) }}

// Decode decodes the JSON object in data into *v, which must hold T's zero
// value, and reports whether it did. It returns true only if json.Unmarshal
// would decode data into a zero T without error and produce the same
// value. It returns false, leaving *v in an unspecified state, when data is
// not valid JSON, not an object, or holds anything encoding/json would
// treat in a way the fast path does not: a key that matches no field name
// exactly (encoding/json folds case and ignores unknown keys), a key
// repeated in one object, a null, a value of another kind than its field,
// or a number its field cannot hold (out of range, or not an integer
// literal for an integer field). A Decoder made by NewSchemaDecoder also
// declines an object that lacks a required field.
//
// Decode does not retain data: strings in *v are copies.
func (d *Decoder[T]) Decode(data []byte, v *T) bool {
	if d == nil {
		return false
	}
	s := scanners.Get().(*jsonscan.Scanner)
	s.Reset(data)
	ok := decodeStruct(s, d.plan, unsafe.Pointer(v)) && s.End()
	s.Reset(nil) // do not keep data alive in the pool
	scanners.Put(s)
	return ok
}

// An Encoder encodes a T as JSON on the fast path. It is safe for
// concurrent use. A nil *Encoder is valid and declines every value.
type Encoder[T any] struct {
	plan *node
}

// NewEncoder returns an Encoder for T, or nil if T is not on the fast path
// (see the package documentation). It compiles a plan for T; call it once
// per type and keep the result.
func NewEncoder[T any]() *Encoder[T] {
	n, ok := compile(reflect.TypeFor[T](), forEncode, false)
	if !ok {
		return nil
	}
	return &Encoder[T]{plan: n}
}

// Append appends the JSON encoding of *v to dst and reports whether it
// did. When it returns true, the bytes appended are exactly those
// json.Marshal(*v) returns. It returns dst and false when *v holds a value
// json.Marshal rejects (a NaN or infinite float); the bytes of dst beyond
// its length may then have been overwritten.
func (e *Encoder[T]) Append(dst []byte, v *T) ([]byte, bool) {
	if e == nil {
		return dst, false
	}
	out, ok := appendValue(dst, e.plan, unsafe.Pointer(v))
	if !ok {
		return dst, false
	}
	return out, true
}
