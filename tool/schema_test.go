package tool_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/tool"
	"github.com/google/jsonschema-go/jsonschema"
)

func newValidator(t *testing.T, schema string) *tool.Validator {
	t.Helper()
	v, err := tool.NewValidator(tool.Definition{Name: "t", InputSchema: json.RawMessage(schema)})
	if err != nil {
		t.Fatalf("NewValidator(%s): %v", schema, err)
	}
	return v
}

const orderSchema = `{
	"type": "object",
	"properties": {
		"id":    {"type": "integer", "minimum": 1},
		"kind":  {"enum": ["pickup", "delivery"]},
		"note":  {"type": ["string", "null"], "maxLength": 5},
		"code":  {"type": "string", "pattern": "^[A-Z]{3}$"},
		"price": {"type": "number", "exclusiveMinimum": 0, "multipleOf": 0.5},
		"lines": {
			"type": "array",
			"minItems": 1,
			"items": {
				"type": "object",
				"properties": {"sku": {"type": "string"}, "qty": {"type": "integer"}},
				"required": ["sku", "qty"],
				"additionalProperties": false
			}
		},
		"meta": {"type": "object", "additionalProperties": {"type": "string"}, "maxProperties": 2},
		"odd key": {"const": true}
	},
	"required": ["id", "lines"],
	"additionalProperties": false
}`

func TestValidatorMessages(t *testing.T) {
	t.Parallel()
	v := newValidator(t, orderSchema)
	lines := `"lines":[{"sku":"a","qty":1}]`
	tests := []struct {
		args string
		path string
		msg  string
	}{
		{`{"id":1,` + lines + `}`, "", ""},
		{`{"id":1,` + lines + `,"kind":"pickup","note":null,"code":"ABC","price":2.5,"meta":{"a":"b"},"odd key":true}`, "", ""},
		{`{}`, "", `missing required properties "id", "lines"`},
		{`{"id":0,` + lines + `}`, "id", "must be >= 1, got 0"},
		{`{"id":1.5,` + lines + `}`, "id", "must be an integer, got number 1.5"},
		{`{"id":2.0,` + lines + `}`, "", ""}, // 2.0 is an integer to JSON Schema
		{`{"id":"1",` + lines + `}`, "id", `must be an integer, got string "1"`},
		{`{"id":1,"lines":[]}`, "lines", "must have at least 1 items, got 0"},
		{`{"id":1,"lines":{}}`, "lines", "must be an array, got an object"},
		{`{"id":1,"lines":[{"sku":"a","qty":1},{"sku":"b"}]}`, "lines[1]", `missing required property "qty"`},
		{`{"id":1,"lines":[{"sku":"a","qty":1,"x":0}]}`, "lines[0]", `unknown property "x" (allowed: "qty", "sku")`},
		{`{"id":1,"lines":[{"sku":7,"qty":1}]}`, "lines[0].sku", "must be a string, got number 7"},
		{`{"id":1,` + lines + `,"kind":"drone"}`, "kind", `must be one of "pickup", "delivery"; got string "drone"`},
		{`{"id":1,` + lines + `,"kind":{}}`, "kind", `must be one of "pickup", "delivery"; got an object`},
		{`{"id":1,` + lines + `,"note":"too long"}`, "note", "must be at most 5 characters long, got 8"},
		{`{"id":1,` + lines + `,"note":"héllo"}`, "", ""}, // 5 characters, 6 bytes
		{`{"id":1,` + lines + `,"note":3}`, "note", "must be a string or null, got number 3"},
		{`{"id":1,` + lines + `,"code":"abc"}`, "code", `must match the regular expression "^[A-Z]{3}$", got "abc"`},
		{`{"id":1,` + lines + `,"code":"\u0041BC"}`, "", ""}, // escapes are decoded first
		{`{"id":1,` + lines + `,"price":0}`, "price", "must be > 0, got 0"},
		{`{"id":1,` + lines + `,"price":0.75}`, "price", "must be a multiple of 0.5, got 0.75"},
		{`{"id":1,` + lines + `,"meta":{"a":1}}`, "meta.a", "must be a string, got number 1"},
		{`{"id":1,` + lines + `,"meta":{"a":"","b":"","c":""}}`, "meta", "must have at most 2 properties, got 3"},
		{`{"id":1,` + lines + `,"odd key":false}`, `["odd key"]`, "must be true, got boolean false"},
		{`{"id":1,` + lines + `,"extra":1}`, "", `unknown property "extra" (allowed: "code", "id", "kind", "lines", "meta", "note", "odd key", "price")`},
		{`{"id":1,` + lines + `,"\u0065xtra":1}`, "", `unknown property "extra"`},
		{`{"id":1e400,` + lines + `}`, "id", "number 1e400 is out of range"},
		{`[]`, "", `arguments must be a JSON object, got "[]"`},
		{`"{}"`, "", `arguments must be a JSON object, got "\"{}\""`},
		{`null`, "", `arguments must be a JSON object, got "null"`},
		{`{"id":1,}`, "", `arguments are not valid JSON (invalid character '}' looking for beginning of object key string, at offset 9): "{\"id\":1,}"`},
		{`{"id": "` + strings.Repeat("x", 100) + `"`, "", `arguments are not valid JSON (unexpected end of JSON input, at offset 109): "{\"id\": \"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx..."`},
	}
	for _, tt := range tests {
		err := v.Validate(json.RawMessage(tt.args))
		if tt.msg == "" {
			if err != nil {
				t.Errorf("Validate(%s): %v", tt.args, err)
			}
			continue
		}
		var ae *tool.ArgumentError
		if !errors.As(err, &ae) {
			t.Errorf("Validate(%s) = %v, want an *ArgumentError", tt.args, err)
			continue
		}
		if ae.Path != tt.path || !strings.HasPrefix(ae.Msg, tt.msg) || ae.Tool != "t" {
			t.Errorf("Validate(%s):\n got path %q, msg %q\nwant path %q, msg %q", tt.args, ae.Path, ae.Msg, tt.path, tt.msg)
		}
	}
}

