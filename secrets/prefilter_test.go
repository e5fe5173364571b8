package secrets

import (
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/zricethezav/gitleaks/v8/detect"

	"github.com/tapebox/tapebox/internal/testutil/tapegen"
	"github.com/tapebox/tapebox/tape"
)

// detectBoth runs the prefiltered engine and gitleaks' detector with every rule on the
// whole of text and returns their findings as sorted "rule secret" lines.
func detectBoth(t testing.TB, e *engine, text string) (pre, full []string) {
	t.Helper()
	var sc engineScratch
	for _, l := range e.detect(t.Context(), &sc, text) {
		pre = append(pre, l.f.RuleID+" "+l.f.Secret)
	}
	for _, f := range e.full.DetectContext(t.Context(), detect.Fragment{Raw: text}) {
		full = append(full, f.RuleID+" "+f.Secret)
	}
	slices.Sort(pre)
	slices.Sort(full)
	return slices.Compact(pre), slices.Compact(full)
}

// TestPrefilterAgreesWithGitleaks: on the strings of the golden and generated tapes, and
// on prose, code and logs with every planted kind in them, long (past shortText) and
// short, the prefiltered scan finds exactly what gitleaks' detector finds with every rule
// on the whole string: the prefilter loses nothing.
func TestPrefilterAgreesWithGitleaks(t *testing.T) {
	s, err := Default()
	require.NoError(t, err)
	e := s.engine
	var texts []string
	add := func(data []byte) {
		require.NoError(t, walkJSON(data, func(w *walker, v string) error {
			if len(v) > 0 {
				texts = append(texts, strings.Clone(v))
			}
			return nil
		}))
	}
	for _, p := range goldenTapes(t) {
		data, err := os.ReadFile(p)
		require.NoError(t, err)
		add(data)
	}
	data, err := tape.Marshal(tapegen.Tape(tapegen.Options{Seed: 30}, 0))
	require.NoError(t, err)
	add(data)
	r := rand.New(rand.NewPCG(30, 9))
	filler := []string{
		"The tests pass. It's the third time this week that the build broke on os.path.join; see utils.py.",
		"func (s *Server) handle(w http.ResponseWriter, r *http.Request) { token := r.Header.Get(\"x-token\") }",
		"2026-03-01T12:00:00Z INFO request id=abc123 path=/v1/messages status=200 took=12ms",
		"key: value\nsecret_name: prod-db\napi_version: v2\nauth: enabled\n",
	}
	for _, k := range append(slices.Clone(secretKinds), moreKinds...) {
		for _, long := range []bool{false, true} {
			var b strings.Builder
			n := 1
			if long {
				n = 40
			}
			for i := range n {
				b.WriteString(filler[(i+r.IntN(4))%len(filler)])
				b.WriteByte('\n')
				if i == n/2 {
					b.WriteString(k.line(k.gen(r)) + "\n")
				}
			}
			texts = append(texts, b.String())
		}
	}
	checked, withFindings := 0, 0
	for _, text := range texts {
		pre, full := detectBoth(t, e, text)
		if !slices.Equal(pre, full) {
			t.Errorf("prefiltered %q, gitleaks %q, in %q", pre, full, text[:min(len(text), 300)])
		}
		checked++
		if len(full) > 0 {
			withFindings++
		}
	}
	t.Logf("%d strings, %d with findings, the same findings both ways", checked, withFindings)
	require.Greater(t, withFindings, 80)
}

// FuzzPrefilter: on any text, with or without a planted key, the prefiltered scan finds
// what gitleaks' detector finds with every rule on the whole text.
func FuzzPrefilter(f *testing.F) {
	r := rand.New(rand.NewPCG(30, 10))
	for i, k := range append(slices.Clone(secretKinds), moreKinds...) {
		f.Add(fmt.Sprintf("line %d\n", i), k.line(k.gen(r)), uint16(i))
	}
	f.Add("s. ey token=", "", uint16(0))
	s, err := Default()
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, text, secret string, at uint16) {
		pos := int(at) % (len(text) + 1)
		text = text[:pos] + secret + text[pos:]
		if len(text) > 1<<12 {
			return
		}
		pre, full := detectBoth(t, s.engine, text)
		if !slices.Equal(pre, full) {
			t.Fatalf("prefiltered %q, gitleaks %q, in %q", pre, full, text)
		}
	})
}
