package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"

	"github.com/tapebox/tapebox/dataset"
	"github.com/tapebox/tapebox/internal/term"
	"github.com/tapebox/tapebox/secrets"
)

func init() {
	register(&command{name: "dataset", summary: "export tapes as a Hugging Face dataset, import them back, validate one", run: runDataset})
}

const datasetUsage = `Usage: tapebox dataset SUBVERB [flags] [args]

Subverbs:
  export    tapes -> dataset folder (Parquet shards, optional Arrow IPC, README.md card)
  import    dataset folder -> tape files, byte-identical to the exported tapes
  validate  check a dataset folder: card against files, every tape against the schema

Run "tapebox dataset SUBVERB --help" for a subverb's flags.
`

// datasetMemoryLimit is the soft limit on the Go heap the dataset verbs set unless
// GOMEMLIMIT is set: tapes stream through a few at a time, but the Parquet writer and the
// JSON codecs keep pools of large buffers that the collector frees only under pressure.
// With the limit, exporting a corpus of multi-megabyte tapes stays under 256 MB of RSS for
// about 20% more CPU time. RSS also counts the pages of the tape files being read (export
// maps files of 1 MiB or more, at most 32 MiB at a time), hence 176 MiB and not more.
const datasetMemoryLimit = 176 << 20

func runDataset(ctx context.Context, env *Env, args []string) int {
	if env.Getenv("GOMEMLIMIT") == "" {
		defer debug.SetMemoryLimit(debug.SetMemoryLimit(datasetMemoryLimit))
	}
	if len(args) == 0 {
		fmt.Fprint(env.Stderr, datasetUsage)
		return ExitUsage
	}
	switch args[0] {
	case "export":
		return runDatasetExport(ctx, env, args[1:])
	case "import":
		return runDatasetImport(ctx, env, args[1:])
	case "validate":
		return runDatasetValidate(ctx, env, args[1:])
	case "-h", "-help", "--help", "help":
		fmt.Fprint(env.Stdout, datasetUsage)
		return ExitOK
	}
	fmt.Fprintf(env.Stderr, "tapebox dataset: unknown subverb %q\n\n%s", args[0], datasetUsage)
	return ExitUsage
}

// progressTo returns stderr when it is a terminal, for progress bars (which draw counts and
// sizes only, with their own carriage returns: term.Raw); nil otherwise.
func progressTo(env *Env) io.Writer {
	if term.IsTerminal(env.Stderr) {
		return term.Raw(env.Stderr)
	}
	return nil
}

// datasetExportUsage is dataset export's usage line, after "tapebox dataset export".
const datasetExportUsage = "[--split train] [--out DIR] [--format parquet|arrow|both] [--jobs N] [--skip-invalid] [--no-workspace] [--allow-secrets] [--prices FILE] [--traces] [--license ID] [--pretty-name NAME] [--task-category CATEGORY]... [--language CODE]... [--tag TAG]... [--json] TAPES..."

