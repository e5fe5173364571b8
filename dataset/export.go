package dataset

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"
	"golang.org/x/sync/semaphore"

	"github.com/tapebox/tapebox/prices"
	"github.com/tapebox/tapebox/schema"
	"github.com/tapebox/tapebox/tape"
	"github.com/tapebox/tapebox/tape/seal"
)

// ExportOptions configures Export. The zero value of a field means its default.
type ExportOptions struct {
	// Out is the dataset folder; it is created if needed. Shards of other splits already
	// in it are kept (and listed in the card); older shards of this split are replaced. A
	// tape whose id another split holds is invalid: a tape goes to one split.
	Out string
	// Split names the split the tapes go to (default "train"): letters, digits and _.
	Split string
	// Format selects Parquet, Arrow IPC or both (default Parquet).
	Format Format
	// Jobs is how many tapes are read, validated and converted at once (default
	// GOMAXPROCS).
	Jobs int
	// SkipInvalid skips tapes that fail validation (they are listed in the result)
	// instead of failing the export.
	SkipInvalid bool
	// ShardBytes closes a shard once it holds this much uncompressed row data (default
	// 500 MiB); RowGroupBytes does the same for a Parquet row group (default 100 MiB).
	ShardBytes    int64
	RowGroupBytes int64
	// Progress, when set, receives a progress line that rewrites itself (for a terminal).
	Progress io.Writer
	// MadeWith names the program in the card ("tapebox 0.1.0"); optional.
	MadeWith string
	// Version is the program's version, for the created_by of the Parquet shards
	// (CreatedBy); default: the main module's version in the build info.
	Version string
	// Card gives the card's descriptive fields (license, pretty name, task categories,
	// languages, tags). The card in Out is merged into, not replaced: the fields not
	// given keep its values, and its other fields and the author's text of its body stay.
	Card CardFields
	// NoWorkspace leaves the tapes' start snapshots out: the snapshot files are neither
	// read nor checked, the tapes go in as they are (meta.workspace stays in tape_json)
	// with workspace_included false, and the split gets no workspaces table. Without it,
	// a tape whose snapshot is missing or does not match its digest is invalid.
	NoWorkspace bool
	// Prices prices the cost_usd column (nil: the table compiled into the binary).
	Prices *prices.Table
	// AllowTampered exports a tape whose digests do not match (seal.Check); without it such
	// a tape is invalid, as Validate would find its row.
	AllowTampered bool
	// Traces, when set, gives each tape's rows of the traces table (config "traces", in the
	// Hub's agent-traces schema), which the split then has; without it the split has none.
	Traces TracesFunc
}

// ExportResult says what an export did.
type ExportResult struct {
	// Tapes, Steps and Traces count the rows written.
	Tapes  int
	Steps  int64
	Traces int64
	// InputBytes is the size of every input read, skipped tapes included.
	InputBytes int64
	// Skipped lists the invalid tapes left out (with SkipInvalid).
	Skipped []*InvalidTapeError
	// Workspaces counts the start snapshots written to the workspaces table (one per
	// digest: tapes that start from the same snapshot share it) and WorkspaceBytes their
	// size. WorkspacesLeftOut counts the tapes whose snapshot NoWorkspace left out.
	Workspaces        int
	WorkspaceBytes    int64
	WorkspacesLeftOut int
	// Files lists the data files written and the card, relative to Out.
	Files []string
	// Card is the card written, which describes every split of Out.
	Card    *Card
	Elapsed time.Duration
}

// InvalidTapeError says why a tape file cannot be exported: it is not JSON, it breaks the
// schema (Err is a *schema.ValidationError naming each JSON pointer), it does not decode,
// its tape id is another input's or already in another split of the folder (the message
// names the shard and row), or its start snapshot is missing or does not match
// its digest (Err is a *SnapshotError naming the snapshot file).
type InvalidTapeError struct {
	Path string
	Err  error
}

