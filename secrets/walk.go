package secrets

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// frame is one level of the walk: an object (with the member being read) or an array
// (with the element being read).
type frame struct {
	array   bool
	key     string
	index   int
	wantKey bool // an object whose next token is a member name or its end
}

// walker tracks where a streamed JSON document is.
type walker struct {
	stack []frame
}

// pointer returns the JSON pointer (RFC 6901) of the current value.
func (w *walker) pointer() string {
	var b strings.Builder
	for _, f := range w.stack {
		b.WriteByte('/')
		if f.array {
			b.WriteString(strconv.Itoa(f.index))
		} else {
			b.WriteString(escapePointer(f.key))
		}
	}
	return b.String()
}

// field returns the name of the member that holds the current value: for an array
// element, the member that holds the array. Empty at the top level.
func (w *walker) field() string {
	for i := len(w.stack) - 1; i >= 0; i-- {
		if !w.stack[i].array {
			return w.stack[i].key
		}
	}
	return ""
}

// done records that the current value has been read.
func (w *walker) done() {
	if n := len(w.stack); n > 0 {
		if top := &w.stack[n-1]; top.array {
			top.index++
		} else {
			top.wantKey = true
		}
	}
}

var pointerEscaper = strings.NewReplacer("~", "~0", "/", "~1")

func escapePointer(s string) string {
	if !strings.ContainsAny(s, "~/") {
		return s
	}
	return pointerEscaper.Replace(s)
}

// walkStrings reads one JSON document from r as a stream of tokens and calls visit with
// every string value (member names are not values), decoded.
func walkStrings(r io.Reader, visit func(w *walker, value string) error) error {
	dec := json.NewDecoder(r)
	dec.UseNumber()
	w := &walker{}
	started := false
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			if !started {
				return errors.New("read JSON: empty input")
			}
			if len(w.stack) > 0 {
				return fmt.Errorf("read JSON: %w", io.ErrUnexpectedEOF)
			}
			return nil
		}
		if err != nil {
			return fmt.Errorf("read JSON at byte %d: %w", dec.InputOffset(), err)
		}
		started = true
		if n := len(w.stack); n > 0 && w.stack[n-1].wantKey {
			if tok == json.Delim('}') {
				w.stack = w.stack[:n-1]
				w.done()
				continue
			}
			w.stack[n-1].key, _ = tok.(string)
			w.stack[n-1].wantKey = false
			continue
		}
		switch v := tok.(type) {
		case json.Delim:
			switch v {
			case '{':
				w.stack = append(w.stack, frame{wantKey: true})
				continue
			case '[':
				w.stack = append(w.stack, frame{array: true})
				continue
			case ']':
				w.stack = w.stack[:len(w.stack)-1]
			}
		case string:
			if err := visit(w, v); err != nil {
				return err
			}
		}
		w.done()
		if len(w.stack) == 0 {
			// One document: whatever follows is not read.
			return nil
		}
	}
}
