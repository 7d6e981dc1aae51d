package jsonfast

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"testing"
)

// ordinary are arguments as models write them, which the fast path must
// accept, each for the type named first.
var ordinary = []struct{ typ, in string }{
	{"Add", `{"A":1,"B":2}`},
	{"Add", `{"A": -1.5, "B": 2e10}`},
	{"Add", `{"B":0.1}`},
	{"Search", `{"query":"weather in Paris","limit":10,"tags":["news","fr"]}`},
	{"Search", `{"query": "caf\u00e9 \"best\"", "limit": 0, "tags": []}`},
	{"Search", "{\n  \"query\": \"multi\\nline\",\n  \"limit\": 3\n}"},
	{"Search", `{"tags":["a"],"query":"order does not matter"}`},
	{"Scalars", `{"b":true,"s":"text","i":42,"u64":7,"f32":0.5,"F64":3.14159}`},
	{"Shape", `{"name":"tri","center":{"X":0.5,"Y":0.5},"points":[{"X":0,"Y":0},{"X":1,"Y":0},{"X":0,"Y":1}],"tags":["polygon"]}`},
	{"Named", `{"level":"debug","count":3,"names":["x","y"]}`},
	{"Wide", `{"F0":1,"F5":5,"s":"wide"}`},
	{"Batch", `{"items":[{"query":"a","limit":1},{"query":"b","tags":["x"]}],"marks":[{}]}`},
}

// decodeAll decodes data with a Decoder for each test type, checking each
// result against encoding/json, and returns which types accepted it. If
// generate is set, each type decodes the object a generator builds from
// data and the type's field names instead.
func decodeAll(t *testing.T, data []byte, generate bool) map[string]bool {
	t.Helper()
	return map[string]bool{
		"Add":     decodeAs[Add](t, data, generate),
		"Search":  decodeAs[Search](t, data, generate),
		"Scalars": decodeAs[Scalars](t, data, generate),
		"Shape":   decodeAs[Shape](t, data, generate),
		"Named":   decodeAs[Named](t, data, generate),
		"Wide":    decodeAs[Wide](t, data, generate),
		"Batch":   decodeAs[Batch](t, data, generate),
	}
}

// decodeAs is decodeCheck with a fresh Decoder, plus the converse check:
// a value json.Unmarshal decodes from data, marshaled again, is accepted
// by Decode unless it holds a null.
func decodeAs[T any](t *testing.T, data []byte, generate bool) bool {
	t.Helper()
	d := NewDecoder[T]()
	if generate {
		g := generator{choices: data}
		data = g.object(d.plan, 0)
	}
	_, ok := decodeCheck(t, d, data)
	var v T
	if json.Unmarshal(data, &v) == nil {
		m, err := json.Marshal(v)
		if err != nil {
			t.Fatalf("json.Marshal(%#v): %v", v, err)
		}
		if !bytes.Contains(m, []byte("null")) {
			if _, ok := decodeCheck(t, d, m); !ok {
				t.Fatalf("Decode[%T] declined %s, which json.Marshal wrote", v, m)
			}
		}
	}
	return ok
}

func TestDecodeAcceptsOrdinary(t *testing.T) {
	t.Parallel()
	for _, tt := range ordinary {
		if !decodeAll(t, []byte(tt.in), false)[tt.typ] {
			t.Errorf("Decode[%s](%s) declined", tt.typ, tt.in)
		}
	}
}

