package secrets

import "slices"

// keywordDFA is an Aho–Corasick automaton over the rules' keywords, compiled to a dense
// DFA whose input is folded to lower case, so that one pass over a string, with one table
// load per byte and no copy, finds every keyword in it whatever its case (gitleaks lowers
// a copy of the string and walks a trie with a map per node).
//
// Bytes are mapped to classes first: the bytes that occur in no keyword share one class,
// so the table has a row of a few dozen entries per state rather than 256 and fits in the
// CPU's cache.
type keywordDFA struct {
	class    [256]uint8
	nclass   int
	next     []uint16 // state*nclass + class -> state
	out      [][]int  // state -> indexes of the keywords that end here, longest first
	keywords []string // lower case
}

// newKeywordDFA compiles the keywords (matched case-insensitively, as ASCII).
func newKeywordDFA(keywords []string) *keywordDFA {
	d := &keywordDFA{}
	for _, k := range keywords {
		d.keywords = append(d.keywords, lowerASCII(k))
	}
	// Byte classes: one per distinct (lower-case) byte of the keywords, 0 for the rest.
	var id [256]uint8
	n := 1
	for _, k := range d.keywords {
		for i := 0; i < len(k); i++ {
			if id[k[i]] == 0 {
				id[k[i]] = uint8(n)
				n++
			}
		}
	}
	if n > 255 {
		panic("secrets: too many distinct keyword bytes")
	}
	for b := range 256 {
		d.class[b] = id[foldByte(byte(b))]
	}
	d.nclass = n

	// The trie, then failure links breadth first, filling the missing transitions.
	type node struct {
		child [256]int32 // by class; -1 when absent
		fail  int
		out   []int
	}
	newNode := func() *node {
		nd := &node{}
		for i := range nd.child {
			nd.child[i] = -1
		}
		return nd
	}
	nodes := []*node{newNode()}
	for ki, k := range d.keywords {
		s := 0
		for i := 0; i < len(k); i++ {
			c := id[k[i]]
			if nodes[s].child[c] < 0 {
				nodes[s].child[c] = int32(len(nodes))
				nodes = append(nodes, newNode())
			}
			s = int(nodes[s].child[c])
		}
		nodes[s].out = append(nodes[s].out, ki)
	}
	if len(nodes) > 1<<16 {
		panic("secrets: too many keyword states")
	}
	queue := []int{}
	for c := 0; c < n; c++ {
		if ch := nodes[0].child[c]; ch >= 0 {
			nodes[ch].fail = 0
			queue = append(queue, int(ch))
		} else {
			nodes[0].child[c] = 0
		}
	}
	for len(queue) > 0 {
		s := queue[0]
		queue = queue[1:]
		nodes[s].out = append(nodes[s].out, nodes[nodes[s].fail].out...)
		for c := 0; c < n; c++ {
			ch := nodes[s].child[c]
			if ch < 0 {
				nodes[s].child[c] = nodes[nodes[s].fail].child[c]
				continue
			}
			nodes[ch].fail = int(nodes[nodes[s].fail].child[c])
			queue = append(queue, int(ch))
		}
	}
	d.next = make([]uint16, len(nodes)*n)
	d.out = make([][]int, len(nodes))
	for s, nd := range nodes {
		for c := 0; c < n; c++ {
			d.next[s*n+c] = uint16(nd.child[c])
		}
		out := slices.Clone(nd.out)
		slices.SortFunc(out, func(a, b int) int { return len(d.keywords[b]) - len(d.keywords[a]) })
		d.out[s] = out
	}
	return d
}

// match calls hit with the index of each keyword found in text and the offset where it
// ends, in order of the end offset. hit returns false to stop.
func (d *keywordDFA) match(text string, hit func(keyword, end int) bool) {
	s := 0
	n := d.nclass
	next, class, out := d.next, &d.class, d.out
	for i := 0; i < len(text); i++ {
		s = int(next[s*n+int(class[text[i]])])
		if o := out[s]; o != nil {
			for _, k := range o {
				if !hit(k, i+1) {
					return
				}
			}
		}
	}
}

// any reports whether text holds a keyword.
func (d *keywordDFA) any(text string) bool {
	s := 0
	n := d.nclass
	next, class, out := d.next, &d.class, d.out
	for i := 0; i < len(text); i++ {
		s = int(next[s*n+int(class[text[i]])])
		if out[s] != nil {
			return true
		}
	}
	return false
}

func foldByte(b byte) byte {
	if 'A' <= b && b <= 'Z' {
		return b + 'a' - 'A'
	}
	return b
}

func lowerASCII(s string) string {
	b := []byte(s)
	for i, c := range b {
		b[i] = foldByte(c)
	}
	return string(b)
}
