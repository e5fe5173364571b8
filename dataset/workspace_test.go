package dataset

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/internal/testutil/tapegen"
	"github.com/tapebox/tapebox/internal/testutil/treetest"
	"github.com/tapebox/tapebox/tape"
)

// workspaceTape writes tape i of a small generated corpus into dir as name, starting from
// snapshot (written beside it as snapName), and returns its input.
func workspaceTape(t *testing.T, dir, name string, i int, snapName string, snapshot []byte) Input {
	t.Helper()
	tp := tapegen.Tape(tapegen.Options{Seed: 21, MeanSteps: 2, Lean: true, Workspaces: 1}, i)
	tp.Meta.Workspace.Snapshot = snapName
	tp.Meta.Workspace.Digest = digestOf(snapshot)
	tp.Meta.Workspace.Size = int64(len(snapshot))
	p := filepath.Join(dir, filepath.FromSlash(snapName))
	require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(t, os.WriteFile(p, snapshot, 0o644))
	require.NoError(t, os.MkdirAll(dir, 0o755))
	return writeTapeFile(t, dir, name, tp)
}

func tapeOf(t *testing.T, in Input) *tape.Tape {
	t.Helper()
	tp, err := tape.LoadFile(in.Path)
	require.NoError(t, err)
	return tp
}

// requireSameFile fails unless the files hold the same bytes.
func requireSameFile(t *testing.T, want, got string) {
	t.Helper()
	a, err := os.ReadFile(want)
	require.NoError(t, err)
	b, err := os.ReadFile(got)
	require.NoError(t, err)
	require.True(t, bytes.Equal(a, b), "%s and %s differ", want, got)
}

// TestExportImportKeepsWorkspaces: each start snapshot goes into the workspaces table once
// (tapes that start from the same bytes share it, whatever their files are called), the
// tapes table says which tapes have one, and import writes every tape and its snapshot
// back byte for byte.
func TestExportImportKeepsWorkspaces(t *testing.T) {
	root := t.TempDir()
	shared := tapegen.Snapshot(tapegen.Options{Seed: 1, SnapshotBytes: 3000}, 0)
	other := tapegen.Snapshot(tapegen.Options{Seed: 1, SnapshotBytes: 5000}, 1)
	a := workspaceTape(t, filepath.Join(root, "a"), "run.json", 0, "run.workspace.tar.zst", shared)
	b := workspaceTape(t, filepath.Join(root, "b"), "run.json", 1, "run.workspace.tar.zst", shared) // a copy of a's
	c := workspaceTape(t, filepath.Join(root, "a"), "c.json", 2, "c start.tar.zst", other)
	plain := writeTapeFile(t, root, "plain.json", tapegen.Tape(tapegen.Options{Seed: 21, MeanSteps: 2, Lean: true}, 3))
	endOnly := tapegen.Tape(tapegen.Options{Seed: 21, MeanSteps: 2, Lean: true, Workspaces: 1}, 4)
	endOnly.Meta.Workspace = &tape.Workspace{End: endOnly.Meta.Workspace.End} // no start snapshot taken
	end := writeTapeFile(t, root, "end-only.json", endOnly)
	inputs := []Input{a, b, c, plain, end}

	for _, format := range []Format{Parquet, Arrow, Both} {
		t.Run(format.String(), func(t *testing.T) {
			dir, res := export(t, inputs, ExportOptions{Format: format, Jobs: 2})
			assert.Equal(t, 2, res.Workspaces, "a and b share one snapshot")
			assert.Equal(t, int64(len(shared)+len(other)), res.WorkspaceBytes)
			assert.Zero(t, res.WorkspacesLeftOut)
			rep := requireValid(t, dir)
			assert.Equal(t, int64(2), rep.Workspaces, "counted once in either format")

			l, err := scanLayout(dir)
			require.NoError(t, err)
			ext, wsFiles := l.primary(configWorkspaces, "train")
			var digests []string
			for r, err := range rowsOf[WorkspaceRow](wsFiles, workspacesTable, 1) {
				require.NoError(t, err)
				digests = append(digests, r.v.Digest)
				assert.Equal(t, r.v.Digest, digestOf(r.v.Snapshot))
			}
			assert.Equal(t, []string{digestOf(shared), digestOf(other)}, digests, "in the order the tapes name them")

			rows := map[string]TapeRow{}
			_, tapeFiles := l.primary(configTapes, "train")
			for r, err := range rowsOf[TapeRow](tapeFiles, tapesTable, 1) {
				require.NoError(t, err)
				rows[r.v.TapeID] = r.v
			}
			ra := rows[tapeOf(t, a).Meta.TapeID]
			require.NotNil(t, ra.WorkspaceDigest, ext)
			assert.Equal(t, digestOf(shared), *ra.WorkspaceDigest)
			assert.Equal(t, int64(len(shared)), *ra.WorkspaceSize)
			assert.Equal(t, int64(4), *ra.WorkspaceFiles)
			assert.Equal(t, int64(len(tapeOf(t, a).Meta.Workspace.End)), *ra.WorkspaceEndFiles)
			assert.True(t, ra.WorkspaceIncluded)
			rp := rows[tapeOf(t, plain).Meta.TapeID]
			assert.Nil(t, rp.WorkspaceDigest)
			assert.Nil(t, rp.WorkspaceEndFiles)
			assert.False(t, rp.WorkspaceIncluded)
			re := rows[tapeOf(t, end).Meta.TapeID]
			assert.Nil(t, re.WorkspaceDigest)
			assert.Nil(t, re.WorkspaceSize)
			assert.NotNil(t, re.WorkspaceEndFiles)
			assert.False(t, re.WorkspaceIncluded)

			back := filepath.Join(t.TempDir(), "back")
			ir, err := Import(t.Context(), dir, ImportOptions{Out: back, Verify: true})
			require.NoError(t, err)
			assert.Equal(t, 2, ir.Workspaces, "a and b share run.workspace.tar.zst, c has its own")
			assert.Empty(t, ir.Renamed)
			assert.Zero(t, ir.WithoutWorkspace)
			want := []string{"c start.tar.zst", "run.workspace.tar.zst"}
			for _, in := range inputs {
				want = append(want, importedName(t, inputs, in))
				requireSameFile(t, in.Path, filepath.Join(back, importedName(t, inputs, in)))
			}
			slices.Sort(want)
			assert.Equal(t, want, treetest.Files(t, back), "the tapes and their snapshots, no temporary file")
			requireSameFile(t, filepath.Join(root, "a", "run.workspace.tar.zst"), filepath.Join(back, "run.workspace.tar.zst"))
			requireSameFile(t, filepath.Join(root, "a", "c start.tar.zst"), filepath.Join(back, "c start.tar.zst"))

			// The imported folder exports again: every snapshot is where its tape says.
			inputs2, err := ExpandInputs([]string{back})
			require.NoError(t, err)
			_, res2 := export(t, inputs2, ExportOptions{Format: format})
			assert.Equal(t, 2, res2.Workspaces)
		})
	}
}

