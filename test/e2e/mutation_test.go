package e2e

import (
	"regexp"
	"strings"
	"testing"

	"github.com/tapebox/tapebox/compare"
	"github.com/tapebox/tapebox/match"
	"github.com/tapebox/tapebox/tape"
)

// mutationToken matches the runs compare aligns tool results by.
var mutationToken = regexp.MustCompile(`[A-Za-z0-9_\-./:]+`)

// mutate changes the first letter or digit of tok into the next one of its kind (a to b, z
// to a, 9 to 0), keeping the token's shape, which is the hardest change to catch.
func mutate(tok string) (string, bool) {
	b := []byte(tok)
	for i, c := range b {
		switch {
		case c >= '0' && c <= '9':
			b[i] = '0' + (c-'0'+1)%10
		case c >= 'a' && c <= 'z':
			b[i] = 'a' + (c-'a'+1)%26
		case c >= 'A' && c <= 'Z':
			b[i] = 'A' + (c-'A'+1)%26
		default:
			continue
		}
		return string(b), true
	}
	return tok, false
}

// checkMutationsCaught is the compare's property test: rep compares identical with rec, and
// changing any one token of any of rep's tool results must make it differ. Tokens inside a
// volatile field (masked by compare, by design), tokens that are part of an identifier
// compare learned, and tokens in a field the harness names as an identifier that nothing
// uses again (any value is fine there, by design) are skipped and counted. It returns
// the mutations tried.
func checkMutationsCaught(t *testing.T, rec, rep *tape.Tape) int {
	t.Helper()
	base := compare.Compare(rec, rep)
	if !base.Identical {
		t.Fatalf("the unmutated replay must compare identical first: %+v", base.Differences)
	}
	var learned []string
	for _, l := range base.Identifiers {
		learned = append(learned, l.Replayed)
	}
	h := rec.Meta.Harness
	tried, caught, volatile, ids := 0, 0, 0, 0
	for _, th := range rep.Threads {
		for si, st := range th.Steps {
			for ri := range st.ToolResults {
				for bi := range st.ToolResults[ri].Content {
					blk := &st.ToolResults[ri].Content[bi]
					if blk.Type != tape.BlockText {
						continue
					}
					orig := blk.Text
					for _, sp := range mutationToken.FindAllStringIndex(orig, -1) {
						tok := orig[sp[0]:sp[1]]
						m, ok := mutate(tok)
						if !ok {
							continue
						}
						if partOfAny(tok, learned) {
							ids++
							continue
						}
						mutated := orig[:sp[0]] + m + orig[sp[1]:]
						if match.Mask(h, mutated) == match.Mask(h, orig) {
							volatile++
							continue
						}
						blk.Text = mutated
						r := compare.Compare(rec, rep)
						blk.Text = orig
						if r.Identical && namedIdentifier(r, m) {
							ids++ // a value in a field the harness names as an identifier, that nothing uses again: free by design
							continue
						}
						tried++
						if !r.Identical {
							caught++
						} else {
							t.Errorf("thread %s step %d result %s: changing %q to %q still compares IDENTICAL (learned %+v)",
								th.ID, si, st.ToolResults[ri].ToolCallID, tok, m, r.Identifiers)
						}
					}
				}
			}
		}
	}
	t.Logf("compare mutation test: %d mutations tried, %d caught; skipped %d in volatile fields, %d inside identifiers",
		tried, caught, volatile, ids)
	return tried
}

// namedIdentifier says whether compare learned the token m as the replayed value of a
// field the harness table names as an identifier.
func namedIdentifier(r *compare.Report, m string) bool {
	for _, l := range r.Identifiers {
		if strings.HasPrefix(l.Evidence, "named by the harness") && (strings.Contains(m, l.Replayed) || strings.Contains(l.Replayed, m)) {
			return true
		}
	}
	return false
}

// partOfAny says whether tok and one of the identifiers overlap (one holds the other).
func partOfAny(tok string, ids []string) bool {
	for _, id := range ids {
		if id != "" && (strings.Contains(tok, id) || strings.Contains(id, tok)) {
			return true
		}
	}
	return false
}
