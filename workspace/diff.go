package workspace

import (
	"fmt"
	"slices"
	"strings"
)

// Kind says how an entry differs between two manifests.
type Kind string

// The kinds of Change.
const (
	// Differs: the entry is in both, with another type, content, size, mode or link.
	Differs Kind = "differs"
	// Missing: the recorded entry is not in the replayed manifest.
	Missing Kind = "missing"
	// Extra: the replayed entry was not recorded.
	Extra Kind = "extra"
)

// Change is one difference between a recorded and a replayed manifest.
type Change struct {
	Path string `json:"path"`
	Kind Kind   `json:"kind"`
	// What differs, for Differs: "type", "size", "content", "mode" or "link". A file whose
	// size differs is not reported again for its content.
	What string `json:"what,omitempty"`
	// Recorded and Replayed describe each side; "" for the side where the entry is absent.
	Recorded string `json:"recorded,omitempty"`
	Replayed string `json:"replayed,omitempty"`
}

// String reads like "src/a.go: content differs: recorded sha256:1a2b3c4d5e6f, replayed
// sha256:9f8e7d6c5b4a" or "notes.txt: extra: file 0644, 3 bytes".
func (c Change) String() string {
	switch c.Kind {
	case Missing:
		return c.Path + ": missing: recorded " + c.Recorded
	case Extra:
		return c.Path + ": extra: " + c.Replayed
	}
	return fmt.Sprintf("%s: %s differs: recorded %s, replayed %s", c.Path, c.What, c.Recorded, c.Replayed)
}

// describe sums an entry up for Missing and Extra.
func describe(e Entry) string {
	switch e.Type {
	case TypeFile:
		return fmt.Sprintf("file %s, %s", e.Mode, byteCount(e.Size))
	case TypeSymlink:
		return "symlink to " + e.Link
	}
	return e.Type + " " + e.Mode
}

// Diff lists how replayed differs from recorded, by path; none for identical trees. A
// directory that is missing, extra or no longer a directory is one Change: what it holds is
// not listed again. Manifests are sorted as ManifestDir and ManifestTar return them; others
// are sorted first (on copies).
func Diff(recorded, replayed Manifest) []Change {
	recorded, replayed = sorted(recorded), sorted(replayed)
	var out []Change
	// gone holds the directories reported whole; what lies under them is not listed.
	gone := map[string]bool{}
	under := func(p string) bool {
		for i := range len(p) {
			if p[i] == '/' && gone[p[:i]] {
				return true
			}
		}
		return false
	}
	i, j := 0, 0
	for i < len(recorded) || j < len(replayed) {
		var rec, rep *Entry
		switch {
		case j == len(replayed) || i < len(recorded) && recorded[i].Path < replayed[j].Path:
			rec = &recorded[i]
			i++
		case i == len(recorded) || replayed[j].Path < recorded[i].Path:
			rep = &replayed[j]
			j++
		default:
			rec, rep = &recorded[i], &replayed[j]
			i, j = i+1, j+1
		}
		p := cmpPath(rec, rep)
		if under(p) {
			continue
		}
		switch {
		case rep == nil:
			out = append(out, Change{Path: p, Kind: Missing, Recorded: describe(*rec)})
			gone[p] = rec.Type == TypeDir
		case rec == nil:
			out = append(out, Change{Path: p, Kind: Extra, Replayed: describe(*rep)})
			gone[p] = rep.Type == TypeDir
		default:
			out = append(out, compare(*rec, *rep)...)
			if rec.Type != rep.Type {
				gone[p] = rec.Type == TypeDir || rep.Type == TypeDir
			}
		}
	}
	return out
}

func cmpPath(a, b *Entry) string {
	if a != nil {
		return a.Path
	}
	return b.Path
}

// compare lists the differences of one path present on both sides.
func compare(rec, rep Entry) []Change {
	differs := func(what, a, b string) Change {
		return Change{Path: rec.Path, Kind: Differs, What: what, Recorded: a, Replayed: b}
	}
	if rec.Type != rep.Type {
		return []Change{differs("type", describe(rec), describe(rep))}
	}
	var out []Change
	switch rec.Type {
	case TypeFile:
		if rec.Size != rep.Size {
			out = append(out, differs("size", byteCount(rec.Size), byteCount(rep.Size)))
		} else if rec.SHA256 != rep.SHA256 {
			out = append(out, differs("content", shortSum(rec.SHA256), shortSum(rep.SHA256)))
		}
	case TypeSymlink:
		if rec.Link != rep.Link {
			out = append(out, differs("link", rec.Link, rep.Link))
		}
	}
	if rec.Mode != rep.Mode {
		out = append(out, differs("mode", rec.Mode, rep.Mode))
	}
	return out
}

func byteCount(n int64) string {
	if n == 1 {
		return "1 byte"
	}
	return fmt.Sprintf("%d bytes", n)
}

func shortSum(s string) string { return "sha256:" + s[:min(12, len(s))] }

func sorted(m Manifest) Manifest {
	cmp := func(a, b Entry) int { return strings.Compare(a.Path, b.Path) }
	if slices.IsSortedFunc(m, cmp) {
		return m
	}
	m = slices.Clone(m)
	slices.SortStableFunc(m, cmp)
	return m
}
