package secrets

import (
	"context"
	"slices"
	"strings"

	"github.com/zricethezav/gitleaks/v8/config"
	"github.com/zricethezav/gitleaks/v8/detect"
	"github.com/zricethezav/gitleaks/v8/report"
)

// engine runs the rules on one string at a time, after a prefilter that lets most strings
// through untouched:
//
//  1. One pass of the keyword automaton (keywordDFA) over the string. A string without a
//     keyword of any rule, and without text that decodes to one, has no finding: every
//     rule has keywords, and gitleaks applies a rule only to text that holds one.
//  2. Text that may be encoded (base64, hex, percent or \u escapes, see encoded) and
//     decodes to text holding a keyword goes to gitleaks whole, with every rule, which
//     decodes it and scans the result as gitleaks does.
//  3. Otherwise each rule whose keywords the string holds runs on its own, on the spans
//     around its keywords that a match can reach (reach), merged; a short string is one
//     span.
//
// Tests hold the result to gitleaks run on the whole string with every rule
// (TestPrefilterAgreesWithGitleaks, FuzzPrefilter).
type engine struct {
	full    *detect.Detector // every rule, for encoded text
	dfa     *keywordDFA
	byKW    [][]kwRule // keyword -> rules
	rules   []engineRule
	maxKW   int // the longest keyword's length
	noKW    []int
	decodes int // gitleaks' MaxDecodeDepth
}

// kwRule is a rule that a keyword calls for, and the bytes that can follow the keyword in a
// match of the rule (nil: any): "s." calls for the Vault token rule only when a letter or
// digit follows, so the ". " of every sentence does not.
type kwRule struct {
	rule   int
	follow *byteSet
}

// engineRule is one rule with a detector of its own.
type engineRule struct {
	id    string
	det   *detect.Detector
	reach reach
	// spans is false when the rule must see whole strings: its expression could not be
	// analysed.
	spans bool
	// anchor, when the expression has its shape, says where a match can be from the
	// keyword it holds, more narrowly than reach.
	anchor *anchor
}

// maxTight bounds reach.tight for a rule run on spans: the spans keep that many offsets.
const maxTight = 1 << 14

// shortText is the length under which a string is scanned whole by each rule whose
// keyword it holds: spans would save nothing.
const shortText = 1024

func newEngine(cfg config.Config, decodeDepth int) *engine {
	e := &engine{decodes: decodeDepth}
	e.full = detect.NewDetector(cfg)
	e.full.MaxDecodeDepth = decodeDepth
	kwIndex := map[string]int{}
	var keywords []string
	ids := slices.Sorted(func(yield func(string) bool) {
		for id := range cfg.Rules {
			if !yield(id) {
				return
			}
		}
	})
	for _, id := range ids {
		r := cfg.Rules[id]
		ri := len(e.rules)
		one := config.Config{
			Rules:      map[string]config.Rule{id: r},
			Keywords:   map[string]struct{}{},
			Allowlists: cfg.Allowlists,
		}
		for _, k := range r.Keywords {
			one.Keywords[strings.ToLower(k)] = struct{}{}
		}
		er := engineRule{id: id, det: detect.NewDetector(one)}
		if r.Regex != nil {
			er.reach, er.spans = reachOf(r.Regex.String())
			// A match of thousands of bounded bytes (none in gitleaks' set): whole strings.
			er.spans = er.spans && er.reach.tight <= maxTight
			var kws []string
			for _, k := range r.Keywords {
				kws = append(kws, lowerASCII(k))
			}
			er.anchor, _ = anchorOf(r.Regex.String(), kws)
		}
		e.rules = append(e.rules, er)
		if len(r.Keywords) == 0 {
			if r.Regex != nil {
				e.noKW = append(e.noKW, ri)
			}
			continue
		}
		for _, k := range r.Keywords {
			k = lowerASCII(k)
			ki, ok := kwIndex[k]
			if !ok {
				ki = len(keywords)
				kwIndex[k] = ki
				keywords = append(keywords, k)
				e.byKW = append(e.byKW, nil)
			}
			if !slices.ContainsFunc(e.byKW[ki], func(kr kwRule) bool { return kr.rule == ri }) {
				kr := kwRule{rule: ri}
				if r.Regex != nil {
					if f, ok := followOf(r.Regex.String(), k); ok {
						kr.follow = f
					}
				}
				e.byKW[ki] = append(e.byKW[ki], kr)
			}
			e.maxKW = max(e.maxKW, len(k))
		}
	}
	e.dfa = newKeywordDFA(keywords)
	return e
}

// candidate reports whether s may hold a finding: a keyword, or text that decodes to one.
// It is the whole cost of a string without secrets.
func (e *engine) candidate(s string) bool {
	return len(e.noKW) > 0 || e.anyHit(s) || e.encoded(s, e.decodes)
}

// anyHit reports whether s holds a keyword followed by a byte its rule allows.
func (e *engine) anyHit(s string) bool {
	found := false
	e.dfa.match(s, func(k, end int) bool {
		for _, kr := range e.byKW[k] {
			if kr.allows(s, end) {
				found = true
				return false
			}
		}
		return true
	})
	return found
}

// allows reports whether the byte after a keyword ending at end of s may follow it in a
// match of the rule.
func (kr kwRule) allows(s string, end int) bool {
	return kr.follow == nil || end >= len(s) || kr.follow[s[end]]
}

