package jsonfast

import (
	"encoding"
	"encoding/json"
	"math"
	mathbits "math/bits"
	"reflect"
	"strings"
	"unsafe"
)

// kind is what a plan node reads or writes.
type kind uint8

const (
	kindBool kind = iota + 1
	kindInt8
	kindInt16
	kindInt32
	kindInt64
	kindUint8
	kindUint16
	kindUint32
	kindUint64
	kindFloat32
	kindFloat64
	kindString
	kindSlice
	kindStruct
)

// A node is the compiled plan for one type. Nodes are immutable once
// compile returns, so a plan may be walked by any number of goroutines.
type node struct {
	kind kind

	// Integers: the range the type holds.
	min  int64
	umax uint64 // also the maximum of signed kinds, as a uint64

	// Slices.
	elem      *node
	elemSize  uintptr
	sliceType reflect.Type // for growing slices of structs

	// Structs.
	fields   []field
	byName   map[string]int // index into fields, for structs with many fields
	required uint64         // bit i: fields[i] must be present (see NewSchemaDecoder)
}

// A field is one member of a struct's JSON object.
type field struct {
	name      string
	key       string // `"name":`, what the encoder writes before the value
	offset    uintptr
	node      *node
	omitEmpty bool
}

// maxFields is the most fields a struct may have: a Decoder tracks the
// fields an object has set in a uint64.
const maxFields = 64

// linearFields is the most fields a struct's keys are looked up in by a
// linear scan; beyond it, by a map.
const linearFields = 8

// mode says which direction a plan is compiled for; the two differ in the
// methods and tag options that take a type off the fast path.
type mode uint8

const (
	forDecode mode = iota
	forEncode
)

