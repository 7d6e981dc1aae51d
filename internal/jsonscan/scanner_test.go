package jsonscan

import (
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The chunks our provider clients parse most.
const (
	openAIChunk    = `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{"index":0,"delta":{"content":"Hello"},"logprobs":null,"finish_reason":null}]}`
	anthropicChunk = `{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"locati"}}`
)

func scan(in string) *Scanner {
	var s Scanner
	s.Reset([]byte(in))
	return &s
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func TestKindString(t *testing.T) {
	t.Parallel()
	got := []string{Invalid.String(), Null.String(), Object.String(), Kind(42).String()}
	want := []string{"invalid", "null", "object", "Kind(42)"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Kind.String (-want +got):\n%s", diff)
	}
}

func TestPeek(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in      string
		want    Kind
		wantErr string
	}{
		{"null", Null, ""},
		{" \t\r\ntrue", Bool, ""},
		{"false", Bool, ""},
		{"-1", Number, ""},
		{"0", Number, ""},
		{"9", Number, ""},
		{`"x"`, String, ""},
		{"[]", Array, ""},
		{"{}", Object, ""},
		{"nul", Null, ""}, // Peek looks at one byte; Null reports the rest
		{"", Invalid, "jsonscan: unexpected end of input at offset 0"},
		{"  ", Invalid, "jsonscan: unexpected end of input at offset 2"},
		{"  x", Invalid, "jsonscan: invalid character 'x' looking for beginning of value at offset 2"},
		{"+1", Invalid, "jsonscan: invalid character '+' looking for beginning of value at offset 0"},
		{".5", Invalid, "jsonscan: invalid character '.' looking for beginning of value at offset 0"},
		{"\xff", Invalid, "jsonscan: invalid character 'ÿ' looking for beginning of value at offset 0"},
		{"'a'", Invalid, `jsonscan: invalid character '\'' looking for beginning of value at offset 0`},
	}
	for _, tt := range tests {
		s := scan(tt.in)
		got := s.Peek()
		if got != tt.want || errString(s.Err()) != tt.wantErr {
			t.Errorf("Peek(%q) = %v, err %q; want %v, err %q", tt.in, got, s.Err(), tt.want, tt.wantErr)
		}
		if tt.wantErr == "" && s.Peek() != tt.want {
			t.Errorf("Peek(%q) consumed the value", tt.in)
		}
	}
}

func TestStr(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in      string
		want    string
		ok      bool
		wantErr string
	}{
		{`""`, "", true, ""},
		{` "hello" `, "hello", true, ""},
		{`"héllo, 世界 🎉"`, "héllo, 世界 🎉", true, ""},
		{`"a\"b\\c\/d\be\ff\ng\rh\ti"`, "a\"b\\c/d\be\ff\ng\rh\ti", true, ""},
		{`"\u0041\u00e9\u4E16"`, "Aé世", true, ""},
		{`"\u0000"`, "\x00", true, ""},
		{`"\ud83c\udf89"`, "🎉", true, ""},                              // surrogate pair
		{`"\uD83C\uDF89x"`, "🎉x", true, ""},                            // upper-case hex
		{`"\ud83c"`, "\uFFFD", true, ""},                               // lone high surrogate
		{`"\udf89"`, "\uFFFD", true, ""},                               // lone low surrogate
		{`"\ud83cx"`, "\uFFFDx", true, ""},                             // high surrogate, then no escape
		{`"\ud83c\u0041"`, "\uFFFDA", true, ""},                        // high surrogate, then no low one
		{`"\ud83c\ud83c\udf89"`, "\uFFFD🎉", true, ""},                  // two highs, then a low
		{`"\udf89\ud83c"`, "\uFFFD\uFFFD", true, ""},                   // reversed pair
		{`"\ud83c\n"`, "\uFFFD\n", true, ""},                           // high surrogate, then another escape
		{"\"a\xffb\"", "a\uFFFDb", true, ""},                           // invalid byte
		{"\"\xe2\x82\"", "\uFFFD\uFFFD", true, ""},                     // truncated rune: one U+FFFD per byte
		{"\"\xed\xa0\x80\"", "\uFFFD\uFFFD\uFFFD", true, ""},           // UTF-8-encoded surrogate
		{"\"\xc0\xaf\"", "\uFFFD\uFFFD", true, ""},                     // overlong encoding
		{"\"\xf4\x90\x80\x80\"", "\uFFFD\uFFFD\uFFFD\uFFFD", true, ""}, // beyond U+10FFFF
		{"\"\u2028\u2029\x7f\"", "\u2028\u2029\x7f", true, ""},
		{"\"\xff\\n\"", "\uFFFD\n", true, ""},
		{`1`, "", false, ""},
		{`null`, "", false, ""},
		{`["a"]`, "", false, ""},
		{`"abc`, "", false, "jsonscan: unexpected end of input at offset 4"},
		{`"ab\`, "", false, "jsonscan: unexpected end of input at offset 4"},
		{`"\u12`, "", false, "jsonscan: unexpected end of input at offset 5"},
		{`"\x"`, "", false, `jsonscan: invalid character 'x' in string escape code at offset 2`},
		{`"\'"`, "", false, `jsonscan: invalid character '\'' in string escape code at offset 2`},
		{`"\u12g4"`, "", false, `jsonscan: invalid character 'g' in \u hexadecimal character escape at offset 5`},
		{`"\ud83c\u12g4"`, "", false, `jsonscan: invalid character 'g' in \u hexadecimal character escape at offset 11`},
		{"\"a\tb\"", "", false, `jsonscan: invalid character '\t' in string literal at offset 2`},
		{"\"\\n\x01\"", "", false, `jsonscan: invalid character '\x01' in string literal at offset 3`},
		{"\"\xff\n\"", "", false, `jsonscan: invalid character '\n' in string literal at offset 2`},
		{"x", "", false, "jsonscan: invalid character 'x' looking for beginning of value at offset 0"},
	}
	for _, tt := range tests {
		s := scan(tt.in)
		got, ok := s.Str()
		if string(got) != tt.want || ok != tt.ok || errString(s.Err()) != tt.wantErr {
			t.Errorf("Str(%q) = %q, %v, err %q; want %q, %v, err %q", tt.in, got, ok, s.Err(), tt.want, tt.ok, tt.wantErr)
		}
		if !tt.ok && tt.wantErr == "" && s.Raw() == nil {
			t.Errorf("Str(%q) consumed a value it did not read", tt.in)
		}

		s = scan(tt.in)
		app, ok := s.AppendStr([]byte("pre:"))
		want := "pre:" + tt.want
		if string(app) != want || ok != tt.ok || errString(s.Err()) != tt.wantErr {
			t.Errorf("AppendStr(%q) = %q, %v, err %q; want %q, %v, err %q", tt.in, app, ok, s.Err(), want, tt.ok, tt.wantErr)
		}
	}
}

// A string without escapes or invalid UTF-8 comes back as part of the
// input; one with them, in the scratch buffer, whose memory is reused.
func TestStrAliasing(t *testing.T) {
	t.Parallel()
	in := []byte(`["plain é", "esc\n", "more\t"]`)
	var s Scanner
	s.Reset(in)
	s.EnterArray()
	s.NextElem()
	v, _ := s.Str()
	if &v[0] != &in[2] {
		t.Error("plain string was copied")
	}
	s.NextElem()
	v1, _ := s.Str()
	if string(v1) != "esc\n" {
		t.Fatalf("Str = %q", v1)
	}
	s.NextElem()
	v2, _ := s.Str()
	if string(v2) != "more\t" || &v1[0] != &v2[0] {
		t.Errorf("escaped strings: %q at %p, then %q at %p; want the scratch buffer reused", v1, &v1[0], v2, &v2[0])
	}
}

func TestInt(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in      string
		want    int64
		ok      bool
		wantErr string
	}{
		{"0", 0, true, ""},
		{"-0", 0, true, ""},
		{"42", 42, true, ""},
		{" -17 ", -17, true, ""},
		{"9223372036854775807", 1<<63 - 1, true, ""},
		{"-9223372036854775808", -1 << 63, true, ""},
		{"9223372036854775808", 0, false, ""},
		{"-9223372036854775809", 0, false, ""},
		{"99999999999999999999", 0, false, ""},
		{"3.0", 0, false, ""},
		{"1e2", 0, false, ""},
		{"1E2", 0, false, ""},
		{"-0.0", 0, false, ""},
		{`"1"`, 0, false, ""},
		{"true", 0, false, ""},
		{"-", 0, false, "jsonscan: unexpected end of input at offset 1"},
		{"-x", 0, false, "jsonscan: invalid character 'x' in numeric literal at offset 1"},
		{"--1", 0, false, "jsonscan: invalid character '-' in numeric literal at offset 1"},
		{"1.", 0, false, "jsonscan: unexpected end of input at offset 2"},
		{"1.e3", 0, false, "jsonscan: invalid character 'e' after decimal point in numeric literal at offset 2"},
		{"1e", 0, false, "jsonscan: unexpected end of input at offset 2"},
		{"1e+", 0, false, "jsonscan: unexpected end of input at offset 3"},
		{"1e+x", 0, false, "jsonscan: invalid character 'x' in exponent of numeric literal at offset 3"},
		{"1ex", 0, false, "jsonscan: invalid character 'x' in exponent of numeric literal at offset 2"},
		{"+1", 0, false, "jsonscan: invalid character '+' looking for beginning of value at offset 0"},
	}
	for _, tt := range tests {
		s := scan(tt.in)
		got, ok := s.Int()
		if got != tt.want || ok != tt.ok || errString(s.Err()) != tt.wantErr {
			t.Errorf("Int(%q) = %d, %v, err %q; want %d, %v, err %q", tt.in, got, ok, s.Err(), tt.want, tt.ok, tt.wantErr)
		}
		if !ok && tt.wantErr == "" && s.Raw() == nil {
			t.Errorf("Int(%q) consumed a value it did not read", tt.in)
		}
		// Whatever Int accepts, encoding/json decodes into an int64 alike.
		var ref int64
		if tt.wantErr == "" && (json.Unmarshal([]byte(tt.in), &ref) == nil) != ok {
			t.Errorf("Int(%q) ok = %v, but json.Unmarshal into int64 disagrees", tt.in, ok)
		}
	}
}

