package action

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParsePatchErrors(t *testing.T) {
	tests := []struct {
		patch string
		want  string
	}{
		{"", "invalid patch: The first line of the patch must be '*** Begin Patch'"},
		{"*** Begin Patch\n*** Add File: a\n+x", "invalid patch: The last line of the patch must be '*** End Patch'"},
		{"*** Begin Patch\n*** Frobnicate: a\n*** End Patch", "invalid hunk at line 2, '*** Frobnicate: a' is not a valid hunk header. Valid hunk headers: '*** Add File: {path}', '*** Delete File: {path}', '*** Update File: {path}'"},
		{"*** Begin Patch\n*** Update File: a\n*** End Patch", "invalid hunk at line 2, Update file hunk for path 'a' is empty"},
		{"*** Begin Patch\n*** Update File: a\n@@\nbad\n*** End Patch", "invalid hunk at line 4, Unexpected line found in update hunk: 'bad'. Every line should start with ' ' (context line), '+' (added line), or '-' (removed line)"},
		{"*** Begin Patch\n*** Update File: a\n@@\n-x\n+y\nzzz\n*** End Patch", "invalid hunk at line 6, Expected update hunk to start with a @@ context marker, got: 'zzz'"},
	}
	for _, tt := range tests {
		_, err := ParsePatch(tt.patch)
		require.Error(t, err, tt.patch)
		assert.Equal(t, tt.want, err.Error())
	}
}

func TestParsePatch(t *testing.T) {
	hs, err := ParsePatch("<<'EOF'\n*** Begin Patch\n*** Add File: a.txt\n+one\n+two\n*** Delete File: b.txt\n*** Update File: c.txt\n*** Move to: d.txt\n@@ func f\n ctx\n-old\n+new\n@@\n-x\n+y\n*** End of File\n*** End Patch\nEOF\n")
	require.NoError(t, err)
	require.Len(t, hs, 3)
	assert.Equal(t, Hunk{Kind: HunkAdd, Path: "a.txt", Contents: "one\ntwo\n"}, hs[0])
	assert.Equal(t, Hunk{Kind: HunkDelete, Path: "b.txt"}, hs[1])
	ctx := "func f"
	assert.Equal(t, Hunk{Kind: HunkUpdate, Path: "c.txt", MoveTo: "d.txt", Chunks: []Chunk{
		{Context: &ctx, Old: []string{"ctx", "old"}, New: []string{"ctx", "new"}, Kept: []int{0, -1}},
		{Old: []string{"x"}, New: []string{"y"}, Kept: []int{-1}, EOF: true},
	}}, hs[2])
}

func TestApplyPatch(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) {
		require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644))
	}
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join(dir, name))
		require.NoError(t, err)
		return string(b)
	}
	write("docs/first.txt", "bye\n")
	write("code.go", "package x\n\nfunc a() {\n\treturn 1\n}\n\nfunc b() {\n\treturn 1\n}\n")
	write("old.txt", "keep\nchange me\n")
	write("tail.txt", "x\nend\nx\nend\n")
	patch := strings.Join([]string{
		"*** Begin Patch",
		"*** Add File: docs/second.txt",
		"+hello",
		"*** Delete File: docs/first.txt",
		"*** Update File: code.go",
		"@@ func b() {",
		"-\treturn 1",
		"+\treturn 2",
		"*** Update File: old.txt",
		"*** Move to: moved/new.txt",
		"@@",
		" keep",
		"-change me",
		"+changed",
		"*** Update File: tail.txt",
		"@@",
		" x",
		"-end",
		"+END",
		"*** End of File",
		"*** End Patch",
	}, "\n")
	res, err := ApplyPatch(dir, patch)
	require.NoError(t, err)
	assert.Equal(t, PatchResult{Added: []string{"docs/second.txt"}, Modified: []string{"code.go", "moved/new.txt", "tail.txt"}, Deleted: []string{"docs/first.txt"}}, res)
	assert.Equal(t, "hello\n", read("docs/second.txt"))
	assert.NoFileExists(t, filepath.Join(dir, "docs/first.txt"))
	assert.Equal(t, "package x\n\nfunc a() {\n\treturn 1\n}\n\nfunc b() {\n\treturn 2\n}\n", read("code.go"))
	assert.NoFileExists(t, filepath.Join(dir, "old.txt"))
	assert.Equal(t, "keep\nchanged\n", read("moved/new.txt"))
	assert.Equal(t, "x\nend\nx\nEND\n", read("tail.txt"), "End of File anchors the last occurrence")

	// Lenient matching: trailing whitespace in the file.
	write("ws.txt", "a  \nb\n")
	_, err = ApplyPatch(dir, "*** Begin Patch\n*** Update File: ws.txt\n@@\n-a\n+A\n*** End Patch")
	require.NoError(t, err)
	assert.Equal(t, "A\nb\n", read("ws.txt"))
}

