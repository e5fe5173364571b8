package action

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestReadFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f.txt")
	require.NoError(t, os.WriteFile(p, []byte("a\nb\nc\n"), 0o644))
	tests := []struct {
		offset, limit int
		lines         []string
		first, total  int
	}{
		{0, 0, []string{"a", "b", "c", ""}, 1, 4},
		{2, 2, []string{"b", "c"}, 2, 4},
		{4, 0, []string{""}, 4, 4},
		{9, 0, nil, 9, 4},
	}
	for _, tt := range tests {
		ft, err := ReadFile(p, tt.offset, tt.limit)
		require.NoError(t, err)
		assert.Equal(t, tt.lines, ft.Lines)
		assert.Equal(t, tt.first, ft.Offset)
		assert.Equal(t, tt.total, ft.Total)
	}
	_, err := ReadFile(filepath.Join(dir, "missing"), 0, 0)
	require.ErrorIs(t, err, fs.ErrNotExist)
	bin := filepath.Join(dir, "b.dat2")
	require.NoError(t, os.WriteFile(bin, []byte("ab\x00cd"), 0o644))
	_, err = ReadFile(bin, 0, 0)
	require.ErrorIs(t, err, ErrBinary)
	zip := filepath.Join(dir, "a.zip")
	require.NoError(t, os.WriteFile(zip, []byte("text really"), 0o644))
	_, err = ReadFile(zip, 0, 0)
	require.ErrorIs(t, err, ErrBinary, "by extension")
	_, err = ReadFile(dir, 0, 0)
	require.ErrorContains(t, err, "is a directory")
}

func TestWriteFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "deep", "new.txt")
	created, err := WriteFile(p, "x")
	require.NoError(t, err)
	assert.True(t, created)
	require.NoError(t, os.Chmod(p, 0o600))
	created, err = WriteFile(p, "y")
	require.NoError(t, err)
	assert.False(t, created)
	st, _ := os.Stat(p)
	assert.Equal(t, fs.FileMode(0o600), st.Mode().Perm(), "an existing file keeps its mode")
}

func TestEditFile(t *testing.T) {
	tests := []struct {
		name  string
		start string
		edits []Edit
		want  string
		kind  EditErrorKind
		count int
	}{
		{"one", "a b c", []Edit{{Old: "b", New: "B"}}, "a B c", 0, 0},
		{"all", "x x x", []Edit{{Old: "x", New: "y", All: true}}, "y y y", 0, 0},
		{"ambiguous", "x x", []Edit{{Old: "x", New: "y"}}, "", EditAmbiguous, 2},
		{"not found", "abc", []Edit{{Old: "zz", New: "y"}}, "", EditNotFound, 0},
		{"no change", "abc", []Edit{{Old: "a", New: "a"}}, "", EditNoChange, 0},
		{"sequence", "one two", []Edit{{Old: "one", New: "1"}, {Old: "two", New: "2"}}, "1 2", 0, 0},
		{"overlap", "ab", []Edit{{Old: "a", New: "xyz"}, {Old: "y", New: "q"}}, "", EditOverlap, 0},
		{"all or nothing", "ab", []Edit{{Old: "a", New: "A"}, {Old: "zz", New: "q"}}, "", EditNotFound, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "f")
			require.NoError(t, os.WriteFile(p, []byte(tt.start), 0o644))
			_, err := EditFile(p, tt.edits)
			b, _ := os.ReadFile(p)
			if tt.kind == 0 {
				require.NoError(t, err)
				assert.Equal(t, tt.want, string(b))
				return
			}
			var ee *EditError
			require.ErrorAs(t, err, &ee)
			assert.Equal(t, tt.kind, ee.Kind)
			assert.Equal(t, tt.count, ee.Count)
			assert.Equal(t, tt.start, string(b), "a failed edit writes nothing")
		})
	}
	p := filepath.Join(t.TempDir(), "new")
	res, err := EditFile(p, []Edit{{Old: "", New: "fresh"}})
	require.NoError(t, err)
	assert.True(t, res.Created)
	_, err = EditFile(filepath.Join(t.TempDir(), "missing"), []Edit{{Old: "a", New: "b"}})
	var ee *EditError
	require.ErrorAs(t, err, &ee)
	assert.Equal(t, EditFileMissing, ee.Kind)
}