// datasetExportHelp is dataset export's description in --help.
const datasetExportHelp = `
Writes the tapes (files, directories searched for *.json, or glob patterns) to a folder that
can be pushed to the Hugging Face Hub as it is: data/tapes/<split>-NNNNN-of-MMMMM.parquet and
data/steps/... shards (zstd, page index, row groups of at most about 100 MB, shards of about
500 MB of uncompressed data), Arrow IPC files beside them with --format arrow or both, and
README.md, a dataset card whose YAML lists configs, features, splits and sizes.

Every tape is validated against the tape schema first; an invalid tape is reported with its
file and JSON pointer and fails the export (nothing is written), unless --skip-invalid.

A tape that names a start snapshot of its workspace (meta.workspace.snapshot, a file beside
the tape) takes it along: the snapshot must be there and match meta.workspace.digest, or the
tape is invalid. The snapshots go to data/workspaces/..., once per digest. --no-workspace
exports the tapes without them.

The tapes table's cost_usd column is each tape's cost at the price table compiled into
tapebox (or --prices FILE), whose date is in prices_date; it is null when a model has no
price. --traces also writes each tape's conversation as the session files its harness
writes (see tapebox export --help) under traces/: traces/claude-code/<project>/<session>.jsonl,
traces/codex/YYYY/MM/DD/rollout-*.jsonl, traces/sts/*.jsonl for other harnesses, the
layouts the Hub's trace viewer detects; the card says how they relate to the tapes. With it
the split also gets a "traces" config (data/traces/...): one row per session file in the
Hub's agent-traces schema (harness, session_id, prompt, messages, tools, metadata, sent_at,
num_user_messages, num_tool_calls, trace, file_path), and the card the tag
format:agent-traces.

Before anything is written, every tape is scanned for secrets (API keys, tokens, private keys,
as tapebox scan does), and so is every file of its start snapshot unless --no-workspace: a tape
with a finding stops the export, naming the file, the JSON pointer (and the file inside the
snapshot) and the rule, unless --allow-secrets.
Shards of other splits already in the folder are kept, and an older export of this split is
replaced; a tape whose id another split holds is refused like an invalid tape, naming the
tape file and the split, shard and row that hold it. Memory stays bounded whatever the
number of tapes (the dataset verbs set a soft heap limit of 176 MiB unless GOMEMLIMIT is
set). A progress bar is drawn when stderr is a terminal.

The card is merged into, not replaced: --license, --pretty-name, --task-category, --language
and --tag (the last three repeatable) set those fields of its YAML, and a field not given
keeps the card's value (license unknown when it has none). Every other field you add to the
YAML stays, in its place, and so does your text in the body before and after the part
between <!-- tapebox:begin ... --> and <!-- tapebox:end -->, which each export rewrites, as it
does configs, dataset_info and size_categories.`

// datasetExportFlags are dataset export's options, parsed from its command line.
type datasetExportFlags struct {
	split, out, format string
	jobs               int
	skipInvalid        bool
	noWorkspace        bool
	allowSecrets       bool
	allowTampered      *bool // --allow-tampered
	pricesFile         string
	traces             bool
	json               bool
	card               dataset.CardFields
}

// runDatasetExport is the dataset export verb: it parses the flags and exports the tapes
// they name.
func runDatasetExport(ctx context.Context, env *Env, args []string) int {
	fs := newFlagSet(env, "dataset export", datasetExportUsage, datasetExportHelp)
	var f datasetExportFlags
	f.register(fs)
	if code, done := parse(env, fs, args); done {
		return code
	}
	return f.run(ctx, env, fs)
}

// register defines dataset export's flags on fs, to be parsed into f.
func (f *datasetExportFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.split, "split", "train", "split the tapes go to")
	fs.StringVar(&f.out, "out", "dataset", "dataset folder")
	fs.StringVar(&f.format, "format", "parquet", "files to write: parquet, arrow or both")
	fs.IntVar(&f.jobs, "jobs", 0, "tapes parsed and validated at once (default: number of CPUs)")
	fs.BoolVar(&f.skipInvalid, "skip-invalid", false, "skip invalid tapes (and say how many) instead of failing")
	fs.BoolVar(&f.noWorkspace, "no-workspace", false, "leave the tapes' start snapshots out of the dataset (and say how many)")
	fs.BoolVar(&f.allowSecrets, "allow-secrets", false, "export tapes in which the secret scan finds something (see tapebox scan)")
	f.allowTampered = allowTamperedFlag(fs)
	pricesFlag(fs, &f.pricesFile, "for the cost_usd column")
	fs.BoolVar(&f.traces, "traces", false, "also write each tape's harness-native session files under traces/")
	fs.BoolVar(&f.json, "json", false, `print a summary object: {"out", "split", "format", "inputs", "input_bytes", "tapes", "steps", "traces", "skipped", "workspaces", ..., "files": [{"path", "bytes"}], "dataset": {"license", "splits", "download_size", "dataset_size"}, "elapsed_ms"}`)
	fs.StringVar(&f.card.License, "license", "", "the card's license `ID`: a Hub license id (apache-2.0, mit, cc-by-4.0, other, ...) or an SPDX identifier")
	fs.StringVar(&f.card.PrettyName, "pretty-name", "", "the card's pretty_name, its title (a `NAME`)")
	fs.Var((*listFlag)(&f.card.TaskCategories), "task-category", "Hub task `CATEGORY` of the card (text-generation, ...); repeatable")
	fs.Var((*listFlag)(&f.card.Language), "language", "language `CODE` of the card (en, fr, ...); repeatable")
	fs.Var((*listFlag)(&f.card.Tags), "tag", "`TAG` of the card; repeatable, replaces the card's tags")
}

