package tape

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/tapebox/tapebox/internal/jsonlex"
)

// LoadSummary reads a tape from r without its bodies (Summarize): every normalized field
// is there, but each request.raw and response.raw longer than SmallBody bytes is null (a
// small body, such as a Truncation marker or an error, is kept) and each response.chunks
// is empty. Readers that need only the normalized fields, as inspect and compare do, then
// hold memory in proportion to those fields, not to the file. A tape loaded so must not be
// saved over the original.
func LoadSummary(r io.Reader) (*Tape, error) {
	sum, err := Summarize(r)
	if err != nil {
		return nil, err
	}
	return sum.Tape()
}

// LoadSummaryFile is LoadSummary for the tape at path.
func LoadSummaryFile(path string) (*Tape, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("load tape: %w", err)
	}
	defer f.Close()
	t, err := LoadSummary(f)
	if err != nil {
		return nil, fmt.Errorf("load tape %s: %w", path, err)
	}
	return t, nil
}

// StripBodies reads one JSON value (a tape) from r and returns its bytes with the bodies
// left out: the value of every threads[*].steps[*].request.raw and response.raw becomes
// null unless it takes at most SmallBody bytes (a Truncation marker does), and every
// response.chunks becomes []. All else is copied as it is. The whole input, bodies
// included, is checked to be well-formed JSON (as encoding/json checks it) without being
// held: an error names the line, column and byte offset. The bodies are only checked to be
// JSON (and chunks an array); the result is for Unmarshal or a schema validator.
func StripBodies(r io.Reader) ([]byte, error) {
	sum, err := Summarize(r)
	if err != nil {
		return nil, err
	}
	return sum.Data, nil
}

// Summary is a tape's encoding without its bodies, as StripBodies makes it, and where its
// steps stand in it, so that Tape decodes it step by step.
type Summary struct {
	// Data is the encoding without the bodies (it may be given to a schema validator).
	Data []byte
	// arrays are the steps arrays of Data, in order.
	arrays []stepsArray
}

// stepsArray is a thread's steps array: its content (between the brackets) is
// Data[from:to], and each step is one span of it.
type stepsArray struct {
	thread   int // index in the threads array
	from, to int
	steps    []span
}

type span struct{ from, to int }

// Summarize reads a tape from r as StripBodies does and returns its Summary.
func Summarize(r io.Reader) (*Summary, error) {
	layout()
	s := &stripper{src: r, buf: make([]byte, 64<<10), pin: -1}
	s.keep(toOut)
	if err := s.value(place{s: &tapeTable().shape}, 0); err != nil {
		return nil, err
	}
	if c, ok := s.peekNonSpace(); ok {
		return nil, s.errorf("unexpected %q after the tape object", c)
	}
	if s.err != nil && !errors.Is(s.err, io.EOF) {
		return nil, s.err
	}
	s.flush()
	return &Summary{Data: s.out.bytes(), arrays: s.arrays}, nil
}

// Tape decodes the summary as Unmarshal decodes a tape, with the same checks, but a step
// at a time: decoding costs the decoded tape and a step's encoding, not a copy of Data.
func (sum *Summary) Tape() (*Tape, error) {
	layout()
	// The tape without its steps first: the meta, and every thread with steps [].
	skeleton := make([]byte, 0, 64<<10)
	prev := 0
	for _, a := range sum.arrays {
		skeleton = append(skeleton, sum.Data[prev:a.from]...)
		prev = a.to
	}
	skeleton = append(skeleton, sum.Data[prev:]...)
	t, err := unmarshal(skeleton, decodeOptions{noLines: true}) // its lines are not the file's
	if err != nil {
		return nil, err
	}
	for _, a := range sum.arrays {
		if a.thread >= len(t.Threads) {
			return nil, fmt.Errorf("tape: steps of thread %d, which the tape does not hold", a.thread)
		}
		th := t.Threads[a.thread]
		th.Steps = make([]*Step, 0, len(a.steps))
		for j, sp := range a.steps {
			ptr := fmt.Sprintf("/%s/%d/%s/%d", tapeTable().keys[tapeThreads], a.thread, threadTable().keys[threadSteps], j)
			st, err := unmarshalStep(sum.Data[sp.from:sp.to], ptr)
			var fe *fieldError
			if errors.As(err, &fe) {
				return nil, fmt.Errorf("tape: %w", err) // it names the pointer
			}
			if err != nil {
				return nil, fmt.Errorf("tape: %s: %w", ptr, err)
			}
			th.Steps = append(th.Steps, st)
		}
	}
	t.normalize()
	return t, nil
}

