package workspace

import (
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/tapebox/tapebox/tape"
)

// TapeEntries gives a manifest in the form a tape carries it (meta.workspace.end): the same
// entries, not a copy. An empty manifest (an empty workspace) is an empty, non-nil list: a
// tape's nil End says the end was not taken.
func (m Manifest) TapeEntries() []tape.FileEntry {
	if m == nil {
		return []tape.FileEntry{}
	}
	return m
}

// FromTape is the manifest a tape carries (meta.workspace.end): the same entries, not a copy.
func FromTape(es []tape.FileEntry) Manifest { return es }

// InfoOf is the snapshot a tape names, as Verify and Restore check it.
func InfoOf(w *tape.Workspace) Info {
	return Info{Digest: w.Digest, Size: w.Size, Files: w.Files, Bytes: w.Bytes}
}

// Patterns lists every exclusion o applies: DefaultExclude (unless NoDefaultExclude) and
// Exclude. A tape records them (meta.workspace.exclude) so that a replay's manifest leaves out
// the same, with Options{Exclude: patterns, NoDefaultExclude: true}.
func (o Options) Patterns() []string {
	var out []string
	if !o.NoDefaultExclude {
		out = append(out, DefaultExclude...)
	}
	return append(out, o.Exclude...)
}

// Recorded is the Options that apply a tape's recorded exclusions, and extra ones (a
// replay's own files, for its end manifest).
func Recorded(w *tape.Workspace, extra ...string) Options {
	return Options{Exclude: append(slices.Clip(w.Exclude), extra...), NoDefaultExclude: true}
}

// OwnFiles returns anchored exclusions for files TapeBox writes at path and beside it (the
// tape, its Writer's slot files, its snapshot and telemetry), when file lies inside dir; nil
// otherwise (file is the tape's path). A recording or replay writing its tape into the workspace must not find it
// there.
func OwnFiles(dir, file string) []string {
	absDir, err1 := filepath.Abs(dir)
	absPath, err2 := filepath.Abs(file)
	if err1 != nil || err2 != nil {
		return nil
	}
	rel, err := filepath.Rel(absDir, absPath)
	if err != nil || rel == "." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || rel == ".." {
		return nil
	}
	rel = filepath.ToSlash(rel)
	d, base := path.Split(rel)
	stem := strings.TrimSuffix(base, ".json")
	return []string{
		"/" + d + base,
		"/" + d + "." + base + ".slot-*",
		"/" + d + "." + base + ".tmp*",
		"/" + d + stem + ".*.json", // per-run simulator tapes
		"/" + d + stem + ".workspace.tar.zst",
		"/" + d + "." + stem + ".workspace.tar.zst.tmp*",
		"/" + d + stem + ".telemetry.csv",
	}
}

// SnapshotPath is where a recording's start snapshot goes: beside the tape, named after it.
func SnapshotPath(tapePath string) string {
	return strings.TrimSuffix(tapePath, ".json") + ".workspace.tar.zst"
}
