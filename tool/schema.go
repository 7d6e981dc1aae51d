package tool

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"
)

// Validator checks arguments against one tool's input schema. The schema
// is resolved once, by NewValidator; a Validator is immutable and safe for
// concurrent use.
//
// Schemas made of the keywords tools use in practice (type, properties,
// required, additionalProperties, items, enum, const, numeric and string
// bounds, pattern) are checked by reading the raw JSON in place, which
// costs no allocation. Schemas that use any other keyword ($ref, allOf,
// anyOf, oneOf, not, if/then/else, patternProperties, ...) are checked by
// github.com/google/jsonschema-go after decoding the arguments. The two
// paths give the same verdict, but for one thing: in place, a property
// that appears twice in an object must be valid both times, where
// decoding keeps only the last. The wording of errors differs.
type Validator struct {
	tool     string
	root     *node // the compiled schema; nil when it needs the general validator
	resolved *jsonschema.Resolved
}

// NewValidator resolves d.InputSchema. An empty InputSchema accepts any
// object. The schema must describe an object: tool arguments always are one.
func NewValidator(d Definition) (*Validator, error) {
	raw := d.InputSchema
	if len(bytes.TrimSpace(raw)) == 0 {
		raw = json.RawMessage(`{"type":"object"}`)
	}
	s := new(jsonschema.Schema)
	if err := json.Unmarshal(raw, s); err != nil {
		return nil, fmt.Errorf("tool %q: input schema: %w", d.Name, err)
	}
	return newValidator(d.Name, s)
}

func newValidator(name string, s *jsonschema.Schema) (*Validator, error) {
	if !allowsObject(s) {
		return nil, fmt.Errorf("tool %q: input schema must describe an object, not %s", name, s)
	}
	rs, err := s.Resolve(nil)
	if err != nil {
		return nil, fmt.Errorf("tool %q: input schema: %w", name, err)
	}
	v := &Validator{tool: name, resolved: rs}
	switch root, err := compile(s); {
	case err == nil:
		v.root = root
	case err != errGeneral:
		return nil, fmt.Errorf("tool %q: input schema: %w", name, err)
	}
	return v, nil
}

func allowsObject(s *jsonschema.Schema) bool {
	switch {
	case s.Type != "":
		return s.Type == "object"
	case s.Types != nil:
		return slices.Contains(s.Types, "object")
	}
	return true
}

// normalize turns arguments that are empty or all white space, which some
// models send to tools that take no arguments, into {}.
func normalize(args json.RawMessage) json.RawMessage {
	if len(bytes.TrimSpace(args)) == 0 {
		return json.RawMessage(`{}`)
	}
	return args
}

// Validate reports whether args fit the schema. The error, if any, is an
// *ArgumentError. Empty args count as {}.
func (v *Validator) Validate(args json.RawMessage) error {
	args = normalize(args)
	if !json.Valid(args) {
		return syntaxError(v.tool, args)
	}
	return v.validateJSON(args)
}

// validateJSON is Validate for args known to be valid JSON.
func (v *Validator) validateJSON(args json.RawMessage) error {
	if args[skipWS(args, 0)] != '{' {
		return &ArgumentError{Tool: v.tool, Msg: fmt.Sprintf("arguments must be a JSON object, got %q", preview(args))}
	}
	if v.root != nil {
		if _, f := v.root.check(args, skipWS(args, 0)); f != nil {
			return &ArgumentError{Tool: v.tool, Path: pathTo(args, f.at), Msg: f.msg}
		}
		return nil
	}
	var x any
	if err := json.Unmarshal(args, &x); err != nil {
		return &ArgumentError{Tool: v.tool, Msg: err.Error(), Err: err}
	}
	if err := v.resolved.Validate(x); err != nil {
		msg := strings.TrimPrefix(err.Error(), "validating root: ")
		return &ArgumentError{Tool: v.tool, Msg: msg, Err: err}
	}
	return nil
}

// syntaxError describes invalid JSON.
func syntaxError(tool string, args json.RawMessage) *ArgumentError {
	var x any
	err := json.Unmarshal(args, &x) // again, for the offset
	msg := "arguments are not valid JSON"
	var se *json.SyntaxError
	if errors.As(err, &se) {
		msg = fmt.Sprintf("arguments are not valid JSON (%v, at offset %d)", se, se.Offset)
	}
	return &ArgumentError{Tool: tool, Msg: fmt.Sprintf("%s: %q", msg, preview(args)), Err: err}
}

