package jsonscan

import (
	"encoding/binary"
	"math/bits"
	"unicode/utf16"
	"unicode/utf8"
)

// plain marks the bytes a string may hold with no further look: neither
// '"', '\\' nor a control character. Bytes from 0x80 are plain here; the
// decoding path checks their UTF-8 itself.
var plain = func() (t [256]bool) {
	for c := 0x20; c < 256; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// plainASCII returns the index of the first byte from d[i] on that is not
// plain ASCII ('"', '\\', a control character or a byte from 0x80), or
// len(d). It tests eight bytes at a time.
func plainASCII(d []byte, i int) int {
	for ; i+8 <= len(d); i += 8 {
		if m := special8(binary.LittleEndian.Uint64(d[i:])); m != 0 {
			// The lowest flagged byte is exact: the bit tricks can only
			// flag bytes wrongly above a byte truly flagged.
			return i + bits.TrailingZeros64(m)>>3
		}
	}
	for i < len(d) && d[i] < utf8.RuneSelf && plain[d[i]] {
		i++
	}
	return i
}

// special8 flags (sets the high bit of) each byte of x, read
// little-endian, that is below 0x20, '"' or '\\', or from 0x80: the classic
// "has less than" and "has zero byte" tests.
func special8(x uint64) uint64 {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	hasLess := func(v uint64, n uint64) uint64 { return (v - ones*n) &^ v & highs }
	return hasLess(x, 0x20) | hasLess(x^(ones*'"'), 1) | hasLess(x^(ones*'\\'), 1) | x&highs
}

// readString consumes the string whose opening quote is at s.pos. If it
// holds neither escapes nor invalid UTF-8 it returns a sub-slice of the
// input (copied false); otherwise it appends the unescaped string to dst and
// returns that (copied true).
func (s *Scanner) readString(dst []byte) (out []byte, copied, ok bool) {
	d := s.data
	start := s.pos + 1
	i := start
	for {
		i = plainASCII(d, i)
		if i >= len(d) {
			break
		}
		c := d[i]
		if c == '"' {
			s.pos = i + 1
			return d[start:i], false, true
		}
		if c < utf8.RuneSelf {
			break // an escape or a control character
		}
		// A multi-byte rune cannot run past the closing quote: '"' is no
		// continuation byte.
		r, size := utf8.DecodeRune(d[i:])
		if r == utf8.RuneError && size == 1 {
			break
		}
		i += size
	}
	dst = append(dst, d[start:i]...)
	dst, ok = s.unescape(dst, i)
	return dst, true, ok
}

// unescape continues readString from d[i], appending to dst what
// encoding/json's unquote would.
func (s *Scanner) unescape(dst []byte, i int) ([]byte, bool) {
	d := s.data
	for i < len(d) {
		c := d[i]
		switch {
		case c == '"':
			s.pos = i + 1
			return dst, true
		case c == '\\':
			i++
			if i >= len(d) {
				s.eof()
				return dst, false
			}
			switch e := d[i]; e {
			case '"', '\\', '/':
				dst = append(dst, e)
			case 'b':
				dst = append(dst, '\b')
			case 'f':
				dst = append(dst, '\f')
			case 'n':
				dst = append(dst, '\n')
			case 'r':
				dst = append(dst, '\r')
			case 't':
				dst = append(dst, '\t')
			case 'u':
				r, ok := s.hex4(i + 1)
				if !ok {
					return dst, false
				}
				i += 4
				if utf16.IsSurrogate(r) {
					// As encoding/json: a pair only if a valid \u escape
					// follows and completes it; else U+FFFD for this half,
					// and the next escape is decoded on its own.
					if r2, ok := peekHex4(d, i+1); ok {
						if dec := utf16.DecodeRune(r, r2); dec != utf8.RuneError {
							dst = utf8.AppendRune(dst, dec)
							i += 7
							continue
						}
					}
					r = utf8.RuneError
				}
				dst = utf8.AppendRune(dst, r)
			default:
				s.badChar(i, "in string escape code")
				return dst, false
			}
			i++
		case c < ' ':
			s.badChar(i, "in string literal")
			return dst, false
		case c < utf8.RuneSelf:
			// Copy the run of plain ASCII at once.
			j := plainASCII(d, i+1)
			dst = append(dst, d[i:j]...)
			i = j
		default:
			r, size := utf8.DecodeRune(d[i:])
			if r == utf8.RuneError && size == 1 {
				dst = utf8.AppendRune(dst, utf8.RuneError) // one U+FFFD per bad byte, as encoding/json
			} else {
				dst = append(dst, d[i:i+size]...)
			}
			i += size
		}
	}
	s.eof()
	return dst, false
}

// hex4 decodes the four hex digits of a \u escape starting at d[i].
func (s *Scanner) hex4(i int) (rune, bool) {
	var r rune
	for j := i; j < i+4; j++ {
		if j >= len(s.data) {
			s.eof()
			return 0, false
		}
		v := unhex(s.data[j])
		if v < 0 {
			s.badChar(j, `in \u hexadecimal character escape`)
			return 0, false
		}
		r = r<<4 | v
	}
	return r, true
}

// peekHex4 decodes a complete \uXXXX escape at d[i], reporting no errors.
func peekHex4(d []byte, i int) (rune, bool) {
	if i+6 > len(d) || d[i] != '\\' || d[i+1] != 'u' {
		return 0, false
	}
	var r rune
	for _, c := range d[i+2 : i+6] {
		v := unhex(c)
		if v < 0 {
			return 0, false
		}
		r = r<<4 | v
	}
	return r, true
}

func unhex(c byte) rune {
	switch {
	case '0' <= c && c <= '9':
		return rune(c - '0')
	case 'a' <= c && c <= 'f':
		return rune(c - 'a' + 10)
	case 'A' <= c && c <= 'F':
		return rune(c - 'A' + 10)
	}
	return -1
}

// skipString consumes the string whose opening quote is at s.pos,
// validating it as encoding/json's scanner does (which lets invalid UTF-8
// through).
func (s *Scanner) skipString() bool {
	d := s.data
	for i := s.pos + 1; ; {
		if i = plainASCII(d, i); i >= len(d) {
			break
		}
		switch c := d[i]; {
		case c >= utf8.RuneSelf:
			i++
		case c == '"':
			s.pos = i + 1
			return true
		case c == '\\':
			i++
			if i >= len(d) {
				s.eof()
				return false
			}
			switch d[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i++
			case 'u':
				if _, ok := s.hex4(i + 1); !ok {
					return false
				}
				i += 5
			default:
				s.badChar(i, "in string escape code")
				return false
			}
		default:
			s.badChar(i, "in string literal")
			return false
		}
	}
	s.eof()
	return false
}

// scanNumber validates the number literal starting at d[i] (a '-' or a
// digit) and returns the index just past it. Like encoding/json it stops at
// the first byte that cannot continue the number; whatever follows is judged
// by the caller's context ("01" is the number 0 followed by a stray '1').
func (s *Scanner) scanNumber(i int) (int, bool) {
	d := s.data
	if d[i] == '-' {
		i++
		if i >= len(d) {
			s.eof()
			return 0, false
		}
		if !isDigit(d[i]) {
			s.badChar(i, "in numeric literal")
			return 0, false
		}
	}
	if d[i] == '0' {
		i++
	} else {
		i = digits(d, i)
	}
	if i < len(d) && d[i] == '.' {
		i++
		if i >= len(d) {
			s.eof()
			return 0, false
		}
		if !isDigit(d[i]) {
			s.badChar(i, "after decimal point in numeric literal")
			return 0, false
		}
		i = digits(d, i)
	}
	if i < len(d) && (d[i] == 'e' || d[i] == 'E') {
		i++
		if i < len(d) && (d[i] == '+' || d[i] == '-') {
			i++
		}
		if i >= len(d) {
			s.eof()
			return 0, false
		}
		if !isDigit(d[i]) {
			s.badChar(i, "in exponent of numeric literal")
			return 0, false
		}
		i = digits(d, i)
	}
	return i, true
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

func digits(d []byte, i int) int {
	for i < len(d) && isDigit(d[i]) {
		i++
	}
	return i
}

// parseInt converts a valid JSON number literal to an int64 as
// strconv.ParseInt does: only plain integers in range.
func parseInt(b []byte) (int64, bool) {
	neg := b[0] == '-'
	if neg {
		b = b[1:]
	}
	limit := uint64(1<<63 - 1)
	if neg {
		limit = 1 << 63
	}
	var n uint64
	for _, c := range b {
		if !isDigit(c) {
			return 0, false // a fraction or an exponent
		}
		if n > (limit-uint64(c-'0'))/10 {
			return 0, false
		}
		n = n*10 + uint64(c-'0')
	}
	if neg {
		return -int64(n), true // wraps to MinInt64 for 1<<63, as wanted
	}
	return int64(n), true
}

// skipValue consumes the value starting at s.pos (whitespace skipped),
// validating it. Containers are tracked on the scanner's own depth stack,
// not the Go stack, so deep input cannot overflow it.
func (s *Scanner) skipValue() bool {
	base := s.depth
	for {
		// A value starts at s.pos, after whitespace.
		switch c := s.data[s.pos]; c {
		case '{', '[':
			if !s.push(c == '{') {
				return false
			}
			s.pos++
			e, ok := s.next()
			if !ok {
				return false
			}
			if e == c+2 { // '}' or ']': an empty container
				s.pos++
				s.close()
				break
			}
			if c == '{' && !s.skipKey() {
				return false
			}
			if _, ok := s.next(); !ok {
				return false
			}
			continue
		case '"':
			if !s.skipString() {
				return false
			}
		case 't':
			if !s.literal("true") {
				return false
			}
		case 'f':
			if !s.literal("false") {
				return false
			}
		case 'n':
			if !s.literal("null") {
				return false
			}
		case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
			end, ok := s.scanNumber(s.pos)
			if !ok {
				return false
			}
			s.pos = end
		default:
			s.badChar(s.pos, "looking for beginning of value")
			return false
		}
		// A value ended: close the containers that end with it, then move
		// to the next member or element.
		for {
			if s.depth == base {
				return true
			}
			c, ok := s.next()
			if !ok {
				return false
			}
			object := s.top()
			if c == ',' {
				s.pos++
				if object && !s.skipKey() {
					return false
				}
				if _, ok := s.next(); !ok {
					return false
				}
				break
			}
			if object && c == '}' || !object && c == ']' {
				s.pos++
				s.close()
				continue
			}
			if object {
				s.badChar(s.pos, "after object key:value pair")
			} else {
				s.badChar(s.pos, "after array element")
			}
			return false
		}
	}
}

// skipKey consumes a member's key and the ':' after it.
func (s *Scanner) skipKey() bool {
	c, ok := s.next()
	if !ok {
		return false
	}
	if c != '"' {
		s.badChar(s.pos, "looking for beginning of object key string")
		return false
	}
	if !s.skipString() {
		return false
	}
	if c, ok = s.next(); !ok {
		return false
	}
	if c != ':' {
		s.badChar(s.pos, "after object key")
		return false
	}
	s.pos++
	return true
}
