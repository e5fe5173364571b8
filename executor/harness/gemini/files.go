package gemini

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"unicode"
	"unicode/utf16"

	"github.com/tapebox/tapebox/executor/action"
	"github.com/tapebox/tapebox/tape"
)

// The limits of read_file (DEFAULT_MAX_LINES_TEXT_FILE, MAX_LINE_LENGTH_TEXT_FILE).
const (
	maxLines    = 2000
	maxLineLen  = 2000
	maxFileSize = 20 << 20
)

// mediaExtensions are the files the CLI reads as images, audio, video or PDF (by their MIME
// type: inline data for the model); the module replays those.
var mediaExtensions = map[string]bool{
	".png": true, ".jpg": true, ".jpeg": true, ".gif": true, ".webp": true, ".bmp": true, ".svg": true,
	".ico": true, ".tif": true, ".tiff": true, ".avif": true, ".heic": true, ".heif": true, ".pdf": true,
	".mp3": true, ".wav": true, ".aiff": true, ".aac": true, ".ogg": true, ".oga": true, ".flac": true, ".m4a": true, ".weba": true,
	".mp4": true, ".mov": true, ".avi": true, ".webm": true, ".mkv": true, ".mpeg": true, ".mpg": true, ".3gp": true, ".wmv": true, ".flv": true,
}

// binaryExtensions are the CLI's BINARY_EXTENSIONS (its binary, media and Python patterns
// and a few more): "Cannot display content of binary file: PATH" whatever they hold.
var binaryExtensions = map[string]bool{
	".bin": true, ".exe": true, ".dll": true, ".so": true, ".dylib": true, ".class": true, ".jar": true, ".war": true,
	".zip": true, ".tar": true, ".gz": true, ".bz2": true, ".rar": true, ".7z": true, ".pak": true, ".rpa": true,
	".doc": true, ".docx": true, ".xls": true, ".xlsx": true, ".ppt": true, ".pptx": true, ".odt": true, ".ods": true, ".odp": true,
	".pyc": true, ".pyo": true, ".dat": true, ".obj": true, ".o": true, ".a": true, ".lib": true, ".wasm": true,
}

type readArgs struct {
	FilePath  string `json:"file_path"`
	StartLine *int   `json:"start_line"`
	EndLine   *int   `json:"end_line"`
}

func (s *session) readFile(_ context.Context, call tape.ToolCall, rec *tape.ToolResult) tape.ToolResult {
	var a readArgs
	if !args(call, &a) || a.FilePath == "" || (a.StartLine != nil && *a.StartLine < 1) || (a.EndLine != nil && *a.EndLine < 1) {
		return replay(call, rec)
	}
	if a.StartLine != nil && a.EndLine != nil && *a.StartLine > *a.EndLine {
		return fail(call, "start_line cannot be greater than end_line") // the tool's own validation
	}
	path, inside := s.resolve(a.FilePath)
	if !inside {
		return replay(call, rec)
	}
	st, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return fail(call, "File not found: "+path)
	}
	if err != nil {
		return replay(call, rec)
	}
	if st.IsDir() {
		return fail(call, "Path is a directory, not a file: "+path)
	}
	ext := strings.ToLower(filepath.Ext(path))
	if st.Size() > maxFileSize || (mediaExtensions[ext] && ext != ".ts") {
		return replay(call, rec)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return replay(call, rec)
	}
	isTS := ext == ".ts" || ext == ".mts" || ext == ".cts"
	if !isTS && binaryExtensions[ext] {
		return ok(call, "Cannot display content of binary file: "+s.relative(path))
	}
	if !isTS {
		// Where isbinaryfile would go on to look for protocol buffers (unsure), text
		// files decode as protocol buffers seldom: they read as text.
		if binary(b) == yes {
			return ok(call, "Cannot display content of binary file: "+s.relative(path))
		}
	}
	content, isText := textOf(b)
	if !isText {
		return replay(call, rec)
	}
	lines := splitLines(content)
	total := len(lines)
	start, end := 0, min(maxLines, total)
	if a.StartLine != nil || a.EndLine != nil {
		if a.StartLine != nil {
			start = *a.StartLine - 1
		}
		if a.EndLine != nil {
			end = min(*a.EndLine, total)
		} else {
			end = min(start+maxLines, total)
		}
	}
	start = min(start, total)
	if end < start {
		end = start
	}
	cut := false
	shown := make([]string, 0, end-start)
	for _, l := range lines[start:end] {
		if utf16Len(l) > maxLineLen {
			cut = true
			l = utf16Prefix(l, maxLineLen) + "... [truncated]"
		}
		shown = append(shown, l)
	}
	text := strings.Join(shown, "\n")
	if start > 0 || end < total || cut {
		text = fmt.Sprintf("\nIMPORTANT: The file content has been truncated.\nStatus: Showing lines %d-%d of %d total lines.\nAction: To read more of the file, you can use the 'start_line' and 'end_line' parameters in a subsequent 'read_file' call. For example, to read the next section of the file, use start_line: %d.\n\n--- FILE CONTENT (truncated) ---\n%s",
			start+1, end, total, end+1, text)
	}
	return ok(call, text)
}

