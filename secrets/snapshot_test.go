package secrets

import (
	"archive/tar"
	"bytes"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/tape"
)

// tarEntry is one entry of a test archive: a file, or a symbolic link when link is set.
type tarEntry struct{ name, body, link string }

func makeTar(t testing.TB, entries []tarEntry) []byte {
	t.Helper()
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Mode: 0o644, Size: int64(len(e.body)), Typeflag: tar.TypeReg}
		if e.link != "" {
			h = &tar.Header{Name: e.name, Linkname: e.link, Typeflag: tar.TypeSymlink, Mode: 0o777}
		}
		require.NoError(t, tw.WriteHeader(h))
		if e.link == "" {
			_, err := tw.Write([]byte(e.body))
			require.NoError(t, err)
		}
	}
	require.NoError(t, tw.Close())
	return b.Bytes()
}

func zstdBytes(t testing.TB, b []byte) []byte {
	t.Helper()
	enc, err := zstd.NewWriter(nil)
	require.NoError(t, err)
	return enc.EncodeAll(b, nil)
}

// TestScanSnapshotNamesTheFile: secrets in files of a snapshot are found, each naming the
// file inside the tar and the byte offset in it, including one in a file of more than one
// chunk, one in an entry's name and one in a link's target (TestScanSnapshotChunkOverlap
// holds keys at the chunks' ends).
func TestScanSnapshotNamesTheFile(t *testing.T) {
	aws := kindNamed(t, "aws").gen(rand.New(rand.NewPCG(1, 1)))
	gh := fake(t, "github-pat", 2)
	npm := fake(t, "npm", 3)
	slack := fake(t, "slack-bot", 4)
	env := "AWS_ACCESS_KEY_ID=" + aws[0] + "\nGITHUB_TOKEN=" + gh + "\n"
	// A file of more than one chunk, the key across chunkSize (inside the first chunk, which
	// holds chunkSize+chunkOverlap bytes).
	big := strings.Repeat("lorem ipsum dolor sit amet\n", chunkSize/27+1)
	big = big[:chunkSize-10] + " " + slack + "\n" + big
	archive := makeTar(t, []tarEntry{
		{name: "README.md", body: "# app\n"},
		{name: ".env", body: env},
		{name: "logs/big.log", body: big},
		{name: "tokens/" + npm, body: ""},
		{name: "link", link: "/run/" + gh},
	})
	s, err := Default()
	require.NoError(t, err)
	got, err := s.ScanSnapshot(t.Context(), bytes.NewReader(zstdBytes(t, archive)))
	require.NoError(t, err)
	type where struct {
		member, rule string
		offset       int
	}
	var places []where
	for _, f := range got {
		assert.Equal(t, SnapshotPointer, f.Pointer)
		places = append(places, where{f.Member, f.Rule, f.Offset})
	}
	assert.ElementsMatch(t, []where{
		{".env", "aws-access-token", strings.Index(env, aws[0])},
		{".env", "github-pat", strings.Index(env, gh)},
		{"logs/big.log", "slack-bot-token", strings.Index(big, slack)},
		{"tokens/" + npm, "npm-access-token", len("tokens/")},
		{"link", "github-pat", len("/run/")},
	}, places)

	// Not an archive, or one cut short: an error, never a clean result.
	_, err = s.ScanSnapshot(t.Context(), strings.NewReader("not zstd"))
	assert.Error(t, err)
	cut := zstdBytes(t, archive[:len(archive)/2])
	_, err = s.ScanSnapshot(t.Context(), bytes.NewReader(cut))
	assert.Error(t, err)
}

// TestScanSnapshotChunkOverlap: a file is scanned in chunks that overlap by chunkOverlap
// bytes. A key across the end of the first chunk is found whole in the second, at its offset
// in the file; a key inside the overlap, which both chunks hold, is reported once.
func TestScanSnapshotChunkOverlap(t *testing.T) {
	gh := fake(t, "github-pat", 5)
	slack := fake(t, "slack-bot", 6)
	body := []byte(strings.Repeat("lorem ipsum dolor sit amet\n", (chunkSize+chunkOverlap+1000)/27+1))
	plant := func(at int, key string) {
		body[at-1] = ' '
		copy(body[at:], key)
		body[at+len(key)] = '\n'
	}
	inOverlap, acrossEnd := chunkSize+100, chunkSize+chunkOverlap-10
	plant(inOverlap, gh)
	plant(acrossEnd, slack)
	archive := makeTar(t, []tarEntry{{name: "big.log", body: string(body)}})
	s, err := Default()
	require.NoError(t, err)
	got, err := s.ScanSnapshot(t.Context(), bytes.NewReader(zstdBytes(t, archive)))
	require.NoError(t, err)
	type where struct {
		rule   string
		offset int
	}
	var places []where
	for _, f := range got {
		assert.Equal(t, "big.log", f.Member)
		places = append(places, where{f.Rule, f.Offset})
	}
	assert.ElementsMatch(t, []where{{"github-pat", inOverlap}, {"slack-bot-token", acrossEnd}}, places)
}

// FuzzScanTar: any bytes as an uncompressed archive never panic the scan; and a file of
// fuzzed content with a key appended is found in the file that holds it.
func FuzzScanTar(f *testing.F) {
	f.Add([]byte("hello"), "a.txt")
	f.Add(makeTar(f, []tarEntry{{name: "x", body: "y"}}), "dir/f")
	f.Add([]byte(strings.Repeat("\x00", 1024)), ".env")
	s, err := Default()
	if err != nil {
		f.Fatal(err)
	}
	key := "gh" + "p_" + randString(rand.New(rand.NewPCG(7, 1)), alnum, 36)
	f.Fuzz(func(t *testing.T, data []byte, name string) {
		sc := s.newScan(t.Context())
		_ = sc.scanTar(bytes.NewReader(data)) // must not panic
		if name == "" || strings.ContainsAny(name, "\x00") || len(name) > 100 || len(data) > 1<<12 {
			return
		}
		body := string(data) + "\n" + key + "\n"
		sc = s.newScan(t.Context())
		require.NoError(t, sc.scanTar(bytes.NewReader(makeTar(t, []tarEntry{{name: name, body: body}}))))
		found := false
		for _, f := range sc.found {
			if f.Rule == "github-pat" && f.Member != "" && f.In == "" && body[f.Offset:f.Offset+f.Length] == key {
				found = true
			}
		}
		assert.True(t, found, "%q in %q not found: %v", key, name, sc.found)
	})
}

// TestSnapshotNameOutsideTheTapesDirectory: a tape naming a snapshot outside its
// directory is an error, not a file read from there nor a clean result.
func TestSnapshotNameOutsideTheTapesDirectory(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"../other.tar.zst", "/etc/passwd", "a/../../b"} {
		tp := smallTape()
		tp.Meta.Workspace = &tape.Workspace{Snapshot: name, Digest: "sha256:" + strings.Repeat("0", 64), Size: 1}
		path := filepath.Join(dir, "t.json")
		require.NoError(t, tape.Save(path, tp))
		_, err := ScanFile(t.Context(), path)
		require.Error(t, err, name)
		assert.Contains(t, err.Error(), "is not a file beside the tape", name)
		res := ScanFilesWith(t.Context(), []string{path}, Options{SkipSnapshot: true})[0]
		assert.NoError(t, res.Err, "--no-workspace leaves the snapshot unread")
		assert.Empty(t, res.Findings)
	}
}
