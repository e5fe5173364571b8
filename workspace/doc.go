// Package workspace carries an agent's working directory with its tape: Snapshot packs the
// starting state as a deterministic tar compressed with zstd, Restore unpacks it into a fresh
// sandbox after checking its digest, and a Manifest (path, type, mode, size, SHA-256, link
// target of every entry) records the end state so that Diff can tell a replay's end state
// from the recording's.
//
//	info, err := workspace.Snapshot(ctx, "/src/proj", w, workspace.Options{})
//	...
//	err = workspace.Restore(ctx, f, info, "/tmp/replay") // f: the snapshot file
//	m, err := workspace.ManifestDir(ctx, "/tmp/replay", workspace.Options{})
//	for _, c := range workspace.Diff(recorded, m) { fmt.Println(c) }
//
// # What a snapshot holds
//
// Regular files, directories and symbolic links, in walk order (lexical within a directory,
// a directory before its contents). Symbolic links are stored as links and never followed,
// wherever they point. Hard-linked files are stored as separate copies. Named pipes, sockets
// and devices are left out and listed in Info.Skipped. Owners are not kept (uid and gid 0, no
// names), nor are setuid, setgid and sticky bits: permission bits only. Modification times
// are kept to the second: tool calls such as ls -l, find -newer and make see what they saw
// during the recording. So the same untouched directory gives the same bytes and the same
// digest (with the same version of the zstd encoder), while two checkouts of one commit made
// at different times do not.
//
// # What is left out
//
// Options.Exclude takes glob patterns (path.Match syntax) on slash-separated paths relative
// to the workspace. A pattern without a slash matches an entry's name at any depth
// ("node_modules", "*.log"); a pattern with one matches the path from the workspace's root
// ("build/out", "/dist"). An excluded directory is left out with all it holds. DefaultExclude
// applies unless Options.NoDefaultExclude is set:
//
//   - node_modules, .venv, __pycache__: dependencies and caches that an install recreates.
//     They are often most of a workspace's bytes, and they rarely work elsewhere anyway: a
//     virtualenv holds absolute host paths, node_modules native addons built for the host.
//   - .tapebox: the executor's state directory (background tasks' output). A replay writes
//     it afresh; a start state must not carry an earlier run's.
//
// .git is kept whole, objects included: agents run git status, git diff and git log, and a
// repository without its objects is a broken one whose output would differ on replay. A
// repository with a long history is what Options.MaxBytes is for.
//
// # Size cap
//
// Snapshot walks the whole workspace before writing a byte. A workspace holding more file
// content than Options.MaxBytes (DefaultMaxBytes, 256 MiB) is refused with ErrTooBig and an
// error naming the cap, the size and the biggest top-level entries; nothing is written.
//
// # Restoring untrusted snapshots
//
// A tape may come from anyone, so Restore and Tar trust nothing in the archive. They read it
// twice: first to hash it and check every entry, so a snapshot whose digest, size or counts
// differ from its Info, or that holds one bad entry, is refused (ErrMismatch, ErrUnsafe)
// before anything is written; then to extract, checking again. An entry is refused when its
// name is absolute, holds a "." or ".." element or a NUL, appears twice, or lies under an
// earlier symbolic link or file of the archive; a hard link is refused unless it names an
// earlier regular file of the archive; sparse files (a few bytes that stand for terabytes)
// and other types (devices, pipes) are refused. Restore writes only through an os.Root opened
// on the target directory, so even a symbolic link that appeared on disk meanwhile cannot
// lead it outside.
//
// What Restore writes is bounded by Info.Bytes (content beyond it is refused), and Info
// comes from the tape, so Verify, Restore and Tar also refuse an Info over
// UntrustedMaxBytes (4 GiB) or UntrustedMaxEntries before decompressing anything: zstd
// packs 128 KiB of zeros in 4 bytes, so a snapshot of 128 KiB can hold 4 GiB. Names over
// MaxNameBytes, names of more than UntrustedMaxNameBytes together and more tar than the
// recorded entries take (stacked long-name headers) are refused too.
package workspace