// splitLines is content.split(/\r?\n/).
func splitLines(content string) []string {
	lines := strings.Split(content, "\n")
	for i, l := range lines {
		if i < len(lines)-1 {
			lines[i] = strings.TrimSuffix(l, "\r")
		}
	}
	return lines
}

// textOf decodes a file as the CLI reads text (readFileWithEncoding: a UTF-8 BOM dropped);
// a UTF-16 or UTF-32 file is left to the recording.
func textOf(b []byte) (string, bool) {
	switch {
	case bytes.HasPrefix(b, []byte{0xEF, 0xBB, 0xBF}):
		return action.LossyUTF8(b[3:]), true
	case bytes.HasPrefix(b, []byte{0xFF, 0xFE}) || bytes.HasPrefix(b, []byte{0xFE, 0xFF}) || bytes.HasPrefix(b, []byte{0, 0, 0xFE, 0xFF}):
		return "", false
	}
	return action.LossyUTF8(b), true
}

type verdict int

const (
	no verdict = iota
	yes
	unsure
)

// binary is the isbinaryfile package's check of a file's first 512 bytes (and 3 more for a
// character cut at the end): BOMs are text, "%PDF-" and a NUL byte binary, else over 10 %
// of bytes that are neither printable nor part of a UTF-8 character. Where it would go on
// to look for protocol buffers, the answer is unsure.
func binary(b []byte) verdict {
	n := len(b)
	if n == 0 {
		return no
	}
	total := min(n, 515)
	scan := min(total, 512)
	switch {
	case bytes.HasPrefix(b, []byte{0xEF, 0xBB, 0xBF}), bytes.HasPrefix(b, []byte{0, 0, 0xFE, 0xFF}), bytes.HasPrefix(b, []byte{0xFF, 0xFE, 0, 0}),
		bytes.HasPrefix(b, []byte{0x84, 0x31, 0x95, 0x33}):
		return no
	case total >= 5 && string(b[:5]) == "%PDF-":
		return yes
	case bytes.HasPrefix(b, []byte{0xFE, 0xFF}), bytes.HasPrefix(b, []byte{0xFF, 0xFE}):
		return no
	}
	at := func(i int) int {
		if i < len(b) {
			return int(b[i])
		}
		return 0
	}
	suspicious := 0
	for i := 0; i < scan; i++ {
		c := int(b[i])
		if c == 0 {
			return yes
		}
		if (c >= 7 && c <= 14) || (c >= 32 && c <= 127) {
			continue
		}
		cont := func(k int) bool { return at(k) >= 128 && at(k) <= 191 }
		switch {
		case c >= 192 && c <= 223 && i+1 < total:
			i++
			if cont(i) {
				continue
			}
		case c >= 224 && c <= 239 && i+2 < total:
			i++
			if cont(i) && cont(i+1) {
				i++
				continue
			}
		case c >= 240 && c <= 247 && i+3 < total:
			i++
			if cont(i) && cont(i+1) && cont(i+2) {
				i += 2
				continue
			}
		}
		suspicious++
		// suspicious*100/scan > 10 in JS's floating point, not Go's integer division.
		if i >= 32 && suspicious*100 > 10*scan {
			return yes
		}
	}
	if suspicious*100 > 10*scan {
		return yes
	}
	if suspicious > 1 {
		return unsure
	}
	return no
}

// relative is path.relative(cwd, p) with forward slashes.
func (s *session) relative(p string) string {
	rel, err := filepath.Rel(s.env.Cwd, p)
	if err != nil {
		return p
	}
	return filepath.ToSlash(rel)
}

