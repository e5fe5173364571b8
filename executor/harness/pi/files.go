package pi

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"unicode/utf16"

	"github.com/tapebox/tapebox/executor/action"
	"github.com/tapebox/tapebox/executor/harness"
	"github.com/tapebox/tapebox/tape"
	"github.com/tapebox/tapebox/tape/harnesses"
)

// resolve is Pi's resolveToCwd: a leading "@" dropped, Unicode spaces made plain, "~"
// expanded to the home directory, and a relative path joined to the working directory.
func (s *session) resolve(p string) string {
	p = strings.TrimPrefix(p, "@")
	p = strings.Map(func(r rune) rune {
		if r == '\u00a0' || (r >= '\u2000' && r <= '\u200a') || r == '\u202f' || r == '\u205f' || r == '\u3000' {
			return ' '
		}
		return r
	}, p)
	if p == "~" || strings.HasPrefix(p, "~/") {
		home := s.env.Getenv("HOME")
		if home == "" {
			home, _ = os.UserHomeDir()
		}
		p = home + p[1:]
	}
	if filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(s.env.Cwd, p)
}

// imageType is the image type Pi recognises by a file's first bytes (file-type's
// signatures for the four kinds it sends), or "".
func imageType(head []byte) string {
	switch {
	case bytes.HasPrefix(head, []byte("\x89PNG\r\n\x1a\n")):
		return "image/png"
	case bytes.HasPrefix(head, []byte{0xff, 0xd8, 0xff}):
		return "image/jpeg"
	case bytes.HasPrefix(head, []byte("GIF87a")), bytes.HasPrefix(head, []byte("GIF89a")):
		return "image/gif"
	case len(head) >= 12 && string(head[:4]) == "RIFF" && string(head[8:12]) == "WEBP":
		return "image/webp"
	}
	return ""
}

func (s *session) read(_ context.Context, call tape.ToolCall, rec *tape.ToolResult) tape.ToolResult {
	a := parseArgs(call)
	path, _ := a.str("path", true)
	offset, hasOffset := a.num("offset")
	limit, hasLimit := a.num("limit")
	if r, bad := a.failed(call); bad {
		return r
	}
	abs := s.resolve(path)
	if err := syscall.Access(abs, 4); err != nil {
		return fail(call, nodeError(err, "access", abs))
	}
	f, err := os.Open(abs)
	if err != nil {
		return fail(call, nodeError(err, "open", abs))
	}
	head := make([]byte, 4100)
	n, err := io.ReadFull(f, head)
	f.Close()
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return fail(call, nodeError(err, "read", ""))
	}
	if mt := imageType(head[:n]); mt != "" {
		// Pi resizes images (with its own codecs) before it sends them: the recording has
		// what it sent.
		if rec != nil {
			return harness.Replay(call, rec)
		}
		return ok(call, "Read image file ["+mt+"]")
	}
	b, err := os.ReadFile(abs)
	if err != nil {
		return fail(call, nodeError(err, "read", ""))
	}
	lines := strings.Split(action.LossyUTF8(b), "\n")
	start := 0
	if hasOffset && offset != 0 {
		start = max(0, int(offset)-1)
	}
	if start >= len(lines) {
		return fail(call, fmt.Sprintf("Offset %s is beyond end of file (%d lines total)", jsNumber(offset), len(lines)))
	}
	var selected string
	userLimited := 0
	if hasLimit {
		end := min(start+int(limit), len(lines))
		// JavaScript's slice counts a negative end from the end of the array.
		if cut := end; cut < 0 {
			cut = max(0, cut+len(lines))
			selected = strings.Join(lines[start:max(start, cut)], "\n")
		} else if end > start {
			selected = strings.Join(lines[start:end], "\n")
		}
		userLimited = end - start
	} else {
		selected = strings.Join(lines[start:], "\n")
	}
	t := truncateHead(selected, maxLines, maxBytes)
	first := start + 1
	switch {
	case t.firstLineTooLong:
		return ok(call, fmt.Sprintf("[Line %d is %s, exceeds %s limit. Use bash: sed -n '%dp' %s | head -c %d]",
			first, formatSize(len(lines[start])), formatSize(maxBytes), first, path, maxBytes))
	case t.truncated:
		last := first + t.outputLines - 1
		if t.byLines {
			return ok(call, fmt.Sprintf("%s\n\n[Showing lines %d-%d of %d. Use offset=%d to continue.]", t.content, first, last, len(lines), last+1))
		}
		return ok(call, fmt.Sprintf("%s\n\n[Showing lines %d-%d of %d (%s limit). Use offset=%d to continue.]", t.content, first, last, len(lines), formatSize(maxBytes), last+1))
	case hasLimit && start+userLimited < len(lines):
		return ok(call, fmt.Sprintf("%s\n\n[%d more lines in file. Use offset=%d to continue.]", t.content, len(lines)-(start+userLimited), start+userLimited+1))
	}
	return ok(call, t.content)
}

