package cli

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/tapebox/tapebox/dataset"
	"github.com/tapebox/tapebox/interop"
	"github.com/tapebox/tapebox/schema"
	"github.com/tapebox/tapebox/secrets"
	"github.com/tapebox/tapebox/tape"
	"github.com/tapebox/tapebox/workspace"
)

func init() {
	register(&command{name: "export", summary: "write tapes as Claude Code or Codex sessions, STS, ATIF or OTLP spans", run: runExport})
	register(&command{name: "import", summary: "turn Claude Code, Codex, Gemini CLI, OpenCode, Pi or STS session files into tapes", run: runImport})
}

func formatNames(fs []interop.Format) string {
	names := make([]string, len(fs))
	for i, f := range fs {
		names[i] = string(f)
	}
	return strings.Join(names, "|")
}

// exportHelp is export's description in --help.
const exportHelp = `
Writes each tape in another tool's format, into DIR (default "export"):

  claude-code  the session files Claude Code writes: DIR/<project>/<session>.jsonl, the main
               thread's user and assistant entries chained by parentUuid, and each
               subagent's sidechain in DIR/<project>/<session>/subagents/agent-<id>.jsonl with
               its .meta.json. Copied under $CLAUDE_CONFIG_DIR/projects (~/.claude/projects),
               "claude -p --resume <session>" continues the run. Anthropic tapes only.
  codex        Codex rollout files: DIR/YYYY/MM/DD/rollout-<time>-<thread id>.jsonl, one per
               thread (session meta, turn context, response items, event messages). Copied
               under $CODEX_HOME/sessions, "codex exec resume <id>" continues the run with
               the model provider the rollout names: the one the run used, which tapebox
               record took from Codex's own rollout (tapebox record's is "tapebox") and a
               Codex import from the rollout it read (label tapebox.codex_model_provider);
               openai when the tape does not say; --codex-model-provider ID overrides it.
               OpenAI Responses tapes only.
  gemini-cli   Gemini CLI's session file: DIR/<project>/chats/session-<time>-<id>.jsonl,
               the main thread's messages as Gemini CLI 0.61 appends them, and
               DIR/<project>/.project_root naming meta.cwd. Copied under
               $GEMINI_CLI_HOME/.gemini/tmp (~/.gemini/tmp), "gemini --resume <session>"
               run in meta.cwd continues the run. Gemini API tapes only; subagent threads
               are not written.
  opencode     what "opencode export" prints: DIR/<session>.json per agent thread (a
               subagent's a session whose parentID is its parent's). "opencode import
               DIR/<session>.json" run in meta.cwd, then "opencode run --session <session>",
               continues the run. Anthropic and OpenAI Responses tapes only.
  sts          the Hugging Face Hub's Session Trace Simple format, for other harnesses:
               DIR/<tape id>/<thread id>.jsonl.
  atif         ATIF v1.7 trajectories (Harbor, terminal-bench): DIR/<tape id>.atif.json, the
               subagent threads embedded in subagent_trajectories; cost_usd per step from the
               price table (--prices), left out when a model has no price.
  otlp         OTLP/JSON traces with OpenTelemetry GenAI spans: DIR/<tape id>.otlp.json, or
               POSTed to an OTLP/HTTP receiver with --otlp-endpoint URL (http://host:4318).
               Needs the recorded timing and raw bodies, which imported tapes lack.

Session files are views of the tape: they hold its conversation, tool calls and results,
not the raw wire bodies, stream timing or workspace. Every tape is validated first, and every
file is scanned for secrets (as tapebox scan does) before anything is written: a finding
stops the export unless --allow-secrets.`

// exportFlags are export's options, parsed from its command line.
type exportFlags struct {
	to, out       string
	endpoint      string // --otlp-endpoint
	pricesFile    string
	allowSecrets  bool
	codexProvider string // --codex-model-provider
}

// exportOutput is one tape's export: its files, not yet written.
type exportOutput struct {
	tape  string
	files []interop.File
}

// runExport is the export verb: it parses the flags and exports the tapes they name.
func runExport(ctx context.Context, env *Env, args []string) int {
	fs := newFlagSet(env, "export", "--to "+formatNames(interop.ExportFormats)+" [--out DIR] [--otlp-endpoint URL] [--prices FILE] [--codex-model-provider ID] [--allow-secrets] TAPE...", exportHelp)
	var f exportFlags
	f.register(fs)
	if code, done := parse(env, fs, args); done {
		return code
	}
	return f.run(ctx, env, fs)
}

