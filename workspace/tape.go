package workspace

import "github.com/tapebox/tapebox/tape"

// TapeEntries gives a manifest in the form a tape carries it (meta.workspace.end).
func (m Manifest) TapeEntries() []tape.FileEntry {
	out := make([]tape.FileEntry, len(m))
	for i, e := range m {
		out[i] = tape.FileEntry{Path: e.Path, Type: string(e.Type), Mode: e.Mode, Size: e.Size, SHA256: e.SHA256, Link: e.Link}
	}
	return out
}

// FromTape is the manifest a tape carries (meta.workspace.end).
func FromTape(es []tape.FileEntry) Manifest {
	out := make(Manifest, len(es))
	for i, e := range es {
		out[i] = Entry{Path: e.Path, Type: Type(e.Type), Mode: e.Mode, Size: e.Size, SHA256: e.SHA256, Link: e.Link}
	}
	return out
}

// InfoOf is the snapshot a tape names, as Verify and Restore check it.
func InfoOf(w *tape.Workspace) Info {
	return Info{Digest: w.Digest, Size: w.Size, Files: w.Files}
}
