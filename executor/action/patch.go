package action

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"unicode/utf8"
)

// The Codex patch grammar:
//
//	*** Begin Patch
//	*** Add File: PATH        followed by "+" lines
//	*** Delete File: PATH
//	*** Update File: PATH
//	*** Move to: NEWPATH      (optional, right after Update)
//	@@ [CONTEXT]              chunks of " " context, "-" removed and "+" added lines
//	*** End of File           (optional, ends a chunk anchored at the end of the file)
//	*** End Patch
//
// Parsing and applying follow codex-rs/apply-patch, including its error texts and its
// lenient matching of context lines (exact, then ignoring trailing whitespace, then
// surrounding whitespace, then Unicode punctuation look-alikes).
const (
	patchBegin      = "*** Begin Patch"
	patchEnd        = "*** End Patch"
	patchAdd        = "*** Add File: "
	patchDelete     = "*** Delete File: "
	patchUpdate     = "*** Update File: "
	patchMove       = "*** Move to: "
	patchEOF        = "*** End of File"
	patchContext    = "@@ "
	patchContextNil = "@@"
)

// HunkKind says what a hunk does to its file.
type HunkKind int

// The kinds of hunk.
const (
	HunkAdd HunkKind = iota + 1
	HunkDelete
	HunkUpdate
)

// Hunk is one file's change in a patch.
type Hunk struct {
	Kind HunkKind
	Path string
	// MoveTo is the new path of an update that renames its file.
	MoveTo string
	// Contents is an added file's text.
	Contents string
	Chunks   []Chunk
}

// Chunk is one @@ section of an update.
type Chunk struct {
	// Context is the text after "@@ ", a line to find before the old lines; nil for none.
	Context *string
	Old     []string
	New     []string
	// Kept says, for each line of New, the index in Old of the context line it repeats, or
	// -1 for an added line: a context line keeps the line end the file had there.
	Kept []int
	// EOF anchors the chunk at the end of the file.
	EOF bool
}

// PatchParseError is a patch that does not follow the grammar.
type PatchParseError struct {
	// Line is the 1-based line of a bad hunk; 0 for an error about the patch as a whole.
	Line    int
	Message string
}

func (e *PatchParseError) Error() string {
	if e.Line == 0 {
		return "invalid patch: " + e.Message
	}
	return fmt.Sprintf("invalid hunk at line %d, %s", e.Line, e.Message)
}

// PatchApplyError is a well-formed patch that does not fit the files; nothing was
// changed.
type PatchApplyError struct {
	Message string
	// Writing says the error came while the changes were written, after every change was
	// computed (the files before it in the patch are written); Context is then the message
	// without its I/O cause ("Failed to write file X"), which is all Codex shows of it.
	Writing bool
	Context string
}

func (e *PatchApplyError) Error() string { return e.Message }

// ParsePatch parses a patch. As Codex does, it also accepts a patch wrapped in a shell
// heredoc (<<EOF ... EOF).
func ParsePatch(text string) ([]Hunk, error) {
	lines := splitLines(strings.TrimSpace(text))
	if err := checkBoundaries(lines); err != nil {
		if len(lines) >= 4 {
			first, last := lines[0], lines[len(lines)-1]
			if (first == "<<EOF" || first == "<<'EOF'" || first == `<<"EOF"`) && strings.HasSuffix(last, "EOF") {
				inner := lines[1 : len(lines)-1]
				if checkBoundaries(inner) == nil {
					lines = inner
					err = nil
				}
			}
		}
		if err != nil {
			return nil, err
		}
	}
	var hunks []Hunk
	rest := lines[1 : len(lines)-1]
	lineNo := 2
	for len(rest) > 0 {
		h, n, err := parseHunk(rest, lineNo)
		if err != nil {
			return nil, err
		}
		hunks = append(hunks, h)
		rest = rest[n:]
		lineNo += n
	}
	return hunks, nil
}

// splitLines splits as Rust's str::lines does: on "\n", dropping one "\r" before it and
// a final empty line.
func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	ls := strings.Split(s, "\n")
	if ls[len(ls)-1] == "" {
		ls = ls[:len(ls)-1]
	}
	for i, l := range ls {
		ls[i] = strings.TrimSuffix(l, "\r")
	}
	return ls
}

