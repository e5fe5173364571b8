package dataset

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/tapebox/tapebox/internal/jsonlex"
	"github.com/tapebox/tapebox/tape"
)

// decodeTape is a fast decoder for tapes. It decodes into the tape package's types
// without reflection, takes raw bodies (json.RawMessage) as slices of data, normalizes like
// tape.Unmarshal, and reports whether data is in canonical encoding, the form of every
// tape file TapeBox writes: exactly what tape.Marshal gives for the tape (the key order
// and omitted fields of the tape types, no whitespace, sorted map keys, encoding/json's
// escapes and number formats, one trailing newline).
//
// It is a fast path, not the reference. It returns an error for anything unusual (an
// unknown field, invalid UTF-8, a value of the wrong kind) and Export then falls back to
// tape.Unmarshal and tape.Marshal; it says canonical only when it has checked every byte.
// Tests hold it to tape.Marshal on generated, golden and randomly mutated tapes, and
// Validate checks exported rows with the reference path.
//
// With lean, the data of stream chunks is checked but not kept (Chunk.Data stays empty):
// the rows count chunks and read nothing else of them.
func decodeTape(data []byte, lean bool) (t *tape.Tape, canonical bool, err error) {
	t, canonical, _, err = decodeTapeLean(data, lean)
	return t, canonical, err
}

// decodeTapeLean is decodeTape that also says whether the tape is complete: a lean
// decoding keeps chunk data once the input shows it is not canonical (its canonical
// encoding will be needed), so only data before that point is missing.
func decodeTapeLean(data []byte, lean bool) (t *tape.Tape, canonical, complete bool, err error) {
	d := &decoder{data: data, lean: lean}
	defer func() { complete = !d.dropped }()
	t = &tape.Tape{}
	threads := func() error {
		if d.nullNormalized() {
			return nil
		}
		t.Threads = []*tape.Thread{}
		return d.array(func() error {
			th := &tape.Thread{}
			t.Threads = append(t.Threads, th)
			return d.thread(th)
		})
	}
	o, err := d.fields(tapeKeys, &t.Version, func() error { return d.meta(&t.Meta) }, threads, optional(d, &t.Digest, true, d.digest))
	if err != nil {
		return nil, false, false, err
	}
	d.check(o, 0b111|bit(3, t.Digest != nil))
	if d.repeated {
		return nil, false, false, d.errorf("a key repeats in an object")
	}
	if len(data)-d.i != 1 || data[d.i] != '\n' {
		d.nonCanon = true // tape.Marshal ends the tape with one newline
		if d.next(); d.i != len(data) {
			return nil, false, false, d.errorf("data after the tape")
		}
	}
	if t.Version != tape.Version {
		return nil, false, false, fmt.Errorf("version %d: %w", t.Version, tape.ErrUnsupportedVersion)
	}
	tape.Normalize(t)
	return t, !d.nonCanon, true, nil
}

// decodeCanonical decodes a tape and returns it with its canonical encoding, which is data
// itself (no copy) when data is canonical, as files TapeBox writes are. A valid tape in
// another form (whitespace, key order, escapes of another encoder) is decoded on the fast
// path too and encoded again with tape.Marshal; only unusual input takes tape.Unmarshal.
// lean is decodeTape's, for canonical data.
func decodeCanonical(data []byte, lean bool) (*tape.Tape, []byte, error) {
	t, canonical, complete, err := decodeTapeLean(data, lean)
	if err == nil && canonical {
		return t, data, nil
	}
	if err == nil && !complete {
		// Valid but written by another tool (other key order or escapes past its start):
		// the canonical encoding needs the chunk data the lean decoding left out.
		t, _, err = decodeTape(data, false)
	}
	if err != nil {
		// Unusual input: the reference decoder decides, and words the error.
		if t, err = tape.Unmarshal(data); err != nil {
			return nil, nil, err
		}
	}
	enc, err := tape.Marshal(t)
	if err != nil {
		return nil, nil, err
	}
	if bytes.Equal(enc, data) {
		enc = data
	}
	return t, enc, nil
}

// decoder reads JSON from data at offset i. nonCanon records the first departure from
// the canonical encoding; decoding goes on, since the tape may still be valid.
type decoder struct {
	data     []byte
	i        int
	nonCanon bool
	// repeated records a key seen twice in one object, anywhere (raw bodies included; keys
	// that differ only in case count, see jsonlex.DuplicateKeyError): tape.Unmarshal then
	// refuses the tape, naming the key's pointer. keys holds the open objects' keys.
	repeated bool
	keys     jsonlex.Path
	// lean leaves stream chunks' data empty (rows only count chunks) while the input is
	// canonical; dropped says some was left out.
	lean, dropped bool
	memo          *threadMemo // of the thread being decoded
}

