package demo

import (
	"strings"
	"testing"
)

func TestValid(t *testing.T) {
	t.Parallel()
	for s, want := range map[string]bool{
		"1+1": true, "(1+2)*3": true, "-2^2": true, "2*-3": true, "1.5/.5": true, "2 + 2": true,
		"12": false, "1+": false, "+": false, "1 2": false, "(1+2": false, "1+2)": false,
		"1.2.3": false, "()": false, "(1)(2)": false, ".": false, "2024-01-02": true,
		"1e308*10": true, "1.5E-3+1": true, "sqrt(16)": true, "sqrt 16": false, "2pi": false,
		"2*pi": true, "sqrt(16)(2)": false, "foo(2)": false, "10/100*250": true, "1e+3": false,
	} {
		if got := valid(s); got != want {
			t.Errorf("valid(%q) = %v, want %v", s, got, want)
		}
	}
}

func TestExpression(t *testing.T) {
	t.Parallel()
	for text, want := range map[string]string{
		"what is 1e308*10":          "1e308*10",
		"what is sqrt(16)":          "sqrt(16)",
		"what is SQRT (16) + 1?":    "SQRT (16) + 1",
		"what is 10% of 250":        "10/100*250",
		"15 percent of 80, please":  "15/100*80",
		"what is 2*pi":              "2*pi",
		"what is 21*2+5?":           "21*2+5",
		"the sqrt is nice, 2":       "",
		"2e5 meters":                "",
		"compute 1.5e3/3 then stop": "1.5e3/3",
		"abs(-3)":                   "abs(-3)",
		"17 % 5":                    "",
	} {
		if got := expression(text); got != want {
			t.Errorf("expression(%q) = %q, want %q", text, got, want)
		}
	}
}

// FuzzExpression checks that whatever expression finds is well formed and
// made of the (normalised) text it was found in.
func FuzzExpression(f *testing.F) {
	for _, s := range []string{"what is 21*2+5?", "compute (3+4)*2", "2^10?", "6 × 7", "((1)", "-.-", ")1+1("} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		e := expression(s)
		if e == "" {
			return
		}
		if !valid(e) {
			t.Errorf("expression(%q) = %q, which is not valid", s, e)
		}
		if !strings.Contains(normalise(s), e) {
			t.Errorf("expression(%q) = %q, which is not in the text", s, e)
		}
	})
}