// run checks the parsed flags, finds the tapes, scans them for secrets, writes the traces
// (--traces), exports the dataset and prints its summary. It returns the exit code.
func (f *datasetExportFlags) run(ctx context.Context, env *Env, fs *flag.FlagSet) int {
	format, code, ok := f.check(env, fs)
	if !ok {
		return code
	}
	pos := fs.Args()
	inputs, err := dataset.ExpandInputs(pos)
	if err != nil {
		return failf(env, "dataset export", "%v", err)
	}
	if len(inputs) == 0 {
		return failf(env, "dataset export", "no tape files in %s", strings.Join(pos, " "))
	}
	if code := f.scanSecrets(ctx, env, inputs); code != ExitOK {
		return code
	}
	table, err := loadPrices(f.pricesFile)
	if err != nil {
		return failf(env, "dataset export", "%v", err)
	}
	if f.traces {
		n, err := writeTraces(ctx, inputPaths(inputs), filepath.Join(f.out, dataset.TracesDir), f.skipInvalid)
		if err != nil {
			return failf(env, "dataset export", "--traces: %v\n(nothing was written to the data files)", err)
		}
		fmt.Fprintf(env.Stderr, "wrote %d session files to %s\n", n, filepath.Join(f.out, dataset.TracesDir))
	}
	opts := dataset.ExportOptions{
		Out: f.out, Split: f.split, Format: format, Jobs: f.jobs, SkipInvalid: f.skipInvalid, NoWorkspace: f.noWorkspace,
		MadeWith: "tapebox " + Version, Version: Version, Card: f.card, Prices: table, AllowTampered: *f.allowTampered,
	}
	if f.traces {
		opts.Traces = traceRows
	}
	opts.Progress = progressTo(env)
	res, err := dataset.Export(ctx, inputs, opts)
	if err != nil {
		return exportFailed(env, err)
	}
	for _, s := range res.Skipped {
		fmt.Fprintf(env.Stderr, "skipped %s\n", s.Error())
	}
	if f.json {
		sum := exportSummary(f.out, opts, len(inputs), res)
		if err := writeJSON(env.Stdout, sum); err != nil {
			return failf(env, "dataset export", "write the summary: %v", err)
		}
		return ExitOK
	}
	f.printSummary(env, opts, len(inputs), res)
	return ExitOK
}

// check checks the flags and the positional arguments, printing a usage error for the first
// one that is wrong; ok is false then, with the exit code. It returns the parsed --format
// and sets the parsed --license.
func (f *datasetExportFlags) check(env *Env, fs *flag.FlagSet) (format dataset.Format, code int, ok bool) {
	if len(fs.Args()) == 0 {
		return 0, usageError(env, fs, "no tapes given"), false
	}
	format, err := dataset.ParseFormat(f.format)
	if err != nil {
		return 0, usageError(env, fs, "--format: %v", err), false
	}
	if f.jobs < 0 {
		return 0, usageError(env, fs, "--jobs must be at least 1"), false
	}
	if f.card.License != "" {
		if f.card.License, err = dataset.ParseLicense(f.card.License); err != nil {
			return 0, usageError(env, fs, "--license: %v", err), false
		}
	}
	return format, ExitOK, true
}

// scanSecrets refuses tapes (and, unless --no-workspace, their start snapshots) in which
// the secret scan finds something, unless --allow-secrets; it returns ExitOK when the
// export may go on.
func (f *datasetExportFlags) scanSecrets(ctx context.Context, env *Env, inputs []dataset.Input) int {
	if f.allowSecrets {
		return ExitOK
	}
	if err := secrets.CheckWith(ctx, secrets.Options{SkipSnapshot: f.noWorkspace}, inputPaths(inputs)...); errors.Is(err, secrets.ErrSnapshotMissing) {
		return failf(env, "dataset export", "%v\n(nothing was written; --no-workspace exports the tapes without their start snapshots)", err)
	} else if err != nil {
		return failf(env, "dataset export", "%v\n(nothing was written; remove the secrets, or --allow-secrets exports them anyway)", err)
	}
	return ExitOK
}

