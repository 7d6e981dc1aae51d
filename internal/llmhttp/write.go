package llmhttp

import (
	"math"
	"strconv"
	"unicode/utf8"
	"unsafe"
)

// AppendString appends s to dst as a JSON string, escaped as encoding/json
// escapes it (HTML characters aside: <, > and & are left as they are,
// which JSON allows), invalid UTF-8 replaced by U+FFFD.
func AppendString(dst []byte, s string) []byte { return appendString(dst, s, false) }

// AppendKey appends "key": (a key known to need no escaping), preceded by a
// comma unless dst ends an opening brace.
func AppendKey(dst []byte, key string) []byte {
	if n := len(dst); n > 0 && dst[n-1] != '{' && dst[n-1] != '[' {
		dst = append(dst, ',')
	}
	dst = append(dst, '"')
	dst = append(dst, key...)
	return append(dst, '"', ':')
}

// AppendInt appends an integer.
func AppendInt(dst []byte, n int64) []byte { return strconv.AppendInt(dst, n, 10) }

// AppendFloat appends a number as encoding/json writes a float64; NaN and
// the infinities, which JSON cannot hold, as null.
func AppendFloat(dst []byte, f float64) []byte {
	if b, ok := appendFloat(dst, f, 64); ok {
		return b
	}
	return append(dst, "null"...)
}

// Strings makes strings from bytes that will not be kept (a decoder's
// scratch space) a block at a time rather than one allocation each. The
// strings point into blocks that are only ever appended to, never written
// over, so they are as immutable as any string. Not safe for concurrent
// use.
type Strings struct {
	block []byte
}

// Reset forgets the current block (the strings made from it live on).
func (a *Strings) Reset() { a.block = nil }

// Make returns b as a string.
func (a *Strings) Make(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	if cap(a.block)-len(a.block) < len(b) {
		// Blocks grow with the stream: short replies waste little, long
		// ones take few allocations.
		size := max(2*cap(a.block), 256)
		size = min(size, 16<<10)
		if len(b) > size/2 {
			return string(b) // too big to share a block usefully
		}
		a.block = make([]byte, 0, size)
	}
	start := len(a.block)
	a.block = append(a.block, b...)
	return unsafe.String(&a.block[start], len(b))
}

// appendFloat appends f, a float of the given bits (32 or 64), as
// encoding/json's floatEncoder does: like ES6's number-to-string
// conversion. For NaN and the infinities, which JSON cannot hold, it
// returns dst and false.
func appendFloat(dst []byte, f float64, bits int) ([]byte, bool) {
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

// appendString appends s quoted as json.Marshal quotes strings: the
// control characters other than \b, \f, \n, \r and \t as \u00XX, each
// byte of invalid UTF-8 as invalidUTF8, and U+2028 and U+2029 as \u2028 and
// \u2029; with escapeHTML (json.Marshal's default), '<', '>' and '&' as
// \u003c, \u003e and \u0026 too.
func appendString(dst []byte, s string, escapeHTML bool) []byte {
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
