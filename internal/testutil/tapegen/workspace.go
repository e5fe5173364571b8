package tapegen

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/klauspost/compress/zstd"

	"github.com/tapebox/tapebox/tape"
)

// defaultSnapshotBytes is the default size of a generated snapshot's data file.
const defaultSnapshotBytes = 16 << 10

// corpusFile is one entry of a generated workspace.
type corpusFile struct {
	path    string
	dir     bool
	mode    int64
	content []byte
}

// workspaceFiles returns the entries of generated workspace k, in walk order (a directory
// before its contents, lexical within one): a few source files and a data file of
// opts.SnapshotBytes random (incompressible) bytes.
func workspaceFiles(opts Options, k int) []corpusFile {
	rng := rand.New(rand.NewPCG(opts.Seed^0x5eed, uint64(k)+1))
	data := make([]byte, opts.SnapshotBytes)
	for i := range data {
		data[i] = byte(rng.Uint32())
	}
	src := fmt.Sprintf("package main\n\nfunc main() { println(%q) }\n", fmt.Sprintf("workspace %d", k))
	return []corpusFile{
		{path: "README.md", mode: 0o644, content: []byte(fmt.Sprintf("# task %d\n\n%s\n", k, prompt(uint64(k), 400)))},
		{path: "data.bin", mode: 0o600, content: data},
		{path: "src", dir: true, mode: 0o755},
		{path: "src/main.go", mode: 0o644, content: []byte(src)},
	}
}

// Snapshot returns start snapshot k of the corpus opts describes (opts.Workspaces
// says how many there are): a tar of workspaceFiles compressed with zstd, the same bytes
// for the same options.
func Snapshot(opts Options, k int) []byte {
	opts = opts.withDefaults()
	var tb bytes.Buffer
	tw := tar.NewWriter(&tb)
	for _, f := range workspaceFiles(opts, k) {
		h := &tar.Header{Name: f.path, Mode: f.mode, ModTime: Epoch, Format: tar.FormatPAX, Typeflag: tar.TypeReg, Size: int64(len(f.content))}
		if f.dir {
			h.Name, h.Typeflag, h.Size = f.path+"/", tar.TypeDir, 0
		}
		if err := tw.WriteHeader(h); err != nil {
			panic(err) // a bytes.Buffer does not fail
		}
		if _, err := tw.Write(f.content); err != nil {
			panic(err)
		}
	}
	if err := tw.Close(); err != nil {
		panic(err)
	}
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1))
	if err != nil {
		panic(err)
	}
	defer enc.Close()
	return enc.EncodeAll(tb.Bytes(), nil)
}

// SnapshotName is the file name Generate gives tape i's start snapshot, beside
// tape-NNNNN.json.
func SnapshotName(i int) string { return fmt.Sprintf("tape-%05d.workspace.tar.zst", i) }

// corpusWorkspace is meta.workspace of tape i: it starts from snapshot i mod
// opts.Workspaces; the end manifest is the start with src/main.go edited and a new file.
func corpusWorkspace(opts Options, i int) *tape.Workspace {
	k := i % opts.Workspaces
	files := workspaceFiles(opts, k)
	snap := Snapshot(opts, k)
	sum := sha256.Sum256(snap)
	w := &tape.Workspace{
		Snapshot: SnapshotName(i),
		Digest:   "sha256:" + hex.EncodeToString(sum[:]),
		Size:     int64(len(snap)),
		Files:    len(files),
		Bytes:    contentBytes(files),
		Exclude:  []string{"node_modules", ".venv", "__pycache__", ".tapebox"},
	}
	files[3].content = append(bytes.Clone(files[3].content), fmt.Sprintf("// edited by tape %d\n", i)...)
	files = append(files, corpusFile{path: "src/main_test.go", mode: 0o644, content: []byte("package main\n")})
	for _, f := range files {
		e := tape.FileEntry{Path: f.path, Type: "file", Mode: fmt.Sprintf("%04o", f.mode), Size: int64(len(f.content))}
		if f.dir {
			e.Type, e.Size = "dir", 0
		} else {
			sum := sha256.Sum256(f.content)
			e.SHA256 = hex.EncodeToString(sum[:])
		}
		w.End = append(w.End, e)
	}
	w.End = append(w.End, tape.FileEntry{Path: "src/latest", Type: "symlink", Mode: "0777", Link: "main.go"})
	slices.SortFunc(w.End, func(a, b tape.FileEntry) int { return strings.Compare(a.Path, b.Path) })
	return w
}

// contentBytes sums the files' content, as a snapshot's Info.Bytes does.
func contentBytes(files []corpusFile) int64 {
	var n int64
	for _, f := range files {
		n += int64(len(f.content))
	}
	return n
}
