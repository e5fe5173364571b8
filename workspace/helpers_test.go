package workspace

import (
	"archive/tar"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// node is one entry of a test tree: a file (data), a directory (dir) or a symbolic link (link).
type node struct {
	data string
	mode fs.FileMode // permission bits; default 0644 for files, 0755 for directories
	dir  bool
	link string
}

// stamp is the modification time build gives everything.
var stamp = time.Date(2024, 5, 6, 7, 8, 9, 0, time.UTC)

// build creates the tree under dir, parents first, with every time set to stamp.
func build(t testing.TB, dir string, tree map[string]node) {
	t.Helper()
	names := slices.Sorted(maps.Keys(tree))
	for _, n := range names {
		nd := tree[n]
		p := filepath.Join(dir, filepath.FromSlash(n))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		switch {
		case nd.dir:
			require.NoError(t, os.MkdirAll(p, 0o755))
			require.NoError(t, os.Chmod(p, cmpOr(nd.mode, 0o755)))
		case nd.link != "":
			require.NoError(t, os.Symlink(nd.link, p))
		default:
			require.NoError(t, os.WriteFile(p, []byte(nd.data), 0o644))
			require.NoError(t, os.Chmod(p, cmpOr(nd.mode, 0o644)))
		}
	}
	// Times last, deepest first: creating an entry changes its directory's time.
	slices.Reverse(names)
	for _, n := range names {
		if tree[n].link == "" {
			require.NoError(t, os.Chtimes(filepath.Join(dir, filepath.FromSlash(n)), stamp, stamp))
		}
	}
}

func cmpOr(m, def fs.FileMode) fs.FileMode {
	if m == 0 {
		return def
	}
	return m
}

// tent is an entry of a hand-made tar.
type tent struct {
	hdr  tar.Header
	data string
}

func reg(name, data string) tent {
	return tent{hdr: tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: 0o644, Size: int64(len(data)), ModTime: stamp}, data: data}
}

func dirEnt(name string) tent {
	return tent{hdr: tar.Header{Typeflag: tar.TypeDir, Name: name, Mode: 0o755, ModTime: stamp}}
}

func symlink(name, target string) tent {
	return tent{hdr: tar.Header{Typeflag: tar.TypeSymlink, Name: name, Linkname: target, Mode: 0o777, ModTime: stamp}}
}

func hardlink(name, target string) tent {
	return tent{hdr: tar.Header{Typeflag: tar.TypeLink, Name: name, Linkname: target, Mode: 0o644, ModTime: stamp}}
}

// sparseTar is a tar whose one entry, name, is a PAX sparse file of 1 TiB of zeros in 1.5 KiB
// (Go's tar.Writer writes no sparse files: the extended header is made by hand).
func sparseTar(t testing.TB, name string) []byte {
	t.Helper()
	rec := func(k, v string) string {
		kv := k + "=" + v + "\n"
		for n := len(kv) + 2; ; n++ {
			if s := fmt.Sprintf("%d %s", n, kv); len(s) == n {
				return s
			}
		}
	}
	pax := rec("GNU.sparse.numblocks", "1") + rec("GNU.sparse.map", "0,0") + rec("GNU.sparse.size", "1099511627776")
	b := tarOf(t, reg("PaxHeaders/"+name, pax), reg(name, ""))
	b[156] = tar.TypeXHeader
	copy(b[148:156], "        ")
	sum := 0
	for _, c := range b[:512] {
		sum += int(c)
	}
	copy(b[148:156], fmt.Sprintf("%06o\x00 ", sum))
	return b
}

// tarOf writes entries as an uncompressed tar.
func tarOf(t testing.TB, entries ...tent) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		hdr := e.hdr
		require.NoError(t, tw.WriteHeader(&hdr))
		_, err := io.WriteString(tw, e.data)
		require.NoError(t, err)
	}
	require.NoError(t, tw.Close())
	return buf.Bytes()
}

// listTar lists a tar stream's headers, "/"-terminated names for directories.
func listTar(t testing.TB, r io.Reader) []tar.Header {
	t.Helper()
	tr := tar.NewReader(r)
	var out []tar.Header
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		require.NoError(t, err)
		out = append(out, *hdr)
	}
}

// unzst decompresses a snapshot.
func unzst(t testing.TB, b []byte) []byte {
	t.Helper()
	dec, err := newDecoder(bytes.NewReader(b))
	require.NoError(t, err)
	defer dec.Close()
	out, err := io.ReadAll(dec)
	require.NoError(t, err)
	return out
}

func names(hdrs []tar.Header) []string {
	out := make([]string, len(hdrs))
	for i, h := range hdrs {
		out[i] = h.Name
	}
	return out
}
