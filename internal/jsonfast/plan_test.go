package jsonfast

import (
	"encoding/json"
	"reflect"
	"strconv"
	"testing"
	"time"
)

type (
	valueUnmarshaler   int
	pointerUnmarshaler string
	textUnmarshaler    bool
	valueMarshaler     int
	pointerMarshaler   string
	textMarshaler      float64
	bytesNamed         []byte
	byteNamed          uint8
	Tree               struct{ Kids []Tree }
	Inner              struct{ A int }
	inner              struct{ A int }
	Outer              struct{ T Tree }
)

func (valueUnmarshaler) UnmarshalJSON([]byte) error    { return nil }
func (*pointerUnmarshaler) UnmarshalJSON([]byte) error { return nil }
func (*textUnmarshaler) UnmarshalText([]byte) error    { return nil }
func (valueMarshaler) MarshalJSON() ([]byte, error)    { return []byte("1"), nil }
func (*pointerMarshaler) MarshalJSON() ([]byte, error) { return []byte("1"), nil }
func (textMarshaler) MarshalText() ([]byte, error)     { return []byte("t"), nil }
func (*byteNamed) UnmarshalText([]byte) error          { return nil }
func (Inner) UnmarshalJSONNotReally([]byte) error      { return nil }

// planTest says whether NewDecoder and NewEncoder return non-nil for a
// type.
type planTest struct {
	name     string
	dec, enc bool
	decoder  func() bool
	encoder  func() bool
}

func plan[T any](name string, dec, enc bool) planTest {
	return planTest{
		name: name, dec: dec, enc: enc,
		decoder: func() bool { return NewDecoder[T]() != nil },
		encoder: func() bool { return NewEncoder[T]() != nil },
	}
}

func TestPlans(t *testing.T) {
	t.Parallel()
	tests := []planTest{
		// On the fast path.
		plan[Scalars]("Scalars", true, true),
		plan[Shape]("Shape", true, true),
		plan[Named]("Named", true, true),
		plan[Wide]("Wide", true, true),
		plan[Empty]("Empty", true, true),
		plan[struct{}]("struct{}", true, true),
		plan[struct{ X []Inner }]("slice of structs", true, true),
		plan[struct{ X [][]string }]("slice of slices", true, true),
		plan[struct{ X []int8 }]("[]int8", true, true),
		plan[struct {
			X int `json:"x,omitzero"`
		}]("omitzero", true, false),
		plan[struct{ inner inner }]("unexported field of an unexported type", true, true),
		plan[struct{ m map[string]any }]("unexported field of a type off the fast path", true, true),
		plan[struct {
			M map[string]any `json:"-"`
		}]("skipped field of a type off the fast path", true, true),
		plan[struct{ X inner }]("exported field of an unexported type", true, true),
		plan[struct{ X Inner }]("methods other than the JSON ones", true, true),
		plan[struct{ X valueMarshaler }]("Marshaler, for decoding", true, false),
		plan[struct{ X textMarshaler }]("TextMarshaler, for decoding", true, false),
		plan[struct{ X valueUnmarshaler }]("Unmarshaler, for encoding", false, true),
		plan[struct{ X textUnmarshaler }]("TextUnmarshaler, for encoding", false, true),

		// Top-level types: a Decoder needs an object.
		plan[string]("string", false, true),
		plan[Level]("named string", false, true),
		plan[bool]("bool", false, true),
		plan[int]("int", false, true),
		plan[uint64]("uint64", false, true),
		plan[float32]("float32", false, true),
		plan[[]string]("[]string", false, true),
		plan[*Add]("*struct", false, false),
		plan[map[string]any]("map", false, false),
		plan[any]("any", false, false),
		plan[[]byte]("[]byte", false, false),
		plan[json.RawMessage]("json.RawMessage", false, false),

		// Field types off the fast path.
		plan[struct{ X *int }]("pointer", false, false),
		plan[struct{ X *Inner }]("pointer to struct", false, false),
		plan[struct{ X map[string]int }]("map field", false, false),
		plan[struct{ X any }]("interface", false, false),
		plan[struct{ X error }]("non-empty interface", false, false),
		plan[struct{ X [2]int }]("array", false, false),
		plan[struct{ X uintptr }]("uintptr", false, false),
		plan[struct{ X complex128 }]("complex", false, false),
		plan[struct{ X chan int }]("chan", false, false),
		plan[struct{ X func() }]("func", false, false),
		plan[struct{ X []byte }]("[]byte field", false, false),
		plan[struct{ X bytesNamed }]("named []byte", false, false),
		plan[struct{ X []byteNamed }]("slice of named byte", false, false),
		plan[struct{ X json.RawMessage }]("json.RawMessage field", false, false),
		plan[struct{ X json.Number }]("json.Number", false, false),
		plan[struct{ X []json.Number }]("[]json.Number", false, false),
		plan[struct{ X time.Time }]("time.Time", false, false),
		plan[struct{ X time.Duration }]("time.Duration", true, true), // a plain int64 to encoding/json
		plan[struct{ X pointerUnmarshaler }]("Unmarshaler (pointer receiver)", false, true),
		plan[struct{ X []valueUnmarshaler }]("slice of Unmarshaler", false, true),
		plan[struct{ X pointerMarshaler }]("Marshaler (pointer receiver)", true, false),
		plan[struct{ X []textMarshaler }]("slice of TextMarshaler", true, false),
		plan[struct{ X []Tree }]("recursive", false, false),
		plan[Outer]("containing a recursive type", false, false),
		plan[struct{ A, B Inner }]("the same struct twice", true, true),

		// Embedded fields.
		plan[struct{ Inner }]("embedded struct", false, false),
		plan[struct{ *Inner }]("embedded pointer", false, false),
		plan[struct{ inner }]("embedded unexported struct", false, false),
		plan[struct{ Level }]("embedded string", false, false),

		// Tags.
		plan[struct {
			X int `json:",string"`
		}]("string option", false, false),
		plan[struct {
			X int `json:"x,omitempty,string"`
		}]("string option after another", false, false),
		plan[struct {
			A int `json:"B"`
			B int
		}]("tag name equal to another field's name", false, false),
		plan[struct {
			A int `json:"a b"`
		}]("space in a name", false, false),
		plan[struct {
			A int `json:"a:b"`
		}]("colon in a name", false, false),
		plan[struct {
			A int `json:"é"`
		}]("non-ASCII name", false, false),
		plan[struct{ É int }]("non-ASCII Go name", false, false),
		plan[struct {
			A int `json:"<a>"`
		}]("HTML in a name", false, false),
	}
	for _, tt := range tests {
		if got := tt.decoder(); got != tt.dec {
			t.Errorf("%s: NewDecoder != nil is %v, want %v", tt.name, got, tt.dec)
		}
		if got := tt.encoder(); got != tt.enc {
			t.Errorf("%s: NewEncoder != nil is %v, want %v", tt.name, got, tt.enc)
		}
	}
}