func checkBoundaries(lines []string) error {
	if len(lines) == 0 || strings.TrimSpace(lines[0]) != patchBegin {
		return &PatchParseError{Message: "The first line of the patch must be '*** Begin Patch'"}
	}
	if strings.TrimSpace(lines[len(lines)-1]) != patchEnd {
		return &PatchParseError{Message: "The last line of the patch must be '*** End Patch'"}
	}
	return nil
}

func parseHunk(lines []string, lineNo int) (Hunk, int, error) {
	first := strings.TrimSpace(lines[0])
	switch {
	case strings.HasPrefix(first, patchAdd):
		h := Hunk{Kind: HunkAdd, Path: first[len(patchAdd):]}
		var b strings.Builder
		n := 1
		for _, l := range lines[1:] {
			add, ok := strings.CutPrefix(l, "+")
			if !ok {
				break
			}
			b.WriteString(add)
			b.WriteByte('\n')
			n++
		}
		h.Contents = b.String()
		return h, n, nil
	case strings.HasPrefix(first, patchDelete):
		return Hunk{Kind: HunkDelete, Path: first[len(patchDelete):]}, 1, nil
	case strings.HasPrefix(first, patchUpdate):
		h := Hunk{Kind: HunkUpdate, Path: first[len(patchUpdate):]}
		rest := lines[1:]
		n := 1
		if len(rest) > 0 {
			if to, ok := strings.CutPrefix(rest[0], patchMove); ok {
				h.MoveTo = to
				rest = rest[1:]
				n++
			}
		}
		for len(rest) > 0 {
			if strings.TrimSpace(rest[0]) == "" {
				rest = rest[1:]
				n++
				continue
			}
			if strings.HasPrefix(rest[0], "***") {
				break
			}
			c, used, err := parseChunk(rest, lineNo+n, len(h.Chunks) == 0)
			if err != nil {
				return Hunk{}, 0, err
			}
			h.Chunks = append(h.Chunks, c)
			rest = rest[used:]
			n += used
		}
		if len(h.Chunks) == 0 {
			return Hunk{}, 0, &PatchParseError{Line: lineNo, Message: fmt.Sprintf("Update file hunk for path '%s' is empty", h.Path)}
		}
		return h, n, nil
	}
	return Hunk{}, 0, &PatchParseError{Line: lineNo, Message: fmt.Sprintf("'%s' is not a valid hunk header. Valid hunk headers: '*** Add File: {path}', '*** Delete File: {path}', '*** Update File: {path}'", first)}
}

func parseChunk(lines []string, lineNo int, allowMissingContext bool) (Chunk, int, error) {
	var c Chunk
	start := 0
	switch {
	case lines[0] == patchContextNil:
		start = 1
	case strings.HasPrefix(lines[0], patchContext):
		ctx := lines[0][len(patchContext):]
		c.Context = &ctx
		start = 1
	case !allowMissingContext:
		return c, 0, &PatchParseError{Line: lineNo, Message: fmt.Sprintf("Expected update hunk to start with a @@ context marker, got: '%s'", lines[0])}
	}
	if start >= len(lines) {
		return c, 0, &PatchParseError{Line: lineNo + 1, Message: "Update hunk does not contain any lines"}
	}
	parsed := 0
	for _, l := range lines[start:] {
		if l == patchEOF {
			if parsed == 0 {
				return c, 0, &PatchParseError{Line: lineNo + 1, Message: "Update hunk does not contain any lines"}
			}
			c.EOF = true
			parsed++
			break
		}
		if l == "" {
			c.Old = append(c.Old, "")
			c.New = append(c.New, "")
			c.Kept = append(c.Kept, len(c.Old)-1)
			parsed++
			continue
		}
		switch l[0] {
		case ' ':
			c.Old = append(c.Old, l[1:])
			c.New = append(c.New, l[1:])
			c.Kept = append(c.Kept, len(c.Old)-1)
		case '+':
			c.New = append(c.New, l[1:])
			c.Kept = append(c.Kept, -1)
		case '-':
			c.Old = append(c.Old, l[1:])
		default:
			if parsed == 0 {
				return c, 0, &PatchParseError{Line: lineNo + 1, Message: fmt.Sprintf("Unexpected line found in update hunk: '%s'. Every line should start with ' ' (context line), '+' (added line), or '-' (removed line)", l)}
			}
			return c, parsed + start, nil
		}
		parsed++
	}
	return c, parsed + start, nil
}

