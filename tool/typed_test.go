package tool_test

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentrt/agentrt/tool"
	"github.com/google/go-cmp/cmp"
	"github.com/google/jsonschema-go/jsonschema"
)

type address struct {
	Street string `json:"street"`
	Zip    string `json:"zip,omitempty"`
}

type searchIn struct {
	Query string    `json:"query" jsonschema:"what to look for"`
	Limit int       `json:"limit,omitempty" jsonschema:"at most this many results"`
	Exact bool      `json:"exact,omitzero"`
	Tags  []string  `json:"tags,omitempty"`
	Near  *address  `json:"near,omitempty"`
	Home  address   `json:"home"`
	Score float64   `json:"score,omitempty"`
	Since time.Time `json:"since,omitzero"`
	//lint:ignore U1000 an unexported field, to check that the schema leaves it out
	ignored string
	Skipped string `json:"-"`
}

func search(context.Context, searchIn) (string, error) { return "ok", nil }

func TestNewInfersSchema(t *testing.T) {
	t.Parallel()
	s := tool.Must(tool.New("search", "Searches.", search))
	def := s.Definition()
	if def.Name != "search" || def.Description != "Searches." {
		t.Errorf("definition = %q, %q", def.Name, def.Description)
	}
	var got struct {
		Type                 string   `json:"type"`
		Required             []string `json:"required"`
		AdditionalProperties any      `json:"additionalProperties"`
		Properties           map[string]struct {
			Type        any    `json:"type"`
			Description string `json:"description"`
			Required    []string
		} `json:"properties"`
	}
	if err := json.Unmarshal(def.InputSchema, &got); err != nil {
		t.Fatal(err)
	}
	if got.Type != "object" {
		t.Errorf("type = %q, want object", got.Type)
	}
	if diff := cmp.Diff([]string{"query", "home"}, got.Required); diff != "" {
		t.Errorf("required (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(false, got.AdditionalProperties); diff != "" {
		t.Errorf("additionalProperties (-want +got):\n%s", diff)
	}
	var names []string
	for name := range got.Properties {
		names = append(names, name)
	}
	if len(names) != 8 || got.Properties["ignored"].Type != nil || got.Properties["Skipped"].Type != nil {
		t.Errorf("properties = %v, want the 8 exported, untagged-out fields", names)
	}
	for name, want := range map[string]any{
		"query": "string", "limit": "integer", "exact": "boolean", "score": "number",
		"home": "object", "since": "string",
		"tags": []any{"null", "array"}, "near": []any{"null", "object"},
	} {
		if diff := cmp.Diff(want, got.Properties[name].Type); diff != "" {
			t.Errorf("type of %s (-want +got):\n%s", name, diff)
		}
	}
	if d := got.Properties["query"].Description; d != "what to look for" {
		t.Errorf("description of query = %q", d)
	}
	// Properties keep the order of the fields, for people reading the schema.
	if i, j := strings.Index(string(def.InputSchema), `"query"`), strings.Index(string(def.InputSchema), `"limit"`); i > j {
		t.Errorf("query after limit in %s", def.InputSchema)
	}
}

func TestNewErrors(t *testing.T) {
	t.Parallel()
	fn := func(context.Context, searchIn) (int, error) { return 0, nil }
	tests := []struct {
		name    string
		newTool func() (tool.Tool, error)
		want    string
	}{
		{"empty name", func() (tool.Tool, error) { return tool.New("", "", fn) }, `invalid tool name ""`},
		{"space in name", func() (tool.Tool, error) { return tool.New("a b", "", fn) }, `invalid tool name "a b"`},
		{"slash in name", func() (tool.Tool, error) { return tool.New("fs/read", "", fn) }, `invalid tool name "fs/read"`},
		{"long name", func() (tool.Tool, error) { return tool.New(strings.Repeat("x", 65), "", fn) }, "1 to 64 characters"},
		{"nil function", func() (tool.Tool, error) {
			return tool.New[searchIn, int]("x", "", nil)
		}, "nil function"},
		{"string input", func() (tool.Tool, error) {
			return tool.New("x", "", func(context.Context, string) (int, error) { return 0, nil })
		}, "must be a struct or a map"},
		{"channel field", func() (tool.Tool, error) {
			return tool.New("x", "", func(context.Context, struct{ C chan int }) (int, error) { return 0, nil })
		}, "chan"},
		{"non-object schema", func() (tool.Tool, error) {
			return tool.New("x", "", fn, tool.WithInputSchema(&jsonschema.Schema{Type: "string"}))
		}, "must describe an object"},
		{"invalid schema", func() (tool.Tool, error) {
			return tool.New("x", "", fn, tool.WithInputSchema(&jsonschema.Schema{Type: "object", Pattern: "("}))
		}, "pattern"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tl, err := tt.newTool()
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error = %v, want one containing %q", err, tt.want)
			}
			if tl != nil {
				t.Errorf("tool = %v, want nil", tl)
			}
		})
	}
}

