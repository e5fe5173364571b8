package secrets

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"unsafe"

	"github.com/tapebox/tapebox/internal/jsonlex"
)

// frame is one level of the walk: an object (with the member being read) or an array
// (with the element being read).
type frame struct {
	array bool
	key   string
	index int
	// memo is set on a container the walk is recording for its containerMemo.
	memo *memoRecord
}

// walker tracks where a JSON document is.
type walker struct {
	stack []frame
	// inKey is true while the string visited is a member name (the last frame's key)
	// rather than a value.
	inKey bool
	// cm, when set, lets the walk pass over containers it has walked before.
	cm containerMemo
}

// containerMemo lets a walk pass over a container (an object or an array, an element of
// an array) whose bytes it has walked before in the same document, as a tape repeats its
// conversation in every request: the visits it would make are replaced by their result.
type containerMemo interface {
	// lookup is called at a container data[start:end] that is an element of an array; it
	// returns true when it has the container's result and has added it at w's place.
	lookup(w *walker, data []byte, start, end int) (replayed bool, rec *memoRecord)
	// store is called when the container that rec records, at the top of w's stack,
	// has been walked to its end.
	store(w *walker, rec *memoRecord)
}

// memoRecord is a container being walked for a containerMemo.
type memoRecord struct {
	key        uint64
	field      string
	start, end int
	depth      int
	mark       int // the visitor's state at the start (its findings so far)
}

// pointerOf returns the JSON pointer of the value that frames lead to.
func pointerOf(frames []frame) string {
	var b strings.Builder
	for _, f := range frames {
		b.WriteByte('/')
		if f.array {
			b.WriteString(strconv.Itoa(f.index))
		} else {
			b.WriteString(escapePointer(f.key))
		}
	}
	return b.String()
}

// pointer returns the JSON pointer (RFC 6901) of the current value; for a member name,
// the pointer of its member.
func (w *walker) pointer() string { return pointerOf(w.stack) }

// field returns the name of the member that holds the current value: for an array
// element, the member that holds the array; for a member name, the member that holds its
// object. Empty at the top level.
func (w *walker) field() string {
	n := len(w.stack)
	if w.inKey {
		n--
	}
	for i := n - 1; i >= 0; i-- {
		if !w.stack[i].array {
			return w.stack[i].key
		}
	}
	return ""
}

var pointerEscaper = strings.NewReplacer("~", "~0", "/", "~1")

func escapePointer(s string) string {
	if !strings.ContainsAny(s, "~/") {
		return s
	}
	return pointerEscaper.Replace(s)
}

// walkStrings reads one JSON document from r and calls visit with every string value
// (member names are not values), decoded.
func walkStrings(r io.Reader, visit func(w *walker, value string) error) error {
	data, err := io.ReadAll(r)
	if err != nil {
		return fmt.Errorf("read JSON: %w", err)
	}
	return walkJSON(data, func(w *walker, value string) error {
		if w.inKey {
			return nil
		}
		return visit(w, value)
	})
}

// A walk with a containerMemo looks containers up when they are elements of an array at
// least memoDepth deep (the messages of a request body, the blocks of a message, tool
// definitions; not a tape's steps, /threads/N/steps/M, which never repeat: looking them
// up cost a pass over every byte and its hash) and at least containerMin bytes long.
const memoDepth = 5

var containerMin = 256

// walkJSON walks the one JSON document in data (whitespace around it allowed, nothing
// else after it read) and calls visit with every string in it, member names included
// (w.inKey set), decoded as encoding/json decodes them. The value passed to visit is valid
// only during the call: it may share memory with data or with a buffer the walk reuses.
// An error names the byte offset, line and column.
func walkJSON(data []byte, visit func(w *walker, value string) error) error {
	return walkJSONMemo(data, nil, visit)
}

// walkJSONMemo is walkJSON with a containerMemo (none when cm is nil).
func walkJSONMemo(data []byte, cm containerMemo, visit func(w *walker, value string) error) error {
	i := jsonlex.Space(data, 0)
	if i >= len(data) {
		return errors.New("read JSON: empty input")
	}
	return walkFrom(data, i, &walker{cm: cm}, -1, visit)
}

// errPartMismatch says that a part of a document (splitJSON) did not end where the split
// said it would: the document is not valid JSON, and is walked whole instead, for the
// error a walk of the whole document gives.
var errPartMismatch = errors.New("read JSON: a part of the document does not end where it was split")

// walkPart walks one part of data (see splitJSON) as walkJSON walks it within the whole
// document: with the same pointers and member names.
func walkPart(data []byte, p part, cm containerMemo, visit func(w *walker, value string) error) error {
	w := &walker{stack: slices.Clone(p.stack), cm: cm}
	if p.keyOnly {
		w.inKey = true
		return visit(w, w.stack[len(w.stack)-1].key)
	}
	if len(w.stack) == 0 {
		return walkFrom(data, p.start, w, -1, visit)
	}
	return walkFrom(data, p.start, w, p.end, visit)
}

