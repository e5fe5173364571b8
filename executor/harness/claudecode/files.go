package claudecode

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/tapebox/tapebox/executor/action"
	"github.com/tapebox/tapebox/executor/harness"
	"github.com/tapebox/tapebox/tape"
)

// stateNote is the suffix Claude Code 2.1 adds to Write and Edit results.
const stateNote = " (file state is current in your context — no need to Read it back)"

// noteFor returns stateNote, or "" where the recording is of a version without it.
func noteFor(rec *tape.ToolResult) string {
	if rec != nil && !strings.Contains(rec.Text(), stateNote) {
		return ""
	}
	return stateNote
}

const (
	maxReadBytes   = 256 << 10
	oldReadLimit   = 2000
	oldLineLimit   = 2000
	readEmptyNote  = "<system-reminder>Warning: the file exists but the contents are empty.</system-reminder>"
	notebookHint   = "File is a Jupyter Notebook. Use the NotebookEdit to edit this file."
	binaryReadNote = "This tool cannot read binary files. The file appears to be a binary %s file. Use a skill for this file type if one is available, or a shell command or script that can read the format."
)

var imageTypes = map[string]string{".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".gif": "image/gif", ".webp": "image/webp"}

func (s *session) notExist(call tape.ToolCall, rec *tape.ToolResult) tape.ToolResult {
	if s.before("2.1") {
		return asRecorded(toolUseError(call, "File does not exist."), rec)
	}
	return asRecorded(harness.Text(call, "File does not exist. Note: your current working directory is "+s.currentDir()+".", true), rec)
}

func (s *session) currentDir() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cwd
}

// refused reports whether the recording shows Claude Code refusing a write for a reason
// the sandbox cannot see (the file was not read first, or changed since): then the replay
// refuses too, with the recorded words, and changes nothing.
func refused(rec *tape.ToolResult) bool {
	if rec == nil || !rec.IsError {
		return false
	}
	t := rec.Text()
	for _, p := range []string{"has not been read yet", "modified since", "since this session read it", "Read it first", "Nothing was written. ", "unexpectedly modified"} {
		if strings.Contains(t, p) {
			return true
		}
	}
	return false
}

// decodeWrite is decode for the tools that change a file: where the recording shows
// Claude Code refusing the write (see refused), the answer is the recorded one.
func decodeWrite(call tape.ToolCall, rec *tape.ToolResult, in any, required ...string) (tape.ToolResult, bool) {
	r, ok := decode(call, in, required...)
	if ok && refused(rec) {
		return harness.Replay(call, rec), false
	}
	return r, ok
}

type readInput struct {
	FilePath string `json:"file_path"`
	Offset   *int   `json:"offset"`
	Limit    *int   `json:"limit"`
}

var taskOutputPath = regexp.MustCompile(`/tasks/([A-Za-z0-9_-]+)\.output$`)

