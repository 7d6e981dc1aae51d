package jsonfast

import (
	"encoding/json"
	"fmt"
	"math"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// cmpOpts lets cmp compare the test types' unexported fields.
var cmpOpts = cmp.AllowUnexported(Named{}, Empty{})

// decodeCheck decodes data into a T and, if Decode accepts it, checks that
// json.Unmarshal agrees. It returns the decoded value and whether Decode
// accepted it.
func decodeCheck[T any](t *testing.T, d *Decoder[T], data []byte) (T, bool) {
	t.Helper()
	var got T
	if !d.Decode(data, &got) {
		var zero T
		return zero, false
	}
	var want T
	if err := json.Unmarshal(data, &want); err != nil {
		t.Fatalf("Decode(%q) accepted what json.Unmarshal rejects: %v", data, err)
	}
	if diff := cmp.Diff(want, got, cmpOpts); diff != "" {
		t.Fatalf("Decode(%q) differs from json.Unmarshal (-want +got):\n%s", data, diff)
	}
	return got, true
}

type decodeTest struct {
	in     string
	accept bool
}

func runDecodeTests[T any](t *testing.T, tests []decodeTest) {
	t.Helper()
	d := NewDecoder[T]()
	if d == nil {
		t.Fatalf("NewDecoder[%T] = nil", *new(T))
	}
	for _, tt := range tests {
		if _, ok := decodeCheck(t, d, []byte(tt.in)); ok != tt.accept {
			t.Errorf("Decode(%s) = %v, want %v", tt.in, ok, tt.accept)
		}
	}
}

func TestDecodeScalars(t *testing.T) {
	t.Parallel()
	runDecodeTests[Scalars](t, []decodeTest{
		{`{}`, true},
		{` { } `, true},
		{`{"b":true,"s":"x","i":-1,"i8":-128,"i16":32767,"i32":-2147483648,"i64":9223372036854775807,` +
			`"u":1,"u8":255,"u16":65535,"u32":4294967295,"u64":18446744073709551615,"f32":1.5,"F64":-2.5e-3}`, true},
		{"{\n\t\"b\" : false ,\r\n \"s\" : \"\" }\n", true},
		{`{"i":-0,"i64":-9223372036854775808,"f32":3.4028235e38,"F64":1.7976931348623157e308}`, true},
		{`{"f32":1e-50,"F64":4.9e-324}`, true}, // underflow is no error
		{`{"f32":0.1,"F64":0.1}`, true},        // rounded differently for each size
		{`{"s":"a\u00e9\"\\\/\b\f\n\r\t\ud83d\ude00"}`, true},
		{"{\"s\":\"\xff\xfe\"}", true}, // invalid UTF-8 becomes U+FFFD
		{`{"s":"\ud800"}`, true},       // a lone surrogate too
		{`{"\u0073":"escaped key"}`, true},

		// Keys encoding/json would match differently, or ignore.
		{`{"B":true}`, false}, // case folding
		{`{"f64":1}`, false},  // case folding
		{`{"x":1}`, false},    // unknown
		{`{"b":true,"b":false}`, false},
		{`{"s":"a","s":"a"}`, false},
		// null, and values of the wrong kind.
		{`{"s":null}`, false},
		{`{"i":null}`, false},
		{`{"s":1}`, false},
		{`{"b":"true"}`, false},
		{`{"i":"1"}`, false},
		{`{"b":1}`, false},
		{`{"F64":[]}`, false},
		{`{"s":{}}`, false},
		// Numbers encoding/json rejects for the field's type.
		{`{"i":3.0}`, false},
		{`{"i":1e2}`, false},
		{`{"i8":128}`, false},
		{`{"i8":-129}`, false},
		{`{"i16":32768}`, false},
		{`{"i32":2147483648}`, false},
		{`{"i64":9223372036854775808}`, false},
		{`{"u":-1}`, false},
		{`{"u":-0}`, false},
		{`{"u8":256}`, false},
		{`{"u16":1.0}`, false},
		{`{"u32":4294967296}`, false},
		{`{"u64":18446744073709551616}`, false},
		{`{"u64":1e3}`, false},
		{`{"f32":3.5e38}`, false},
		{`{"F64":1e400}`, false},
		// Not an object, or not JSON.
		{``, false},
		{`null`, false},
		{`[]`, false},
		{`"s"`, false},
		{`{`, false},
		{`{"s":"a"`, false},
		{`{"s":"a",}`, false},
		{`{"s":"a"} x`, false},
		{`{"s":"a"}{}`, false},
		{`{"i":01}`, false},
		{`{"i":-}`, false},
		{"{\"s\":\"\x01\"}", false},
		{`{"s":"\x"}`, false},
		{`{"b":tru}`, false},
	})
}

func TestDecodeNested(t *testing.T) {
	t.Parallel()
	runDecodeTests[Shape](t, []decodeTest{
		{`{"name":"sq","center":{"X":1,"Y":2},"points":[{"X":0,"Y":0},{"Y":1},{}],"tags":["a","b"],` +
			`"grid":[[1,2],[],[3]],"flags":[true,false],"ratios":[0.5],"sizes":[18446744073709551615]}`, true},
		{`{"points":[],"tags":[],"grid":[],"flags":[],"ratios":[],"sizes":[]}`, true},
		{`{"grid":[[],[]]}`, true},
		{`{"center":{}}`, true},
		{`{"tags":` + "[" + strings.Repeat(`"x",`, 100) + `"y"]}`, true},
		{`{"points":` + "[" + strings.Repeat(`{"X":1},`, 100) + `{}]}`, true},

		{`{"center":{"x":1}}`, false}, // folding in a nested struct
		{`{"center":{"X":1,"X":2}}`, false},
		{`{"center":null}`, false},
		{`{"center":[]}`, false},
		{`{"tags":null}`, false},
		{`{"tags":[null]}`, false},
		{`{"tags":[1]}`, false},
		{`{"tags":"a"}`, false},
		{`{"tags":{}}`, false},
		{`{"tags":["a",]}`, false},
		{`{"tags":["a"],"tags":["b"]}`, false}, // encoding/json would overwrite, not append
		{`{"center":{"X":1},"center":{"Y":1}}`, false},
		{`{"tags":["a"}`, false},
		{`{"grid":[[1,1.5]]}`, false},
		{`{"grid":[[40000]]}`, false},
		{`{"points":[{"X":1},null]}`, false},
		{`{"sizes":[-1]}`, false},
	})
}

func TestDecodeNamed(t *testing.T) {
	t.Parallel()
	runDecodeTests[Named](t, []decodeTest{
		{`{"level":"info","count":7,"Ratio":0.25,"flag":true,"names":["a"],"a.b-c_d":"x","opt":[1]}`, true},
		{`{"Ignored":"x"}`, false}, // json:"-": encoding/json ignores it
		{`{"hidden":1}`, false},
		{`{"-":1}`, false},
		{`{"count":65536}`, false},
	})
	runDecodeTests[Wide](t, []decodeTest{
		{`{"F0":0,"F9":9,"s":"s"}`, true},
		{`{"F10":0}`, false},
		{`{"f9":0}`, false},
		{`{"F9":0,"F9":0}`, false},
	})
	runDecodeTests[Empty](t, []decodeTest{
		{`{}`, true},
		{`{"hidden":1}`, false},
	})
}

func TestDecodeBatch(t *testing.T) {
	t.Parallel()
	runDecodeTests[Batch](t, []decodeTest{
		{batchJSON(1), true},
		{batchJSON(100), true},
		{`{"items":[],"shapes":[],"marks":[]}`, true},
		{`{"marks":[{}]}`, true},
		{`{"marks":[{"a":1}]}`, false},
		{`{"items":[{"query":"a"},{"query":1}]}`, false},
	})
}

// batchJSON returns a Batch with n items, shapes and marks.
func batchJSON(n int) string {
	var b strings.Builder
	b.WriteString(`{"items":[`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"query":"q%d","limit":%d,"tags":["t%d","u"]}`, i, i, i)
	}
	b.WriteString(`],"shapes":[`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"name":"s%d","points":[{"X":%d}],"grid":[[%d]]}`, i, i, i%100)
	}
	b.WriteString(`],"marks":[`)
	b.WriteString(strings.Repeat("{},", n-1) + "{}")
	b.WriteString(`]}`)
	return b.String()
}

