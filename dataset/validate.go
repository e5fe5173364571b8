package dataset

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"maps"
	"math"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/tapebox/tapebox/prices"
	"github.com/tapebox/tapebox/schema"
	"github.com/tapebox/tapebox/tape"
	"github.com/tapebox/tapebox/tape/seal"
)

// ValidateOptions configures Validate.
type ValidateOptions struct {
	// Jobs is how many tapes are checked at once (default GOMAXPROCS).
	Jobs int
	// MaxProblems stops the check after this many problems (default 200).
	MaxProblems int
	// Progress, when set, receives a progress line that rewrites itself.
	Progress io.Writer
}

// Problem is one thing wrong with a dataset folder.
type Problem struct {
	// File is relative to the dataset folder (README.md for the card).
	File string
	// Row is the row's index in File, or -1 when the problem is not about a row.
	Row int64
	// Pointer is the JSON pointer of the problem inside the row's tape, or the column.
	Pointer string
	Message string
}

// String returns "file row N: pointer: message".
func (p Problem) String() string {
	var b strings.Builder
	b.WriteString(p.File)
	if p.Row >= 0 {
		fmt.Fprintf(&b, " row %d", p.Row)
	}
	if p.Pointer != "" {
		b.WriteString(": " + p.Pointer)
	}
	b.WriteString(": " + p.Message)
	return b.String()
}

// Report is the outcome of Validate.
type Report struct {
	// Tapes, Steps and Workspaces count the dataset's rows, every split's. A split
	// written in both formats is checked in both but counted once, as the card counts it
	// (from its Parquet shards).
	Tapes      int64
	Steps      int64
	Workspaces int64
	// Splits gives the counts of each split of the tapes table, train first.
	Splits []SplitCounts
	// Problems lists what is wrong, in file and row order; empty for a valid dataset.
	Problems []Problem
	// Truncated is set when the check stopped at MaxProblems.
	Truncated bool
}

// SplitCounts counts the rows of one split.
type SplitCounts struct {
	Name       string
	Tapes      int64
	Steps      int64
	Workspaces int64
}

// Err returns nil for a valid dataset, or an error listing every problem.
func (r *Report) Err() error {
	if len(r.Problems) == 0 {
		return nil
	}
	lines := make([]string, 0, len(r.Problems)+1)
	more := ""
	if r.Truncated {
		more = " (stopped there)"
	}
	s := "s"
	if len(r.Problems) == 1 {
		s = ""
	}
	lines = append(lines, fmt.Sprintf("invalid dataset: %d problem%s%s", len(r.Problems), s, more))
	for _, p := range r.Problems {
		lines = append(lines, p.String())
	}
	return errors.New(strings.Join(lines, "\n"))
}

