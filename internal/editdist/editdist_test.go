package editdist

import "testing"

func TestDistance(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want int
	}{
		{"", "", 0}, {"", "abc", 3}, {"abc", "", 3}, {"max_rounds", "max_rounds", 0},
		{"max_round", "max_rounds", 1}, {"max_ruonds", "max_rounds", 1}, {"max_rnuods", "max_rounds", 2}, {"calculater", "calculator", 1},
		{"ab", "ba", 1}, {"kitten", "sitting", 3},
	} {
		if got := Distance(tc.a, tc.b); got != tc.want {
			t.Errorf("Distance(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
	}
}
