package tape

// Workspace is the run's working directory as the tape carries it: a snapshot of how it
// started, in a file beside the tape, and a manifest of how it ended.
type Workspace struct {
	// Snapshot is the start snapshot's file name, relative to the tape's directory: a tar
	// compressed with zstd (package workspace). Empty when the start was not taken.
	Snapshot string `json:"snapshot,omitempty"`
	// Digest is "sha256:<hex>" of the snapshot file's bytes; a replay refuses a snapshot
	// whose bytes do not match it.
	Digest string `json:"digest,omitempty"`
	// Size is the snapshot file's size in bytes.
	Size int64 `json:"size,omitempty"`
	// Files counts the snapshot's entries (files, directories, symlinks).
	Files int `json:"files,omitempty"`
	// Bytes is the uncompressed content of the snapshot's files; a restore writes no more.
	Bytes int64 `json:"bytes,omitempty"`
	// Exclude lists the patterns (relative paths, path.Match syntax per element) left out of
	// the snapshot and of the end manifest; a replay leaves the same out of its manifest.
	Exclude []string `json:"exclude,omitempty"`
	// End lists the workspace's entries when the run ended, sorted by path; nil when the end
	// was not taken. An empty workspace is an empty, non-nil End, written as [] (omitzero,
	// not omitempty: compare must tell it from an end not taken).
	End []FileEntry `json:"end,omitzero"`
}

// FileEntry is one entry of a workspace manifest.
type FileEntry struct {
	// Path is relative to the workspace, with forward slashes.
	Path string `json:"path"`
	// Type is "file", "dir" or "symlink".
	Type string `json:"type"`
	// Mode is the permission bits in octal, as "0644".
	Mode string `json:"mode"`
	// Size is a file's size in bytes; 0 for others.
	Size int64 `json:"size"`
	// SHA256 is a file's content digest in hex.
	SHA256 string `json:"sha256,omitempty"`
	// Link is a symlink's target, as written (never followed).
	Link string `json:"link,omitempty"`
}
