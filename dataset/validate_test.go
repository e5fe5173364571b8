package dataset

import (
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/internal/testutil/tapegen"
	"github.com/tapebox/tapebox/tape"
)

// problems validates dir and returns its problems as strings.
func problems(t *testing.T, dir string) []string {
	t.Helper()
	rep, err := Validate(t.Context(), dir, ValidateOptions{Jobs: 2})
	require.NoError(t, err)
	out := make([]string, len(rep.Problems))
	for i, p := range rep.Problems {
		out[i] = p.String()
	}
	return out
}

func requireProblem(t *testing.T, got []string, want ...string) {
	t.Helper()
	for _, g := range got {
		ok := true
		for _, w := range want {
			ok = ok && strings.Contains(g, w)
		}
		if ok {
			return
		}
	}
	t.Fatalf("no problem mentions all of %q; problems:\n%s", want, strings.Join(got, "\n"))
}

func TestValidateCard(t *testing.T) {
	inputs := smallCorpus(t, 5, 31)
	clean, _ := export(t, inputs, ExportOptions{})
	original, err := os.ReadFile(filepath.Join(clean, cardFile))
	require.NoError(t, err)
	card, err := ParseCard(original)
	require.NoError(t, err)
	tapesInfo := card.DatasetInfo[0]

	tests := []struct {
		name string
		// The edit replaces the first old in the card with new.
		old, new string
		want     []string
	}{
		{"num_examples", "num_examples: 5\n", "num_examples: 6\n", []string{"README.md", "dataset_info[tapes].splits"}},
		{"num_bytes", "num_bytes: " + itoa(tapesInfo.Splits[0].NumBytes), "num_bytes: 1", []string{"dataset_info[tapes].splits"}},
		{"download_size", "download_size: " + itoa(tapesInfo.DownloadSize), "download_size: 7", []string{"dataset_info[tapes].download_size", "7, the files take"}},
		{"dataset_size", "dataset_size: " + itoa(tapesInfo.DatasetSize), "dataset_size: 7", []string{"dataset_info[tapes].dataset_size"}},
		{"feature dtype", "- name: num_steps\n        dtype: int64", "- name: num_steps\n        dtype: int32", []string{"dataset_info[tapes].features", "num_steps: int32"}},
		{"missing feature", "      - name: tape_bytes\n        dtype: int64\n", "", []string{"dataset_info[tapes].features"}},
		{"data files", "path: data/steps/train-*.parquet", "path: data/steps/*.parquet", []string{"configs[steps].data_files"}},
		{"data files match nothing", "path: data/steps/train-*.parquet", "path: data/steps/valid-*.parquet", []string{"configs[steps].data_files", "matches no file"}},
		{"extra config", "configs:\n", "configs:\n  - config_name: extra\n    data_files:\n      - split: train\n        path: data/extra/*.parquet\n", []string{"configs", "config extra has no files"}},
		{"size category", "- n<1K", "- 1K<n<10K", []string{"size_categories"}},
		{"no license", "license: unknown\n", "", []string{"license: missing"}},
		{"broken markers", bodyEnd + "\n", "", []string{"README.md: body: the body has a", "no \"<!-- tapebox:end -->\" line after it"}},
		{"no front matter", "---\n", "", []string{"README.md", "no YAML front matter"}},
		{"bad yaml", "configs:\n", "configs: [\n", []string{"README.md", "YAML"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "dataset")
			require.NoError(t, os.CopyFS(dir, os.DirFS(clean)))
			edited := strings.Replace(string(original), tt.old, tt.new, 1)
			require.NotEqual(t, string(original), edited, "the edit applies")
			require.NoError(t, os.WriteFile(filepath.Join(dir, cardFile), []byte(edited), 0o644))
			requireProblem(t, problems(t, dir), tt.want...)
		})
	}
	t.Run("no card", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "dataset")
		require.NoError(t, os.CopyFS(dir, os.DirFS(clean)))
		require.NoError(t, os.Remove(filepath.Join(dir, cardFile)))
		requireProblem(t, problems(t, dir), "README.md", "no such file")
	})
	t.Run("edited body and license are fine", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "dataset")
		require.NoError(t, os.CopyFS(dir, os.DirFS(clean)))
		edited := strings.Replace(string(original), "license: unknown", "license: mit", 1) + "\nMore words.\n"
		require.NoError(t, os.WriteFile(filepath.Join(dir, cardFile), []byte(edited), 0o644))
		assert.Empty(t, problems(t, dir))
		// A new export keeps the license.
		export(t, inputs[:2], ExportOptions{Out: dir})
		c, err := LoadCard(dir)
		require.NoError(t, err)
		assert.Equal(t, "mit", c.License)
	})
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// craft writes a dataset of the given rows (one shard per table) with a card that
// matches the files, so that only row problems remain.
func craft(t *testing.T, tapes []TapeRow, steps []StepRow) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "dataset")
	ts := newShardSet[TapeRow](filepath.Join(dir, "data", configTapes), "train", tapesTable, Parquet, DefaultShardBytes, DefaultRowGroupBytes)
	ss := newShardSet[StepRow](filepath.Join(dir, "data", configSteps), "train", stepsTable, Parquet, DefaultShardBytes, DefaultRowGroupBytes)
	require.NoError(t, ts.write(tapes, sizesOf(tapesTable, tapes)))
	require.NoError(t, ss.write(steps, sizesOf(stepsTable, steps)))
	require.NoError(t, ts.closeCurrentOrEmpty())
	require.NoError(t, ss.closeCurrentOrEmpty())
	_, err := ts.publish()
	require.NoError(t, err)
	_, err = ss.publish()
	require.NoError(t, err)
	card, err := BuildCard(dir, CardOptions{})
	require.NoError(t, err)
	require.NoError(t, card.Save(dir))
	return dir
}

