package match

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/internal/testutil/tapegen"
	"github.com/tapebox/tapebox/tape"
)

// TestEvidenceIndexAgreesWithContainsID: the index evidence looks tokens up in finds the same
// sources as searching each with ContainsID, for tokens of every shape (ids, paths, numbers,
// tokens without an id character) in texts made of a small alphabet, so that runs meet in
// every way.
func TestEvidenceIndexAgreesWithContainsID(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	gen := randomText(rng, "ab1-_/.: \"\\\n")
	for round := range 200 {
		rec := tapegen.Pair("claude-code", "x")
		th := rec.Threads[0]
		th.Steps = th.Steps[:1]
		for i := range 4 {
			in, _ := json.Marshal(map[string]string{"command": gen(40)})
			th.Steps = append(th.Steps, &tape.Step{ToolCalls: []tape.ToolCall{{ID: fmt.Sprint("c", i), Name: "Bash", Input: in}},
				Timing: tape.Timing{RequestAt: float64(10 * (i + 1))}})
		}
		ev := newEvidence(rec)
		ev.build()
		tokens := []string{"a", "ab", "1", "/", "//", "a/b", "/a", "a.", "-a", "a-", "1/1", "b_1", ":", "\\n"}
		for range 20 {
			src := ev.sources[rng.IntN(len(ev.sources))].text
			i := rng.IntN(len(src))
			tokens = append(tokens, src[i:min(len(src), i+1+rng.IntN(6))])
		}
		for _, tok := range tokens {
			var want []int
			for i, s := range ev.sources {
				if ContainsID(s.text, tok) {
					want = append(want, i)
				}
			}
			require.Equal(t, want, ev.holding(tok), "round %d token %q", round, tok)
		}
	}
}

// TestReplaceManyIDs: with more than manyIDs ids, replaceTokens looks them up by length; it
// replaces what searching for each id (replaceOneByOne, the way it does with fewer) does.
func TestReplaceManyIDs(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	gen := randomText(rng, "ab12-_/.: \n")
	for round := range 300 {
		s := gen(200)
		m := map[string]string{}
		for len(m) <= manyIDs {
			i := rng.IntN(len(s))
			m[s[i:min(len(s), i+1+rng.IntN(5))]] = fmt.Sprint("<", len(m), ">")
		}
		for k := range manyIDs { // ids that are not in s
			m[gen(3+k%4)] = "<absent>"
		}
		for _, numbers := range []bool{true, false} {
			require.Equal(t, replaceOneByOne(m, s, numbers), replaceTokens(m, s, numbers), "round %d numbers %v", round, numbers)
		}
	}
}

// replaceOneByOne is replaceTokens searching s for each id in turn, longest first.
func replaceOneByOne(m map[string]string, s string, numbers bool) string {
	var keys []string
	for k := range m {
		if k != "" && strings.Contains(s, k) {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, func(a, b string) int { return len(b) - len(a) })
	var b strings.Builder
	for i := 0; i < len(s); {
		matched := ""
		if !(i > 0 && isIDChar(s[i-1]) && isIDChar(s[i])) {
			for _, k := range keys {
				if strings.HasPrefix(s[i:], k) && (i+len(k) == len(s) || !isIDChar(s[i+len(k)]) || !isIDChar(k[len(k)-1])) &&
					(numbers || !isNumber(k) || len(k) == len(s) || i > 0 && s[i-1] == '/' || i+len(k) < len(s) && s[i+len(k)] == '/') {
					matched = k
					break
				}
			}
		}
		if matched == "" {
			b.WriteByte(s[i])
			i++
			continue
		}
		b.WriteString(m[matched])
		i += len(matched)
	}
	return b.String()
}

// randomText returns a generator of n-byte texts drawn from alphabet: a small alphabet, so
// that runs of id characters meet in every way.
func randomText(rng *rand.Rand, alphabet string) func(n int) string {
	return func(n int) string {
		b := make([]byte, n)
		for i := range b {
			b[i] = alphabet[rng.IntN(len(alphabet))]
		}
		return string(b)
	}
}