// walkFrom walks from data[i]: with end < 0, the value there (the whole document: w's
// stack is empty); otherwise the members or elements of the container on top of w's
// stack from the one at i (a member name for an object, a value for an array) to the one
// that ends at end.
func walkFrom(data []byte, i int, w *walker, end int, visit func(w *walker, value string) error) error {
	var scratch []byte
	str := func(i int) (string, int, error) {
		end, f, lerr := jsonlex.String(data, i)
		if lerr != nil {
			return "", end, lexError(data, lerr)
		}
		body := data[i+1 : end-1]
		if f.Plain(body) {
			return unsafe.String(unsafe.SliceData(body), len(body)), end, nil
		}
		scratch = jsonlex.Unquote(scratch[:0], body)
		return unsafe.String(unsafe.SliceData(scratch), len(scratch)), end, nil
	}
	base := len(w.stack)
	if end >= 0 && !w.stack[base-1].array {
		var err error
		if i, err = memberName(data, i, w, str, visit); err != nil {
			return err
		}
	}
	// expectValue: the next token is a value; otherwise it is what follows a value (or a
	// member name in an object just opened).
	for {
		// A value at data[i].
		if i >= len(data) {
			return fmt.Errorf("read JSON: %w", io.ErrUnexpectedEOF)
		}
		switch c := data[i]; c {
		case '"':
			v, end, err := str(i)
			if err != nil {
				return err
			}
			if err := visit(w, v); err != nil {
				return err
			}
			i = end
		case '{', '[':
			if len(w.stack) >= jsonlex.MaxDepth {
				return fmt.Errorf("read JSON at %s: nested deeper than %d", where(data, i), jsonlex.MaxDepth)
			}
			var rec *memoRecord
			if w.cm != nil && len(w.stack) >= memoDepth && w.stack[len(w.stack)-1].array {
				if e, ok := jsonlex.SkipTrusted(data, i); ok && e-i >= containerMin {
					var replayed bool
					if replayed, rec = w.cm.lookup(w, data, i, e); replayed {
						i = e
						break
					}
				}
			}
			i = jsonlex.Space(data, i+1)
			if c == '[' {
				if i < len(data) && data[i] == ']' {
					i++
					break
				}
				w.stack = append(w.stack, frame{array: true, memo: rec})
				continue
			}
			if i < len(data) && data[i] == '}' {
				i++
				break
			}
			w.stack = append(w.stack, frame{memo: rec})
			var err error
			if i, err = memberName(data, i, w, str, visit); err != nil {
				return err
			}
			continue
		default:
			end, lerr := jsonlex.Skip(data, i) // a number or a literal
			if lerr != nil {
				return lexError(data, lerr)
			}
			i = end
		}
		// After a value: ',' or the end of the containers it closes.
		for {
			if len(w.stack) == base {
				if end < 0 {
					return nil // one document: whatever follows is not read
				}
				if i == end {
					return nil // the part's last value
				}
				if i > end {
					return errPartMismatch
				}
			}
			i = jsonlex.Space(data, i)
			if i >= len(data) {
				return fmt.Errorf("read JSON: %w", io.ErrUnexpectedEOF)
			}
			top := &w.stack[len(w.stack)-1]
			c := data[i]
			if c == ',' {
				i = jsonlex.Space(data, i+1)
				if top.array {
					top.index++
				} else {
					var err error
					if i, err = memberName(data, i, w, str, visit); err != nil {
						return err
					}
				}
				break
			}
			if (top.array && c == ']') || (!top.array && c == '}') {
				if len(w.stack) == base {
					return errPartMismatch // the part's container closed before its end
				}
				i++
				if top.memo != nil && top.memo.end == i {
					w.cm.store(w, top.memo)
				}
				w.stack = w.stack[:len(w.stack)-1]
				continue
			}
			return fmt.Errorf("read JSON at %s: invalid character %s after a value", where(data, i), jsonlex.Char(c))
		}
	}
}

// memberName reads a member name and its colon at data[i], makes it the key of the top
// frame, visits it, and returns the offset of the member's value.
func memberName(data []byte, i int, w *walker, str func(int) (string, int, error), visit func(*walker, string) error) (int, error) {
	if i >= len(data) {
		return i, fmt.Errorf("read JSON: %w", io.ErrUnexpectedEOF)
	}
	if data[i] != '"' {
		return i, fmt.Errorf("read JSON at %s: invalid character %s looking for an object key", where(data, i), jsonlex.Char(data[i]))
	}
	k, end, err := str(i)
	if err != nil {
		return end, err
	}
	top := &w.stack[len(w.stack)-1]
	if end-i-2 == len(k) && unsafe.StringData(k) == &data[i+1] {
		top.key = k // shares data, which outlives the walk
	} else {
		top.key = strings.Clone(k)
	}
	w.inKey = true
	err = visit(w, top.key)
	w.inKey = false
	if err != nil {
		return end, err
	}
	i = jsonlex.Space(data, end)
	if i >= len(data) {
		return i, fmt.Errorf("read JSON: %w", io.ErrUnexpectedEOF)
	}
	if data[i] != ':' {
		return i, fmt.Errorf("read JSON at %s: invalid character %s after an object key", where(data, i), jsonlex.Char(data[i]))
	}
	return jsonlex.Space(data, i+1), nil
}

func lexError(data []byte, e *jsonlex.Error) error {
	return fmt.Errorf("read JSON at %s: %s", where(data, e.Off), e.Msg)
}

// where formats a byte offset of data as "byte N (line L, column C)".
func where(data []byte, off int) string {
	line, col := jsonlex.LineCol(data, off)
	return fmt.Sprintf("byte %d (line %d, column %d)", off, line, col)
}