// threadMemo remembers the thread's previous request as spans of data. A request
// repeats the conversation so far, the system prompt and the tools of the one before it:
// where the bytes are the same, the values decoded from them are taken over instead of
// decoded again, which keeps decoding linear in the length of a conversation.
type threadMemo struct {
	system     []byte // the system string, quotes included
	systemText string
	tools      []byte // the tools array
	toolList   []tape.Tool
	msgSpans   [][]byte
	msgs       []tape.Message
	raw        *rawMemo // the raw body
}

// reuse reports whether span (a complete JSON value from earlier) comes next in data,
// and consumes it if so. A complete value ends itself, so a byte-equal prefix is the
// same value.
func (d *decoder) reuse(span []byte) bool {
	// A number is not complete in itself: 12 is a prefix of 123.
	if len(span) == 0 || (span[len(span)-1] != '}' && span[len(span)-1] != ']' && span[len(span)-1] != '"') {
		return false
	}
	d.next()
	if bytes.HasPrefix(d.data[d.i:], span) {
		d.i += len(span)
		return true
	}
	return false
}

var errUnusual = errors.New("unusual input")

func (d *decoder) errorf(format string, args ...any) error {
	return fmt.Errorf("decode tape at byte %d: %s: %w", d.i, fmt.Sprintf(format, args...), errUnusual)
}

// lexError is errorf for a flaw jsonlex found, at its offset.
func (d *decoder) lexError(err *jsonlex.Error) error {
	d.i = err.Off
	return d.errorf("%s", err.Msg)
}

func (d *decoder) unknown(key []byte) error { return d.errorf("unknown field %q", key) }

// order tracks the keys of one object: the bit of every field seen, and the last field's
// index. Canonical objects list their fields in the order of the Go struct.
type order struct {
	seen uint32
	last int8
}

// field records key index i of the current object.
func (d *decoder) field(o *order, i int8) {
	if o.seen&(1<<i) != 0 {
		d.repeated = true
	}
	if o.seen != 0 && i <= o.last {
		d.nonCanon = true // out of order, or repeated
	}
	o.seen |= 1 << i
	o.last = i
}

// check compares the fields seen with those the canonical encoding has.
func (d *decoder) check(o order, want uint32) {
	if o.seen != want {
		d.nonCanon = true
	}
}

// bit returns 1<<i if present.
func bit(i int8, present bool) uint32 {
	if present {
		return 1 << i
	}
	return 0
}

// next skips whitespace, which the canonical encoding has none of, and returns the byte
// after it, or 0 at the end of data.
func (d *decoder) next() byte {
	if d.i < len(d.data) {
		if c := d.data[d.i]; c > ' ' {
			return c
		}
	}
	if j := jsonlex.Space(d.data, d.i); j != d.i {
		d.i, d.nonCanon = j, true
	}
	if d.i >= len(d.data) {
		return 0
	}
	return d.data[d.i]
}

func (d *decoder) expect(c byte) error {
	if d.next() != c {
		return d.errorf("want %q", c)
	}
	d.i++
	return nil
}

// null consumes a null literal if one comes next.
func (d *decoder) null() bool {
	if d.next() == 'n' && bytes.HasPrefix(d.data[d.i:], []byte("null")) {
		d.i += 4
		return true
	}
	return false
}

// nullNormalized consumes a null where tape.Unmarshal normalizes null to an empty value,
// so that tape.Marshal never writes null there.
func (d *decoder) nullNormalized() bool {
	if d.null() {
		d.nonCanon = true
		return true
	}
	return false
}

// object calls fn for each key, with d positioned at the value, which fn must consume.
func (d *decoder) object(fn func(key []byte) error) error {
	d.keys.OpenObject()
	err := d.members('{', '}', func() error {
		key, err := d.strBytes(false)
		if err != nil {
			return err
		}
		if _, ok := d.keys.Key(key, 0); !ok {
			d.repeated = true
		}
		if err := d.expect(':'); err != nil {
			return err
		}
		return fn(key)
	})
	if err == nil {
		d.keys.Close()
	}
	return err
}

// sortedObject is object for a Go map: canonical keys come sorted, each once.
func (d *decoder) sortedObject(fn func(key []byte) error) error {
	var prev []byte
	first := true
	return d.object(func(key []byte) error {
		if !first && bytes.Compare(prev, key) >= 0 {
			d.nonCanon = true
		}
		first, prev = false, key
		return fn(key)
	})
}

// array calls fn for each element, with d positioned at it.
func (d *decoder) array(fn func() error) error { return d.members('[', ']', fn) }