// exportFailed prints why dataset.Export failed, with the flag that would let it go on,
// and returns ExitFailure.
func exportFailed(env *Env, err error) int {
	var invalid *dataset.InvalidTapesError
	if errors.As(err, &invalid) {
		fmt.Fprintln(env.Stderr, invalid.Error())
		fmt.Fprintln(env.Stderr, "(--skip-invalid exports the valid tapes and skips these)")
		var snap *dataset.SnapshotError
		if errors.As(err, &snap) {
			fmt.Fprintln(env.Stderr, "(--no-workspace exports the tapes without their start snapshots)")
		}
		return ExitFailure
	}
	return failf(env, "dataset export", "%v", err)
}

// printSummary prints what the export wrote, and what it left out, as text on stdout.
func (f *datasetExportFlags) printSummary(env *Env, opts dataset.ExportOptions, inputs int, res *dataset.ExportResult) {
	mbps := float64(res.InputBytes) / 1e6 / max(res.Elapsed.Seconds(), 1e-9)
	fmt.Fprintf(env.Stdout, "exported %s (%s) from %s, %.1f MB of tape JSON, to %s in %.1fs (%.0f MB/s)\n",
		plural(res.Tapes, "tape"), plural(int(res.Steps), "step"), plural(inputs, "file"), float64(res.InputBytes)/1e6, f.out, res.Elapsed.Seconds(), mbps)
	if res.Workspaces > 0 {
		fmt.Fprintf(env.Stdout, "with %d start snapshots (%.1f MB) in data/workspaces\n", res.Workspaces, float64(res.WorkspaceBytes)/1e6)
	}
	if opts.Traces != nil {
		fmt.Fprintf(env.Stdout, "with %s in data/traces (the Hub's agent-traces schema)\n", plural(int(res.Traces), "session row"))
	}
	if res.WorkspacesLeftOut > 0 {
		fmt.Fprintf(env.Stdout, "left out the start snapshots of %d tapes (--no-workspace): they cannot be replayed from the dataset alone\n", res.WorkspacesLeftOut)
	}
	if len(res.Skipped) > 0 {
		fmt.Fprintf(env.Stdout, "skipped %s\n", plural(len(res.Skipped), "invalid tape"))
	}
	if res.Card.License == dataset.LicenseUnknown {
		fmt.Fprintf(env.Stdout, "the card's license is %s: --license ID sets it before you publish\n", dataset.LicenseUnknown)
	}
}

