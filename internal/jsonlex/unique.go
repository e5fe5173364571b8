package jsonlex

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// A strict reader refuses an object whose keys repeat: encoding/json, and every decoder
// that follows it, lets the last of two equal keys win and merges two objects given for one
// field, so a document with a repeated key says one thing to one reader and another thing to
// the next (a digest taken over one member, a loader that sees the other). Two keys count
// as the same when their values (escapes decoded, as Unquote decodes them) are equal, and
// also when they differ only in letter case (strings.EqualFold): encoding/json and Unmarshal
// match a struct field's name without regard to case, so {"meta":…, "Meta":…} fills one
// field twice.

// DuplicateKeyError is an object key that repeats an earlier key of the same object.
type DuplicateKeyError struct {
	// Pointer is the JSON pointer (RFC 6901) of the repeated member, from the value the
	// check started at: "/meta", "/threads/0/id".
	Pointer string
	// Key is the repeated key as decoded, and First the earlier key it repeats (they
	// differ when only letter case tells them apart).
	Key, First string
	// Off is the offset of the repeated key's opening quote.
	Off int
}

func (e *DuplicateKeyError) Error() string {
	if e.Key != e.First {
		return "duplicate object key " + strconv.Quote(e.Key) + " at " + pointerText(e.Pointer) + " (it differs from the key " + strconv.Quote(e.First) + " before it only in case)"
	}
	return "duplicate object key " + strconv.Quote(e.Key) + " at " + pointerText(e.Pointer)
}

func pointerText(p string) string {
	if p == "" {
		return "the top" // never: a member's pointer has a key
	}
	return p
}

// Path follows where a reader stands in a JSON document, one frame per open object or
// array, and holds each open object's keys so that a repeated one is caught (see
// DuplicateKeyError). Streaming readers that cannot hand a whole value to SkipUnique use it
// directly: OpenObject or OpenArray at an opening bracket, Key for each member's key, Elem
// for each array element, Close at the closing bracket. Its zero value is ready; it
// allocates only as the document grows deeper or wider than before.
type Path struct {
	frames []frame
	keys   []keyEntry // the keys of every open object, in frames' order
	arena  []byte     // the keys' decoded and folded bytes
	index  map[string]int
	base   int // the depth of the value SkipUniqueAt started at
}

type frame struct {
	object  bool
	elem    int // an array's element count - 1
	keys    int // an object's first entry in keys
	indexed bool
}

type keyEntry struct {
	key, fold span32
}

type span32 struct{ from, to int32 }

// Reset empties p, keeping its memory.
func (p *Path) Reset() {
	p.frames, p.keys, p.arena, p.base = p.frames[:0], p.keys[:0], p.arena[:0], 0
	clear(p.index)
}

// Depth is the number of open objects and arrays.
func (p *Path) Depth() int { return len(p.frames) }

// OpenObject enters an object.
func (p *Path) OpenObject() { p.frames = append(p.frames, frame{object: true, keys: len(p.keys)}) }

// OpenArray enters an array.
func (p *Path) OpenArray() { p.frames = append(p.frames, frame{elem: -1}) }

// Elem moves to the next element of the innermost array.
func (p *Path) Elem() { p.frames[len(p.frames)-1].elem++ }

// Close leaves the innermost object or array.
func (p *Path) Close() {
	f := p.frames[len(p.frames)-1]
	p.frames = p.frames[:len(p.frames)-1]
	if f.object {
		if len(p.frames) == 0 || f.indexed {
			clear(p.index) // only the innermost object is ever indexed: see Key
		}
		if f.keys < len(p.keys) {
			p.arena = p.arena[:p.keys[f.keys].key.from]
		}
		p.keys = p.keys[:f.keys]
	}
}