// members reads an object or an array, between the brackets open and close, calling member
// for each of its members (a key and its value, or an element), with d positioned at it.
func (d *decoder) members(open, close byte, member func() error) error {
	if err := d.expect(open); err != nil {
		return err
	}
	if d.next() == close {
		d.i++
		return nil
	}
	for {
		if err := member(); err != nil {
			return err
		}
		switch d.next() {
		case ',':
			d.i++
		case close:
			d.i++
			return nil
		default:
			return d.errorf("want , or %c", close)
		}
	}
}

// strBytes reads a string. Without escapes the result aliases data; with escapes it is
// a fresh slice. html says the string was encoded with encoding/json's HTML escaping (by
// json.Marshal).
func (d *decoder) strBytes(html bool) ([]byte, error) {
	body, s, err := d.scanStr(html)
	if err != nil || s&jsonlex.Escaped == 0 {
		return body, err
	}
	return jsonlex.Unquote(make([]byte, 0, len(body)), body), nil
}

// scanStr scans the next string (jsonlex.String) and returns its body, the bytes between
// its quotes. Invalid UTF-8 is unusual (encoding/json would replace it). A string is
// canonical when it is as encoding/json writes it: the characters it escapes (U+2028 and
// U+2029, and with html <, > and &) escaped, and every escape one it writes (see
// canonicalEscapes).
func (d *decoder) scanStr(html bool) ([]byte, jsonlex.Str, error) {
	if d.next() != '"' {
		return nil, 0, d.errorf("want %q", '"')
	}
	end, s, lerr := jsonlex.String(d.data, d.i)
	if lerr != nil {
		return nil, s, d.lexError(lerr)
	}
	body := d.data[d.i+1 : end-1]
	if s&jsonlex.NonASCII != 0 {
		if !utf8.Valid(body) {
			return nil, s, d.errorf("invalid UTF-8")
		}
		if bytes.Contains(body, lineSep) || bytes.Contains(body, paraSep) {
			d.nonCanon = true
		}
	}
	if html && bytes.ContainsAny(body, "<>&") {
		d.nonCanon = true
	}
	if s&jsonlex.Escaped != 0 && !d.nonCanon && !canonicalEscapes(body, html) {
		d.nonCanon = true
	}
	d.i = end
	return body, s, nil
}

var (
	lineSep = []byte("\u2028")
	paraSep = []byte("\u2029")
)

// canonicalEscapes reports whether every escape in a string body (checked by
// jsonlex.String) is one encoding/json writes: \" \\ \b \f \n \r \t, or \u in lower-case hex
// for a control character without a short escape, U+2028, U+2029, and with html <, > and &.
// A lone surrogate is never canonical: encoding/json writes U+FFFD for it, as Unquote reads it.
func canonicalEscapes(body []byte, html bool) bool {
	for {
		k := bytes.IndexByte(body, '\\')
		if k < 0 {
			return true
		}
		body = body[k+1:]
		switch body[0] {
		case '"', '\\', 'b', 'f', 'n', 'r', 't':
			body = body[1:]
		case 'u':
			if !canonicalU(body[1:5], jsonlex.Hex4(body[1:5]), html) {
				return false
			}
			body = body[5:]
		default: // '/'
			return false
		}
	}
}

// canonicalU reports whether the \u escape with hex digits h (value r) is one
// encoding/json writes: a control character without a short escape, U+2028, U+2029, or
// with HTML escaping <, > and &, in lower-case hex.
func canonicalU(h []byte, r rune, html bool) bool {
	for _, c := range h {
		if c >= 'A' && c <= 'F' {
			return false
		}
	}
	switch {
	case r < 0x20:
		return r != '\b' && r != '\f' && r != '\n' && r != '\r' && r != '\t'
	case r == '\u2028' || r == '\u2029':
		return true
	case html && (r == '<' || r == '>' || r == '&'):
		return true
	}
	return false
}

// skipStr checks a string value as strBytes does, without keeping it.
func (d *decoder) skipStr() error {
	_, _, err := d.scanStr(false)
	return err
}

// str reads a string value.
func (d *decoder) str() (string, error) {
	body, s, err := d.scanStr(false)
	if err != nil || s&jsonlex.Escaped == 0 {
		return string(body), err
	}
	return jsonlex.UnquoteString(body), nil
}

func (d *decoder) strInto(dst *string) error {
	s, err := d.str()
	*dst = s
	return err
}

// number returns the next number token, checked against the JSON grammar.
func (d *decoder) number() ([]byte, error) {
	d.next()
	end, _, err := jsonlex.Number(d.data, d.i)
	if err != nil {
		return nil, d.lexError(err)
	}
	tok := d.data[d.i:end]
	d.i = end
	return tok, nil
}

