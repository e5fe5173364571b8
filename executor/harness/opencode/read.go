package opencode

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/tapebox/tapebox/executor/action"
	"github.com/tapebox/tapebox/executor/harness"
	"github.com/tapebox/tapebox/tape"
)

// read's limits: 2000 lines by default, 2000 characters a line, 50 KB in all.
const (
	readLimit   = 2000
	lineChars   = 2000
	readBytes   = 51200
	sampleBytes = 4096
)

type readInput struct {
	FilePath string `json:"filePath"`
	Offset   *int   `json:"offset"`
	Limit    *int   `json:"limit"`
}

// binaryExt are the extensions read refuses as binary without looking.
var binaryExt = map[string]bool{".zip": true, ".tar": true, ".gz": true, ".exe": true, ".dll": true, ".so": true,
	".class": true, ".jar": true, ".war": true, ".7z": true, ".doc": true, ".docx": true, ".xls": true, ".xlsx": true,
	".ppt": true, ".pptx": true, ".odt": true, ".ods": true, ".odp": true, ".bin": true, ".dat": true, ".obj": true,
	".o": true, ".a": true, ".lib": true, ".wasm": true, ".pyc": true, ".pyo": true}

// attachmentExt are the files read sends as attachments (images, PDF): replayed.
var attachmentExt = map[string]bool{".png": true, ".jpg": true, ".jpeg": true, ".gif": true, ".webp": true, ".pdf": true}

// read is opencode's ReadTool: a file's lines numbered "N: text", or a directory's entries.
func (s *session) read(_ context.Context, call tape.ToolCall, rec *tape.ToolResult) tape.ToolResult {
	var in readInput
	if err := harness.Decode(call, &in); err != nil {
		return fail(call, err.Error())
	}
	p := s.path(in.FilePath)
	st, err := os.Stat(p)
	if err != nil {
		return fail(call, missing(p))
	}
	limit := readLimit
	if in.Limit != nil && *in.Limit != 0 {
		limit = *in.Limit
	}
	offset := 1
	if in.Offset != nil && *in.Offset != 0 {
		offset = *in.Offset
	}
	if st.IsDir() {
		return s.readDir(call, p, offset, limit)
	}
	if attachmentExt[strings.ToLower(filepath.Ext(p))] {
		return harness.Replay(call, rec)
	}
	data, err := os.ReadFile(p)
	if err != nil {
		return fail(call, err.Error())
	}
	if isBinary(p, data) {
		return fail(call, "Cannot read binary file: "+p)
	}
	text := strings.TrimPrefix(action.LossyUTF8(data), bom)
	lines := splitLines(text)
	var raw []string
	count, size := 0, 0
	cut, more := false, false
	for _, l := range lines {
		count++
		if count < offset {
			continue
		}
		if len(raw) >= limit {
			more = true // the lines after still count
			continue
		}
		if utf16Len(l) > lineChars {
			l = utf16Prefix(l, lineChars) + fmt.Sprintf("... (line truncated to %d chars)", lineChars)
		}
		n := len(l)
		if len(raw) > 0 {
			n++
		}
		if size+n > readBytes {
			cut, more = true, true
			break
		}
		raw = append(raw, l)
		size += n
	}
	if count < offset && !(count == 0 && offset == 1) {
		return fail(call, fmt.Sprintf("Offset %d is out of range for this file (%d lines)", offset, count))
	}
	var b strings.Builder
	b.WriteString("<path>" + p + "</path>\n<type>file</type>\n<content>\n")
	for i, l := range raw {
		if i > 0 {
			b.WriteByte('\n')
		}
		fmt.Fprintf(&b, "%d: %s", i+offset, l)
	}
	last := offset + len(raw) - 1
	switch {
	case cut:
		fmt.Fprintf(&b, "\n\n(Output capped at %d KB. Showing lines %d-%d. Use offset=%d to continue.)", readBytes/1024, offset, last, last+1)
	case more:
		fmt.Fprintf(&b, "\n\n(Showing lines %d-%d of %d. Use offset=%d to continue.)", offset, last, count, last+1)
	default:
		fmt.Fprintf(&b, "\n\n(End of file - total %d lines)", count)
	}
	b.WriteString("\n</content>")
	return ok(call, b.String())
}