// jsLength is a JavaScript string's length: its UTF-16 code units.
func jsLength(s string) int {
	n := 0
	for _, r := range s {
		n += utf16.RuneLen(r)
	}
	return n
}

func (s *session) write(_ context.Context, call tape.ToolCall, _ *tape.ToolResult) tape.ToolResult {
	a := parseArgs(call)
	path, _ := a.str("path", true)
	content, _ := a.str("content", true)
	if r, bad := a.failed(call); bad {
		return r
	}
	abs := s.resolve(path)
	if msg := mkdirAll(filepath.Dir(abs)); msg != "" {
		return fail(call, msg)
	}
	if err := writeFile(abs, content); err != nil {
		return fail(call, nodeError(err, "open", abs))
	}
	return ok(call, fmt.Sprintf("Successfully wrote %d bytes to %s", jsLength(content), path))
}

// mkdirAll is Node's mkdir(dir, {recursive: true}), worded as Node words its failure.
func mkdirAll(dir string) string {
	err := os.MkdirAll(dir, 0o777)
	if err == nil {
		return ""
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		if errors.Is(err, syscall.EEXIST) || errors.Is(err, syscall.ENOTDIR) {
			// Node names the directory asked for, whichever part of it is a file.
			if st, serr := os.Stat(dir); serr == nil && !st.IsDir() {
				return nodeError(syscall.EEXIST, "mkdir", dir)
			}
			return nodeError(syscall.ENOTDIR, "mkdir", dir)
		}
		return nodeError(err, "mkdir", dir)
	}
	return nodeError(err, "mkdir", dir)
}

// writeFile is Node's fs.writeFile: created with mode 0666 less the umask, or truncated.
func writeFile(path, content string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o666)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(content); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

type replacement struct{ oldText, newText string }

func (s *session) edit(_ context.Context, call tape.ToolCall, _ *tape.ToolResult) tape.ToolResult {
	a := parseArgs(call)
	path, edits := a.editArgs()
	if r, bad := a.failed(call); bad {
		return r
	}
	if len(edits) == 0 {
		return fail(call, "Edit tool input is invalid. edits must contain at least one replacement.")
	}
	abs := s.resolve(path)
	if err := syscall.Access(abs, 4|2); err != nil {
		if !harnesses.Pi.Has(s.env.HarnessVersion, harnesses.PiEditErrorCode) {
			return fail(call, "File not found: "+path)
		}
		return fail(call, fmt.Sprintf("Could not edit file: %s. Error code: %s.", path, errnoCode(err)))
	}
	b, err := os.ReadFile(abs)
	if err != nil {
		return fail(call, nodeError(err, "read", ""))
	}
	raw := action.LossyUTF8(b)
	bom := ""
	if strings.HasPrefix(raw, "\ufeff") {
		bom, raw = "\ufeff", raw[len("\ufeff"):]
	}
	crlf := lineEnding(raw) == "\r\n"
	text := normalizeToLF(raw)
	out, msg := applyEdits(text, edits, path)
	if msg != "" {
		return fail(call, msg)
	}
	if crlf {
		out = strings.ReplaceAll(out, "\n", "\r\n")
	}
	if err := writeFile(abs, bom+out); err != nil {
		return fail(call, nodeError(err, "open", abs))
	}
	return ok(call, fmt.Sprintf("Successfully replaced %d block(s) in %s.", len(edits), path))
}

