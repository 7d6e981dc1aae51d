package jsonscan

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// FuzzValid checks that the scanner accepts exactly what json.Valid does,
// both when skipping and when reading every value, and that it rejects with
// encoding/json's error at encoding/json's place.
func FuzzValid(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		err := validate(data)
		if valid := json.Valid(data); valid != (err == nil) {
			t.Fatalf("json.Valid(%s) = %v, but Skip+End err = %v", short(data), valid, err)
		}
		if _, werr := rebuild(t, data, false); errString(werr) != errString(err) {
			t.Fatalf("%s: walking reports %v, skipping reports %v", short(data), werr, err)
		}
		if err != nil {
			checkSameError(t, data, err)
		}
	})
}

// FuzzDecode checks that, for valid input, the scanner decodes the same
// values as encoding/json: strings byte for byte, numbers through strconv.
func FuzzDecode(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		if !json.Valid(data) {
			return
		}
		checkDecode(t, data)
	})
}

func addSeeds(f *testing.F) {
	for _, doc := range documents {
		f.Add([]byte(doc))
	}
	for _, tt := range syntaxErrors {
		f.Add([]byte(tt.in))
	}
	for _, seed := range []string{
		// escapes and surrogates
		`"\"\\\/\b\f\n\r\t"`, `"\u0000\u001f\u007f\u0080\uffff"`, `"\uD834\uDD1E"`, `"\uDD1E\uD834"`,
		`"\uD834"`, `"\uD834\"`, `"\uD834\u"`, `"\uD834\uD834\uDD1E"`, `"\uD834\\uDD1E"`, `"\uDBFF\uDFFF"`,
		`"\u00"`, `"\U0041"`, `"\a"`, `{"\uD800":"\uDC00"}`,
		// invalid UTF-8 and controls
		"\"\x80\"", "\"\xc3\"", "\"\xc3\x28\"", "\"\xe2\x28\xa1\"", "\"\xf0\x9f\x98\"", "\"\xed\xbf\xbf\"",
		"\"\xef\xbf\xbd\"", "\"\x7f\"", "\"\x1f\"", "{\"\xff\":\"\xfe\"}", "\xef\xbb\xbf{}", "[\"\xff", "\"\xe2\x82",
		// numbers
		"-0", "-0.0", "0.0e-0", "1e400", "-1e400", "1e-400", "4.9e-324", "1.7976931348623157e308", "1E+2", "1e-2",
		"00", "-", "-.5", "1.", ".1", "+1", "0x10", "1_000", "9223372036854775807", "-9223372036854775808",
		"9223372036854775808", "12345678901234567890123456789012345678901234567890", "[1e400,-0,0.5e1]",
		// literals and structure
		"tru", "nulll", "True", "[1,,2]", "[1 2]", `{"a" "b"}`, `{"a":}`, `{"a"}`, "[]]", "{}}", " \t\r\n[ \t\r\n] \t\r\n",
		"[\f]", "\v1", "[\"a\"\x00]",
		// deep nesting at and over the limit
		strings.Repeat("[", maxDepth) + strings.Repeat("]", maxDepth),
		strings.Repeat("[", maxDepth+1) + strings.Repeat("]", maxDepth+1),
		strings.Repeat(`{"a":[`, 3000) + strings.Repeat("]}", 3000),
		strings.Repeat("[", 100),
	} {
		f.Add([]byte(seed))
	}
}

// short quotes data for a message, eliding the middle of long input.
func short(data []byte) string {
	if len(data) > 200 {
		return strconv.Quote(string(data[:100])) + "…" + strconv.Quote(string(data[len(data)-100:]))
	}
	return strconv.Quote(string(data))
}

// validate walks data with Skip and End only.
func validate(data []byte) error {
	var s Scanner
	s.Reset(data)
	s.Skip()
	s.End()
	return s.Err()
}

// checkSameError checks err, the scanner's error for data, against the one
// json.Unmarshal reports: same message, same place.
func checkSameError(t testing.TB, data []byte, err error) {
	t.Helper()
	var v any
	jerr := json.Unmarshal(data, &v)
	var want *json.SyntaxError
	if !errors.As(jerr, &want) {
		t.Fatalf("json.Unmarshal(%s) = %v, want a syntax error like %v", short(data), jerr, err)
	}
	var got *SyntaxError
	if !errors.As(err, &got) {
		t.Fatalf("scanner error for %s = %v, want a *SyntaxError", short(data), err)
	}
	if got.Msg == "unexpected end of input" {
		// encoding/json words an end inside a token as the invalid
		// character ' ' it feeds itself at the end.
		if got.Offset != len(data) || want.Offset != int64(len(data)) ||
			want.Error() != "unexpected end of JSON input" && !strings.HasPrefix(want.Error(), "invalid character ' ' ") {
			t.Fatalf("%s: scanner: %v; encoding/json: %q at %d", short(data), err, want.Error(), want.Offset)
		}
		return
	}
	// json.SyntaxError.Offset counts the offending byte as read.
	if got.Msg != want.Error() || int64(got.Offset)+1 != want.Offset {
		t.Fatalf("%s: scanner: %v; encoding/json: %q at %d", short(data), err, want.Error(), want.Offset)
	}
}