// num reads a number into p, an *int64 or a *float64, and checks that the number is in
// its canonical form: strconv's for an integer, encoding/json's for a float.
func (d *decoder) num(p any) error {
	tok, err := d.number()
	if err != nil {
		return err
	}
	var buf [32]byte
	var enc []byte
	switch p := p.(type) {
	case *int64:
		*p, err = strconv.ParseInt(string(tok), 10, 64)
		enc = strconv.AppendInt(buf[:0], *p, 10)
	case *float64:
		*p, err = strconv.ParseFloat(string(tok), 64)
		enc, _ = jsonlex.AppendFloat(buf[:0], *p) // ParseFloat gives no NaN or infinity
	default:
		panic("dataset: decode a number into neither an *int64 nor a *float64")
	}
	if err != nil {
		return d.errorf("%v", err)
	}
	if string(enc) != string(tok) {
		d.nonCanon = true
	}
	return nil
}

func (d *decoder) boolean() (bool, error) {
	d.next()
	switch {
	case bytes.HasPrefix(d.data[d.i:], []byte("true")):
		d.i += 4
		return true, nil
	case bytes.HasPrefix(d.data[d.i:], []byte("false")):
		d.i += 5
		return false, nil
	}
	return false, d.errorf("want a boolean")
}

func (d *decoder) time() (time.Time, error) {
	d.next()
	start := d.i
	if _, err := d.strBytes(false); err != nil {
		return time.Time{}, err
	}
	var t time.Time
	if err := t.UnmarshalJSON(d.data[start:d.i]); err != nil {
		return time.Time{}, d.errorf("%v", err)
	}
	if b, err := t.UTC().MarshalJSON(); err != nil || string(b) != string(d.data[start:d.i]) {
		d.nonCanon = true
	}
	return t, nil
}

// raw returns the next value as it is in data (no copy). A null gives "null", as
// encoding/json gives a json.RawMessage field. Canonical raw values are compact.
func (d *decoder) raw() (json.RawMessage, error) {
	d.next()
	start := d.i
	if err := d.skip(); err != nil {
		return nil, err
	}
	return json.RawMessage(d.data[start:d.i]), nil
}

// skip consumes one value, checking it against the JSON grammar (encoding/json would
// refuse to encode an invalid raw value). Strings inside raw values are not decoded:
// encoding/json keeps them as they are.
func (d *decoder) skip() error {
	switch c := d.next(); {
	case c == '{':
		return d.object(func([]byte) error { return d.skip() })
	case c == '[':
		return d.array(d.skip)
	case c == '"':
		end, _, err := jsonlex.String(d.data, d.i)
		if err != nil {
			return d.lexError(err)
		}
		d.i = end
		return nil
	case c == 't' || c == 'f':
		_, err := d.boolean()
		return err
	case c == 'n':
		if d.null() {
			return nil
		}
	case c == '-' || (c >= '0' && c <= '9'):
		_, err := d.number()
		return err
	}
	return d.errorf("want a value")
}

// fields reads an object whose keys are among names, each into the target at its place
// (see read), and returns the order of the keys for check; an unknown key is an error.
// Canonical keys come in the order of names, so the next one is tried first.
func (d *decoder) fields(names []string, targets ...any) (order, error) {
	var o order
	next := 0
	err := d.object(func(key []byte) error {
		i := next
		if i >= len(names) || names[i] != string(key) {
			if i = slices.Index(names, string(key)); i < 0 {
				return d.unknown(key)
			}
		}
		next = i + 1
		d.field(&o, int8(i))
		return d.read(targets[i])
	})
	return o, err
}

