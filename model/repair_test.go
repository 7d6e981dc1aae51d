package model_test

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/agentrt/agentrt/model"
)

func TestRepairArguments(t *testing.T) {
	t.Parallel()
	const (
		stop   = model.FinishStop
		length = model.FinishLength
		calls  = model.FinishToolCalls
	)
	tests := []struct {
		name   string
		in     string
		finish model.FinishReason
		want   string // "" with fixed false: unchanged
		fixed  bool
	}{
		// Valid arguments are never touched, whatever the finish.
		{"valid object", `{"a":1}`, stop, "", false},
		{"valid, cut short", `{"a":1}`, length, "", false},
		{"valid with blanks", " {\"a\": [1, 2]}\n", calls, "", false},
		{"valid non-object: string", `"x"`, stop, "", false},
		{"valid non-object: number", `42`, stop, "", false},
		{"valid non-object: array", `[1,2]`, stop, "", false},
		{"valid non-object: null", `null`, stop, "", false},

		// No arguments at all.
		{"empty", ``, stop, `{}`, true},
		{"blank", " \t\r\n", calls, `{}`, true},
		{"empty, cut short", ``, length, `{}`, true},

		// A complete value and stray closers.
		{"one stray brace", `{"a":1}}`, stop, `{"a":1}`, true},
		{"stray braces and blanks", "{\"a\":{\"b\":2}} }\n]", calls, `{"a":{"b":2}}`, true},
		{"stray brace, cut short", `{"a":1}}`, length, `{"a":1}`, true},
		{"stray closer after an array", `[1,[2]]]`, stop, `[1,[2]]`, true},
		{"blanks around a stray brace", "  {\"a\":1}}  ", stop, `{"a":1}`, true},
		{"a brace inside a string is not a closer", `{"a":"}"}}`, stop, `{"a":"}"}`, true},
		{"escaped quotes", `{"a":"say \"}\""}}`, stop, `{"a":"say \"}\""}`, true},
		{"another value after the first", `{"a":1}{"b":2}`, stop, "", false},
		{"text after the first value", `{"a":1} thanks`, stop, "", false},
		{"a closer before anything", `}{"a":1}`, stop, "", false},

		// Missing closers: closed only when the reply was not cut short.
		{"missing brace", `{"a":1`, stop, `{"a":1}`, true},
		{"missing brace, tool_calls", `{"a":"b"`, calls, `{"a":"b"}`, true},
		{"missing brace, no finish", `{"a":true`, "", `{"a":true}`, true},
		{"missing brace, cut short", `{"a":1`, length, "", false},
		{"missing nested closers", `{"a":{"b":[1,{"c":null}`, stop, `{"a":{"b":[1,{"c":null}]}}`, true},
		{"missing nested closers, cut short", `{"a":{"b":[1`, length, "", false},
		{"missing bracket of an array", `[1,2`, stop, `[1,2]`, true},
		{"missing closers after blanks", "{\"a\":[1 \n", stop, `{"a":[1]}`, true},
		{"only an opener", `{`, stop, `{}`, true},

		// Doubtful: never guessed at.
		{"unterminated string", `{"a":"b`, stop, "", false},
		{"unterminated string ending in an escape", `{"a":"b\`, stop, "", false},
		{"unterminated key", `{"a`, stop, "", false},
		{"dangling comma", `{"a":1,`, stop, "", false},
		{"dangling comma and blanks", "{\"a\":1, \n", stop, "", false},
		{"dangling colon", `{"a":`, stop, "", false},
		{"key without a value", `{"a"`, stop, "", false},
		{"cut literal", `{"a":tru`, stop, "", false},
		{"cut number", `{"a":1.`, stop, "", false},
		{"cut exponent", `{"a":1e`, stop, "", false},
		{"mismatched closer", `{"a":[1}`, stop, "", false},
		{"mismatched closer, then stray", `{"a":[1}}`, stop, "", false},
		{"raw newline in a string", "{\"a\":\"b\nc\"", stop, "", false},
		{"garbage", `hello`, stop, "", false},
		{"garbage in braces", `{hello`, stop, "", false},
		{"single quotes", `{'a':1}`, stop, "", false},
		{"trailing comma inside", `{"a":1,}`, stop, "", false},
		{"python None", `None`, stop, "", false},
		{"a lone closer", `}`, stop, "", false},
		{"invalid UTF-8 outside strings", "{\"a\":1\xff", stop, "", false},
		{"a number then stray closer", `1}`, stop, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			in := []byte(tt.in)
			got, fixed := model.RepairArguments(in, tt.finish)
			want := tt.want
			if !tt.fixed {
				want = tt.in
			}
			if fixed != tt.fixed || string(got) != want {
				t.Errorf("RepairArguments(%q, %q) = %q, %v; want %q, %v", tt.in, tt.finish, got, fixed, want, tt.fixed)
			}
			if string(in) != tt.in {
				t.Errorf("the input was modified: %q", in)
			}
			if fixed && !json.Valid(got) {
				t.Errorf("the repair %q is not valid JSON", got)
			}
		})
	}
}

// TestRepairArgumentsOwnMemory checks that a repair does not share memory
// with its input, which the caller may reuse.
func TestRepairArgumentsOwnMemory(t *testing.T) {
	t.Parallel()
	for _, in := range []string{`{"a":1}}`, `{"a":1`} {
		buf := []byte(in)
		got, fixed := model.RepairArguments(buf, model.FinishStop)
		if !fixed {
			t.Fatalf("%q not repaired", in)
		}
		want := string(got)
		for i := range buf {
			buf[i] = 'X'
		}
		if string(got) != want {
			t.Errorf("repair of %q changed with its input: %q", in, got)
		}
	}
}

func FuzzRepairArguments(f *testing.F) {
	for _, s := range []string{
		``, ` `, `{}`, `{"a":1}`, `{"a":1}}`, `{"a":1`, `{"a":"b`, `{"a":1,`, `{"a":`, `[1,2`, `{"a":[1}`,
		`{"a":"}"}}`, `hello`, `"x"`, `{"a":{"b":[1,{"c":null}`, `{"a":"\"`, `{"a":1} x`, "{\"a\":\"\xff\"",
	} {
		f.Add([]byte(s), false)
		f.Add([]byte(s), true)
	}
	f.Fuzz(func(t *testing.T, in []byte, cut bool) {
		finish := model.FinishStop
		if cut {
			finish = model.FinishLength
		}
		orig := bytes.Clone(in)
		got, fixed := model.RepairArguments(in, finish)
		if !bytes.Equal(in, orig) {
			t.Fatalf("the input was modified: %q, was %q", in, orig)
		}
		if !fixed {
			if !bytes.Equal(got, in) {
				t.Fatalf("RepairArguments(%q) = %q, false: changed but not reported", in, got)
			}
			return
		}
		if !json.Valid(got) {
			t.Fatalf("RepairArguments(%q) = %q, true: not valid JSON", in, got)
		}
		if json.Valid(in) {
			t.Fatalf("RepairArguments(%q) changed valid JSON into %q", in, got)
		}
		// A repair is {} for blank input, a prefix of the trimmed
		// input, or (when not cut short) the trimmed input and closers.
		trimmed := bytes.TrimSpace(in)
		switch {
		case len(trimmed) == 0:
			if string(got) != "{}" {
				t.Fatalf("blank %q became %q, want {}", in, got)
			}
		case bytes.HasPrefix(trimmed, got):
		case bytes.HasPrefix(got, trimmed) && len(bytes.Trim(got[len(trimmed):], "}]")) == 0:
			if cut {
				t.Fatalf("RepairArguments(%q, length) closed it: %q", in, got)
			}
		default:
			t.Fatalf("RepairArguments(%q) = %q: neither a prefix nor the input closed", in, got)
		}
	})
}
