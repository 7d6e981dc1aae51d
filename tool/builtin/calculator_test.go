package builtin

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/tool"
)

func TestEvaluate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		expr string
		want float64
	}{
		// numbers
		{"42", 42},
		{"3.25", 3.25},
		{".5", 0.5},
		{"1.", 1},
		{"1.5e3", 1500},
		{"2E-2", 0.02},
		{"1e+2", 100},
		// precedence and associativity
		{"21*2+5", 47},
		{"2+3*4", 14},
		{"(2+3)*4", 20},
		{"10-4-3", 3},
		{"100/10/5", 2},
		{"2*3%4", 2},
		{"7%3", 1},
		{"-7%3", -1},
		{"2^3^2", 512},
		{"(2^3)^2", 64},
		{"2**10", 1024},
		{"-2^2", -4},
		{"(-2)^2", 4},
		{"2^-1", 0.5},
		{"2*-3", -6},
		{"--3", 3},
		{"+-+3", -3},
		{"-(1+2)", -3},
		{"3 × 4 ÷ 2", 6},
		{"5 − 2", 3},
		{" \t1 +\n2 ", 3},
		// functions and constants
		{"sqrt(16)", 4},
		{"abs(-2.5)", 2.5},
		{"floor(-2.5)", -3},
		{"ceil(2.1)", 3},
		{"round(2.5)", 3},
		{"round(-2.5)", -3},
		{"min(3, 1, 2)", 1},
		{"max(3, 1, 2)", 3},
		{"max(4)", 4},
		{"pow(2, 8)", 256},
		{"log(1000)", 3},
		{"log(8, 2)", 3},
		{"ln(e)", 1},
		{"exp(0)", 1},
		{"sin(0)", 0},
		{"cos(0)", 1},
		{"tan(0)", 0},
		{"pi", math.Pi},
		{"π", math.Pi},
		{"PI", math.Pi},
		{"e", math.E},
		{"Sqrt(4)", 2},
		{"2*pi*10", 2 * math.Pi * 10},
		{"sqrt(3^2+4^2)", 5},
		{"max(1, min(5, 3) * 2)", 6},
		{"1e-400", 0}, // underflows to zero
	}
	for _, tt := range tests {
		got, err := evaluate(tt.expr)
		if err != nil {
			t.Errorf("evaluate(%q): %v", tt.expr, err)
			continue
		}
		if math.Abs(got-tt.want) > 1e-12*math.Max(1, math.Abs(tt.want)) {
			t.Errorf("evaluate(%q) = %v, want %v", tt.expr, got, tt.want)
		}
	}
}

func TestEvaluateErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		expr string
		want string // the whole message
	}{
		{"", "empty expression"},
		{"   ", "empty expression"},
		{"1/0", "division by zero at position 2"},
		{"1 + 2/(3-3)", "division by zero at position 6"},
		{"5 % 0", "division by zero (modulo) at position 3"},
		{"0^-1", "division by zero (0 to a negative power) at position 2"},
		{"foo + 1", `unknown name "foo" (constants: pi, e; functions: ` + functionNames + `) at position 1`},
		{"(1+2", "unbalanced parentheses: '(' is never closed at position 1"},
		{"sqrt(4", "unbalanced parentheses: '(' is never closed at position 5"},
		{"1+2)", "unbalanced parentheses: ')' without a matching '(' at position 4"},
		{"()", "unexpected ')': expected a number, a name or '(' at position 2"},
		{"2 3", "unexpected number 3 after a complete expression at position 3"},
		{"2pi", `unexpected name "pi" after a complete expression at position 2`},
		{"1 +", "unexpected end of expression: expected a number, a name or '(' at position 4"},
		{"1 + * 2", `unexpected "*": expected a number, a name or '(' at position 5`},
		{"2 $ 3", `unexpected character "$" at position 3`},
		{"1 + .", `unexpected character "." at position 5`},
		{"(1 2)", "unexpected number 2: expected ')' at position 4"},
		{"sqrt", "sqrt is a function: call it as sqrt(...) at position 1"},
		{"pi(2)", "pi is a constant, not a function at position 1"},
		{"sqrt(1, 2)", "sqrt takes 1 argument, got 2 at position 1"},
		{"pow(2)", "pow takes 2 arguments, got 1 at position 1"},
		{"max()", "max takes at least 1 argument(s), got 0 at position 1"},
		{"log(1, 2, 3)", "log takes 1 to 2 arguments, got 3 at position 1"},
		{"sqrt(-1)", "sqrt of a negative number at position 1"},
		{"ln(0)", "ln of a number <= 0 at position 1"},
		{"log(-1)", "log of a number <= 0 at position 1"},
		{"log(8, 1)", "log base must be > 0 and not 1 at position 1"},
		{"(-8)^(1/3)", "negative number to a fractional power at position 5"},
		{"10^400", "result is too large (overflow) at position 3"},
		{"1e400", "number 1e400 is out of range at position 1"},
		{"×2", `unexpected "×": expected a number, a name or '(' at position 1`},
		// positions count characters, not bytes
		{"2×2 + $", `unexpected character "$" at position 7`},
		// syntax errors win over evaluation errors
		{"1/0 + (2", "unbalanced parentheses: '(' is never closed at position 7"},
	}
	for _, tt := range tests {
		_, err := evaluate(tt.expr)
		if err == nil {
			t.Errorf("evaluate(%q) succeeded, want error %q", tt.expr, tt.want)
			continue
		}
		if err.Error() != tt.want {
			t.Errorf("evaluate(%q) error:\n got %q\nwant %q", tt.expr, err, tt.want)
		}
	}
}

