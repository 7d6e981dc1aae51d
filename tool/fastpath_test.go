package tool

import (
	"context"
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/internal/jsonfast"
	"github.com/google/jsonschema-go/jsonschema"
)

// A typed tool whose schema is inferred from In skips the schema check for
// arguments that jsonfast's schema decoder takes (see typed.prepare). That
// is sound only if whatever the decoder takes, the inferred schema's
// Validator takes too. These tests hold the two to it, for types with
// every kind the fast path handles, on ordinary arguments and on
// arguments generated field by field with values at and past every edge.

type fpScalars struct {
	B   bool    `json:"b"`
	S   string  `json:"s"`
	I   int     `json:"i"`
	I8  int8    `json:"i8"`
	I16 int16   `json:"i16"`
	I32 int32   `json:"i32,omitempty"`
	I64 int64   `json:"i64,omitzero"`
	U   uint    `json:"u"`
	U8  uint8   `json:"u8"`
	U16 uint16  `json:"u16"`
	U32 uint32  `json:"u32"`
	U64 uint64  `json:"u64"`
	F32 float32 `json:"f32"`
	F64 float64
}

type fpLevel string

type fpItem struct {
	Query string    `json:"query"`
	Limit int       `json:"limit,omitempty"`
	Tags  []fpLevel `json:"tags"`
}

type fpNested struct {
	Name  string   `json:"name"`
	Items []fpItem `json:"items,omitempty"`
	At    struct{ X, Y float32 }
	Grid  [][]int8   `json:"grid"`
	Flags []bool     `json:"flags,omitempty"`
	Sizes []uint16   `json:"sizes"`
	Deep  [][]fpItem `json:"deep,omitempty"`
}

// fastCase is one type under test: its schema decoder and validator.
type fastCase struct {
	name   string
	typ    reflect.Type
	decode func([]byte) bool
	v      *Validator
}

func newFastCase[T any](t testing.TB, name string) fastCase {
	t.Helper()
	tl, err := New(name, "", func(context.Context, T) (int, error) { return 0, nil })
	if err != nil {
		t.Fatal(err)
	}
	ty := tl.(*typed[T, int])
	if ty.dec == nil || !ty.fast {
		t.Fatalf("%s: no schema decoder", name)
	}
	dec := jsonfast.NewSchemaDecoder[T]()
	return fastCase{name: name, typ: reflect.TypeFor[T](), v: ty.v, decode: func(b []byte) bool {
		var v T
		return dec.Decode(b, &v)
	}}
}

func fastCases(t testing.TB) []fastCase {
	return []fastCase{
		newFastCase[fpScalars](t, "scalars"),
		newFastCase[fpNested](t, "nested"),
		newFastCase[fpItem](t, "item"),
	}
}

// check fails if the decoder takes args the validator rejects.
func (c fastCase) check(t testing.TB, args []byte) bool {
	if !c.decode(args) {
		return false
	}
	if err := c.v.Validate(args); err != nil {
		t.Errorf("%s: the fast path takes %s, the schema rejects it: %v", c.name, args, err)
	}
	return true
}

func TestSchemaDecoderImpliesSchema(t *testing.T) {
	t.Parallel()
	ordinary := map[string][]string{
		"scalars": {
			`{"b":true,"s":"x","i":-1,"i8":-128,"i16":32767,"u":0,"u8":255,"u16":65535,"u32":4294967295,"u64":18446744073709551615,"f32":3.4028235e38,"F64":-1e308}`,
			`{"F64":0,"f32":0,"u64":0,"u32":0,"u16":0,"u8":0,"u":0,"i16":0,"i8":0,"i":0,"s":"","b":false,"i32":1,"i64":2}`,
		},
		"nested": {
			`{"name":"n","At":{"X":1,"Y":2},"grid":[],"sizes":[1,2]}`,
			`{"name":"n","items":[{"query":"q","tags":["a"]}],"At":{"X":1.5,"Y":-2},"grid":[[1,-128],[]],"flags":[true],"sizes":[],"deep":[[{"query":"","limit":3,"tags":[]}]]}`,
		},
		"item": {`{"query":"q","tags":[]}`, `{"query":"q","limit":10,"tags":["x","y"]}`},
	}
	for _, c := range fastCases(t) {
		for _, args := range ordinary[c.name] {
			if !c.check(t, []byte(args)) {
				t.Errorf("%s: the fast path declines ordinary arguments %s", c.name, args)
			}
		}
		// Generated: every field present or not, with each of its
		// candidate values in turn.
		taken := 0
		for seed := range 3000 {
			g := &argGen{src: []byte(strconv.Itoa(seed * 7919)), n: seed, tame: seed%3 == 0}
			if c.check(t, g.object(c.typ)) {
				taken++
			}
		}
		if taken == 0 {
			t.Errorf("%s: the fast path took none of the generated arguments", c.name)
		}
	}
}