// checkDecode checks that the scanner, reading strings with Str and then
// with AppendStr, rebuilds from valid data what encoding/json decodes.
func checkDecode(t testing.TB, data []byte) {
	t.Helper()
	want := reference(t, data)
	for _, useAppend := range []bool{false, true} {
		got, err := rebuild(t, data, useAppend)
		if err != nil {
			t.Fatalf("walking %s (AppendStr %v): %v", short(data), useAppend, err)
		}
		// cmp.Diff takes ages on deeply nested values; it only explains.
		if !reflect.DeepEqual(want, got) {
			t.Fatalf("decoding %s (AppendStr %v) (-encoding/json +scanner):\n%s", short(data), useAppend, cmp.Diff(want, got))
		}
	}
}

// reference is encoding/json's decoding of data into an any. json.Unmarshal
// fails on a number beyond float64's range, so then the numbers are decoded
// with UseNumber and those out of range stay json.Number, as rebuild leaves
// them.
func reference(t testing.TB, data []byte) any {
	t.Helper()
	var v any
	err := json.Unmarshal(data, &v)
	if err == nil {
		return v
	}
	var ute *json.UnmarshalTypeError
	if !errors.As(err, &ute) {
		t.Fatalf("json.Unmarshal(%s): %v", short(data), err)
	}
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	if err := d.Decode(&v); err != nil {
		t.Fatalf("decoding %s with UseNumber: %v", short(data), err)
	}
	return floatNumbers(v)
}

func floatNumbers(v any) any {
	switch v := v.(type) {
	case json.Number:
		if f, err := strconv.ParseFloat(string(v), 64); err == nil {
			return f
		}
	case []any:
		for i := range v {
			v[i] = floatNumbers(v[i])
		}
	case map[string]any:
		for k := range v {
			v[k] = floatNumbers(v[k])
		}
	}
	return v
}

// rebuilder builds an any from a document with the scanner's reading
// methods, checking each number's Int and Float against encoding/json on the
// way.
type rebuilder struct {
	t         testing.TB
	s         Scanner
	useAppend bool
	buf       []byte
}

func rebuild(t testing.TB, data []byte, useAppend bool) (any, error) {
	r := &rebuilder{t: t, useAppend: useAppend}
	r.s.Reset(data)
	v := r.value()
	r.s.End()
	return v, r.s.Err()
}

func (r *rebuilder) value() any {
	s := &r.s
	switch s.Peek() {
	case Null:
		s.Null()
	case Bool:
		b, _ := s.Bool()
		return b
	case Number:
		raw := s.Raw()
		if raw == nil {
			return nil
		}
		r.checkNumber(raw)
		if f, err := strconv.ParseFloat(string(raw), 64); err == nil {
			return f
		}
		return json.Number(raw)
	case String:
		return r.str()
	case Array:
		s.EnterArray()
		a := []any{}
		for s.NextElem() {
			a = append(a, r.value())
		}
		return a
	case Object:
		s.EnterObject()
		m := map[string]any{}
		for {
			k, ok := s.NextKey()
			if !ok {
				break
			}
			key := string(k)
			m[key] = r.value()
		}
		return m
	}
	return nil
}

func (r *rebuilder) str() any {
	if !r.useAppend {
		v, _ := r.s.Str()
		return string(v)
	}
	r.buf = append(r.buf[:0], '<')
	v, ok := r.s.AppendStr(r.buf)
	if len(v) == 0 || v[0] != '<' {
		r.t.Fatalf("AppendStr lost dst: %q", v)
	}
	if ok {
		r.buf = v
	}
	return string(v[1:])
}

// checkNumber checks that Int and Float accept raw exactly when
// encoding/json decodes it into an int64 or a float64, with the same value.
func (r *rebuilder) checkNumber(raw []byte) {
	var s Scanner
	s.Reset(raw)
	n, ok := s.Int()
	var wantN int64
	if err := json.Unmarshal(raw, &wantN); ok != (err == nil) || n != wantN {
		r.t.Errorf("Int(%s) = %d, %v; encoding/json: %d, %v", raw, n, ok, wantN, err)
	}
	s.Reset(raw)
	f, ok := s.Float()
	var wantF float64
	if err := json.Unmarshal(raw, &wantF); ok != (err == nil) || math.Float64bits(f) != math.Float64bits(wantF) {
		r.t.Errorf("Float(%s) = %v, %v; encoding/json: %v, %v", raw, f, ok, wantF, err)
	}
}