func TestFloat(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want float64
		ok   bool
	}{
		{"0", 0, true},
		{"-0.5", -0.5, true},
		{"1e2", 100, true},
		{"2.5E-3", 0.0025, true},
		{"0.0e-0", 0, true},
		{"1e-400", 0, true}, // underflows to zero, as strconv has it
		{"1e400", 0, false},
		{"-1e400", 0, false},
		{"123456789012345678901234567890123456789", 1.2345678901234568e38, true}, // longer than 32 bytes
		{`"1"`, 0, false},
	}
	for _, tt := range tests {
		s := scan(tt.in)
		got, ok := s.Float()
		if got != tt.want || ok != tt.ok || s.Err() != nil {
			t.Errorf("Float(%q) = %v, %v, err %v; want %v, %v", tt.in, got, ok, s.Err(), tt.want, tt.ok)
		}
		var ref float64
		if (json.Unmarshal([]byte(tt.in), &ref) == nil) != ok {
			t.Errorf("Float(%q) ok = %v, but json.Unmarshal into float64 disagrees", tt.in, ok)
		}
	}
}

func TestBoolNull(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in      string
		read    string // "bool" or "null"
		want    bool
		ok      bool
		wantErr string
	}{
		{"true", "bool", true, true, ""},
		{"false", "bool", false, true, ""},
		{"null", "bool", false, false, ""},
		{"0", "bool", false, false, ""},
		{"null", "null", false, true, ""},
		{"false", "null", false, false, ""},
		{`"null"`, "null", false, false, ""},
		{"tru", "bool", false, false, "jsonscan: unexpected end of input at offset 3"},
		{"trUe", "bool", false, false, "jsonscan: invalid character 'U' in literal true (expecting 'u') at offset 2"},
		{"fals", "bool", false, false, "jsonscan: unexpected end of input at offset 4"},
		{"folse", "bool", false, false, "jsonscan: invalid character 'o' in literal false (expecting 'a') at offset 1"},
		{"nil", "null", false, false, "jsonscan: invalid character 'i' in literal null (expecting 'u') at offset 1"},
		{"nulL", "null", false, false, "jsonscan: invalid character 'L' in literal null (expecting 'l') at offset 3"},
		{"?", "null", false, false, "jsonscan: invalid character '?' looking for beginning of value at offset 0"},
	}
	for _, tt := range tests {
		s := scan(tt.in)
		var got, ok bool
		if tt.read == "bool" {
			got, ok = s.Bool()
		} else {
			ok = s.Null()
		}
		if got != tt.want || ok != tt.ok || errString(s.Err()) != tt.wantErr {
			t.Errorf("%s(%q) = %v, %v, err %q; want %v, %v, err %q", tt.read, tt.in, got, ok, s.Err(), tt.want, tt.ok, tt.wantErr)
		}
	}
}