// PatchResult lists the files a patch touched, with their paths as the patch wrote them
// (a moved file counts as modified, under its new path).
type PatchResult struct {
	Added, Modified, Deleted []string
}

type fileChange struct {
	hunk    Hunk
	abs     string
	moveAbs string
	content string // new content of an add or update
}

// PatchOptions are the behaviours of apply_patch that changed between Codex versions.
type PatchOptions struct {
	// LFOnly writes every rewritten line with "\n" and matches lines with their "\r",
	// as Codex did before 0.162 (see applyChunksLF); the default is 0.162's and later.
	LFOnly bool
}

// ApplyPatch applies a patch with relative paths resolved against cwd, as the newest
// Codex does. Every change is computed before anything is written, so a patch that does
// not fit changes nothing; its error is a *PatchParseError or a *PatchApplyError with
// Codex's wording.
func ApplyPatch(cwd, text string) (PatchResult, error) {
	return ApplyPatchWith(cwd, text, PatchOptions{})
}

// ApplyPatchWith is ApplyPatch with the behaviours of an older Codex.
func ApplyPatchWith(cwd, text string, o PatchOptions) (PatchResult, error) {
	hunks, err := ParsePatch(text)
	if err != nil {
		return PatchResult{}, err
	}
	if len(hunks) == 0 {
		return PatchResult{}, &PatchApplyError{Message: "No files were modified."}
	}
	abs := func(p string) string {
		if filepath.IsAbs(p) {
			return filepath.Clean(p)
		}
		return filepath.Join(cwd, p)
	}
	changes := make([]fileChange, 0, len(hunks))
	for _, h := range hunks {
		fc := fileChange{hunk: h, abs: abs(h.Path)}
		switch h.Kind {
		case HunkAdd:
			fc.content = h.Contents
		case HunkDelete:
			_, err := readPatchFile(fc.abs)
			if err != nil {
				return PatchResult{}, &PatchApplyError{Message: fmt.Sprintf("Failed to read %s: %s", fc.abs, ioErrText(err))}
			}
		case HunkUpdate:
			b, err := readPatchFile(fc.abs)
			if err != nil {
				return PatchResult{}, &PatchApplyError{Message: fmt.Sprintf("Failed to read file to update %s: %s", fc.abs, ioErrText(err))}
			}
			if o.LFOnly {
				fc.content, err = ApplyChunksLF(string(b), fc.abs, h.Chunks, seekSequence)
			} else {
				fc.content, err = applyChunks(string(b), fc.abs, h.Chunks)
			}
			if err != nil {
				return PatchResult{}, err
			}
			if h.MoveTo != "" {
				fc.moveAbs = abs(h.MoveTo)
			}
		}
		changes = append(changes, fc)
	}
	var res PatchResult
	for _, fc := range changes {
		h := fc.hunk
		switch h.Kind {
		case HunkAdd:
			if err := writeWithDirs(fc.abs, fc.content); err != nil {
				return res, err
			}
			res.Added = append(res.Added, h.Path)
		case HunkDelete:
			if err := os.Remove(fc.abs); err != nil {
				return res, writeError(fmt.Sprintf("Failed to delete file %s", fc.abs), err)
			}
			res.Deleted = append(res.Deleted, h.Path)
		case HunkUpdate:
			if fc.moveAbs != "" {
				if err := writeWithDirs(fc.moveAbs, fc.content); err != nil {
					return res, err
				}
				if err := os.Remove(fc.abs); err != nil {
					return res, writeError(fmt.Sprintf("Failed to remove original %s", fc.abs), err)
				}
				res.Modified = append(res.Modified, h.MoveTo)
				continue
			}
			if err := writeWithDirs(fc.abs, fc.content); err != nil {
				return res, err
			}
			res.Modified = append(res.Modified, h.Path)
		}
	}
	return res, nil
}