// unmarshalStep decodes one step, standing at pointer ptr of its tape, as Unmarshal does.
func unmarshalStep(data []byte, ptr string) (*Step, error) {
	s, fast := decodeStep(data, ptr)
	if fast == nil {
		return s, nil
	}
	var fe *fieldError
	if errors.As(fast, &fe) && !fe.unknown {
		return nil, fast
	}
	if err := checkUnique(data); err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		if fe := unknownField(fast, err); fe != nil {
			return nil, fe
		}
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return nil, fmt.Errorf("field %q: cannot use JSON %s as %s", te.Field, te.Value, te.Type)
		}
		return nil, err
	}
	if s == nil {
		return nil, errors.New("is null")
	}
	return s, nil
}

// SmallBody is the length up to which StripBodies keeps a raw body: small bodies (a
// Truncation marker, an error, a request whose model the normalized fields lack) cost
// nothing to keep.
const SmallBody = 256

// place is where a value stands in a tape, as far as stripping cares: the object type of
// the value or, in a list, of its elements (from the field table), and what a summary
// leaves out of it. The zero place is anywhere else.
type place struct {
	s    *shape
	list bool
	cut  cut
}

// is says whether p is an object of type s (list false) or a list of them.
func (p place) is(s *shape, list bool) bool { return p.s == s && p.list == list }

// child is where the value of key (as it stands, escapes not decoded) stands in an object
// at p. Only objects that hold something a summary leaves out, deeper down, are followed:
// elsewhere keys do not matter.
func child(p place, key []byte) place {
	if p.s == nil || p.list || !p.s.holdsCuts {
		return place{}
	}
	i := p.s.field(string(key))
	if i < 0 {
		return place{}
	}
	c := place{list: p.s.list[i], cut: p.s.cuts[i]}
	if sub := p.s.subs[i]; sub != nil {
		c.s = sub()
	}
	if c.cut == cutNothing && (c.s == nil || !c.s.holdsCuts) {
		return place{}
	}
	return c
}

// item is where the items of an array at p stand.
func item(p place) place {
	if !p.list {
		return place{}
	}
	return place{s: p.s}
}

// stripper scans JSON from src through buf, copying what it consumes to dst.
type stripper struct {
	src  io.Reader
	buf  []byte
	i, n int   // buf[i:n] is read and not yet consumed
	base int64 // input offset of buf[0]
	pin  int   // when not -1, buf[pin:i] is consumed but must stay in buf (a key)
	err  error // a read error or io.EOF, once met
	// line counts the newlines met (outside strings, where they may stand), which start at
	// lineStart.
	line      int
	lineStart int64
	// threads counts the threads met; arrays are their steps arrays.
	threads int
	arrays  []stepsArray

	// path holds the keys of the open objects, so that a repeated key is refused with its
	// pointer (jsonlex.DuplicateKeyError), bodies included.
	path jsonlex.Path

	out blocks
	// Consumed bytes from buf[mark:] on go to sink: out, small (up to SmallBody bytes;
	// past them, over is set and small holds no more), or nowhere.
	sink  int
	mark  int
	small []byte
	over  bool
}

// Where consumed bytes go.
const (
	toOut = iota
	toSmall
	toNowhere
)