func (s *session) read(_ context.Context, call tape.ToolCall, rec *tape.ToolResult) tape.ToolResult {
	var in readInput
	if r, ok := decode(call, &in, "file_path"); !ok {
		return r
	}
	path := s.env.Path(in.FilePath)
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		// A background command's output file, under the harness's own directory in the
		// recording: read the task's output instead.
		if m := taskOutputPath.FindStringSubmatch(path); m != nil {
			if _, err := s.env.Tasks.Status(m[1]); err == nil {
				path = s.env.Tasks.OutputPath(m[1])
			}
		}
	}
	ext := strings.ToLower(filepath.Ext(path))
	if s.before("2.1") && imageTypes[ext] == "" {
		return s.read20(call, rec, in, path, ext)
	}
	if mt, ok := imageTypes[ext]; ok {
		b, err := os.ReadFile(path)
		if err != nil {
			return s.notExist(call, rec)
		}
		raw := jsonText(map[string]any{"type": "image", "source": map[string]string{
			"type": "base64", "data": base64.StdEncoding.EncodeToString(b), "media_type": mt}})
		return tape.ToolResult{ToolCallID: call.ID, Content: []tape.Block{{Type: tape.BlockImage, Raw: []byte(raw)}}}
	}
	arrow := strings.Contains(harness.RecordedText(rec), "\u2192")
	offset, limit := 1, 0
	if in.Offset != nil && *in.Offset > 0 {
		offset = *in.Offset
	}
	if in.Limit != nil && *in.Limit > 0 {
		limit = *in.Limit
	}
	if arrow && limit == 0 {
		limit = oldReadLimit
	}
	if n := recordedPage(rec); n > 0 && in.Offset == nil && in.Limit == nil && !arrow && !s.before("2.1") {
		limit = n
	}
	if st, err := os.Stat(path); err == nil && !st.IsDir() && st.Size() > maxReadBytes && in.Offset == nil && in.Limit == nil && !arrow {
		return asRecorded(harness.Text(call, fmt.Sprintf("File content (%dKB) exceeds maximum allowed size (256KB). Please use offset and limit parameters to read specific portions of the file, or use the Grep tool to search for specific content.", st.Size()>>10), true), rec)
	}
	if st, err := os.Stat(path); err == nil && st.Mode().IsRegular() && tokenRefusal(rec) {
		return harness.Replay(call, rec)
	}
	ft, err := action.ReadFile(path, offset, limit)
	switch {
	case errors.Is(err, fs.ErrNotExist) && binaryExts[ext] && !s.before("2.1"):
		// Claude Code 2.1 judges by the name before it looks for the file.
		return asRecorded(toolUseError(call, fmt.Sprintf(binaryReadNote, ext)), rec)
	case errors.Is(err, fs.ErrNotExist):
		return s.notExist(call, rec)
	case errors.Is(err, action.ErrBinary):
		if ext == "" {
			ext = "(no extension)"
		}
		return asRecorded(toolUseError(call, fmt.Sprintf(binaryReadNote, ext)), rec)
	case err != nil && strings.Contains(err.Error(), "is a directory") && s.before("2.1"):
		return asRecorded(harness.Text(call, "EISDIR: illegal operation on a directory, read", true), rec)
	case err != nil && strings.Contains(err.Error(), "is a directory"):
		return asRecorded(harness.Text(call, "EISDIR: illegal operation on a directory, read '"+path+"'", true), rec)
	case err != nil:
		return harness.Text(call, err.Error(), true)
	}
	note := ""
	if !s.before("2.1") && !validUTF8File(path) {
		note = notUTF8Note
	}
	switch {
	case ft.Total == 0 && offset > 1 && !s.before("2.1"):
		// Claude Code 2.1 counts an empty file as one line.
		return harness.Text(call, fmt.Sprintf("<system-reminder>Warning: the file exists but is shorter than the provided offset (%d). The file has 1 lines.</system-reminder>", offset), false)
	case ft.Total == 0:
		return harness.Text(call, readEmptyNote, false)
	case len(ft.Lines) == 0:
		return harness.Text(call, fmt.Sprintf("<system-reminder>Warning: the file exists but is shorter than the provided offset (%d). The file has %d lines.</system-reminder>", offset, ft.Total)+note, false)
	}
	var b strings.Builder
	for i, l := range ft.Lines {
		if i > 0 {
			b.WriteByte('\n')
		}
		l = strings.TrimSuffix(l, "\r")
		if arrow {
			if len([]rune(l)) > oldLineLimit {
				l = string([]rune(l)[:oldLineLimit]) + "... (line truncated)"
			}
			fmt.Fprintf(&b, "%6d\u2192%s", ft.Offset+i, l)
		} else {
			fmt.Fprintf(&b, "%d\t%s", ft.Offset+i, l)
		}
	}
	if s.before("2.1") {
		b.WriteString(malwareReminder)
	}
	b.WriteString(note)
	return harness.Text(call, b.String(), false)
}

// binaryExts20 are the names Claude Code 2.0 refuses to read as binary (by the name alone).
var binaryExts20 = map[string]bool{}

