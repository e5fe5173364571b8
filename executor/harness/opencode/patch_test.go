package opencode_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/executor/harness/opencode"
	"github.com/tapebox/tapebox/internal/testutil/harnesstest"
)

// patchSession is a session in a directory of its own, a git worktree (a .git directory in
// it) when git is set: opencode names the patched files relative to the worktree, "/" outside
// git.
func patchSession(t *testing.T, git bool) (*harnesstest.Session, func(string) string) {
	t.Helper()
	s := harnesstest.New(t, opencode.New(), "call_1", nil)
	root := "/"
	if git {
		require.NoError(t, os.Mkdir(filepath.Join(s.Dir, ".git"), 0o755))
		root = s.Dir
	}
	rel := func(name string) string {
		r, err := filepath.Rel(root, filepath.Join(s.Dir, name))
		require.NoError(t, err)
		return r
	}
	return s, rel
}

func patchText(lines ...string) string {
	return "*** Begin Patch\n" + strings.Join(lines, "\n") + "\n*** End Patch"
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	return string(b)
}

// Each kind of hunk succeeds with opencode 1.18.33's summary and leaves the files it would.
func TestApplyPatchSuccess(t *testing.T) {
	for _, tc := range []struct {
		name    string
		before  map[string]string
		patch   string
		summary []string // the summary's lines, paths relative to the worktree (REL:name)
		after   map[string]string
		gone    []string
	}{
		{name: "add in new directories", patch: patchText("*** Add File: new/deep/a.txt", "+one", "+two"),
			summary: []string{"A REL:new/deep/a.txt"}, after: map[string]string{"new/deep/a.txt": "one\ntwo\n"}},
		{name: "add empty", patch: patchText("*** Add File: empty.txt"),
			summary: []string{"A REL:empty.txt"}, after: map[string]string{"empty.txt": ""}},
		{name: "add of one blank line is empty", patch: patchText("*** Add File: blank.txt", "+"),
			summary: []string{"A REL:blank.txt"}, after: map[string]string{"blank.txt": ""}},
		{name: "add skips unprefixed lines", patch: patchText("*** Add File: a.txt", "+one", "no prefix", "+two"),
			summary: []string{"A REL:a.txt"}, after: map[string]string{"a.txt": "one\ntwo\n"}},
		{name: "add over a file", before: map[string]string{"a.txt": "old\n"}, patch: patchText("*** Add File: a.txt", "+new"),
			summary: []string{"A REL:a.txt"}, after: map[string]string{"a.txt": "new\n"}},
		{name: "update with several chunks and a context header",
			before:  map[string]string{"f.txt": "a\nb\nc\nd\ne\nf\n"},
			patch:   patchText("*** Update File: f.txt", "@@", " a", "-b", "+B", "@@ d", "-e", "+E1", "+E2"),
			summary: []string{"M REL:f.txt"}, after: map[string]string{"f.txt": "a\nB\nc\nd\nE1\nE2\nf\n"}},
		{name: "update of a file without a last line end",
			before: map[string]string{"f.txt": "a\nb"}, patch: patchText("*** Update File: f.txt", "@@", "-b", "+c"),
			summary: []string{"M REL:f.txt"}, after: map[string]string{"f.txt": "a\nc\n"}},
		{name: "update of a CRLF file: the lines the patch writes lose their \\r",
			before: map[string]string{"f.txt": "a\r\nb\r\nc\r\n"}, patch: patchText("*** Update File: f.txt", "@@", " a", "-b", "+B"),
			summary: []string{"M REL:f.txt"}, after: map[string]string{"f.txt": "a\nB\nc\r\n"}},
		{name: "pure addition goes at the end",
			before: map[string]string{"f.txt": "a\n"}, patch: patchText("*** Update File: f.txt", "@@", "+z"),
			summary: []string{"M REL:f.txt"}, after: map[string]string{"f.txt": "a\nz\n"}},
		{name: "lines matched trimmed and with Unicode punctuation",
			before: map[string]string{"f.txt": "  say \u201chi\u201d \u2014 ok  \nnext\n"}, patch: patchText("*** Update File: f.txt", "@@", `-say "hi" - ok`, "+said"),
			summary: []string{"M REL:f.txt"}, after: map[string]string{"f.txt": "said\nnext\n"}},
		{name: "end of file marker ends the chunks: the chunk after it is skipped",
			before:  map[string]string{"f.txt": "a\nb\n"},
			patch:   patchText("*** Update File: f.txt", "@@", "-b", "+B", "*** End of File", "@@", "-a", "+A"),
			summary: []string{"M REL:f.txt"}, after: map[string]string{"f.txt": "a\nB\n"}},
		{name: "update without chunks adds the last line end",
			before: map[string]string{"f.txt": "x"}, patch: patchText("*** Update File: f.txt", "stray line"),
			summary: []string{"M REL:f.txt"}, after: map[string]string{"f.txt": "x\n"}},
		{name: "update keeps a byte order mark and replaces invalid UTF-8",
			before: map[string]string{"f.txt": "\uFEFFa\nb\xff\n"}, patch: patchText("*** Update File: f.txt", "@@", "-a", "+A"),
			summary: []string{"M REL:f.txt"}, after: map[string]string{"f.txt": "\uFEFFA\nb\uFFFD\n"}},
		{name: "move", before: map[string]string{"old.txt": "a\nb\n"},
			patch:   patchText("*** Update File: old.txt", "*** Move to: moved/new.txt", "@@", "-a", "+A"),
			summary: []string{"M REL:moved/new.txt"}, after: map[string]string{"moved/new.txt": "A\nb\n"}, gone: []string{"old.txt"}},
		{name: "delete", before: map[string]string{"d.txt": "x\n", "keep.txt": "k\n"}, patch: patchText("*** Delete File: d.txt"),
			summary: []string{"D REL:d.txt"}, gone: []string{"d.txt"}, after: map[string]string{"keep.txt": "k\n"}},
		{name: "several hunks in order", before: map[string]string{"u.txt": "1\n", "d.txt": "x\n"},
			patch:   patchText("*** Add File: a.txt", "+a", "*** Delete File: d.txt", "*** Update File: u.txt", "@@", "-1", "+2"),
			summary: []string{"A REL:a.txt", "D REL:d.txt", "M REL:u.txt"}, after: map[string]string{"a.txt": "a\n", "u.txt": "2\n"}, gone: []string{"d.txt"}},
		{name: "text around the markers", patch: "Here it is:\n" + patchText("*** Add File: a.txt", "+a") + "\nthanks",
			summary: []string{"A REL:a.txt"}, after: map[string]string{"a.txt": "a\n"}},
		{name: "heredoc", patch: "cat <<'EOF'\n" + patchText("*** Add File: a.txt", "+a") + "\nEOF",
			summary: []string{"A REL:a.txt"}, after: map[string]string{"a.txt": "a\n"}},
		{name: "CRLF patch: its lines keep their \\r", patch: strings.ReplaceAll(patchText("*** Add File: a.txt", "+a"), "\n", "\r\n"),
			summary: []string{"A REL:a.txt"}, after: map[string]string{"a.txt": "a\r\n"}},
	} {
		for _, git := range []bool{false, true} {
			t.Run(tc.name+map[bool]string{false: "", true: "/git"}[git], func(t *testing.T) {
				s, rel := patchSession(t, git)
				for name, content := range tc.before {
					s.Write(name, content)
				}
				var want []string
				for _, l := range tc.summary {
					letter, name, _ := strings.Cut(l, " REL:")
					want = append(want, letter+" "+rel(name))
				}
				res := s.Run("apply_patch", m{"patchText": tc.patch}, nil)
				assert.Equal(t, "Success. Updated the following files:\n"+strings.Join(want, "\n"), res.Text())
				assert.False(t, res.IsError)
				for name, content := range tc.after {
					assert.Equal(t, content, readFile(t, filepath.Join(s.Dir, name)), name)
				}
				for _, name := range tc.gone {
					assert.NoFileExists(t, filepath.Join(s.Dir, name))
				}
			})
		}
	}
}