// Validate checks a dataset folder: the shards of each table and split form complete
// sets; README.md's YAML (configs, features, splits, sizes, size category) matches what
// the files hold exactly; every row's tape passes the schema and is in canonical encoding;
// every other column of every row, in both tables and in every format present, equals
// what the tape gives (so counts, token totals and step rows agree); tape ids are unique;
// every start snapshot in the workspaces table hashes to its digest, is there once and is
// some tape's, and every tape whose workspace_included is set finds its snapshot there;
// and each Parquet shard's recorded num_bytes is right. What is wrong with the dataset,
// files that cannot be read through included, is in the report; the error is for a
// folder that does not exist or a cancelled context.
func Validate(ctx context.Context, dir string, opts ValidateOptions) (*Report, error) {
	if opts.Jobs <= 0 {
		opts.Jobs = runtime.GOMAXPROCS(0)
	}
	if opts.MaxProblems <= 0 {
		opts.MaxProblems = 200
	}
	if _, err := os.Stat(dir); err != nil {
		return nil, fmt.Errorf("validate: %w", err)
	}
	v := &validator{dir: dir, opts: opts, rep: &Report{}}
	l, err := scanLayout(dir)
	if err != nil {
		v.add(Problem{File: "data", Row: -1, Message: err.Error()})
		return v.report(), nil
	}
	v.checkCard()
	v.prog = newProgress(opts.Progress, "validate", 0, 0)
	defer v.prog.stop()
	seen := map[string]map[string]string{"parquet": {}, "arrow": {}} // format, tape id: where
	for _, split := range l.splits(configTapes) {
		primary, _ := l.primary(configTapes, split)
		counted := map[string]rowCounts{}
		for _, ext := range []string{"parquet", "arrow"} {
			tapes := l[configTapes][split][ext]
			if len(tapes) == 0 {
				continue
			}
			v.mu.Lock()
			v.counts = rowCounts{}
			v.mu.Unlock()
			steps := l[configSteps][split][ext]
			if len(steps) == 0 {
				v.add(Problem{File: "data/" + configSteps, Row: -1, Message: fmt.Sprintf("split %s has %s tapes shards but no %s steps shards", split, ext, ext)})
			}
			refs := map[string]snapshotRef{}
			err := v.checkRows(ctx, tapes, steps, seen[ext], refs)
			if err == nil {
				err = v.checkWorkspaces(ctx, split, l[configWorkspaces][split][ext], refs)
			}
			if err == nil {
				err = v.checkTraces(ctx, l[configTraces][split][ext], seen[ext])
			}
			if err != nil {
				if ctx.Err() != nil {
					return nil, ctx.Err()
				}
				// A file that cannot be read through is a problem of the dataset.
				v.add(Problem{File: "data", Row: -1, Message: err.Error()})
			}
			if v.full() {
				return v.report(), nil
			}
			v.mu.Lock()
			counted[ext] = v.counts
			v.mu.Unlock()
		}
		p := counted[primary]
		v.rep.Tapes += p.tapes
		v.rep.Steps += p.steps
		v.rep.Workspaces += p.workspaces
		v.rep.Splits = append(v.rep.Splits, SplitCounts{Name: split, Tapes: p.tapes, Steps: p.steps, Workspaces: p.workspaces})
		if a, ok := counted["arrow"]; ok && primary != "arrow" && a != p {
			v.add(Problem{File: "data", Row: -1, Message: fmt.Sprintf("split %s: the arrow files hold %d tapes, %d steps, %d start snapshots; the parquet files %d, %d, %d",
				split, a.tapes, a.steps, a.workspaces, p.tapes, p.steps, p.workspaces)})
		}
	}
	for _, config := range []string{configSteps, configWorkspaces, configTraces} {
		for _, split := range l.splits(config) {
			for ext := range l[config][split] {
				if len(l[configTapes][split][ext]) == 0 {
					v.add(Problem{File: "data/" + config, Row: -1, Message: fmt.Sprintf("split %s has %s %s shards but no %s tapes shards", split, ext, config, ext)})
				}
			}
		}
	}
	return v.report(), nil
}

type validator struct {
	dir  string
	opts ValidateOptions
	prog *progress

	mu  sync.Mutex
	rep *Report
	seq []int64 // order key of each problem
	// counts are the rows of the split and format being checked.
	counts rowCounts
}

// rowCounts counts the rows of one split in one format.
type rowCounts struct{ tapes, steps, workspaces int64 }

func (v *validator) rel(path string) string {
	r, err := filepath.Rel(v.dir, path)
	if err != nil {
		return path
	}
	return filepath.ToSlash(r)
}

func (v *validator) add(p Problem) { v.addAt(-1, p) }

// addAt records a problem found while checking the tape with the given order key.
func (v *validator) addAt(seq int64, p Problem) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if len(v.rep.Problems) >= v.opts.MaxProblems {
		v.rep.Truncated = true
		return
	}
	v.rep.Problems = append(v.rep.Problems, p)
	v.seq = append(v.seq, seq)
}

func (v *validator) full() bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.rep.Truncated
}