func init() {
	for _, e := range strings.Fields("mp3 wav flac ogg aac m4a wma aiff opus mp4 avi mov wmv flv mkv webm m4v mpeg mpg zip rar tar gz bz2 7z xz z tgz iso exe dll so dylib app msi deb rpm bin dat db sqlite sqlite3 mdb idx doc docx xls xlsx ppt pptx odt ods odp ttf otf woff woff2 eot psd ai eps sketch fig xd blend obj 3ds max class jar war pyc pyo rlib swf fla") {
		binaryExts20["."+e] = true
	}
}

// read20 is Read as Claude Code 2.0 does it (2.0.77's cli.js): binary by the name alone;
// the whole file, or offset and limit of its lines split at \n or \r\n, with no cap on the
// count or the length of lines; "→" line numbers padded to 6; the malware reminder after
// the text; a selection that is empty (an empty file, an offset past the end) is a warning
// counting the file's lines, an empty file having one.
func (s *session) read20(call tape.ToolCall, rec *tape.ToolResult, in readInput, path, ext string) tape.ToolResult {
	st, err := os.Stat(path)
	if err != nil {
		msg := "File does not exist."
		if dir := s.currentDir(); dir != s.env.Cwd {
			msg += " Current working directory: " + dir
		}
		return asRecorded(toolUseError(call, msg), rec)
	}
	if binaryExts20[ext] {
		return asRecorded(toolUseError(call, "This tool cannot read binary files. The file appears to be a binary "+ext+" file. Please use appropriate tools for binary file analysis."), rec)
	}
	if !st.IsDir() && st.Size() > maxReadBytes && in.Offset == nil && in.Limit == nil {
		return asRecorded(toolUseError(call, "File content ("+fileSize(int(st.Size()))+") exceeds maximum allowed size (256KB). Please use offset and limit parameters to read specific portions of the file, or use the GrepTool to search for specific content."), rec)
	}
	if st.IsDir() {
		return asRecorded(harness.Text(call, "EISDIR: illegal operation on a directory, read", true), rec)
	}
	if tokenRefusal(rec) {
		return harness.Replay(call, rec)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return harness.Text(call, err.Error(), true)
	}
	lines := strings.Split(action.LossyUTF8(b), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimSuffix(l, "\r")
	}
	startLine := 1
	if in.Offset != nil {
		startLine = *in.Offset
	}
	from := max(0, startLine-1)
	sel := lines[min(from, len(lines)):]
	if in.Limit != nil && len(lines)-from > *in.Limit {
		sel = lines[from : from+max(0, *in.Limit)]
	}
	if content := strings.Join(sel, "\n"); content == "" {
		return harness.Text(call, fmt.Sprintf("<system-reminder>Warning: the file exists but is shorter than the provided offset (%d). The file has %d lines.</system-reminder>", startLine, len(lines)), false)
	}
	var out strings.Builder
	for i, l := range sel {
		if i > 0 {
			out.WriteByte('\n')
		}
		n := strconv.Itoa(startLine + i)
		if len(n) < 6 {
			n = strings.Repeat(" ", 6-len(n)) + n
		}
		out.WriteString(n + "\u2192" + l)
	}
	out.WriteString(malwareReminder)
	return harness.Text(call, out.String(), false)
}

