// Package jsonscan reads JSON one value at a time, in place, without
// allocating.
//
// Provider clients decode thousands of small streamed chunks per response;
// encoding/json allocates on every call, a Scanner does not once its scratch
// buffer has grown. It accepts and rejects exactly what encoding/json does,
// and decodes strings to the same bytes.
//
// A walk over a chunk names every member and either reads or skips its value:
//
//	var s jsonscan.Scanner // reuse it: Reset keeps its buffers
//	s.Reset(chunk)
//	if !s.EnterObject() {
//		return s.Err() // nil if the chunk is valid JSON but not an object
//	}
//	for {
//		key, ok := s.NextKey()
//		if !ok {
//			break // '}' reached, or an error that Err reports
//		}
//		switch string(key) {
//		case "text":
//			if t, ok := s.AppendStr(text); ok {
//				text = t
//				continue
//			}
//			s.Skip() // null or another kind
//		default:
//			s.Skip()
//		}
//	}
//	if !s.End() {
//		return s.Err()
//	}
//
// Every value, once positioned on, must be consumed (read, entered or
// skipped) before the next NextKey, NextElem or End; a method called out of
// that order sets an error wrapping ErrMisuse. Errors are sticky: after the
// first one, every method returns zero values or false and Err keeps
// reporting it, so a walk may check Err once at the end.
package jsonscan

import (
	"errors"
	"fmt"
	"strconv"
)

// Kind is the kind of the next value.
type Kind uint8

// The kinds of JSON value, as Peek reports them.
const (
	Invalid Kind = iota
	Null
	Bool
	Number
	String
	Array
	Object
)

var kindNames = [...]string{"invalid", "null", "bool", "number", "string", "array", "object"}

func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "Kind(" + strconv.Itoa(int(k)) + ")"
}

// maxDepth is encoding/json's nesting limit: 10000 open containers are
// accepted, the next one is an error.
const maxDepth = 10000

// SyntaxError reports malformed JSON. Msg is worded as encoding/json words
// it, except that every premature end reads "unexpected end of input".
type SyntaxError struct {
	Msg string
	// Offset is the index of the offending byte in the input, or its length
	// when the input ended too soon. (json.SyntaxError.Offset counts the
	// bytes read, one more than this for an invalid character.)
	Offset int
}

func (e *SyntaxError) Error() string {
	return "jsonscan: " + e.Msg + " at offset " + strconv.Itoa(e.Offset)
}

// ErrMisuse is wrapped by the error Err reports when a method is called
// where the document's structure does not allow it, such as NextKey inside
// an array, or NextKey again before the previous member's value was read.
var ErrMisuse = errors.New("jsonscan: method called out of order")

// state is what the scanner expects the caller to do next.
type state uint8

const (
	needValue state = iota // read, enter or skip a value
	needFirst              // just inside '{' or '[': NextKey or NextElem
	needMore               // after a member or element: NextKey or NextElem
	needEnd                // the top-level value is read: End
)

// Scanner reads one JSON document. The zero value is ready for Reset. A
// Scanner is not safe for concurrent use.
//
// Byte slices it returns alias either the input or its scratch buffer; they
// are valid until the next method call.
type Scanner struct {
	data  []byte
	pos   int
	err   error
	buf   []byte   // scratch for unescaped strings; kept across Reset
	stack []uint64 // bit d-1 is set when the container at depth d is an object; kept across Reset
	depth int
	obj   bool // the innermost container is an object: bit depth-1 of stack, cached
	state state
}

// Reset starts the scanner on a new document, keeping its buffers so that a
// reused Scanner does not allocate.
func (s *Scanner) Reset(data []byte) {
	s.data = data
	s.pos = 0
	s.err = nil
	s.buf = s.buf[:0]
	s.depth = 0
	s.obj = false
	s.state = needValue
}

// Err returns the first error met, or nil. A *SyntaxError describes
// malformed input; an error wrapping ErrMisuse, a call out of order.
func (s *Scanner) Err() error { return s.err }