func (v *validator) report() *Report {
	idx := make([]int, len(v.rep.Problems))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int { return cmp.Compare(v.seq[a], v.seq[b]) })
	ps := make([]Problem, len(idx))
	for i, j := range idx {
		ps[i] = v.rep.Problems[j]
	}
	v.rep.Problems = ps
	return v.rep
}

// checkCard compares README.md's metadata with a card built from the files.
func (v *validator) checkCard() {
	bad := func(field, format string, args ...any) {
		v.add(Problem{File: cardFile, Row: -1, Pointer: field, Message: fmt.Sprintf(format, args...)})
	}
	want, err := buildCard(v.dir, CardOptions{}, nil)
	if err != nil {
		v.add(Problem{File: "data", Row: -1, Message: err.Error()})
		return
	}
	got, err := LoadCard(v.dir)
	if err != nil {
		v.add(Problem{File: cardFile, Row: -1, Message: err.Error()})
		return
	}
	if got.License == "" {
		bad("license", "missing")
	}
	if _, _, _, err := generatedPart(got.Body); err != nil {
		bad("body", "%v", err)
	}
	if !slices.Equal(got.SizeCategories, want.SizeCategories) {
		bad("size_categories", "%v, the files hold %v", got.SizeCategories, want.SizeCategories)
	}
	configName := func(c CardConfig) string { return c.ConfigName }
	eachConfig("configs", want.Configs, got.Configs, configName, "no config %s, the files hold one", bad, func(w, g CardConfig, field string) {
		if !slices.Equal(g.DataFiles, w.DataFiles) {
			bad(field+".data_files", "%v, the files are %v", g.DataFiles, w.DataFiles)
		}
		if g.Default != w.Default {
			bad(field+".default", "%v, want %v", g.Default, w.Default)
		}
	})
	for _, g := range got.Configs {
		for _, df := range g.DataFiles {
			matches, err := filepath.Glob(filepath.Join(v.dir, filepath.FromSlash(df.Path)))
			if err != nil || len(matches) == 0 {
				bad("configs["+g.ConfigName+"].data_files", "%s matches no file", df.Path)
			}
		}
	}
	infoName := func(c ConfigInfo) string { return c.ConfigName }
	eachConfig("dataset_info", want.DatasetInfo, got.DatasetInfo, infoName, "no entry for config %s", bad, func(w, g ConfigInfo, field string) {
		if !slices.Equal(g.Features, w.Features) {
			bad(field+".features", "%s; the files' schema gives %s", featureList(g.Features), featureList(w.Features))
		}
		if !slices.Equal(g.Splits, w.Splits) {
			bad(field+".splits", "%v, the files hold %v", g.Splits, w.Splits)
		}
		if g.DownloadSize != w.DownloadSize {
			bad(field+".download_size", "%d, the files take %d bytes", g.DownloadSize, w.DownloadSize)
		}
		if g.DatasetSize != w.DatasetSize {
			bad(field+".dataset_size", "%d, the files hold %d bytes", g.DatasetSize, w.DatasetSize)
		}
	})
}

// eachConfig pairs the entries of want and got of a card section by config name: match
// compares a pair (field names the entry), a want without a got is missing (a format of
// the name), and a got without a want has no files.
func eachConfig[T any](section string, want, got []T, name func(T) string, missing string,
	bad func(field, format string, args ...any), match func(w, g T, field string)) {
	for _, w := range want {
		i := slices.IndexFunc(got, func(c T) bool { return name(c) == name(w) })
		if i < 0 {
			bad(section, missing, name(w))
			continue
		}
		match(w, got[i], section+"["+name(w)+"]")
	}
	for _, g := range got {
		if !slices.ContainsFunc(want, func(c T) bool { return name(c) == name(g) }) {
			bad(section, "config %s has no files", name(g))
		}
	}
}

