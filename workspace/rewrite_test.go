package workspace

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// tarEntries lists a tar stream's entries: header and content.
func tarEntries(t testing.TB, b []byte) []tent {
	t.Helper()
	tr := tar.NewReader(bytes.NewReader(b))
	var out []tent
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		require.NoError(t, err)
		data, err := io.ReadAll(tr)
		require.NoError(t, err)
		out = append(out, tent{hdr: *hdr, data: string(data)})
	}
}

// TestRewriteNoEdits: a snapshot Snapshot made comes out of Rewrite byte for byte the same,
// digest included, when nothing is edited.
func TestRewriteNoEdits(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 9))
	nodes := map[string]node{"d": {dir: true}, "d/l": {link: "../a"}, "empty": {data: ""}}
	for i := range 20 {
		b := make([]byte, r.IntN(5000))
		for j := range b {
			b[j] = byte(r.IntN(256))
		}
		nodes["d/f"+string(rune('a'+i))] = node{data: string(b), mode: 0o600}
	}
	nodes["a"] = node{data: "top"}
	f, info, _ := snapshotOf(t, nodes)
	var out bytes.Buffer
	got, changed, err := Rewrite(t.Context(), f, info, &out, nil)
	require.NoError(t, err)
	assert.Empty(t, changed)
	assert.Equal(t, info.Digest, got.Digest)
	assert.Equal(t, info, got)
	orig := mustRead(t, f, info.Size)
	assert.True(t, bytes.Equal(orig, out.Bytes()))
}

// TestRewriteEdits: cuts, a rename, a link target and a hard link that follows its file;
// every other entry is the same, header and content; the result restores and verifies
// against the Info Rewrite gave; the digests of the changed file are right.
func TestRewriteEdits(t *testing.T) {
	secret := "ghp_" + strings.Repeat("x", 36)
	env := "A=1\nTOKEN=" + secret + "\nB=2\n" + secret
	orig := tarOf(t,
		reg("README", "hello"),
		reg(".env", env),
		dirEnt("keys-"+secret+"/"),
		reg("keys-"+secret+"/k", "k"),
		hardlink("hl", "keys-"+secret+"/k"),
		symlink("ln", "/run/"+secret),
		reg("z", "last"),
	)
	b, info := zst(t, orig)
	f := writeSnapshot(t, b)
	i1 := strings.Index(env, secret)
	i2 := strings.LastIndex(env, secret)
	edits := map[string]Edit{
		".env":                  {Cuts: []Cut{{Offset: int64(i2), Length: int64(len(secret)), With: "REDACTED"}, {Offset: int64(i1), Length: int64(len(secret)), With: "REDACTED"}}},
		"keys-" + secret:        {Name: "keys-REDACTED"},
		"keys-" + secret + "/k": {Name: "keys-REDACTED/k"},
		"ln":                    {Link: func(old string) string { return strings.Replace(old, secret, "REDACTED", 1) }},
	}
	var out bytes.Buffer
	got, changed, err := Rewrite(t.Context(), f, info, &out, edits)
	require.NoError(t, err)
	newEnv := "A=1\nTOKEN=REDACTED\nB=2\nREDACTED"
	sum := func(s string) string { h := sha256.Sum256([]byte(s)); return hex.EncodeToString(h[:]) }
	assert.Equal(t, []Changed{{Name: ".env", OldSHA256: sum(env), NewSHA256: sum(newEnv), OldSize: int64(len(env)), NewSize: int64(len(newEnv))}}, changed)
	assert.Equal(t, info.Files, got.Files)
	assert.Equal(t, info.Bytes-int64(2*(len(secret)-len("REDACTED"))), got.Bytes)
	require.NoError(t, Verify(bytes.NewReader(out.Bytes()), got))
	assert.NotContains(t, string(unzst(t, out.Bytes())), secret)

	before, after := tarEntries(t, orig), tarEntries(t, unzst(t, out.Bytes()))
	require.Len(t, after, len(before))
	for i := range before {
		a, o := before[i], after[i]
		switch a.hdr.Name {
		case ".env":
			assert.Equal(t, newEnv, o.data)
			assert.Equal(t, int64(len(newEnv)), o.hdr.Size)
		case "keys-" + secret + "/":
			assert.Equal(t, "keys-REDACTED/", o.hdr.Name)
		case "keys-" + secret + "/k":
			assert.Equal(t, "keys-REDACTED/k", o.hdr.Name)
			assert.Equal(t, "k", o.data)
		case "hl":
			assert.Equal(t, "keys-REDACTED/k", o.hdr.Linkname, "a hard link follows the file it names")
		case "ln":
			assert.Equal(t, "/run/REDACTED", o.hdr.Linkname)
		default:
			assert.Equal(t, a.hdr.Name, o.hdr.Name)
			assert.Equal(t, a.data, o.data, a.hdr.Name)
			assert.Equal(t, a.hdr.Mode, o.hdr.Mode, a.hdr.Name)
			assert.True(t, a.hdr.ModTime.Equal(o.hdr.ModTime), a.hdr.Name)
		}
	}
	dst := t.TempDir()
	require.NoError(t, Restore(t.Context(), bytes.NewReader(out.Bytes()), got, dst))

	// Refused: a rename onto another entry, an edit of nothing, cuts out of range or over
	// each other, cuts in a directory, and a snapshot that does not match its Info.
	for name, bad := range map[string]map[string]Edit{
		"appears twice":        {"z": {Name: "README"}},
		"does not hold":        {"nope": {Name: "x"}},
		"outside the file":     {"z": {Cuts: []Cut{{Offset: 2, Length: 9}}}},
		"over another cut":     {"z": {Cuts: []Cut{{Offset: 0, Length: 2}, {Offset: 1, Length: 1}}}},
		"not a regular file":   {"ln": {Cuts: []Cut{{Offset: 0, Length: 0}}}},
		"not a clean relative": {"z": {Name: "../z"}},
	} {
		_, _, err := Rewrite(t.Context(), f, info, io.Discard, bad)
		assert.ErrorContains(t, err, name)
	}
	wrong := info
	wrong.Digest = "sha256:" + strings.Repeat("0", 64)
	_, _, err = Rewrite(t.Context(), f, wrong, io.Discard, nil)
	assert.ErrorIs(t, err, ErrMismatch)
}
