package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/dataset"
	"github.com/tapebox/tapebox/internal/testutil/tapegen"
	"github.com/tapebox/tapebox/tape"
)

// runDatasetCLI runs tapebox dataset ARGS with buffers.
func runDatasetCLI(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	return runVerbForTest(t, append([]string{"dataset"}, args...)...)
}

// genTapes writes a generated corpus into a temporary folder and returns it, with a path in
// another for a dataset (not yet made).
func genTapes(t *testing.T, opts tapegen.Options) (tapes, out string) {
	t.Helper()
	tapes = filepath.Join(t.TempDir(), "tapes")
	_, err := tapegen.Generate(t.Context(), tapes, opts)
	require.NoError(t, err)
	return tapes, filepath.Join(t.TempDir(), "ds")
}

func TestDatasetExportImportValidate(t *testing.T) {
	tapes, out := genTapes(t, tapegen.Options{Tapes: 6, Seed: 1, MeanSteps: 4, Lean: true})

	code, stdout, stderr := runDatasetCLI(t, "export", "--out", out, "--format", "both", "--jobs", "2", filepath.Join(tapes, "*.json"))
	require.Equal(t, ExitOK, code, stderr)
	assert.Contains(t, stdout, "exported 6 tapes")
	assert.Contains(t, stdout, "the card's license is unknown: --license ID sets it")
	assert.Empty(t, stderr, "no progress bar when stderr is not a terminal")
	for _, f := range []string{"README.md", "data/tapes/train-00000-of-00001.parquet", "data/steps/train-00000-of-00001.arrow"} {
		assert.FileExists(t, filepath.Join(out, f))
	}

	code, stdout, stderr = runDatasetCLI(t, "validate", out)
	require.Equal(t, ExitOK, code, stderr)
	assert.Contains(t, stdout, "valid dataset: 6 tapes", "--format both: each tape checked twice, counted once")

	back := filepath.Join(t.TempDir(), "back")
	code, stdout, stderr = runDatasetCLI(t, "import", out, "--out", back, "--verify") // flags after the folder
	require.Equal(t, ExitOK, code, stderr)
	assert.Contains(t, stdout, "imported 6 tapes")
	entries, err := os.ReadDir(tapes)
	require.NoError(t, err)
	for _, e := range entries {
		want, err := os.ReadFile(filepath.Join(tapes, e.Name()))
		require.NoError(t, err)
		got, err := os.ReadFile(filepath.Join(back, e.Name())) // under its own name
		require.NoError(t, err)
		assert.True(t, bytes.Equal(want, got), e.Name())
	}

	// A broken card fails validation with exit code 1 and says where.
	card := filepath.Join(out, "README.md")
	data, err := os.ReadFile(card)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(card, bytes.Replace(data, []byte("num_examples: 6"), []byte("num_examples: 60"), 1), 0o644))
	code, _, stderr = runDatasetCLI(t, "validate", out)
	assert.Equal(t, ExitFailure, code)
	assert.Contains(t, stderr, "README.md: dataset_info[tapes].splits")
}

func TestDatasetExportInvalidTape(t *testing.T) {
	dir := t.TempDir()
	good := tapegen.Tape(tapegen.Options{Seed: 2, MeanSteps: 2, Lean: true}, 0)
	bad := tapegen.Tape(tapegen.Options{Seed: 2, MeanSteps: 2, Lean: true}, 1)
	bad.Meta.Provider = "bogus"
	for name, tp := range map[string]*tape.Tape{"good.json": good, "bad.json": bad} {
		require.NoError(t, tape.Save(filepath.Join(dir, name), tp))
	}
	out := filepath.Join(t.TempDir(), "ds")
	code, _, stderr := runDatasetCLI(t, "export", "--out", out, dir)
	assert.Equal(t, ExitFailure, code)
	assert.Contains(t, stderr, "1 of 2 tapes are invalid; nothing was written")
	assert.Contains(t, stderr, filepath.Join(dir, "bad.json")+": /meta/provider")
	assert.NoDirExists(t, filepath.Join(out, "data", "tapes"))

	code, stdout, stderr := runDatasetCLI(t, "export", "--out", out, "--skip-invalid", "--split", "test", dir)
	require.Equal(t, ExitOK, code, stderr)
	assert.Contains(t, stdout, "exported 1 tape")
	assert.Contains(t, stdout, "skipped 1 invalid tape")
	assert.Contains(t, stderr, "skipped "+filepath.Join(dir, "bad.json")+": /meta/provider")
	assert.FileExists(t, filepath.Join(out, "data", "tapes", "test-00000-of-00001.parquet"))
}

