package opencode

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"

	"github.com/tapebox/tapebox/executor/action"
	"github.com/tapebox/tapebox/executor/harness"
	"github.com/tapebox/tapebox/tape"
)

// The apply_patch tool's errors (opencode 1.18's ApplyPatchTool). A parse or match error
// is a thrown Error in a template string: "Error: " comes with it.
const (
	errPatchRequired = "patchText is required"
	errPatchEmpty    = "patch rejected: empty patch"
	errPatchNoHunks  = "apply_patch verification failed: no hunks found"
	errPatchVerify   = "apply_patch verification failed: "
	errPatchMarkers  = "Invalid patch format: missing Begin/End markers"
	patchSuccess     = "Success. Updated the following files:\n"
)

type patchInput struct {
	PatchText string `json:"patchText"`
}

// patchChange is one hunk checked and computed, before anything is written.
type patchChange struct {
	kind    action.HunkKind
	path    string // absolute
	move    string // absolute; an update that renames its file
	content string // without a byte order mark
	bom     bool
}

// applyPatch is opencode's ApplyPatchTool, which opencode offers a GPT model in place of
// edit and write: the patch parsed by opencode's own lenient parser (parsePatch), every hunk
// checked and computed against the files as they are (the chunks applied as Codex did
// before 0.162, with opencode's matching: action.ApplyChunksLF and seekOpenCode), then
// written in order; a write that fails leaves the hunks before it written. The summary
// names the files relative to the project's worktree.
func (s *session) applyPatch(_ context.Context, call tape.ToolCall, _ *tape.ToolResult) tape.ToolResult {
	var in patchInput
	if err := harness.Decode(call, &in); err != nil {
		return fail(call, err.Error())
	}
	if in.PatchText == "" {
		return fail(call, errPatchRequired)
	}
	hunks, parsed := parsePatch(in.PatchText)
	if !parsed {
		return fail(call, errPatchVerify+"Error: "+errPatchMarkers)
	}
	if len(hunks) == 0 {
		norm := strings.ReplaceAll(strings.ReplaceAll(in.PatchText, "\r\n", "\n"), "\r", "\n")
		if jsTrim(norm) == "*** Begin Patch\n*** End Patch" {
			return fail(call, errPatchEmpty)
		}
		return fail(call, errPatchNoHunks)
	}
	changes := make([]patchChange, 0, len(hunks))
	for _, h := range hunks {
		c := patchChange{kind: h.Kind, path: s.resolve(h.Path)}
		switch h.Kind {
		case action.HunkAdd:
			text := h.Contents
			if text != "" && !strings.HasSuffix(text, "\n") {
				text += "\n"
			}
			c.content, c.bom = strings.CutPrefix(text, bom)
		case action.HunkUpdate:
			if st, err := os.Stat(c.path); err != nil || st.IsDir() {
				return fail(call, errPatchVerify+"Failed to read file to update: "+c.path)
			}
			text, hadBOM, err := readText(c.path)
			if err != nil {
				return fail(call, err.Error())
			}
			out, err := action.ApplyChunksLF(text, c.path, h.Chunks, seekOpenCode)
			if err != nil {
				return fail(call, errPatchVerify+"Error: "+err.Error())
			}
			out, outBOM := strings.CutPrefix(out, bom)
			c.content, c.bom = out, hadBOM || outBOM
			if h.MoveTo != "" {
				c.move = s.resolve(h.MoveTo)
			}
		case action.HunkDelete:
			if _, _, err := readText(c.path); err != nil {
				return fail(call, errPatchVerify+err.Error())
			}
		}
		changes = append(changes, c)
	}
	for _, c := range changes {
		var err error
		switch {
		case c.kind == action.HunkDelete:
			err = remove(c.path)
		case c.move != "":
			if err = writeWithDirs(c.move, c.content, c.bom); err == nil {
				err = remove(c.path)
			}
		default:
			err = writeWithDirs(c.path, c.content, c.bom)
		}
		if err != nil {
			return fail(call, err.Error())
		}
	}
	root := worktree(s.env.Cwd)
	lines := make([]string, 0, len(changes))
	for _, c := range changes {
		letter, p := "M ", c.path
		switch {
		case c.kind == action.HunkAdd:
			letter = "A "
		case c.kind == action.HunkDelete:
			letter = "D "
		case c.move != "":
			p = c.move
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			rel = p
		}
		lines = append(lines, letter+filepath.ToSlash(rel))
	}
	return ok(call, patchSuccess+strings.Join(lines, "\n"))
}