func FuzzSchemaDecoderImpliesSchema(f *testing.F) {
	f.Add([]byte{0}, []byte(`{"query":"q","tags":[]}`))
	f.Add([]byte("\x01\x02\x03\x04\x05\x06\x07\x08\x09"), []byte(`{"name":"n","At":{"X":1,"Y":2},"grid":[],"sizes":[1]}`))
	f.Fuzz(func(t *testing.T, choices, raw []byte) {
		for _, c := range fastCases(t) {
			c.check(t, raw)
			for _, tame := range []bool{false, true} {
				g := &argGen{src: choices, tame: tame}
				c.check(t, g.object(c.typ))
			}
		}
	})
}

// argGen writes a JSON object for a struct type, choosing for each field,
// from src, whether to write it and which value: an ordinary one, one at
// or past the edge of the Go type's range, or one of another kind.
type argGen struct {
	src  []byte
	i    int
	n    int
	tame bool // every field, each with a value its Go type holds
}

func (g *argGen) pick(n int) int {
	var b int
	if len(g.src) > 0 {
		b = int(g.src[g.i%len(g.src)])
	}
	g.i++
	return (b + g.n + g.i) % n
}

func (g *argGen) object(t reflect.Type) []byte {
	var b strings.Builder
	b.WriteByte('{')
	first := true
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "" {
			name = f.Name
		}
		if !g.tame && g.pick(5) == 0 {
			continue // left out
		}
		if !g.tame && g.pick(23) == 0 {
			name = strings.ToUpper(name) // folded: the schema forbids it
		}
		if !first {
			b.WriteByte(',')
		}
		first = false
		b.WriteString(strconv.Quote(name) + ":")
		b.WriteString(g.value(f.Type, 0))
	}
	if !g.tame && g.pick(17) == 0 {
		b.WriteString(`,"unknown":1`)
	}
	b.WriteByte('}')
	return []byte(b.String())
}

func (g *argGen) value(t reflect.Type, depth int) string {
	others := []string{`null`, `"7"`, `true`, `[]`, `{}`, `1.5`}
	if !g.tame && g.pick(11) == 0 {
		return others[g.pick(len(others))]
	}
	// Candidates come valid ones first: valid[:n] when tame.
	choose := func(c []string, valid int) string {
		if g.tame {
			return c[g.pick(valid)]
		}
		return c[g.pick(len(c))]
	}
	switch t.Kind() {
	case reflect.Bool:
		return choose([]string{"true", "false"}, 2)
	case reflect.String:
		return choose([]string{`""`, `"x"`, `"\u00e9\n"`, `"\ud800"`}, 4)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		bits := t.Bits()
		lo, hi := int64(-1)<<(bits-1), int64(1)<<(bits-1)-1
		c := []string{"0", "-1", "7", strconv.FormatInt(lo, 10), strconv.FormatInt(hi, 10), "-0", "1.0", "1e2", "3.5"}
		if bits < 64 {
			c = append(c, strconv.FormatInt(lo-1, 10), strconv.FormatInt(hi+1, 10))
		} else {
			c = append(c, "9223372036854775808", "-9223372036854775809")
		}
		return choose(c, 6)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		bits := t.Bits()
		hi := uint64(1)<<(bits-1)<<1 - 1
		c := []string{"0", "7", strconv.FormatUint(hi, 10), "-1", "-0", "1.0", "2e1"}
		if bits < 64 {
			c = append(c, strconv.FormatUint(hi+1, 10))
		} else {
			c = append(c, "18446744073709551616")
		}
		return choose(c, 3)
	case reflect.Float32, reflect.Float64:
		c := []string{"0", "-0", "1.5", "1e-7", "-2", "3.4028235e38", "3.5e38", "1e308", "1e400"}
		if t.Bits() == 64 {
			return choose(c, 8)
		}
		return choose(c, 6)
	case reflect.Slice:
		if depth > 2 {
			return "[]"
		}
		n := g.pick(3)
		parts := make([]string, n)
		for i := range parts {
			parts[i] = g.value(t.Elem(), depth+1)
		}
		return "[" + strings.Join(parts, ",") + "]"
	case reflect.Struct:
		if depth > 2 {
			return "{}"
		}
		return string(g.object(t))
	}
	return "null"
}

// TestSchemaDecoderSkipsCheck checks which tools skip the schema check
// after a fast decode: those whose schema is inferred, not those given one,
// whose stricter rules must still apply.
func TestSchemaDecoderSkipsCheck(t *testing.T) {
	t.Parallel()
	fn := func(context.Context, fpItem) (int, error) { return 0, nil }
	if inferred := Must(New("i", "", fn)).(*typed[fpItem, int]); !inferred.fast {
		t.Error("a tool with an inferred schema checks fast-decoded arguments again")
	}
	strict := &jsonschema.Schema{Type: "object", Properties: map[string]*jsonschema.Schema{
		"query": {Type: "string", MinLength: jsonschema.Ptr(2)},
	}}
	explicit := Must(New("e", "", fn, WithInputSchema(strict)))
	if explicit.(*typed[fpItem, int]).fast {
		t.Error("a tool with a supplied schema skips the check")
	}
	_, err := explicit.Call(context.Background(), json.RawMessage(`{"query":"q","tags":[]}`))
	if err == nil || !strings.Contains(err.Error(), "at least 2 characters") {
		t.Errorf("Call with a query the supplied schema forbids: error = %v", err)
	}
}
