package jsonfast

import (
	"math"
	"strconv"
	"unicode/utf8"
	"unsafe"
)

// appendValue appends the JSON encoding of the value at p, whose type n
// describes, as json.Marshal writes it. It reports false for a value
// json.Marshal rejects.
func appendValue(dst []byte, n *node, p unsafe.Pointer) ([]byte, bool) {
	switch n.kind {
	case kindBool:
		return strconv.AppendBool(dst, *(*bool)(p)), true
	case kindInt8:
		return strconv.AppendInt(dst, int64(*(*int8)(p)), 10), true
	case kindInt16:
		return strconv.AppendInt(dst, int64(*(*int16)(p)), 10), true
	case kindInt32:
		return strconv.AppendInt(dst, int64(*(*int32)(p)), 10), true
	case kindInt64:
		return strconv.AppendInt(dst, *(*int64)(p), 10), true
	case kindUint8:
		return strconv.AppendUint(dst, uint64(*(*uint8)(p)), 10), true
	case kindUint16:
		return strconv.AppendUint(dst, uint64(*(*uint16)(p)), 10), true
	case kindUint32:
		return strconv.AppendUint(dst, uint64(*(*uint32)(p)), 10), true
	case kindUint64:
		return strconv.AppendUint(dst, *(*uint64)(p), 10), true
	case kindFloat32:
		return AppendFloat(dst, float64(*(*float32)(p)), 32)
	case kindFloat64:
		return AppendFloat(dst, *(*float64)(p), 64)
	case kindString:
		return AppendString(dst, *(*string)(p), true), true
	case kindSlice:
		return appendSlice(dst, n, p)
	case kindStruct:
		return appendStruct(dst, n, p)
	}
	return dst, false
}

func appendStruct(dst []byte, n *node, p unsafe.Pointer) ([]byte, bool) {
	dst = append(dst, '{')
	first := true
	for i := range n.fields {
		f := &n.fields[i]
		fp := unsafe.Add(p, f.offset)
		if f.omitEmpty && isEmpty(f.node, fp) {
			continue
		}
		if !first {
			dst = append(dst, ',')
		}
		first = false
		dst = append(dst, f.key...)
		var ok bool
		if dst, ok = appendValue(dst, f.node, fp); !ok {
			return dst, false
		}
	}
	return append(dst, '}'), true
}

func appendSlice(dst []byte, n *node, p unsafe.Pointer) ([]byte, bool) {
	h := (*sliceHeader)(p)
	if h.data == nil {
		return append(dst, "null"...), true
	}
	dst = append(dst, '[')
	for i := range h.len {
		if i > 0 {
			dst = append(dst, ',')
		}
		var ok bool
		if dst, ok = appendValue(dst, n.elem, unsafe.Add(h.data, uintptr(i)*n.elemSize)); !ok {
			return dst, false
		}
	}
	return append(dst, ']'), true
}

// isEmpty reports whether the value at p is empty as omitempty means it:
// false, 0, "" or a slice of length 0. A struct is never empty.
func isEmpty(n *node, p unsafe.Pointer) bool {
	switch n.kind {
	case kindBool:
		return !*(*bool)(p)
	case kindInt8, kindUint8:
		return *(*uint8)(p) == 0
	case kindInt16, kindUint16:
		return *(*uint16)(p) == 0
	case kindInt32, kindUint32:
		return *(*uint32)(p) == 0
	case kindInt64, kindUint64:
		return *(*uint64)(p) == 0
	case kindFloat32:
		return *(*float32)(p) == 0 // -0 too, as reflect.Value.IsZero
	case kindFloat64:
		return *(*float64)(p) == 0
	case kindString:
		return len(*(*string)(p)) == 0
	case kindSlice:
		return (*sliceHeader)(p).len == 0
	}
	return false
}

// AppendFloat appends f, a float of the given bits (32 or 64), as
// encoding/json's floatEncoder does: like ES6's number-to-string
// conversion. For NaN and the infinities, which JSON cannot hold, it
// returns dst and false.
func AppendFloat(dst []byte, f float64, bits int) ([]byte, bool) {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return dst, false // json.Marshal returns an UnsupportedValueError
	}
	abs := math.Abs(f)
	format := byte('f')
	// The cutoffs compare float32 values for float32, as encoding/json does.
	if abs != 0 {
		if bits == 64 && (abs < 1e-6 || abs >= 1e21) || bits == 32 && (float32(abs) < 1e-6 || float32(abs) >= 1e21) {
			format = 'e'
		}
	}
	start := len(dst)
	dst = strconv.AppendFloat(dst, f, format, -1, bits)
	if format == 'e' {
		// Clean up e-09 to e-9.
		if n := len(dst); n-start >= 4 && dst[n-4] == 'e' && dst[n-3] == '-' && dst[n-2] == '0' {
			dst[n-2] = dst[n-1]
			dst = dst[:n-1]
		}
	}
	return dst, true
}

// AppendString appends s quoted as json.Marshal quotes strings: the
// control characters other than \b, \f, \n, \r and \t as \u00XX, each
// byte of invalid UTF-8 as invalidUTF8, and U+2028 and U+2029 as \u2028 and
// \u2029; with escapeHTML (json.Marshal's default), '<', '>' and '&' as
// \u003c, \u003e and \u0026 too.
func AppendString(dst []byte, s string, escapeHTML bool) []byte {
	const hex = "0123456789abcdef"
	safe := &safeJSON
	if escapeHTML {
		safe = &safeHTML
	}
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		if b := s[i]; b < utf8.RuneSelf {
			if safe[b] {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '\\', '"':
				dst = append(dst, '\\', b)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hex[b>>4], hex[b&0xF])
			}
			i++
			start = i
			continue
		}
		c, size := utf8.DecodeRuneInString(s[i:])
		if c == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, invalidUTF8...)
			i += size
			start = i
			continue
		}
		if c == '\u2028' || c == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hex[c&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// safeJSON marks the ASCII bytes a JSON string holds as they are: all
// from ' ' to DEL but '"' and '\\'; safeHTML, those json.Marshal writes
// as they are with HTML escaping: safeJSON's but '<', '>' and '&'.
var safeJSON, safeHTML = func() (j, h [utf8.RuneSelf]bool) {
	for c := ' '; c < utf8.RuneSelf; c++ {
		j[c] = c != '"' && c != '\\'
		h[c] = j[c] && c != '<' && c != '>' && c != '&'
	}
	return j, h
}()