// TestExportRefusesBadSnapshots: a snapshot that is missing, or whose bytes do not hash to
// the tape's digest, makes the tape invalid, with an error naming the tape file and the
// snapshot file; every such tape is listed, and nothing is written. NoWorkspace exports
// the tapes without their snapshots and says how many.
func TestExportRefusesBadSnapshots(t *testing.T) {
	root := t.TempDir()
	snap := tapegen.Snapshot(tapegen.Options{Seed: 2}, 0)
	good := workspaceTape(t, root, "good.json", 0, "good.tar.zst", snap)
	missing := workspaceTape(t, root, "missing.json", 1, "missing.tar.zst", snap)
	require.NoError(t, os.Remove(filepath.Join(root, "missing.tar.zst")))
	changed := workspaceTape(t, root, "changed.json", 2, "changed.tar.zst", snap)
	tampered := bytes.Clone(snap)
	tampered[len(tampered)/2] ^= 1
	require.NoError(t, os.WriteFile(filepath.Join(root, "changed.tar.zst"), tampered, 0o644))
	inputs := []Input{good, missing, changed}

	for _, jobs := range []int{1, 3} { // 1: the tapes after the first invalid one are only checked
		out := filepath.Join(t.TempDir(), "dataset")
		_, err := Export(t.Context(), inputs, ExportOptions{Out: out, Jobs: jobs})
		var ite *InvalidTapesError
		require.ErrorAs(t, err, &ite)
		require.Len(t, ite.Invalid, 2)
		assert.Equal(t, missing.Path, ite.Invalid[0].Path)
		assert.ErrorIs(t, ite.Invalid[0], os.ErrNotExist)
		assert.Equal(t, changed.Path, ite.Invalid[1].Path)
		assert.ErrorIs(t, ite.Invalid[1], ErrDigestMismatch)
		for i, snapFile := range []string{"missing.tar.zst", "changed.tar.zst"} {
			var se *SnapshotError
			require.ErrorAs(t, ite.Invalid[i], &se)
			assert.Equal(t, filepath.Join(root, snapFile), se.Snapshot)
			assert.Contains(t, ite.Invalid[i].Error(), ite.Invalid[i].Path+": start snapshot "+filepath.Join(root, snapFile)+": ")
		}
		assert.Contains(t, err.Error(), "missing: meta.workspace.snapshot \"missing.tar.zst\" names no file beside the tape")
		assert.Contains(t, err.Error(), "its bytes hash to "+digestOf(tampered)+", meta.workspace.digest says "+digestOf(snap))
		_, statErr := os.Stat(out)
		if statErr == nil {
			assert.Empty(t, treetest.Files(t, out), "a failed export leaves no file")
		}
	}

	// SkipInvalid leaves those tapes out, NoWorkspace keeps them without snapshots.
	dir, res := export(t, inputs, ExportOptions{SkipInvalid: true})
	assert.Equal(t, 1, res.Tapes)
	assert.Equal(t, 1, res.Workspaces)
	requireValid(t, dir)

	dir, res = export(t, inputs, ExportOptions{NoWorkspace: true})
	assert.Equal(t, 3, res.Tapes)
	assert.Zero(t, res.Workspaces)
	assert.Equal(t, 3, res.WorkspacesLeftOut)
	assert.NoDirExists(t, filepath.Join(dir, "data", configWorkspaces))
	requireValid(t, dir)
	card, err := LoadCard(dir)
	require.NoError(t, err)
	assert.Contains(t, card.Body, "3 tapes name a start snapshot that was left out")
	back := filepath.Join(t.TempDir(), "back")
	ir, err := Import(t.Context(), dir, ImportOptions{Out: back})
	require.NoError(t, err)
	assert.Equal(t, 3, ir.WithoutWorkspace)
	assert.Zero(t, ir.Workspaces)
	assert.Len(t, treetest.Files(t, back), 3, "the tapes only")
	requireSameFile(t, changed.Path, filepath.Join(back, "changed.json"))
}