// register defines export's flags on fs, to be parsed into f.
func (f *exportFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.to, "to", "", "the format: "+formatNames(interop.ExportFormats))
	fs.StringVar(&f.out, "out", "export", "the folder to write to")
	fs.StringVar(&f.endpoint, "otlp-endpoint", "", "with --to otlp: POST the spans to this OTLP/HTTP receiver `URL` instead of writing files")
	pricesFlag(fs, &f.pricesFile, "for ATIF's cost_usd")
	fs.BoolVar(&f.allowSecrets, "allow-secrets", false, "write files in which the secret scan finds something")
	fs.StringVar(&f.codexProvider, "codex-model-provider", "", "with --to codex: the model_provider `ID` of Codex's config the rollouts name (default: the one the run used, else openai)")
}

// run checks the parsed flags, converts every tape (fs.Args()) to the --to format, and
// sends the files (--otlp-endpoint) or writes them. It returns the exit code.
func (f *exportFlags) run(ctx context.Context, env *Env, fs *flag.FlagSet) int {
	pos := fs.Args()
	format, err := interop.ParseFormat(f.to, interop.ExportFormats)
	if err != nil {
		return usageError(env, fs, "--to: %v", err)
	}
	if f.endpoint != "" && format != interop.OTLP {
		return usageError(env, fs, "--otlp-endpoint goes with --to otlp")
	}
	if len(pos) == 0 {
		return usageError(env, fs, "no tapes given")
	}
	table, err := loadPrices(f.pricesFile)
	if err != nil {
		return failf(env, "export", "%v", err)
	}
	opts := interop.Options{PricesDate: table.Date, CodexModelProvider: f.codexProvider, Cost: func(m *tape.Meta, s *tape.Step) *float64 {
		return table.Cost(tape.StepModel(m, s), s.Response.Usage)
	}}
	outs, code := f.convert(ctx, env, pos, format, opts)
	if code != ExitOK {
		return code
	}
	if f.endpoint != "" {
		return f.send(ctx, env, outs)
	}
	return f.write(env, format, outs)
}

// convert validates each tape of paths and converts it to format; unless --allow-secrets,
// every file is scanned for secrets and a finding stops the export. It prints why it
// stopped and returns a code other than ExitOK then.
func (f *exportFlags) convert(ctx context.Context, env *Env, paths []string, format interop.Format, opts interop.Options) ([]exportOutput, int) {
	var outs []exportOutput
	var scanner *secrets.Scanner
	for _, p := range paths {
		if err := schema.ValidateFile(p); err != nil {
			var ve *schema.ValidationError
			if errors.As(err, &ve) {
				for _, pr := range ve.Problems {
					fmt.Fprintf(env.Stderr, "%s: %s: %s\n", p, pr.Pointer, pr.Message)
				}
				return nil, failf(env, "export", "%s is not a valid tape (%s); run \"tapebox validate %s\"", p, plural(len(ve.Problems), "problem"), p)
			}
			return nil, failf(env, "export", "%s: %v", p, err)
		}
		tp, err := interop.LoadFor(p, format)
		if err != nil {
			return nil, failf(env, "export", "%v", err)
		}
		files, err := interop.Export(tp, format, opts)
		if err != nil {
			return nil, failf(env, "export", "%s: %v", p, err)
		}
		if !f.allowSecrets {
			if scanner == nil {
				if scanner, err = secrets.Default(); err != nil {
					return nil, failf(env, "export", "%v", err)
				}
			}
			for _, fl := range files {
				found, err := scanFile(ctx, scanner, fl)
				if err != nil {
					return nil, failf(env, "export", "scan %s of %s: %v", fl.Path, p, err)
				}
				if len(found) > 0 {
					for _, x := range found {
						fmt.Fprintf(env.Stderr, "%s: %s: %s\n", p, fl.Path, x)
					}
					return nil, failf(env, "export", "%s: the %s export holds %d secrets (nothing was written; remove them, or --allow-secrets writes them anyway)", p, format, len(found))
				}
			}
		}
		outs = append(outs, exportOutput{tape: p, files: files})
	}
	return outs, ExitOK
}

// send POSTs every file of outs (OTLP spans) to --otlp-endpoint and returns the exit code.
func (f *exportFlags) send(ctx context.Context, env *Env, outs []exportOutput) int {
	client := &http.Client{Timeout: 30 * time.Second}
	for _, o := range outs {
		for _, fl := range o.files {
			if err := interop.PostOTLP(ctx, client, f.endpoint, fl.Data); err != nil {
				return failf(env, "export", "%s: %v", o.tape, err)
			}
		}
		fmt.Fprintf(env.Stdout, "%s: spans sent to %s\n", o.tape, f.endpoint)
	}
	return ExitOK
}