// typeSet is a set of JSON Schema types. Numbers split in two: an instance
// is an integer when its value is integral, else a fraction; the schema
// type "number" allows both.
type typeSet uint8

const (
	tNull typeSet = 1 << iota
	tBoolean
	tInteger
	tFraction
	tString
	tArray
	tObject

	tNumber = tInteger | tFraction
	tAny    = tNull | tBoolean | tNumber | tString | tArray | tObject
)

func typeOf(name string) typeSet {
	switch name {
	case "null":
		return tNull
	case "boolean":
		return tBoolean
	case "integer":
		return tInteger
	case "number":
		return tNumber
	case "string":
		return tString
	case "array":
		return tArray
	case "object":
		return tObject
	}
	return 0
}

func (t typeSet) String() string {
	var names []string
	for _, n := range []struct {
		t    typeSet
		name string
	}{
		{tObject, "an object"}, {tArray, "an array"}, {tString, "a string"},
		{tNumber, "a number"}, {tInteger, "an integer"}, {tBoolean, "a boolean"}, {tNull, "null"},
	} {
		if t&n.t == n.t {
			names = append(names, n.name)
			t &^= n.t
		}
	}
	return strings.Join(names, " or ")
}

// node is a compiled schema: what check needs, in the form it needs it.
type node struct {
	never bool // the false schema: nothing is valid
	types typeSet

	enum    []scalar // allowed values when hasEnum
	hasEnum bool

	numeric              bool // any of the numeric keywords is set
	min, max, xmin, xmax *float64
	multipleOf           *float64

	minLen, maxLen *int
	pattern        *regexp.Regexp

	arrayRules         bool
	items              *node
	minItems, maxItems *int

	objectRules        bool
	props              map[string]*prop
	required           []string // in schema order; bit i of a seen mask is required[i]
	additional         *node    // nil: anything goes
	names              []string // declared properties, for messages
	minProps, maxProps *int
}

type prop struct {
	n   *node // nil for a name that is required but not declared
	bit int   // index in required, or -1
}

// scalar is an enum or const value.
type scalar struct {
	t typeSet // tNull, tBoolean, tNumber or tString
	b bool
	f float64
	s string
}

func (s scalar) String() string {
	switch s.t {
	case tNull:
		return "null"
	case tBoolean:
		return strconv.FormatBool(s.b)
	case tNumber:
		return strconv.FormatFloat(s.f, 'g', -1, 64)
	}
	return strconv.Quote(s.s)
}

// errGeneral reports a schema that uses a keyword node.check does not
// handle, so that only the general validator can check it.
var errGeneral = errors.New("schema needs the general validator")

