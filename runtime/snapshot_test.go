package runtime_test

import (
	"bytes"
	"encoding/json"
	"math"
	"reflect"
	"testing"

	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/runtime"
	"github.com/agentrt/agentrt/session"
)

// TestSnapshotMatchesEncodingJSON checks that MarshalSnapshot writes the
// bytes of json.Marshal, which it replaces for speed. fill sets every field
// of every type a State holds, so a field added to any of them, and not to
// the snapshot encoder, fails here.
func TestSnapshotMatchesEncodingJSON(t *testing.T) {
	t.Parallel()
	tricky := []string{
		"",
		"plain",
		`quote " backslash \ slash /`,
		"html <b>&amp;</b>",
		"controls \x00\x01\b\f\n\r\t\x1f\x7f",
		"unicode ünïcødé ✓ 😀",
		"separators \u2028 and \u2029",
		"invalid \xff\xfe utf-8 \xe2\x80",
	}
	raws := []json.RawMessage{
		nil,
		json.RawMessage(`{}`),
		json.RawMessage(" { \"a\" : [ 1 , 2.5e-7 , \"<x>&\u2028\" ] ,\n\t\"b\" : null } "),
		json.RawMessage(`"just a string"`),
		json.RawMessage(`[true,false,null]`),
	}
	floats := []float64{0, 0.5, 1e-7, 123456789, 1e21, 3.14159e-20, -2.5}

	var states []*runtime.State
	states = append(states, &runtime.State{}, runtime.NewState("s1", "agent"))
	for i, s := range tricky {
		st := &runtime.State{}
		fill(reflect.ValueOf(st).Elem(), s, raws[i%len(raws)], floats[i%len(floats)])
		states = append(states, st)
	}
	// Empty, not nil, slices: a State may hold them after a decode.
	empty := runtime.NewState("s2", "agent")
	empty.Messages = []model.Message{{Role: model.RoleUser, Parts: []model.Part{}, ToolCalls: []model.ToolCall{}}}
	empty.Calls = []runtime.CallState{}
	empty.Requests = []runtime.HumanRequest{{ID: "r", Calls: []string{}}}
	states = append(states, empty)

	for i, st := range states {
		want, err := json.Marshal(st)
		if err != nil {
			t.Fatalf("state %d: json.Marshal: %v", i, err)
		}
		got, err := st.MarshalSnapshot()
		if err != nil {
			t.Fatalf("state %d: MarshalSnapshot: %v", i, err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("state %d:\nMarshalSnapshot = %s\njson.Marshal    = %s", i, got, want)
		}
	}
}

// TestSnapshotErrors checks that MarshalSnapshot fails where json.Marshal
// does, rather than writing a snapshot that will not load.
func TestSnapshotErrors(t *testing.T) {
	t.Parallel()
	bad := []func(*runtime.State){
		func(s *runtime.State) { s.Usage.CostUSD = math.NaN() },
		func(s *runtime.State) { s.RunUsage.CostUSD = math.Inf(1) },
		func(s *runtime.State) {
			s.Messages = []model.Message{{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{{ID: "c", Name: "n", Arguments: json.RawMessage(`{"a":`)}}}}
		},
		func(s *runtime.State) {
			s.Calls = []runtime.CallState{{Call: model.ToolCall{ID: "c", Arguments: json.RawMessage{}}}}
		},
		func(s *runtime.State) {
			s.Calls = []runtime.CallState{{Result: &session.ToolResult{Result: json.RawMessage(`nope`)}}}
		},
	}
	for i, f := range bad {
		st := runtime.NewState("s", "a")
		f(st)
		if _, err := json.Marshal(st); err == nil {
			t.Fatalf("case %d: json.Marshal accepts the state; the case is wrong", i)
		}
		if b, err := st.MarshalSnapshot(); err == nil {
			t.Errorf("case %d: MarshalSnapshot = %s, want an error", i, b)
		}
	}
}

// fill sets every settable field reachable from v to a non-zero value:
// strings to s, raw JSON to raw, floats to f, slices to two elements,
// pointers to a filled value. It fails on kinds a State does not hold, so
// that a new kind of field gets a thought.
func fill(v reflect.Value, s string, raw json.RawMessage, f float64) {
	if v.Type() == reflect.TypeFor[json.RawMessage]() {
		v.Set(reflect.ValueOf(raw))
		return
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString(s)
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int64:
		v.SetInt(int64(len(s)) - 3) // negative, zero and positive
	case reflect.Float64:
		v.SetFloat(f)
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fill(v.Elem(), s, raw, f)
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 2, 2))
		for i := range 2 {
			fill(v.Index(i), s, raw, f)
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fill(v.Field(i), s, raw, f)
			}
		}
	default:
		panic("fill: a State holds a " + v.Type().String() + "; teach fill and the snapshot encoder about it")
	}
}
