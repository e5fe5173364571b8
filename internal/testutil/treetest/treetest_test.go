package treetest_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/tapebox/tapebox/internal/testutil/treetest"
)

func TestList(t *testing.T) {
	dir := t.TempDir()
	assert.Empty(t, treetest.List(t, dir))
	for _, p := range []string{"b/c/d.txt", "a.txt", "a/z", "b/e"} {
		assert.NoError(t, os.MkdirAll(filepath.Join(dir, filepath.Dir(p)), 0o755))
		assert.NoError(t, os.WriteFile(filepath.Join(dir, p), nil, 0o644))
	}
	assert.NoError(t, os.Mkdir(filepath.Join(dir, "empty"), 0o755))
	assert.Equal(t, []string{"a.txt", "a/", "a/z", "b/", "b/c/", "b/c/d.txt", "b/e", "empty/"}, treetest.List(t, dir))
	assert.Equal(t, []string{"a.txt", "a/z", "b/c/d.txt", "b/e"}, treetest.Files(t, dir))
}