func runDatasetImport(ctx context.Context, env *Env, args []string) int {
	fs := newFlagSet(env, "dataset import", "DIR --out TAPES_DIR [--split S] [--verify] [--json]", `
Rebuilds one tape file per row of the dataset's tapes table, byte-identical to the canonical
encoding of the tape that was exported, under the name of the file it was exported from
(the source_file column) where that name is a plain file name ending in .json that no other
tape of the import has and that is not another tape's TAPE_ID.json; else as TAPE_ID.json,
and says which tapes and why. It writes each tape's start
snapshot beside it, checked against its digest, under the name meta.workspace.snapshot
gives. A name that is not a plain file name, or that a different snapshot already took, is
replaced by TAPE_ID.workspace.tar.zst, and that tape's file names it instead.`)
	out := fs.String("out", "", "folder for the tape files (required)")
	split := fs.String("split", "", "import only this split (default: every split)")
	verify := fs.Bool("verify", false, "validate each tape against the schema and check its encoding before writing it")
	asJSON := fs.Bool("json", false, `print a summary object: {"dir", "out", "tapes", "bytes", "splits": [{"name", "tapes"}], "workspaces", "workspace_bytes", "renamed", "without_workspace", "names_kept", "id_named": [{"tape_id", "source_file", "why"}], "elapsed_ms"}`)
	allowTampered := allowTamperedFlag(fs)
	if code, done := parse(env, fs, args); done {
		return code
	}
	pos := fs.Args()
	if len(pos) != 1 {
		return usageError(env, fs, "want one dataset folder, got %d arguments", len(pos))
	}
	if *out == "" {
		return usageError(env, fs, "--out is required")
	}
	opts := dataset.ImportOptions{Out: *out, Verify: *verify, AllowTampered: *allowTampered}
	if *split != "" {
		opts.Splits = []string{*split}
	}
	opts.Progress = progressTo(env)
	res, err := dataset.Import(ctx, pos[0], opts)
	if err != nil {
		return failf(env, "dataset import", "%v", err)
	}
	if *asJSON {
		if err := writeJSON(env.Stdout, importSummary(pos[0], *out, res)); err != nil {
			return failf(env, "dataset import", "write the summary: %v", err)
		}
		return ExitOK
	}
	fmt.Fprintf(env.Stdout, "imported %s (%.1f MB) to %s in %.1fs (%.0f MB/s)\n",
		plural(res.Tapes, "tape"), float64(res.Bytes)/1e6, *out, res.Elapsed.Seconds(), float64(res.Bytes)/1e6/max(res.Elapsed.Seconds(), 1e-9))
	if res.Workspaces > 0 {
		fmt.Fprintf(env.Stdout, "with %d start snapshots (%.1f MB)\n", res.Workspaces, float64(res.WorkspaceBytes)/1e6)
	}
	for _, r := range res.Renamed {
		fmt.Fprintf(env.Stdout, "tape %s: start snapshot %q written as %q (its name could not be kept); the tape file names it\n", r.TapeID, r.From, r.To)
	}
	if res.WithoutWorkspace > 0 {
		fmt.Fprintf(env.Stdout, "%d tapes name a start snapshot the dataset does not hold (exported with --no-workspace)\n", res.WithoutWorkspace)
	}
	for _, n := range res.IDNamed {
		fmt.Fprintf(env.Stdout, "tape %s: written as %s, not %q (%s)\n", n.TapeID, dataset.TapeFileName(n.TapeID), n.SourceFile, n.Why)
	}
	return ExitOK
}

func runDatasetValidate(ctx context.Context, env *Env, args []string) int {
	fs := newFlagSet(env, "dataset validate", "[--jobs N] [--json] DIR", `
Checks a dataset folder: README.md's YAML matches the files exactly (configs, features,
splits, row counts, sizes); every row's tape passes the schema and is in canonical encoding;
every column of the tapes and steps tables agrees with the tape it comes from; every start
snapshot hashes to its digest and every tape finds the one it names. Exits 1 and lists every
problem (file, row, JSON pointer or column) when the dataset is not valid.`)
	jobs := fs.Int("jobs", 0, "tapes checked at once (default: number of CPUs)")
	asJSON := fs.Bool("json", false, `print a summary object: {"dir", "valid", "tapes", "steps", "workspaces", "splits": [{"name", "tapes", "steps", "workspaces"}], "problems": [{"file", "row", "pointer", "message"}], "truncated"}; exits 1 all the same when the dataset is not valid`)
	if code, done := parse(env, fs, args); done {
		return code
	}
	pos := fs.Args()
	if len(pos) != 1 {
		return usageError(env, fs, "want one dataset folder, got %d arguments", len(pos))
	}
	opts := dataset.ValidateOptions{Jobs: *jobs}
	opts.Progress = progressTo(env)
	rep, err := dataset.Validate(ctx, pos[0], opts)
	if err != nil {
		return failf(env, "dataset validate", "%v", err)
	}
	if *asJSON {
		if err := writeJSON(env.Stdout, validateSummary(pos[0], rep)); err != nil {
			return failf(env, "dataset validate", "write the summary: %v", err)
		}
		if len(rep.Problems) > 0 {
			return ExitFailure
		}
		return ExitOK
	}
	if err := rep.Err(); err != nil {
		fmt.Fprintln(env.Stderr, err)
		return ExitFailure
	}
	if rep.Workspaces > 0 {
		fmt.Fprintf(env.Stdout, "%s: valid dataset: %s, %s, %s\n", pos[0], plural(int(rep.Tapes), "tape"), plural(int(rep.Steps), "step"), plural(int(rep.Workspaces), "start snapshot"))
	} else {
		fmt.Fprintf(env.Stdout, "%s: valid dataset: %s, %s\n", pos[0], plural(int(rep.Tapes), "tape"), plural(int(rep.Steps), "step"))
	}
	return ExitOK
}