func TestEvaluateLimits(t *testing.T) {
	t.Parallel()
	nest := func(n int) string { return strings.Repeat("(", n) + "1" + strings.Repeat(")", n) }
	if _, err := evaluate(nest(100)); err != nil {
		t.Errorf("100 levels: %v", err)
	}
	if _, err := evaluate(nest(101)); err == nil || err.Error() != "expression nests deeper than 100 levels at position 102" {
		t.Errorf("101 levels: got %v", err)
	}
	if _, err := evaluate(strings.Repeat("-", 150) + "1"); err == nil || !strings.Contains(err.Error(), "nests deeper than 100 levels") {
		t.Errorf("150 signs: got %v", err)
	}

	long := "1" + strings.Repeat("+1", 499) // 999 characters
	if got, err := evaluate(long); err != nil || got != 500 {
		t.Errorf("999 characters: got %v, %v", got, err)
	}
	if _, err := evaluate(long + "+1"); err == nil || err.Error() != "expression is 1001 characters long; the limit is 1000" {
		t.Errorf("1001 characters: got %v", err)
	}
	if _, err := evaluate(strings.Repeat("×", 1000)); err == nil || strings.Contains(err.Error(), "limit") {
		t.Errorf("1000 multi-byte characters: got %v, want a syntax error, not the length limit", err)
	}
}

func TestCalculatorTool(t *testing.T) {
	t.Parallel()
	calc := Calculator()
	if got := calc.Definition().Name; got != "calculator" {
		t.Errorf("name = %q", got)
	}
	tests := []struct {
		args string
		want string // output JSON, or "error: ..." for a tool error
	}{
		{`{"expression":"21*2+5"}`, `{"expression":"21*2+5","result":47}`},
		{`{"expression":"0.1+0.2"}`, `{"expression":"0.1+0.2","result":0.3}`},
		{`{"expression":"1/3"}`, `{"expression":"1/3","result":0.333333333333333}`},
		{`{"expression":"2^53+1"}`, `{"expression":"2^53+1","result":9007199254740992}`},
		{`{"expression":"-0"}`, `{"expression":"-0","result":0}`},
		{`{"expression":"10^21"}`, `{"expression":"10^21","result":1e+21}`},
		{`{"expression":"1/0"}`, "error: division by zero at position 2"},
	}
	for _, tt := range tests {
		out, err := calc.Call(context.Background(), json.RawMessage(tt.args))
		got := string(out)
		if err != nil {
			got = "error: " + err.Error()
		}
		if got != tt.want {
			t.Errorf("Call(%s) = %s, want %s", tt.args, got, tt.want)
		}
	}

	// The expression is required and must be a string: the schema says so
	// before the evaluator runs.
	for _, args := range []string{`{}`, `{"expression": 42}`, `{"expression": "1", "x": 1}`} {
		_, err := calc.Call(context.Background(), json.RawMessage(args))
		if ae := new(tool.ArgumentError); !errors.As(err, &ae) {
			t.Errorf("Call(%s) error = %v, want an *tool.ArgumentError", args, err)
		}
	}
}

func FuzzEvaluate(f *testing.F) {
	for _, s := range []string{"21*2+5", "sqrt(2)^2", "-(1+2)*3%4", "max(1,2,3)/0", "((1)", "2×3÷4"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := evaluate(s) // must not panic
		if err == nil && (math.IsInf(v, 0) || math.IsNaN(v)) {
			t.Errorf("evaluate(%q) = %v", s, v)
		}
	})
}