// TestDatasetWorkspaces: export takes each tape's start snapshot along (once per digest),
// validate checks it, import writes it back beside the tape; a missing snapshot fails the
// export, naming the tape and the snapshot file, unless --no-workspace.
func TestDatasetWorkspaces(t *testing.T) {
	tapes, out := genTapes(t, tapegen.Options{Tapes: 4, Seed: 3, MeanSteps: 2, Lean: true, Workspaces: 2})
	code, stdout, stderr := runDatasetCLI(t, "export", "--out", out, tapes)
	require.Equal(t, ExitOK, code, stderr)
	assert.Contains(t, stdout, "with 2 start snapshots")
	assert.FileExists(t, filepath.Join(out, "data", "workspaces", "train-00000-of-00001.parquet"))

	code, stdout, stderr = runDatasetCLI(t, "validate", out)
	require.Equal(t, ExitOK, code, stderr)
	assert.Contains(t, stdout, "valid dataset: 4 tapes, 10 steps, 2 start snapshots")

	back := filepath.Join(t.TempDir(), "back")
	code, stdout, stderr = runDatasetCLI(t, "import", out, "--out", back)
	require.Equal(t, ExitOK, code, stderr)
	assert.Contains(t, stdout, "with 4 start snapshots", "one file per tape, as the tapes name them")
	for i := range 4 {
		name := tapegen.SnapshotName(i)
		want, err := os.ReadFile(filepath.Join(tapes, name))
		require.NoError(t, err)
		got, err := os.ReadFile(filepath.Join(back, name))
		require.NoError(t, err)
		assert.True(t, bytes.Equal(want, got), name)
	}

	require.NoError(t, os.Remove(filepath.Join(tapes, tapegen.SnapshotName(2))))
	code, _, stderr = runDatasetCLI(t, "export", "--out", filepath.Join(t.TempDir(), "ds2"), tapes)
	assert.Equal(t, ExitFailure, code)
	assert.Contains(t, stderr, filepath.Join(tapes, "tape-00002.json")+": start snapshot "+filepath.Join(tapes, tapegen.SnapshotName(2))+": missing")
	assert.Contains(t, stderr, "--no-workspace exports the tapes without their start snapshots")

	code, stdout, stderr = runDatasetCLI(t, "export", "--no-workspace", "--out", filepath.Join(t.TempDir(), "ds3"), tapes)
	require.Equal(t, ExitOK, code, stderr)
	assert.Contains(t, stdout, "left out the start snapshots of 4 tapes (--no-workspace)")
}

func TestDatasetUsage(t *testing.T) {
	tests := []struct {
		args   []string
		code   int
		stderr string
		stdout string
	}{
		{nil, ExitUsage, "Subverbs:", ""},
		{[]string{"frobnicate"}, ExitUsage, `unknown subverb "frobnicate"`, ""},
		{[]string{"--help"}, ExitOK, "", "Subverbs:"},
		{[]string{"export"}, ExitUsage, "no tapes given", ""},
		{[]string{"export", "--format", "csv", "x.json"}, ExitUsage, `unknown format "csv"`, ""},
		{[]string{"export", "--nope", "x.json"}, ExitUsage, "unknown flag --nope", ""},
		{[]string{"export", "--help"}, ExitOK, "", "--skip-invalid"},
		{[]string{"export", "--help"}, ExitOK, "", "--no-workspace"},
		{[]string{"export", "--help"}, ExitOK, "", "--task-category"},
		{[]string{"export", "--license", "Apache 2.0", "x.json"}, ExitUsage, `--license: license "Apache 2.0": want a license id`, ""},
		{[]string{"export", "--license", "MIT OR Apache-2.0", "x.json"}, ExitUsage, "an SPDX identifier", ""},
		{[]string{"export", "missing-dir/"}, ExitFailure, "missing-dir", ""},
		{[]string{"import", "ds"}, ExitUsage, "--out is required", ""},
		{[]string{"import", "--out", "x"}, ExitUsage, "want one dataset folder", ""},
		{[]string{"import", "--help"}, ExitOK, "", "--verify"},
		{[]string{"import", "--help"}, ExitOK, "", "[--json]"},
		{[]string{"export", "--help"}, ExitOK, "", "[--json]"},
		{[]string{"validate", "--help"}, ExitOK, "", "[--json]"},
		{[]string{"validate"}, ExitUsage, "want one dataset folder", ""},
		{[]string{"validate", "a", "b"}, ExitUsage, "want one dataset folder, got 2", ""},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			code, stdout, stderr := runDatasetCLI(t, tt.args...)
			assert.Equal(t, tt.code, code, "stderr: %s", stderr)
			assert.Contains(t, stderr, tt.stderr)
			assert.Contains(t, stdout, tt.stdout)
		})
	}
}