func TestObjectWalk(t *testing.T) {
	t.Parallel()
	s := scan(` { "a" : 1 , "b\u0021" :[ true , null ], "c":{}, "d":[], "e":"x" } `)
	var got []string
	if !s.EnterObject() {
		t.Fatalf("EnterObject failed: %v", s.Err())
	}
	for {
		key, ok := s.NextKey()
		if !ok {
			break
		}
		got = append(got, "key "+string(key))
		switch string(key) {
		case "a":
			n, _ := s.Int()
			got = append(got, "int "+strconv.FormatInt(n, 10))
		case "b!":
			s.EnterArray()
			for s.NextElem() {
				got = append(got, "elem "+s.Peek().String())
				s.Skip()
			}
		case "c":
			s.EnterObject()
			_, ok := s.NextKey()
			got = append(got, "empty object "+strconv.FormatBool(!ok))
		case "d":
			s.EnterArray()
			got = append(got, "empty array "+strconv.FormatBool(!s.NextElem()))
		default:
			got = append(got, "raw "+string(s.Raw()))
		}
	}
	if !s.End() {
		t.Fatalf("End: %v", s.Err())
	}
	want := []string{
		"key a", "int 1",
		"key b!", "elem bool", "elem null",
		"key c", "empty object true",
		"key d", "empty array true",
		"key e", `raw "x"`,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("walk (-want +got):\n%s", diff)
	}
}