func featureList(fs []Feature) string {
	parts := make([]string, len(fs))
	for i, f := range fs {
		if f.List != "" {
			parts[i] = f.Name + ": list<" + f.List + ">"
		} else {
			parts[i] = f.Name + ": " + f.Dtype
		}
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// tapeCheck is one tape row and the steps rows that follow it in the steps table.
type tapeCheck struct {
	seq   int64
	tape  located[TapeRow]
	steps []located[StepRow]
}

// snapshotRef is the first tape row that says the workspaces table holds a snapshot.
type snapshotRef struct {
	file string
	row  int64
	seq  int64
}

// checkRows checks the rows of one split in one format: the tapes shards and, in step
// with them, the steps shards. refs gets the snapshots the tapes say are in the dataset.
func (v *validator) checkRows(ctx context.Context, tapes, steps []shardFile, seen map[string]string, refs map[string]snapshotRef) error {
	g, ctx := errgroup.WithContext(ctx)
	checks := make(chan *tapeCheck, v.opts.Jobs)
	g.Go(func() error {
		defer close(checks)
		return v.readRows(ctx, tapes, steps, seen, refs, checks)
	})
	for range v.opts.Jobs {
		g.Go(func() error {
			for c := range checks {
				v.checkTape(c)
				v.prog.add(int64(len(c.tape.v.TapeJSON)))
			}
			return nil
		})
	}
	err := g.Wait()
	for range checks {
	}
	return err
}

// readRows pairs each tape row with its steps rows (the run of steps rows with its
// tape_id) and checks what needs the order of rows: unique ids, orphan steps, the
// recorded num_bytes of each shard.
func (v *validator) readRows(ctx context.Context, tapes, steps []shardFile, seen map[string]string, refs map[string]snapshotRef, out chan<- *tapeCheck) error {
	bytesOf := map[string]int64{}
	next, stop := iter.Pull2(rowsOf[StepRow](steps, stepsTable, 64))
	defer stop()
	// stepRows goes on through the steps rows where the last range over it stopped,
	// starting with the row put back in peek, if any.
	var peek *located[StepRow]
	stepRows := func(yield func(*located[StepRow], error) bool) {
		for {
			if s := peek; s != nil {
				peek = nil
				if !yield(s, nil) {
					return
				}
				continue
			}
			s, err, ok := next()
			if !ok {
				return
			}
			if err != nil {
				yield(nil, err)
				return
			}
			bytesOf[s.file] += stepsTable.rowBytes(reflect.ValueOf(&s.v).Elem())
			if !yield(&s, nil) {
				return
			}
		}
	}
	var seq int64
	for t, err := range rowsOf[TapeRow](tapes, tapesTable, 1) {
		if err != nil {
			return err
		}
		if v.full() {
			return nil
		}
		seq++
		bytesOf[t.file] += tapesTable.rowBytes(reflect.ValueOf(&t.v).Elem())
		where := fmt.Sprintf("%s row %d", v.rel(t.file), t.row)
		if first, dup := seen[t.v.TapeID]; dup {
			v.addAt(seq, Problem{File: v.rel(t.file), Row: t.row, Pointer: "tape_id", Message: fmt.Sprintf("%q is also at %s", t.v.TapeID, first)})
		} else {
			seen[t.v.TapeID] = where
		}
		if t.v.WorkspaceIncluded && t.v.WorkspaceDigest != nil {
			if _, ok := refs[*t.v.WorkspaceDigest]; !ok {
				refs[*t.v.WorkspaceDigest] = snapshotRef{file: t.file, row: t.row, seq: seq}
			}
		}
		c := &tapeCheck{seq: seq, tape: t}
		for s, err := range stepRows {
			if err != nil {
				return err
			}
			if s.v.TapeID != t.v.TapeID {
				if seen[s.v.TapeID] == "" {
					peek = s // a later tape's steps
					break
				}
				v.addAt(seq, Problem{File: v.rel(s.file), Row: s.row, Pointer: "tape_id", Message: fmt.Sprintf("step of tape %q, out of place: its tape came earlier (the current tape is %q, %s)", s.v.TapeID, t.v.TapeID, where)})
				continue
			}
			c.steps = append(c.steps, *s)
		}
		select {
		case out <- c:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	for s, err := range stepRows {
		if err != nil {
			return err
		}
		v.addAt(seq+1, Problem{File: v.rel(s.file), Row: s.row, Pointer: "tape_id", Message: fmt.Sprintf("step of tape %q, which has no row in the tapes table", s.v.TapeID)})
	}
	return v.checkNumBytes(slices.Concat(tapes, steps), bytesOf, seq+1)
}

// checkNumBytes checks the byte count each Parquet file of files records (metaNumBytes)
// against bytesOf, what its rows hold, and reports a difference at seq.
func (v *validator) checkNumBytes(files []shardFile, bytesOf map[string]int64, seq int64) error {
	for _, f := range files {
		if f.ext != "parquet" {
			continue
		}
		p, err := openParquet(f.path)
		if err != nil {
			return err
		}
		recorded, _ := p.lookup(metaNumBytes)
		p.Close()
		if want := strconv.FormatInt(bytesOf[f.path], 10); recorded != want {
			v.addAt(seq, Problem{File: v.rel(f.path), Row: -1, Pointer: metaNumBytes, Message: fmt.Sprintf("records %q, the rows hold %s bytes", recorded, want)})
		}
	}
	return nil
}

// checkTape checks one tape row and its steps rows against the tape in its tape_json.
func (v *validator) checkTape(c *tapeCheck) {
	file, row := v.rel(c.tape.file), c.tape.row
	v.mu.Lock()
	v.counts.tapes++
	v.counts.steps += int64(len(c.steps))
	v.mu.Unlock()
	bad := func(pointer, format string, args ...any) {
		v.addAt(c.seq, Problem{File: file, Row: row, Pointer: pointer, Message: fmt.Sprintf(format, args...)})
	}
	data := c.tape.v.TapeJSON
	if err := validateTape(data); err != nil {
		var ve *schema.ValidationError
		if errors.As(err, &ve) {
			for _, p := range ve.Problems {
				bad("tape_json"+p.Pointer, "%s", p.Message)
			}
		} else {
			bad("tape_json", "%v", err)
		}
		return
	}
	// tape.Unmarshal and tape.IsCanonical, which encodes the tape again, rather than
	// tape.Decode, Export's path, which takes a canonical encoding on trust of its decoder.
	t, err := tape.Unmarshal(data)
	if err != nil {
		bad("tape_json", "%v", err)
		return
	}
	if !tape.IsCanonical(t, data) {
		canonical, err := tape.Marshal(t)
		if err != nil {
			bad("tape_json", "%v", err)
			return
		}
		bad("tape_json", "not the canonical encoding of the tape (tape.Marshal gives %d bytes, the row has %d)", len(canonical), len(data))
	}
	// A tape with digests must verify: the row is the tape as recorded. (One without is
	// no problem: it was written without them.)
	if vr, err := seal.Verify(bytes.NewReader(data), nil); err != nil {
		bad("tape_json", "verify digests: %v", err)
	} else if vr.State == tape.DigestsMismatch {
		bad("tape_json"+vr.Pointer, "digest mismatch: %s", vr.Problem)
	}
	wantRow, wantSteps, err := RowsOf(t, data)
	if err != nil {
		bad("tape_json", "%v", err)
		return
	}
	// The cost columns depend on the price table of the export: checked against the
	// built-in table only when the row says it used that one.
	if c.tape.v.PricesDate != prices.Default().Date {
		wantRow.CostUSD, wantRow.PricesDate = c.tape.v.CostUSD, c.tape.v.PricesDate
	}
	// The columns the tape does not give: the file it came from, whether the export kept
	// its snapshot.
	// (Any name: import keeps only those that are safe, see tapeNames.)
	wantRow.SourceFile = c.tape.v.SourceFile
	wantRow.WorkspaceIncluded = c.tape.v.WorkspaceIncluded
	if w := t.Meta.Workspace; wantRow.WorkspaceIncluded && (w == nil || w.Snapshot == "" || w.Digest == "") {
		bad("workspace_included", "true, but the tape names no start snapshot with a digest")
	}
	for _, d := range diffRow(tapesTable, reflect.ValueOf(&wantRow).Elem(), reflect.ValueOf(&c.tape.v).Elem()) {
		bad(d.column, "%s", d.message)
	}
	if len(c.steps) != len(wantSteps) {
		bad("num_steps", "the steps table holds %d rows for this tape, its tape has %d steps", len(c.steps), len(wantSteps))
	}
	for i := range min(len(c.steps), len(wantSteps)) {
		s := c.steps[i]
		for _, d := range diffRow(stepsTable, reflect.ValueOf(&wantSteps[i]).Elem(), reflect.ValueOf(&s.v).Elem()) {
			v.addAt(c.seq, Problem{File: v.rel(s.file), Row: s.row, Pointer: d.column,
				Message: fmt.Sprintf("%s (tape %s, thread %s, step %d)", d.message, c.tape.v.TapeID, wantSteps[i].ThreadID, wantSteps[i].StepIndex)})
		}
	}
}

// afterTapes orders the problems of the workspaces table after those of the tapes.
const afterTapes = math.MaxInt64

// checkWorkspaces checks the workspaces shards of one split in one format, one snapshot
// at a time: each hashes to its digest and has its size, is there once, and is the
// snapshot of a tape in refs; and every snapshot in refs is there.
func (v *validator) checkWorkspaces(ctx context.Context, split string, files []shardFile, refs map[string]snapshotRef) error {
	found := map[string]string{}
	bytesOf := map[string]int64{}
	for r, err := range rowsOf[WorkspaceRow](files, workspacesTable, 1) {
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		v.mu.Lock()
		v.counts.workspaces++
		v.mu.Unlock()
		v.prog.add(int64(len(r.v.Snapshot)))
		bytesOf[r.file] += workspacesTable.rowBytes(reflect.ValueOf(&r.v).Elem())
		file := v.rel(r.file)
		bad := func(column, format string, args ...any) {
			v.addAt(afterTapes, Problem{File: file, Row: r.row, Pointer: column, Message: fmt.Sprintf(format, args...)})
		}
		where := fmt.Sprintf("%s row %d", file, r.row)
		if got := digestOf(r.v.Snapshot); got != r.v.Digest {
			bad("snapshot", "the bytes hash to %s, not to the row's digest %s", got, r.v.Digest)
		}
		if r.v.Size != int64(len(r.v.Snapshot)) {
			bad("size", "%d, the snapshot has %d bytes", r.v.Size, len(r.v.Snapshot))
		}
		if first, dup := found[r.v.Digest]; dup {
			bad("digest", "%s is also at %s", r.v.Digest, first)
			continue
		}
		found[r.v.Digest] = where
		if _, ok := refs[r.v.Digest]; !ok {
			bad("digest", "no tape of split %s with workspace_included starts from %s", split, r.v.Digest)
		}
	}
	for _, d := range slices.Sorted(maps.Keys(refs)) {
		if _, ok := found[d]; !ok {
			ref := refs[d]
			v.addAt(ref.seq, Problem{File: v.rel(ref.file), Row: ref.row, Pointer: "workspace_digest",
				Message: fmt.Sprintf("%s: workspace_included, but the workspaces table of split %s does not hold this snapshot", d, split)})
		}
	}
	return v.checkNumBytes(files, bytesOf, afterTapes)
}

// checkTraces checks the traces shards of one split in one format: the json columns hold
// JSON, metadata is an object whose tape_id is a tape of the dataset (in tapes, by id),
// file_path is a path under traces/, the counts are not negative. (The rows are not
// derived again from the tapes: that takes the interop package.)
func (v *validator) checkTraces(ctx context.Context, files []shardFile, tapes map[string]string) error {
	bytesOf := map[string]int64{}
	for r, err := range rowsOf[TraceRow](files, tracesTable, 64) {
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		bytesOf[r.file] += tracesTable.rowBytes(reflect.ValueOf(&r.v).Elem())
		file := v.rel(r.file)
		bad := func(column, format string, args ...any) {
			v.addAt(afterTapes, Problem{File: file, Row: r.row, Pointer: column, Message: fmt.Sprintf(format, args...)})
		}
		for _, c := range []struct {
			name   string
			values []string
		}{{"messages", r.v.Messages}, {"tools", r.v.Tools}, {"metadata", []string{r.v.Metadata}}, {"trace", []string{r.v.Trace}}} {
			for i, s := range c.values {
				if !json.Valid([]byte(s)) {
					bad(c.name, "value %d is not JSON", i)
				}
			}
		}
		var md struct {
			TapeID *string `json:"tape_id"`
		}
		if err := json.Unmarshal([]byte(r.v.Metadata), &md); err != nil || md.TapeID == nil {
			bad("metadata", "not a JSON object with a tape_id")
		} else if _, ok := tapes[*md.TapeID]; !ok {
			bad("metadata", "tape_id %q is no tape of the dataset", *md.TapeID)
		}
		if p := r.v.FilePath; !strings.HasPrefix(p, TracesDir+"/") || path.Clean(p) != p || !filepath.IsLocal(filepath.FromSlash(p)) {
			bad("file_path", "%q is not a path under %s/", p, TracesDir)
		} else if data, err := os.ReadFile(filepath.Join(v.dir, filepath.FromSlash(p))); err == nil && TraceJSON(data) != r.v.Trace {
			// (A dataset published without its traces/ folder has no file to compare.)
			bad("trace", "not the content of %s (did two tapes give a session file the same path?)", p)
		}
		if r.v.NumUserMessages < 0 || r.v.NumToolCalls < 0 {
			bad("num_tool_calls", "a negative count")
		}
	}
	return v.checkNumBytes(files, bytesOf, afterTapes)
}

type columnDiff struct {
	column  string
	message string
}

// diffRow compares a row as derived from its tape (want) with the row read (got).
func diffRow(t *table, want, got reflect.Value) []columnDiff {
	var out []columnDiff
	for _, c := range t.columns {
		w, g := want.Field(c.index), got.Field(c.index)
		if !valueEqual(w, g) {
			out = append(out, columnDiff{column: c.name, message: fmt.Sprintf("%s, the tape gives %s", show(g), show(w))})
		}
	}
	return out
}

func valueEqual(a, b reflect.Value) bool {
	if a.Kind() == reflect.Pointer {
		if a.IsNil() || b.IsNil() {
			return a.IsNil() == b.IsNil()
		}
		return valueEqual(a.Elem(), b.Elem())
	}
	switch x := a.Interface().(type) {
	case []byte:
		return bytes.Equal(x, b.Interface().([]byte))
	case time.Time:
		return x.Equal(b.Interface().(time.Time))
	case []string:
		return slices.Equal(x, b.Interface().([]string))
	}
	return a.Equal(b)
}

// show renders a value for a message, cut to 80 bytes.
func show(v reflect.Value) string {
	if v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return "null"
		}
		v = v.Elem()
	}
	var s string
	switch x := v.Interface().(type) {
	case []byte:
		s = strconv.Quote(string(x))
	case string:
		s = strconv.Quote(x)
	case time.Time:
		s = x.Format(time.RFC3339Nano)
	default:
		s = fmt.Sprint(x)
	}
	if len(s) > 80 {
		s = s[:77] + "..."
	}
	return s
}