func TestDatasetValidateMissingFolder(t *testing.T) {
	code, _, stderr := runDatasetCLI(t, "validate", filepath.Join(t.TempDir(), "nothing"))
	assert.Equal(t, ExitFailure, code)
	assert.Contains(t, stderr, "no such file or directory")
}

func TestParseInterspersed(t *testing.T) {
	// parse takes flags anywhere among the positional arguments.
	var out, errOut bytes.Buffer
	env := &Env{Stdout: &out, Stderr: &errOut}
	fs := newFlagSet(env, "x", "", "")
	o := fs.String("out", "", "")
	v := fs.Bool("v", false, "")
	code, done := parse(env, fs, []string{"a", "--out", "o", "b", "-v", "--", "-c", "--out"})
	require.False(t, done, "code %d: %s", code, errOut.String())
	assert.Equal(t, []string{"a", "b", "-c", "--out"}, fs.Args())
	assert.Equal(t, "o", *o)
	assert.True(t, *v)
}

// TestDatasetExportRefusesSecrets: a tape holding an API key in a tool result is refused,
// naming the file, the JSON pointer and the rule, and nothing is written; --allow-secrets
// exports it.
func TestDatasetExportRefusesSecrets(t *testing.T) {
	tp, err := tape.LoadFile(filepath.Join("..", "testdata", "replay", "codex.json"))
	require.NoError(t, err)
	key := "ghp_" + strings.Repeat("x", 4) + "Q7b2Lm9Zr4Tw8Yp1Kd6Fs3Hj5Nc0Vq2Ge8Ua"
	tp.Main().Steps[0].ToolResults[0].Content[0].Text += "\nGITHUB_TOKEN=" + key
	dir := t.TempDir()
	path := filepath.Join(dir, "leaky.json")
	require.NoError(t, tape.Save(path, tp))
	out := filepath.Join(t.TempDir(), "ds")
	code, _, stderr := runVerbForTest(t, "dataset", "export", "--out", out, path)
	assert.Equal(t, ExitFailure, code)
	assert.Contains(t, stderr, path)
	assert.Contains(t, stderr, "/threads/0/steps/0/tool_results/0/content/0/text")
	assert.Contains(t, stderr, "github")
	assert.NotContains(t, stderr, key, "the secret itself is never printed")
	assert.NoDirExists(t, out)
	code, _, stderr = runVerbForTest(t, "dataset", "export", "--out", out, "--allow-secrets", path)
	assert.Equal(t, ExitOK, code, stderr)
}

// TestDatasetExportCreatedBy: the Parquet footer names the CLI's version, not the
// dataset layout's "1" with an empty build.
func TestDatasetExportCreatedBy(t *testing.T) {
	tapes, out := genTapes(t, tapegen.Options{Tapes: 2, Seed: 4, MeanSteps: 2, Lean: true})
	code, _, stderr := runDatasetCLI(t, "export", "--out", out, tapes)
	require.Equal(t, ExitOK, code, stderr)
	// The footer is at the end of the file, created_by a plain string in it.
	data, err := os.ReadFile(filepath.Join(out, "data", "tapes", "train-00000-of-00001.parquet"))
	require.NoError(t, err)
	assert.Contains(t, string(data), dataset.CreatedBy(Version))
	assert.Contains(t, string(data), "tapebox version "+Version)
	assert.NotContains(t, string(data), "(build )")
}