// TestTags checks tags that linters rightly flag, so they are built by
// reflect rather than written out.
func TestTags(t *testing.T) {
	t.Parallel()
	field := func(name, tag string) reflect.StructField {
		return reflect.StructField{Name: name, Type: reflect.TypeFor[int](), Tag: reflect.StructTag(tag)}
	}
	tests := []struct {
		name   string
		fields []reflect.StructField
		ok     bool
	}{
		{"duplicate tag names", []reflect.StructField{field("A", `json:"x"`), field("B", `json:"x"`)}, false},
		{"named -", []reflect.StructField{field("A", `json:"-,"`)}, false},
		{"quote in a name", []reflect.StructField{field("A", `json:"a\"b"`)}, false},
		{"unknown option", []reflect.StructField{field("A", `json:"a,unknown"`)}, true},
		{"string option among unknown ones", []reflect.StructField{field("A", `json:"a,x,string,y"`)}, false},
	}
	for _, tt := range tests {
		typ := reflect.StructOf(tt.fields)
		for _, m := range []mode{forDecode, forEncode} {
			if _, ok := compile(typ, m, false); ok != tt.ok {
				t.Errorf("%s, mode %d: compiled = %v, want %v", tt.name, m, ok, tt.ok)
			}
		}
	}
}

// TestMaxFields checks the limit on a struct's fields, with types built
// by reflect since no one writes 65 fields out.
func TestMaxFields(t *testing.T) {
	t.Parallel()
	for _, n := range []int{maxFields, maxFields + 1} {
		fields := make([]reflect.StructField, n)
		for i := range fields {
			fields[i] = reflect.StructField{Name: "F" + strconv.Itoa(i), Type: reflect.TypeFor[int]()}
		}
		typ := reflect.StructOf(fields)
		for _, m := range []mode{forDecode, forEncode} {
			if _, ok := compile(typ, m, false); ok != (n <= maxFields) {
				t.Errorf("%d fields, mode %d: compiled = %v", n, m, ok)
			}
		}
	}
}