func TestValidatorEmptySchema(t *testing.T) {
	t.Parallel()
	for _, schema := range []string{``, `{}`, `true`, `{"type":"object"}`} {
		v := newValidator(t, schema)
		for _, args := range []string{``, ` `, `{}`, `{"anything": [1, {"goes": null}]}`} {
			if err := v.Validate(json.RawMessage(args)); err != nil {
				t.Errorf("schema %s, Validate(%s): %v", schema, args, err)
			}
		}
		if err := v.Validate(json.RawMessage(`[1]`)); err == nil {
			t.Errorf("schema %s: an array passed", schema)
		}
	}
}

func TestNewValidatorErrors(t *testing.T) {
	t.Parallel()
	for schema, want := range map[string]string{
		`{"type":"string"}`:                   "must describe an object",
		`{"type":["array","null"]}`:           "must describe an object",
		`{"type":`:                            "input schema",
		`{"$ref":"http://example.com/s"}`:     "input schema",
		`{"properties":{"a":{"type":"wat"}}}`: "input schema",
	} {
		_, err := tool.NewValidator(tool.Definition{Name: "t", InputSchema: json.RawMessage(schema)})
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("NewValidator(%s) error = %v, want one containing %q", schema, err, want)
		}
	}
}

// TestValidatorGeneralPath covers schemas that use keywords the in-place
// checker leaves to jsonschema-go.
func TestValidatorGeneralPath(t *testing.T) {
	t.Parallel()
	v := newValidator(t, `{
		"type": "object",
		"$defs": {"pos": {"type": "integer", "minimum": 1}},
		"properties": {
			"n": {"$ref": "#/$defs/pos"},
			"v": {"anyOf": [{"type": "string"}, {"type": "boolean"}]}
		},
		"required": ["n"]
	}`)
	for args, ok := range map[string]bool{
		`{"n": 1}`:            true,
		`{"n": 1, "v": true}`: true,
		`{"n": 0}`:            false,
		`{"n": 1, "v": 3}`:    false,
		`{}`:                  false,
		`[]`:                  false,
		`{`:                   false,
	} {
		err := v.Validate(json.RawMessage(args))
		if (err == nil) != ok {
			t.Errorf("Validate(%s) = %v, want ok %v", args, err, ok)
		}
		if ae := new(tool.ArgumentError); err != nil && !errors.As(err, &ae) {
			t.Errorf("Validate(%s) = %T, want an *ArgumentError", args, err)
		}
	}
}