// TestImportRenamesSnapshots: a snapshot whose name is not a plain file name, or whose
// name another tape's different snapshot already took, is written as
// <tape file stem>.workspace.tar.zst, and its tape file names it; nothing else changes.
func TestImportRenamesSnapshots(t *testing.T) {
	root := t.TempDir()
	s1 := tapegen.Snapshot(tapegen.Options{Seed: 4}, 0)
	s2 := tapegen.Snapshot(tapegen.Options{Seed: 4}, 1)
	s3 := tapegen.Snapshot(tapegen.Options{Seed: 4}, 2)
	first := workspaceTape(t, filepath.Join(root, "1"), "run.json", 0, "run.workspace.tar.zst", s1)
	clash := workspaceTape(t, filepath.Join(root, "2"), "run.json", 1, "run.workspace.tar.zst", s2)
	nested := workspaceTape(t, filepath.Join(root, "3"), "run.json", 2, "snapshots/start.tar.zst", s3)
	dir, res := export(t, []Input{first, clash, nested}, ExportOptions{})
	require.Equal(t, 3, res.Workspaces)

	back := filepath.Join(t.TempDir(), "back")
	ir, err := Import(t.Context(), dir, ImportOptions{Out: back, Verify: true})
	require.NoError(t, err)
	clashID, nestedID := tapeOf(t, clash).Meta.TapeID, tapeOf(t, nested).Meta.TapeID
	assert.Equal(t, []RenamedSnapshot{
		{TapeID: clashID, From: "run.workspace.tar.zst", To: clashID + snapshotSuffix},
		{TapeID: nestedID, From: "snapshots/start.tar.zst", To: nestedID + snapshotSuffix},
	}, ir.Renamed)
	assert.Equal(t, 3, ir.Workspaces)
	requireSameFile(t, first.Path, filepath.Join(back, TapeFileName(tapeOf(t, first).Meta.TapeID)))
	requireSameFile(t, filepath.Join(root, "1", "run.workspace.tar.zst"), filepath.Join(back, "run.workspace.tar.zst"))
	for _, tt := range []struct {
		in   Input
		id   string
		snap string
	}{{clash, clashID, filepath.Join(root, "2", "run.workspace.tar.zst")}, {nested, nestedID, filepath.Join(root, "3", "snapshots", "start.tar.zst")}} {
		got := tapeOf(t, Input{Path: filepath.Join(back, TapeFileName(tt.id))})
		name := tt.id + snapshotSuffix
		assert.Equal(t, name, got.Meta.Workspace.Snapshot)
		requireSameFile(t, tt.snap, filepath.Join(back, name))
		want := tapeOf(t, tt.in)
		want.Meta.Workspace.Snapshot = name
		wantData, err := tape.Marshal(want)
		require.NoError(t, err)
		gotData, err := os.ReadFile(filepath.Join(back, TapeFileName(tt.id)))
		require.NoError(t, err)
		assert.Equal(t, string(wantData), string(gotData), "only the snapshot's name changed")
	}
	assert.NoDirExists(t, filepath.Join(back, "snapshots"))
}