// crlf20 says Claude Code 2.0 writes path with CRLF line ends: an existing file whose first
// 4 KB hold more CRLF than lone LF ends; for a new file, the project's ends, which it
// judges once per session (at its first new file) from up to 15 of its files, CRLF when
// more than 3 of them are CRLF files.
func (s *session) crlf20(path string) bool {
	if st, err := os.Stat(path); err == nil && st.Mode().IsRegular() {
		return crlfFile(path)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.projectCRLF == nil {
		n, seen := 0, 0
		_ = filepath.WalkDir(s.env.Cwd, func(p string, d fs.DirEntry, err error) error {
			switch {
			case err != nil || seen >= 15:
				return filepath.SkipDir
			case d.IsDir() && p != s.env.Cwd && strings.HasPrefix(d.Name(), "."):
				return filepath.SkipDir
			case d.Type().IsRegular():
				seen++
				if crlfFile(p) {
					n++
				}
			}
			return nil
		})
		v := n > 3
		s.projectCRLF = &v
	}
	return *s.projectCRLF
}

// crlfFile says the first 4 KB of the file at p hold more CRLF than lone LF line ends.
func crlfFile(p string) bool {
	f, err := os.Open(p)
	if err != nil {
		return false
	}
	defer f.Close()
	b := make([]byte, 4096)
	n, _ := f.Read(b)
	crlf := bytes.Count(b[:n], []byte("\r\n"))
	return crlf > bytes.Count(b[:n], []byte("\n"))-crlf
}

// asOwner runs write, a change of the file at path; when the sandbox refuses it for the
// file's mode but the recording shows the change made (Claude Code ran as a root with
// CAP_DAC_OVERRIDE, which every sandbox drops), it makes the file writable for its owner,
// runs write again and puts the mode back.
func asOwner(path string, rec *tape.ToolResult, write func() error) error {
	err := write()
	if err == nil || !errors.Is(err, fs.ErrPermission) || rec == nil || rec.IsError {
		return err
	}
	st, serr := os.Lstat(path)
	if serr != nil || !st.Mode().IsRegular() || st.Mode().Perm()&0o200 != 0 {
		return err
	}
	if os.Chmod(path, st.Mode().Perm()|0o200) != nil {
		return err
	}
	defer os.Chmod(path, st.Mode().Perm())
	return write()
}

// catNote leads Claude Code 2.0's answer to an Edit or a Write over a file.
const catNote = "Here's the result of running `cat -n` on a snippet of the edited file:\n"

// writeSnippetLines is how many lines of a Write Claude Code 2.0 shows, clippedNote what
// follows them when there are more.
const (
	writeSnippetLines = 16000
	clippedNote       = "<response clipped><NOTE>To save on context only part of this file has been shown to you. You should retry this tool after you have searched inside the file with Grep in order to find the line numbers of what you are looking for.</NOTE>"
)

// splitLines splits s at \n or \r\n, as JavaScript's split(/\r?\n/).
func splitLines(s string) []string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimSuffix(l, "\r")
	}
	return lines
}

// numbered20 numbers the lines of s from start as Claude Code 2.0's cat -n does; "" for
// an empty s.
func numbered20(s string, start int) string {
	if s == "" {
		return ""
	}
	var b strings.Builder
	for i, l := range splitLines(s) {
		if i > 0 {
			b.WriteByte('\n')
		}
		n := strconv.Itoa(start + i)
		if len(n) < 6 {
			n = strings.Repeat(" ", 6-len(n)) + n
		}
		b.WriteString(n + "\u2192" + l)
	}
	return b.String()
}

// editSnippet is the part of an edited file Claude Code 2.0 shows: from 4 lines before
// the first occurrence of old in the original to 4 lines after the new text, and the
// number of its first line.
func editSnippet(original, old, new string) (string, int) {
	before, _, _ := strings.Cut(original, old)
	if old == "" {
		before = ""
	}
	at := len(splitLines(before)) - 1
	lines := splitLines(strings.Replace(original, old, new, 1))
	from := max(0, at-4)
	to := min(len(lines), at+4+len(splitLines(new)))
	if from > to {
		from = to
	}
	return strings.Join(lines[from:to], "\n"), from + 1
}

// tokenRefusal says whether rec is Claude Code's refusal of a Read whose content the
// provider counted over the token cap ("File content (N tokens) exceeds maximum allowed
// tokens (25000) ..."). The count is the provider's (count_tokens), outside the sandbox, so
// a replay follows the recording, as it does a paged Read (recordedPage).
func tokenRefusal(rec *tape.ToolResult) bool {
	rt := harness.RecordedText(rec)
	return rec != nil && rec.IsError && strings.HasPrefix(rt, "File content (") && strings.Contains(rt, " tokens) exceeds maximum allowed tokens")
}