// TestDecodeConcurrent decodes from several goroutines at once while the
// garbage collector runs, for the race detector and checkptr (which -race
// turns on) to watch the unsafe stores.
func TestDecodeConcurrent(t *testing.T) {
	t.Parallel()
	data := []byte(batchJSON(50))
	var want Batch
	if err := json.Unmarshal(data, &want); err != nil {
		t.Fatal(err)
	}
	d := NewDecoder[Batch]()
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for i := range 50 {
				var got Batch
				if !d.Decode(data, &got) {
					t.Error("Decode declined")
					return
				}
				if i%10 == 0 {
					runtime.GC()
				}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("Decode (-want +got):\n%s", diff)
					return
				}
			}
		})
	}
	wg.Wait()
}

// TestDecodeValues checks a few results against values written out, not
// only against json.Unmarshal.
func TestDecodeValues(t *testing.T) {
	t.Parallel()
	got, ok := decodeCheck(t, NewDecoder[Shape](), []byte(`{"name":"n","center":{"X":1},"points":[{"Y":-1}],"tags":[],"grid":[[1],[]]}`))
	want := Shape{
		Name:   "n",
		Center: Point{X: 1},
		Points: []Point{{Y: -1}},
		Tags:   []string{},
		Grid:   [][]int16{{1}, {}},
	}
	if !ok {
		t.Fatal("Decode declined")
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Decode (-want +got):\n%s", diff)
	}

	s, ok := decodeCheck(t, NewDecoder[Scalars](), []byte(`{"i8":-128,"u64":18446744073709551615,"f32":0.1,"s":"\u00e9"}`))
	if !ok {
		t.Fatal("Decode declined")
	}
	if diff := cmp.Diff(Scalars{I8: -128, U64: math.MaxUint64, F32: 0.1, S: "é"}, s); diff != "" {
		t.Errorf("Decode (-want +got):\n%s", diff)
	}
}