func sizesOf[R any](tb *table, rows []R) []int64 {
	out := make([]int64, len(rows))
	for i := range rows {
		out[i] = tb.rowBytes(reflect.ValueOf(&rows[i]).Elem())
	}
	return out
}

// rowsOfTapes derives the rows of n generated tapes.
func rowsOfTapes(t *testing.T, n int) ([]TapeRow, [][]StepRow, []*tape.Tape) {
	t.Helper()
	var tapes []TapeRow
	var steps [][]StepRow
	var tps []*tape.Tape
	for i := range n {
		tp := tapegen.Tape(tapegen.Options{Seed: 41, MeanSteps: 3, Lean: true}, i)
		data, err := tape.Marshal(tp)
		require.NoError(t, err)
		row, st, err := RowsOf(tp, data)
		require.NoError(t, err)
		tapes = append(tapes, row)
		steps = append(steps, st)
		tps = append(tps, tp)
	}
	return tapes, steps, tps
}

func flatten(steps [][]StepRow) []StepRow {
	var out []StepRow
	for _, s := range steps {
		out = append(out, s...)
	}
	return out
}

func TestValidateRows(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(t *testing.T, tapes []TapeRow, steps [][]StepRow, tps []*tape.Tape) ([]TapeRow, []StepRow)
		want   []string
	}{
		{"clean", func(t *testing.T, tapes []TapeRow, steps [][]StepRow, _ []*tape.Tape) ([]TapeRow, []StepRow) {
			return tapes, flatten(steps)
		}, nil},
		{"num_steps", func(t *testing.T, tapes []TapeRow, steps [][]StepRow, _ []*tape.Tape) ([]TapeRow, []StepRow) {
			tapes[1].NumSteps++
			return tapes, flatten(steps)
		}, []string{"data/tapes/train-00000-of-00001.parquet row 1: num_steps:", "the tape gives"}},
		{"token total", func(t *testing.T, tapes []TapeRow, steps [][]StepRow, _ []*tape.Tape) ([]TapeRow, []StepRow) {
			tapes[2].CacheReadInputTokens = 1
			return tapes, flatten(steps)
		}, []string{"row 2: cache_read_input_tokens: 1, the tape gives"}},
		{"schema", func(t *testing.T, tapes []TapeRow, steps [][]StepRow, tps []*tape.Tape) ([]TapeRow, []StepRow) {
			tps[0].Meta.Provider = "bogus"
			data, err := tape.Marshal(tps[0])
			require.NoError(t, err)
			tapes[0].TapeJSON = data
			return tapes, flatten(steps)
		}, []string{"row 0: tape_json/meta/provider:"}},
		{"not canonical", func(t *testing.T, tapes []TapeRow, steps [][]StepRow, _ []*tape.Tape) ([]TapeRow, []StepRow) {
			tapes[3].TapeJSON = append([]byte(" "), tapes[3].TapeJSON...)
			return tapes, flatten(steps)
		}, []string{"row 3: tape_json: not the canonical encoding"}},
		{"duplicate id", func(t *testing.T, tapes []TapeRow, steps [][]StepRow, _ []*tape.Tape) ([]TapeRow, []StepRow) {
			tapes = append(tapes, tapes[0])
			return tapes, append(flatten(steps), steps[0]...)
		}, []string{"row 4: tape_id:", "is also at data/tapes/train-00000-of-00001.parquet row 0"}},
		{"step column", func(t *testing.T, tapes []TapeRow, steps [][]StepRow, _ []*tape.Tape) ([]TapeRow, []StepRow) {
			steps[1][1].NewMessages = []byte("[]")
			return tapes, flatten(steps)
		}, []string{"data/steps/train-00000-of-00001.parquet row", "new_messages_json: \"[]\", the tape gives", "step 1)"}},
		{"missing steps", func(t *testing.T, tapes []TapeRow, steps [][]StepRow, _ []*tape.Tape) ([]TapeRow, []StepRow) {
			steps[2] = nil
			return tapes, flatten(steps)
		}, []string{"row 2: num_steps: the steps table holds 0 rows"}},
		{"orphan steps", func(t *testing.T, tapes []TapeRow, steps [][]StepRow, _ []*tape.Tape) ([]TapeRow, []StepRow) {
			orphan := steps[3][0]
			orphan.TapeID = "nobody"
			return tapes, append(flatten(steps), orphan)
		}, []string{"data/steps/", "tape \"nobody\", which has no row in the tapes table"}},
		{"steps out of place", func(t *testing.T, tapes []TapeRow, steps [][]StepRow, _ []*tape.Tape) ([]TapeRow, []StepRow) {
			all := flatten(steps)
			return tapes, append(all, steps[0][0])
		}, []string{"out of place"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tapes, steps, tps := rowsOfTapes(t, 4)
			tr, sr := tt.mutate(t, tapes, steps, tps)
			got := problems(t, craft(t, tr, sr))
			if tt.want == nil {
				assert.Empty(t, got)
				return
			}
			requireProblem(t, got, tt.want...)
		})
	}
}

