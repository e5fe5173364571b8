package dataset

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"golang.org/x/sync/errgroup"

	"github.com/tapebox/tapebox/tape"
	"github.com/tapebox/tapebox/tape/seal"
)

// ImportOptions configures Import.
type ImportOptions struct {
	// Out is the folder the tape files go to; it is created if needed.
	Out string
	// Splits limits the import to these splits (default: every split).
	Splits []string
	// Verify validates each tape against the schema and checks that it is in canonical
	// encoding before writing it.
	Verify bool
	// Progress, when set, receives a progress line that rewrites itself.
	Progress io.Writer
	// AllowTampered imports a tape whose digests do not match (seal.Check); without it the
	// import stops at such a tape, naming it and the changed part.
	AllowTampered bool
}

// ImportResult says what an import did.
type ImportResult struct {
	Tapes int
	Bytes int64
	// Splits gives the tapes imported from each split, in the order they were read.
	Splits []ImportedSplit
	// Workspaces counts the start snapshot files written, WorkspaceBytes their size.
	Workspaces     int
	WorkspaceBytes int64
	// Renamed lists the tapes whose start snapshot was written under another name than
	// their meta.workspace.snapshot, which the tape file then names instead: a name that
	// is not a plain file name, or one that another tape's different snapshot took. Their
	// tape files differ from tape_json in that name only.
	Renamed []RenamedSnapshot
	// WithoutWorkspace counts the tapes that name a start snapshot the dataset does not
	// hold (exported without them); their tape files are written all the same.
	WithoutWorkspace int
	// NamesKept counts the tapes written under the name of the file they were exported
	// from (source_file); IDNamed lists the tapes that have one but were named by their
	// id instead, and why.
	NamesKept int
	IDNamed   []IDNamedTape
	Elapsed   time.Duration
}

// IDNamedTape is a tape Import named by its id (TapeFileName) although the dataset gives
// the name of the file it was exported from.
type IDNamedTape struct {
	TapeID, SourceFile string
	// Why: the name is not a plain file name ending in .json, another tape of the import
	// has it too, or it is the id name of another tape.
	Why string
}

// ImportedSplit counts the tapes Import wrote from one split.
type ImportedSplit struct {
	Name  string
	Tapes int
}

// RenamedSnapshot is a start snapshot Import wrote under a new name.
type RenamedSnapshot struct {
	TapeID string
	// From is the tape's meta.workspace.snapshot in the dataset, To the file name written
	// (beside the tape) and now in the tape's meta.
	From, To string
}

// tapeJSON is the projection of the tapes table that Import reads.
type tapeJSON struct {
	TapeID            string  `parquet:"tape_id"`
	SourceFile        *string `parquet:"source_file,optional"`
	WorkspaceDigest   *string `parquet:"workspace_digest,optional"`
	WorkspaceIncluded bool    `parquet:"workspace_included"`
	TapeJSON          []byte  `parquet:"tape_json,string"`
}

// importTape is a row to write: the tape, and the name its snapshot gets when it differs
// from meta.workspace.snapshot.
type importTape struct {
	located[tapeJSON]
	rename string
	name   string // the tape file's name
}