func TestEnterWrongKind(t *testing.T) {
	t.Parallel()
	s := scan(`[1]`)
	if s.EnterObject() {
		t.Fatal("EnterObject on an array succeeded")
	}
	if s.Err() != nil || !s.EnterArray() || !s.NextElem() {
		t.Fatalf("array not left for EnterArray: %v", s.Err())
	}
	if s.EnterArray() || s.EnterObject() || s.Err() != nil {
		t.Fatalf("Enter on a number: err %v", s.Err())
	}
	if n, ok := s.Int(); n != 1 || !ok || s.NextElem() || !s.End() {
		t.Fatalf("rest of walk failed: %v", s.Err())
	}
}

func TestRaw(t *testing.T) {
	t.Parallel()
	s := scan(" [ 1 , {\"a\" : [\"b\\\"]\"] } ,-2.5e+3, \"\xff\"] ")
	var got []string
	s.EnterArray()
	for s.NextElem() {
		got = append(got, string(s.Raw()))
	}
	if !s.End() {
		t.Fatalf("End: %v", s.Err())
	}
	want := []string{"1", `{"a" : ["b\"]"] }`, "-2.5e+3", "\"\xff\""}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Raw (-want +got):\n%s", diff)
	}
	if raw := scan(`[1,`).Raw(); raw != nil {
		t.Errorf("Raw of a truncated value = %q, want nil", raw)
	}
}