// write writes every file of outs under --out, says how many, and returns the exit code.
func (f *exportFlags) write(env *Env, format interop.Format, outs []exportOutput) int {
	n := 0
	for _, o := range outs {
		for _, fl := range o.files {
			if err := writeExportFile(f.out, fl); err != nil {
				return failf(env, "export", "%s: %v", o.tape, err)
			}
			n++
		}
	}
	fmt.Fprintf(env.Stdout, "exported %s to %s: %s in %s\n", plural(len(outs), "tape"), format, plural(n, "file"), f.out)
	return ExitOK
}

// scanFile scans an export's file for secrets: a JSON file whole, a JSONL file line by line.
func scanFile(ctx context.Context, s *secrets.Scanner, f interop.File) ([]secrets.Finding, error) {
	if !strings.HasSuffix(f.Path, ".json") && !strings.HasSuffix(f.Path, ".jsonl") {
		return s.ScanText(ctx, string(f.Data)) // a marker file (Gemini CLI's .project_root)
	}
	if !strings.HasSuffix(f.Path, ".jsonl") {
		return s.ScanJSON(ctx, bytes.NewReader(f.Data))
	}
	var all []secrets.Finding
	for i, line := range bytes.Split(f.Data, []byte("\n")) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		found, err := s.ScanJSON(ctx, bytes.NewReader(line))
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", i+1, err)
		}
		all = append(all, found...)
	}
	return all, nil
}

// writeExportFile writes one file of an export under dir; its path, made from the tape,
// must stay inside dir.
func writeExportFile(dir string, f interop.File) error {
	rel := filepath.FromSlash(f.Path)
	if !filepath.IsLocal(rel) {
		return fmt.Errorf("export path %q leaves the output folder", f.Path)
	}
	return tape.WriteFileAtomic(filepath.Join(dir, rel), f.Data)
}

// writeTraces writes the harness-native session files of tapes under dir (dataset export
// --traces): claude-code/ for Claude Code tapes, codex/ for Codex ones, sts/ for the others.
func writeTraces(ctx context.Context, paths []string, dir string, skipInvalid bool) (int, error) {
	n := 0
	for _, p := range paths {
		if err := schema.ValidateFile(p); err != nil {
			if skipInvalid {
				continue
			}
			return n, fmt.Errorf("%s: %w", p, err)
		}
		tp, err := tape.LoadSummaryFile(p)
		if err != nil {
			return n, fmt.Errorf("%s: %w", p, err)
		}
		f := interop.HubFormat(tp)
		if f == interop.ClaudeCode {
			// The raw responses too: Claude Code's files keep the response ids.
			if tp, err = interop.LoadFor(p, f); err != nil {
				return n, fmt.Errorf("%s: %w", p, err)
			}
		}
		files, err := interop.Export(tp, f, interop.Options{})
		if err != nil {
			return n, fmt.Errorf("%s: %w", p, err)
		}
		for _, fl := range files {
			if err := writeExportFile(filepath.Join(dir, string(f)), fl); err != nil {
				return n, fmt.Errorf("%s: %w", p, err)
			}
			n++
		}
		if err := ctx.Err(); err != nil {
			return n, err
		}
	}
	return n, nil
}