// resolve is node's path.resolve against the working directory.
func (s *session) resolve(p string) string {
	if filepath.IsAbs(p) {
		return filepath.Clean(p)
	}
	return filepath.Join(s.env.Cwd, p)
}

// readText is opencode's Bom.readFile: the file decoded as UTF-8 with each invalid
// sequence replaced (TextDecoder), its byte order mark cut off and reported.
func readText(p string) (string, bool, error) {
	data, err := os.ReadFile(p)
	if err != nil {
		return "", false, errors.New(fsError("readFile", p, err))
	}
	text, hadBOM := strings.CutPrefix(action.LossyUTF8(data), bom)
	return text, hadBOM, nil
}

// remove is opencode's AppFileSystem.remove of a file.
func remove(p string) error {
	if err := os.Remove(p); err != nil {
		return errors.New(fsError("remove", p, err))
	}
	return nil
}

// worktree is the project's worktree opencode names the patched files relative to: the
// directory of the nearest .git at or above dir, else "/" (a directory outside git is
// opencode's global project).
func worktree(dir string) string {
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Lstat(filepath.Join(d, ".git")); err == nil {
			return d
		}
		if d == filepath.Dir(d) {
			return "/"
		}
	}
}

// parsePatch is opencode's parsePatch, not Codex's parser: the text trimmed and unwrapped
// from a heredoc, the first "*** Begin Patch" and "*** End Patch" lines found anywhere
// (false when either is missing or they are out of order), the lines between them read as
// hunks, and every line it does not understand skipped: an added file's lines without "+",
// an update's lines before its first "@@" and without a prefix. A "*** End of File" line
// ends the update's chunks (the chunk is not anchored at the end: opencode stops at the
// "***" before it reads the marker) and the chunks after it in the same file are skipped.
// Lines are split on "\n" alone: a CRLF patch's lines keep their "\r".
func parsePatch(text string) ([]action.Hunk, bool) {
	lines := strings.Split(unheredoc(jsTrim(text)), "\n")
	begin, end := -1, -1
	for i, l := range lines {
		t := jsTrim(l)
		if begin < 0 && t == "*** Begin Patch" {
			begin = i
		}
		if end < 0 && t == "*** End Patch" {
			end = i
		}
	}
	if begin < 0 || end < 0 || begin >= end {
		return nil, false
	}
	var hunks []action.Hunk
	for i := begin + 1; i < end; {
		l := lines[i]
		var h action.Hunk
		var name string
		switch {
		case strings.HasPrefix(l, "*** Add File:"):
			h.Kind, name = action.HunkAdd, l[len("*** Add File:"):]
		case strings.HasPrefix(l, "*** Delete File:"):
			h.Kind, name = action.HunkDelete, l[len("*** Delete File:"):]
		case strings.HasPrefix(l, "*** Update File:"):
			h.Kind, name = action.HunkUpdate, l[len("*** Update File:"):]
		}
		h.Path = jsTrim(name)
		if h.Path == "" {
			i++
			continue
		}
		i++
		switch h.Kind {
		case action.HunkAdd:
			var b strings.Builder
			for ; i < len(lines) && !strings.HasPrefix(lines[i], "***"); i++ {
				if add, ok := strings.CutPrefix(lines[i], "+"); ok {
					b.WriteString(add + "\n")
				}
			}
			h.Contents = strings.TrimSuffix(b.String(), "\n")
		case action.HunkUpdate:
			if i < len(lines) && strings.HasPrefix(lines[i], "*** Move to:") {
				h.MoveTo = jsTrim(lines[i][len("*** Move to:"):])
				i++
			}
			h.Chunks, i = parseChunks(lines, i)
		}
		hunks = append(hunks, h)
	}
	return hunks, true
}