// Key records the next key of the innermost object, given as the body of its string
// (between the quotes) with the flags String gave it. It returns the earlier key it repeats
// and false when it repeats one.
func (p *Path) Key(body []byte, s Str) (first string, ok bool) {
	f := &p.frames[len(p.frames)-1]
	from := int32(len(p.arena))
	if s&Escaped == 0 && (s&NonASCII == 0 || utf8.Valid(body)) {
		p.arena = append(p.arena, body...)
	} else {
		p.arena = Unquote(p.arena, body)
	}
	key := span32{from, int32(len(p.arena))}
	fold := key
	if needsFold(p.arena[key.from:key.to]) {
		p.arena = appendFold(p.arena, p.arena[key.from:key.to])
		fold = span32{key.to, int32(len(p.arena))}
	}
	fb := p.arena[fold.from:fold.to]
	n := len(p.keys) - f.keys
	switch {
	case n < 16:
		for _, e := range p.keys[f.keys:] {
			if string(p.arena[e.fold.from:e.fold.to]) == string(fb) {
				return string(p.arena[e.key.from:e.key.to]), false
			}
		}
	default:
		// A wide object: index its keys once (a document's objects are never wide and
		// nested at once in practice; an inner wide object clears the index, and the outer
		// one, if wide too, builds it again on its next key).
		if !f.indexed {
			if p.index == nil {
				p.index = make(map[string]int)
			}
			clear(p.index)
			for i, e := range p.keys[f.keys:] {
				p.index[string(p.arena[e.fold.from:e.fold.to])] = f.keys + i
			}
			f.indexed = true
			for i := range p.frames[:len(p.frames)-1] {
				p.frames[i].indexed = false
			}
		}
		if i, dup := p.index[string(fb)]; dup {
			e := p.keys[i]
			return string(p.arena[e.key.from:e.key.to]), false
		}
		p.index[string(fb)] = len(p.keys)
	}
	p.keys = append(p.keys, keyEntry{key: key, fold: fold})
	return "", true
}

// needsFold reports whether a key holds a letter that folds: an upper-case ASCII letter, or
// any byte of 0x80 and above. Lower-case ASCII keys (nearly all of them) are their own fold.
func needsFold(k []byte) bool {
	for _, c := range k {
		if 'A' <= c && c <= 'Z' || c >= utf8.RuneSelf {
			return true
		}
	}
	return false
}

// appendFold appends k with each rune replaced by the smallest rune of its case-folding
// orbit (unicode.SimpleFold), so that two keys strings.EqualFold calls equal fold to the
// same bytes. ASCII letters fold to lower case here, the rest to their orbit's least rune:
// k and K and the Kelvin sign all give k.
func appendFold(dst, k []byte) []byte {
	for len(k) > 0 {
		c := k[0]
		if c < utf8.RuneSelf {
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			dst = append(dst, c)
			k = k[1:]
			continue
		}
		r, n := utf8.DecodeRune(k)
		k = k[n:]
		least := r
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			least = min(least, f)
		}
		if least < utf8.RuneSelf && 'A' <= least && least <= 'Z' {
			least += 'a' - 'A'
		}
		dst = utf8.AppendRune(dst, least)
	}
	return dst
}

// Pointer is the JSON pointer (RFC 6901) of where the reader stands: each open object's
// last key and each open array's element index, "~" and "/" escaped.
func (p *Path) Pointer() string { return p.pointer(len(p.frames)) }

// pointer is Pointer of the first n frames.
func (p *Path) pointer(n int) string {
	var b strings.Builder
	for i, f := range p.frames[:n] {
		if !f.object {
			if f.elem >= 0 {
				b.WriteByte('/')
				b.WriteString(strconv.Itoa(f.elem))
			}
			continue
		}
		end := len(p.keys)
		for _, g := range p.frames[i+1:] {
			if g.object {
				end = g.keys
				break
			}
		}
		if end > f.keys {
			e := p.keys[end-1]
			b.WriteByte('/')
			b.WriteString(EscapePointer(string(p.arena[e.key.from:e.key.to])))
		}
	}
	return b.String()
}

