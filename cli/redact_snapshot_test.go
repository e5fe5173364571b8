package cli

import (
	"archive/tar"
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/internal/testutil/credscan"
	"github.com/tapebox/tapebox/tape"
	"github.com/tapebox/tapebox/tape/seal"
	"github.com/tapebox/tapebox/workspace"
)

// snapshotEntry is a tar entry of a snapshot, content included.
type snapshotEntry struct {
	hdr  tar.Header
	data string
}

// readSnapshot lists the entries of the snapshot file at path.
func readSnapshot(t *testing.T, path string) []snapshotEntry {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	dec, err := zstd.NewReader(f)
	require.NoError(t, err)
	defer dec.Close()
	tr := tar.NewReader(dec)
	var out []snapshotEntry
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		require.NoError(t, err)
		data, err := io.ReadAll(tr)
		require.NoError(t, err)
		out = append(out, snapshotEntry{*hdr, string(data)})
	}
}

// TestRedactStartSnapshot (issue 30, finding 9, the snapshot's part): credentials planted
// in a start snapshot's file contents, a file's name, a directory's name and a symbolic
// link's target, and in a member name of the tape, are all removed by redact: scan finds
// nothing after it, in the tape or the snapshot it wrote beside it, and no planted
// credential is in any file the tape and the snapshot hold or restore to. Every entry of
// the snapshot without a secret is the same, header and content; the end manifest follows
// the renames, and the digest of a file the run did not change follows its content; the
// digests verify, and the redactions name rule and place, never a secret.
func TestRedactStartSnapshot(t *testing.T) {
	akid := fakeToken(40, "AK"+"IA", 0) + "QX7L2M5RT4WZ6YB3"
	gh := fakeToken(41, "gh"+"p_", 36)
	npm := fakeToken(42, "np"+"m_", 36)
	slack := "xox" + "b-" + fakeToken(43, "", 10) + "-" + fakeToken(44, "", 12) + "-" + fakeToken(45, "", 24)
	gl := fakeToken(46, "gl"+"pat-", 20)
	creds := []string{akid, gh, npm, slack, gl}

	ws := t.TempDir()
	env := "AWS_ACCESS_KEY_ID=" + akid + "\nGITHUB_TOKEN=" + gh + "\n# again: " + gh + "\n"
	files := map[string]string{
		".env":                     env,
		"main.go":                  "package main\n\nfunc main() {}\n",
		"docs/notes.md":            "# notes\nnothing here\n",
		"tokens/" + npm:            "the name is the secret\n",
		"keys-" + gl + "/id":       "in a directory named with a secret\n",
		"logs/deploy.log":          strings.Repeat("deploy ok\n", 2000) + "SLACK_BOT_TOKEN=" + slack + "\n" + strings.Repeat("done\n", 100),
		"keys-" + gl + "/note.txt": "plain\n",
	}
	for name, body := range files {
		p := filepath.Join(ws, filepath.FromSlash(name))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(body), 0o644))
	}
	require.NoError(t, os.Symlink("tokens/"+npm, filepath.Join(ws, "current-token")))

	dir := t.TempDir()
	snap := filepath.Join(dir, "run.workspace.tar.zst")
	info, err := workspace.SnapshotFile(t.Context(), ws, snap, workspace.Options{})
	require.NoError(t, err)
	end, err := workspace.ManifestDir(t.Context(), ws, workspace.Options{})
	require.NoError(t, err)
	tp := inspectTestTape()
	tp.Meta.Workspace = &tape.Workspace{Snapshot: filepath.Base(snap), Digest: info.Digest, Size: info.Size, Files: info.Files, Bytes: info.Bytes, End: end.TapeEntries()}
	tp.Meta.Labels["deploy-"+gh] = "a member name holding a secret"
	require.NoError(t, seal.Tape(tp, nil))
	in := writeTape(t, dir, "run.json", tp)

	// scan names every place, and prints no secret whole, not even one that names a file
	// or a member (it is masked in the names of the places under it too).
	code, stdout, stderr := runVerbForTest(t, "scan", in)
	require.Equal(t, ExitFailure, code)
	for _, want := range []string{".env: aws-access-token", ".env: github-pat", "logs/deploy.log: ", "tokens/npm_… (name): npm-access-token", "current-token (link target)", "keys-glpa…/id (name)", "/meta/labels/deploy-ghp_… (member name)"} {
		require.Contains(t, stdout, want)
	}
	code, jsonOut, _ := runVerbForTest(t, "scan", "--json", in)
	require.Equal(t, ExitFailure, code)
	for _, c := range creds {
		require.NotContains(t, stdout+stderr+jsonOut, c)
	}

	outDir := t.TempDir()
	out := filepath.Join(outDir, "redacted.json")
	code, stdout, stderr = runVerbForTest(t, "redact", "-o", out, in)
	require.Equal(t, ExitOK, code, stdout+stderr)
	assert.Contains(t, stdout, "from the start snapshot")
	newSnap := workspace.SnapshotPath(out)
	require.FileExists(t, newSnap)

	code, stdout, stderr = runVerbForTest(t, "scan", out)
	require.Equal(t, ExitOK, code, "scan after redact: %s%s", stdout, stderr)
	code, stdout, stderr = runVerbForTest(t, "verify", "--require-digests", out)
	require.Equal(t, ExitOK, code, stdout+stderr)
	code, _, stderr = runVerbForTest(t, "validate", out)
	require.Equal(t, ExitOK, code, stderr)

	// No credential anywhere: the tape, the compressed snapshot, the restored files, their
	// names and the link's target.
	restored := t.TempDir()
	got, err := tape.LoadFile(out)
	require.NoError(t, err)
	f, err := os.Open(newSnap)
	require.NoError(t, err)
	defer f.Close()
	require.NoError(t, workspace.Restore(t.Context(), f, workspace.InfoOf(got.Meta.Workspace), restored))
	assert.Equal(t, 2, credscan.Dir(t, outDir, creds...))
	assert.Positive(t, credscan.Dir(t, restored, creds...))
	require.NoError(t, filepath.WalkDir(restored, func(p string, d os.DirEntry, err error) error {
		for _, c := range creds {
			assert.NotContains(t, p, c)
		}
		if d.Type()&os.ModeSymlink != 0 {
			target, err := os.Readlink(p)
			require.NoError(t, err)
			assert.Equal(t, "tokens/REDACTED", target)
		}
		return err
	}))

	// Every entry without a secret is as it was; those with one changed only there.
	before, after := readSnapshot(t, snap), readSnapshot(t, newSnap)
	require.Len(t, after, len(before))
	changed := map[string]string{}
	for i := range before {
		b, a := before[i], after[i]
		if b.hdr.Name == a.hdr.Name && b.data == a.data && b.hdr.Linkname == a.hdr.Linkname {
			assert.Equal(t, b.hdr.Mode, a.hdr.Mode, b.hdr.Name)
			assert.Equal(t, b.hdr.Size, a.hdr.Size, b.hdr.Name)
			assert.True(t, b.hdr.ModTime.Equal(a.hdr.ModTime), b.hdr.Name)
			continue
		}
		changed[b.hdr.Name] = a.hdr.Name
	}
	assert.Equal(t, map[string]string{
		".env":                     ".env",
		"current-token":            "current-token",
		"keys-" + gl + "/":         "keys-REDACTED/",
		"keys-" + gl + "/id":       "keys-REDACTED/id",
		"keys-" + gl + "/note.txt": "keys-REDACTED/note.txt",
		"logs/deploy.log":          "logs/deploy.log",
		"tokens/" + npm:            "tokens/REDACTED",
	}, changed)
	for _, e := range after {
		switch e.hdr.Name {
		case ".env":
			assert.Equal(t, "AWS_ACCESS_KEY_ID=REDACTED\nGITHUB_TOKEN=REDACTED\n# again: REDACTED\n", e.data)
		case "logs/deploy.log":
			assert.Equal(t, strings.Replace(files["logs/deploy.log"], slack, "REDACTED", 1), e.data)
		case "keys-REDACTED/id":
			assert.Equal(t, files["keys-"+gl+"/id"], e.data)
		}
	}

	// The end manifest: renamed paths, the redacted content's digests, the same entries
	// otherwise; it is what a restore of the new snapshot gives.
	m, err := workspace.ManifestDir(t.Context(), restored, workspace.Options{})
	require.NoError(t, err)
	assert.Equal(t, workspace.Manifest(m).TapeEntries(), got.Meta.Workspace.End)
	assert.Empty(t, workspace.Diff(workspace.FromTape(got.Meta.Workspace.End), m))

	// The redactions: rule and place, the snapshot's entries by their new names.
	assert.Contains(t, got.Meta.Redactions, tape.Redaction{Rule: "aws-access-token", Pointer: "/meta/workspace/snapshot/.env"})
	assert.Contains(t, got.Meta.Redactions, tape.Redaction{Rule: "npm-access-token", Pointer: "/meta/workspace/snapshot/tokens~1REDACTED"})
	assert.Contains(t, got.Meta.Redactions, tape.Redaction{Rule: "github-pat", Pointer: "/meta/labels/deploy-REDACTED"})
	data, err := os.ReadFile(out)
	require.NoError(t, err)
	for _, c := range creds {
		assert.False(t, bytes.Contains(data, []byte(c)))
	}
}

