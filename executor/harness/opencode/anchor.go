package opencode

import (
	"strings"
	"unicode/utf16"

	"github.com/tapebox/tapebox/executor/action"
)

// The similarity a block-anchor match needs: one candidate, or the best of several
// (opencode's SINGLE_CANDIDATE_SIMILARITY_THRESHOLD and MULTIPLE_CANDIDATES_...).
const (
	singleSimilarity   = 0.65
	multipleSimilarity = 0.65
)

// jsTrim is JavaScript's String.prototype.trim: white space and line terminators as
// ECMAScript counts them (U+FEFF is one, U+0085 is not).
func jsTrim(s string) string { return strings.TrimFunc(s, action.IsJSSpace) }

// levenshtein is opencode's edit distance, over UTF-16 code units as JavaScript indexes
// strings.
func levenshtein(a, b []uint16) int {
	if len(a) == 0 || len(b) == 0 {
		return max(len(a), len(b))
	}
	prev, cur := make([]int, len(b)+1), make([]int, len(b)+1)
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
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

func units(s string) []uint16 { return utf16.Encode([]rune(s)) }

// similarity is how alike the middle lines of content's lines[start:end+1] and find's are:
// the mean of 1 - distance/length over the pairs, or 1 when there is no middle. With stop,
// the sum stops once it reaches the single-candidate threshold (opencode breaks early
// there).
func similarity(lines, want []string, start, end int, stop bool) float64 {
	n := end - start + 1
	check := min(len(want)-2, n-2)
	if check <= 0 {
		return 1
	}
	sim := 0.0
	for j := 1; j < len(want)-1 && j < n-1; j++ {
		a, b := units(jsTrim(lines[start+j])), units(jsTrim(want[j]))
		longest := max(len(a), len(b))
		if longest == 0 {
			continue
		}
		d := levenshtein(a, b)
		if stop {
			sim += (1 - float64(d)/float64(longest)) / float64(check)
			if sim >= singleSimilarity {
				break
			}
		} else {
			sim += 1 - float64(d)/float64(longest)
		}
	}
	if !stop {
		sim /= float64(check)
	}
	return sim
}

// blockAnchorReplacer: a block of three lines or more whose first and last lines match
// find's (trimmed), about as long as find, whose middle lines are similar enough.
func blockAnchorReplacer(content, find string) []string {
	lines, want := strings.Split(content, "\n"), strings.Split(find, "\n")
	if len(want) < 3 {
		return nil
	}
	if want[len(want)-1] == "" {
		want = want[:len(want)-1]
	}
	first, last := jsTrim(want[0]), jsTrim(want[len(want)-1])
	size := len(want)
	slack := max(1, size/4)
	type span struct{ start, end int }
	var cands []span
	for i := range lines {
		if jsTrim(lines[i]) != first {
			continue
		}
		for j := i + 2; j < len(lines); j++ {
			if jsTrim(lines[j]) == last {
				if n := j - i + 1; abs(n-size) <= slack {
					cands = append(cands, span{i, j})
				}
				break
			}
		}
	}
	switch len(cands) {
	case 0:
		return nil
	case 1:
		c := cands[0]
		if similarity(lines, want, c.start, c.end, true) >= singleSimilarity {
			return []string{strings.Join(lines[c.start:c.end+1], "\n")}
		}
		return nil
	}
	best, bestSim := -1, -1.0
	for i, c := range cands {
		if s := similarity(lines, want, c.start, c.end, false); s > bestSim {
			best, bestSim = i, s
		}
	}
	if bestSim >= multipleSimilarity && best >= 0 {
		c := cands[best]
		return []string{strings.Join(lines[c.start:c.end+1], "\n")}
	}
	return nil
}

// contextAwareReplacer: a block of find's length whose first and last lines match find's
// (trimmed) and whose non-blank middle lines are at least half the same.
func contextAwareReplacer(content, find string) []string {
	want := strings.Split(find, "\n")
	if len(want) < 3 {
		return nil
	}
	if want[len(want)-1] == "" {
		want = want[:len(want)-1]
	}
	lines := strings.Split(content, "\n")
	first, last := jsTrim(want[0]), jsTrim(want[len(want)-1])
	var out []string
	for i := range lines {
		if jsTrim(lines[i]) != first {
			continue
		}
		for j := i + 2; j < len(lines); j++ {
			if jsTrim(lines[j]) != last {
				continue
			}
			block := lines[i : j+1]
			if len(block) == len(want) {
				same, nonBlank := 0, 0
				for k := 1; k < len(block)-1; k++ {
					a, b := jsTrim(block[k]), jsTrim(want[k])
					if a != "" || b != "" {
						nonBlank++
						if a == b {
							same++
						}
					}
				}
				if nonBlank == 0 || float64(same)/float64(nonBlank) >= 0.5 {
					out = append(out, strings.Join(block, "\n"))
				}
			}
			break
		}
	}
	return out
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}
