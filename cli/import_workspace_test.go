package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/tape"
)

// import --workspace-git REV: a Codex session that started from a clean checkout of REV and
// ended in the working tree. The imported tape carries the checkout as its start snapshot
// and the working tree as its end manifest (.git left out), so its replay starts there and
// compare checks the end state: identical when the tree is what the session made, a planted
// file in the tree is named.
func TestImportWorkspaceGit(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	rec := filepath.Join("..", "testdata", "replay", "codex.json")
	// What the session does from its start: replay the recording once on a directory that
	// holds the repository's committed files.
	repo := t.TempDir()
	git := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-C", repo, "-c", "user.name=t", "-c", "user.email=t@t"}, args...)...)
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "git %v: %s", args, out)
	}
	git("init", "-q")
	require.NoError(t, os.WriteFile(filepath.Join(repo, "README"), []byte("seed\n"), 0o644))
	git("add", "README")
	git("commit", "-q", "-m", "start")
	code, _, stderr := runVerbForTest(t, "replay", "--tape", rec, "--sandbox", "local:"+repo, "--speed", "0", "--no-workspace", "--output", filepath.Join(t.TempDir(), "made.json"))
	require.Equal(t, ExitOK, code, stderr)

	sessions := t.TempDir()
	code, _, stderr = runVerbForTest(t, "export", "--to", "codex", "--out", sessions, rec)
	require.Equal(t, ExitOK, code, stderr)
	tapes := t.TempDir()
	code, _, stderr = runVerbForTest(t, "import", "--from", "codex", "--workspace-git", "HEAD", "--workspace-repo", repo, "--out", tapes, sessions)
	require.Equal(t, ExitOK, code, stderr)
	var imported string
	for _, f := range filesUnder(t, tapes) {
		if strings.HasSuffix(f, ".json") {
			imported = filepath.Join(tapes, f)
		}
	}
	require.NotEmpty(t, imported)
	tp, err := tape.LoadFile(imported)
	require.NoError(t, err)
	require.NotNil(t, tp.Meta.Workspace)
	assert.Equal(t, 1, tp.Meta.Workspace.Files, "the checkout: README")
	assert.FileExists(t, filepath.Join(tapes, tp.Meta.Workspace.Snapshot))
	require.NotEmpty(t, tp.Meta.Workspace.End)
	for _, e := range tp.Meta.Workspace.End {
		assert.False(t, strings.HasPrefix(e.Path, ".git"), "%s in the end manifest", e.Path)
	}

	replayed := filepath.Join(t.TempDir(), "replay.json")
	code, _, stderr = runVerbForTest(t, "replay", "--tape", imported, "--sandbox", "local:"+t.TempDir(), "--speed", "0", "--output", replayed)
	require.Equal(t, ExitOK, code, stderr)
	code, out, _ := runVerbForTest(t, "compare", imported, replayed)
	assert.Equal(t, ExitOK, code, "%s", out)
	assert.Contains(t, out, "IDENTICAL")

	// a file the session did not make, planted in the working tree before the import
	require.NoError(t, os.WriteFile(filepath.Join(repo, "planted.txt"), []byte("x"), 0o644))
	tapes2 := t.TempDir()
	code, _, stderr = runVerbForTest(t, "import", "--from", "codex", "--workspace-git", "HEAD", "--workspace-repo", repo, "--out", tapes2, sessions)
	require.Equal(t, ExitOK, code, stderr)
	imported2 := filepath.Join(tapes2, filepath.Base(imported))
	code, out, _ = runVerbForTest(t, "compare", imported2, replayed)
	assert.Equal(t, ExitFailure, code)
	assert.Contains(t, out, "planted.txt")

	code, _, stderr = runVerbForTest(t, "import", "--workspace-git", "HEAD", "--workspace", repo, "--out", t.TempDir(), sessions)
	assert.Equal(t, ExitUsage, code, stderr)
}