var (
	numberType          = reflect.TypeFor[json.Number]()
	marshalerType       = reflect.TypeFor[json.Marshaler]()
	textMarshalerType   = reflect.TypeFor[encoding.TextMarshaler]()
	unmarshalerType     = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// compile returns the plan for t, or false if t is off the fast path.
// With require, a decode plan requires the fields that have neither
// omitempty nor omitzero.
func compile(t reflect.Type, m mode, require bool) (*node, bool) {
	c := compiler{mode: m, require: require, active: make(map[reflect.Type]bool), done: make(map[reflect.Type]*node)}
	return c.compile(t)
}

type compiler struct {
	mode    mode
	require bool
	active  map[reflect.Type]bool  // the struct types being compiled, to decline recursion
	done    map[reflect.Type]*node // the struct types compiled, to share their plans
}

func (c *compiler) compile(t reflect.Type) (*node, bool) {
	if c.custom(t) {
		return nil, false
	}
	switch t.Kind() {
	case reflect.Bool:
		return &node{kind: kindBool}, true
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		b := t.Bits()
		return &node{kind: sized(kindInt8, b), min: -1 << (b - 1), umax: 1<<(b-1) - 1}, true
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		b := t.Bits()
		return &node{kind: sized(kindUint8, b), umax: math.MaxUint64 >> (64 - b)}, true
	case reflect.Float32:
		return &node{kind: kindFloat32}, true
	case reflect.Float64:
		return &node{kind: kindFloat64}, true
	case reflect.String:
		return &node{kind: kindString}, true
	case reflect.Slice:
		return c.slice(t)
	case reflect.Struct:
		return c.structure(t)
	}
	// Pointers, maps, interfaces, arrays, uintptr, complex numbers,
	// channels, functions and unsafe pointers.
	return nil, false
}

// sized returns the kind for an integer of the given bits (8 to 64), from
// the kind for 8 bits.
func sized(k8 kind, bits int) kind {
	return k8 + kind(mathbits.TrailingZeros(uint(bits))-3)
}

// custom reports whether encoding/json treats t other than by its kind:
// json.Number, or a type whose value or pointer has the methods that
// encoding/json calls in this direction. (The method set of *t includes
// that of t.)
func (c *compiler) custom(t reflect.Type) bool {
	if t == numberType {
		return true
	}
	p := reflect.PointerTo(t)
	if c.mode == forDecode {
		return p.Implements(unmarshalerType) || p.Implements(textUnmarshalerType)
	}
	return p.Implements(marshalerType) || p.Implements(textMarshalerType)
}

func (c *compiler) slice(t reflect.Type) (*node, bool) {
	et := t.Elem()
	if et.Kind() == reflect.Uint8 {
		return nil, false // base64 in encoding/json
	}
	en, ok := c.compile(et)
	if !ok {
		return nil, false
	}
	return &node{kind: kindSlice, elem: en, elemSize: et.Size(), sliceType: t}, true
}

func (c *compiler) structure(t reflect.Type) (*node, bool) {
	if n, ok := c.done[t]; ok {
		return n, true
	}
	if c.active[t] {
		return nil, false // recursive: json.Marshal detects cycles, we do not
	}
	c.active[t] = true
	defer delete(c.active, t)

	n := &node{kind: kindStruct}
	names := make(map[string]bool)
	for i := range t.NumField() {
		sf := t.Field(i)
		if sf.Anonymous {
			return nil, false // embedded fields follow Go's promotion rules
		}
		if !sf.IsExported() {
			continue
		}
		tag := sf.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		omitEmpty, omitZero := false, false
		for opt := range strings.SplitSeq(opts, ",") {
			switch opt {
			case "string":
				return nil, false
			case "omitzero":
				omitZero = true
				if c.mode == forEncode {
					// omitzero calls IsZero methods, and reflect's
					// IsZero compares a struct with == (so a -0 field
					// is zero there, but not on its own). Not worth
					// replicating.
					return nil, false
				}
			case "omitempty":
				omitEmpty = true
			}
		}
		if name == "-" {
			return nil, false // json:"-," names a field "-", which linters flag as a likely mistake
		}
		if name == "" {
			name = sf.Name
		}
		if !plainName(name) || names[name] {
			return nil, false
		}
		names[name] = true
		fn, ok := c.compile(sf.Type)
		if !ok {
			return nil, false
		}
		if c.require && !omitEmpty && !omitZero && len(n.fields) < maxFields {
			n.required |= 1 << len(n.fields)
		}
		n.fields = append(n.fields, field{
			name:      name,
			key:       `"` + name + `":`,
			offset:    sf.Offset,
			node:      fn,
			omitEmpty: omitEmpty,
		})
	}
	if len(n.fields) > maxFields {
		return nil, false
	}
	if len(n.fields) > linearFields {
		n.byName = make(map[string]int, len(n.fields))
		for i, f := range n.fields {
			n.byName[f.name] = i
		}
	}
	c.done[t] = n
	return n, true
}

// plainName reports whether name is made only of ASCII letters, digits,
// '_', '.' and '-': a name encoding/json accepts as a tag name, and
// writes without escaping.
func plainName(name string) bool {
	if name == "" {
		return false
	}
	for i := 0; i < len(name); i++ {
		switch c := name[i]; {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '_', c == '.', c == '-':
		default:
			return false
		}
	}
	return true
}

// lookup returns the index of the field named key, or -1.
func (n *node) lookup(key []byte) int {
	if n.byName != nil {
		if i, ok := n.byName[string(key)]; ok {
			return i
		}
		return -1
	}
	for i := range n.fields {
		if n.fields[i].name == string(key) {
			return i
		}
	}
	return -1
}

// appendZero appends a zero element to the slice at p, whose type n
// describes, and returns the element's address.
//
// The calls are static, not through a func value, so that p, which may
// point into the caller's stack, does not escape.
func appendZero(n *node, p unsafe.Pointer) unsafe.Pointer {
	// Grow through a slice type of the same layout and pointer map, so that
	// one instantiation serves all element types of a shape.
	switch n.elem.kind {
	case kindBool, kindInt8, kindUint8:
		return appendZeroOf[uint8](p)
	case kindInt16, kindUint16:
		return appendZeroOf[uint16](p)
	case kindInt32, kindUint32, kindFloat32:
		return appendZeroOf[uint32](p)
	case kindInt64, kindUint64, kindFloat64:
		return appendZeroOf[uint64](p)
	case kindString:
		return appendZeroOf[string](p)
	case kindSlice:
		return appendZeroOf[[]byte](p)
	}
	return appendZeroReflect(n.sliceType, n.elemSize, p)
}

// appendZeroOf appends a zero E to the []E at p and returns the new
// element's address. p may hold a slice of another element type with E's
// size, alignment and pointer map.
func appendZeroOf[E any](p unsafe.Pointer) unsafe.Pointer {
	s := (*[]E)(p)
	var zero E
	if cap(*s) == 0 {
		*s = make([]E, 0, firstCap(unsafe.Sizeof(zero)))
	}
	*s = append(*s, zero)
	return unsafe.Pointer(&(*s)[len(*s)-1])
}

// appendZeroReflect appends to a slice of type t, with elements of the
// given size, whose element layout only reflect knows (a struct). It calls
// reflect only when the slice must grow. The element it returns is zero:
// the memory Grow adds is zeroed (encoding/json relies on that too), and a
// decode never writes past a slice's length.
func appendZeroReflect(t reflect.Type, size uintptr, p unsafe.Pointer) unsafe.Pointer {
	h := (*sliceHeader)(p)
	if h.len == h.cap {
		n := 1
		if h.cap == 0 {
			n = firstCap(size)
		}
		reflect.NewAt(t, p).Elem().Grow(n)
	}
	h.len++
	return unsafe.Add(h.data, uintptr(h.len-1)*size)
}

// firstCap is the capacity of a slice's first backing array: a few
// elements, as arrays in arguments are short, where append would start
// with room for one and grow the array again at the second and the third.
func firstCap(size uintptr) int {
	const bytes = 64
	if size == 0 || size >= bytes/2 {
		return 1
	}
	return int(bytes / size)
}

// emptyData is the data pointer of an empty, non-nil slice: the address
// the runtime gives every zero-size allocation.
var emptyData = unsafe.Pointer(unsafe.SliceData(make([]byte, 0)))

// sliceHeader is the layout of every slice.
type sliceHeader struct {
	data unsafe.Pointer
	len  int
	cap  int
}