// keep makes consumed bytes go to sink from now on (after the pending ones are flushed).
func (s *stripper) keep(sink int) {
	s.flush()
	s.sink = sink
	if sink == toSmall {
		s.small, s.over = s.small[:0], false
	}
}

// flush moves the consumed bytes from buf[mark:i] to the sink.
func (s *stripper) flush() {
	p := s.buf[s.mark:s.i]
	s.mark = s.i
	switch {
	case s.sink == toOut:
		s.out.write(p)
	case s.sink == toSmall && !s.over:
		if len(s.small)+len(p) > SmallBody {
			s.over = true
			return
		}
		s.small = append(s.small, p...)
	}
}

// maxBlock bounds the blocks StripBodies builds its result in: they start at 4 KiB and
// double up to it.
const maxBlock = 1 << 20

// blocks is a byte sequence that grows by blocks, never copying what it holds, so that
// building a result costs its size once more (when joined), not many times over.
type blocks struct {
	done [][]byte
	cur  []byte
	n    int
}

func (b *blocks) write(p []byte) {
	b.n += len(p)
	for len(p) > 0 {
		if len(b.cur) == cap(b.cur) {
			if b.cur != nil {
				b.done = append(b.done, b.cur)
			}
			b.cur = make([]byte, 0, min(max(2*cap(b.cur), 4<<10), maxBlock))
		}
		k := min(len(p), cap(b.cur)-len(b.cur))
		b.cur = append(b.cur, p[:k]...)
		p = p[k:]
	}
}

// bytes joins the blocks, releasing them.
func (b *blocks) bytes() []byte {
	out := make([]byte, 0, b.n)
	for _, blk := range b.done {
		out = append(out, blk...)
	}
	out = append(out, b.cur...)
	*b = blocks{}
	return out
}

// fill reads more input, keeping buf[i:n] (and buf[pin:i]); it reports false at the end
// of the input.
func (s *stripper) fill() bool {
	if s.err != nil {
		return false
	}
	s.flush()
	from := s.i
	if s.pin >= 0 {
		from = s.pin
	}
	if from > 0 {
		s.n = copy(s.buf, s.buf[from:s.n])
		s.base += int64(from)
		s.i -= from
		s.mark = s.i
		if s.pin >= 0 {
			s.pin = 0
		}
	}
	if s.n == len(s.buf) {
		s.buf = append(s.buf, make([]byte, len(s.buf))...)
	}
	for {
		m, err := s.src.Read(s.buf[s.n:])
		s.n += m
		if err != nil {
			s.err = err
			if !errors.Is(err, io.EOF) {
				s.err = fmt.Errorf("read tape: %w", err)
			}
		}
		if m > 0 || err != nil {
			return m > 0
		}
	}
}

// need makes sure buf[i:] holds at least k bytes; false when the input ends first.
func (s *stripper) need(k int) bool {
	for s.n-s.i < k {
		if !s.fill() {
			return false
		}
	}
	return true
}

func (s *stripper) offset() int64 { return s.base + int64(s.i) }

func (s *stripper) errorf(format string, args ...any) error {
	off := s.offset()
	return fmt.Errorf("tape: not valid JSON at line %d, column %d (byte %d): %s", s.line+1, off-s.lineStart+1, off, fmt.Sprintf(format, args...))
}

// eof is the error for input that ends inside a value.
func (s *stripper) eof() error {
	if s.err != nil && !errors.Is(s.err, io.EOF) {
		return s.err
	}
	return fmt.Errorf("tape: truncated: the JSON ends after %d bytes: %w", s.offset(), io.ErrUnexpectedEOF)
}

// peekNonSpace skips white space and returns the next byte, unconsumed.
func (s *stripper) peekNonSpace() (byte, bool) {
	for {
		j := jsonlex.Space(s.buf[:s.n], s.i)
		if nl := bytes.LastIndexByte(s.buf[s.i:j], '\n'); nl >= 0 {
			s.line += bytes.Count(s.buf[s.i:s.i+nl+1], []byte{'\n'})
			s.lineStart = s.base + int64(s.i+nl+1)
		}
		s.i = j
		if s.i < s.n {
			return s.buf[s.i], true
		}
		if !s.fill() {
			return 0, false
		}
	}
}