// read reads a value into target: a *string, *tape.Provider or *tape.EndReason; an *int
// or *int64; a *float64, or a **float64 (null: nil); a *bool; a *time.Time; a
// *json.RawMessage (as raw); a *map[string]string or *tape.Headers; a *[]tape.Block (null
// normalized) or *blockContent (null: nil); a chunk's *chunkData; one of the tape's
// objects or lists of them that a step holds; or a func() error that reads the value
// itself. (Pointers rather than closures where a tape has many: a closure would be
// allocated for each value.)
func (d *decoder) read(target any) error {
	var err error
	switch p := target.(type) {
	case *string:
		*p, err = d.str()
	case *tape.Provider:
		var v string
		v, err = d.str()
		*p = tape.Provider(v)
	case *tape.EndReason:
		var v string
		v, err = d.str()
		*p = tape.EndReason(v)
	case *int64, *float64:
		err = d.num(p)
	case *int:
		var v int64
		err = d.num(&v)
		*p = int(v)
	case **float64:
		err = d.optFloat(p)
	case *bool:
		*p, err = d.boolean()
	case *time.Time:
		*p, err = d.time()
	case *json.RawMessage:
		*p, err = d.raw()
	case *map[string]string:
		err = d.stringMap(p)
	case *tape.Headers:
		err = d.headers(p)
	case *[]tape.Block:
		if !d.nullNormalized() {
			err = d.blocks(p)
		}
	case *blockContent:
		err = d.blocks((*[]tape.Block)(p))
	case *chunkData:
		if d.lean && !d.nonCanon {
			d.dropped = true
			return d.skipStr()
		}
		err = d.strInto((*string)(p))
	case *tape.Request:
		err = d.request(p)
	case *tape.Response:
		err = d.response(p)
	case *tape.Timing:
		err = d.timing(p)
	case *tape.Usage:
		err = d.usage(p)
	case *[]tape.ToolCall:
		err = list(d, p, d.toolCall)
	case *[]tape.ToolResult:
		err = list(d, p, d.toolResult)
	case *[]tape.Chunk:
		err = list(d, p, d.chunk)
	case func() error:
		err = p()
	default:
		panic("dataset: decode: a target of a type without a reader")
	}
	return err
}

// blockContent is a block's content: null is nil, without normalizing.
type blockContent []tape.Block

// chunkData is a chunk's data, which a lean decoding of canonical input checks but does
// not keep.
type chunkData string

// list reads an array into *dst with elem (null normalized: *dst stays nil).
func list[T any](d *decoder, dst *[]T, elem func(*T) error) error {
	if d.nullNormalized() {
		return nil
	}
	*dst = []T{}
	return d.array(func() error {
		var zero T
		*dst = append(*dst, zero)
		return elem(&(*dst)[len(*dst)-1])
	})
}

// optional reads a value into a fresh *T with read; null gives nil, and with omitted (a
// field omitted when nil) is not canonical.
func optional[T any](d *decoder, dst **T, omitted bool, read func(*T) error) func() error {
	return func() error {
		if omitted && d.nullNormalized() || !omitted && d.null() {
			*dst = nil
			return nil
		}
		*dst = new(T)
		return read(*dst)
	}
}

var (
	tapeKeys       = []string{"version", "meta", "threads", "digest"}
	metaKeys       = []string{"tape_id", "harness", "harness_version", "provider", "model", "cwd", "started_at", "task", "replay_of", "labels", "workspace", "limits", "forked_from", "ended", "redactions"}
	workspaceKeys  = []string{"snapshot", "digest", "size", "files", "bytes", "exclude", "end"}
	fileEntryKeys  = []string{"path", "type", "mode", "size", "sha256", "link"}
	forkedFromKeys = []string{"tape_id", "thread", "step", "served", "overrides"}
	endedKeys      = []string{"reason", "at", "detail", "limit"}
	threadKeys     = []string{"id", "parent", "steps"}
	stepKeys       = []string{"request", "response", "tool_calls", "tool_results", "timing", "served_from_tape", "digest"}
	toolCallKeys   = []string{"id", "name", "input", "kind", "namespace"}
	toolResultKeys = []string{"tool_call_id", "content", "is_error", "duration_ms", "copied_from_tape"}
	timingKeys     = []string{"request_at", "first_byte_at", "last_byte_at", "next_request_at"}
	requestKeys    = []string{"path", "system", "messages", "tools", "params", "stream", "headers", "raw"}
	messageKeys    = []string{"role", "content"}
	toolKeys       = []string{"name", "description", "kind", "input_schema"}
	responseKeys   = []string{"status", "headers", "content", "stop_reason", "usage", "raw", "chunks"}
	usageKeys      = []string{"input_tokens", "output_tokens", "cache_read_input_tokens", "cache_creation_input_tokens", "reasoning_tokens"}
	chunkKeys      = []string{"at_ms", "data"}
	blockKeys      = []string{"type", "text", "id", "name", "input", "tool_call_id", "content", "is_error", "raw"}
	redactionKeys  = []string{"rule", "pointer"}
	limitsKeys     = []string{"max_cost_usd", "max_steps", "max_thread_steps", "max_tokens", "max_repeat"}
	digestKeys     = []string{"algorithm", "meta", "root", "public_key", "signature"}
)

func (d *decoder) stringMap(m *map[string]string) error {
	if d.nullNormalized() {
		*m = nil
		return nil
	}
	*m = map[string]string{}
	return d.sortedObject(func(key []byte) error {
		v, err := d.str()
		(*m)[string(key)] = v
		return err
	})
}

