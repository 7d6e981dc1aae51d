package jsonfast

import (
	"strconv"
	"unsafe"

	"github.com/agentrt/agentrt/internal/jsonscan"
)

// decodeStruct decodes the object that s is on into the zero struct at p.
func decodeStruct(s *jsonscan.Scanner, n *node, p unsafe.Pointer) bool {
	if !s.EnterObject() {
		return false
	}
	var seen uint64 // bit i: fields[i] is set; a repeated key is declined
	for {
		key, ok := s.NextKey()
		if !ok {
			// '}', or an error; or a required field is missing (see
			// NewSchemaDecoder).
			return s.Err() == nil && seen&n.required == n.required
		}
		i := n.lookup(key)
		if i < 0 || seen&(1<<i) != 0 {
			return false
		}
		seen |= 1 << i
		f := &n.fields[i]
		if !decodeValue(s, f.node, unsafe.Add(p, f.offset)) {
			return false
		}
	}
}

// decodeValue decodes the value that s is on into the zero value at p,
// whose type n describes.
func decodeValue(s *jsonscan.Scanner, n *node, p unsafe.Pointer) bool {
	switch n.kind {
	case kindBool:
		b, ok := s.Bool()
		*(*bool)(p) = b
		return ok
	case kindInt8, kindInt16, kindInt32, kindInt64:
		// Int parses as strconv.ParseInt(lit, 10, 64) does, which is
		// what encoding/json calls before checking the range.
		i, ok := s.Int()
		if !ok || i < n.min || i > int64(n.umax) {
			return false
		}
		switch n.kind {
		case kindInt8:
			*(*int8)(p) = int8(i)
		case kindInt16:
			*(*int16)(p) = int16(i)
		case kindInt32:
			*(*int32)(p) = int32(i)
		default:
			*(*int64)(p) = i
		}
		return true
	case kindUint8, kindUint16, kindUint32, kindUint64:
		if s.Peek() != jsonscan.Number {
			return false
		}
		u, ok := parseUint(s.Raw(), n.umax)
		if !ok {
			return false
		}
		switch n.kind {
		case kindUint8:
			*(*uint8)(p) = uint8(u)
		case kindUint16:
			*(*uint16)(p) = uint16(u)
		case kindUint32:
			*(*uint32)(p) = uint32(u)
		default:
			*(*uint64)(p) = u
		}
		return true
	case kindFloat32:
		if s.Peek() != jsonscan.Number {
			return false
		}
		lit := s.Raw()
		if lit == nil {
			return false
		}
		// As encoding/json: ParseFloat with 32 bits, whose result is
		// exactly a float32 and in range when err is nil.
		f, err := strconv.ParseFloat(string(lit), 32)
		*(*float32)(p) = float32(f)
		return err == nil
	case kindFloat64:
		f, ok := s.Float()
		*(*float64)(p) = f
		return ok
	case kindString:
		b, ok := s.Str()
		if !ok {
			return false
		}
		*(*string)(p) = string(b) // a copy: b aliases the input or scratch
		return true
	case kindSlice:
		return decodeSlice(s, n, p)
	case kindStruct:
		return decodeStruct(s, n, p)
	}
	return false
}

// decodeSlice decodes the array that s is on into the nil slice at p.
func decodeSlice(s *jsonscan.Scanner, n *node, p unsafe.Pointer) bool {
	if !s.EnterArray() {
		return false
	}
	if !s.NextElem() {
		if s.Err() != nil {
			return false
		}
		// encoding/json makes [] an empty slice, not a nil one.
		(*sliceHeader)(p).data = emptyData
		return true
	}
	for {
		if !decodeValue(s, n.elem, appendZero(n, p)) {
			return false
		}
		if !s.NextElem() {
			return s.Err() == nil
		}
	}
}

// parseUint parses lit, a valid JSON number, as strconv.ParseUint(lit, 10,
// 64) does, and reports whether it succeeded with a result of at most max.
func parseUint(lit []byte, max uint64) (uint64, bool) {
	if len(lit) == 0 {
		return 0, false
	}
	var u uint64
	for _, c := range lit {
		if c < '0' || c > '9' {
			return 0, false // a sign, a fraction or an exponent
		}
		d := uint64(c - '0')
		if u > (max-d)/10 {
			return 0, false
		}
		u = u*10 + d
	}
	return u, true
}