// editArgs reads edit's input as Pi's prepareArguments and schema take it: edits may come
// as a JSON string, and a top-level oldText/newText pair (the older form) is one more edit.
func (a *args) editArgs() (string, []replacement) {
	path, _ := a.str("path", true)
	if v, isStr := jsonString(a.vals["edits"]); isStr {
		if _, isArr := array([]byte(v)); isArr {
			a.vals["edits"] = []byte(v)
		}
	}
	oldText, oldOK := jsonString(a.vals["oldText"])
	newText, newOK := jsonString(a.vals["newText"])
	legacy := oldOK && newOK
	var edits []replacement
	for _, k := range a.keys {
		if k != "path" && k != "edits" && !(legacy && (k == "oldText" || k == "newText")) {
			a.errors = append(a.errors, k+": schema is false", "root: must not have additional properties")
		}
	}
	raw, present := a.vals["edits"]
	switch {
	case !present && !legacy:
		a.errors = append(a.errors, "edits: must have required properties edits")
	case present:
		elems, isArr := array(raw)
		if !isArr {
			a.errors = append(a.errors, "edits: must be array")
			break
		}
		for i, e := range elems {
			at := "edits." + strconv.Itoa(i)
			members, isObj := object(e)
			if !isObj {
				a.errors = append(a.errors, at+": must be object")
				continue
			}
			vals := map[string][]byte{}
			var extra []string
			for _, m := range members {
				vals[m.key] = m.val
				if m.key != "oldText" && m.key != "newText" {
					extra = append(extra, m.key)
				}
			}
			o, _ := a.strAt(vals, "oldText", at+".oldText", true)
			n, _ := a.strAt(vals, "newText", at+".newText", true)
			for _, k := range extra {
				a.errors = append(a.errors, at+"."+k+": schema is false")
			}
			if len(extra) > 0 {
				a.errors = append(a.errors, at+": must not have additional properties")
			}
			edits = append(edits, replacement{o, n})
		}
	}
	if legacy {
		edits = append(edits, replacement{oldText, newText})
	}
	return path, edits
}

// lineEnding is Pi's detectLineEnding: "\r\n" when the first line ends so.
func lineEnding(s string) string {
	lf := strings.IndexByte(s, '\n')
	crlf := strings.Index(s, "\r\n")
	if lf < 0 || crlf < 0 || crlf >= lf {
		return "\n"
	}
	return "\r\n"
}

func normalizeToLF(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "\r\n", "\n"), "\r", "\n")
}

// fuzzy is Pi's normalizeForFuzzyMatch: Unicode NFKC (nfkc), trailing whitespace off
// every line, smart quotes, Unicode dashes and special spaces made ASCII.
func fuzzy(s string) string {
	ls := strings.Split(nfkc(s), "\n")
	for i, l := range ls {
		ls[i] = strings.TrimRightFunc(l, action.IsJSSpace)
	}
	return strings.Map(func(r rune) rune {
		switch {
		case r >= '\u2018' && r <= '\u201b':
			return '\''
		case r >= '\u201c' && r <= '\u201f':
			return '"'
		case (r >= '\u2010' && r <= '\u2015') || r == '\u2212':
			return '-'
		case r == '\u00a0' || (r >= '\u2002' && r <= '\u200a') || r == '\u202f' || r == '\u205f' || r == '\u3000':
			return ' '
		}
		return r
	}, strings.Join(ls, "\n"))
}

// find is Pi's fuzzyFindText: an exact match, else one in fuzzy-normalized text.
func find(content, old string) (index, length int, usedFuzzy bool) {
	if i := strings.Index(content, old); i >= 0 {
		return i, len(old), false
	}
	fc, fo := fuzzy(content), fuzzy(old)
	if i := strings.Index(fc, fo); i >= 0 {
		return i, len(fo), true
	}
	return -1, 0, false
}