// FuzzDecode feeds Decoders of several types arbitrary bytes, and objects
// a generator builds from the bytes for each type. Whatever a Decoder
// accepts, json.Unmarshal must decode to the same value; and what
// json.Marshal writes for a value json.Unmarshal decoded, the Decoder must
// accept unless it holds a null.
func FuzzDecode(f *testing.F) {
	for _, tt := range ordinary {
		f.Add([]byte(tt.in))
	}
	for _, seed := range []string{
		`{}`, `[]`, `null`, ``, `{"A":1,"A":2}`, `{"a":1}`, `{"A":null}`, `{"A":"1"}`, `{"A":1e400}`,
		`{"i":3.0}`, `{"i8":128}`, `{"u":-0}`, `{"u64":18446744073709551615}`, `{"f32":3.5e38}`, `{"f32":1e-46}`,
		`{"s":"\ud800\udc00\ud800"}`, "{\"s\":\"\xff\"}", `{"\u0073":""}`, `{"s":"a"} `, `{"s":"a"}x`,
		`{"tags":[null]}`, `{"grid":[[1],[]]}`, `{"points":[{"X":1},{}]}`, `{"center":{"X":1,"x":2}}`,
		`{"limit":-9223372036854775808}`, `{"limit":9223372036854775808}`, `{"-":1}`, `{"Ignored":""}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		decodeAll(t, data, false)
		// Raw bytes rarely form an object that a Decoder accepts; read
		// them also as choices of keys and values that often do.
		decodeAll(t, data, true)
	})
}

// A generator builds a JSON object for a plan from a fuzzer's bytes, each
// byte choosing a key, a value or a length. Mostly it writes the plan's
// keys with values of their kind, so that mutations of the bytes explore
// documents on the edge of the fast path: repeated keys, keys in another
// case, unknown keys, values of another kind, and numbers at the edges of
// every type's range.
type generator struct {
	choices []byte
	out     []byte
}

func (g *generator) next() int {
	if len(g.choices) == 0 {
		return 0
	}
	c := g.choices[0]
	g.choices = g.choices[1:]
	return int(c)
}

// pick returns one of list, chosen by the next byte.
func (g *generator) pick(list []string) string { return list[g.next()%len(list)] }

func (g *generator) object(n *node, depth int) []byte {
	g.out = append(g.out, '{')
	for i := range g.next() % 8 {
		if i > 0 {
			g.out = append(g.out, ',')
		}
		c := g.next()
		switch {
		case len(n.fields) > 0 && c < 224:
			f := &n.fields[c%len(n.fields)]
			g.key(f.name)
			g.value(f.node, depth+1)
		case len(n.fields) > 0 && c < 240:
			f := &n.fields[c%len(n.fields)]
			g.key(strings.ToUpper(f.name))
			g.value(f.node, depth+1)
		default:
			g.key("unknown")
			g.value(nil, depth+1)
		}
	}
	g.out = append(g.out, '}')
	return g.out
}

func (g *generator) key(name string) {
	g.out = strconv.AppendQuote(g.out, name)
	g.out = append(g.out, ':')
}

// value writes a value for n, or of any kind if n is nil or by chance.
func (g *generator) value(n *node, depth int) {
	if n == nil || g.next()%16 == 0 {
		g.out = append(g.out, g.pick(anyValues)...)
		return
	}
	switch n.kind {
	case kindBool:
		g.out = append(g.out, g.pick([]string{"true", "false"})...)
	case kindString:
		g.out = append(g.out, g.pick(stringValues)...)
	case kindSlice:
		g.out = append(g.out, '[')
		if depth < 5 {
			for i := range g.next() % 5 {
				if i > 0 {
					g.out = append(g.out, ',')
				}
				g.value(n.elem, depth+1)
			}
		}
		g.out = append(g.out, ']')
	case kindStruct:
		if depth < 5 {
			g.object(n, depth)
		} else {
			g.out = append(g.out, "{}"...)
		}
	default:
		g.out = append(g.out, g.pick(numberValues)...)
	}
}

// numberValues are numbers at the edges of the ranges of every type, and
// in every form.
var numberValues = []string{
	"0", "-0", "1", "-1", "127", "128", "-128", "-129", "255", "256", "32767", "32768", "-32768",
	"-32769", "65535", "65536", "2147483647", "2147483648", "-2147483648", "-2147483649",
	"4294967295", "4294967296", "9223372036854775807", "9223372036854775808",
	"-9223372036854775808", "-9223372036854775809", "18446744073709551615", "18446744073709551616",
	"1.5", "0.1", "1e2", "1E+2", "3.0", "-2.5e-3", "1e400", "-1e400", "3.4028235e38",
	"3.4028236e38", "3.5e38", "1e-46", "4.9e-324", "1e-400", "0.30000000000000004", "1e21",
	"123456789012345678901234567890",
}

var stringValues = []string{
	`""`, `"a"`, `"\u00e9\n\"\\\/"`, `"\ud800"`, `"\ud83d\ude00"`, "\"\xff\xfe\"", `"<&>"`,
	`"\u2028"`, `"\u0000"`, `"\u0041"`,
}

var anyValues = append(append([]string{"null", "true", "false", "[]", "{}", `[null]`, `{"a":1}`},
	numberValues...), stringValues...)

// FuzzEncode builds values of several types from the fuzzer's inputs and
// compares Append with json.Marshal byte for byte; Append must decline
// exactly the values json.Marshal rejects.
func FuzzEncode(f *testing.F) {
	type seed struct {
		s    string
		f64  uint64
		f32  uint32
		i    int64
		u    uint64
		flag bool
	}
	for _, sd := range []seed{
		{"", 0, 0, 0, 0, false},
		{"hello", math.Float64bits(1.5), math.Float32bits(0.1), 42, 7, true},
		{"<a href=\"x\">&amp;</a>", math.Float64bits(1e21), math.Float32bits(1e21), -1, math.MaxUint64, false},
		{"\x00\x1f\x7f\u2028\u2029\xff\xc3", math.Float64bits(1e-7), math.Float32bits(1e-7), math.MinInt64, 1 << 63, true},
		{"日本 😀 \xed\xa0\x80", math.Float64bits(math.NaN()), math.Float32bits(float32(math.Inf(1))), math.MaxInt64, 255, false},
		{"\\\"\b\f\n\r\t", math.Float64bits(math.Copysign(0, -1)), 0x80000000, 128, 65536, true},
		{"a b", math.Float64bits(9.999999999999999e20), math.Float32bits(9.999999e-7), 32768, 1 << 32, false},
		{"x", math.Float64bits(math.SmallestNonzeroFloat64), 1, -129, 1, true},
	} {
		f.Add(sd.s, sd.f64, sd.f32, sd.i, sd.u, sd.flag)
	}
	f.Fuzz(func(t *testing.T, s string, f64bits uint64, f32bits uint32, i int64, u uint64, flag bool) {
		f64 := math.Float64frombits(f64bits)
		f32 := math.Float32frombits(f32bits)
		encodeCheck(t, NewEncoder[string](), s)
		encodeCheck(t, NewEncoder[float64](), f64)
		encodeCheck(t, NewEncoder[float32](), f32)
		encodeCheck(t, NewEncoder[Sum](), Sum{f64})
		encodeCheck(t, NewEncoder[Scalars](), Scalars{
			B: flag, S: s, I: int(i), I8: int8(i), I16: int16(i), I32: int32(i), I64: i,
			U: uint(u), U8: uint8(u), U16: uint16(u), U32: uint32(u), U64: u, F32: f32, F64: f64,
		})
		var tags []string
		var grid [][]int16
		if flag {
			tags = strings.Fields(s) // maybe empty, not nil
			grid = [][]int16{{int16(i)}, nil, {}}
		}
		encodeCheck(t, NewEncoder[Search](), Search{Query: s, Limit: int(i), Tags: tags})
		encodeCheck(t, NewEncoder[Shape](), Shape{
			Name: s, Center: Point{f64, float64(f32)}, Points: []Point{{X: float64(i)}},
			Tags: tags, Grid: grid, Flags: []bool{flag}, Ratios: []float32{f32}, Sizes: []uint64{u},
		})
		encodeCheck(t, NewEncoder[Batch](), Batch{
			Items:  []Search{{Query: s, Tags: tags}, {Limit: int(i)}},
			Shapes: []Shape{{Name: s, Sizes: []uint64{u}}},
			Marks:  make([]struct{}, u%3),
		})
		var names Names
		if flag {
			names = Names{Level(s)}
		}
		encodeCheck(t, NewEncoder[Named](), Named{
			Level: Level(s), Count: Count(u), Ratio: Ratio(f32), Flag: Flag(flag), Names: names,
			Ignored: s, Dotted: s,
		})
	})
}