// Member is the JSON pointer of the member key of the innermost object: the object's
// pointer and the key.
func (p *Path) Member(key string) string {
	return p.pointer(len(p.frames)-1) + "/" + EscapePointer(key)
}

// EscapePointer escapes a reference token of a JSON pointer: ~ as ~0, / as ~1.
func EscapePointer(s string) string {
	if !strings.ContainsAny(s, "~/") {
		return s
	}
	return strings.NewReplacer("~", "~0", "/", "~1").Replace(s)
}

// SkipUnique is Skip that also refuses a repeated key in any object of the value: the
// error is then a *DuplicateKeyError whose pointer starts at the value. A syntax error is an
// *Error. p is working memory (nil allocates one); it is empty again on return.
func SkipUnique(b []byte, i int, p *Path) (end int, err error) {
	return SkipUniqueAt(b, i, 0, p)
}

// SkipUniqueAt is SkipUnique for a value that stands depth containers deep, so that the
// nesting limit counts from the top of the document (as SkipAt).
func SkipUniqueAt(b []byte, i, depth int, p *Path) (end int, err error) {
	if p == nil {
		p = new(Path)
	}
	p.Reset()
	p.base = depth
	end, e := skipUnique(b, i, p)
	if e != nil {
		return end, e
	}
	return end, nil
}

// CheckUnique reports whether the document b (one JSON value, whitespace around it) is
// valid JSON with no repeated key in any object (see DuplicateKeyError).
func CheckUnique(b []byte) error {
	i := Space(b, 0)
	end, err := SkipUnique(b, i, nil)
	if err != nil {
		return err
	}
	if j := Space(b, end); j < len(b) {
		return bad(b, j, "invalid character %s after top-level value")
	}
	return nil
}

// skipUnique is skip with the keys of each object checked; it returns an *Error or a
// *DuplicateKeyError.
func skipUnique(b []byte, i int, p *Path) (int, error) {
	if i >= len(b) {
		return i, eof(i, "looking for a value")
	}
	c := b[i]
	if c != '{' && c != '[' {
		end, err := skip(b, i, p.base+len(p.frames))
		if err != nil {
			return end, err
		}
		return end, nil
	}
	closing := byte('}')
	badAfter, endAfter := "invalid character %s after an object value (want ',' or '}')", "after an object value"
	if c == '[' {
		closing = ']'
		badAfter, endAfter = "invalid character %s after an array element (want ',' or ']')", "after an array element"
	}
	if p.base+len(p.frames)+1 > MaxDepth {
		return i, &Error{Off: i, Msg: maxDepthMsg}
	}
	if c == '{' {
		p.OpenObject()
	} else {
		p.OpenArray()
	}
	i = Space(b, i+1)
	if i < len(b) && b[i] == closing {
		p.Close()
		return i + 1, nil
	}
	for {
		if c == '{' {
			if i >= len(b) {
				return i, eof(i, "looking for an object key")
			}
			if b[i] != '"' {
				return i, bad(b, i, "invalid character %s looking for the beginning of an object key")
			}
			kend, s, err := String(b, i)
			if err != nil {
				return kend, err
			}
			if first, ok := p.Key(b[i+1:kend-1], s); !ok {
				key := string(Unquote(nil, b[i+1:kend-1]))
				return i, &DuplicateKeyError{Pointer: p.Member(key), Key: key, First: first, Off: i}
			}
			i = Space(b, kend)
			if i >= len(b) {
				return i, eof(i, "after an object key")
			}
			if b[i] != ':' {
				return i, bad(b, i, "invalid character %s after an object key (want ':')")
			}
			i = Space(b, i+1)
		} else {
			p.Elem()
		}
		var err error
		if i, err = skipUnique(b, i, p); err != nil {
			return i, err
		}
		i = Space(b, i)
		if i >= len(b) {
			return i, eof(i, endAfter)
		}
		switch b[i] {
		case ',':
			i = Space(b, i+1)
		case closing:
			p.Close()
			return i + 1, nil
		default:
			return i, bad(b, i, badAfter)
		}
	}
}