func (s *stripper) value(ctx place, depth int) error {
	switch {
	case ctx.is(&threadTable().shape, false):
		s.threads++
	case ctx.is(&stepTable().shape, false):
		s.flush()
		from := s.out.n
		err := s.element(ctx, depth)
		s.flush()
		a := &s.arrays[len(s.arrays)-1]
		a.steps = append(a.steps, span{from, s.out.n})
		return err
	}
	return s.element(ctx, depth)
}

// element scans a value that stands at ctx.
func (s *stripper) element(ctx place, depth int) error {
	c, ok := s.peekNonSpace()
	if !ok {
		return s.eof()
	}
	switch {
	case ctx.cut == cutBody:
		return s.raw(depth)
	case ctx.cut == cutStream && c == '[': // anything else is kept, for the caller to refuse
		s.keep(toNowhere)
		if err := s.value(place{}, depth); err != nil {
			return err
		}
		s.out.write([]byte("[]"))
		s.keep(toOut)
		return nil
	case c == '{':
		return s.object(ctx, depth+1)
	case c == '[':
		return s.array(ctx, depth+1)
	case c == '"':
		s.i++
		return s.str()
	case c == 't':
		return s.literal("true")
	case c == 'f':
		return s.literal("false")
	case c == 'n':
		return s.literal("null")
	case c == '-' || '0' <= c && c <= '9':
		return s.number()
	}
	return s.errorf("unexpected %q looking for a value", c)
}

// raw scans a body, keeping it only when it is small.
func (s *stripper) raw(depth int) error {
	s.keep(toSmall)
	if err := s.value(place{}, depth); err != nil {
		return err
	}
	s.flush()
	if !s.over {
		s.out.write(s.small)
	} else {
		s.out.write([]byte("null"))
	}
	s.keep(toOut)
	return nil
}

func (s *stripper) object(ctx place, depth int) error {
	if depth > maxDepth {
		return s.errorf("nested too deeply")
	}
	s.i++ // {
	c, ok := s.peekNonSpace()
	if !ok {
		return s.eof()
	}
	if c == '}' {
		s.i++
		return nil
	}
	s.path.OpenObject()
	for {
		if c != '"' {
			return s.errorf("unexpected %q looking for a key", c)
		}
		s.i++
		next, err := s.key(ctx)
		if err != nil {
			return err
		}
		if c, ok = s.peekNonSpace(); !ok {
			return s.eof()
		}
		if c != ':' {
			return s.errorf("unexpected %q after a key", c)
		}
		s.i++
		if err := s.value(next, depth); err != nil {
			return err
		}
		if c, ok = s.peekNonSpace(); !ok {
			return s.eof()
		}
		s.i++
		switch c {
		case ',':
			if c, ok = s.peekNonSpace(); !ok {
				return s.eof()
			}
		case '}':
			s.path.Close()
			return nil
		default:
			s.i--
			return s.errorf("unexpected %q after an object value", c)
		}
	}
}

func (s *stripper) array(ctx place, depth int) error {
	if depth > maxDepth {
		return s.errorf("nested too deeply")
	}
	s.i++ // [
	steps := ctx.is(&stepTable().shape, true)
	if steps {
		s.flush()
		s.arrays = append(s.arrays, stepsArray{thread: s.threads - 1, from: s.out.n})
	}
	end := func() {
		if steps {
			s.flush()
			s.arrays[len(s.arrays)-1].to = s.out.n
		}
		s.i++ // ]
	}
	c, ok := s.peekNonSpace()
	if !ok {
		return s.eof()
	}
	if c == ']' {
		end()
		return nil
	}
	s.path.OpenArray()
	for {
		s.path.Elem()
		if err := s.value(item(ctx), depth); err != nil {
			return err
		}
		if c, ok = s.peekNonSpace(); !ok {
			return s.eof()
		}
		switch c {
		case ',':
			s.i++
		case ']':
			s.path.Close()
			end()
			return nil
		default:
			return s.errorf("unexpected %q after an array element", c)
		}
	}
}