// TestDatasetExportRefusesTapeOfAnotherSplit: exit 1, naming the tape file and where the
// dataset already holds it, and the dataset is as it was.
func TestDatasetExportRefusesTapeOfAnotherSplit(t *testing.T) {
	tapes, out := genTapes(t, tapegen.Options{Tapes: 3, Seed: 5, MeanSteps: 2, Lean: true})
	code, _, stderr := runDatasetCLI(t, "export", "--out", out, tapes)
	require.Equal(t, ExitOK, code, stderr)
	card, err := os.ReadFile(filepath.Join(out, "README.md"))
	require.NoError(t, err)

	one := filepath.Join(tapes, "tape-00001.json")
	code, _, stderr = runDatasetCLI(t, "export", "--out", out, "--split", "test", one)
	assert.Equal(t, ExitFailure, code)
	assert.Contains(t, stderr, one+`: tape_id "`)
	assert.Contains(t, stderr, "is already in split train, at data/tapes/train-00000-of-00001.parquet row 1")
	assert.NoFileExists(t, filepath.Join(out, "data", "tapes", "test-00000-of-00001.parquet"))
	after, err := os.ReadFile(filepath.Join(out, "README.md"))
	require.NoError(t, err)
	assert.Equal(t, string(card), string(after))

	code, _, stderr = runDatasetCLI(t, "export", "--out", out, one) // the same split: replaced
	require.Equal(t, ExitOK, code, stderr)
}

// TestDatasetExportCardFlags: the card's fields come from the flags; a second export keeps
// what the flags set and what was added to the card by hand, and overrides only the
// fields it is given.
func TestDatasetExportCardFlags(t *testing.T) {
	tapes, out := genTapes(t, tapegen.Options{Tapes: 2, Seed: 6, MeanSteps: 2, Lean: true})
	code, stdout, stderr := runDatasetCLI(t, "export", tapes, "--out", out, "--license", "CC-BY-4.0",
		"--task-category", "text-generation", "--task-category", "question-answering", "--language", "en", "--pretty-name", "Our agent runs")
	require.Equal(t, ExitOK, code, stderr)
	assert.NotContains(t, stdout, "license is unknown")
	card, err := dataset.LoadCard(out)
	require.NoError(t, err)
	assert.Equal(t, "cc-by-4.0", card.License, "spelled as the Hub does")
	assert.Equal(t, []string{"text-generation", "question-answering"}, card.TaskCategories)
	assert.Equal(t, []string{"en"}, card.Language)
	assert.Equal(t, "Our agent runs", card.PrettyName)
	assert.Contains(t, card.Body, "# Our agent runs\n")

	path := filepath.Join(out, "README.md")
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	edited := strings.Replace(string(data), "language:\n", "homepage: https://example.com/runs\nlanguage:\n", 1) + "\nA paragraph of ours.\n"
	require.NoError(t, os.WriteFile(path, []byte(edited), 0o644))

	code, _, stderr = runDatasetCLI(t, "export", tapes, "--out", out, "--tag", "agents", "--format", "both")
	require.Equal(t, ExitOK, code, stderr)
	data, err = os.ReadFile(path)
	require.NoError(t, err)
	assert.Contains(t, string(data), "homepage: https://example.com/runs\nlanguage:\n  - en\n")
	assert.True(t, strings.HasSuffix(string(data), "<!-- tapebox:end -->\n\nA paragraph of ours.\n"), string(data))
	card, err = dataset.LoadCard(out)
	require.NoError(t, err)
	assert.Equal(t, "cc-by-4.0", card.License)
	assert.Equal(t, []string{"text-generation", "question-answering"}, card.TaskCategories)
	assert.Equal(t, []string{"agents"}, card.Tags)
	code, _, stderr = runDatasetCLI(t, "validate", out)
	require.Equal(t, ExitOK, code, stderr)
}

