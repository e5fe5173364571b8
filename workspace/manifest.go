package workspace

import (
	"archive/tar"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"strings"

	"github.com/tapebox/tapebox/tape"
)

// The entry types a snapshot and a manifest hold (Entry.Type).
const (
	TypeFile    = "file"
	TypeDir     = "dir"
	TypeSymlink = "symlink"
)

// Entry is one file, directory or symbolic link of a workspace: the tape's manifest entry
// (meta.workspace.end), so that a manifest goes into a tape and comes out of one as it is.
// Its Path is slash-separated, its Mode "0777" for a symbolic link.
type Entry = tape.FileEntry

// Manifest is a workspace's state without its content: every entry Options leave in, sorted
// by path. Named pipes, sockets and devices are not in it.
type Manifest []Entry

func modeString(perm fs.FileMode) string { return fmt.Sprintf("%04o", uint32(perm.Perm())) }

// ManifestDir builds the manifest of the directory dir, hashing every regular file and
// following no symbolic link (dir itself may be one). Options.MaxBytes does not apply;
// Options.Untrusted bounds what it reads.
func ManifestDir(ctx context.Context, dir string, opts Options) (Manifest, error) {
	t, err := walk(ctx, dir, opts)
	if err != nil {
		return nil, fmt.Errorf("manifest of %s: %w", dir, err)
	}
	root, err := os.OpenRoot(t.dir)
	if err != nil {
		return nil, fmt.Errorf("manifest of %s: %w", dir, err)
	}
	defer root.Close()
	out := make(Manifest, 0, len(t.items))
	h := sha256.New()
	for _, it := range t.items {
		e := Entry{Path: it.rel, Type: it.typ, Mode: modeString(it.perm), Link: it.link}
		if it.typ == TypeFile {
			if err := ctx.Err(); err != nil {
				return nil, fmt.Errorf("manifest of %s: %w", t.dir, err)
			}
			h.Reset()
			if err := copyFile(h, t, root, it); err != nil {
				return nil, fmt.Errorf("manifest of %s: %w", t.dir, err)
			}
			e.Size, e.SHA256 = it.size, hex.EncodeToString(h.Sum(nil))
		}
		out = append(out, e)
	}
	out.sort()
	return out, nil
}

// ManifestTar builds a manifest from an uncompressed tar stream, reading it once without
// holding any file's content. Entry names are taken relative to prefix: the Docker Engine
// API's CopyFromContainer names the entries of a directory "<base of the directory>/<path>",
// so pass path.Base of it; the entry named prefix itself is the workspace's root and left
// out. For "/" (path.Base of the root directory) the engine names them "/<path>", which a
// prefix of "/" takes. An empty prefix takes names as they are ("./" in front is dropped). A hard link gets
// the content of the earlier entry it names; named pipes, sockets and devices are left out.
func ManifestTar(r io.Reader, prefix string, opts Options) (Manifest, error) {
	m, err := opts.matcher()
	if err != nil {
		return nil, fmt.Errorf("manifest of an archive: %w", err)
	}
	rooted := prefix == "/"
	prefix = strings.Trim(prefix, "/")
	relName := func(name string) (string, error) {
		if rooted {
			name = strings.TrimPrefix(name, "/")
		}
		return tarRel(name, prefix)
	}
	tr := tar.NewReader(r)
	out := Manifest{} // an empty workspace is an empty manifest, not none
	index := map[string]int{}
	h := sha256.New()
	maxBytes, maxEntries := opts.manifestLimit()
	var total int64
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("manifest of an archive: %w", err)
		}
		rel, err := relName(hdr.Name)
		if err != nil {
			return nil, fmt.Errorf("manifest of an archive: %w", err)
		}
		if rel == "" || m.excludesAny(rel) {
			continue
		}
		if isSparse(hdr) {
			return nil, fmt.Errorf("manifest of an archive: entry %q is a sparse file: not supported", hdr.Name)
		}
		e := Entry{Path: rel, Mode: modeString(fs.FileMode(hdr.Mode))}
		switch hdr.Typeflag {
		case tar.TypeDir:
			e.Type = TypeDir
		case tar.TypeSymlink:
			e.Type, e.Mode, e.Link = TypeSymlink, "0777", hdr.Linkname
		case tar.TypeReg:
			if total += hdr.Size; maxBytes >= 0 && total > maxBytes {
				return nil, fmt.Errorf("manifest of an archive: %w: more than %s of files (%s is %s), the most a sandbox's manifest hashes", ErrTooBig, sizeString(maxBytes), rel, sizeString(hdr.Size))
			}
			h.Reset()
			n, err := io.Copy(h, tr)
			if err != nil {
				return nil, fmt.Errorf("manifest of an archive: read %s: %w", rel, err)
			}
			e.Type, e.Size, e.SHA256 = TypeFile, n, hex.EncodeToString(h.Sum(nil))
		case tar.TypeLink:
			target, err := relName(hdr.Linkname)
			if err != nil {
				return nil, fmt.Errorf("manifest of an archive: hard link %s: %w", rel, err)
			}
			i, ok := index[target]
			if !ok || out[i].Type != TypeFile {
				return nil, fmt.Errorf("manifest of an archive: hard link %s to %s: no earlier file of that name in the archive (excluded, or missing)", rel, hdr.Linkname)
			}
			// A hard link is its target's inode: its mode too, whatever its own header says
			// (extracting links it, and the tree then shows the target's mode for both).
			e.Type, e.Mode, e.Size, e.SHA256 = TypeFile, out[i].Mode, out[i].Size, out[i].SHA256
		default:
			continue
		}
		if i, ok := index[rel]; ok {
			out[i] = e // a later entry replaces an earlier one, as extracting would
			continue
		}
		index[rel] = len(out)
		out = append(out, e)
		if maxEntries >= 0 && len(out) > maxEntries {
			return nil, fmt.Errorf("manifest of an archive: %w: more than %d entries, the most a sandbox's manifest reads", ErrTooBig, maxEntries)
		}
	}
	out.sort()
	return out, nil
}

// tarRel turns an entry name into a path relative to prefix: "" for the root itself.
func tarRel(name, prefix string) (string, error) {
	n := strings.TrimSuffix(strings.TrimPrefix(name, "./"), "/")
	if n == "." {
		n = ""
	}
	if prefix != "" {
		if n == prefix {
			return "", nil
		}
		rest, ok := strings.CutPrefix(n, prefix+"/")
		if !ok {
			return "", fmt.Errorf("entry %q is not under %q", name, prefix)
		}
		n = rest
	}
	if n == "" {
		return "", nil
	}
	if !fs.ValidPath(n) || strings.ContainsRune(n, 0) {
		return "", fmt.Errorf("entry %q: not a clean relative path", name)
	}
	return n, nil
}

func (m Manifest) sort() {
	slices.SortFunc(m, func(a, b Entry) int { return strings.Compare(a.Path, b.Path) })
}