// syntaxErrors are malformed documents with the error a full walk reports.
// Each message is encoding/json's, and TestSyntaxErrorsMatchEncodingJSON
// checks that it stays so.
var syntaxErrors = []struct {
	in   string
	want string
}{
	{"", "unexpected end of input at offset 0"},
	{" \n", "unexpected end of input at offset 2"},
	{"[", "unexpected end of input at offset 1"},
	{"[1", "unexpected end of input at offset 2"},
	{"[1,", "unexpected end of input at offset 3"},
	{"{", "unexpected end of input at offset 1"},
	{`{"a"`, "unexpected end of input at offset 4"},
	{`{"a":`, "unexpected end of input at offset 5"},
	{`{"a":1`, "unexpected end of input at offset 6"},
	{`{"a":1,`, "unexpected end of input at offset 7"},
	{"-", "unexpected end of input at offset 1"},
	{"x", "invalid character 'x' looking for beginning of value at offset 0"},
	{"[1 2]", "invalid character '2' after array element at offset 3"},
	{"[1,]", "invalid character ']' looking for beginning of value at offset 3"},
	{"[,1]", "invalid character ',' looking for beginning of value at offset 1"},
	{"[}", "invalid character '}' looking for beginning of value at offset 1"},
	{"[0x]", "invalid character 'x' after array element at offset 2"},
	{`{]`, "invalid character ']' looking for beginning of object key string at offset 1"},
	{`{,}`, "invalid character ',' looking for beginning of object key string at offset 1"},
	{`{"a":1,}`, "invalid character '}' looking for beginning of object key string at offset 7"},
	{`{"a" 1}`, "invalid character '1' after object key at offset 5"},
	{`{"a":1 "b":2}`, "invalid character '\"' after object key:value pair at offset 7"},
	{`{"a":1]`, "invalid character ']' after object key:value pair at offset 6"},
	{`{1:2}`, "invalid character '1' looking for beginning of object key string at offset 1"},
	{`{"a\x":1}`, "invalid character 'x' in string escape code at offset 4"},
	{"01", "invalid character '1' after top-level value at offset 1"},
	{"-01", "invalid character '1' after top-level value at offset 2"},
	{"1 2", "invalid character '2' after top-level value at offset 2"},
	{"{}}", "invalid character '}' after top-level value at offset 2"},
	{"truex", "invalid character 'x' after top-level value at offset 4"},
	{"nulx", "invalid character 'x' in literal null (expecting 'l') at offset 3"},
	{"1.5.2", "invalid character '.' after top-level value at offset 3"},
	{"NaN", "invalid character 'N' looking for beginning of value at offset 0"},
	{"\ufeff1", "invalid character 'ï' looking for beginning of value at offset 0"},
	{"[\"a\x00\"]", `invalid character '\x00' in string literal at offset 3`},
	{"\"\\u00e\"", `invalid character '"' in \u hexadecimal character escape at offset 6`},
	{"1\x00", `invalid character '\x00' after top-level value at offset 1`},
	{"[1\v]", `invalid character '\v' after array element at offset 2`},
}

func TestSyntaxErrors(t *testing.T) {
	t.Parallel()
	for _, tt := range syntaxErrors {
		want := "jsonscan: " + tt.want
		if got := errString(validate([]byte(tt.in))); got != want {
			t.Errorf("Skip+End(%q): err %q, want %q", tt.in, got, want)
		}
		if _, err := rebuild(t, []byte(tt.in), false); errString(err) != want {
			t.Errorf("walk(%q): err %q, want %q", tt.in, err, want)
		}
		if json.Valid([]byte(tt.in)) {
			t.Errorf("json.Valid(%q) = true", tt.in)
		}
	}
}

func TestSyntaxErrorsMatchEncodingJSON(t *testing.T) {
	t.Parallel()
	for _, tt := range syntaxErrors {
		checkSameError(t, []byte(tt.in), validate([]byte(tt.in)))
	}
}

func TestSyntaxErrorType(t *testing.T) {
	t.Parallel()
	err := validate([]byte(`[1,x]`))
	var se *SyntaxError
	if !errors.As(err, &se) || se.Offset != 3 || se.Msg != "invalid character 'x' looking for beginning of value" {
		t.Errorf("err = %#v, want a *SyntaxError at offset 3", err)
	}
}

func TestDepthLimit(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		depth   int
		wantErr string
	}{
		{maxDepth, ""},
		{maxDepth + 1, "jsonscan: invalid character '[' exceeded max depth at offset 10000"},
	} {
		for _, open := range []string{"[", `{"":`} {
			var in []byte
			wantErr := tt.wantErr
			if open == "[" {
				in = []byte(strings.Repeat("[", tt.depth) + strings.Repeat("]", tt.depth))
			} else {
				in = []byte(strings.Repeat(`{"":`, tt.depth-1) + "{}" + strings.Repeat("}", tt.depth-1))
				if wantErr != "" {
					wantErr = "jsonscan: invalid character '{' exceeded max depth at offset 40000"
				}
			}
			if json.Valid(in) != (tt.wantErr == "") {
				t.Fatalf("json.Valid disagrees on depth %d", tt.depth)
			}
			if err := validate(in); errString(err) != wantErr {
				t.Errorf("Skip %d×%s: err %q, want %q", tt.depth, open, err, wantErr)
			}
			if _, err := rebuild(t, in, false); errString(err) != wantErr {
				t.Errorf("walk %d×%s: err %q, want %q", tt.depth, open, err, wantErr)
			}
		}
	}
	// The limit counts the containers the caller entered too.
	in := []byte(strings.Repeat("[", maxDepth+1))
	s := scan(string(in))
	for range 5 {
		s.EnterArray()
		s.NextElem()
	}
	s.Skip()
	if got, want := errString(s.Err()), "jsonscan: invalid character '[' exceeded max depth at offset 10000"; got != want {
		t.Errorf("Skip inside entered arrays: err %q, want %q", got, want)
	}
}