// applyEdits is Pi's applyEditsToNormalizedContent: every edit is matched against the
// original text, must be found once and not overlap another; the error is Pi's message.
func applyEdits(content string, edits []replacement, path string) (string, string) {
	for i := range edits {
		edits[i] = replacement{normalizeToLF(edits[i].oldText), normalizeToLF(edits[i].newText)}
	}
	one := len(edits) == 1
	for i, e := range edits {
		if e.oldText == "" {
			if one {
				return "", fmt.Sprintf("oldText must not be empty in %s.", path)
			}
			return "", fmt.Sprintf("edits[%d].oldText must not be empty in %s.", i, path)
		}
	}
	base := content
	for _, e := range edits {
		if _, _, f := find(content, e.oldText); f {
			base = fuzzy(content)
			break
		}
	}
	type match struct{ edit, index, length int }
	var ms []match
	for i, e := range edits {
		idx, n, _ := find(base, e.oldText)
		if idx < 0 {
			if one {
				return "", fmt.Sprintf("Could not find the exact text in %s. The old text must match exactly including all whitespace and newlines.", path)
			}
			return "", fmt.Sprintf("Could not find edits[%d] in %s. The oldText must match exactly including all whitespace and newlines.", i, path)
		}
		if c := jsSplitCount(fuzzy(base), fuzzy(e.oldText)); c > 1 {
			if one {
				return "", fmt.Sprintf("Found %d occurrences of the text in %s. The text must be unique. Please provide more context to make it unique.", c, path)
			}
			return "", fmt.Sprintf("Found %d occurrences of edits[%d] in %s. Each oldText must be unique. Please provide more context to make it unique.", c, i, path)
		}
		ms = append(ms, match{i, idx, n})
	}
	sort.SliceStable(ms, func(i, j int) bool { return ms[i].index < ms[j].index })
	for i := 1; i < len(ms); i++ {
		if p, c := ms[i-1], ms[i]; p.index+p.length > c.index {
			return "", fmt.Sprintf("edits[%d] and edits[%d] overlap in %s. Merge them into one edit or target disjoint regions.", p.edit, c.edit, path)
		}
	}
	out := base
	for i := len(ms) - 1; i >= 0; i-- {
		m := ms[i]
		out = out[:m.index] + edits[m.edit].newText + out[m.index+m.length:]
	}
	if out == base {
		if one {
			return "", fmt.Sprintf("No changes made to %s. The replacement produced identical content. This might indicate an issue with special characters or the text not existing as expected.", path)
		}
		return "", fmt.Sprintf("No changes made to %s. The replacements produced identical content.", path)
	}
	return out, ""
}

// jsSplitCount is Pi's countOccurrences, content.split(text).length - 1, in JavaScript's
// terms: an empty text (an oldText of spaces alone, which the fuzzy normalization empties)
// splits between every UTF-16 code unit, so it counts the units less one.
func jsSplitCount(content, text string) int {
	if text != "" {
		return strings.Count(content, text)
	}
	units := 0
	for _, r := range content {
		units++
		if r >= 0x10000 {
			units++
		}
	}
	return units - 1
}

