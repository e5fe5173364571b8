package term

import (
	"bytes"
	"io"
	"os"
	"sync"
	"unicode/utf8"
)

// Writer is the one way TapeBox's command line writes to its standard output and error:
// everything written through it reaches the underlying writer with its control characters
// other than newline and tab (C0, DEL, C1: ESC, BEL, CSI ...) written as \u escapes, and its
// bytes that are not UTF-8 as \x escapes, as Printable does. What a tape holds (its meta,
// thread ids, tool names, outputs) or a sandbox's command wrote then cannot retitle the
// terminal, write to the clipboard (OSC 52) or redraw what it shows, whichever path prints
// it. A \u escape is also a JSON string escape, so JSON printed through a Writer stays valid
// JSON with the same value.
//
// A UTF-8 sequence split across two writes is held until the next Write or Flush. A Writer
// is safe for concurrent use; a single Write is passed on in one Write of the underlying
// writer.
type Writer struct {
	w       io.Writer
	mu      sync.Mutex
	pending []byte // the start of a UTF-8 sequence that the next Write may complete
}

// NewWriter returns a Writer on w; w itself when it is one already.
func NewWriter(w io.Writer) *Writer {
	if tw, ok := w.(*Writer); ok {
		return tw
	}
	return &Writer{w: w}
}

// Raw is the writer under w when w is a Writer, else w: for the program's own control
// sequences (a progress line redrawn in place, whose text goes through Printable) and for
// output that must stay byte for byte, such as a harness's own terminal. Never for text that
// a tape or a sandbox wrote.
func Raw(w io.Writer) io.Writer {
	if tw, ok := w.(*Writer); ok {
		return tw.w
	}
	return w
}

// IsTerminal reports whether w, or the writer under it (Raw), is a terminal (a character
// device).
func IsTerminal(w io.Writer) bool {
	f, ok := Raw(w).(*os.File)
	if !ok {
		return false
	}
	info, err := f.Stat()
	return err == nil && info.Mode()&os.ModeCharDevice != 0
}

// Write escapes p and writes it. It returns len(p) when the underlying Write succeeds.
func (w *Writer) Write(p []byte) (int, error) {
	n := len(p)
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.pending) > 0 {
		p = append(w.pending, p...)
		w.pending = nil
	}
	// Hold a trailing sequence that is not complete yet (a rune split by a buffer).
	cut := len(p)
	for i := len(p) - 1; i >= 0 && i >= len(p)-utf8.UTFMax+1; i-- {
		if utf8.RuneStart(p[i]) {
			if !utf8.FullRune(p[i:]) {
				cut = i
			}
			break
		}
	}
	if cut < len(p) {
		w.pending = bytes.Clone(p[cut:])
		p = p[:cut]
	}
	if len(p) == 0 {
		return n, nil
	}
	if _, err := w.w.Write(escape(p)); err != nil {
		return 0, err
	}
	return n, nil
}

// Flush writes what a Write held back (an incomplete UTF-8 sequence at the end), escaped.
func (w *Writer) Flush() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.pending) == 0 {
		return nil
	}
	p := w.pending
	w.pending = nil
	_, err := w.w.Write(escape(p))
	return err
}

const hex = "0123456789abcdef"

// escape is p with its control characters (but newline and tab) as \u escapes and its
// bytes that are not UTF-8 as \x escapes; p itself when there are none.
func escape(p []byte) []byte {
	if clean(p) {
		return p
	}
	b := make([]byte, 0, len(p)+32)
	for i := 0; i < len(p); {
		r, n := utf8.DecodeRune(p[i:])
		switch {
		case r == utf8.RuneError && n <= 1:
			b = append(b, '\\', 'x', hex[p[i]>>4], hex[p[i]&0xf])
		case isControl(r):
			b = append(b, '\\', 'u', '0', '0', hex[r>>4], hex[r&0xf])
		default:
			b = append(b, p[i:i+n]...)
		}
		i += n
	}
	return b
}

// clean reports whether p is UTF-8 without a control character other than newline and tab.
func clean(p []byte) bool {
	for i := 0; i < len(p); {
		if c := p[i]; c < utf8.RuneSelf {
			if (c < 0x20 && c != '\n' && c != '\t') || c == 0x7f {
				return false
			}
			i++
			continue
		}
		r, n := utf8.DecodeRune(p[i:])
		if (r == utf8.RuneError && n <= 1) || r <= 0x9f {
			return false
		}
		i += n
	}
	return true
}

// isControl reports whether r is a C0 control other than newline and tab, DEL or a C1
// control: what unicode.IsControl says, for the runes a terminal acts on.
func isControl(r rune) bool {
	return (r < 0x20 && r != '\n' && r != '\t') || (r >= 0x7f && r <= 0x9f)
}

// FirstControl returns the first thing in b that a terminal acts on: a C0 control other than
// newline and tab (ESC, BEL ...), DEL, a C1 control (U+0080-U+009F), or a lone byte
// 0x80-0x9f outside UTF-8 (C1 to an 8-bit terminal); "" when there is none. Tests use it to
// check that nothing of a tape reaches a terminal raw.
func FirstControl(b []byte) string {
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		switch {
		case r == utf8.RuneError && n <= 1 && b[i] >= 0x80 && b[i] <= 0x9f:
			return string(b[i : i+1])
		case isControl(r):
			return string(r)
		}
		i += n
	}
	return ""
}