func TestNewValidNames(t *testing.T) {
	t.Parallel()
	fn := func(context.Context, struct{}) (int, error) { return 0, nil }
	for _, name := range []string{"a", "fs.read", "web_search", "get-weather", "V2", strings.Repeat("x", 64)} {
		if _, err := tool.New(name, "", fn); err != nil {
			t.Errorf("New(%q): %v", name, err)
		}
	}
}

type greetIn struct {
	Name  string `json:"name"`
	Times int    `json:"times,omitempty"`
}

func TestTypedCall(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	greet := tool.Must(tool.New("greet", "", func(_ context.Context, in greetIn) (string, error) {
		calls.Add(1)
		if in.Name == "fail" {
			return "", errors.New("no greeting for fail")
		}
		return strings.Repeat("hi "+in.Name+"! ", max(in.Times, 1))[:len("hi "+in.Name+"!")], nil
	}))

	tests := []struct {
		name    string
		args    string
		want    string // the output, or the error's text
		wantArg bool   // the error is an *ArgumentError, and the function was not called
		path    string
	}{
		{"ok", `{"name":"Ada"}`, `"hi Ada!"`, false, ""},
		{"ok with optional", `{"name":"Ada","times":2}`, `"hi Ada!"`, false, ""},
		{"ok with space", " \n{ \"name\" : \"Ada\" } ", `"hi Ada!"`, false, ""},
		{"tool error", `{"name":"fail"}`, "no greeting for fail", false, ""},
		{"missing required", `{}`, `tool "greet": invalid arguments: missing required property "name"`, true, ""},
		{"empty means {}", ``, `tool "greet": invalid arguments: missing required property "name"`, true, ""},
		{"wrong type", `{"name":42}`, `tool "greet": invalid argument "name": must be a string, got number 42`, true, "name"},
		{"null", `{"name":null}`, `tool "greet": invalid argument "name": must be a string, got null`, true, "name"},
		{"fraction for integer", `{"name":"a","times":1.5}`, `tool "greet": invalid argument "times": must be an integer, got number 1.5`, true, "times"},
		{"unknown property", `{"name":"a","nmae":"b"}`, `tool "greet": invalid arguments: unknown property "nmae" (allowed: "name", "times")`, true, ""},
		{"not an object", `["Ada"]`, `tool "greet": invalid arguments: arguments must be a JSON object, got "[\"Ada\"]"`, true, ""},
		{"not JSON", `{"name": "Ada"`, `tool "greet": invalid arguments: arguments are not valid JSON (unexpected end of JSON input, at offset 14): "{\"name\": \"Ada\""`, true, ""},
		{"integer overflow", `{"name":"a","times":1e30}`, `tool "greet": invalid argument "times": cannot use JSON number 1e30 as Go int`, true, "times"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := calls.Load()
			out, err := greet.Call(context.Background(), json.RawMessage(tt.args))
			got := string(out)
			if err != nil {
				got = err.Error()
			}
			if got != tt.want {
				t.Errorf("Call(%s) =\n %s\nwant\n %s", tt.args, got, tt.want)
			}
			var ae *tool.ArgumentError
			if isArg := errors.As(err, &ae); isArg != tt.wantArg {
				t.Errorf("error is *ArgumentError: %v, want %v", isArg, tt.wantArg)
			} else if isArg {
				if ae.Tool != "greet" || ae.Path != tt.path {
					t.Errorf("ArgumentError tool, path = %q, %q, want greet, %q", ae.Tool, ae.Path, tt.path)
				}
				if calls.Load() != before {
					t.Error("the function ran despite invalid arguments")
				}
			}
		})
	}
}

func TestTypedOutput(t *testing.T) {
	t.Parallel()
	type out struct {
		N    int      `json:"n"`
		List []string `json:"list"`
	}
	ctx := context.Background()
	st := tool.Must(tool.New("s", "", func(context.Context, struct{}) (string, error) { return `say "hi"`, nil }))
	if got, err := st.Call(ctx, json.RawMessage(`{}`)); err != nil || string(got) != `"say \"hi\""` {
		t.Errorf("string output = %s, %v", got, err)
	}
	ot := tool.Must(tool.New("o", "", func(context.Context, struct{}) (out, error) { return out{N: 1}, nil }))
	if got, err := ot.Call(ctx, json.RawMessage(`{}`)); err != nil || string(got) != `{"n":1,"list":null}` {
		t.Errorf("struct output = %s, %v", got, err)
	}
	bad := tool.Must(tool.New("b", "", func(context.Context, struct{}) (func(), error) { return func() {}, nil }))
	if _, err := bad.Call(ctx, json.RawMessage(`{}`)); err == nil || !strings.Contains(err.Error(), "encoding result") {
		t.Errorf("unencodable output: error = %v", err)
	}
}

