package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/tapebox/tapebox/secrets"
	"github.com/tapebox/tapebox/tape"
	"github.com/tapebox/tapebox/tape/redact"
	"github.com/tapebox/tapebox/workspace"
)

// snapshotRedaction is what redactSnapshot did to a tape's start snapshot.
type snapshotRedaction struct {
	// Path is the snapshot written beside the redacted tape; empty when the tape keeps
	// the one it named.
	Path    string
	Removed []tape.Redaction
}

// redactSnapshot removes what the secret scan finds in the start snapshot that t (read
// from the tape file in) names: in file contents, entry names and symbolic links'
// targets. The snapshot is re-packed beside the tape out (workspace.SnapshotPath), every
// entry without a finding as it was, and t's meta.workspace is changed to name it: its
// digest, size and counts, and the end manifest's entries of files the run left as they
// were (their digest and size are now the redacted content's). The redactions, appended
// to t's meta, point into the snapshot: /meta/workspace/snapshot/ and the entry's new name
// (as one JSON pointer token). A snapshot with nothing found is kept where it is when out
// is beside in; else it is copied beside out, as the tape names it relative to itself.
func redactSnapshot(ctx context.Context, in, out string, t *tape.Tape) (*snapshotRedaction, error) {
	ws := t.Meta.Workspace
	local := filepath.FromSlash(ws.Snapshot)
	if !filepath.IsLocal(local) {
		return nil, fmt.Errorf("start snapshot: meta.workspace.snapshot %q is not a file beside the tape", ws.Snapshot)
	}
	srcPath := filepath.Join(filepath.Dir(in), local)
	src, err := os.Open(srcPath)
	if err != nil {
		return nil, fmt.Errorf("start snapshot: %w", err)
	}
	defer src.Close()
	scanner, err := secrets.Default()
	if err != nil {
		return nil, err
	}
	info := workspace.InfoOf(ws)
	if err := workspace.Verify(src, info); err != nil {
		return nil, err
	}
	found, err := scanner.ScanSnapshot(ctx, io.NewSectionReader(src, 0, info.Size))
	if err != nil {
		return nil, fmt.Errorf("scan %s: %w", srcPath, err)
	}
	if len(found) == 0 && mustAbs(filepath.Dir(in)) == mustAbs(filepath.Dir(out)) {
		return &snapshotRedaction{}, nil
	}
	edits, removed := snapshotEdits(found)
	dst := workspace.SnapshotPath(out)
	if mustAbs(dst) == mustAbs(srcPath) {
		return nil, fmt.Errorf("start snapshot: %s is the snapshot of the input: write the redacted tape under another name", dst)
	}
	tmp, err := os.CreateTemp(filepath.Dir(dst), "."+filepath.Base(dst)+".tmp*")
	if err != nil {
		return nil, fmt.Errorf("start snapshot: %w", err)
	}
	defer os.Remove(tmp.Name())
	newInfo, changed, err := workspace.Rewrite(ctx, src, info, tmp, edits)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, fmt.Errorf("redact the start snapshot: %w", err)
	}
	// What is left is looked for again: nothing may be.
	check, err := os.Open(tmp.Name())
	if err != nil {
		return nil, err
	}
	left, err := scanner.ScanSnapshot(ctx, check)
	check.Close()
	if err != nil {
		return nil, fmt.Errorf("scan the redacted snapshot: %w", err)
	}
	if len(left) > 0 {
		return nil, fmt.Errorf("%d secrets remain in the redacted start snapshot (first: %s)", len(left), left[0])
	}
	if err := os.Rename(tmp.Name(), dst); err != nil {
		return nil, fmt.Errorf("start snapshot: %w", err)
	}
	ws.Snapshot = filepath.Base(dst)
	ws.Digest, ws.Size, ws.Files, ws.Bytes = newInfo.Digest, newInfo.Size, newInfo.Files, newInfo.Bytes
	for _, c := range changed {
		for i := range ws.End {
			if e := &ws.End[i]; e.Path == c.Name && e.Type == "file" && e.SHA256 == c.OldSHA256 {
				e.SHA256, e.Size = c.NewSHA256, c.NewSize
			}
		}
	}
	t.Meta.Redactions = append(t.Meta.Redactions, removed...)
	return &snapshotRedaction{Path: dst, Removed: removed}, nil
}

// snapshotEdits turns the findings of a snapshot scan into the edits that remove them, and
// the redactions to record.
func snapshotEdits(found []secrets.Finding) (map[string]workspace.Edit, []tape.Redaction) {
	type spans struct {
		content, name, link []redact.Span
		rules               map[string]bool
	}
	byMember := map[string]*spans{}
	var order []string
	for _, f := range found {
		s := byMember[f.Member]
		if s == nil {
			s = &spans{rules: map[string]bool{}}
			byMember[f.Member] = s
			order = append(order, f.Member)
		}
		sp := redact.Span{Offset: max(f.Offset, 0), Length: max(f.Length, 1)}
		switch f.In {
		case secrets.InName:
			s.name = append(s.name, sp)
		case secrets.InLink:
			s.link = append(s.link, sp)
		default:
			s.content = append(s.content, sp)
		}
		s.rules[f.Rule] = true
	}
	edits := map[string]workspace.Edit{}
	var removed []tape.Redaction
	for _, member := range order {
		s := byMember[member]
		var ed workspace.Edit
		newName := entryName(member)
		if len(s.name) > 0 {
			newName = entryName(redact.Cut(member, s.name))
			ed.Name = newName
		}
		if len(s.link) > 0 {
			ls := s.link
			ed.Link = func(target string) string { return redact.Cut(target, ls) }
		}
		for _, c := range redact.Merged(s.content) {
			ed.Cuts = append(ed.Cuts, workspace.Cut{Offset: int64(c.Offset), Length: int64(c.Length), With: redact.RedactedValue})
		}
		edits[entryName(member)] = ed
		for _, r := range slices.Sorted(mapKeysOf(s.rules)) {
			removed = append(removed, tape.Redaction{Rule: r, Pointer: secrets.SnapshotPointer + "/" + pointerToken.Replace(newName)})
		}
	}
	return edits, removed
}

// pointerToken escapes a string as one JSON pointer token (RFC 6901).
var pointerToken = strings.NewReplacer("~", "~0", "/", "~1")

// entryName is a tar entry's name as workspace.Rewrite keys its edits: without a leading
// "./" or a directory's trailing slash.
func entryName(name string) string {
	return strings.TrimSuffix(strings.TrimPrefix(name, "./"), "/")
}

func mapKeysOf[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}
