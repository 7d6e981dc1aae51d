// Package editdist measures how far apart two words are, for "did you
// mean" suggestions.
package editdist

// Distance is the optimal string alignment distance between a and b, in
// bytes: the Levenshtein distance, with a swap of two adjacent characters
// counting as one edit, as it does for typists.
func Distance(a, b string) int {
	// Three rows suffice: the transposition looks two rows back.
	prev2 := make([]int, len(b)+1) // row i-2
	prev := make([]int, len(b)+1)  // row i-1
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
}