// pageLine is a line of a Read result that starts with its line number.
var pageLine = regexp.MustCompile(`^([0-9]+)\t`)

// minPageChars is the shortest recorded Read result taken as a page (see recordedPage).
const minPageChars = 16000

// recordedPage returns the number of the last line a recorded Read result shows, or 0.
// Claude Code 2.1 pages a Read without offset or limit whose content the provider counts
// at more tokens than its cap (25,000): it shows the first lines that fit, the note about
// the rest going elsewhere. The count comes from the provider (count_tokens), outside
// the sandbox, so the replay takes the page's length from the recording, as it does a
// background task's id; a Read that was not paged shows every line and limits nothing.
// A page holds some 21,000 tokens (85 % of the cap), so a recorded result under
// minPageChars is no page: it cannot hide a file that grew in the replay.
func recordedPage(rec *tape.ToolResult) int {
	if rec == nil || rec.IsError {
		return 0
	}
	t := rec.Text()
	if len(t) < minPageChars || !strings.HasPrefix(t, "1\t") {
		return 0
	}
	for t != "" {
		i := strings.LastIndexByte(t, '\n')
		line := t[i+1:]
		if m := pageLine.FindStringSubmatch(line); m != nil {
			n, err := strconv.Atoi(m[1])
			if err != nil {
				return 0
			}
			return n
		}
		if i < 0 {
			break
		}
		t = t[:i]
	}
	return 0
}

// notUTF8Note is what Claude Code 2.1 appends to a read of a file that is not valid UTF-8
// (the whole file, whatever part was read).
const notUTF8Note = "\n\n[This file is not valid UTF-8: it uses a legacy encoding such as Windows-1252, Shift-JIS or GBK, or it is binary. Its undecodable bytes show above as U+FFFD. Edit and Write will refuse it: change it with a shell command that keeps its encoding, or ask the user whether to convert it to UTF-8.]"

// binaryExts are names Claude Code 2.1 refuses to read as binary before it looks for the
// file.
var binaryExts = map[string]bool{".bin": true, ".exe": true, ".dll": true, ".so": true, ".o": true, ".a": true,
	".zip": true, ".gz": true, ".tar": true, ".class": true, ".jar": true, ".pyc": true, ".dylib": true}

func validUTF8File(path string) bool {
	b, err := os.ReadFile(path)
	return err != nil || utf8.Valid(b)
}

// notUTF8Refusal is Claude Code 2.1's answer to a Write or Edit of a file that is not
// valid UTF-8 (Edit wraps it in <tool_use_error>, Write does not).
const notUTF8Refusal = "File is not valid UTF-8: it uses a legacy encoding such as Windows-1252, Shift-JIS or GBK, or it is binary. These tools write UTF-8 (or UTF-16LE behind its byte-order mark) and never convert a file's encoding on their own, so nothing was written. If the file is text, make the change with a shell command that reads and writes it in its own encoding (iconv, or PowerShell Get-Content/Set-Content -Encoding), or ask the user whether to convert it to UTF-8 first. To replace the whole file with new UTF-8 text anyway, delete it first, then Write it."

// nulRefusal is Claude Code 2.1's answer to a Write or Edit of a file with a NUL byte in
// its first 8 KB.
const nulRefusal = "File has NUL bytes in its first 8 KB: binary data, UTF-16/UTF-32 without a byte-order mark, or text with embedded NULs. These tools write UTF-8 (or UTF-16LE behind its byte-order mark) and never convert a file's encoding on their own, so nothing was written. If the file is text, make the change with a shell command that reads and writes it in its own encoding (iconv, or PowerShell Get-Content/Set-Content -Encoding), or ask the user whether to convert it to UTF-8 first. To replace the whole file with new UTF-8 text anyway, delete it first, then Write it."