// utf16Len is a JavaScript string's length.
func utf16Len(s string) int {
	n := 0
	for _, r := range s {
		n += len(utf16.Encode([]rune{r}))
	}
	return n
}

// utf16Prefix is s.substring(0, n) in UTF-16 code units (a surrogate pair cut in half
// keeps its first half, which encodes as U+FFFD).
func utf16Prefix(s string, n int) string {
	u := utf16.Encode([]rune(s))
	if len(u) <= n {
		return s
	}
	return string(utf16.Decode(u[:n]))
}

type writeArgs struct {
	FilePath *string `json:"file_path"`
	Content  *string `json:"content"`
}

func (s *session) writeFile(_ context.Context, call tape.ToolCall, rec *tape.ToolResult) tape.ToolResult {
	var a writeArgs
	if !args(call, &a) || a.FilePath == nil || a.Content == nil || *a.FilePath == "" {
		return replay(call, rec)
	}
	path, inside := s.resolve(*a.FilePath)
	if !inside {
		return replay(call, rec)
	}
	content := *a.Content
	old, err := os.ReadFile(path)
	exists := err == nil
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return replay(call, rec)
	}
	original := action.LossyUTF8(old)
	final := content
	if exists && original != "" && strings.Contains(original, "\r\n") {
		final = crlf(content)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fail(call, fmt.Sprintf("Error writing to file '%s': %v", path, err))
	}
	if err := os.WriteFile(path, []byte(final), 0o644); err != nil {
		if errors.Is(err, fs.ErrPermission) {
			return fail(call, fmt.Sprintf("Permission denied writing to file: %s (EACCES)", path))
		}
		return replay(call, rec)
	}
	msg := "Successfully overwrote file: " + path + "."
	before := original
	if !exists {
		msg = "Successfully created and wrote to new file: " + path + "."
		before = ""
	}
	return ok(call, msg+" Here is the updated code:\n"+snippet(before, final, 5))
}

// crlf is content.replace(/\r?\n/g, "\r\n").
func crlf(content string) string {
	return strings.ReplaceAll(strings.ReplaceAll(content, "\r\n", "\n"), "\n", "\r\n")
}

type replaceArgs struct {
	FilePath      string  `json:"file_path"`
	OldString     *string `json:"old_string"`
	NewString     *string `json:"new_string"`
	AllowMultiple bool    `json:"allow_multiple"`
}

func (s *session) replace(_ context.Context, call tape.ToolCall, rec *tape.ToolResult) tape.ToolResult {
	var a replaceArgs
	if !args(call, &a) || a.FilePath == "" || a.OldString == nil || a.NewString == nil {
		return replay(call, rec)
	}
	path, inside := s.resolve(a.FilePath)
	if !inside {
		return replay(call, rec)
	}
	b, err := os.ReadFile(path)
	exists := err == nil
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return replay(call, rec)
	}
	oldS := strings.ReplaceAll(*a.OldString, "\r\n", "\n")
	newS := strings.ReplaceAll(*a.NewString, "\r\n", "\n")
	if *a.OldString == "" && !exists {
		if err := write(path, *a.NewString); err != nil {
			return replay(call, rec)
		}
		return ok(call, "Created new file: "+path+" with provided content. Here is the updated code:\n"+snippet("", *a.NewString, 5))
	}
	if !exists {
		return fail(call, "File not found: "+path)
	}
	raw := action.LossyUTF8(b)
	useCRLF := strings.Contains(raw, "\r\n")
	current := strings.ReplaceAll(raw, "\r\n", "\n")
	if *a.OldString == "" {
		return fail(call, "File already exists, cannot create: "+path)
	}
	n := strings.Count(current, oldS)
	updated, feedback := "", ""
	if n > 0 {
		updated = strings.ReplaceAll(current, oldS, newS)
		switch {
		case strings.HasSuffix(current, "\n") && !strings.HasSuffix(updated, "\n"):
			updated += "\n"
		case !strings.HasSuffix(current, "\n") && strings.HasSuffix(updated, "\n"):
			updated = strings.TrimSuffix(updated, "\n")
		}
	} else {
		e, found := flexible(current, oldS, newS, *a.NewString)
		if !found {
			e, found = regexStrategy(current, oldS, newS, a.AllowMultiple)
		}
		if !found {
			e, found = fuzzy(current, oldS, newS, *a.OldString)
		}
		if found {
			updated, n, feedback = e.content, e.n, e.feedback
		}
	}
	switch {
	case n == 0:
		if rec != nil && !rec.IsError {
			return replay(call, rec) // the CLI asked the model to correct the edit, and it did
		}
		return fail(call, "Could not find an exact match for 'old_string' in '"+a.FilePath+"'. If previous edits modified the file or you are modifying lines outside your recent read window, please use ReadFile to inspect the target lines before retrying with an exact 'old_string'.")
	case !a.AllowMultiple && n != 1:
		return fail(call, fmt.Sprintf("Failed to edit, Expected 1 occurrence but found %d for old_string in file: %s. If you intended to replace multiple occurrences, set 'allow_multiple' to true.", n, a.FilePath))
	case oldS == newS:
		return fail(call, "No changes to apply. The old_string and new_string are identical in file: "+a.FilePath)
	}
	final := updated
	if useCRLF {
		final = crlf(updated)
	}
	if err := write(path, final); err != nil {
		return replay(call, rec)
	}
	if feedback != "" {
		feedback = " " + feedback
	}
	return ok(call, fmt.Sprintf("Successfully modified file: %s (%d replacements). Here is the updated code:\n%s%s", path, n, snippet(current, final, 5), feedback))
}