// compile translates s into a node. It returns errGeneral if s uses a
// keyword that only the general validator handles.
func compile(s *jsonschema.Schema) (*node, error) {
	if s == nil {
		return &node{types: tAny}, nil
	}
	if s.Ref != "" || s.DynamicRef != "" ||
		s.AllOf != nil || s.AnyOf != nil || s.OneOf != nil ||
		s.If != nil || s.Then != nil || s.Else != nil ||
		s.DependentSchemas != nil || s.DependencySchemas != nil ||
		s.DependencyStrings != nil || s.DependentRequired != nil ||
		s.PatternProperties != nil || s.PropertyNames != nil ||
		s.UnevaluatedProperties != nil || s.UnevaluatedItems != nil ||
		s.PrefixItems != nil || s.ItemsArray != nil || s.AdditionalItems != nil ||
		s.Contains != nil || s.MinContains != nil || s.MaxContains != nil ||
		s.UniqueItems {
		return nil, errGeneral
	}
	n := &node{types: tAny}
	if s.Not != nil {
		if !isEmpty(s.Not) {
			return nil, errGeneral
		}
		n.never = true // {"not": {}}, which is how "false" unmarshals
	}
	if s.Type != "" || s.Types != nil {
		n.types = 0
		for _, name := range append([]string{s.Type}, s.Types...) {
			if name == "" {
				continue
			}
			t := typeOf(name)
			if t == 0 {
				return nil, fmt.Errorf("unknown type %q", name)
			}
			n.types |= t
		}
	}

	if s.Enum != nil {
		n.hasEnum = true
		for _, v := range s.Enum {
			sc, ok := toScalar(v)
			if !ok {
				return nil, errGeneral
			}
			n.enum = append(n.enum, sc)
		}
	}
	if s.Const != nil {
		sc, ok := toScalar(*s.Const)
		if !ok {
			return nil, errGeneral
		}
		if n.hasEnum {
			// Both must hold: keep the enum values equal to the const.
			n.enum = slices.DeleteFunc(n.enum, func(e scalar) bool { return e != sc })
		} else {
			n.hasEnum, n.enum = true, []scalar{sc}
		}
	}

	n.min, n.max, n.xmin, n.xmax, n.multipleOf = s.Minimum, s.Maximum, s.ExclusiveMinimum, s.ExclusiveMaximum, s.MultipleOf
	n.numeric = n.min != nil || n.max != nil || n.xmin != nil || n.xmax != nil || n.multipleOf != nil

	n.minLen, n.maxLen = s.MinLength, s.MaxLength
	if s.Pattern != "" {
		re, err := regexp.Compile(s.Pattern)
		if err != nil {
			return nil, err
		}
		n.pattern = re
	}

	if s.Items != nil {
		items, err := compile(s.Items)
		if err != nil {
			return nil, err
		}
		n.items = items
	}
	n.minItems, n.maxItems = s.MinItems, s.MaxItems
	n.arrayRules = n.items != nil || n.minItems != nil || n.maxItems != nil

	if len(s.Required) > 64 {
		return nil, errGeneral
	}
	if s.Properties != nil || s.Required != nil {
		n.props = make(map[string]*prop, len(s.Properties)+len(s.Required))
	}
	for name, ps := range s.Properties {
		pn, err := compile(ps)
		if err != nil {
			return nil, err
		}
		n.props[name] = &prop{n: pn, bit: -1}
	}
	for _, name := range s.Required {
		p := n.props[name]
		if p == nil {
			p = &prop{bit: -1}
			n.props[name] = p
		}
		if p.bit < 0 { // the first mention wins; required may repeat a name
			p.bit = len(n.required)
			n.required = append(n.required, name)
		}
	}
	if s.AdditionalProperties != nil {
		ap, err := compile(s.AdditionalProperties)
		if err != nil {
			return nil, err
		}
		n.additional = ap
	}
	n.minProps, n.maxProps = s.MinProperties, s.MaxProperties
	n.objectRules = n.props != nil || n.additional != nil || n.minProps != nil || n.maxProps != nil
	n.names = propertyNames(s)
	return n, nil
}

func isEmpty(s *jsonschema.Schema) bool { return reflect.ValueOf(*s).IsZero() }

// propertyNames lists s's properties in declaration order when known, else
// sorted.
func propertyNames(s *jsonschema.Schema) []string {
	var names []string
	for _, p := range s.PropertyOrder {
		if _, ok := s.Properties[p]; ok {
			names = append(names, p)
		}
	}
	var rest []string
	for p := range s.Properties {
		if !slices.Contains(names, p) {
			rest = append(rest, p)
		}
	}
	sort.Strings(rest)
	return append(names, rest...)
}

func toScalar(v any) (scalar, bool) {
	if v == nil {
		return scalar{t: tNull}, true
	}
	switch rv := reflect.ValueOf(v); {
	case rv.Kind() == reflect.Bool:
		return scalar{t: tBoolean, b: rv.Bool()}, true
	case rv.Kind() == reflect.String:
		return scalar{t: tString, s: rv.String()}, true
	case rv.CanInt():
		return scalar{t: tNumber, f: float64(rv.Int())}, true
	case rv.CanUint():
		return scalar{t: tNumber, f: float64(rv.Uint())}, true
	case rv.CanFloat():
		return scalar{t: tNumber, f: rv.Float()}, true
	}
	return scalar{}, false
}