// writable refuses, as Claude Code 2.1 does, a Write or Edit of a symbolic link (the
// answer names the link's target) or of a regular file that is not valid UTF-8.
func (s *session) writable(call tape.ToolCall, name, path string) (tape.ToolResult, bool) {
	if s.before("2.1") {
		return tape.ToolResult{}, true
	}
	st, err := os.Lstat(path)
	if err == nil && st.Mode().IsRegular() {
		if b, err := os.ReadFile(path); err == nil && !bytes.HasPrefix(b, []byte{0xff, 0xfe}) {
			msg := ""
			switch {
			case bytes.IndexByte(b[:min(len(b), 8<<10)], 0) >= 0:
				msg = nulRefusal
			case !utf8.Valid(b):
				msg = notUTF8Refusal
			}
			if msg != "" && call.Name == "Edit" {
				return toolUseError(call, msg), false
			}
			if msg != "" {
				return harness.Text(call, msg, true), false
			}
		}
	}
	if err != nil || st.Mode()&fs.ModeSymlink == 0 {
		return tape.ToolResult{}, true
	}
	if _, err := os.Stat(path); err != nil && call.Name == "Edit" {
		// Edit looks for the file first: a dangling link is a missing file.
		return tape.ToolResult{}, true
	}
	target, err := os.Readlink(path)
	if err != nil {
		return tape.ToolResult{}, true
	}
	if !filepath.IsAbs(target) {
		target = filepath.Join(filepath.Dir(name), target)
	}
	return harness.Text(call, "Refusing to write "+name+": it is a symbolic link. Write to the link's target path instead: "+target+".", true), false
}

// stripTrailing removes the spaces and tabs at the end of each line of text written to
// path, as Claude Code's Write and Edit do, except in Markdown (where two spaces end a
// line).
func stripTrailing(path, text string) string {
	if ext := strings.ToLower(filepath.Ext(path)); ext == ".md" || ext == ".mdx" {
		return text
	}
	lines := strings.Split(text, "\n")
	for i, l := range lines {
		cr := strings.HasSuffix(l, "\r")
		l = strings.TrimRight(strings.TrimSuffix(l, "\r"), " \t")
		if cr {
			l += "\r"
		}
		lines[i] = l
	}
	return strings.Join(lines, "\n")
}

// malwareReminder is what Claude Code 2.0 appends to every file it reads.
const malwareReminder = "\n\n<system-reminder>\nWhenever you read a file, you should consider whether it would be considered malware. You CAN and SHOULD provide analysis of malware, what it is doing. But you MUST refuse to improve or augment the code. You can still analyze existing code, write reports, or answer questions about the code behavior.\n</system-reminder>\n"

type writeInput struct {
	FilePath string  `json:"file_path"`
	Content  *string `json:"content"`
}

func (s *session) write(_ context.Context, call tape.ToolCall, rec *tape.ToolResult) tape.ToolResult {
	var in writeInput
	if r, ok := decodeWrite(call, rec, &in, "file_path", "content"); !ok {
		return r
	}
	path := s.env.Path(in.FilePath)
	if r, ok := s.writable(call, in.FilePath, path); !ok {
		return r
	}
	if st, err := os.Stat(path); err == nil && st.IsDir() && !s.before("2.1") {
		return toolUseError(call, in.FilePath+" is a directory, not a file. To create a file inside it, include the file name in file_path.")
	}
	if s.before("2.1") {
		if st, err := os.Lstat(path); err == nil && st.Mode()&fs.ModeSymlink != 0 {
			if _, err := os.Stat(path); err != nil {
				// Claude Code 2.0 writes a new file in place of a dangling link (seed 8046).
				_ = os.Remove(path)
			}
		}
	}
	// Claude Code words a Write by the file's old content: none, or an empty file, is a
	// file created (2.0.77 and 2.1.332 alike).
	wasEmpty := false
	if st, err := os.Stat(path); err == nil && st.Mode().IsRegular() && st.Size() == 0 {
		wasEmpty = true
	}
	content := stripTrailing(path, *in.Content)
	if s.before("2.1") && s.crlf20(path) {
		// Claude Code 2.0 writes with the file's line ends: \n becomes \r\n (and \r\n
		// \r\r\n) where the file, or for a new file the project, uses CRLF.
		content = strings.ReplaceAll(content, "\n", "\r\n")
	}
	var created bool
	err := asOwner(path, rec, func() (err error) { created, err = action.WriteFile(path, content); return err })
	if err != nil {
		return harness.Text(call, err.Error(), true)
	}
	note := noteFor(rec)
	if created || wasEmpty {
		return harness.Text(call, "File created successfully at: "+in.FilePath+note, false)
	}
	if s.before("2.1") {
		content := stripTrailing(path, *in.Content)
		if lines := splitLines(content); len(lines) > writeSnippetLines {
			content = strings.Join(lines[:writeSnippetLines], "\n") + clippedNote
		}
		return harness.Text(call, "The file "+in.FilePath+" has been updated. "+catNote+numbered20(content, 1), false)
	}
	return harness.Text(call, "The file "+in.FilePath+" has been updated successfully."+note, false)
}

