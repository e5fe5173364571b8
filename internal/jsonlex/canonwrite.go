package jsonlex

import (
	"io"
	"slices"
	"unicode/utf8"
)

// WriteCanonical writes the canonical form of the document b (Canonical's bytes) to w
// without building it. b is checked first (CheckUnique: valid JSON, no repeated key); on
// an error nothing is written. Then each object's members are found, sorted by key, and
// written in that order straight from b, and the output goes to w in pieces of about
// 32 KB. Memory stays at the size of the largest string and the member lists of the open
// objects, where Canonical holds the whole form and, for an object whose members are out
// of order, a second copy of it: what a digest of a recorded body of tens of megabytes
// needs (the tape's digests hash the canonical form of each body).
func WriteCanonical(w io.Writer, b []byte) error {
	if err := CheckUnique(b); err != nil {
		return err
	}
	s := canonWriter{w: w, b: b}
	s.value(Space(b, 0))
	s.flush()
	return s.err
}

// canonWriter writes the canonical form of a document known to be valid with unique keys.
type canonWriter struct {
	w    io.Writer
	b    []byte
	buf  []byte
	err  error
	keys []byte         // the decoded keys of the open objects' members
	ms   []canonWMember // the members of the open objects, innermost last
}

type canonWMember struct {
	key        span32 // decoded, in keys
	ascii      bool
	kbody      span32 // the key's body (between its quotes) in b
	kflags     Str
	valueStart int
}

const canonWriteChunk = 32 << 10

func (s *canonWriter) flush() {
	if s.err == nil && len(s.buf) > 0 {
		_, s.err = s.w.Write(s.buf)
	}
	s.buf = s.buf[:0]
}

func (s *canonWriter) spill() {
	if len(s.buf) >= canonWriteChunk {
		s.flush()
	}
}

// value writes the value at b[i] and returns the offset past it.
func (s *canonWriter) value(i int) int {
	b := s.b
	switch ch := b[i]; {
	case ch == '"':
		end, st, _ := String(b, i)
		body := b[i+1 : end-1]
		if len(body) >= canonWriteChunk && st&Escaped == 0 && (st&NonASCII == 0 || utf8.Valid(body)) {
			// Its canonical form is itself (appendCanonicalString's first case): written
			// from b, not copied.
			s.buf = append(s.buf, '"')
			s.flush()
			if s.err == nil {
				_, s.err = s.w.Write(body)
			}
			s.buf = append(s.buf, '"')
			return end
		}
		s.buf = appendCanonicalString(s.buf, body, st)
		s.spill()
		return end
	case ch == '{':
		return s.object(i)
	case ch == '[':
		return s.array(i)
	case ch == 't' || ch == 'f' || ch == 'n':
		end, _, _ := Keyword(b, i)
		s.buf = append(s.buf, b[i:end]...)
		return end
	}
	end, _, _ := Number(b, i)
	s.buf = appendCanonicalNumber(s.buf, b[i:end])
	return end
}

func (s *canonWriter) array(i int) int {
	b := s.b
	s.buf = append(s.buf, '[')
	i = Space(b, i+1)
	if b[i] == ']' {
		s.buf = append(s.buf, ']')
		return i + 1
	}
	for {
		i = Space(b, s.value(i))
		if b[i] == ']' {
			s.buf = append(s.buf, ']')
			return i + 1
		}
		s.buf = append(s.buf, ',')
		i = Space(b, i+1)
	}
}

// object finds the object's members (each value skipped), then writes them in key order.
func (s *canonWriter) object(i int) int {
	b := s.b
	i = Space(b, i+1)
	if b[i] == '}' {
		s.buf = append(s.buf, '{', '}')
		return i + 1
	}
	base, keysBase := len(s.ms), len(s.keys)
	for {
		kend, st, _ := String(b, i)
		kf := int32(len(s.keys))
		s.keys = unquoteKeepSurrogates(s.keys, b[i+1:kend-1], st)
		m := canonWMember{key: span32{kf, int32(len(s.keys))}, ascii: st == 0, kbody: span32{int32(i + 1), int32(kend - 1)}, kflags: st}
		m.valueStart = Space(b, Space(b, kend)+1) // past the colon
		end, _ := SkipTrusted(b, m.valueStart)
		s.ms = append(s.ms, m)
		i = Space(b, end)
		if b[i] == '}' {
			break
		}
		i = Space(b, i+1) // past the comma
	}
	end := i + 1
	// A copy: the members' own objects add to s.ms while these are written.
	sorted := slices.Clone(s.ms[base:])
	slices.SortFunc(sorted, func(x, y canonWMember) int { return compareKeys(s.keys, x.key, y.key, x.ascii && y.ascii) })
	s.buf = append(s.buf, '{')
	for k, m := range sorted {
		if k > 0 {
			s.buf = append(s.buf, ',')
		}
		s.buf = appendCanonicalString(s.buf, b[m.kbody.from:m.kbody.to], m.kflags)
		s.buf = append(s.buf, ':')
		s.value(m.valueStart)
	}
	s.buf = append(s.buf, '}')
	s.ms, s.keys = s.ms[:base], s.keys[:keysBase]
	return end
}