// key scans a key of an object at ctx, its opening quote consumed, and returns where its
// value stands. A key that repeats one of the object's is an error.
func (s *stripper) key(ctx place) (place, error) {
	s.pin = s.i
	err := s.str()
	start := s.pin
	s.pin = -1
	if err != nil {
		return place{}, err
	}
	body := s.buf[start : s.i-1]
	var flags jsonlex.Str
	for _, c := range body {
		if c == '\\' {
			flags |= jsonlex.Escaped
		} else if c >= 0x80 {
			flags |= jsonlex.NonASCII
		}
	}
	if first, ok := s.path.Key(body, flags); !ok {
		key := jsonlex.UnquoteString(body)
		off := s.base + int64(start) - 1
		de := &jsonlex.DuplicateKeyError{Pointer: s.path.Member(key), Key: key, First: first, Off: int(off)}
		return place{}, fmt.Errorf("tape: %w (line %d, byte %d)", de, s.line+1, off)
	}
	return child(ctx, body), nil
}

// str scans a string whose opening quote is consumed, through its closing quote.
func (s *stripper) str() error {
	for {
		for s.i < s.n {
			c := s.buf[s.i]
			switch {
			case c == '"':
				s.i++
				return nil
			case c == '\\':
				if err := s.escape(); err != nil {
					return err
				}
			case c < 0x20:
				return s.errorf("control character %q in a string", c)
			default:
				s.i++
			}
		}
		if !s.fill() {
			return s.eof()
		}
	}
}

// escape scans an escape sequence in a string.
func (s *stripper) escape() error {
	if !s.need(2) {
		return s.eof()
	}
	switch s.buf[s.i+1] {
	case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		s.i += 2
		return nil
	case 'u':
		if !s.need(6) {
			return s.eof()
		}
		if jsonlex.Hex4(s.buf[s.i+2:s.i+6]) < 0 {
			return s.errorf("bad \\u escape in a string")
		}
		s.i += 6
		return nil
	}
	return s.errorf("bad escape %q in a string", s.buf[s.i+1])
}

func (s *stripper) literal(lit string) error {
	if !s.need(len(lit)) {
		if string(s.buf[s.i:s.n]) == lit[:s.n-s.i] {
			return s.eof()
		}
		return s.errorf("bad literal, want %s", lit)
	}
	if string(s.buf[s.i:s.i+len(lit)]) != lit {
		return s.errorf("bad literal, want %s", lit)
	}
	s.i += len(lit)
	return nil
}

// number scans a number: it reads on to the end of the bytes a number may hold (digits,
// signs, point, exponent), keeping them in buf, and checks them with JSON's grammar
// (jsonlex.Number). What follows the number is the caller's to check.
func (s *stripper) number() error {
	s.pin = s.i
	n := 0 // bytes of buf[pin:] that may belong to the number
	for (s.pin+n < s.n || s.fill()) && isNumberByte(s.buf[s.pin+n]) {
		n++
	}
	more := s.pin+n < s.n // the input goes on after those bytes
	end, _, err := jsonlex.Number(s.buf[s.pin:s.pin+n], 0)
	s.i, s.pin = s.pin+end, -1
	switch {
	case err == nil:
		return nil
	case !err.EOF:
		return s.errorf("bad number: %s", err.Msg)
	case more:
		return s.errorf("bad number: want a digit, got %s", jsonlex.Char(s.buf[s.i]))
	}
	return s.eof()
}

func isNumberByte(c byte) bool {
	return '0' <= c && c <= '9' || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E'
}