// TestRedactedSnapshotReplays: a recording with a start snapshot holding a credential in a
// file and in a file's name, redacted, replays IDENTICAL in a fresh local sandbox: the
// redacted snapshot restores (its digest, size and counts are the tape's) and the run's
// calls give what the recording got.
func TestRedactedSnapshotReplays(t *testing.T) {
	gh := fakeToken(50, "gh"+"p_", 36)
	ws := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(ws, ".env"), []byte("GITHUB_TOKEN="+gh+"\n"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(ws, "cache-"+gh), []byte("x\n"), 0o644))
	dir := t.TempDir()
	snap := filepath.Join(dir, "run.workspace.tar.zst")
	info, err := workspace.SnapshotFile(t.Context(), ws, snap, workspace.Options{})
	require.NoError(t, err)
	tp, err := tape.LoadFile(filepath.Join("..", "testdata", "replay", "codex.json"))
	require.NoError(t, err)
	tp.Meta.Workspace = &tape.Workspace{Snapshot: filepath.Base(snap), Digest: info.Digest, Size: info.Size, Files: info.Files, Bytes: info.Bytes}
	require.NoError(t, seal.Tape(tp, nil))
	in := writeTape(t, dir, "run.json", tp)

	out := filepath.Join(t.TempDir(), "redacted.json")
	code, stdout, stderr := runVerbForTest(t, "redact", "-o", out, in)
	require.Equal(t, ExitOK, code, stdout+stderr)
	code, stdout, stderr = runVerbForTest(t, "scan", out)
	require.Equal(t, ExitOK, code, stdout+stderr)
	sbx := t.TempDir()
	code, stdout, stderr = runVerbForTest(t, "replay", "--tape", out, "--sandbox", "local:"+sbx, "--speed", "0", "--check")
	require.Equal(t, ExitOK, code, stdout+stderr)
	require.Contains(t, stdout, ": IDENTICAL")
	require.Contains(t, stderr, "workspace: restored redacted.workspace.tar.zst (2 entries")
	env, err := os.ReadFile(filepath.Join(sbx, ".env"))
	require.NoError(t, err)
	require.Equal(t, "GITHUB_TOKEN=REDACTED\n", string(env))
	require.FileExists(t, filepath.Join(sbx, "cache-REDACTED"))
	credscan.Dir(t, sbx, gh)
}