// TestDatasetJSON: export, import and validate --json print one summary object on stdout
// and nothing else there; the counts match the dataset (a --format both folder counted
// once) and every split is listed.
func TestDatasetJSON(t *testing.T) {
	tapes, out := genTapes(t, tapegen.Options{Tapes: 5, Seed: 7, MeanSteps: 3, Lean: true, Workspaces: 2})
	files, err := filepath.Glob(filepath.Join(tapes, "*.json"))
	require.NoError(t, err)
	require.Len(t, files, 5)

	code, stdout, stderr := runDatasetCLI(t, "export", "--out", out, "--split", "test", "--json", files[3], files[4])
	require.Equal(t, ExitOK, code, stderr)
	code, stdout, stderr = runDatasetCLI(t, "export", "--out", out, "--format", "both", "--license", "mit", "--json", files[0], files[1], files[2])
	require.Equal(t, ExitOK, code, stderr)
	var ex datasetExportJSON
	require.NoError(t, json.Unmarshal([]byte(stdout), &ex), stdout)
	assert.Equal(t, out, ex.Out)
	assert.Equal(t, "train", ex.Split)
	assert.Equal(t, "both", ex.Format)
	assert.Equal(t, 3, ex.Inputs)
	assert.Equal(t, 3, ex.Tapes)
	assert.Positive(t, ex.Steps)
	assert.Positive(t, ex.InputBytes)
	assert.Empty(t, ex.Skipped)
	assert.Equal(t, 2, ex.Workspaces, "tapes 0 and 2 share a snapshot")
	var paths []string
	for _, f := range ex.Files {
		paths = append(paths, f.Path)
		fi, err := os.Stat(filepath.Join(out, f.Path))
		require.NoError(t, err)
		assert.Equal(t, fi.Size(), f.Bytes, f.Path)
	}
	assert.Contains(t, paths, "data/tapes/train-00000-of-00001.parquet")
	assert.Contains(t, paths, "data/steps/train-00000-of-00001.arrow")
	assert.Contains(t, paths, "README.md")
	assert.Equal(t, "mit", ex.Dataset.License)
	require.Len(t, ex.Dataset.Splits, 2)
	assert.Equal(t, "train", ex.Dataset.Splits[0].Name)
	assert.Equal(t, int64(3), ex.Dataset.Splits[0].Tapes)
	assert.Equal(t, ex.Steps, ex.Dataset.Splits[0].Steps)
	assert.Equal(t, int64(2), ex.Dataset.Splits[0].Workspaces)
	assert.Equal(t, "test", ex.Dataset.Splits[1].Name)
	assert.Equal(t, int64(2), ex.Dataset.Splits[1].Tapes)
	assert.Positive(t, ex.Dataset.DownloadSize)
	assert.Positive(t, ex.Dataset.DatasetSize)

	code, stdout, stderr = runDatasetCLI(t, "validate", out, "--json")
	require.Equal(t, ExitOK, code, stderr)
	var va datasetValidateJSON
	require.NoError(t, json.Unmarshal([]byte(stdout), &va), stdout)
	assert.True(t, va.Valid)
	assert.Equal(t, int64(5), va.Tapes, "the Parquet and Arrow files of train hold the same 3 tapes")
	assert.Equal(t, ex.Dataset.Splits[0].Steps+ex.Dataset.Splits[1].Steps, va.Steps)
	assert.Equal(t, []datasetSplitJSON{
		{Name: "train", Tapes: 3, Steps: ex.Dataset.Splits[0].Steps, Workspaces: 2},
		{Name: "test", Tapes: 2, Steps: ex.Dataset.Splits[1].Steps, Workspaces: ex.Dataset.Splits[1].Workspaces},
	}, va.Splits)
	assert.Equal(t, []datasetProblemJSON{}, va.Problems)

	back := filepath.Join(t.TempDir(), "back")
	code, stdout, stderr = runDatasetCLI(t, "import", "--json", out, "--out", back)
	require.Equal(t, ExitOK, code, stderr)
	var im datasetImportJSON
	require.NoError(t, json.Unmarshal([]byte(stdout), &im), stdout)
	assert.Equal(t, 5, im.Tapes)
	assert.Equal(t, []datasetImportedJSON{{"train", 3}, {"test", 2}}, im.Splits)
	assert.Equal(t, 5, im.Workspaces, "one snapshot file per tape, as the tapes name them")
	assert.Equal(t, []datasetRenamedJSON{}, im.Renamed)

	// An invalid dataset: the object says so, and the exit code too.
	card := filepath.Join(out, "README.md")
	data, err := os.ReadFile(card)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(card, bytes.Replace(data, []byte("num_examples: 3\n"), []byte("num_examples: 30\n"), 1), 0o644))
	code, stdout, _ = runDatasetCLI(t, "validate", "--json", out)
	assert.Equal(t, ExitFailure, code)
	va = datasetValidateJSON{}
	require.NoError(t, json.Unmarshal([]byte(stdout), &va), stdout)
	assert.False(t, va.Valid)
	require.NotEmpty(t, va.Problems)
	assert.Equal(t, datasetProblemJSON{File: "README.md", Row: -1, Pointer: "dataset_info[tapes].splits", Message: va.Problems[0].Message}, va.Problems[0])
}