func (d *decoder) headers(h *tape.Headers) error {
	var m map[string]string
	err := d.stringMap(&m)
	*h = m
	return err
}

func (d *decoder) meta(m *tape.Meta) error {
	o, err := d.fields(metaKeys, &m.TapeID, &m.Harness, &m.HarnessVersion, &m.Provider, &m.Model, &m.Cwd,
		&m.StartedAt, &m.Task, optional(d, &m.ReplayOf, false, d.strInto), &m.Labels, optional(d, &m.Workspace, true, d.workspace),
		optional(d, &m.Limits, true, d.limits), optional(d, &m.ForkedFrom, true, d.forkedFrom), optional(d, &m.Ended, false, d.ended),
		func() error {
			return list(d, &m.Redactions, func(r *tape.Redaction) error {
				o, err := d.fields(redactionKeys, &r.Rule, &r.Pointer)
				d.check(o, 0b11)
				return err
			})
		})
	d.check(o, 0b10_0011_1101_1111|bit(5, m.Cwd != "")|bit(10, m.Workspace != nil)|bit(11, m.Limits != nil)|bit(12, m.ForkedFrom != nil)|bit(14, len(m.Redactions) > 0))
	return err
}

// workspace reads meta.workspace, whose every field is omitted when empty.
func (d *decoder) workspace(w *tape.Workspace) error {
	// Exclude is omitted when empty, End when nil (an empty end manifest is []); a null is
	// not canonical.
	exclude := func() error { return list(d, &w.Exclude, d.strInto) }
	end := func() error { return list(d, &w.End, d.fileEntry) }
	o, err := d.fields(workspaceKeys, &w.Snapshot, &w.Digest, &w.Size, &w.Files, &w.Bytes, exclude, end)
	d.check(o, bit(0, w.Snapshot != "")|bit(1, w.Digest != "")|bit(2, w.Size != 0)|bit(3, w.Files != 0)|
		bit(4, w.Bytes != 0)|bit(5, len(w.Exclude) > 0)|bit(6, w.End != nil))
	return err
}

// fileEntry reads one entry of the end manifest.
func (d *decoder) fileEntry(e *tape.FileEntry) error {
	o, err := d.fields(fileEntryKeys, &e.Path, &e.Type, &e.Mode, &e.Size, &e.SHA256, &e.Link)
	d.check(o, 0b1111|bit(4, e.SHA256 != "")|bit(5, e.Link != ""))
	return err
}

// forkedFrom reads meta.forked_from, every field of which is always there.
func (d *decoder) forkedFrom(f *tape.ForkedFrom) error {
	served := func() error {
		f.Served = map[string]int{}
		return d.sortedObject(func(key []byte) error {
			var n int64
			err := d.num(&n)
			f.Served[string(key)] = int(n)
			return err
		})
	}
	o, err := d.fields(forkedFromKeys, &f.TapeID, &f.Thread, &f.Step, served, &f.Overrides)
	d.check(o, 0b1_1111)
	return err
}

func (d *decoder) ended(e *tape.Ended) error {
	o, err := d.fields(endedKeys, &e.Reason, &e.At, &e.Detail, &e.Limit)
	d.check(o, 0b11|bit(2, e.Detail != "")|bit(3, e.Limit != ""))
	return err
}

func (d *decoder) thread(th *tape.Thread) error {
	steps := func() error {
		if d.nullNormalized() {
			return nil
		}
		th.Steps = []*tape.Step{}
		d.memo = &threadMemo{}
		defer func() { d.memo = nil }()
		return d.array(func() error {
			s := &tape.Step{}
			th.Steps = append(th.Steps, s)
			return d.step(s)
		})
	}
	o, err := d.fields(threadKeys, &th.ID, optional(d, &th.Parent, false, d.parent), steps)
	d.check(o, 0b111)
	return err
}

// parent reads a thread's parent, a [thread id, tool call id] pair.
func (d *decoder) parent(p *tape.Parent) error {
	// Parent.MarshalJSON uses json.Marshal, which escapes HTML.
	var pair []string
	if err := d.array(func() error {
		b, err := d.strBytes(true)
		pair = append(pair, string(b))
		return err
	}); err != nil {
		return err
	}
	if len(pair) != 2 {
		return d.errorf("parent: want [thread id, tool call id]")
	}
	p.ThreadID, p.ToolCallID = pair[0], pair[1]
	return nil
}

func (d *decoder) step(s *tape.Step) error {
	o, err := d.fields(stepKeys, &s.Request, &s.Response, &s.ToolCalls, &s.ToolResults, &s.Timing, &s.ServedFromTape, &s.Digest)
	d.check(o, 0b1_1111|bit(5, s.ServedFromTape)|bit(6, s.Digest != ""))
	return err
}