// Peek returns the kind of the next value without consuming it. For a byte
// that cannot start a value it returns Invalid and sets the error; it only
// looks at the first byte, so a malformed literal or number is reported by
// the method that reads it.
func (s *Scanner) Peek() Kind {
	c, ok := s.begin("Peek")
	if !ok {
		return Invalid
	}
	k := kinds[c]
	if k == Invalid {
		s.badChar(s.pos, "looking for beginning of value")
	}
	return k
}

// EnterObject consumes the '{' that opens the next value. If that value is
// not an object it returns false and consumes nothing.
func (s *Scanner) EnterObject() bool { return s.enter("EnterObject", Object) }

// EnterArray consumes the '[' that opens the next value. If that value is
// not an array it returns false and consumes nothing.
func (s *Scanner) EnterArray() bool { return s.enter("EnterArray", Array) }

func (s *Scanner) enter(method string, k Kind) bool {
	if !s.expect(method, k) || !s.push(k == Object) {
		return false
	}
	s.pos++
	s.state = needFirst
	return true
}

// NextKey reads the next member's key and the ':' after it, consuming the
// ',' before it. The key is unescaped and valid until the next call. At the
// closing '}' it consumes it and returns false; the caller is then after the
// object, in its parent.
func (s *Scanner) NextKey() ([]byte, bool) {
	if !s.inside("NextKey", true) {
		return nil, false
	}
	c, ok := s.next()
	if !ok {
		return nil, false
	}
	if c == '}' {
		s.pos++
		s.pop()
		return nil, false
	}
	if s.state == needMore {
		if c != ',' {
			s.badChar(s.pos, "after object key:value pair")
			return nil, false
		}
		s.pos++
		if c, ok = s.next(); !ok {
			return nil, false
		}
	}
	if c != '"' {
		s.badChar(s.pos, "looking for beginning of object key string")
		return nil, false
	}
	key, ok := s.scratchString()
	if !ok {
		return nil, false
	}
	if c, ok = s.next(); !ok {
		return nil, false
	}
	if c != ':' {
		s.badChar(s.pos, "after object key")
		return nil, false
	}
	s.pos++
	s.state = needValue
	return key, true
}

// NextElem reports whether another element follows in the current array,
// consuming the ',' before it. At the closing ']' it consumes it and returns
// false; the caller is then after the array, in its parent.
func (s *Scanner) NextElem() bool {
	if !s.inside("NextElem", false) {
		return false
	}
	c, ok := s.next()
	if !ok {
		return false
	}
	if c == ']' {
		s.pos++
		s.pop()
		return false
	}
	if s.state == needMore {
		if c != ',' {
			s.badChar(s.pos, "after array element")
			return false
		}
		s.pos++
	}
	s.state = needValue
	return true
}

// Str reads a string value, unescaped as encoding/json unescapes it
// (invalid UTF-8 and lone surrogates become U+FFFD). Without escapes or
// invalid UTF-8 the result is a sub-slice of the input; otherwise it is the
// scanner's scratch buffer. Either way it is valid until the next call. If
// the next value is not a string, Str returns false and consumes nothing.
func (s *Scanner) Str() ([]byte, bool) {
	if !s.expect("Str", String) {
		return nil, false
	}
	v, ok := s.scratchString()
	if !ok {
		return nil, false
	}
	s.afterValue()
	return v, true
}

// AppendStr is Str for callers that accumulate: it appends the unescaped
// string to dst. If the next value is not a string, or on error, it returns
// dst unchanged and false.
func (s *Scanner) AppendStr(dst []byte) ([]byte, bool) {
	if !s.expect("AppendStr", String) {
		return dst, false
	}
	v, copied, ok := s.readString(dst)
	if !ok {
		return dst, false
	}
	if !copied {
		v = append(dst, v...)
	}
	s.afterValue()
	return v, true
}