func TestMisuse(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   string
		run  func(s *Scanner)
		want string
	}{
		{"NextKey at top level", `{}`, func(s *Scanner) { s.NextKey() },
			"NextKey called where a value is expected, at offset 0"},
		{"NextElem in object", `{"a":1}`, func(s *Scanner) { s.EnterObject(); s.NextElem() },
			"NextElem called where NextKey is expected, at offset 1"},
		{"NextKey in array", `[1]`, func(s *Scanner) { s.EnterArray(); s.NextKey() },
			"NextKey called where NextElem is expected, at offset 1"},
		{"value before NextKey", `{"a":1}`, func(s *Scanner) { s.EnterObject(); s.Skip() },
			"Skip called where NextKey is expected, at offset 1"},
		{"value before NextElem", `[1]`, func(s *Scanner) { s.EnterArray(); s.Int() },
			"Int called where NextElem is expected, at offset 1"},
		{"NextKey twice", `{"a":1,"b":2}`, func(s *Scanner) { s.EnterObject(); s.NextKey(); s.NextKey() },
			"NextKey called where a value is expected, at offset 5"},
		{"value not read", `{"a":"x"}`, func(s *Scanner) { s.EnterObject(); s.NextKey(); s.Int(); s.NextKey() },
			"NextKey called where a value is expected, at offset 5"},
		{"second top-level value", `1 2`, func(s *Scanner) { s.Int(); s.Int() },
			"Int called where End is expected, at offset 1"},
		{"End before value", `1`, func(s *Scanner) { s.End() },
			"End called where a value is expected, at offset 0"},
		{"End inside object", `{"a":1}`, func(s *Scanner) { s.EnterObject(); s.End() },
			"End called where NextKey is expected, at offset 1"},
		{"Peek after NextElem false", `[]`, func(s *Scanner) { s.EnterArray(); s.NextElem(); s.Peek() },
			"Peek called where End is expected, at offset 2"},
	}
	for _, tt := range tests {
		s := scan(tt.in)
		tt.run(s)
		err := s.Err()
		if !errors.Is(err, ErrMisuse) || errString(err) != "jsonscan: method called out of order: "+tt.want {
			t.Errorf("%s: err %q, want ErrMisuse: %q", tt.name, err, tt.want)
		}
	}
}

// After the first error every method returns zero values and the error
// stays.
func TestErrorIsSticky(t *testing.T) {
	t.Parallel()
	s := scan(`[1, x, "a", true, null, {}, []]`)
	s.EnterArray()
	s.NextElem()
	s.Int()
	if !s.NextElem() {
		t.Fatal("NextElem false before the error")
	}
	s.Skip()
	first := s.Err()
	if first == nil {
		t.Fatal("no error for x")
	}
	if k := s.Peek(); k != Invalid {
		t.Errorf("Peek = %v", k)
	}
	if v, ok := s.Str(); v != nil || ok {
		t.Errorf("Str = %q, %v", v, ok)
	}
	if v, ok := s.AppendStr([]byte("d")); string(v) != "d" || ok {
		t.Errorf("AppendStr = %q, %v", v, ok)
	}
	if v, ok := s.Int(); v != 0 || ok {
		t.Errorf("Int = %v, %v", v, ok)
	}
	if v, ok := s.Float(); v != 0 || ok {
		t.Errorf("Float = %v, %v", v, ok)
	}
	if v, ok := s.Bool(); v || ok {
		t.Errorf("Bool = %v, %v", v, ok)
	}
	if s.Null() || s.EnterArray() || s.EnterObject() || s.NextElem() || s.End() {
		t.Error("a method reported success after the error")
	}
	if k, ok := s.NextKey(); k != nil || ok {
		t.Errorf("NextKey = %q, %v", k, ok)
	}
	if r := s.Raw(); r != nil {
		t.Errorf("Raw = %q", r)
	}
	s.Skip()
	if s.Err() != first {
		t.Errorf("Err changed from %v to %v", first, s.Err())
	}
	s.Reset([]byte(`1`))
	if n, ok := s.Int(); n != 1 || !ok || !s.End() {
		t.Errorf("after Reset: %v", s.Err())
	}
}