// check validates the JSON value that starts at b[i] against n and returns
// the index just past the value. b is valid JSON and b[i] is not space.
func (n *node) check(b []byte, i int) (int, *failure) {
	at := i
	if n.never {
		return 0, argErr(at, "is not allowed")
	}
	var (
		t       typeSet
		end     int
		escaped bool
		f       float64 // the value of a number, when parsed
	)
	switch b[i] {
	case '"':
		t = tString
		end, escaped = endString(b, i)
	case '{':
		t = tObject
	case '[':
		t = tArray
	case 't', 'f':
		t = tBoolean
		end = skipValue(b, i)
	case 'n':
		t = tNull
		end = i + 4
	default:
		end = endNumber(b, i)
		lit := b[i:end]
		fraction := bytes.ContainsAny(lit, ".eE")
		t = tInteger
		if fraction || n.numeric || n.hasEnum {
			var err error
			if f, err = parseNumber(lit); err != nil {
				return 0, argErr(at, fmt.Sprintf("number %s is out of range", preview(lit)))
			}
			if fraction && f != math.Trunc(f) {
				t = tFraction
			}
		}
	}

	if t&n.types == 0 {
		return 0, argErr(at, fmt.Sprintf("must be %s, got %s", n.types, describe(b, i, t)))
	}
	if n.hasEnum && (t == tObject || t == tArray || !n.inEnum(b[i:end], t, escaped, f)) {
		return 0, argErr(at, n.enumMessage(b, i, t))
	}

	switch t {
	case tInteger, tFraction:
		if n.numeric {
			if msg := n.checkNumber(f); msg != "" {
				return 0, argErr(at, msg+", got "+string(b[i:end]))
			}
		}
	case tString:
		if n.minLen != nil || n.maxLen != nil || n.pattern != nil {
			if msg := n.checkString(stringValue(b[i:end], escaped)); msg != "" {
				return 0, argErr(at, msg)
			}
		}
	case tObject:
		if !n.objectRules {
			return skipValue(b, i), nil
		}
		return n.checkObject(b, i)
	case tArray:
		if !n.arrayRules {
			return skipValue(b, i), nil
		}
		return n.checkArray(b, i)
	}
	return end, nil
}

// failure is a value that does not fit, located by its offset in the
// arguments. The path to it is worked out only when there is a failure to
// report: tracking it during the check would cost allocations.
type failure struct {
	at  int
	msg string
}

func argErr(at int, msg string) *failure { return &failure{at: at, msg: msg} }

// describe names the type of the value at b[i] and quotes a short prefix
// of scalars, for messages: `number 3`, `string "x"`, `an object`.
func describe(b []byte, i int, t typeSet) string {
	switch t {
	case tObject:
		return "an object"
	case tArray:
		return "an array"
	case tNull:
		return "null"
	case tBoolean:
		return "boolean " + preview(b[i:skipValue(b, i)])
	case tString:
		return "string " + preview(b[i:skipValue(b, i)])
	}
	return "number " + preview(b[i:skipValue(b, i)])
}

func (n *node) inEnum(lit []byte, t typeSet, escaped bool, f float64) bool {
	var s []byte
	if t == tString {
		s = stringValue(lit, escaped)
	}
	for _, e := range n.enum {
		switch {
		case e.t == tNull && t == tNull:
			return true
		case e.t == tBoolean && t == tBoolean:
			if e.b == (lit[0] == 't') {
				return true
			}
		case e.t == tNumber && t&tNumber != 0:
			if e.f == f {
				return true
			}
		case e.t == tString && t == tString:
			if string(s) == e.s {
				return true
			}
		}
	}
	return false
}

func (n *node) enumMessage(b []byte, i int, t typeSet) string {
	got := describe(b, i, t)
	switch len(n.enum) {
	case 0:
		return "no value is allowed"
	case 1:
		return fmt.Sprintf("must be %s, got %s", n.enum[0], got)
	}
	vals := make([]string, len(n.enum))
	for j, e := range n.enum {
		vals[j] = e.String()
	}
	return fmt.Sprintf("must be one of %s; got %s", strings.Join(vals, ", "), got)
}

func (n *node) checkNumber(f float64) string {
	g := func(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }
	switch {
	case n.min != nil && f < *n.min:
		return "must be >= " + g(*n.min)
	case n.max != nil && f > *n.max:
		return "must be <= " + g(*n.max)
	case n.xmin != nil && f <= *n.xmin:
		return "must be > " + g(*n.xmin)
	case n.xmax != nil && f >= *n.xmax:
		return "must be < " + g(*n.xmax)
	}
	if n.multipleOf != nil {
		// The same test as jsonschema-go's, so both paths agree.
		if _, frac := math.Modf(f / *n.multipleOf); frac != 0 {
			return "must be a multiple of " + g(*n.multipleOf)
		}
	}
	return ""
}