// TestDecodeCopiesStrings checks that decoded strings do not alias the
// input, which the caller may reuse.
func TestDecodeCopiesStrings(t *testing.T) {
	t.Parallel()
	data := []byte(`{"query":"abc","tags":["def"]}`)
	var v Search
	if !NewDecoder[Search]().Decode(data, &v) {
		t.Fatal("Decode declined")
	}
	for i := range data {
		data[i] = 'x'
	}
	if v.Query != "abc" || v.Tags[0] != "def" {
		t.Errorf("after overwriting the input, got %+v", v)
	}
}

func TestNilDecoder(t *testing.T) {
	t.Parallel()
	var d *Decoder[Add]
	var v Add
	if d.Decode([]byte(`{"A":1}`), &v) {
		t.Error("a nil Decoder accepted input")
	}
}

// Optional has required fields and optional ones, at two depths.
type Optional struct {
	Name  string   `json:"name"`
	Limit int      `json:"limit,omitempty"`
	Since string   `json:"since,omitzero"`
	Items []Search `json:"items,omitempty"`
	At    Point    `json:"at"`
}

// TestSchemaDecoder checks that a schema decoder declines an object,
// at any depth, that lacks a field without omitempty or omitzero, and
// otherwise decodes as NewDecoder does.
func TestSchemaDecoder(t *testing.T) {
	t.Parallel()
	d, plain := NewSchemaDecoder[Optional](), NewDecoder[Optional]()
	tests := []struct {
		in   string
		want bool
	}{
		{`{"name":"a","at":{"X":1,"Y":2}}`, true},
		{`{"name":"a","limit":3,"since":"x","items":[],"at":{"X":1,"Y":2}}`, true},
		{`{"at":{"X":1,"Y":2},"name":"a","items":[{"query":"q","limit":1,"tags":[]}]}`, true},
		{`{"at":{"X":1,"Y":2}}`, false},                                              // no name
		{`{"name":"a"}`, false},                                                      // no at
		{`{"name":"a","at":{"X":1}}`, false},                                         // at lacks Y
		{`{"name":"a","at":{"X":1,"Y":2},"items":[{}]}`, false},                      // an item lacks all three
		{`{"name":"a","at":{"X":1,"Y":2},"items":[{"query":"q","limit":1}]}`, false}, // no tags
	}
	for _, tt := range tests {
		var got Optional
		if ok := d.Decode([]byte(tt.in), &got); ok != tt.want {
			t.Errorf("schema Decode(%s) = %v, want %v", tt.in, ok, tt.want)
			continue
		}
		var want Optional
		if !plain.Decode([]byte(tt.in), &want) {
			t.Errorf("Decode(%s) declined", tt.in)
		}
		if tt.want {
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("schema Decode(%s) differs from Decode (-want +got):\n%s", tt.in, diff)
			}
		}
	}
	if NewSchemaDecoder[[]int]() != nil || NewSchemaDecoder[struct{ P *int }]() != nil {
		t.Error("NewSchemaDecoder accepts a type off the fast path")
	}
}
