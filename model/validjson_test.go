package model

import (
	"encoding/json"
	"strings"
	"testing"
)

var jsonCases = []string{
	``, ` `, `{}`, `[]`, `{"a":1}`, `{"a":1,}`, `{"a"}`, `{"a":}`, `{a:1}`, `[1,2,3]`, `[1,]`, `[,1]`,
	`"x"`, `"x`, `"\u00e9"`, `"\u00g9"`, `"\q"`, "\"a\tb\"", `"a\/b"`, `"\uD800"`,
	`0`, `-0`, `01`, `1.`, `.5`, `1.5e10`, `1e`, `1E+2`, `-`, `--1`, `1.2.3`,
	`true`, `tru`, `false`, `null`, `nul`, `nullx`, ` {"a" : [ true , false , null ] } `, `{"a":1}}`,
	`{"expression":"21*2+5"}`, `{"a":{"b":{"c":[1,{"d":"e"}]}}}`, "\xff", `"\xff"`, `{"a":1} x`,
	strings.Repeat("[", 10001) + strings.Repeat("]", 10001),
	strings.Repeat("[", 10000) + strings.Repeat("]", 10000),
}

func TestValidJSONAgreesWithEncodingJSON(t *testing.T) {
	for _, c := range jsonCases {
		if got, want := ValidJSON([]byte(c)), json.Valid([]byte(c)); got != want {
			t.Errorf("ValidJSON(%.40q) = %v, encoding/json says %v", c, got, want)
		}
	}
}

func FuzzValidJSON(f *testing.F) {
	for _, c := range jsonCases {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, want := ValidJSON(b), json.Valid(b); got != want {
			t.Errorf("ValidJSON(%q) = %v, encoding/json says %v", b, got, want)
		}
	})
}

func BenchmarkValidJSON(b *testing.B) {
	args := []byte(`{"a":1,"b":2}`)
	b.Run("ours", func(b *testing.B) {
		for b.Loop() {
			ValidJSON(args)
		}
	})
	b.Run("encoding/json", func(b *testing.B) {
		for b.Loop() {
			json.Valid(args)
		}
	})
}