// traceRows gives a tape's rows of the dataset's traces table: its session files in the
// Hub's format, as writeTraces writes them under the dataset's traces/, in the Hub's
// agent-traces schema.
func traceRows(_ context.Context, _ string, data []byte) ([]dataset.TraceRow, error) {
	// Read as writeTraces reads, so that the rows describe the files it writes: the
	// normalized fields only, but the raw responses too for Claude Code's files.
	tp, err := tape.LoadSummary(bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	if interop.HubFormat(tp) == interop.ClaudeCode {
		if tp, err = tape.Unmarshal(data); err != nil {
			return nil, err
		}
	}
	f, _, traces, err := interop.AgentTraces(tp, interop.Options{})
	if err != nil {
		return nil, err
	}
	rows := make([]dataset.TraceRow, len(traces))
	for i, at := range traces {
		r := dataset.TraceRow{
			Harness: at.Harness, SessionID: at.SessionID, Prompt: at.Prompt, SentAt: at.SentAt,
			Messages: make([]string, len(at.Messages)), Tools: make([]string, len(at.Tools)), Metadata: string(at.Metadata),
			NumUserMessages: at.NumUserMessages, NumToolCalls: at.NumToolCalls, Trace: dataset.TraceJSON(at.Trace),
			FilePath: path.Join(dataset.TracesDir, string(f), at.Path),
		}
		for j, m := range at.Messages {
			r.Messages[j] = string(m)
		}
		for j, t := range at.Tools {
			r.Tools[j] = string(t)
		}
		rows[i] = r
	}
	return rows, nil
}

// importHelp is import's description in --help.
const importHelp = `
Turns the session files a harness writes itself into tapes, one per session, written to
DIR/<tape id>.json. --from says the files' format:

  auto         (the default) every *.jsonl file under DIR in whichever of the formats below
               its first line shows, and every *.json file that is an OpenCode export, so
               that a Hub Traces dataset, ~/.claude/projects, ~/.codex/sessions,
               ~/.gemini/tmp, ~/.pi/agent/sessions or a folder of opencode exports imports
               whole. A .jsonl file of none of them stops the import, as does a .json file
               that begins as an OpenCode export but is not one; other .json files under DIR
               are left alone. A file named by path is told whatever its name. A Qwen
               Code session (~/.qwen/projects/*/chats), whose lines look like Claude
               Code's, is refused with the line that tells it apart.
  claude-code  <session>.jsonl files (a file, a project folder, or ~/.claude/projects), each
               with its subagents' sidechains: from <session>/subagents/, or as older
               versions kept them, agent-*.jsonl files beside it or sidechain entries in it.
  codex        rollout-*.jsonl files (a file or ~/.codex/sessions); a sub-agent's rollout
               becomes a thread of its parent's tape, linked to the spawn call.
  gemini-cli   Gemini CLI's session files, session-*.jsonl (a file, or ~/.gemini/tmp or a
               project's chats folder below it): one tape of one thread each, its steps
               the model messages, its ids the file's.
  opencode     what "opencode export SESSION" prints, saved as .json files (OpenCode keeps
               its sessions in SQLite): one tape per session, a subagent's session (one
               with a parentID) a thread of its parent's, linked to its task call.
  pi           the pi coding agent's session files (a file or ~/.pi/agent/sessions). The
               tape is the branch ending at the file's last entry (where Pi resumes); the
               entries of other branches are counted in tapebox.lost.
  sts          the Hub's Session Trace Simple files, one session each. The files tapebox
               export --to sts wrote for one tape (one tapeId) become that tape's threads
               again; any other file is a tape of one thread.

Imported tapes have normalized steps only: no raw bodies, which meta.labels says
(tapebox.imported_from, tapebox.form=normalized); their timing is the session file's entry
timestamps (tapebox.timing).

A session file holds no workspace. --workspace DIR gives the session's starting state (a
snapshot of DIR is written beside each tape, so a replay starts from it) and --workspace-end
DIR the state it left (its end manifest, so compare checks the end state). --workspace-git REV
does both for a session that started from a clean checkout: the start is the repository
(--workspace-repo, default this directory) at commit REV, the end its working tree now.
.git is left out of both. What the files held that a tape has
no place for is counted in tapebox.lost (thinking signatures, encrypted reasoning, the tools
a Codex tool_search loaded, a Pi session's other branches). Claude Code and Codex tapes
replay in executor mode as they are (the executor has no Pi module yet). --synthesize adds
raw stream bodies made from the normalized form
(tapebox.form=synthesized), so that they also replay in simulator mode against the real
harness (Anthropic Messages, OpenAI Responses and Gemini API tapes: not a Pi session on openai-completions
or on an API TapeBox has no provider for, tapebox.harness_api).

A session file with a line that is not JSON, or not what the harness writes, is an error
naming the file and the line, and nothing is imported. Every tape is validated against the
tape schema and scanned for secrets before anything is written; a finding stops the import
unless --allow-secrets.`

// importFlags are import's options, parsed from its command line.
type importFlags struct {
	from, out    string
	synthesize   bool
	allowSecrets bool
	wsStart      string // --workspace
	wsEnd        string // --workspace-end
	wsGit        string // --workspace-git
	wsRepo       string // --workspace-repo
}

// importedTape is one imported tape, encoded, not yet written.
type importedTape struct {
	id   string
	data []byte
}

// runImport is the import verb: it parses the flags and imports the session files they
// name.
func runImport(ctx context.Context, env *Env, args []string) int {
	fs := newFlagSet(env, "import", "[--from "+formatNames(interop.ImportFormats)+"] --out DIR [--synthesize] [--allow-secrets] SESSION.jsonl|DIR...", importHelp)
	var f importFlags
	f.register(fs)
	if code, done := parse(env, fs, args); done {
		return code
	}
	return f.run(ctx, env, fs)
}

// register defines import's flags on fs, to be parsed into f.
func (f *importFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.from, "from", string(interop.Auto), "the format: "+formatNames(interop.ImportFormats))
	fs.StringVar(&f.out, "out", "", "the folder for the tapes (required)")
	fs.BoolVar(&f.synthesize, "synthesize", false, "add raw stream bodies made from the normalized form, for simulator mode")
	fs.BoolVar(&f.allowSecrets, "allow-secrets", false, "write tapes in which the secret scan finds something")
	fs.StringVar(&f.wsStart, "workspace", "", "the session's starting state: DIR is snapshotted beside each tape")
	fs.StringVar(&f.wsEnd, "workspace-end", "", "the state the session left: DIR's end manifest goes into each tape, so compare checks the end state")
	fs.StringVar(&f.wsGit, "workspace-git", "", "the session started from a clean checkout of commit REV of --workspace-repo and ended in its working tree")
	fs.StringVar(&f.wsRepo, "workspace-repo", ".", "the git repository of --workspace-git")
}