// Each error of opencode 1.18.33's apply_patch, worded as it words it; a patch that fails
// its checks writes nothing, one that fails while written keeps the hunks before.
func TestApplyPatchErrors(t *testing.T) {
	s, _ := patchSession(t, false)
	p := func(name string) string { return filepath.Join(s.Dir, name) }
	s.Write("f.txt", "a\nb\n")
	require.NoError(t, os.Mkdir(p("dir"), 0o755))
	for _, tc := range []struct {
		name, patch, want string
	}{
		{"no patch", "", "patchText is required"},
		{"no markers", "*** Add File: a.txt\n+a", "apply_patch verification failed: Error: Invalid patch format: missing Begin/End markers"},
		{"end before begin", "*** End Patch\n*** Begin Patch", "apply_patch verification failed: Error: Invalid patch format: missing Begin/End markers"},
		{"empty", "*** Begin Patch\r\n*** End Patch\n", "patch rejected: empty patch"},
		{"no hunks", patchText("just words"), "apply_patch verification failed: no hunks found"},
		{"update of a missing file", patchText("*** Update File: missing.txt", "@@", "-a", "+b"), "apply_patch verification failed: Failed to read file to update: " + p("missing.txt")},
		{"update of a directory", patchText("*** Update File: dir", "@@", "-a", "+b"), "apply_patch verification failed: Failed to read file to update: " + p("dir")},
		{"lines not found", patchText("*** Update File: f.txt", "@@", " a", "-zzz", "+b"), "apply_patch verification failed: Error: Failed to find expected lines in " + p("f.txt") + ":\na\nzzz"},
		{"context not found", patchText("*** Update File: f.txt", "@@ nowhere", "-a", "+b"), "apply_patch verification failed: Error: Failed to find context 'nowhere' in " + p("f.txt")},
		{"chunk failing halfway", patchText("*** Add File: first.txt", "+x", "*** Update File: f.txt", "@@", "-a", "+A", "@@", "-zzz", "+y"), "apply_patch verification failed: Error: Failed to find expected lines in " + p("f.txt") + ":\nzzz"},
		{"delete of a missing file", patchText("*** Delete File: missing.txt"), "apply_patch verification failed: NotFound: FileSystem.readFile (" + p("missing.txt") + ")"},
		{"delete of a directory", patchText("*** Delete File: dir"), "apply_patch verification failed: BadResource: FileSystem.readFile (" + p("dir") + ")"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := s.Run("apply_patch", m{"patchText": tc.patch}, nil)
			assert.Equal(t, tc.want, res.Text())
			assert.True(t, res.IsError)
			assert.Equal(t, "a\nb\n", readFile(t, p("f.txt")), "f.txt changed")
			assert.NoFileExists(t, p("first.txt"))
		})
	}
	t.Run("write failing halfway", func(t *testing.T) {
		res := s.Run("apply_patch", m{"patchText": patchText("*** Add File: first.txt", "+x", "*** Add File: f.txt/under.txt", "+y", "*** Delete File: f.txt")}, nil)
		assert.Equal(t, "BadResource: FileSystem.writeFile ("+p("f.txt/under.txt")+")", res.Text())
		assert.True(t, res.IsError)
		assert.Equal(t, "x\n", readFile(t, p("first.txt")), "the hunk before the failure is written")
		assert.FileExists(t, p("f.txt"), "the hunk after the failure is not")
	})
}

// A call of a tool the request did not offer (edit for a GPT model, which gets apply_patch)
// is not performed: opencode lists its own tools in the answer, so the recording's replays.
func TestNotOfferedIsNotPerformed(t *testing.T) {
	s, _ := patchSession(t, false)
	s.NotOffered("write", m{"filePath": filepath.Join(s.Dir, "w.txt"), "content": "x"})
	s.NotOffered("apply_patch", m{"patchText": patchText("*** Add File: a.txt", "+a")})
	assert.NoFileExists(t, filepath.Join(s.Dir, "w.txt"))
	assert.NoFileExists(t, filepath.Join(s.Dir, "a.txt"))
}
