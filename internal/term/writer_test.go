package term

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestWriter(t *testing.T) {
	for in, want := range map[string]string{
		"plain\ttext\nnext é 😀":                   "plain\ttext\nnext é 😀",
		"\x1b]52;c;b3duZWQ=\a title \x1b]0;x\x07": `\u001b]52;c;b3duZWQ=\u0007 title \u001b]0;x\u0007`,
		"c1 \u009b2J \u009d52;c;x\u009c and \xff": `c1 \u009b2J \u009d52;c;x\u009c and \xff`,
		"lone c1 byte \x9b":                       `lone c1 byte \x9b`,
		"del\x7f\r":                               `del\u007f\u000d`,
		"":                                        "",
	} {
		var b bytes.Buffer
		w := NewWriter(&b)
		if _, err := io.WriteString(w, in); err != nil {
			t.Fatal(err)
		}
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
		if b.String() != want {
			t.Errorf("write %q: got %q, want %q", in, b.String(), want)
		}
		if r := FirstControl(b.Bytes()); r != "" {
			t.Errorf("write %q: %q reached the terminal", in, r)
		}
	}
}

// TestWriterRaw: NewWriter does not wrap twice, Raw sees through it, and IsTerminal
// looks at the writer under it.
func TestWriterRaw(t *testing.T) {
	var b bytes.Buffer
	w := NewWriter(&b)
	if NewWriter(w) != w {
		t.Error("NewWriter wrapped a Writer again")
	}
	if Raw(w) != io.Writer(&b) || Raw(&b) != io.Writer(&b) {
		t.Error("Raw does not give the writer under a Writer")
	}
	f, err := os.CreateTemp(t.TempDir(), "x")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if IsTerminal(NewWriter(f)) || IsTerminal(w) {
		t.Error("a file or a buffer is no terminal")
	}
	if tty, err := os.OpenFile("/dev/tty", os.O_WRONLY, 0); err == nil {
		defer tty.Close()
		if !IsTerminal(NewWriter(tty)) {
			t.Error("/dev/tty under a Writer is a terminal")
		}
	}
}

// FuzzWriter: whatever is written, in whatever pieces, nothing a terminal acts on comes
// out, the output does not depend on the pieces, and JSON written through it decodes to
// the same value.
func FuzzWriter(f *testing.F) {
	f.Add([]byte("\x1b]52;c;AAAA\a"), uint8(3))
	f.Add([]byte("é\u009b😀\xf0\x9f"), uint8(1))
	f.Add([]byte("ok\n"), uint8(0))
	f.Fuzz(func(t *testing.T, in []byte, step uint8) {
		var whole, pieces bytes.Buffer
		w := NewWriter(&whole)
		w.Write(in)
		w.Flush()
		w = NewWriter(&pieces)
		n := int(step%7) + 1
		for i := 0; i < len(in); i += n {
			w.Write(in[i:min(i+n, len(in))])
		}
		w.Flush()
		if whole.String() != pieces.String() {
			t.Fatalf("%q: whole %q, in pieces of %d %q", in, whole.String(), n, pieces.String())
		}
		if r := FirstControl(whole.Bytes()); r != "" {
			t.Fatalf("%q: %q reached the terminal: %q", in, r, whole.String())
		}
		if utf8.Valid(in) {
			j, _ := json.Marshal(string(in))
			var out bytes.Buffer
			jw := NewWriter(&out)
			jw.Write(j)
			jw.Flush()
			var back string
			if err := json.Unmarshal(out.Bytes(), &back); err != nil || back != strings.ToValidUTF8(string(in), "\ufffd") {
				t.Fatalf("%q: JSON %s through the writer: %s (%v)", in, j, out.Bytes(), err)
			}
		}
	})
}

// BenchmarkWriter measures what the one writer costs the CLI's output: a tape's JSON
// (clean, the common case) and text with a control character every 100 bytes.
func BenchmarkWriter(b *testing.B) {
	clean := bytes.Repeat([]byte(`{"type":"text","text":"héllo wörld, a line of a tool's output"},`+"\n"), 1<<14)
	dirty := bytes.Repeat([]byte(strings.Repeat("x", 99)+"\x1b"), 1<<14)
	for name, p := range map[string][]byte{"clean": clean, "dirty": dirty} {
		b.Run(name, func(b *testing.B) {
			w := NewWriter(io.Discard)
			b.SetBytes(int64(len(p)))
			for b.Loop() {
				w.Write(p)
			}
		})
	}
}