// write writes content, creating the parent directories, keeping the file's mode.
func write(path, content string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, []byte(content), 0o644)
}

type listArgs struct {
	DirPath *string  `json:"dir_path"`
	Ignore  []string `json:"ignore"`
}

func (s *session) listDirectory(_ context.Context, call tape.ToolCall, rec *tape.ToolResult) tape.ToolResult {
	var a listArgs
	if !args(call, &a) || a.DirPath == nil || len(a.Ignore) > 0 || s.ignoreRules() {
		return replay(call, rec)
	}
	dir := *a.DirPath
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(s.env.Cwd, dir)
	}
	dir = filepath.Clean(dir)
	if _, inside := s.resolve(dir); !inside {
		return replay(call, rec)
	}
	st, err := os.Stat(dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return fail(call, "Error listing directory: ENOENT: no such file or directory, stat '"+dir+"'")
		}
		return replay(call, rec)
	}
	if !st.IsDir() {
		return fail(call, "Error: Path is not a directory: "+dir)
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return replay(call, rec)
	}
	if len(ents) == 0 {
		return ok(call, "Directory "+dir+" is empty.")
	}
	type entry struct {
		name  string
		isDir bool
		size  int64
	}
	var list []entry
	ignored := 0
	for _, e := range ents {
		if e.Name() == ".git" {
			ignored++ // the CLI's file discovery leaves the repository's own directory out
			continue
		}
		st, err := os.Stat(filepath.Join(dir, e.Name()))
		if err != nil {
			continue // a dangling link: left out, not counted
		}
		en := entry{name: e.Name(), isDir: st.IsDir()}
		if !en.isDir {
			en.size = st.Size()
		}
		list = append(list, en)
	}
	sort.SliceStable(list, func(i, j int) bool {
		if list[i].isDir != list[j].isDir {
			return list[i].isDir
		}
		return localeLess(list[i].name, list[j].name)
	})
	lines := make([]string, len(list))
	for i, e := range list {
		if e.isDir {
			lines[i] = "[DIR] " + e.name
		} else {
			lines[i] = fmt.Sprintf("%s (%d bytes)", e.name, e.size)
		}
	}
	msg := "Directory listing for " + dir + ":\n" + strings.Join(lines, "\n")
	if ignored > 0 {
		msg += fmt.Sprintf("\n(%d ignored)", ignored)
	}
	return ok(call, msg)
}

// ignoreRules says whether ignore files may leave entries out of a listing: a .gitignore
// or .geminiignore in the working directory.
func (s *session) ignoreRules() bool {
	for _, f := range []string{".gitignore", ".geminiignore"} {
		if _, err := os.Stat(filepath.Join(s.env.Cwd, f)); err == nil {
			return true
		}
	}
	return false
}

// localeLess approximates String.prototype.localeCompare (ICU's root collation) for file
// names: letters compare case-insensitively first, punctuation before digits before Latin
// letters before other scripts, then lower case before upper case.
func localeLess(a, b string) bool {
	ka, kb := collationKey(a), collationKey(b)
	if ka != kb {
		return ka < kb
	}
	if sa, sb := accentKey(a), accentKey(b); sa != sb {
		return sa < sb
	}
	return tieKey(a) < tieKey(b)
}