// Int reads a number value as encoding/json decodes one into an int64: an
// integer literal in range. For any other value, including 3.0, 1e2 and
// numbers that overflow, it returns false and consumes nothing, so the
// caller may try Float or Skip.
func (s *Scanner) Int() (int64, bool) {
	if !s.expect("Int", Number) {
		return 0, false
	}
	end, ok := s.scanNumber(s.pos)
	if !ok {
		return 0, false
	}
	n, ok := parseInt(s.data[s.pos:end])
	if !ok {
		return 0, false
	}
	s.pos = end
	s.afterValue()
	return n, true
}

// Float reads a number value as encoding/json decodes one into a float64.
// For a value that is not a number, or one out of float64's range (1e400),
// it returns false and consumes nothing.
func (s *Scanner) Float() (float64, bool) {
	if !s.expect("Float", Number) {
		return 0, false
	}
	end, ok := s.scanNumber(s.pos)
	if !ok {
		return 0, false
	}
	// The conversion does not escape: strconv copies the string into any
	// error it returns. Literals up to 32 bytes therefore convert on the
	// stack; longer ones allocate.
	f, err := strconv.ParseFloat(string(s.data[s.pos:end]), 64)
	if err != nil {
		return 0, false
	}
	s.pos = end
	s.afterValue()
	return f, true
}

// Bool reads true or false. If the next value is not a boolean it returns
// false, false and consumes nothing.
func (s *Scanner) Bool() (v, ok bool) {
	if !s.expect("Bool", Bool) {
		return false, false
	}
	lit := "false"
	if s.data[s.pos] == 't' {
		lit = "true"
	}
	if !s.literal(lit) {
		return false, false
	}
	s.afterValue()
	return lit == "true", true
}

// Null consumes a null if that is the next value, and reports whether it
// did.
func (s *Scanner) Null() bool {
	if !s.expect("Null", Null) || !s.literal("null") {
		return false
	}
	s.afterValue()
	return true
}

// Skip consumes the next value, whatever its kind, validating it. It walks
// nested values without recursion.
func (s *Scanner) Skip() {
	if _, ok := s.begin("Skip"); ok && s.skipValue() {
		s.afterValue()
	}
}

// Raw consumes the next value like Skip and returns its bytes, a sub-slice
// of the input without surrounding whitespace. It returns nil on error.
func (s *Scanner) Raw() []byte {
	if _, ok := s.begin("Raw"); !ok {
		return nil
	}
	start := s.pos
	if !s.skipValue() {
		return nil
	}
	s.afterValue()
	return s.data[start:s.pos]
}

// End reports whether only whitespace follows the top-level value; call it
// once that value has been read. Otherwise it sets the error and returns
// false.
func (s *Scanner) End() bool {
	if s.err != nil {
		return false
	}
	s.ws()
	switch {
	case s.state == needEnd && s.pos == len(s.data):
		return true
	case s.state == needEnd:
		s.badChar(s.pos, "after top-level value")
	case s.pos == len(s.data):
		s.eof() // the document stops before its top-level value is complete
	default:
		s.misuse("End")
	}
	return false
}

// begin checks that a value may be read here and returns its first byte,
// leaving s.pos on it.
func (s *Scanner) begin(method string) (byte, bool) {
	if s.err != nil {
		return 0, false
	}
	if s.state != needValue {
		s.misuse(method)
		return 0, false
	}
	return s.next()
}

// expect is begin for a method that reads a value of kind k. It returns
// false for another kind, setting the error only if the byte starts no value
// at all.
func (s *Scanner) expect(method string, k Kind) bool {
	c, ok := s.begin(method)
	if !ok {
		return false
	}
	switch kinds[c] {
	case k:
		return true
	case Invalid:
		s.badChar(s.pos, "looking for beginning of value")
	}
	return false
}

// inside checks that NextKey (object) or NextElem (!object) may be called.
func (s *Scanner) inside(method string, object bool) bool {
	if s.err != nil {
		return false
	}
	if (s.state != needFirst && s.state != needMore) || s.top() != object {
		s.misuse(method)
		return false
	}
	return true
}