func (s *session) ls(_ context.Context, call tape.ToolCall, _ *tape.ToolResult) tape.ToolResult {
	a := parseArgs(call)
	path := a.optional("path", ".")
	limitF, hasLimit := a.num("limit")
	if r, bad := a.failed(call); bad {
		return r
	}
	limit := 500
	if hasLimit {
		limit = int(limitF)
	}
	dir := s.resolve(path)
	st, err := os.Stat(dir)
	if err != nil {
		return fail(call, "Path not found: "+dir)
	}
	if !st.IsDir() {
		return fail(call, "Not a directory: "+dir)
	}
	f, err := os.Open(dir)
	if err != nil {
		return fail(call, "Cannot read directory: "+nodeError(err, "scandir", dir))
	}
	names, err := f.Readdirnames(-1)
	f.Close()
	if err != nil {
		return fail(call, "Cannot read directory: "+nodeError(err, "scandir", dir))
	}
	sort.SliceStable(names, func(i, j int) bool { return collate(strings.ToLower(names[i]), strings.ToLower(names[j])) < 0 })
	var out []string
	limited := false
	for _, name := range names {
		if len(out) >= limit {
			limited = true
			break
		}
		est, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			continue // Pi skips what it cannot stat (a dangling link)
		}
		if est.IsDir() {
			name += "/"
		}
		out = append(out, name)
	}
	if len(out) == 0 {
		return ok(call, "(empty directory)")
	}
	t := truncateHead(strings.Join(out, "\n"), int(^uint(0)>>1), maxBytes)
	text := t.content
	var notices []string
	if limited {
		notices = append(notices, fmt.Sprintf("%d entries limit reached. Use limit=%d for more", limit, limit*2))
	}
	if t.truncated {
		notices = append(notices, formatSize(maxBytes)+" limit reached")
	}
	if len(notices) > 0 {
		text += "\n\n[" + strings.Join(notices, ". ") + "]"
	}
	return ok(call, text)
}

// asciiOrder is the order of the ASCII characters (lower case) in ICU's root collation,
// which JavaScript's localeCompare follows: punctuation and symbols, then digits, then
// letters.
const asciiOrder = "\t\n\v\f\r _-,;:!?.'\"()[]{}@*/\\&#%`^+<=>|~$0123456789abcdefghijklmnopqrstuvwxyz"

// latinFold maps the accented Latin letters of Latin-1 and Latin Extended-A to the letter
// they sort with at the first level.
var latinFold = map[rune]rune{}

func init() {
	for base, accented := range map[rune]string{
		'a': "àáâãäåāăą", 'c': "çćĉċč", 'd': "ďđ", 'e': "èéêëēĕėęě", 'g': "ĝğġģ", 'h': "ĥħ",
		'i': "ìíîïĩīĭįı", 'j': "ĵ", 'k': "ķ", 'l': "ĺļľŀł", 'n': "ñńņňŉ", 'o': "òóôõöøōŏő",
		'r': "ŕŗř", 's': "śŝşš", 't': "ţťŧ", 'u': "ùúûüũūŭůűų", 'w': "ŵ", 'y': "ýÿŷ", 'z': "źżž",
	} {
		for _, r := range accented {
			latinFold[r] = base
		}
	}
}

var asciiWeight [128]int

func init() {
	for i := range asciiWeight {
		asciiWeight[i] = i // control characters, before the rest
	}
	for i := 0; i < len(asciiOrder); i++ {
		asciiWeight[asciiOrder[i]] = 256 + 2*i
	}
}

// collate compares two names (lower case) as localeCompare does at the first level:
// ASCII in ICU's order, accented Latin letters with their base letter, combining marks
// ignored, other symbols (emoji) among the symbols before "$", other scripts after Latin
// by code point. Names equal at that level are ordered by their bytes.
func collate(a, b string) int {
	ar, br := primary(a), primary(b)
	for i := 0; i < len(ar) && i < len(br); i++ {
		if ar[i] != br[i] {
			return ar[i] - br[i]
		}
	}
	if len(ar) != len(br) {
		return len(ar) - len(br)
	}
	return strings.Compare(a, b)
}

// primary returns the first-level weights of s.
func primary(s string) []int {
	w := make([]int, 0, len(s))
	for _, r := range s {
		if r >= 0x300 && r <= 0x36F {
			continue // a combining mark: ignorable at the first level
		}
		if r == 'ß' { // "ss" at the first level
			w = append(w, asciiWeight['s'], asciiWeight['s'])
			continue
		}
		if base, ok := latinFold[r]; ok {
			r = base
		}
		switch {
		case r < 128:
			w = append(w, asciiWeight[r])
		case r >= 0x2000 && r <= 0x2BFF, r >= 0x1F000 && r <= 0x1FAFF:
			w = append(w, asciiWeight['$']-1) // symbols and emoji
		default:
			w = append(w, 1<<16+int(r))
		}
	}
	return w
}