// Import rebuilds tape files from the tapes table of the dataset in dir: one file per row,
// holding the row's tape_json, which is the canonical encoding of the tape that was
// exported, byte for byte, under the name of the file it was exported from (source_file)
// where that name is a plain file name ending in .json that no other tape of the import
// has and that is no other tape's id name, else named after the tape id (TapeFileName:
// TAPE_ID.json, characters that do not belong in a file name %-escaped;
// ImportResult.IDNamed says which and why). Then it writes each tape's start snapshot beside it,
// from the split's workspaces table, under the name meta.workspace.snapshot gives, after
// checking that its bytes hash to the digest; a snapshot whose name cannot be kept (not a
// plain file name, or taken by another tape's different snapshot) is written as
// <tape file stem>.workspace.tar.zst and its tape file says so (ImportResult.Renamed).
// Each file is written to a temporary name and renamed.
func Import(ctx context.Context, dir string, opts ImportOptions) (*ImportResult, error) {
	start := time.Now()
	if opts.Out == "" {
		return nil, errors.New("import: no output folder")
	}
	l, err := scanLayout(dir)
	if err != nil {
		return nil, fmt.Errorf("import: %w", err)
	}
	splits, err := importSplits(l, dir, opts.Splits)
	if err != nil {
		return nil, fmt.Errorf("import: %w", err)
	}
	if err := os.MkdirAll(opts.Out, 0o755); err != nil {
		return nil, fmt.Errorf("import: %w", err)
	}
	prog := newProgress(opts.Progress, "import", 0, 0)
	defer prog.stop()
	// Every file is renamed into place whole, and the folder synced once at the end; the
	// files' content is not synced one by one (AtomicBatch.SyncFiles), which would make the
	// import wait for the disk.
	out := &tape.AtomicBatch{Dir: opts.Out}

	res := &ImportResult{}
	names, err := tapeNames(l, splits, res)
	if err != nil {
		return nil, fmt.Errorf("import: %w", err)
	}
	snaps := newSnapshotNames()
	for _, name := range names {
		snaps.owner[name] = "" // a tape's: no snapshot takes it
	}
	// One goroutine reads (decompression) and names the snapshots, two write files.
	g, gctx := errgroup.WithContext(ctx)
	rows := make(chan importTape, 4)
	g.Go(func() error {
		defer close(rows)
		return readTapes(gctx, l, splits, names, snaps, res, rows)
	})
	counts := make([]ImportResult, 2)
	for w := range counts {
		g.Go(func() error {
			for r := range rows {
				if err := writeTape(opts, out, r); err != nil {
					return err
				}
				counts[w].Tapes++
				counts[w].Bytes += int64(len(r.v.TapeJSON))
				prog.add(int64(len(r.v.TapeJSON)))
			}
			return nil
		})
	}
	err = g.Wait()
	for range rows { // let the reader finish after a writer failed
	}
	if err != nil {
		return nil, fmt.Errorf("import: %w", err)
	}
	for _, c := range counts {
		res.Tapes += c.Tapes
		res.Bytes += c.Bytes
	}
	for _, split := range splits {
		if err := snaps.write(ctx, l, split, out, res); err != nil {
			return nil, fmt.Errorf("import: %w", err)
		}
	}
	if err := out.Sync(); err != nil {
		return nil, fmt.Errorf("import: sync %s: %w", opts.Out, err)
	}
	res.Elapsed = time.Since(start)
	return res, nil
}

// importSplits are the splits of the tapes table an import reads: want, each of which the
// dataset in dir must have, or else all of them (at least one).
func importSplits(l layout, dir string, want []string) ([]string, error) {
	splits := l.splits(configTapes)
	if len(want) > 0 {
		for _, s := range want {
			if _, ok := l[configTapes][s]; !ok {
				return nil, fmt.Errorf("%s has no split %q (it has %s)", dir, s, strings.Join(splits, ", "))
			}
		}
		splits = want
	}
	if len(splits) == 0 {
		return nil, fmt.Errorf("%s: no tapes table under data/%s", dir, configTapes)
	}
	return splits, nil
}

// readTapes sends the rows of the splits' tapes tables to rows, each with its file name
// (names, by tape id) and the name its start snapshot gets (snaps), until ctx is done. It
// refuses a tape id seen twice, and counts in res the tapes per split, the snapshots
// renamed and the tapes whose snapshot the dataset does not hold.
func readTapes(ctx context.Context, l layout, splits []string, names map[string]string, snaps *snapshotNames, res *ImportResult, rows chan<- importTape) error {
	seen := map[string]string{}
	for _, split := range splits {
		_, fs := l.primary(configTapes, split)
		res.Splits = append(res.Splits, ImportedSplit{Name: split})
		for r, err := range rowsOf[tapeJSON](fs, tapesTable, 1) {
			if err != nil {
				return err
			}
			where := fmt.Sprintf("%s row %d", r.file, r.row)
			if first, dup := seen[r.v.TapeID]; dup {
				return fmt.Errorf("%s: tape_id %q is also at %s", where, r.v.TapeID, first)
			}
			seen[r.v.TapeID] = where
			it := importTape{located: r, name: names[r.v.TapeID]}
			if r.v.WorkspaceIncluded {
				var from string
				if from, it.rename, err = snaps.name(split, r.v); err != nil {
					return fmt.Errorf("%s (tape %s): %w", where, r.v.TapeID, err)
				}
				if it.rename != "" {
					res.Renamed = append(res.Renamed, RenamedSnapshot{TapeID: r.v.TapeID, From: from, To: it.rename})
				}
			} else if r.v.WorkspaceDigest != nil {
				res.WithoutWorkspace++
			}
			select {
			case rows <- it:
			case <-ctx.Done():
				return ctx.Err()
			}
			res.Splits[len(res.Splits)-1].Tapes++
		}
	}
	return nil
}

