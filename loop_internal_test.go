package agentrt

import (
	"encoding/json"
	"testing"

	"github.com/agentrt/agentrt/session"
)

func lc(name, args, result string) LoopCall {
	return loopCallOf(name, json.RawMessage(args), &session.ToolResult{OK: true, Result: json.RawMessage(result)})
}

func TestDetectLoop(t *testing.T) {
	a, b := lc("search", `{"q":"go"}`, `1`), lc("open", `{"url":"x"}`, `2`)
	for _, tc := range []struct {
		name     string
		calls    []LoopCall
		detector string
		count    int
	}{
		{"none", nil, "", 0},
		{"varied", []LoopCall{lc("a", `{"i":1}`, `1`), lc("a", `{"i":2}`, `2`), lc("b", `{}`, `3`)}, "repeat", 1},
		{"repeat", []LoopCall{a, b, a, a, a}, "repeat", 4},
		// Whitespace in the arguments does not make a call different.
		{"repeat, spaced", []LoopCall{a, lc("search", `{ "q" : "go" }`, `1`)}, "repeat", 2},
		// Inside a string, a space is part of the value.
		{"spaces in strings", []LoopCall{lc("s", `{"q":"a b"}`, `1`), lc("s", `{"q":"ab"}`, `2`)}, "repeat", 1},
		{"escaped quote", []LoopCall{lc("s", `{"q":"a\" b"}`, `1`), lc("s", `{"q":"a\"b"}`, `2`)}, "repeat", 1},
		{"ping pong", []LoopCall{a, b, a, b, a, b}, "ping_pong", 4},
		{"no progress", []LoopCall{lc("s", `{"i":1}`, `"none"`), lc("s", `{"i":2}`, `"none"`), lc("s", `{"i":3}`, `"none"`),
			lc("s", `{"i":4}`, `"none"`), lc("s", `{"i":5}`, `"none"`)}, "no_progress", 4},
		{"progress again", []LoopCall{lc("s", `{"i":1}`, `"none"`), lc("s", `{"i":2}`, `"none"`), lc("s", `{"i":3}`, `"new"`)}, "repeat", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := detectLoop(tc.calls)
			if f.detector != tc.detector || f.count != tc.count {
				t.Errorf("detectLoop = %s %d, want %s %d", f.detector, f.count, tc.detector, tc.count)
			}
		})
	}
}

func TestLoopDetectionCheck(t *testing.T) {
	for _, tc := range []struct {
		l    LoopDetection
		want string
	}{
		{LoopDetection{}, ""},
		{LoopDetection{Warning: 2, Critical: 3}, ""},
		{LoopDetection{Warning: 8}, "loop_detection: warning (8) must be below critical (8)"},
		{LoopDetection{Warning: 5, Critical: 3}, "loop_detection: warning (5) must be below critical (3)"},
		{LoopDetection{Warning: -1}, "loop_detection: thresholds must be positive (warning -1, critical 0)"},
		{LoopDetection{Warning: 9, Off: true}, ""},
	} {
		err := tc.l.check()
		if got := ""; err != nil {
			got = err.Error()
			if got != tc.want {
				t.Errorf("%+v: %q, want %q", tc.l, got, tc.want)
			}
		} else if tc.want != "" {
			t.Errorf("%+v: no error, want %q", tc.l, tc.want)
		}
	}
}