func TestValidateLayout(t *testing.T) {
	inputs := smallCorpus(t, 12, 32)
	clean, _ := export(t, inputs, ExportOptions{Format: Both, ShardBytes: 16 << 10})
	t.Run("missing shard", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "dataset")
		require.NoError(t, os.CopyFS(dir, os.DirFS(clean)))
		l, err := scanLayout(dir)
		require.NoError(t, err)
		shards := l[configTapes]["train"]["parquet"]
		require.Greater(t, len(shards), 2)
		require.NoError(t, os.Remove(shards[1].path))
		requireProblem(t, problems(t, dir), "data: data/tapes: the parquet shards of split train are not a complete set")
	})
	t.Run("arrow stream cut short", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "dataset")
		require.NoError(t, os.CopyFS(dir, os.DirFS(clean)))
		l, err := scanLayout(dir)
		require.NoError(t, err)
		f := l[configSteps]["train"]["arrow"][0].path
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(f, data[:len(data)/2], 0o644))
		requireProblem(t, problems(t, dir), filepath.Base(f))
	})
	t.Run("formats disagree", func(t *testing.T) {
		// Each format is checked against its own rows; the counts say they differ.
		dir, _ := export(t, inputs[:4], ExportOptions{Format: Both})
		fewer, _ := export(t, inputs[:3], ExportOptions{Format: Arrow})
		for _, config := range []string{configTapes, configSteps} {
			name := filepath.Join("data", config, "train-00000-of-00001.arrow")
			data, err := os.ReadFile(filepath.Join(fewer, name))
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(filepath.Join(dir, name), data, 0o644))
		}
		rep, err := Validate(t.Context(), dir, ValidateOptions{})
		require.NoError(t, err)
		assert.Equal(t, int64(4), rep.Tapes, "the parquet files, as the card")
		requireProblem(t, problems(t, dir), "split train: the arrow files hold 3 tapes", "the parquet files 4")
	})
	t.Run("max problems", func(t *testing.T) {
		tapes, steps, _ := rowsOfTapes(t, 4)
		for i := range tapes {
			tapes[i].NumSteps += 10
			tapes[i].NumThreads += 10
		}
		dir := craft(t, tapes, flatten(steps))
		rep, err := Validate(t.Context(), dir, ValidateOptions{MaxProblems: 3})
		require.NoError(t, err)
		assert.Len(t, rep.Problems, 3)
		assert.True(t, rep.Truncated)
		assert.Contains(t, rep.Err().Error(), "stopped there")
	})
}