// kwHit is a keyword occurrence, for one rule.
type kwHit struct{ rule, start, end int }

// engineScratch is reused across the strings of one scan.
type engineScratch struct {
	hits []kwHit
}

// detect returns gitleaks' findings in text, with where each starts in text.
func (e *engine) detect(ctx context.Context, sc *engineScratch, text string) []located {
	if e.encoded(text, e.decodes) {
		return locateAll(text, 0, e.full.DetectContext(ctx, detect.Fragment{Raw: text}))
	}
	hits := sc.hits[:0]
	e.dfa.match(text, func(k, end int) bool {
		for _, kr := range e.byKW[k] {
			if kr.allows(text, end) {
				hits = append(hits, kwHit{rule: kr.rule, start: end - len(e.dfa.keywords[k]), end: end})
			}
		}
		return true
	})
	for _, r := range e.noKW {
		hits = append(hits, kwHit{rule: r, start: 0, end: len(text)})
	}
	sc.hits = hits
	if len(hits) == 0 {
		return nil
	}
	slices.SortFunc(hits, func(a, b kwHit) int {
		if a.rule != b.rule {
			return a.rule - b.rule
		}
		return a.start - b.start
	})
	var out []located
	for i := 0; i < len(hits); {
		j := i
		for j < len(hits) && hits[j].rule == hits[i].rule {
			j++
		}
		r := &e.rules[hits[i].rule]
		if r.anchor != nil {
			out = append(out, r.anchored(ctx, text, hits[i:j])...)
		} else if !r.spans || len(text) <= shortText {
			out = append(out, locateAll(text, 0, r.det.DetectContext(ctx, detect.Fragment{Raw: text}))...)
		} else {
			sp := newSpans(&r.reach, text)
			for _, h := range hits[i:j] {
				sp.add(h.start, h.end)
			}
			for _, w := range sp.out {
				win := text[w[0]:w[1]]
				out = append(out, locateAll(win, w[0], r.det.DetectContext(ctx, detect.Fragment{Raw: win}))...)
			}
		}
		i = j
	}
	return dropGeneric(text, out)
}

// dropGeneric leaves out a finding of a generic rule when a finding of another rule on
// the same line holds its secret, as gitleaks' detector does for the findings of one
// fragment; the rules ran apart here.
func dropGeneric(text string, ls []located) []located {
	if len(ls) < 2 {
		return ls
	}
	line := func(off int) int { return strings.Count(text[:min(off, len(text))], "\n") }
	out := ls[:0:0]
	for i, l := range ls {
		if isGeneric(l.f.RuleID) {
			drop := false
			for j, o := range ls {
				if j != i && !isGeneric(o.f.RuleID) && o.f.RuleID != l.f.RuleID &&
					strings.Contains(o.f.Secret, l.f.Secret) && line(o.match) == line(l.match) {
					drop = true
					break
				}
			}
			if drop {
				continue
			}
		}
		out = append(out, l)
	}
	return out
}

// anchored runs a rule that has an anchor on the spans its keyword occurrences call for:
// none when the rest of its expression matches after none of them.
func (r *engineRule) anchored(ctx context.Context, text string, hits []kwHit) []located {
	var spans [][2]int
	for _, h := range hits {
		after, ok := r.anchor.reachAfter(text[h.end:])
		if !ok {
			continue
		}
		lo := max(h.end-r.anchor.left-windowMargin, 0)
		hi := min(h.end+after+windowMargin, len(text))
		if n := len(spans); n > 0 && lo <= spans[n-1][1] {
			spans[n-1][0] = min(spans[n-1][0], lo)
			spans[n-1][1] = max(spans[n-1][1], hi)
			continue
		}
		spans = append(spans, [2]int{lo, hi})
	}
	if len(spans) == 0 {
		return nil
	}
	if len(text) <= shortText {
		return locateAll(text, 0, r.det.DetectContext(ctx, detect.Fragment{Raw: text}))
	}
	var out []located
	for _, w := range spans {
		win := text[w[0]:w[1]]
		out = append(out, locateAll(win, w[0], r.det.DetectContext(ctx, detect.Fragment{Raw: win}))...)
	}
	return out
}

// located is a gitleaks finding and where it is in the string scanned.
type located struct {
	f      report.Finding
	match  int // where the match starts
	offset int // where the secret starts
	length int
}

// locateAll places each finding of fs, found in text, and adds base to its offset.
func locateAll(text string, base int, fs []report.Finding) []located {
	out := make([]located, 0, len(fs))
	for _, f := range fs {
		m, off := locateMatch(text, f)
		n := len(f.Secret)
		if off+n > len(text) || text[off:off+n] != f.Secret {
			// Found decoded: the run of encoded text from there.
			n = encodedRun(text[off:])
		}
		out = append(out, located{f: f, match: base + m, offset: base + off, length: n})
	}
	return out
}

// encodedRun returns the length of the base64, hex or percent-encoded text at the start
// of s (at least 1 byte when s is not empty).
func encodedRun(s string) int {
	n := 0
	for n < len(s) {
		switch c := s[n]; {
		case b64Value[c] != 0xff || c == '=':
			n++
		case c == '%' && n+2 < len(s) && isHexByte(s[n+1]) && isHexByte(s[n+2]):
			n += 3
		default:
			return max(n, min(1, len(s)))
		}
	}
	return n
}