// parseChunks reads an update's chunks from lines[i:] up to a line that starts with "***".
func parseChunks(lines []string, i int) ([]action.Chunk, int) {
	var chunks []action.Chunk
	for i < len(lines) && !strings.HasPrefix(lines[i], "***") {
		if !strings.HasPrefix(lines[i], "@@") {
			i++
			continue
		}
		var c action.Chunk
		if ctx := jsTrim(lines[i][2:]); ctx != "" {
			c.Context = &ctx
		}
		for i++; i < len(lines) && !strings.HasPrefix(lines[i], "@@") && !strings.HasPrefix(lines[i], "***"); i++ {
			l := lines[i]
			switch {
			case strings.HasPrefix(l, " "):
				c.Old, c.New = append(c.Old, l[1:]), append(c.New, l[1:])
			case strings.HasPrefix(l, "-"):
				c.Old = append(c.Old, l[1:])
			case strings.HasPrefix(l, "+"):
				c.New = append(c.New, l[1:])
			}
		}
		chunks = append(chunks, c)
	}
	return chunks, i
}

// unheredoc is opencode's stripHeredoc: the body of a patch written as a shell heredoc
// (<<'EOF' ... EOF, "cat " before it allowed), else s as it is. It matches
// /^(?:cat\s+)?<<['"]?(\w+)['"]?\s*\n([\s\S]*?)\n\1\s*$/ on a trimmed s.
func unheredoc(s string) string {
	rest := s
	if r, ok := strings.CutPrefix(rest, "cat"); ok {
		if t := strings.TrimLeftFunc(r, action.IsJSSpace); len(t) < len(r) {
			rest = t
		}
	}
	rest, ok := strings.CutPrefix(rest, "<<")
	if !ok {
		return s
	}
	rest = cutQuote(rest)
	n := 0
	for n < len(rest) && isWordByte(rest[n]) {
		n++
	}
	if n == 0 {
		return s
	}
	word := rest[:n]
	rest = cutQuote(rest[n:])
	// \s*\n: the whitespace after the word, up to its last "\n"; the body must then end
	// with "\n" + word (and whitespace, which the trim has removed).
	ws := len(rest) - len(strings.TrimLeftFunc(rest, action.IsJSSpace))
	nl := strings.LastIndexByte(rest[:ws], '\n')
	tail := "\n" + word
	for nl >= 0 {
		body := rest[nl+1:]
		if b, ok := strings.CutSuffix(body, tail); ok {
			return b
		}
		nl = strings.LastIndexByte(rest[:nl], '\n')
	}
	return s
}

func cutQuote(s string) string {
	if s != "" && (s[0] == '\'' || s[0] == '"') {
		return s[1:]
	}
	return s
}

func isWordByte(c byte) bool {
	return c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// seekOpenCode is opencode's seekSequence: an empty pattern is never found; each
// comparison in turn (exact, trailing whitespace trimmed, both ends trimmed, then trimmed
// with Unicode quotes, dashes, the ellipsis and no-break spaces made ASCII) tries the
// end of the file first for an end-of-file chunk, then every place from start on.
func seekOpenCode(lines, pattern []string, start int, eof bool) int {
	if len(pattern) == 0 {
		return -1
	}
	for mode := range 4 {
		if eof {
			if n := len(lines) - len(pattern); n >= start && matchAt(lines[n:], pattern, mode) {
				return n
			}
		}
		for n := start; n <= len(lines)-len(pattern); n++ {
			if matchAt(lines[n:], pattern, mode) {
				return n
			}
		}
	}
	return -1
}

// matchAt says whether lines start with pattern, compared as seekOpenCode's mode says.
func matchAt(lines, pattern []string, mode int) bool {
	for j, b := range pattern {
		a := lines[j]
		switch mode {
		case 1:
			a, b = strings.TrimRightFunc(a, action.IsJSSpace), strings.TrimRightFunc(b, action.IsJSSpace)
		case 2:
			a, b = jsTrim(a), jsTrim(b)
		case 3:
			a, b = asciiPunct(jsTrim(a)), asciiPunct(jsTrim(b))
		}
		if a != b {
			return false
		}
	}
	return true
}

// asciiPunct is opencode's normalizeUnicode.
func asciiPunct(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r >= 0x2018 && r <= 0x201B:
			b.WriteByte('\'')
		case r >= 0x201C && r <= 0x201F:
			b.WriteByte('"')
		case r >= 0x2010 && r <= 0x2015:
			b.WriteByte('-')
		case r == 0x2026:
			b.WriteString("...")
		case r == 0xA0:
			b.WriteByte(' ')
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}