func (d *decoder) toolCall(c *tape.ToolCall) error {
	o, err := d.fields(toolCallKeys, &c.ID, &c.Name, &c.Input, &c.Kind, &c.Namespace)
	d.check(o, 0b111|bit(3, c.Kind != "")|bit(4, c.Namespace != ""))
	return err
}

func (d *decoder) toolResult(r *tape.ToolResult) error {
	o, err := d.fields(toolResultKeys, &r.ToolCallID, &r.Content, &r.IsError, &r.DurationMS, &r.CopiedFromTape)
	d.check(o, 0b1111|bit(4, r.CopiedFromTape))
	return err
}

func (d *decoder) timing(t *tape.Timing) error {
	o, err := d.fields(timingKeys, &t.RequestAt, &t.FirstByteAt, &t.LastByteAt, &t.NextRequestAt)
	d.check(o, 0b1111)
	return err
}

func (d *decoder) optFloat(dst **float64) error {
	if d.null() {
		*dst = nil
		return nil
	}
	var v float64
	err := d.num(&v)
	*dst = &v
	return err
}

func (d *decoder) request(r *tape.Request) error {
	system := func() error {
		return reused(d, &r.System, func(m *threadMemo) (*[]byte, *string) { return &m.system, &m.systemText }, d.strInto)
	}
	messages := func() error {
		if d.nullNormalized() {
			return nil
		}
		r.Messages = []tape.Message{}
		var spans [][]byte
		err := d.array(func() error {
			k := len(r.Messages)
			if m := d.memo; m != nil && k < len(m.msgSpans) && d.reuse(m.msgSpans[k]) {
				r.Messages = append(r.Messages, m.msgs[k])
				spans = append(spans, m.msgSpans[k])
				return nil
			}
			d.next()
			start := d.i
			r.Messages = append(r.Messages, tape.Message{})
			err := d.message(&r.Messages[k])
			spans = append(spans, d.data[start:d.i])
			return err
		})
		if m := d.memo; m != nil && err == nil {
			m.msgSpans, m.msgs = spans, r.Messages
		}
		return err
	}
	tools := func() error {
		return reused(d, &r.Tools, func(m *threadMemo) (*[]byte, *[]tape.Tool) { return &m.tools, &m.toolList },
			func(tools *[]tape.Tool) error { return list(d, tools, d.tool) })
	}
	params := func() error {
		if d.nullNormalized() {
			return nil
		}
		r.Params = map[string]json.RawMessage{}
		return d.sortedObject(func(key []byte) error {
			v, err := d.raw()
			r.Params[string(key)] = v
			return err
		})
	}
	raw := func() (err error) {
		if m := d.memo; m != nil {
			r.Raw, m.raw, err = d.rawReusing(m.raw)
		} else {
			r.Raw, err = d.raw()
		}
		return err
	}
	o, err := d.fields(requestKeys, &r.Path, system, messages, tools, params, &r.Stream, &r.Headers, raw)
	d.check(o, 0b1111_1111)
	return err
}

// reused reads a value of a request into dst with read, unless the thread's previous
// request had the same bytes there: then it takes over the value decoded from them. at
// gives where the memo keeps those bytes and that value, which it updates for the next
// request.
func reused[T any](d *decoder, dst *T, at func(*threadMemo) (span *[]byte, val *T), read func(*T) error) error {
	m := d.memo
	if m == nil {
		return read(dst)
	}
	span, val := at(m)
	if d.reuse(*span) {
		*dst = *val
		return nil
	}
	d.next()
	start := d.i
	err := read(dst)
	if err == nil {
		*span, *val = d.data[start:d.i], *dst
	}
	return err
}

func (d *decoder) message(m *tape.Message) error {
	o, err := d.fields(messageKeys, &m.Role, &m.Content)
	d.check(o, 0b11)
	return err
}

func (d *decoder) tool(t *tape.Tool) error {
	o, err := d.fields(toolKeys, &t.Name, &t.Description, &t.Kind, &t.InputSchema)
	d.check(o, 0b101|bit(1, t.Description != "")|bit(3, len(t.InputSchema) > 0))
	return err
}

func (d *decoder) response(r *tape.Response) error {
	o, err := d.fields(responseKeys, &r.Status, &r.Headers, &r.Content, &r.StopReason, &r.Usage, &r.Raw, &r.Chunks)
	d.check(o, 0b111_1111)
	return err
}

func (d *decoder) usage(u *tape.Usage) error {
	o, err := d.fields(usageKeys, &u.InputTokens, &u.OutputTokens, &u.CacheReadInputTokens, &u.CacheCreationInputTokens, &u.ReasoningTokens)
	d.check(o, 0b1_1111)
	return err
}

