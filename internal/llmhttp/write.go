package llmhttp

import (
	"strconv"
	"unsafe"

	"github.com/agentrt/agentrt/internal/jsonfast"
)

// AppendString appends s to dst as a JSON string, escaped as encoding/json
// escapes it (HTML characters aside: <, > and & are left as they are,
// which JSON allows), invalid UTF-8 replaced by U+FFFD.
func AppendString(dst []byte, s string) []byte { return jsonfast.AppendString(dst, s, false) }

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
	if b, ok := jsonfast.AppendFloat(dst, f, 64); ok {
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