// Error returns one "path: pointer: message" line per problem.
func (e *InvalidTapeError) Error() string {
	var ve *schema.ValidationError
	if errors.As(e.Err, &ve) && len(ve.Problems) > 0 {
		lines := make([]string, len(ve.Problems))
		for i, p := range ve.Problems {
			lines[i] = e.Path + ": " + p.String()
		}
		return strings.Join(lines, "\n")
	}
	return e.Path + ": " + e.Err.Error()
}

// Unwrap returns the cause.
func (e *InvalidTapeError) Unwrap() error { return e.Err }

// InvalidTapesError fails an export that met invalid tapes without SkipInvalid. Nothing
// was written.
type InvalidTapesError struct {
	Invalid []*InvalidTapeError
	Total   int
}

// Error lists every invalid tape.
func (e *InvalidTapesError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d of %d tapes are invalid; nothing was written", len(e.Invalid), e.Total)
	for _, it := range e.Invalid {
		b.WriteString("\n")
		b.WriteString(it.Error())
	}
	return b.String()
}

// Unwrap returns the individual errors.
func (e *InvalidTapesError) Unwrap() []error {
	errs := make([]error, len(e.Invalid))
	for i, it := range e.Invalid {
		errs[i] = it
	}
	return errs
}

var splitName = regexp.MustCompile(`^[A-Za-z0-9_]+$`)

// maxInFlight bounds the bytes of tape files read but not yet written, which bounds
// memory whatever the corpus size. A tape larger than this is still taken, alone.
const maxInFlight = 32 << 20

// prepared is one input after a worker read, validated and converted it.
type prepared struct {
	seq    int
	in     Input
	weight int64
	data   []byte // the file, from the buffer pool; row.TapeJSON may point into it
	// rowSize and stepSizes are the rows' sizes (table.rowBytes), computed by the worker.
	rowSize   int64
	stepSizes []int64
	// done gives the bytes the tape holds back to the in-flight budget.
	done  func()
	row   TapeRow
	steps []StepRow
	// traces are the tape's rows of the traces table (ExportOptions.Traces).
	traces     []TraceRow
	traceSizes []int64
	// snapshot is the path of the tape's start snapshot, checked against digest, when it
	// goes into the dataset; leftOut is set when NoWorkspace leaves it out.
	snapshot string
	digest   string
	leftOut  bool
	invalid  *InvalidTapeError
	err      error // not about the tape: the export fails
}

// Export converts tape files into a dataset folder in the layout Hugging Face expects:
// data/tapes/<split>-NNNNN-of-MMMMM.parquet and data/steps/... shards (and .arrow files
// with Format Arrow), and README.md, a dataset card whose YAML describes the files. Every
// tape is validated against the schema first. Rows keep the order of inputs. Shards are
// written under temporary names and renamed only when the export succeeds, so a failed
// or cancelled export leaves no partial shard under a final name. Memory stays bounded:
// tapes stream through a few at a time, Parquet row groups are buffered compressed.
func Export(ctx context.Context, inputs []Input, opts ExportOptions) (*ExportResult, error) {
	start := time.Now()
	if err := opts.setDefaults(); err != nil {
		return nil, fmt.Errorf("export: %w", err)
	}
	// The tape ids of the other splits, to refuse a tape that is already in one.
	elsewhere, err := tapeIDsExcept(opts.Out, opts.Split)
	if err != nil {
		return nil, fmt.Errorf("export: %w", err)
	}
	t := newTables(&opts)
	published := false
	defer func() {
		if !published {
			t.abort()
		}
	}()

	var total int64
	for _, in := range inputs {
		total += in.Size
	}
	prog := newProgress(opts.Progress, "export", len(inputs), total)
	defer prog.stop()
	x := &exportRun{
		opts:      &opts,
		t:         t,
		prog:      prog,
		res:       &ExportResult{},
		elsewhere: elsewhere,
		ids:       make(map[string]string, len(inputs)),
		digests:   map[string]bool{},
		buffers:   newBufferPool(maxInFlight / 2),
	}
	err = x.run(ctx, inputs)
	prog.stop()
	if err != nil {
		return nil, fmt.Errorf("export: %w", err)
	}
	if x.failed.Load() {
		return nil, &InvalidTapesError{Invalid: x.invalid, Total: len(inputs)}
	}
	res := x.res
	res.Skipped = x.invalid

	files, err := t.finish(ctx, &opts)
	if err != nil {
		return nil, fmt.Errorf("export: %w", err)
	}
	published = true
	if err := removeStale(opts.Out, opts.Split, files); err != nil {
		return nil, fmt.Errorf("export: %w", err)
	}
	card, err := BuildCard(opts.Out, CardOptions{MadeWith: opts.MadeWith, Fields: opts.Card})
	if err != nil {
		return nil, fmt.Errorf("export: %w", err)
	}
	if err := card.Save(opts.Out); err != nil {
		return nil, fmt.Errorf("export: %w", err)
	}
	res.Card = card
	for _, f := range files {
		rel, _ := filepath.Rel(opts.Out, f)
		res.Files = append(res.Files, filepath.ToSlash(rel))
	}
	res.Files = append(res.Files, cardFile)
	res.Elapsed = time.Since(start)
	return res, nil
}