type editInput struct {
	FilePath   string  `json:"file_path"`
	OldString  *string `json:"old_string"`
	NewString  *string `json:"new_string"`
	ReplaceAll bool    `json:"replace_all"`
}

func (s *session) edit(_ context.Context, call tape.ToolCall, rec *tape.ToolResult) tape.ToolResult {
	var in editInput
	if r, ok := decodeWrite(call, rec, &in, "file_path", "old_string", "new_string"); !ok {
		return r
	}
	if strings.HasSuffix(in.FilePath, ".ipynb") {
		return asRecorded(toolUseError(call, notebookHint), rec)
	}
	path := s.env.Path(in.FilePath)
	newString := stripTrailing(path, *in.NewString)
	if *in.OldString == newString {
		// Claude Code checks this before it looks at the file.
		return asRecorded(toolUseError(call, "No changes to make: old_string and new_string are exactly the same."), rec)
	}
	if st, err := os.Stat(path); err == nil && st.IsDir() && !s.before("2.1") {
		return asRecorded(toolUseError(call, "Error calling tool (Edit): EISDIR: illegal operation on a directory, read"), rec)
	}
	oldString := *in.OldString
	if b, err := os.ReadFile(path); err == nil && bytes.Contains(b, []byte("\r\n")) && !strings.Contains(oldString, "\r") {
		// Claude Code matches a file with CRLF line ends by its lines, and keeps the CRLF
		// (2.0 too: it edits the text with \r\n made \n and writes it back with CRLF).
		oldString = strings.ReplaceAll(oldString, "\n", "\r\n")
		newString = strings.ReplaceAll(newString, "\n", "\r\n")
	}
	if st, err := os.Lstat(path); err == nil && st.Mode()&fs.ModeSymlink != 0 && !s.before("2.1") && oldString != "" {
		// Claude Code 2.1 checks old_string against the link's target before it refuses to
		// write through the link (internal/fidelity, 2.1.332 seed 20174).
		if b, err := os.ReadFile(path); err == nil {
			switch n := strings.Count(string(b), oldString); {
			case n == 0:
				return asRecorded(s.editError(call, &action.EditError{Kind: action.EditNotFound, Path: path, Old: *in.OldString}), rec)
			case n > 1 && !in.ReplaceAll:
				return asRecorded(s.editError(call, &action.EditError{Kind: action.EditAmbiguous, Path: path, Old: *in.OldString, Count: n}), rec)
			}
		}
	}
	if r, ok := s.writable(call, in.FilePath, path); !ok {
		return r
	}
	original, _ := os.ReadFile(path)
	if s.before("2.1") && original != nil && !utf8.Valid(original) {
		// Claude Code 2.0 reads the file as UTF-8, each bad byte becoming U+FFFD, and writes
		// the edited text back as UTF-8 (seed 8085); a failed edit writes nothing.
		if st, err := os.Stat(path); err == nil && os.WriteFile(path, []byte(action.LossyUTF8(original)), st.Mode().Perm()) == nil {
			defer func() {
				if b, _ := os.ReadFile(path); string(b) == action.LossyUTF8(original) {
					_ = os.WriteFile(path, original, st.Mode().Perm())
				}
			}()
		}
	}
	edits := []action.Edit{{Old: oldString, New: newString, All: in.ReplaceAll}}
	if err := asOwner(path, rec, func() error { _, err := action.EditFile(path, edits); return err }); err != nil {
		// The error quotes old_string as the model gave it, not as matched against CRLF.
		if ee := (*action.EditError)(nil); errors.As(err, &ee) {
			ee.Old = *in.OldString
		}
		return asRecorded(s.editError(call, err), rec)
	}
	note := noteFor(rec)
	if in.ReplaceAll && s.before("2.1") {
		return harness.Text(call, "The file "+in.FilePath+" has been updated. All occurrences of '"+*in.OldString+"' were successfully replaced with '"+newString+"'."+note, false)
	}
	if in.ReplaceAll {
		return harness.Text(call, "The file "+in.FilePath+" has been updated. All occurrences were successfully replaced."+note, false)
	}
	if s.before("2.1") {
		snippet, start := editSnippet(strings.ReplaceAll(string(original), "\r\n", "\n"), *in.OldString, newString)
		return harness.Text(call, "The file "+in.FilePath+" has been updated. "+catNote+numbered20(snippet, start), false)
	}
	return harness.Text(call, "The file "+in.FilePath+" has been updated successfully."+note, false)
}