func (n *node) checkString(s []byte) string {
	if n.minLen != nil || n.maxLen != nil {
		c := utf8.RuneCount(s)
		if n.minLen != nil && c < *n.minLen {
			return fmt.Sprintf("must be at least %d characters long, got %d", *n.minLen, c)
		}
		if n.maxLen != nil && c > *n.maxLen {
			return fmt.Sprintf("must be at most %d characters long, got %d", *n.maxLen, c)
		}
	}
	if n.pattern != nil && !n.pattern.Match(s) {
		return fmt.Sprintf("must match the regular expression %q, got %q", n.pattern, preview(s))
	}
	return ""
}

func (n *node) checkObject(b []byte, i int) (int, *failure) {
	at := i
	var seen uint64 // bit j set: required[j] is present
	count := 0
	i++ // '{'
	for {
		i = skipWS(b, i)
		if b[i] == '}' {
			i++
			break
		}
		if b[i] == ',' {
			i = skipWS(b, i+1)
		}
		keyStart := i
		keyEnd, escaped := endString(b, i)
		i = skipWS(b, skipWS(b, keyEnd)+1) // past ':'
		key := b[keyStart:keyEnd]
		count++

		var p *prop
		if n.props != nil {
			if escaped {
				p = n.props[unquote(key)]
			} else {
				p = n.props[string(key[1:len(key)-1])]
			}
		}
		sub := n.additional
		if p != nil {
			if p.bit >= 0 {
				seen |= 1 << p.bit
			}
			if p.n != nil {
				sub = p.n
			}
		}
		if sub == nil {
			i = skipValue(b, i)
			continue
		}
		if sub.never && (p == nil || p.n == nil) {
			return 0, n.unknownProperty(at, key)
		}
		var err *failure
		if i, err = sub.check(b, i); err != nil {
			return 0, err
		}
	}
	if want := uint64(1)<<len(n.required) - 1; seen != want {
		var missing []string
		for j, name := range n.required {
			if seen&(1<<j) == 0 {
				missing = append(missing, strconv.Quote(name))
			}
		}
		if len(missing) == 1 {
			return 0, argErr(at, "missing required property "+missing[0])
		}
		return 0, argErr(at, "missing required properties "+strings.Join(missing, ", "))
	}
	if n.minProps != nil && count < *n.minProps {
		return 0, argErr(at, fmt.Sprintf("must have at least %d properties, got %d", *n.minProps, count))
	}
	if n.maxProps != nil && count > *n.maxProps {
		return 0, argErr(at, fmt.Sprintf("must have at most %d properties, got %d", *n.maxProps, count))
	}
	return i, nil
}

func (n *node) unknownProperty(at int, key []byte) *failure {
	msg := fmt.Sprintf("unknown property %q", unquote(key))
	if len(n.names) == 0 {
		msg += " (no properties are allowed)"
	} else {
		q := make([]string, len(n.names))
		for j, name := range n.names {
			q[j] = strconv.Quote(name)
		}
		msg += " (allowed: " + strings.Join(q, ", ") + ")"
	}
	return argErr(at, msg)
}

func (n *node) checkArray(b []byte, i int) (int, *failure) {
	at := i
	count := 0
	i++ // '['
	for {
		i = skipWS(b, i)
		if b[i] == ']' {
			i++
			break
		}
		if b[i] == ',' {
			i = skipWS(b, i+1)
		}
		if n.items == nil {
			i = skipValue(b, i)
		} else {
			var err *failure
			if i, err = n.items.check(b, i); err != nil {
				return 0, err
			}
		}
		count++
	}
	if n.minItems != nil && count < *n.minItems {
		return 0, argErr(at, fmt.Sprintf("must have at least %d items, got %d", *n.minItems, count))
	}
	if n.maxItems != nil && count > *n.maxItems {
		return 0, argErr(at, fmt.Sprintf("must have at most %d items, got %d", *n.maxItems, count))
	}
	return i, nil
}