func writeTape(opts ImportOptions, out *tape.AtomicBatch, r importTape) error {
	where := fmt.Sprintf("%s row %d (tape %s)", r.file, r.row, r.v.TapeID)
	if opts.Verify {
		if err := verifyTape(r.v.TapeJSON); err != nil {
			return fmt.Errorf("%s: %w", where, err)
		}
	}
	data := r.v.TapeJSON
	if err := seal.Check(nil, data); err != nil && !opts.AllowTampered {
		return fmt.Errorf("%s: %w (AllowTampered, --allow-tampered, imports it anyway)", where, err)
	}
	if r.rename != "" {
		t, err := tape.Unmarshal(data)
		if err != nil {
			return fmt.Errorf("%s: %w", where, err)
		}
		t.Meta.Workspace.Snapshot = r.rename
		if data, err = tape.Marshal(t); err != nil {
			return fmt.Errorf("%s: %w", where, err)
		}
	}
	name := r.name
	if name == "" {
		name = TapeFileName(r.v.TapeID)
	}
	if err := out.WriteFile(name, data); err != nil {
		return fmt.Errorf("%s: write %s: %w", where, filepath.Join(out.Dir, name), err)
	}
	return nil
}

// tapeNameRow is the projection of the tapes table that names the tape files.
type tapeNameRow struct {
	TapeID     string  `parquet:"tape_id"`
	SourceFile *string `parquet:"source_file,optional"`
}

// tapeNames gives each tape of the splits its file name: its source_file where Import
// keeps it (see Import), else its id name. It reads only the two columns, and records in
// res the names kept and the tapes named by id although they had a source name.
func tapeNames(l layout, splits []string, res *ImportResult) (map[string]string, error) {
	var rows []tapeNameRow
	for _, split := range splits {
		_, fs := l.primary(configTapes, split)
		for r, err := range rowsOf[tapeNameRow](fs, tapesTable, 1024) {
			if err != nil {
				return nil, err
			}
			rows = append(rows, r.v)
		}
	}
	idNames := map[string]string{} // id name: tape id
	uses := map[string]int{}       // source name: tapes
	for _, r := range rows {
		idNames[TapeFileName(r.TapeID)] = r.TapeID
		if r.SourceFile != nil {
			uses[*r.SourceFile]++
		}
	}
	names := make(map[string]string, len(rows))
	for _, r := range rows {
		name := TapeFileName(r.TapeID)
		if sf := r.SourceFile; sf != nil {
			why := ""
			switch owner, isID := idNames[*sf]; {
			case !tapeFileName(*sf):
				why = "not a plain file name ending in .json"
			case uses[*sf] > 1:
				why = fmt.Sprintf("%d tapes have that name", uses[*sf])
			case isID && owner != r.TapeID:
				why = "the id name of tape " + owner
			default:
				name = *sf
				res.NamesKept++
			}
			if why != "" {
				res.IDNamed = append(res.IDNamed, IDNamedTape{TapeID: r.TapeID, SourceFile: *sf, Why: why})
			}
		}
		names[r.TapeID] = name
	}
	return names, nil
}

