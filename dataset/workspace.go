package dataset

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/tapebox/tapebox/tape"
)

// SnapshotError says why a tape's start snapshot cannot go into the dataset: the file is
// missing or cannot be read (Err wraps the os error, os.ErrNotExist for a missing file),
// or its bytes do not hash to the tape's meta.workspace.digest (Err wraps
// ErrDigestMismatch). Export reports it inside an InvalidTapeError naming the tape file.
type SnapshotError struct {
	// Snapshot is the snapshot file's path: the tape's directory joined with
	// meta.workspace.snapshot.
	Snapshot string
	Err      error
}

// Error names the snapshot file and says what is wrong with it.
func (e *SnapshotError) Error() string { return "start snapshot " + e.Snapshot + ": " + e.Err.Error() }

// Unwrap returns the cause.
func (e *SnapshotError) Unwrap() error { return e.Err }

// missingError is a snapshot file that is not there; it is an os.ErrNotExist.
type missingError struct{ name string }

func (e missingError) Error() string {
	return fmt.Sprintf("missing: meta.workspace.snapshot %q names no file beside the tape", e.name)
}

func (e missingError) Unwrap() error { return os.ErrNotExist }

// ErrDigestMismatch reports a start snapshot whose bytes do not hash to the digest the tape
// (or the workspaces table) gives for them.
var ErrDigestMismatch = errors.New("digest mismatch")

// workspaceRowGroupBytes bounds a row group of the workspaces table: small snapshots share
// one, a big one (a snapshot can be tens of MB) is a row group of its own, so that the
// Parquet writer holds at most one big snapshot at a time.
const workspaceRowGroupBytes = 8 << 20

// snapshotPath is where the start snapshot of the tape at tapePath lives: beside it.
func snapshotPath(tapePath string, w *tape.Workspace) string {
	return filepath.Join(filepath.Dir(tapePath), filepath.FromSlash(w.Snapshot))
}

// digestOf returns "sha256:<hex>" of b.
func digestOf(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// checkSnapshot checks the start snapshot the workspace of the tape at tapePath names:
// the file exists beside the tape and its bytes hash to the digest. It reads the file
// through a small buffer, never whole. It returns the snapshot's path.
func checkSnapshot(tapePath string, w *tape.Workspace) (string, error) {
	path := snapshotPath(tapePath, w)
	fail := func(format string, args ...any) (string, error) {
		return path, &SnapshotError{Snapshot: path, Err: fmt.Errorf(format, args...)}
	}
	if w.Digest == "" {
		return fail("meta.workspace.digest is empty, so its bytes cannot be checked")
	}
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return path, &SnapshotError{Snapshot: path, Err: missingError{w.Snapshot}}
	}
	if err != nil {
		return fail("%w", err)
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return fail("%w", err)
	}
	if got := "sha256:" + hex.EncodeToString(h.Sum(nil)); got != w.Digest {
		return fail("%w: its bytes hash to %s, meta.workspace.digest says %s", ErrDigestMismatch, got, w.Digest)
	}
	if w.Size != 0 && n != w.Size {
		return fail("%d bytes, meta.workspace.size says %d", n, w.Size)
	}
	return path, nil
}

// readSnapshot reads the file at path into buf (grown as needed, its old contents lost)
// and checks that its bytes hash to digest.
func readSnapshot(path, digest string, buf []byte) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return buf, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return buf, err
	}
	size := int(info.Size())
	if cap(buf) < size+1 {
		buf = make([]byte, 0, size+1) // one more byte to see EOF
	}
	buf = buf[:0]
	for {
		n, err := f.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return buf, err
		}
		if len(buf) == cap(buf) {
			grown := make([]byte, len(buf), 2*cap(buf))
			copy(grown, buf)
			buf = grown
		}
	}
	if got := digestOf(buf); got != digest {
		return buf, fmt.Errorf("%w: its bytes now hash to %s, not %s (did it change during the export?)", ErrDigestMismatch, got, digest)
	}
	return buf, nil
}

// workspaceOf reads meta.workspace from a tape's encoding. It decodes only the meta, which
// comes before the threads, so it costs little whatever the size of the tape.
func workspaceOf(data []byte) (*tape.Workspace, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, errors.New("read meta.workspace: the tape is not a JSON object")
	}
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("read meta.workspace: %w", err)
		}
		if key == "meta" {
			var m struct {
				Workspace *tape.Workspace `json:"workspace"`
			}
			if err := dec.Decode(&m); err != nil {
				return nil, fmt.Errorf("read meta.workspace: %w", err)
			}
			return m.Workspace, nil
		}
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return nil, fmt.Errorf("read meta.workspace: %w", err)
		}
	}
	return nil, nil
}

// snapshotSuffix is the end of the file name Import gives a snapshot whose own name it
// cannot keep.
const snapshotSuffix = ".workspace.tar.zst"

// plainName reports whether Import may write a snapshot under name, in the folder of the
// tapes: one file name (no directory, not hidden), not a tape's (*.json).
func plainName(name string) bool {
	return name != "" && filepath.IsLocal(name) && !strings.ContainsAny(name, `/\`) &&
		!strings.HasPrefix(name, ".") && !strings.HasSuffix(name, ".json")
}
