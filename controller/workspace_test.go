package controller_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/compare"
	"github.com/tapebox/tapebox/controller"
	"github.com/tapebox/tapebox/executor/harness"
	"github.com/tapebox/tapebox/sandbox"
	"github.com/tapebox/tapebox/tape"
	"github.com/tapebox/tapebox/workspace"
)

// workspaceTape records a Bash tape whose workspace starts with the files of start (a real
// snapshot beside the tape) and ends with end's manifest; it returns the tape's path.
func workspaceTape(t *testing.T, start map[string]string, cmds, outputs []string, end map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	tree := func(files map[string]string) string {
		d := t.TempDir()
		for name, content := range files {
			p := filepath.Join(d, name)
			require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
			require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
		}
		return d
	}
	path := filepath.Join(dir, "run.json")
	info, err := workspace.SnapshotFile(t.Context(), tree(start), workspace.SnapshotPath(path), workspace.Options{})
	require.NoError(t, err)
	m, err := workspace.ManifestDir(t.Context(), tree(end), workspace.Options{})
	require.NoError(t, err)
	rec := bashTape(cmds, outputs)
	rec.Meta.Ended = &tape.Ended{Reason: tape.EndComplete}
	rec.Meta.Workspace = &tape.Workspace{Snapshot: filepath.Base(workspace.SnapshotPath(path)), Digest: info.Digest, Size: info.Size,
		Files: info.Files, Bytes: info.Bytes, Exclude: workspace.Options{}.Patterns(), End: m.TapeEntries()}
	require.NoError(t, tape.Save(path, rec))
	return path
}

// TestReplayRestoresWorkspace: a replay restores the start snapshot before step 1 (the first
// call reads a file that only the snapshot has), reads the end manifest into its tape, and
// compare checks it.
func TestReplayRestoresWorkspace(t *testing.T) {
	start := map[string]string{"README.md": "hello\n", "src/a.txt": "a\n"}
	end := map[string]string{"README.md": "hello\n", "src/a.txt": "a\n", "out.txt": "hello\n"}
	path := workspaceTape(t, start, []string{"cat README.md", "cp README.md out.txt"}, []string{"hello", "(Bash completed with no output)"}, end)
	rec, err := tape.LoadFile(path)
	require.NoError(t, err)
	snap, err := controller.SnapshotFor(path, rec)
	require.NoError(t, err)
	require.Equal(t, workspace.SnapshotPath(path), snap)

	for _, tc := range []struct {
		name      string
		spoil     func(dir string)
		identical bool
		says      string
	}{
		{"as recorded", func(string) {}, true, "end state: identical (4 entries)"},
		{"a file removed before the end", func(dir string) { os.Remove(filepath.Join(dir, "src/a.txt")) }, false, "src/a.txt: missing"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sb := localSandbox(t)
			require.NoError(t, os.Remove(sb.Cwd()))
			res, err := controller.Replay(t.Context(), rec, &spoiling{Sandbox: sb, spoil: tc.spoil}, controller.Options{Cwd: sb.Cwd(), Snapshot: snap})
			require.NoError(t, err)
			require.NotNil(t, res.Tape.Meta.Workspace)
			r := compare.Compare(rec, res.Tape)
			var b strings.Builder
			r.WriteText(&b)
			require.Equal(t, tc.identical, r.Identical, b.String())
			require.Contains(t, b.String(), tc.says)
			require.Empty(t, r.Differences, "the tool results match either way")
		})
	}
}

// spoiling is a sandbox that changes the workspace just before its end manifest is read.
type spoiling struct {
	*sandbox.Sandbox
	spoil func(dir string)
}

func (s *spoiling) WorkspaceManifest(ctx context.Context, opts workspace.Options) (workspace.Manifest, error) {
	s.spoil(s.Cwd())
	return s.Sandbox.WorkspaceManifest(ctx, opts)
}

// TestSnapshotForRefuses: a snapshot that is missing, altered or named outside the tape's
// directory is refused before anything runs, naming the files.
func TestSnapshotForRefuses(t *testing.T) {
	path := workspaceTape(t, map[string]string{"a.txt": "a\n"}, []string{"true"}, []string{"(Bash completed with no output)"}, map[string]string{"a.txt": "a\n"})
	rec, err := tape.LoadFile(path)
	require.NoError(t, err)
	snap := workspace.SnapshotPath(path)

	data, err := os.ReadFile(snap)
	require.NoError(t, err)
	data[len(data)/2] ^= 0xff
	require.NoError(t, os.WriteFile(snap, data, 0o644))
	_, err = controller.SnapshotFor(path, rec)
	require.ErrorIs(t, err, workspace.ErrMismatch)
	require.ErrorContains(t, err, path)
	require.ErrorContains(t, err, snap)

	require.NoError(t, os.Remove(snap))
	_, err = controller.SnapshotFor(path, rec)
	require.ErrorIs(t, err, controller.ErrNoSnapshot)
	require.ErrorContains(t, err, snap)
	require.ErrorContains(t, err, "--no-workspace")

	for _, name := range []string{"../run.workspace.tar.zst", "/etc/passwd", "..", "sub/x.tar.zst"} {
		rec.Meta.Workspace.Snapshot = name
		_, err = controller.SnapshotFor(path, rec)
		require.ErrorContains(t, err, "want a file name beside the tape", name)
	}

	// A replay without the path refuses to start from an empty directory silently.
	rec.Meta.Workspace.Snapshot = filepath.Base(snap)
	sb := localSandbox(t)
	_, err = controller.Replay(t.Context(), rec, sb, controller.Options{Cwd: sb.Cwd()})
	require.ErrorContains(t, err, "--no-workspace")
	_, err = controller.Replay(t.Context(), rec, sb, controller.Options{Cwd: sb.Cwd(), NoWorkspace: true})
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(harness.DefaultStateDir(sb.Cwd())) })
}