// TestValidateChecksWorkspaces: the workspaces table's bytes must hash to their digest, and
// every tape that says its snapshot is in the dataset must find it there.
func TestValidateChecksWorkspaces(t *testing.T) {
	root := t.TempDir()
	snap := tapegen.Snapshot(tapegen.Options{Seed: 5}, 0)
	in := workspaceTape(t, root, "run.json", 0, "run.tar.zst", snap)
	id := tapeOf(t, in).Meta.TapeID

	t.Run("bytes that do not match", func(t *testing.T) {
		dir, _ := export(t, []Input{in}, ExportOptions{})
		bad := bytes.Clone(snap)
		bad[10] ^= 0xff // same size: only the digest tells
		rewriteWorkspaces(t, dir, WorkspaceRow{Digest: digestOf(snap), Size: int64(len(bad)), Snapshot: bad})
		got := problems(t, dir)
		requireProblem(t, got, "data/workspaces/train-00000-of-00001.parquet row 0: snapshot: the bytes hash to "+digestOf(bad)+", not to the row's digest "+digestOf(snap))
		back := filepath.Join(t.TempDir(), "back")
		_, err := Import(t.Context(), dir, ImportOptions{Out: back})
		require.ErrorIs(t, err, ErrDigestMismatch, "import refuses it too")
		assert.Contains(t, err.Error(), "train-00000-of-00001.parquet row 0")
	})
	t.Run("snapshot not in the table", func(t *testing.T) {
		dir, _ := export(t, []Input{in}, ExportOptions{})
		other := tapegen.Snapshot(tapegen.Options{Seed: 5}, 1)
		rewriteWorkspaces(t, dir, WorkspaceRow{Digest: digestOf(other), Size: int64(len(other)), Snapshot: other})
		got := problems(t, dir)
		requireProblem(t, got, "data/tapes/train-00000-of-00001.parquet row 0: workspace_digest: "+digestOf(snap)+": workspace_included, but the workspaces table of split train does not hold this snapshot")
		requireProblem(t, got, "data/workspaces/train-00000-of-00001.parquet row 0: digest: no tape of split train")
		_, err := Import(t.Context(), dir, ImportOptions{Out: filepath.Join(t.TempDir(), "back")})
		require.Error(t, err)
		assert.Contains(t, err.Error(), "tape "+id+": its start snapshot "+digestOf(snap)+" is not in the workspaces table of split train")
	})
	t.Run("no workspaces table", func(t *testing.T) {
		dir, _ := export(t, []Input{in}, ExportOptions{})
		require.NoError(t, os.RemoveAll(filepath.Join(dir, "data", configWorkspaces)))
		got := problems(t, dir)
		requireProblem(t, got, "workspace_digest", "does not hold this snapshot")
		requireProblem(t, got, "README.md", "config workspaces has no files")
	})
}

// rewriteWorkspaces replaces the workspaces shard of the train split with one of rows.
func rewriteWorkspaces(t *testing.T, dir string, rows ...WorkspaceRow) {
	t.Helper()
	wdir := filepath.Join(dir, "data", configWorkspaces)
	require.NoError(t, os.RemoveAll(wdir))
	set := newShardSet[WorkspaceRow](wdir, "train", workspacesTable, Parquet, DefaultShardBytes, workspaceRowGroupBytes)
	for _, r := range rows {
		require.NoError(t, set.write([]WorkspaceRow{r}, []int64{workspacesTable.rowBytes(reflect.ValueOf(&r).Elem())}))
	}
	require.NoError(t, set.closeCurrent())
	_, err := set.publish()
	require.NoError(t, err)
}