// writeError is the error of a change that could not be written: what failed, then why.
func writeError(what string, err error) *PatchApplyError {
	return &PatchApplyError{Message: what + ": " + ioErrText(err), Writing: true, Context: what}
}

// writeWithDirs writes a file, making its parent directories, with Codex's wording for
// what failed: "Failed to write file" for either (Codex 0.161 and 0.171 say so of a
// parent that is a file).
func writeWithDirs(path, content string) *PatchApplyError {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return writeError("Failed to write file "+path, err)
	}
	mode := os.FileMode(0o644)
	if st, err := os.Stat(path); err == nil {
		mode = st.Mode().Perm()
	}
	if err := os.WriteFile(path, []byte(content), mode); err != nil {
		return writeError("Failed to write file "+path, err)
	}
	return nil
}

// readPatchFile reads a file a patch deletes or updates as Codex 0.171 does: a directory
// is "not a file", and the text must be UTF-8.
func readPatchFile(path string) ([]byte, error) {
	if st, err := os.Stat(path); err == nil && !st.Mode().IsRegular() {
		return nil, fmt.Errorf("path `%s` is not a file", path)
	}
	b, err := os.ReadFile(path)
	if err == nil {
		err = utf8Error(b)
	}
	return b, err
}

// utf8Error is nil for valid UTF-8, else the error Codex reads the file with
// (String::from_utf8), worded as Rust's Utf8Error displays it.
func utf8Error(b []byte) error {
	at, n := rustUTF8(b)
	switch {
	case at < 0:
		return nil
	case n == 0:
		return fmt.Errorf("incomplete utf-8 byte sequence from index %d", at)
	}
	return fmt.Errorf("invalid utf-8 sequence of %d bytes from index %d", n, at)
}

// LossyUTF8 returns b with each maximal invalid subsequence replaced by one U+FFFD, the
// Unicode practice that both Rust's String::from_utf8_lossy (Codex) and the WHATWG decoder
// (Node's and Bun's buffer.toString: Claude Code, Pi, Gemini CLI, OpenCode) follow. Go's
// conversions replace each invalid byte instead.
func LossyUTF8(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	var out strings.Builder
	out.Grow(len(b) + 8)
	for len(b) > 0 {
		at, n := rustUTF8(b)
		if at < 0 {
			out.Write(b)
			break
		}
		out.Write(b[:at])
		out.WriteString("\uFFFD")
		if n == 0 {
			break // the input ends inside a sequence
		}
		b = b[at+n:]
	}
	return out.String()
}

// rustUTF8 returns where b stops being UTF-8 and the length of the invalid sequence there
// as Rust's validation counts it (0 when the input ends inside a sequence); -1 for valid.
func rustUTF8(b []byte) (at, n int) {
	cont := func(i int) bool { return i < len(b) && b[i]&0xC0 == 0x80 }
	for i := 0; i < len(b); {
		c := b[i]
		if c < 0x80 {
			i++
			continue
		}
		lo, hi, width := byte(0x80), byte(0xBF), 0
		switch {
		case c >= 0xC2 && c <= 0xDF:
			width = 2
		case c == 0xE0:
			lo, width = 0xA0, 3
		case c >= 0xE1 && c <= 0xEC, c == 0xEE, c == 0xEF:
			width = 3
		case c == 0xED:
			hi, width = 0x9F, 3
		case c == 0xF0:
			lo, width = 0x90, 4
		case c >= 0xF1 && c <= 0xF3:
			width = 4
		case c == 0xF4:
			hi, width = 0x8F, 4
		default:
			return i, 1
		}
		if i+1 >= len(b) {
			return i, 0
		}
		if b[i+1] < lo || b[i+1] > hi {
			return i, 1
		}
		for k := 2; k < width; k++ {
			if i+k >= len(b) {
				return i, 0
			}
			if !cont(i + k) {
				return i, k
			}
		}
		i += width
	}
	return -1, 0
}

// IOErrorText words an I/O error as Rust's std::io::Error displays it: "No such file or
// directory (os error 2)".
func IOErrorText(err error) string { return ioErrText(err) }