func TestNewMapAndPointerInput(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	m := tool.Must(tool.New("m", "", func(_ context.Context, in map[string]int) (int, error) { return in["a"] + in["b"], nil }))
	if got, err := m.Call(ctx, json.RawMessage(`{"a":1,"b":2}`)); err != nil || string(got) != "3" {
		t.Errorf("map input = %s, %v", got, err)
	}
	if _, err := m.Call(ctx, json.RawMessage(`{"a":"x"}`)); err == nil {
		t.Error("map input with a string value: no error")
	}
	p := tool.Must(tool.New("p", "", func(_ context.Context, in *greetIn) (string, error) { return in.Name, nil }))
	if got, err := p.Call(ctx, json.RawMessage(`{"name":"x"}`)); err != nil || string(got) != `"x"` {
		t.Errorf("pointer input = %s, %v", got, err)
	}
	if _, err := p.Call(ctx, json.RawMessage(`null`)); err == nil {
		t.Error("pointer input with null: no error")
	}
}

func TestWithInputSchema(t *testing.T) {
	t.Parallel()
	s := &jsonschema.Schema{
		Type: "object",
		Properties: map[string]*jsonschema.Schema{
			"name":  {Type: "string", MinLength: jsonschema.Ptr(2)},
			"times": {Type: "integer", Minimum: jsonschema.Ptr(1.0), Maximum: jsonschema.Ptr(3.0)},
		},
		Required: []string{"name"},
	}
	greet := tool.Must(tool.New("greet", "", func(_ context.Context, in greetIn) (int, error) { return in.Times, nil },
		tool.WithInputSchema(s)))
	if got := string(greet.Definition().InputSchema); !strings.Contains(got, `"minLength":2`) {
		t.Errorf("definition schema = %s, want the explicit one", got)
	}
	for args, want := range map[string]string{
		`{"name":"ab","times":3}`:         "",
		`{"name":"ab","extra":true}`:      "", // the explicit schema allows more properties
		`{"name":"a"}`:                    `must be at least 2 characters long, got 1`,
		`{"name":"ab","times":0}`:         `must be >= 1, got 0`,
		`{"name":"ab","times":4}`:         `must be <= 3, got 4`,
		`{"name":"ab","times":"several"}`: `must be an integer, got string "several"`,
	} {
		_, err := greet.Call(context.Background(), json.RawMessage(args))
		if want == "" {
			if err != nil {
				t.Errorf("Call(%s): %v", args, err)
			}
			continue
		}
		if err == nil || !strings.HasSuffix(err.Error(), want) {
			t.Errorf("Call(%s) error = %v, want one ending %q", args, err, want)
		}
	}
}

func TestMust(t *testing.T) {
	t.Parallel()
	defer func() {
		if recover() == nil {
			t.Error("Must did not panic on an error")
		}
	}()
	tool.Must(tool.New("", "", search))
}

// rawTool is a Tool that is not typed, as an MCP tool would be.
type rawTool struct {
	name   string
	schema string
	call   func(ctx context.Context, args json.RawMessage) (json.RawMessage, error)
}

func (r *rawTool) Definition() tool.Definition {
	return tool.Definition{Name: r.name, InputSchema: json.RawMessage(r.schema)}
}

func (r *rawTool) Call(ctx context.Context, args json.RawMessage) (json.RawMessage, error) {
	return r.call(ctx, args)
}

