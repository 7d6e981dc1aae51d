package jsonfast

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
)

// encodeCheck encodes v after a prefix and checks the result against
// json.Marshal: equal bytes when Append accepts, and Append declining
// exactly when json.Marshal fails. It returns the bytes Append appended.
func encodeCheck[T any](t *testing.T, e *Encoder[T], v T) (string, bool) {
	t.Helper()
	const prefix = "prefix:"
	got, ok := e.Append([]byte(prefix), &v)
	want, err := json.Marshal(v)
	if !ok {
		if err == nil {
			t.Errorf("Append(%#v) declined; json.Marshal gives %s", v, want)
		}
		if string(got) != prefix {
			t.Errorf("Append(%#v) declined but returned %q, want the prefix %q", v, got, prefix)
		}
		return "", false
	}
	if err != nil {
		t.Fatalf("Append(%#v) = %s, but json.Marshal fails: %v", v, got, err)
	}
	if !strings.HasPrefix(string(got), prefix) {
		t.Fatalf("Append(%#v) = %q: lost the prefix", v, got)
	}
	got = got[len(prefix):]
	if string(got) != string(want) {
		t.Fatalf("Append(%#v)\n got %s\nwant %s", v, got, want)
	}
	return string(got), true
}

func mustEncoder[T any](t *testing.T) *Encoder[T] {
	t.Helper()
	e := NewEncoder[T]()
	if e == nil {
		t.Fatalf("NewEncoder[%T] = nil", *new(T))
	}
	return e
}

func TestEncodeScalars(t *testing.T) {
	t.Parallel()
	e := mustEncoder[Scalars](t)
	for _, v := range []Scalars{
		{},
		{B: true, S: "x", I: -1, I8: -128, I16: math.MaxInt16, I32: math.MinInt32, I64: math.MaxInt64,
			U: 1, U8: 255, U16: math.MaxUint16, U32: math.MaxUint32, U64: math.MaxUint64, F32: 1.5, F64: -2.5e-3},
		{F32: math.MaxFloat32, F64: math.MaxFloat64},
		{F32: math.SmallestNonzeroFloat32, F64: math.SmallestNonzeroFloat64},
		{F32: 0.1, F64: 0.1},
		{F32: 1e-6, F64: 1e-6},
		{F32: 9.999999e-7, F64: 9.99999999e-7},
		{F32: 1e21, F64: 1e21},
		{F32: 9.999999e20, F64: 999999999999999900000},
		{F32: float32(math.Copysign(0, -1)), F64: math.Copysign(0, -1)},
		{F64: 1e-7},
		{F64: 1.5e300},
		{F64: 123456789},
	} {
		encodeCheck(t, e, v)
	}
	for _, v := range []Scalars{
		{F64: math.NaN()},
		{F64: math.Inf(1)},
		{F32: float32(math.Inf(-1))},
	} {
		if _, ok := encodeCheck(t, e, v); ok {
			t.Errorf("Append(%v) accepted a value json.Marshal rejects", v)
		}
	}
}

func TestEncodeStrings(t *testing.T) {
	t.Parallel()
	e := mustEncoder[string](t)
	for _, s := range []string{
		"",
		"plain ascii",
		`quote " backslash \ slash /`,
		"<script>&amp;</script>",
		"\b\f\n\r\t\x00\x01\x1f\x7f",
		"é ü 日本 😀",
		"\u2028\u2029",
		"\xff", "a\xc3", "\xc3\x28", "\xed\xa0\x80", "\xef\xbf\xbd", "\xf4\x90\x80\x80",
		strings.Repeat("long string ", 100),
	} {
		encodeCheck(t, e, s)
	}
	if got, _ := encodeCheck(t, e, "<a&b>\u2028\xff\n"); got != `"\u003ca\u0026b\u003e\u2028`+invalidUTF8+`\n"` {
		t.Errorf("got %s", got)
	}
}