func (d *decoder) chunk(c *tape.Chunk) error {
	o, err := d.fields(chunkKeys, &c.AtMS, (*chunkData)(&c.Data))
	d.check(o, 0b11)
	return err
}

// blocks reads a list of blocks; null gives nil.
func (d *decoder) blocks(dst *[]tape.Block) error {
	if d.null() {
		*dst = nil
		return nil
	}
	*dst = []tape.Block{}
	return d.array(func() error {
		*dst = append(*dst, tape.Block{})
		return d.block(&(*dst)[len(*dst)-1]) // in place: a block read through a pointer escapes
	})
}

func (d *decoder) block(b *tape.Block) error {
	o, err := d.fields(blockKeys, &b.Type, &b.Text, &b.ID, &b.Name, &b.Input, &b.ToolCallID, (*blockContent)(&b.Content), &b.IsError, &b.Raw)
	// Every field but type is omitted when empty.
	d.check(o, 1|bit(1, b.Text != "")|bit(2, b.ID != "")|bit(3, b.Name != "")|bit(4, len(b.Input) > 0)|
		bit(5, b.ToolCallID != "")|bit(6, len(b.Content) > 0)|bit(7, b.IsError)|bit(8, len(b.Raw) > 0))
	return err
}

// rawMemo remembers a raw request body (a JSON object) as spans of data: each member's
// value and, for an array value, each element. The next request of the thread repeats
// most of them (the conversation so far, the system prompt, the tools); those are taken
// over with one comparison of bytes instead of being scanned again.
type rawMemo struct {
	keys  [][]byte
	vals  [][]byte
	elems [][][]byte // element spans of array values, nil for other values
}

// rawReusing is raw for a request body, reusing what prev (the thread's previous body,
// or nil) holds, and returns the memo of this body for the next.
func (d *decoder) rawReusing(prev *rawMemo) (json.RawMessage, *rawMemo, error) {
	if d.next() != '{' {
		v, err := d.raw()
		return v, nil, err
	}
	start := d.i
	m := &rawMemo{}
	if prev != nil {
		m.keys = make([][]byte, 0, len(prev.keys))
		m.vals = make([][]byte, 0, len(prev.keys))
		m.elems = make([][][]byte, 0, len(prev.keys))
	}
	err := d.object(func(key []byte) error {
		var cand []byte
		var candElems [][]byte
		if prev != nil {
			// Members mostly come in the same order: look where this one was first.
			n := len(m.keys)
			for j := range prev.keys {
				k := (n + j) % len(prev.keys)
				if bytes.Equal(prev.keys[k], key) {
					cand, candElems = prev.vals[k], prev.elems[k]
					break
				}
			}
		}
		d.next()
		vs := d.i
		var elems [][]byte
		var err error
		switch {
		case d.reuse(cand):
			elems = candElems
		case d.i < len(d.data) && d.data[d.i] == '[':
			elems = make([][]byte, 0, len(candElems)+2)
			err = d.array(func() error {
				k := len(elems)
				if k < len(candElems) && d.reuse(candElems[k]) {
					elems = append(elems, candElems[k])
					return nil
				}
				d.next()
				es := d.i
				err := d.skip()
				elems = append(elems, d.data[es:d.i])
				return err
			})
		default:
			err = d.skip()
		}
		m.keys = append(m.keys, key)
		m.vals = append(m.vals, d.data[vs:d.i])
		m.elems = append(m.elems, elems)
		return err
	})
	if err != nil {
		return nil, nil, err
	}
	return json.RawMessage(d.data[start:d.i]), m, nil
}

// limits reads meta.limits, whose every field is omitted when zero.
func (d *decoder) limits(l *tape.Limits) error {
	o, err := d.fields(limitsKeys, &l.MaxCostUSD, &l.MaxSteps, &l.MaxThreadSteps, &l.MaxTokens, &l.MaxRepeat)
	d.check(o, bit(0, l.MaxCostUSD != 0)|bit(1, l.MaxSteps != 0)|bit(2, l.MaxThreadSteps != 0)|bit(3, l.MaxTokens != 0)|bit(4, l.MaxRepeat != 0))
	return err
}

// digest reads the tape's digest record, whose key and signature are omitted when unsigned.
func (d *decoder) digest(g *tape.Digest) error {
	o, err := d.fields(digestKeys, &g.Algorithm, &g.Meta, &g.Root, &g.PublicKey, &g.Signature)
	d.check(o, 0b111|bit(3, g.PublicKey != "")|bit(4, g.Signature != ""))
	return err
}