// datasetExportJSON is what dataset export --json prints: what this export wrote, and
// the whole dataset folder as its card describes it.
type datasetExportJSON struct {
	Out               string               `json:"out"`
	Split             string               `json:"split"`
	Format            string               `json:"format"`
	Inputs            int                  `json:"inputs"`
	InputBytes        int64                `json:"input_bytes"`
	Tapes             int                  `json:"tapes"`
	Steps             int64                `json:"steps"`
	Traces            int64                `json:"traces"`
	Skipped           []datasetSkippedJSON `json:"skipped"`
	Workspaces        int                  `json:"workspaces"`
	WorkspaceBytes    int64                `json:"workspace_bytes"`
	WorkspacesLeftOut int                  `json:"workspaces_left_out"`
	Files             []datasetFileJSON    `json:"files"`
	Dataset           datasetCardJSON      `json:"dataset"`
	ElapsedMS         int64                `json:"elapsed_ms"`
}

// datasetSkippedJSON is an invalid tape that --skip-invalid left out.
type datasetSkippedJSON struct {
	File  string `json:"file"`
	Error string `json:"error"`
}

// datasetFileJSON is a file written, relative to the dataset folder.
type datasetFileJSON struct {
	Path  string `json:"path"`
	Bytes int64  `json:"bytes"`
}

// datasetCardJSON is a dataset folder as its card describes it: every split, with the
// sizes summed over the configs (tapes, steps, workspaces).
type datasetCardJSON struct {
	License string             `json:"license"`
	Splits  []datasetSplitJSON `json:"splits"`
	// DownloadSize is the bytes of the data files the card lists, DatasetSize their
	// uncompressed size.
	DownloadSize int64 `json:"download_size"`
	DatasetSize  int64 `json:"dataset_size"`
}

// datasetSplitJSON counts the rows of one split; NumBytes is their uncompressed size.
type datasetSplitJSON struct {
	Name       string `json:"name"`
	Tapes      int64  `json:"tapes"`
	Steps      int64  `json:"steps"`
	Workspaces int64  `json:"workspaces"`
	NumBytes   int64  `json:"num_bytes,omitempty"`
}

func exportSummary(out string, opts dataset.ExportOptions, inputs int, res *dataset.ExportResult) datasetExportJSON {
	sum := datasetExportJSON{
		Out: out, Split: opts.Split, Format: opts.Format.String(), Inputs: inputs, InputBytes: res.InputBytes,
		Tapes: res.Tapes, Steps: res.Steps, Traces: res.Traces, Skipped: []datasetSkippedJSON{},
		Workspaces: res.Workspaces, WorkspaceBytes: res.WorkspaceBytes, WorkspacesLeftOut: res.WorkspacesLeftOut,
		Files: []datasetFileJSON{}, ElapsedMS: res.Elapsed.Milliseconds(),
	}
	for _, s := range res.Skipped {
		sum.Skipped = append(sum.Skipped, datasetSkippedJSON{File: s.Path, Error: s.Err.Error()})
	}
	for _, f := range res.Files {
		df := datasetFileJSON{Path: f}
		if fi, err := os.Stat(filepath.Join(out, filepath.FromSlash(f))); err == nil {
			df.Bytes = fi.Size()
		}
		sum.Files = append(sum.Files, df)
	}
	sum.Dataset = datasetCardJSON{License: res.Card.License, Splits: []datasetSplitJSON{}}
	for _, info := range res.Card.DatasetInfo {
		sum.Dataset.DownloadSize += info.DownloadSize
		sum.Dataset.DatasetSize += info.DatasetSize
		for _, si := range info.Splits {
			i := slices.IndexFunc(sum.Dataset.Splits, func(s datasetSplitJSON) bool { return s.Name == si.Name })
			if i < 0 {
				i = len(sum.Dataset.Splits)
				sum.Dataset.Splits = append(sum.Dataset.Splits, datasetSplitJSON{Name: si.Name})
			}
			s := &sum.Dataset.Splits[i]
			s.NumBytes += si.NumBytes
			switch info.ConfigName {
			case "tapes":
				s.Tapes = si.NumExamples
			case "steps":
				s.Steps = si.NumExamples
			case "workspaces":
				s.Workspaces = si.NumExamples
			}
		}
	}
	return sum
}