func TestApplyPatchFailureChangesNothing(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "a.txt"), []byte("one\n"), 0o644))
	tests := []struct {
		patch string
		want  string
	}{
		{"*** Begin Patch\n*** Add File: new.txt\n+x\n*** Update File: a.txt\n@@\n-this line is not in the file\n+y\n*** End Patch",
			"Failed to find expected lines in " + filepath.Join(dir, "a.txt") + ":\nthis line is not in the file"},
		{"*** Begin Patch\n*** Update File: a.txt\n@@ nowhere\n-one\n+two\n*** End Patch",
			"Failed to find context 'nowhere' in " + filepath.Join(dir, "a.txt")},
		{"*** Begin Patch\n*** Delete File: gone.txt\n*** End Patch",
			"Failed to read " + filepath.Join(dir, "gone.txt") + ": No such file or directory (os error 2)"},
		{"*** Begin Patch\n*** Update File: gone.txt\n@@\n-a\n+b\n*** End Patch",
			"Failed to read file to update " + filepath.Join(dir, "gone.txt") + ": No such file or directory (os error 2)"},
	}
	for _, tt := range tests {
		_, err := ApplyPatch(dir, tt.patch)
		var pe *PatchApplyError
		require.ErrorAs(t, err, &pe)
		assert.Equal(t, tt.want, err.Error())
		assert.NoFileExists(t, filepath.Join(dir, "new.txt"))
		b, _ := os.ReadFile(filepath.Join(dir, "a.txt"))
		assert.Equal(t, "one\n", string(b))
	}
}

func FuzzParsePatch(f *testing.F) {
	for _, s := range []string{
		"*** Begin Patch\n*** Add File: a\n+x\n*** End Patch",
		"*** Begin Patch\n*** Update File: a\n*** Move to: b\n@@ ctx\n a\n-b\n+c\n*** End of File\n*** End Patch",
		"*** Begin Patch\n*** Delete File: a\n*** End Patch\n",
		"<<EOF\n*** Begin Patch\n*** Update File: a\n@@\n\n-\n+\n*** End Patch\nEOF",
		"*** Begin Patch\n*** Update File: a\n@@\n*** End of File\n*** End Patch",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		hs, err := ParsePatch(s)
		if err != nil {
			var pe *PatchParseError
			if !asParseError(err, &pe) {
				t.Fatalf("error %T is not a *PatchParseError: %v", err, err)
			}
			return
		}
		for _, h := range hs {
			if h.Kind == HunkUpdate && len(h.Chunks) == 0 {
				t.Fatalf("update hunk without chunks: %q", s)
			}
		}
	})
}

func asParseError(err error, pe **PatchParseError) bool {
	p, ok := err.(*PatchParseError)
	*pe = p
	return ok
}

// TestApplyPatchLineEnds holds what Codex 0.171's apply_patch (the codex binary run as
// apply_patch) wrote for each file and patch: added lines end as the file's first line,
// context lines keep their end, lines are matched without "\r".
func TestApplyPatchLineEnds(t *testing.T) {
	tests := []struct{ before, chunks, after string }{
		{"a\r\nb\r\nc\r\n", "@@\n a\n-b\n+B\n+B2\n c\n", "a\r\nB\r\nB2\r\nc\r\n"},
		{"main\nconfig\r\nfunc x\ngamma\r\n", "@@\n func x\n+new\n gamma\n", "main\nconfig\r\nfunc x\nnew\ngamma\r\n"},
		{"a\r\nb\nc\n", "@@\n a\n b\n+X\n c\n", "a\r\nb\nX\r\nc\n"},
		{"a\nb\r\nc\r\n", "@@\n b\n+X\n c\n", "a\nb\r\nX\nc\r\n"},
		{"a\r\nb\r\nc", "@@\n-c\n+X\n", "a\r\nb\r\nX\r\n"},
		{"a\r\nb\r\nc\r\n", "@@\n c\n+X\n*** End of File\n", "a\r\nb\r\nc\r\nX\r\n"},
		{"\r\n", "@@\n+X\n", "\r\nX\r\n"},
		{"a\nb\r\nc\r\nd\r\n", "@@\n-b\n+X\n", "a\nX\nc\r\nd\r\n"},
		{"a\r\nb\nc\nd\n", "@@\n-b\n-c\n+X\n", "a\r\nX\r\nd\n"},
		{"a  \nb\n", "@@\n a\n+X\n b\n", "a\nX\nb\n"},
		{"x\na\r\nb\n", "@@\n a\n+X\n b\n", "x\na\r\nX\nb\n"},
		{"x\r\na\nb\r\n", "@@\n-a\n+a\n+X\n b\n", "x\r\na\r\nX\r\nb\r\n"},
		{"a\r\nb", "@@\n a\n+X\n b\n", "a\r\nX\r\nb\r\n"},
		{"a\nb\r\nc", "@@\n b\n+X\n", "a\nb\r\nX\nc\n"},
		{"a\r\nb\na\n", "@@\n-a\n+Z\n", "Z\r\nb\na\n"},
		{"b\na\r\na\n", "@@\n-a\n+Z\n", "b\nZ\na\n"},
		{"a\n\r\nb\n", "@@\n a\n+X\n \n b\n", "a\nX\n\r\nb\n"},
		{"a\r\nb\r\n", "@@\n-a\n+X\n@@\n b\n+Y\n", "X\r\nb\r\nY\r\n"},
		{"only\r\n", "@@\n-only\n", ""},
		{"a\n\n", "@@\n+X\n", "a\n\nX\n"},
		{"a\r\n\r\n", "@@\n+X\n", "a\r\n\r\nX\r\n"},
		{"a\nb", "@@\n+X\n", "a\nb\nX\n"},
	}
	for _, tt := range tests {
		dir := t.TempDir()
		require.NoError(t, os.WriteFile(filepath.Join(dir, "f.txt"), []byte(tt.before), 0o644))
		_, err := ApplyPatch(dir, "*** Begin Patch\n*** Update File: f.txt\n"+tt.chunks+"*** End Patch")
		require.NoError(t, err, "%q", tt.before)
		b, err := os.ReadFile(filepath.Join(dir, "f.txt"))
		require.NoError(t, err)
		assert.Equal(t, tt.after, string(b), "%q with %q", tt.before, tt.chunks)
	}
}