func TestEncodeNested(t *testing.T) {
	t.Parallel()
	e := mustEncoder[Shape](t)
	for _, v := range []Shape{
		{},
		{Points: []Point{}, Tags: []string{}, Grid: [][]int16{}, Flags: []bool{}, Ratios: []float32{}, Sizes: []uint64{}},
		{Name: "sq", Center: Point{1, 2}, Points: []Point{{}, {X: -1}}, Tags: []string{"a", "<b>"},
			Grid: [][]int16{{1, 2}, nil, {}}, Flags: []bool{true}, Ratios: []float32{0.1}, Sizes: []uint64{math.MaxUint64}},
	} {
		encodeCheck(t, e, v)
	}
	if _, ok := encodeCheck(t, e, Shape{Ratios: []float32{1, float32(math.NaN())}}); ok {
		t.Error("Append accepted a NaN in a slice")
	}
	if got, _ := encodeCheck(t, e, Shape{Center: Point{X: 1}}); got != `{"name":"","center":{"X":1,"Y":0},"points":null,"tags":null,"grid":null,"flags":null,"ratios":null,"sizes":null}` {
		t.Errorf("got %s", got)
	}
}

func TestEncodeOmitEmpty(t *testing.T) {
	t.Parallel()
	e := mustEncoder[Named](t)
	for _, v := range []Named{
		{},
		{Names: Names{}, Opt: []int{}},
		{Level: "info", Count: 1, Ratio: 0.5, Flag: true, Names: Names{"x"}, Ignored: "no", Dotted: "d", Opt: []int{1}, hidden: 1},
		{Ratio: Ratio(math.Copysign(0, -1))},
	} {
		encodeCheck(t, e, v)
	}
	if got, _ := encodeCheck(t, e, Named{}); got != `{"Ratio":0,"a.b-c_d":""}` {
		t.Errorf("got %s", got)
	}
	type omit struct {
		B   bool    `json:",omitempty"`
		I   int     `json:",omitempty"`
		U8  uint8   `json:",omitempty"`
		I16 int16   `json:",omitempty"`
		U32 uint32  `json:",omitempty"`
		F32 float32 `json:",omitempty"`
		F64 float64 `json:",omitempty"`
		S   string  `json:",omitempty"`
		P   Point   `json:",omitempty"` // a struct is never empty
	}
	eo := mustEncoder[omit](t)
	for _, v := range []omit{
		{},
		{B: true},
		{I: -1},
		{U8: 1},
		{I16: 1},
		{U32: 1},
		{F32: float32(math.Copysign(0, -1)), F64: math.Copysign(0, -1)},
		{F32: 1e-45, F64: 5e-324},
		{S: " "},
	} {
		encodeCheck(t, eo, v)
	}
}

func TestEncodeTopLevel(t *testing.T) {
	t.Parallel()
	encodeCheck(t, mustEncoder[bool](t), true)
	encodeCheck(t, mustEncoder[int](t), -42)
	encodeCheck(t, mustEncoder[uint16](t), 42)
	encodeCheck(t, mustEncoder[float64](t), 1e-9)
	encodeCheck(t, mustEncoder[float32](t), 1e21)
	encodeCheck(t, mustEncoder[Level](t), "lvl")
	encodeCheck(t, mustEncoder[[]string](t), nil)
	encodeCheck(t, mustEncoder[[]string](t), []string{"a"})
	encodeCheck(t, mustEncoder[Empty](t), Empty{hidden: 1})
	encodeCheck(t, mustEncoder[Wide](t), Wide{F9: 9, S: "s"})
}

func TestNilEncoder(t *testing.T) {
	t.Parallel()
	var e *Encoder[Sum]
	if got, ok := e.Append([]byte("x"), &Sum{}); ok || string(got) != "x" {
		t.Errorf("a nil Encoder returned %q, %v", got, ok)
	}
}