// next skips whitespace and returns the byte at s.pos without consuming it.
func (s *Scanner) next() (byte, bool) {
	if s.pos < len(s.data) && s.data[s.pos] > ' ' {
		return s.data[s.pos], true // compact JSON has no whitespace
	}
	s.ws()
	if s.pos >= len(s.data) {
		s.eof()
		return 0, false
	}
	return s.data[s.pos], true
}

func (s *Scanner) ws() {
	for s.pos < len(s.data) {
		switch s.data[s.pos] {
		case ' ', '\t', '\n', '\r':
			s.pos++
		default:
			return
		}
	}
}

// afterValue records that a whole value has been consumed.
func (s *Scanner) afterValue() {
	if s.depth == 0 {
		s.state = needEnd
	} else {
		s.state = needMore
	}
}

// push opens a container at s.pos, enforcing the depth limit.
func (s *Scanner) push(object bool) bool {
	if s.depth >= maxDepth {
		s.badChar(s.pos, "exceeded max depth")
		return false
	}
	w, bit := s.depth/64, uint64(1)<<(s.depth%64)
	if w == len(s.stack) {
		s.stack = append(s.stack, 0)
	}
	if object {
		s.stack[w] |= bit
	} else {
		s.stack[w] &^= bit
	}
	s.depth++
	s.obj = object
	return true
}

// pop closes the innermost container, which the caller has consumed.
func (s *Scanner) pop() {
	s.close()
	s.afterValue()
}

// close leaves the innermost container.
func (s *Scanner) close() {
	s.depth--
	s.obj = false
	if d := s.depth - 1; d >= 0 {
		s.obj = s.stack[d/64]&(1<<(d%64)) != 0
	}
}

// top reports whether the innermost container is an object; false at the
// top level.
func (s *Scanner) top() bool { return s.obj }

// scratchString reads the string at s.pos, unescaping into s.buf if needed.
func (s *Scanner) scratchString() ([]byte, bool) {
	v, copied, ok := s.readString(s.buf[:0])
	if copied {
		s.buf = v // keep the grown buffer
	}
	return v, ok
}

// literal consumes lit (true, false or null) at s.pos, whose first byte the
// caller has checked.
func (s *Scanner) literal(lit string) bool {
	for i := 1; i < len(lit); i++ {
		p := s.pos + i
		if p >= len(s.data) {
			s.eof()
			return false
		}
		if s.data[p] != lit[i] {
			s.badChar(p, "in literal "+lit+" (expecting '"+lit[i:i+1]+"')")
			return false
		}
	}
	s.pos += len(lit)
	return true
}

func (s *Scanner) fail(msg string, off int) {
	s.err = &SyntaxError{Msg: msg, Offset: off}
}

func (s *Scanner) badChar(i int, context string) {
	s.fail("invalid character "+quoteChar(s.data[i])+" "+context, i)
}

func (s *Scanner) eof() {
	s.fail("unexpected end of input", len(s.data))
}

func (s *Scanner) misuse(method string) {
	var want string
	switch s.state {
	case needValue:
		want = "a value"
	case needEnd:
		want = "End"
	default:
		want = "NextElem"
		if s.top() {
			want = "NextKey"
		}
	}
	s.err = fmt.Errorf("%w: %s called where %s is expected, at offset %d", ErrMisuse, method, want, s.pos)
}

// quoteChar formats c as encoding/json's error messages do.
func quoteChar(c byte) string {
	switch c {
	case '\'':
		return `'\''`
	case '"':
		return `'"'`
	}
	q := strconv.Quote(string(rune(c)))
	return "'" + q[1:len(q)-1] + "'"
}

// kinds maps the first byte of a value to its kind.
var kinds = [256]Kind{
	'n': Null, 't': Bool, 'f': Bool, '"': String, '[': Array, '{': Object,
	'-': Number, '0': Number, '1': Number, '2': Number, '3': Number,
	'4': Number, '5': Number, '6': Number, '7': Number, '8': Number, '9': Number,
}