func (s *session) editError(call tape.ToolCall, err error) tape.ToolResult {
	var ee *action.EditError
	if !errors.As(err, &ee) {
		return harness.Text(call, err.Error(), true)
	}
	switch ee.Kind {
	case action.EditNotFound:
		return toolUseError(call, "String to replace not found in file.\nString: "+ee.Old)
	case action.EditAmbiguous:
		return toolUseError(call, fmt.Sprintf("Found %d matches of the string to replace, but replace_all is false. To replace all occurrences, set replace_all to true. To replace only one occurrence, please provide more context to uniquely identify the instance.\nString: %s", ee.Count, ee.Old))
	case action.EditNoChange:
		return toolUseError(call, "No changes to make: old_string and new_string are exactly the same.")
	case action.EditFileMissing:
		if s.before("2.1") {
			msg := "File does not exist."
			if dir := s.currentDir(); dir != s.env.Cwd {
				msg += " Current working directory: " + dir // seed 8074
			}
			return toolUseError(call, msg)
		}
		return toolUseError(call, "File does not exist. Note: your current working directory is "+s.currentDir()+".")
	case action.EditFileExists:
		return toolUseError(call, "Cannot create new file - file already exists.")
	case action.EditOverlap:
		return toolUseError(call, "Cannot edit file: old_string is a substring of a new_string from a previous edit.")
	}
	return harness.Text(call, err.Error(), true)
}

type multiEditInput struct {
	FilePath string `json:"file_path"`
	Edits    []struct {
		OldString  string `json:"old_string"`
		NewString  string `json:"new_string"`
		ReplaceAll bool   `json:"replace_all"`
	} `json:"edits"`
}

func (s *session) multiEdit(_ context.Context, call tape.ToolCall, rec *tape.ToolResult) tape.ToolResult {
	var in multiEditInput
	if r, ok := decodeWrite(call, rec, &in, "file_path", "edits"); !ok {
		return r
	}
	edits := make([]action.Edit, len(in.Edits))
	for i, e := range in.Edits {
		edits[i] = action.Edit{Old: e.OldString, New: e.NewString, All: e.ReplaceAll}
	}
	if _, err := action.EditFile(s.env.Path(in.FilePath), edits); err != nil {
		return asRecorded(s.editError(call, err), rec)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Applied %d %s to %s:", len(edits), pluralize(len(edits), "edit"), in.FilePath)
	for i, e := range edits {
		fmt.Fprintf(&b, "\n%d. Replaced \"%s\" with \"%s\"", i+1, clip(e.Old, 100), clip(e.New, 100))
	}
	return harness.Text(call, b.String(), false)
}

func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "..."
}