// run checks the parsed flags, reads the session files (fs.Args()) into tapes, prepares
// them, writes them and says what was imported. It returns the exit code.
func (f *importFlags) run(ctx context.Context, env *Env, fs *flag.FlagSet) int {
	pos := fs.Args()
	if f.wsGit != "" && (f.wsStart != "" || f.wsEnd != "") {
		return usageError(env, fs, "--workspace-git gives the start and the end: not with --workspace or --workspace-end")
	}
	if f.wsGit != "" {
		tmp, err := os.MkdirTemp("", "tapebox-import-git-")
		if err != nil {
			return failf(env, "import", "%v", err)
		}
		defer os.RemoveAll(tmp)
		if err := gitCheckout(ctx, f.wsRepo, f.wsGit, tmp); err != nil {
			return failf(env, "import", "--workspace-git %s: %v", f.wsGit, err)
		}
		f.wsStart, f.wsEnd = tmp, f.wsRepo
	}
	format, err := interop.ParseFormat(f.from, interop.ImportFormats)
	if err != nil {
		return usageError(env, fs, "--from: %v", err)
	}
	if f.out == "" {
		return usageError(env, fs, "--out DIR is required")
	}
	if len(pos) == 0 {
		return usageError(env, fs, "no session files given")
	}
	var tapes []*tape.Tape
	for _, p := range pos {
		got, err := interop.Import(format, p)
		if err != nil {
			return failf(env, "import", "%v\n(nothing was imported)", err)
		}
		tapes = append(tapes, got...)
	}
	results, code := f.prepare(ctx, env, tapes)
	if code != ExitOK {
		return code
	}
	for _, r := range results {
		if err := tape.WriteFileAtomic(filepath.Join(f.out, r.id+".json"), r.data); err != nil {
			return failf(env, "import", "%v", err)
		}
	}
	f.printImported(env, tapes)
	return ExitOK
}

// prepare makes each tape ready to write: synthesized bodies (--synthesize), its workspace
// (--workspace, --workspace-end), then encoded, validated and, unless --allow-secrets,
// scanned for secrets; two tapes with one id are refused. It prints why it stopped, and
// returns a code other than ExitOK then.
func (f *importFlags) prepare(ctx context.Context, env *Env, tapes []*tape.Tape) ([]importedTape, int) {
	var results []importedTape
	seen := map[string]bool{}
	for _, tp := range tapes {
		if f.synthesize {
			if err := interop.Synthesize(tp); err != nil {
				return nil, failf(env, "import", "tape %s: %v\n(nothing was imported)", tp.Meta.TapeID, err)
			}
		}
		if f.wsStart != "" || f.wsEnd != "" {
			if err := importWorkspace(ctx, tp, filepath.Join(f.out, tp.Meta.TapeID+".json"), f.wsStart, f.wsEnd); err != nil {
				return nil, failf(env, "import", "tape %s: %v\n(nothing was imported)", tp.Meta.TapeID, err)
			}
		}
		data, err := tape.Marshal(tp)
		if err != nil {
			return nil, failf(env, "import", "tape %s: %v", tp.Meta.TapeID, err)
		}
		if err := schema.Validate(data); err != nil {
			return nil, failf(env, "import", "tape %s from %s does not validate: %v\n(nothing was imported)", tp.Meta.TapeID, tp.Meta.Labels[interop.LabelSource], err)
		}
		if !f.allowSecrets {
			found, err := secrets.Scan(ctx, tp)
			if err != nil {
				return nil, failf(env, "import", "%v", err)
			}
			if len(found) > 0 {
				for _, x := range secrets.Masked(found) {
					fmt.Fprintf(env.Stderr, "%s: %s\n", tp.Meta.Labels[interop.LabelSource], x)
				}
				return nil, failf(env, "import", "%s holds %d secrets (nothing was imported; --allow-secrets imports them anyway)", tp.Meta.Labels[interop.LabelSource], len(found))
			}
		}
		if seen[tp.Meta.TapeID] {
			return nil, failf(env, "import", "two sessions give the tape id %s (the same session given twice?)", tp.Meta.TapeID)
		}
		seen[tp.Meta.TapeID] = true
		results = append(results, importedTape{id: tp.Meta.TapeID, data: data})
	}
	return results, ExitOK
}