func TestRustUTF8(t *testing.T) {
	tests := []struct {
		in   string
		want string
	}{
		{"plain é 🙂", ""},
		{"caf\xe9 cr", "invalid utf-8 sequence of 1 bytes from index 3"},
		{"ab\xe9", "incomplete utf-8 byte sequence from index 2"},
		{"a\xe2\x82", "incomplete utf-8 byte sequence from index 1"},
		{"a\xe2\x82x", "invalid utf-8 sequence of 2 bytes from index 1"},
		{"\xf0\x9f\x99x", "invalid utf-8 sequence of 3 bytes from index 0"},
		{"\xed\xa0\x80", "invalid utf-8 sequence of 1 bytes from index 0"},
		{"\xc0\x80", "invalid utf-8 sequence of 1 bytes from index 0"},
		{"\xff", "invalid utf-8 sequence of 1 bytes from index 0"},
	}
	for _, tt := range tests {
		err := utf8Error([]byte(tt.in))
		if tt.want == "" {
			assert.NoError(t, err, "%q", tt.in)
			continue
		}
		assert.EqualError(t, err, tt.want, "%q", tt.in)
	}
}

func TestLossyUTF8(t *testing.T) {
	for in, want := range map[string]string{
		"plain é":               "plain é",
		"caf\xe9 cr\xe8me":      "caf\uFFFD cr\uFFFDme",
		"a\xe2\x82x":            "a\uFFFDx",
		"\xf0\x9f\x99x\xff\xfe": "\uFFFDx\uFFFD\uFFFD",
		"ab\xe9":                "ab\uFFFD",
		"\xed\xa0\x80":          "\uFFFD\uFFFD\uFFFD",
	} {
		assert.Equal(t, want, LossyUTF8([]byte(in)), "%q", in)
	}
}

// TestApplyPatchLF holds what Codex 0.161 (before it kept line ends) wrote.
func TestApplyPatchLF(t *testing.T) {
	tests := []struct{ before, chunks, after string }{
		{"a\r\nb\r\nc\r\n", "@@\n a\n-b\n+B\n c\n", "a\nB\nc\n"},
		{"x\na\r\nb\n", "@@\n a\n+X\n b\n", "x\na\nX\nb\n"},
		{"a\n\n", "@@\n+X\n", "a\nX\n"},
	}
	for _, tt := range tests {
		dir := t.TempDir()
		require.NoError(t, os.WriteFile(filepath.Join(dir, "f.txt"), []byte(tt.before), 0o644))
		_, err := ApplyPatchWith(dir, "*** Begin Patch\n*** Update File: f.txt\n"+tt.chunks+"*** End Patch", PatchOptions{LFOnly: true})
		require.NoError(t, err)
		b, err := os.ReadFile(filepath.Join(dir, "f.txt"))
		require.NoError(t, err)
		assert.Equal(t, tt.after, string(b), "%q with %q", tt.before, tt.chunks)
	}
}