// ioErrText words an I/O error as Rust's std::io::Error displays it.
func ioErrText(err error) string {
	var pe *os.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	msg := err.Error()
	if code, ok := errnoCode(err); ok {
		if len(msg) > 0 {
			msg = strings.ToUpper(msg[:1]) + msg[1:]
		}
		return fmt.Sprintf("%s (os error %d)", msg, code)
	}
	return msg
}

// applyChunks applies an update's chunks to a file's text as Codex 0.171 does, line ends
// included: lines are matched without their "\r"; a line the patch adds ends as the
// file's first line does ("\r\n" or "\n"); a context line keeps the end it had; every
// other line is kept as it was, and the file ends with a line end.
func applyChunks(original, path string, chunks []Chunk) (string, error) {
	lines := strings.Split(original, "\n")
	ends := make([]string, len(lines))
	for i := range lines {
		if i == len(lines)-1 {
			break // the text after the last "\n": a line without an end, or nothing
		}
		if l, ok := strings.CutSuffix(lines[i], "\r"); ok {
			lines[i], ends[i] = l, "\r\n"
		} else {
			ends[i] = "\n"
		}
	}
	if lines[len(lines)-1] == "" {
		lines, ends = lines[:len(lines)-1], ends[:len(ends)-1]
	}
	eol := "\n"
	if len(ends) > 0 && ends[0] != "" {
		eol = ends[0]
	}
	type repl struct {
		start, n int
		new      []string
		kept     []int
	}
	var repls []repl
	idx := 0
	for _, c := range chunks {
		if c.Context != nil {
			i := seekSequence(lines, []string{*c.Context}, idx, false)
			if i < 0 {
				return "", &PatchApplyError{Message: fmt.Sprintf("Failed to find context '%s' in %s", *c.Context, path)}
			}
			idx = i + 1
		}
		if len(c.Old) == 0 {
			// At the end, after a last empty line too (Codex 0.171).
			repls = append(repls, repl{len(lines), 0, c.New, c.Kept})
			continue
		}
		pat, nw, kept := c.Old, c.New, c.Kept
		found := seekSequence(lines, pat, idx, c.EOF)
		if found < 0 && pat[len(pat)-1] == "" {
			pat = pat[:len(pat)-1]
			if len(nw) > 0 && nw[len(nw)-1] == "" {
				nw, kept = nw[:len(nw)-1], kept[:len(kept)-1]
			}
			found = seekSequence(lines, pat, idx, c.EOF)
		}
		if found < 0 {
			return "", &PatchApplyError{Message: fmt.Sprintf("Failed to find expected lines in %s:\n%s", path, strings.Join(c.Old, "\n"))}
		}
		repls = append(repls, repl{found, len(pat), nw, kept})
		idx = found + len(pat)
	}
	sort.SliceStable(repls, func(i, j int) bool { return repls[i].start < repls[j].start })
	for i := len(repls) - 1; i >= 0; i-- {
		r := repls[i]
		end := min(r.start+r.n, len(lines))
		newEnds := make([]string, len(r.new))
		for k := range r.new {
			newEnds[k] = eol
			if k < len(r.kept) && r.kept[k] >= 0 && r.start+r.kept[k] < end {
				newEnds[k] = ends[r.start+r.kept[k]]
			}
		}
		lines = slices.Concat(lines[:r.start], r.new, lines[end:])
		ends = slices.Concat(ends[:r.start], newEnds, ends[end:])
	}
	var b strings.Builder
	for i, l := range lines {
		b.WriteString(l)
		b.WriteString(cmp.Or(ends[i], eol))
	}
	return b.String(), nil
}

// A Seeker finds pattern in lines at or after start (an end-of-file chunk's, eof, at the
// end of the file), exactly or by the harness's looser comparisons; -1 when it is not
// there. Codex's is the one ApplyPatch uses; OpenCode's TypeScript port has its own.
type Seeker func(lines, pattern []string, start int, eof bool) int