// documents covers every construct; each is compared with encoding/json.
var documents = []string{
	`null`, `true`, `false`, `0`, `-0`, `1.5e300`, `-1e-300`, `1e400`, `0.0e-0`, `123456789012345678901234567890`,
	`""`, `"x"`, `"\u00e9\ud83c\udf89\ud83c"`, "\"\xff\xfe\"", `[]`, `{}`, `[[[]]]`, `{"a":{"b":{"c":[1,{"d":null}]}}}`,
	`{"a":1,"a":2}`, `{"":""}`, `{"\u0000":"\u0000"}`, `{"k\ud800":"v"}`,
	` [ 1 , "two" , [ 3 ] , { "four" : 4 } , true , false , null ] `,
	openAIChunk, anthropicChunk,
	`{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","content":[],"model":"claude","stop_reason":null,"usage":{"input_tokens":25,"output_tokens":1}}}`,
	`{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\": \"Z\u00fcrich\"}"}}]}}]}`,
}

func TestDecodeMatchesEncodingJSON(t *testing.T) {
	t.Parallel()
	for _, doc := range documents {
		checkDecode(t, []byte(doc))
	}
}

// TestAllocs walks the provider chunks, reading every string, and must not
// allocate once the scratch buffer has grown.
func TestAllocs(t *testing.T) {
	for _, chunk := range []string{openAIChunk, anthropicChunk} {
		data := []byte(chunk)
		var s Scanner
		walk(&s, data) // grow the buffers
		if n := testing.AllocsPerRun(100, func() { walk(&s, data) }); n != 0 {
			t.Errorf("walking %.40s… allocates %v times, want 0", chunk, n)
		}
		if err := walk(&s, data); err != nil {
			t.Errorf("walk: %v", err)
		}
	}
	var s Scanner
	var o openAIDelta
	var a anthropicDelta
	oData, aData := []byte(openAIChunk), []byte(anthropicChunk)
	for _, tt := range []struct {
		name  string
		parse func() error
	}{
		{"openai", func() error { return o.parse(&s, oData) }},
		{"anthropic", func() error { return a.parse(&s, aData) }},
	} {
		if err := tt.parse(); err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if n := testing.AllocsPerRun(100, func() { _ = tt.parse() }); n != 0 {
			t.Errorf("typed parse of the %s chunk allocates %v times, want 0", tt.name, n)
		}
	}
}

// walk visits every value of data, reading strings and numbers, and
// builds nothing.
func walk(s *Scanner, data []byte) error {
	s.Reset(data)
	walkValue(s)
	s.End()
	return s.Err()
}

func walkValue(s *Scanner) {
	switch s.Peek() {
	case Null:
		s.Null()
	case Bool:
		s.Bool()
	case Number:
		if _, ok := s.Int(); ok {
			break
		}
		if _, ok := s.Float(); !ok {
			s.Skip() // out of float64's range
		}
	case String:
		s.Str()
	case Array:
		s.EnterArray()
		for s.NextElem() {
			walkValue(s)
		}
	case Object:
		s.EnterObject()
		for {
			if _, ok := s.NextKey(); !ok {
				break
			}
			walkValue(s)
		}
	}
}

// TestPlainASCII checks the eight-bytes-at-a-time search against the
// byte-wise definition, for every byte value at every position of a word,
// behind another special byte too.
func TestPlainASCII(t *testing.T) {
	t.Parallel()
	isPlain := func(c byte) bool { return c < 0x80 && plain[c] }
	for _, first := range []byte{'a', '"', 0x00, 0xff} {
		for c := range 256 {
			for pos := range 12 {
				d := []byte(strings.Repeat("a", 16))
				d[pos] = byte(c)
				if pos+1 < len(d) {
					d[pos+1] = first
				}
				want := 0
				for want < len(d) && isPlain(d[want]) {
					want++
				}
				if got := plainASCII(d, 0); got != want {
					t.Fatalf("plainASCII(%q) = %d, want %d", d, got, want)
				}
			}
		}
	}
}