func TestMeta(t *testing.T) {
	t.Parallel()
	ask := tool.Meta{Approval: tool.ApprovalAsk, Timeout: time.Second, Isolate: true}
	typed := tool.Must(tool.New("t", "", search, ask))
	if diff := cmp.Diff(ask, tool.MetaOf(typed)); diff != "" {
		t.Errorf("Meta passed to New (-want +got):\n%s", diff)
	}
	if got := tool.MetaOf(tool.Must(tool.New("t", "", search))); got != (tool.Meta{}) {
		t.Errorf("default Meta = %+v, want zero", got)
	}

	deny := tool.Meta{Approval: tool.ApprovalDeny}
	wt := tool.WithMeta(typed, deny)
	if got := tool.MetaOf(wt); got != deny {
		t.Errorf("WithMeta on a typed tool: MetaOf = %+v", got)
	}
	if got := tool.MetaOf(typed); got != ask {
		t.Errorf("WithMeta changed the original: %+v", got)
	}

	raw := &rawTool{name: "r", schema: `{"type":"object"}`}
	if got := tool.MetaOf(raw); got != (tool.Meta{}) {
		t.Errorf("MetaOf(raw) = %+v", got)
	}
	wr := tool.WithMeta(raw, ask)
	if got := tool.MetaOf(wr); got != ask {
		t.Errorf("WithMeta on a raw tool: MetaOf = %+v", got)
	}
	if got := tool.MetaOf(tool.WithMeta(wr, deny)); got != deny {
		t.Errorf("WithMeta twice: MetaOf = %+v", got)
	}
	u, ok := wr.(interface{ Unwrap() tool.Tool })
	if !ok || u.Unwrap() != tool.Tool(raw) {
		t.Errorf("Unwrap of a wrapped raw tool = %v, %v", u, ok)
	}
	if wr.Definition().Name != "r" {
		t.Errorf("wrapped definition = %+v", wr.Definition())
	}
}

// fastIn has the field kinds tool inputs mostly have: flat and nested
// fields, slices.
type fastIn struct {
	Name  string   `json:"name"`
	N     int8     `json:"n"`
	F     float32  `json:"f"`
	Tags  []string `json:"tags"`
	Inner struct {
		X int  `json:"x"`
		Y bool `json:"y"`
	} `json:"inner"`
}

type fastOut struct {
	Text string    `json:"text"`
	F    float64   `json:"f,omitempty"`
	L    []float32 `json:"l"`
}

// TestTypedMatchesEncodingJSON checks that a typed tool decodes and
// encodes exactly as encoding/json, odd inputs included (a key in another
// case, a repeated key, null, an integer written 1.0, an overflow).
func TestTypedMatchesEncodingJSON(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	// A schema that accepts any object, so that what encoding/json does
	// with odd keys is what the function sees.
	anyObject := &jsonschema.Schema{Type: "object"}
	var got fastIn
	echo := tool.Must(tool.New("echo", "", func(_ context.Context, in fastIn) (fastIn, error) {
		got = in
		return in, nil
	}, tool.WithInputSchema(anyObject)))
	for _, args := range []string{
		`{}`,
		`{"name":"Ada","n":-128,"f":1.5,"tags":["a","b"],"inner":{"x":3,"y":true}}`,
		`{"tags":[]}`,
		`{"name":"\u00e9\ud83d\ude00 <&>","f":3.4028235e38}`,
		`{"NAME":"folded","Inner":{"X":1}}`,
		`{"name":"a","name":"b"}`,
		`{"name":null,"tags":null,"inner":null}`,
		`{"inner":{"x":1},"inner":{"y":true}}`,
		`{"extra":[1,{"z":null}],"n":7}`,
		`{"n":1.0}`,    // an error
		`{"n":128}`,    // an error
		`{"f":1e39}`,   // an error
		`{"tags":[1]}`, // an error
	} {
		var want fastIn
		wantErr := json.Unmarshal([]byte(args), &want)
		got = fastIn{}
		out, err := echo.Call(ctx, json.RawMessage(args))
		if (err != nil) != (wantErr != nil) {
			t.Errorf("Call(%s) error = %v, encoding/json's = %v", args, err, wantErr)
			continue
		}
		if err != nil {
			continue
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("Call(%s): the function got, compared with encoding/json (-want +got):\n%s", args, diff)
		}
		if wantOut, _ := json.Marshal(want); string(out) != string(wantOut) {
			t.Errorf("Call(%s) = %s, want json.Marshal's %s", args, out, wantOut)
		}
	}

	var res fastOut
	gen := tool.Must(tool.New("gen", "", func(context.Context, struct{}) (fastOut, error) { return res, nil }))
	for _, res = range []fastOut{
		{},
		{Text: "<b>\"quoted\"</b> & \u2028 \x01 \xff", F: 1e21, L: []float32{0.1, 1e-7, -0}},
		{F: 1e-7, L: []float32{}},
		{F: math.NaN()}, // json.Marshal refuses it
		{L: []float32{float32(math.Inf(1))}},
	} {
		want, wantErr := json.Marshal(res)
		out, err := gen.Call(ctx, json.RawMessage(`{}`))
		if (err != nil) != (wantErr != nil) || string(out) != string(want) {
			t.Errorf("output of %+v = %s, %v; json.Marshal gives %s, %v", res, out, err, want, wantErr)
		}
	}
}