// ApplyChunksLF applies an update's chunks as Codex did before 0.162, and as OpenCode's
// port of it still does (deriveNewContentsFromChunks), with seek finding each chunk: lines
// are matched with their "\r", the chunk's lines replace the matched ones, every line ends
// in "\n", and a pure addition goes before a last empty line. Its errors are Codex's words
// ("Failed to find context ...", "Failed to find expected lines in PATH:\n...").
func ApplyChunksLF(original, path string, chunks []Chunk, seek Seeker) (string, error) {
	lines := strings.Split(original, "\n")
	if len(lines) > 0 && lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	type repl struct {
		start, n int
		new      []string
	}
	var repls []repl
	idx := 0
	for _, c := range chunks {
		if c.Context != nil {
			i := seek(lines, []string{*c.Context}, idx, false)
			if i < 0 {
				return "", &PatchApplyError{Message: fmt.Sprintf("Failed to find context '%s' in %s", *c.Context, path)}
			}
			idx = i + 1
		}
		if len(c.Old) == 0 {
			at := len(lines)
			if at > 0 && lines[at-1] == "" {
				at--
			}
			repls = append(repls, repl{at, 0, c.New})
			continue
		}
		pat, nw := c.Old, c.New
		found := seek(lines, pat, idx, c.EOF)
		if found < 0 && pat[len(pat)-1] == "" {
			pat = pat[:len(pat)-1]
			if len(nw) > 0 && nw[len(nw)-1] == "" {
				nw = nw[:len(nw)-1]
			}
			found = seek(lines, pat, idx, c.EOF)
		}
		if found < 0 {
			return "", &PatchApplyError{Message: fmt.Sprintf("Failed to find expected lines in %s:\n%s", path, strings.Join(c.Old, "\n"))}
		}
		repls = append(repls, repl{found, len(pat), nw})
		idx = found + len(pat)
	}
	sort.SliceStable(repls, func(i, j int) bool { return repls[i].start < repls[j].start })
	for i := len(repls) - 1; i >= 0; i-- {
		r := repls[i]
		end := min(r.start+r.n, len(lines))
		tail := append([]string(nil), lines[end:]...)
		lines = append(append(lines[:r.start], r.new...), tail...)
	}
	if len(lines) == 0 || lines[len(lines)-1] != "" {
		lines = append(lines, "")
	}
	return strings.Join(lines, "\n"), nil
}

// seekSequence finds pattern in lines at or after start (from the end with eof), first
// exactly, then ever more leniently. It returns -1 when not found.
func seekSequence(lines, pattern []string, start int, eof bool) int {
	if len(pattern) == 0 {
		return start
	}
	if len(pattern) > len(lines) {
		return -1
	}
	from := start
	if eof {
		from = len(lines) - len(pattern)
	}
	for _, eq := range []func(a, b string) bool{
		func(a, b string) bool { return a == b },
		func(a, b string) bool {
			return strings.TrimRight(a, " \t\r\n\v\f") == strings.TrimRight(b, " \t\r\n\v\f")
		},
		func(a, b string) bool { return strings.TrimSpace(a) == strings.TrimSpace(b) },
		func(a, b string) bool { return normalizePunct(a) == normalizePunct(b) },
	} {
	next:
		for i := from; i <= len(lines)-len(pattern); i++ {
			for j, p := range pattern {
				if !eq(lines[i+j], p) {
					continue next
				}
			}
			return i
		}
	}
	return -1
}

// IsJSSpace is JavaScript's whitespace, as String.prototype.trim removes it (WhiteSpace
// and LineTerminator: Unicode Zs, tabs, the byte order mark, U+2028 and U+2029).
func IsJSSpace(r rune) bool {
	switch r {
	case '\t', '\n', '\v', '\f', '\r', ' ', '\u00a0', '\u1680', '\u2028', '\u2029', '\u202f', '\u205f', '\u3000', '\ufeff':
		return true
	}
	return r >= '\u2000' && r <= '\u200a'
}

func normalizePunct(s string) string {
	return strings.Map(func(r rune) rune {
		switch r {
		case '\u2010', '\u2011', '\u2012', '\u2013', '\u2014', '\u2015', '\u2212':
			return '-'
		case '\u2018', '\u2019', '\u201A', '\u201B':
			return '\''
		case '\u201C', '\u201D', '\u201E', '\u201F':
			return '"'
		case '\u00A0', '\u2002', '\u2003', '\u2004', '\u2005', '\u2006', '\u2007', '\u2008',
			'\u2009', '\u200A', '\u202F', '\u205F', '\u3000':
			return ' '
		}
		return r
	}, strings.TrimSpace(s))
}
