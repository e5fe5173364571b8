package local

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tapebox/tapebox/internal/testutil/sandboxtest"
	"github.com/tapebox/tapebox/sandbox"
	"github.com/tapebox/tapebox/workspace"
)

func TestLocalWorkspace(t *testing.T) {
	sb, dir := sandboxtest.OpenLocal(t, sandbox.Options{})
	sandboxtest.CheckWorkspace(t, sb)

	// Restoring needs an empty directory.
	snap, info, _ := sandboxtest.SnapshotFile(t)
	err := sb.RestoreWorkspace(t.Context(), snap, info)
	require.ErrorIs(t, err, workspace.ErrNotEmpty)
	assert.Contains(t, err.Error(), "restore workspace in local:"+dir)

	// A snapshot that is not the recorded one, and a hostile one, are refused before anything
	// is written; the errors name the file.
	sb2, dir2 := sandboxtest.OpenLocal(t, sandbox.Options{})
	bad := info
	bad.Digest = "sha256:" + strings.Repeat("0", 64)
	err = sandboxtest.CheckRestoreRefused(t, sb2, snap, bad)
	assert.Contains(t, err.Error(), `"link/tmp/tapebox-evil"`)
	entries, err := os.ReadDir(dir2)
	require.NoError(t, err)
	assert.Empty(t, entries)
	assert.NoFileExists(t, "/tmp/tapebox-evil")

	err = sb2.RestoreWorkspace(t.Context(), filepath.Join(t.TempDir(), "missing.tar.zst"), info)
	assert.ErrorContains(t, err, "missing.tar.zst")
}

// TestJailManifestBounded: a tape's sparse file of 64 GiB in a jailed sandbox does not make
// its end manifest hash 64 GiB of zeros.
func TestJailManifestBounded(t *testing.T) {
	sb, _ := openJailT(t, sandbox.Options{})
	sandboxtest.CheckManifestBounded(t, sb)
}