// collationKey is a name's primary weights: combining marks (e+U+0301) weigh nothing there,
// as in ICU, so "é-func" comes before "end" as "e-func" does.
func collationKey(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case unicode.Is(unicode.Mn, r):
		case r == 'ß': // ICU's "ss"
			b.WriteString("\x03s\x03s")
		case r >= 'A' && r <= 'Z':
			b.WriteRune('\x03')
			b.WriteRune(r - 'A' + 'a')
		case r >= 'a' && r <= 'z':
			b.WriteRune('\x03')
			b.WriteRune(r)
		case r >= '0' && r <= '9':
			b.WriteRune('\x02')
			b.WriteRune(r)
		case latinBase(r) != 0:
			b.WriteRune('\x03')
			b.WriteRune(latinBase(r))
		case r >= 0x80 && unicode.In(r, unicode.L, unicode.N, unicode.M):
			b.WriteRune('\x04')
			b.WriteRune(r)
		case r < 0x80:
			b.WriteRune('\x01')
			if i := strings.IndexRune(punctuationOrder, r); i >= 0 {
				r = rune(2 * i)
			}
			b.WriteRune(r)
		case unicode.Is(unicode.Zs, r):
			b.WriteRune('\x01')
			b.WriteRune(rune(2 * strings.IndexByte(punctuationOrder, ' ')))
		case unicode.Is(unicode.P, r):
			b.WriteRune('\x01')
			b.WriteRune(rune(2*strings.IndexByte(punctuationOrder, '.') + 1))
			b.WriteRune(r)
		case unicode.Is(unicode.Sc, r):
			b.WriteRune('\x01')
			b.WriteRune(rune(2*strings.IndexByte(punctuationOrder, '$') + 1))
			b.WriteRune(r)
		case unicode.Is(unicode.S, r):
			// Symbols and emoji: after ASCII's symbols, before the currency signs.
			b.WriteRune('\x01')
			b.WriteRune(rune(2*strings.IndexByte(punctuationOrder, '$') - 1))
			b.WriteRune(r)
		default:
			b.WriteRune('\x04')
			b.WriteRune(r)
		}
	}
	return b.String()
}

// punctuationOrder is ICU's root order of ASCII's spaces, punctuation and symbols
// (String.prototype.localeCompare in node 24).
const punctuationOrder = "\t _-,;:!?.'\"()[]{}@*/\\&#%`^+<=>|~$"

// accentKey orders names equal at the primary level by their accents (ICU's secondary
// level): a letter without one first.
func accentKey(s string) string {
	var b []byte
	for _, r := range s {
		switch {
		case unicode.Is(unicode.Mn, r) && len(b) > 0:
			b[len(b)-1] = '1' // the letter before it has an accent, as its precomposed form
		case unicode.Is(unicode.Mn, r), latinBase(r) != 0:
			b = append(b, '1')
		default:
			b = append(b, '0')
		}
	}
	return string(b)
}

// tieKey orders names equal but for case: lower case first.
func tieKey(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case unicode.Is(unicode.Mn, r):
		case unicode.IsUpper(r):
			b.WriteByte('1')
		default:
			b.WriteByte('0')
		}
	}
	return b.String()
}

// latin1Bases and latinExtABases are the base letters (lower case) of U+00C0-U+00FF and
// U+0100-U+017F, which ICU's root collation sorts with their base letter ("é-notes" between
// "delta" and "end"); ' ' marks a character that is not a letter.
const (
	latin1Bases    = "aaaaaaaceeeeiiiidnooooo ouuuuyts" + "aaaaaaaceeeeiiiidnooooo ouuuuyty"
	latinExtABases = "aaaaaaccccccccddddeeeeeeeeeegggggggghhhhiiiiiiiiiiiijjkkkllllllllllnnnnnnnnnoooooooorrrrrrssssssssttttttuuuuuuuuuuuuwwyyyzzzzzzs"
)

// latinBase is the base letter of an accented Latin letter, 0 for anything else.
func latinBase(r rune) rune {
	var c byte
	switch {
	case r >= 0xC0 && r <= 0xFF:
		c = latin1Bases[r-0xC0]
	case r >= 0x100 && r <= 0x17F:
		c = latinExtABases[r-0x100]
	}
	if c == 0 || c == ' ' {
		return 0
	}
	return rune(c)
}