// TestValidatorAgreesWithJSONSchema checks that the in-place checker gives
// the verdict jsonschema-go gives, on every pair of a set of schemas and a
// set of instances.
func TestValidatorAgreesWithJSONSchema(t *testing.T) {
	t.Parallel()
	props := []string{
		`{}`, `true`, `false`,
		`{"type":"string"}`, `{"type":"integer"}`, `{"type":"number"}`, `{"type":"boolean"}`,
		`{"type":"null"}`, `{"type":"array"}`, `{"type":"object"}`,
		`{"type":["integer","string"]}`, `{"type":["number","null"]}`,
		`{"enum":[1,"a",null,true]}`, `{"enum":[]}`, `{"const":2}`, `{"const":"a","enum":["a","b"]}`,
		`{"minimum":1,"maximum":3}`, `{"exclusiveMinimum":1,"exclusiveMaximum":3}`, `{"multipleOf":3}`,
		`{"minLength":2,"maxLength":3}`, `{"pattern":"^a+$"}`, `{"pattern":"b"}`,
		`{"items":{"type":"integer"},"minItems":1,"maxItems":2}`,
		`{"properties":{"x":{"type":"integer"}},"required":["x"],"additionalProperties":false}`,
		`{"additionalProperties":{"type":"integer"},"minProperties":1}`,
		`{"required":["y"]}`, `{"required":["y"],"additionalProperties":false}`,
		`{"properties":{"y":false}}`,
	}
	values := []string{
		`null`, `true`, `false`, `0`, `1`, `2`, `3`, `-1`, `1.5`, `2.0`, `3e0`, `6`, `1e2`, `-0`,
		`""`, `"a"`, `"aa"`, `"aaaa"`, `"b"`, `"ab"`, `"\u0061"`, `"é"`, `"éé"`,
		`[]`, `[1]`, `[1,2]`, `[1,2,3]`, `["a"]`, `[1.5]`, `[[]]`,
		`{}`, `{"x":1}`, `{"x":"1"}`, `{"y":1}`, `{"x":1,"y":2}`, `{"\u0078":1}`, `{"y":{"z":[1,{"w":2}]}}`,
	}
	for _, p := range props {
		schema := `{"type":"object","properties":{"p":` + p + `},"additionalProperties":` + p + `}`
		s := new(jsonschema.Schema)
		if err := json.Unmarshal([]byte(schema), s); err != nil {
			t.Fatalf("%s: %v", schema, err)
		}
		rs, err := s.Resolve(nil)
		if err != nil {
			t.Fatalf("%s: %v", schema, err)
		}
		v := newValidator(t, schema)
		for _, val := range values {
			for _, args := range []string{
				`{"p":` + val + `}`,
				`{"q":` + val + `}`,
				`{"p":` + val + `, "q": ` + val + `}`,
			} {
				var inst any
				if err := json.Unmarshal([]byte(args), &inst); err != nil {
					t.Fatal(err)
				}
				want := rs.Validate(inst)
				got := v.Validate(json.RawMessage(args))
				if (got == nil) != (want == nil) {
					t.Errorf("schema %s, args %s:\n tool.Validator: %v\n jsonschema-go:  %v", schema, args, got, want)
				}
			}
		}
	}
}

// FuzzValidator checks that the in-place checker never panics and agrees
// with jsonschema-go. They may differ on objects with a duplicate key: the
// checker checks every occurrence, jsonschema-go sees only the last.
func FuzzValidator(f *testing.F) {
	v, err := tool.NewValidator(tool.Definition{Name: "t", InputSchema: json.RawMessage(orderSchema)})
	if err != nil {
		f.Fatal(err)
	}
	s := new(jsonschema.Schema)
	if err := json.Unmarshal([]byte(orderSchema), s); err != nil {
		f.Fatal(err)
	}
	rs, err := s.Resolve(nil)
	if err != nil {
		f.Fatal(err)
	}
	for _, s := range []string{
		`{"id":1,"lines":[{"sku":"a","qty":1}]}`, `{"id":1,"meta":{"a":"b"}}`, `[1,{"a":"\""}]`, `{"\u0041":[]}`,
		`{"id":2,"lines":[{"sku":"a","qty":1}],"kind":"pickup","note":null,"code":"ABC","price":2.5,"meta":{"a":"b"},"odd key":true}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, args string) {
		got := v.Validate(json.RawMessage(args)) // must not panic
		if got != nil {
			if ae := new(tool.ArgumentError); !errors.As(got, &ae) {
				t.Errorf("Validate(%q) = %T", args, got)
			}
			_ = got.Error()
		}
		var inst any
		if strings.TrimSpace(args) == "" || json.Unmarshal([]byte(args), &inst) != nil {
			return
		}
		if _, ok := inst.(map[string]any); !ok {
			if got == nil {
				t.Errorf("Validate(%q) passed a non-object", args)
			}
			return
		}
		want := rs.Validate(inst)
		if (got == nil) != (want == nil) && !hasDuplicateKey(args) {
			t.Errorf("Validate(%q):\n tool.Validator: %v\n jsonschema-go:  %v", args, got, want)
		}
	})
}

func hasDuplicateKey(s string) bool {
	dec := json.NewDecoder(strings.NewReader(s))
	type frame struct {
		keys  map[string]bool
		isObj bool
		inKey bool
	}
	var stack []*frame
	for {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		var top *frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if top != nil && top.isObj && top.inKey {
			if k, ok := tok.(string); ok {
				if top.keys[k] {
					return true
				}
				top.keys[k] = true
				top.inKey = false
				continue
			}
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, &frame{keys: map[string]bool{}, isObj: true, inKey: true})
			continue
		case json.Delim('['):
			stack = append(stack, &frame{})
			continue
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
		}
		// A value ended: the parent object expects a key next.
		if len(stack) > 0 && stack[len(stack)-1].isObj {
			stack[len(stack)-1].inKey = true
		}
	}
}