// datasetImportJSON is what dataset import --json prints.
type datasetImportJSON struct {
	Dir              string                `json:"dir"`
	Out              string                `json:"out"`
	Tapes            int                   `json:"tapes"`
	Bytes            int64                 `json:"bytes"`
	Splits           []datasetImportedJSON `json:"splits"`
	Workspaces       int                   `json:"workspaces"`
	WorkspaceBytes   int64                 `json:"workspace_bytes"`
	Renamed          []datasetRenamedJSON  `json:"renamed"`
	WithoutWorkspace int                   `json:"without_workspace"`
	NamesKept        int                   `json:"names_kept"`
	IDNamed          []datasetIDNamedJSON  `json:"id_named"`
	ElapsedMS        int64                 `json:"elapsed_ms"`
}

// datasetIDNamedJSON is a tape named by its id although the dataset gives its file name.
type datasetIDNamedJSON struct {
	TapeID     string `json:"tape_id"`
	SourceFile string `json:"source_file"`
	Why        string `json:"why"`
}

// datasetImportedJSON counts the tapes imported from one split.
type datasetImportedJSON struct {
	Name  string `json:"name"`
	Tapes int    `json:"tapes"`
}

// datasetRenamedJSON is a start snapshot written under another name than its tape gave.
type datasetRenamedJSON struct {
	TapeID string `json:"tape_id"`
	From   string `json:"from"`
	To     string `json:"to"`
}

func importSummary(dir, out string, res *dataset.ImportResult) datasetImportJSON {
	sum := datasetImportJSON{
		Dir: dir, Out: out, Tapes: res.Tapes, Bytes: res.Bytes, Splits: []datasetImportedJSON{},
		Workspaces: res.Workspaces, WorkspaceBytes: res.WorkspaceBytes, Renamed: []datasetRenamedJSON{},
		WithoutWorkspace: res.WithoutWorkspace, NamesKept: res.NamesKept, IDNamed: []datasetIDNamedJSON{}, ElapsedMS: res.Elapsed.Milliseconds(),
	}
	for _, s := range res.Splits {
		sum.Splits = append(sum.Splits, datasetImportedJSON{Name: s.Name, Tapes: s.Tapes})
	}
	for _, n := range res.IDNamed {
		sum.IDNamed = append(sum.IDNamed, datasetIDNamedJSON{TapeID: n.TapeID, SourceFile: n.SourceFile, Why: n.Why})
	}
	for _, r := range res.Renamed {
		sum.Renamed = append(sum.Renamed, datasetRenamedJSON{TapeID: r.TapeID, From: r.From, To: r.To})
	}
	return sum
}

// datasetValidateJSON is what dataset validate --json prints.
type datasetValidateJSON struct {
	Dir        string               `json:"dir"`
	Valid      bool                 `json:"valid"`
	Tapes      int64                `json:"tapes"`
	Steps      int64                `json:"steps"`
	Workspaces int64                `json:"workspaces"`
	Splits     []datasetSplitJSON   `json:"splits"`
	Problems   []datasetProblemJSON `json:"problems"`
	Truncated  bool                 `json:"truncated"`
}

// datasetProblemJSON is one problem of a dataset folder; Row is -1 when it is not about
// a row.
type datasetProblemJSON struct {
	File    string `json:"file"`
	Row     int64  `json:"row"`
	Pointer string `json:"pointer,omitempty"`
	Message string `json:"message"`
}

func validateSummary(dir string, rep *dataset.Report) datasetValidateJSON {
	sum := datasetValidateJSON{
		Dir: dir, Valid: len(rep.Problems) == 0, Tapes: rep.Tapes, Steps: rep.Steps, Workspaces: rep.Workspaces,
		Splits: []datasetSplitJSON{}, Problems: []datasetProblemJSON{}, Truncated: rep.Truncated,
	}
	for _, s := range rep.Splits {
		sum.Splits = append(sum.Splits, datasetSplitJSON{Name: s.Name, Tapes: s.Tapes, Steps: s.Steps, Workspaces: s.Workspaces})
	}
	for _, p := range rep.Problems {
		sum.Problems = append(sum.Problems, datasetProblemJSON{File: p.File, Row: p.Row, Pointer: p.Pointer, Message: p.Message})
	}
	return sum
}