// missing is read's error for a path that does not exist: up to three entries of its
// directory whose names contain its name or are contained in it (case-insensitive), in
// the directory's order.
func missing(p string) string {
	dir, base := filepath.Dir(p), strings.ToLower(filepath.Base(p))
	var near []string
	if f, err := os.Open(dir); err == nil {
		names, _ := f.Readdirnames(-1)
		f.Close()
		for _, n := range names {
			l := strings.ToLower(n)
			if strings.Contains(l, base) || strings.Contains(base, l) {
				near = append(near, filepath.Join(dir, n))
				if len(near) == 3 {
					break
				}
			}
		}
	}
	if len(near) > 0 {
		return "File not found: " + p + "\n\nDid you mean one of these?\n" + strings.Join(near, "\n")
	}
	return "File not found: " + p
}

// readDir lists a directory's entries, "/" after directories (and links to them), sorted.
func (s *session) readDir(call tape.ToolCall, p string, offset, limit int) tape.ToolResult {
	ents, err := os.ReadDir(p)
	if err != nil {
		return fail(call, err.Error())
	}
	names := make([]string, 0, len(ents))
	for _, e := range ents {
		n := e.Name()
		if e.IsDir() {
			n += "/"
		} else if e.Type()&os.ModeSymlink != 0 {
			if st, err := os.Stat(filepath.Join(p, n)); err == nil && st.IsDir() {
				n += "/"
			}
		}
		names = append(names, n)
	}
	sort.SliceStable(names, func(i, j int) bool { return localeLess(names[i], names[j]) })
	start := max(offset-1, 0)
	end := min(start+limit, len(names))
	if start > len(names) {
		start = len(names)
	}
	page := names[start:end]
	trunc := start+len(page) < len(names)
	var b strings.Builder
	b.WriteString("<path>" + p + "</path>\n<type>directory</type>\n<entries>\n")
	b.WriteString(strings.Join(page, "\n"))
	if trunc {
		fmt.Fprintf(&b, "\n\n(Showing %d of %d entries. Use 'offset' parameter to read beyond entry %d)", len(page), len(names), offset+len(page))
	} else {
		fmt.Fprintf(&b, "\n\n(%d entries)", len(names))
	}
	b.WriteString("\n</entries>")
	return ok(call, b.String())
}

// localeLess approximates String.prototype.localeCompare for file names: punctuation
// before digits before letters, letters compared without case first.
func localeLess(a, b string) bool {
	ka, kb := collationKey(a), collationKey(b)
	if ka != kb {
		return ka < kb
	}
	// Same letters: lower case first, as ICU orders them.
	return a > b
}

func collationKey(s string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		switch {
		case r >= '0' && r <= '9':
			b.WriteRune(0x100 + r)
		case r >= 'a' && r <= 'z':
			b.WriteRune(0x200 + r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// isBinary is read's test: an extension known to be binary, or, in the first 4096 bytes,
// a NUL byte or more than 30 % control bytes.
func isBinary(p string, data []byte) bool {
	if binaryExt[strings.ToLower(filepath.Ext(p))] {
		return true
	}
	sample := data[:min(len(data), sampleBytes)]
	if len(sample) == 0 {
		return false
	}
	odd := 0
	for _, c := range sample {
		if c == 0 {
			return true
		}
		if c < 9 || c > 13 && c < 32 {
			odd++
		}
	}
	return float64(odd)/float64(len(sample)) > 0.3
}

// splitLines splits text at "\n", "\r\n" and "\r", as a line stream does; a last line
// without an end counts, an empty rest does not.
func splitLines(text string) []string {
	var out []string
	for len(text) > 0 {
		i := strings.IndexAny(text, "\r\n")
		if i < 0 {
			out = append(out, text)
			break
		}
		out = append(out, text[:i])
		if text[i] == '\r' && i+1 < len(text) && text[i+1] == '\n' {
			i++
		}
		text = text[i+1:]
	}
	return out
}

// utf16Len is a string's length in JavaScript (UTF-16 code units).
func utf16Len(s string) int {
	n := 0
	for _, r := range s {
		n++
		if r >= 0x10000 {
			n++
		}
	}
	return n
}

// utf16Prefix is JavaScript's s.substring(0, n).
func utf16Prefix(s string, n int) string {
	units := 0
	for i, r := range s {
		w := 1
		if r >= 0x10000 {
			w = 2
		}
		if units+w > n {
			if units < n && w == 2 {
				// substring splits the pair: the lone high surrogate becomes U+FFFD on the wire.
				return s[:i] + string(utf8.RuneError)
			}
			return s[:i]
		}
		units += w
	}
	return s
}