// setDefaults fills the options left open and refuses those that cannot work, before
// anything is written.
func (opts *ExportOptions) setDefaults() error {
	if opts.Split == "" {
		opts.Split = "train"
	}
	if !splitName.MatchString(opts.Split) {
		return fmt.Errorf("split %q: use letters, digits and _ only", opts.Split)
	}
	if opts.Format == 0 {
		opts.Format = Parquet
	}
	if opts.Jobs <= 0 {
		opts.Jobs = runtime.GOMAXPROCS(0)
	}
	if opts.ShardBytes <= 0 {
		opts.ShardBytes = DefaultShardBytes
	}
	if opts.RowGroupBytes <= 0 {
		opts.RowGroupBytes = DefaultRowGroupBytes
	}
	if opts.Out == "" {
		return errors.New("no output folder")
	}
	if err := opts.Card.check(); err != nil {
		return err
	}
	// The card is merged into at the end: one that cannot be is refused now.
	if old, err := LoadCard(opts.Out); err == nil {
		if _, _, _, err := generatedPart(old.Body); err != nil {
			return fmt.Errorf("%s: %w", filepath.Join(opts.Out, cardFile), err)
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%w (fix it or move it away: the export merges into it)", err)
	}
	return nil
}

// tables are the four tables of an export, each written shard by shard.
type tables struct {
	tapes  *shardSet[TapeRow]
	steps  *shardSet[StepRow]
	ws     *shardSet[WorkspaceRow]
	traces *shardSet[TraceRow]
	// withTraces: the split has a traces table, empty when no tape has a thread.
	withTraces bool
}

func newTables(opts *ExportOptions) *tables {
	// Both formats: Parquet first, then Arrow from the Parquet shards (addArrow).
	streamed := opts.Format
	if streamed == Both {
		streamed = Parquet
	}
	dir := func(config string) string { return filepath.Join(opts.Out, "data", config) }
	t := &tables{
		tapes:      newShardSet[TapeRow](dir(configTapes), opts.Split, tapesTable, streamed, opts.ShardBytes, opts.RowGroupBytes),
		steps:      newShardSet[StepRow](dir(configSteps), opts.Split, stepsTable, streamed, opts.ShardBytes, opts.RowGroupBytes),
		ws:         newShardSet[WorkspaceRow](dir(configWorkspaces), opts.Split, workspacesTable, streamed, opts.ShardBytes, min(opts.RowGroupBytes, workspaceRowGroupBytes)),
		traces:     newShardSet[TraceRow](dir(configTraces), opts.Split, tracesTable, streamed, opts.ShardBytes, opts.RowGroupBytes),
		withTraces: opts.Traces != nil,
	}
	for _, cb := range []*string{&t.tapes.createdBy, &t.steps.createdBy, &t.ws.createdBy, &t.traces.createdBy} {
		*cb = CreatedBy(opts.Version)
	}
	return t
}

func (t *tables) abort() {
	t.tapes.abort()
	t.steps.abort()
	t.ws.abort()
	t.traces.abort()
}

// finish completes every shard before renaming any, adds the Arrow files when both formats
// are asked for, and publishes: it returns the files under their final names. A split
// without snapshots has no workspaces shard, not an empty one.
func (t *tables) finish(ctx context.Context, opts *ExportOptions) ([]string, error) {
	closeTraces := t.traces.closeCurrent
	if t.withTraces {
		closeTraces = t.traces.closeCurrentOrEmpty
	}
	for _, err := range []error{t.tapes.closeCurrentOrEmpty(), t.steps.closeCurrentOrEmpty(), t.ws.closeCurrent(), closeTraces()} {
		if err != nil {
			return nil, err
		}
	}
	if opts.Format == Both {
		if err := addArrow(ctx, opts.Progress, t.tapes, t.steps, t.ws, t.traces); err != nil {
			return nil, err
		}
	}
	var files []string
	for _, publish := range []func() ([]string, error){t.tapes.publish, t.steps.publish, t.ws.publish, t.traces.publish} {
		paths, err := publish()
		files = append(files, paths...)
		if err != nil {
			return files, err
		}
	}
	return files, nil
}

// exportRun is one export's pass over its inputs: workers prepare tapes, accept takes
// them in input order, and one writer per table writes their rows.
type exportRun struct {
	opts      *ExportOptions
	t         *tables
	prog      *progress
	res       *ExportResult
	elsewhere map[string]tapeAt
	ids       map[string]string // tape id -> the input that has it
	digests   map[string]bool   // of the snapshots sent to the workspaces writer
	buffers   *bufferPool
	failed    atomic.Bool // an invalid tape was met: from now on, only validate
	invalid   []*InvalidTapeError

	tapeRows, stepRows, traceRows chan *prepared
	snapshots                     chan snapshotJob
}

func (x *exportRun) run(ctx context.Context, inputs []Input) error {
	// Two writers, one per table, so that the Parquet encoding and compression of the
	// tapes table (the bulk of the bytes) has a core of its own.
	g, gctx := errgroup.WithContext(ctx)
	x.tapeRows = make(chan *prepared, 2)
	x.stepRows = make(chan *prepared, 4)
	x.traceRows = make(chan *prepared, 4)
	x.snapshots = make(chan snapshotJob, 1)
	g.Go(x.writeTapes)
	g.Go(func() error {
		return writeEach(x.stepRows, x.t.steps, func(p *prepared) ([]StepRow, []int64) { return p.steps, p.stepSizes })
	})
	g.Go(func() error {
		return writeEach(x.traceRows, x.t.traces, func(p *prepared) ([]TraceRow, []int64) { return p.traces, p.traceSizes })
	})
	g.Go(x.writeWorkspaces)
	g.Go(func() error {
		defer close(x.tapeRows)
		defer close(x.stepRows)
		defer close(x.traceRows)
		defer close(x.snapshots)
		return runOrdered(gctx, inputs, x.opts.Jobs, func(p *prepared) {
			prepare(gctx, p, x.buffers, x.failed.Load() && !x.opts.SkipInvalid, x.opts)
		}, func(p *prepared) error { return x.accept(gctx, p) })
	})
	return g.Wait()
}

func (x *exportRun) writeTapes() error {
	for p := range x.tapeRows {
		// TapeJSON may be the file, mapped: guard turns its shrinking into an error.
		err := guard(func() error { return x.t.tapes.write([]TapeRow{p.row}, []int64{p.rowSize}) })
		if errors.Is(err, errFileChanged) {
			err = fmt.Errorf("%s: %w", p.in.Path, err)
		}
		// The writer copied what it keeps: the file's buffer can serve another.
		x.buffers.put(p.data)
		p.done()
		if err != nil {
			return err
		}
	}
	return nil
}

// writeEach writes the rows rows(p) of each p from ch into set.
func writeEach[R any](ch <-chan *prepared, set *shardSet[R], rows func(*prepared) ([]R, []int64)) error {
	for p := range ch {
		if err := set.write(rows(p)); err != nil {
			return err
		}
	}
	return nil
}

// writeWorkspaces reads one snapshot at a time, into one buffer: a snapshot can be tens of
// MB, and the Parquet writer keeps its own copy until its row group is out.
func (x *exportRun) writeWorkspaces() error {
	var buf []byte
	for j := range x.snapshots {
		var err error
		if buf, err = readSnapshot(j.path, j.digest, buf); err != nil {
			return fmt.Errorf("%s: %w", j.tape, &SnapshotError{Snapshot: j.path, Err: err})
		}
		row := WorkspaceRow{Digest: j.digest, Size: int64(len(buf)), Snapshot: buf}
		if err := x.t.ws.write([]WorkspaceRow{row}, []int64{workspacesTable.rowBytes(reflect.ValueOf(&row).Elem())}); err != nil {
			return err
		}
		x.res.Workspaces++
		x.res.WorkspaceBytes += row.Size
	}
	return nil
}

// accept takes the prepared tapes in input order: it refuses a tape id met twice, counts,
// and hands the rows to the writers.
func (x *exportRun) accept(ctx context.Context, p *prepared) error {
	x.prog.add(p.in.Size)
	x.res.InputBytes += p.in.Size
	if p.err != nil {
		return p.err
	}
	if p.invalid == nil {
		if first, dup := x.ids[p.row.TapeID]; dup {
			p.invalid = &InvalidTapeError{Path: p.in.Path, Err: fmt.Errorf("tape_id %q is already in the dataset, from %s", p.row.TapeID, first)}
		} else if at, dup := x.elsewhere[p.row.TapeID]; dup {
			p.invalid = &InvalidTapeError{Path: p.in.Path, Err: fmt.Errorf("tape_id %q is already in split %s, at %s (a tape goes to one split)", p.row.TapeID, at.split, at.where)}
		} else if p.row.TapeID != "" {
			x.ids[p.row.TapeID] = p.in.Path
		}
	}
	if p.invalid != nil {
		x.invalid = append(x.invalid, p.invalid)
		if !x.opts.SkipInvalid {
			x.failed.Store(true)
		}
	}
	if p.invalid != nil || x.failed.Load() {
		x.buffers.put(p.data)
		p.done()
		return nil
	}
	res := x.res
	res.Tapes++
	res.Steps += int64(len(p.steps))
	res.Traces += int64(len(p.traces))
	if p.leftOut {
		res.WorkspacesLeftOut++
	}
	if p.snapshot != "" && !x.digests[p.digest] {
		x.digests[p.digest] = true
		if err := send(ctx, x.snapshots, snapshotJob{tape: p.in.Path, path: p.snapshot, digest: p.digest}); err != nil {
			return err
		}
	}
	if x.opts.Traces != nil {
		if err := send(ctx, x.traceRows, p); err != nil {
			return err
		}
	}
	for _, ch := range []chan *prepared{x.stepRows, x.tapeRows} {
		if err := send(ctx, ch, p); err != nil {
			return err
		}
	}
	return nil
}

// send sends v on ch unless ctx is done first.
func send[T any](ctx context.Context, ch chan<- T, v T) error {
	select {
	case ch <- v:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// tapeAt is where a dataset folder holds a tape: its split, and the shard and row.
type tapeAt struct {
	split, where string
}

// tapeIDRow is the projection of the tapes table on its id.
type tapeIDRow struct {
	TapeID string `parquet:"tape_id"`
}

// tapeIDsExcept reads the tape ids of every split of the dataset folder out but skip, from
// the tapes table (its Parquet shards when there are some: only the tape_id column is
// read). A folder that does not exist yet has none.
func tapeIDsExcept(out, skip string) (map[string]tapeAt, error) {
	l, err := scanLayoutExcept(out, skip)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", out, err)
	}
	ids := map[string]tapeAt{}
	for _, split := range l.splits(configTapes) {
		_, files := l.primary(configTapes, split)
		for _, f := range files {
			rel := filepath.ToSlash(filepath.Join("data", configTapes, filepath.Base(f.path)))
			err := readShard(f, tapesTable, 1024, func(first int64, rows []tapeIDRow) error {
				for i, r := range rows {
					if _, ok := ids[r.TapeID]; !ok {
						ids[r.TapeID] = tapeAt{split: split, where: fmt.Sprintf("%s row %d", rel, first+int64(i))}
					}
				}
				return nil
			})
			if err != nil {
				return nil, err
			}
		}
	}
	return ids, nil
}

// addArrow writes the Arrow shards of every table from their Parquet shards, the tables
// at once.
func addArrow(ctx context.Context, w io.Writer, tapes *shardSet[TapeRow], steps *shardSet[StepRow], workspaces *shardSet[WorkspaceRow], traces *shardSet[TraceRow]) error {
	var shards int
	var total int64
	for _, sizes := range [][]int64{tapes.sizes(), steps.sizes(), workspaces.sizes(), traces.sizes()} {
		for _, n := range sizes {
			shards, total = shards+1, total+n
		}
	}
	prog := newProgress(w, "arrow", shards, total)
	defer prog.stop()
	g, ctx := errgroup.WithContext(ctx)
	g.Go(func() error { return tapes.addArrow(ctx, prog) })
	g.Go(func() error { return steps.addArrow(ctx, prog) })
	g.Go(func() error { return workspaces.addArrow(ctx, prog) })
	g.Go(func() error { return traces.addArrow(ctx, prog) })
	return g.Wait()
}

// snapshotJob is a start snapshot for the workspaces writer: the file, checked against
// digest by a worker, and the tape that names it first.
type snapshotJob struct {
	tape, path, digest string
}

// prepare reads, validates and converts one tape, and checks its start snapshot unless
// opts.NoWorkspace; validateOnly skips the conversion.
func prepare(ctx context.Context, p *prepared, buffers *bufferPool, validateOnly bool, opts *ExportOptions) {
	data, err := buffers.readFile(p.in.Path)
	if err != nil {
		p.err = err
		return
	}
	p.data = data
	if err := guard(func() error { prepareData(ctx, p, data, validateOnly, opts); return nil }); err != nil {
		p.err = fmt.Errorf("%s: %w", p.in.Path, err)
	}
}

// prepareData is prepare once the file is read.
func prepareData(ctx context.Context, p *prepared, data []byte, validateOnly bool, opts *ExportOptions) {
	noWorkspace, allowTampered, table := opts.NoWorkspace, opts.AllowTampered, opts.Prices
	if err := validateTape(data); err != nil {
		var ve *schema.ValidationError
		var se *schema.SyntaxError
		if errors.As(err, &ve) || errors.As(err, &se) {
			p.invalid = &InvalidTapeError{Path: p.in.Path, Err: err}
			return
		}
		p.err = fmt.Errorf("validate %s: %w", p.in.Path, err)
		return
	}
	if validateOnly {
		// Still check the snapshot, so that the export lists every tape it refuses.
		if w, err := workspaceOf(data); err == nil && w != nil && w.Snapshot != "" && !noWorkspace {
			if _, err := checkSnapshot(p.in.Path, w); err != nil {
				p.invalid = &InvalidTapeError{Path: p.in.Path, Err: err}
			}
		}
		return
	}
	// The rows need no chunk data: decode lean.
	t, canonical, err := tape.Decode(data, tape.DecodeOptions{NoChunkData: true})
	if err != nil {
		p.invalid = &InvalidTapeError{Path: p.in.Path, Err: err}
		return
	}
	// Validate refuses a row whose digests do not match: so does the export.
	if err := seal.Check(t, canonical); err != nil && !allowTampered {
		p.invalid = &InvalidTapeError{Path: p.in.Path, Err: fmt.Errorf("%w (AllowTampered, --allow-tampered, exports it anyway)", err)}
		return
	}
	if table == nil {
		table = prices.Default()
	}
	p.row, p.steps, err = RowsPriced(t, canonical, table)
	if err != nil {
		p.invalid = &InvalidTapeError{Path: p.in.Path, Err: err}
		return
	}
	if opts.Traces != nil {
		if p.traces, err = opts.Traces(ctx, p.in.Path, data); err != nil {
			p.invalid = &InvalidTapeError{Path: p.in.Path, Err: fmt.Errorf("traces: %w", err)}
			return
		}
		p.traceSizes = make([]int64, len(p.traces))
		for i := range p.traces {
			p.traceSizes[i] = tracesTable.rowBytes(reflect.ValueOf(&p.traces[i]).Elem())
		}
	}
	source := filepath.Base(p.in.Path)
	p.row.SourceFile = &source
	if w := t.Meta.Workspace; w != nil && w.Snapshot != "" {
		if noWorkspace {
			p.leftOut = true
		} else {
			path, err := checkSnapshot(p.in.Path, w)
			if err != nil {
				p.invalid = &InvalidTapeError{Path: p.in.Path, Err: err}
				return
			}
			p.snapshot, p.digest = path, w.Digest
			p.row.WorkspaceIncluded = true
		}
	}
	p.rowSize = tapesTable.rowBytes(reflect.ValueOf(&p.row).Elem())
	p.stepSizes = make([]int64, len(p.steps))
	for i := range p.steps {
		p.stepSizes[i] = stepsTable.rowBytes(reflect.ValueOf(&p.steps[i]).Elem())
	}
}

// runOrdered runs work on every input with jobs goroutines and hands the results to
// write one at a time, in input order. A result's bytes count against the in-flight
// budget (maxInFlight) until its done is called, which write must arrange, then or
// later. write's first error stops everything and is returned.
func runOrdered(ctx context.Context, inputs []Input, jobs int, work func(*prepared), write func(*prepared) error) error {
	g, ctx := errgroup.WithContext(ctx)
	sem := semaphore.NewWeighted(maxInFlight)
	todo := make(chan *prepared)
	done := make(chan *prepared, jobs)

	g.Go(func() error {
		defer close(todo)
		for i, in := range inputs {
			p := &prepared{seq: i, in: in, weight: min(max(in.Size, 1), maxInFlight)}
			p.done = sync.OnceFunc(func() { sem.Release(p.weight) })
			if err := sem.Acquire(ctx, p.weight); err != nil {
				return err
			}
			select {
			case todo <- p:
			case <-ctx.Done():
				sem.Release(p.weight)
				return ctx.Err()
			}
		}
		return nil
	})
	var wg sync.WaitGroup
	for range jobs {
		wg.Go(func() {
			for p := range todo {
				work(p)
				select {
				case done <- p:
				case <-ctx.Done():
					return
				}
			}
		})
	}
	g.Go(func() error {
		wg.Wait()
		close(done)
		return nil
	})
	g.Go(func() error {
		pending := map[int]*prepared{}
		next := 0
		for p := range done {
			pending[p.seq] = p
			for q := pending[next]; q != nil; q = pending[next] {
				delete(pending, next)
				next++
				if err := write(q); err != nil {
					return err
				}
			}
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if next != len(inputs) {
			return fmt.Errorf("internal error: %d of %d tapes written", next, len(inputs))
		}
		return nil
	})
	err := g.Wait()
	// Workers that gave up on a cancelled context may leave todo unread.
	for range todo {
	}
	return err
}

// removeStale deletes the shards of split in out's data folders that this export did not
// write (shards of an earlier export of the same split, which had a different count).
func removeStale(out, split string, keep []string) error {
	kept := map[string]bool{}
	for _, k := range keep {
		kept[filepath.Clean(k)] = true
	}
	for _, config := range configs {
		dir := filepath.Join(out, "data", config)
		for _, ext := range []string{"parquet", "arrow"} {
			matches, err := filepath.Glob(filepath.Join(dir, split+"-*-of-*."+ext))
			if err != nil {
				return err
			}
			for _, m := range matches {
				if _, ok := parseShardName(filepath.Base(m)); ok && !kept[filepath.Clean(m)] {
					if err := os.Remove(m); err != nil {
						return err
					}
				}
			}
		}
	}
	return nil
}

// validateTape is the schema check every tape passes on the way in and out.
var validateTape = schema.Validate