// tapeFileName says whether name can be a tape file's name as it is: a plain file name
// (no folder, not hidden, no control character, at most 255 bytes) ending in .json, so
// that a folder of imported tapes is read back whole.
func tapeFileName(name string) bool {
	if len(name) <= len(".json") || len(name) > 255 || !strings.HasSuffix(name, ".json") || strings.HasPrefix(name, ".") ||
		!filepath.IsLocal(name) || strings.ContainsAny(name, `/\`) || !utf8.ValidString(name) {
		return false
	}
	for _, c := range name {
		if c < 0x20 || c == 0x7f {
			return false
		}
	}
	return true
}

// snapshotNames gives the start snapshots of the imported tapes their file names, one
// digest per name, and remembers which names each snapshot of a split goes to.
type snapshotNames struct {
	owner map[string]string              // file name: digest
	want  map[string]map[string][]string // split, digest: file names
	by    map[string]string              // digest: the first tape that names it, for errors
}

func newSnapshotNames() *snapshotNames {
	return &snapshotNames{owner: map[string]string{}, want: map[string]map[string][]string{}, by: map[string]string{}}
}

// name picks the file name of the row's snapshot: meta.workspace.snapshot when it is a
// plain file name that no other snapshot took, else <tape file stem>.workspace.tar.zst.
// It returns the tape's name and the new one, or "" when the tape's own is kept.
func (s *snapshotNames) name(split string, r tapeJSON) (from, to string, err error) {
	w, err := workspaceOf(r.TapeJSON)
	if err != nil {
		return "", "", err
	}
	if w == nil || w.Snapshot == "" || w.Digest == "" {
		return "", "", errors.New("workspace_included, but tape_json names no start snapshot with a digest")
	}
	if r.WorkspaceDigest == nil || *r.WorkspaceDigest != w.Digest {
		return "", "", fmt.Errorf("workspace_digest is not meta.workspace.digest %s", w.Digest)
	}
	candidates := []string{strings.TrimSuffix(TapeFileName(r.TapeID), ".json") + snapshotSuffix}
	if plainName(w.Snapshot) {
		candidates = append([]string{w.Snapshot}, candidates...)
	}
	for _, c := range candidates {
		d, taken := s.owner[c]
		if taken && d != w.Digest {
			continue
		}
		if !taken { // a name another tape gave the same snapshot is written once
			s.owner[c] = w.Digest
			if s.want[split] == nil {
				s.want[split] = map[string][]string{}
			}
			s.want[split][w.Digest] = append(s.want[split][w.Digest], c)
		}
		if _, ok := s.by[w.Digest]; !ok {
			s.by[w.Digest] = r.TapeID
		}
		if c == w.Snapshot {
			return w.Snapshot, "", nil
		}
		return w.Snapshot, c, nil
	}
	return "", "", fmt.Errorf("no file name left for its start snapshot (%s and %s are another snapshot's)", w.Snapshot, candidates[len(candidates)-1])
}

// write reads the workspaces table of split, one snapshot at a time, checks each against
// its digest and writes it under every name the split's tapes gave it. A snapshot a tape
// names that the table does not hold is an error.
func (s *snapshotNames) write(ctx context.Context, l layout, split string, out *tape.AtomicBatch, res *ImportResult) error {
	want := s.want[split]
	if len(want) == 0 {
		return nil
	}
	_, fs := l.primary(configWorkspaces, split)
	for r, err := range rowsOf[WorkspaceRow](fs, workspacesTable, 1) {
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		names, ok := want[r.v.Digest]
		if !ok {
			continue
		}
		where := fmt.Sprintf("%s row %d", r.file, r.row)
		if got := digestOf(r.v.Snapshot); got != r.v.Digest {
			return fmt.Errorf("%s: start snapshot: %w: its bytes hash to %s, the row says %s", where, ErrDigestMismatch, got, r.v.Digest)
		}
		for _, name := range names {
			if err := out.WriteFile(name, r.v.Snapshot); err != nil {
				return fmt.Errorf("%s: write %s: %w", where, filepath.Join(out.Dir, name), err)
			}
			res.Workspaces++
			res.WorkspaceBytes += int64(len(r.v.Snapshot))
		}
		delete(want, r.v.Digest)
	}
	if len(want) > 0 {
		missing := slices.Sorted(maps.Keys(want))
		return fmt.Errorf("tape %s: its start snapshot %s is not in the workspaces table of split %s (%d snapshots missing)", s.by[missing[0]], missing[0], split, len(missing))
	}
	return nil
}

// verifyTape checks that data is a valid tape in canonical encoding.
func verifyTape(data []byte) error {
	if err := validateTape(data); err != nil {
		return err
	}
	t, err := tape.Unmarshal(data)
	if err != nil {
		return err
	}
	if !tape.IsCanonical(t, data) {
		return errors.New("tape_json is not the canonical encoding of its tape")
	}
	return nil
}

// TapeFileName is the file name Import gives a tape: its id followed by .json, with every
// byte other than ASCII letters, digits, '-', '_' and a '.' that does not start the name
// written as %XX, so that any id gives one safe name in one directory.
func TapeFileName(id string) string {
	var b strings.Builder
	for i := 0; i < len(id); i++ {
		c := id[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '-', c == '_':
			b.WriteByte(c)
		case c == '.' && i > 0:
			b.WriteByte(c)
		default:
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	if b.Len() == 0 {
		b.WriteString("%")
	}
	return b.String() + ".json"
}