// printImported says on stdout how many sessions and model calls were imported, from
// which formats, into --out.
func (f *importFlags) printImported(env *Env, tapes []*tape.Tape) {
	steps := 0
	formats := map[string]int{}
	for _, tp := range tapes {
		steps += tp.Totals().Steps
		formats[tp.Meta.Labels[interop.LabelImportedFrom]]++
	}
	var read []string
	for _, name := range slices.Sorted(maps.Keys(formats)) {
		read = append(read, fmt.Sprintf("%s (%d)", name, formats[name]))
	}
	fmt.Fprintf(env.Stdout, "imported %s (%s) from %s into %s\n", plural(len(tapes), "session"), plural(steps, "model call"), strings.Join(read, ", "), f.out)
}

// importWorkspaceOptions leave .git out of an imported tape's workspace, besides the defaults.
var importWorkspaceOptions = workspace.Options{Exclude: []string{".git"}}

// importWorkspace gives an imported tape (to be written at tapePath) a workspace: the
// snapshot of start beside it, and end's manifest; either may be "".
func importWorkspace(ctx context.Context, tp *tape.Tape, tapePath, start, end string) error {
	ws := &tape.Workspace{Exclude: importWorkspaceOptions.Patterns()}
	if start != "" {
		if err := os.MkdirAll(filepath.Dir(tapePath), 0o755); err != nil {
			return err
		}
		snap := workspace.SnapshotPath(tapePath)
		info, err := workspace.SnapshotFile(ctx, start, snap, importWorkspaceOptions)
		if err != nil {
			return fmt.Errorf("--workspace %s: %w", start, err)
		}
		ws.Snapshot, ws.Digest, ws.Size, ws.Files, ws.Bytes = filepath.Base(snap), info.Digest, info.Size, info.Files, info.Bytes
	}
	if end != "" {
		m, err := workspace.ManifestDir(ctx, end, importWorkspaceOptions)
		if err != nil {
			return fmt.Errorf("--workspace-end %s: %w", end, err)
		}
		ws.End = m.TapeEntries()
	}
	tp.Meta.Workspace = ws
	return nil
}

// gitCheckout writes the tree of commit rev of the repository at repo into dir (git
// archive, unpacked by tar), as a clean checkout has it.
func gitCheckout(ctx context.Context, repo, rev, dir string) error {
	// tar.umask=user: file modes as a checkout by this user makes them (git keeps only
	// the executable bit), not git archive's default 0664.
	archive := exec.CommandContext(ctx, "git", "-C", repo, "-c", "tar.umask=user", "archive", "--format=tar", rev)
	untar := exec.CommandContext(ctx, "tar", "-x", "-C", dir)
	pipe, err := archive.StdoutPipe()
	if err != nil {
		return err
	}
	untar.Stdin = pipe
	var stderr strings.Builder
	archive.Stderr = &stderr
	if err := archive.Start(); err != nil {
		return fmt.Errorf("git archive: %w", err)
	}
	tarOut, tarErr := untar.CombinedOutput()
	if err := archive.Wait(); err != nil {
		return fmt.Errorf("git archive: %w: %s", err, strings.TrimSpace(stderr.String()))
	}
	if tarErr != nil {
		return fmt.Errorf("tar: %w: %s", tarErr, tarOut)
	}
	return nil
}
