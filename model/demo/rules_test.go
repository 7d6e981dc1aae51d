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
	} {
		if got := valid(s); got != want {
			t.Errorf("valid(%q) = %v, want %v", s, got, want)
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
		if !strings.Contains(symbols.Replace(s), e) {
			t.Errorf("expression(%q) = %q, which is not in the text", s, e)
		}
	})
}
