package executor_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestServePiEditsInOrder: a chain of Pi edits of one file, all in flight at once, applies
// in the order of the calls, as Pi's per-file mutation queue applies them: each finds the
// text the one before wrote.
func TestServePiEditsInOrder(t *testing.T) {
	s := startSession(t)
	dir := t.TempDir()
	s.hello("pi", dir)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "n.txt"), []byte("v0\n"), 0o644))
	const n = 50
	go func() {
		for i := range n {
			s.send(call(fmt.Sprint(i), "edit", map[string]any{"path": "n.txt", "edits": []any{
				map[string]any{"oldText": fmt.Sprintf("v%d\n", i), "newText": fmt.Sprintf("v%d\n", i+1)},
			}}, nil))
		}
	}()
	for range n {
		env := s.recv()
		require.NotNil(t, env.Result, string(env.Raw))
		assert.Equal(t, "Successfully replaced 1 block(s) in n.txt.", env.Result.Result.Text(), "call %s", env.Result.ID)
	}
	got, err := os.ReadFile(filepath.Join(dir, "n.txt"))
	require.NoError(t, err)
	assert.Equal(t, fmt.Sprintf("v%d\n", n), string(got))
}
