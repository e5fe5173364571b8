package workspace

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// WalkRoot visits in name order, does not follow a link out of the root, and leaves out a
// directory fn skips; OpenSame refuses an entry that is no longer what Lstat saw.
func TestWalkRoot(t *testing.T) {
	outside, dir := t.TempDir(), t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(outside, "secret"), []byte("x"), 0o600))
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "b/skip/deep"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "b/f"), []byte("f"), 0o644))
	require.NoError(t, os.Symlink(outside, filepath.Join(dir, "a-link")))
	root, err := os.OpenRoot(dir)
	require.NoError(t, err)
	defer root.Close()
	var seen []string
	require.NoError(t, WalkRoot(root, func(rel string, fi fs.FileInfo) error {
		seen = append(seen, rel)
		if rel == "b/skip" {
			return fs.SkipDir
		}
		return nil
	}))
	assert.Equal(t, []string{"a-link", "b", "b/f", "b/skip"}, seen)

	fi, err := root.Lstat("b/f")
	require.NoError(t, err)
	require.NoError(t, os.Remove(filepath.Join(dir, "b/f")))
	require.NoError(t, os.Symlink(filepath.Join(outside, "secret"), filepath.Join(dir, "b/f")))
	_, err = OpenSame(root, "b/f", fi)
	assert.Error(t, err, "a file swapped for a link out of the root")
}
