package annotations

import "strings"

// suggest returns the candidate closest to s when it is close enough to be
// a likely misspelling, and "" otherwise. Case and '-' for '_' are
// forgiven before counting edits.
func suggest(s string, candidates []string) string {
	norm := strings.ReplaceAll(strings.ToLower(s), "-", "_")
	best, bestDist := "", -1
	for _, c := range candidates {
		d := editDistance(norm, c)
		if bestDist < 0 || d < bestDist {
			best, bestDist = c, d
		}
	}
	if bestDist < 0 || bestDist > max(1, min(3, len(best)/3)) {
		return ""
	}
	return best
}

// editDistance is the Levenshtein distance of a and b, counting an adjacent
// transposition as one edit.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev2 := make([]int, len(rb)+1)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(rb)]
}
