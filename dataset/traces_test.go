package dataset

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// duckDB runs a query in DuckDB (@duckdb/node-api, an independent Parquet reader) and
// returns its rows, tab-separated columns each. It needs node and @duckdb/node-api, in
// duckdbtest/node_modules (npm ci there) or in $TAPEBOX_DUCKDB/node_modules; without
// them the test is skipped, unless TAPEBOX_REQUIRE_HARNESSES=1, where that is a failure.
func duckDB(t *testing.T) func(sql string) []string {
	t.Helper()
	script, err := filepath.Abs(filepath.Join("duckdbtest", "query.mjs"))
	require.NoError(t, err)
	node, err := exec.LookPath("node")
	missing := ""
	switch {
	case err != nil:
		missing = "node is not on the PATH"
	case isDir(filepath.Join("duckdbtest", "node_modules", "@duckdb", "node-api")):
	case os.Getenv("TAPEBOX_DUCKDB") != "" && isDir(filepath.Join(os.Getenv("TAPEBOX_DUCKDB"), "node_modules", "@duckdb", "node-api")):
		// ES modules resolve from the script's folder: run a copy beside a link to them.
		dir := t.TempDir()
		b, err := os.ReadFile(script)
		require.NoError(t, err)
		script = filepath.Join(dir, "query.mjs")
		require.NoError(t, os.WriteFile(script, b, 0o644))
		require.NoError(t, os.Symlink(filepath.Join(os.Getenv("TAPEBOX_DUCKDB"), "node_modules"), filepath.Join(dir, "node_modules")))
	default:
		missing = "@duckdb/node-api is not installed (cd dataset/duckdbtest && npm ci, or TAPEBOX_DUCKDB=DIR with DIR/node_modules/@duckdb/node-api)"
	}
	if missing != "" {
		if os.Getenv("TAPEBOX_REQUIRE_HARNESSES") == "1" {
			t.Fatalf("DuckDB is required (TAPEBOX_REQUIRE_HARNESSES=1): %s", missing)
		}
		t.Skipf("no DuckDB: %s", missing)
	}
	return func(sql string) []string {
		t.Helper()
		out, err := exec.CommandContext(t.Context(), node, script, sql).Output()
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("duckdb %q: %v: %s", sql, err, ee.Stderr)
		}
		require.NoError(t, err)
		s := strings.TrimSuffix(string(out), "\n")
		if s == "" {
			return nil
		}
		return strings.Split(s, "\n")
	}
}

func isDir(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}

// traceShapes gives tape i its traces rows, of every shape the table holds: a thread with
// a prompt, messages and tools; one with nothing (null prompt and sent_at, empty lists);
// a main thread and a subagent's; no row at all; text that needs escaping.
func traceShapes(i int, tapeID string) []TraceRow {
	s := func(v string) *string { return &v }
	id := fmt.Sprintf("session-%d", i)
	meta := func(thread string) string { return fmt.Sprintf(`{"tape_id":%q,"thread_id":%q}`, tapeID, thread) }
	switch i % 5 {
	case 0:
		return []TraceRow{{Harness: "claude_code", SessionID: id, Prompt: s("Fix the bug"), SentAt: s("2026-12-07T10:00:00.000Z"),
			Messages: []string{`{"role":"user","content":"Fix the bug"}`, `{"role":"assistant","content":"","tool_calls":[{"id":"c1","type":"function","function":{"name":"Bash","arguments":{"command":"ls"}}}]}`, `{"role":"tool","tool_call_id":"c1","name":"Bash","content":"a\nb"}`},
			Tools:    []string{`{"type":"function","function":{"name":"Bash","parameters":{"type":"object"}}}`},
			Metadata: meta("main"), NumUserMessages: 1, NumToolCalls: 1,
			Trace: TraceJSON([]byte("{\"type\":\"user\"}\n{\"type\":\"assistant\"}\n")), FilePath: "traces/claude-code/-work/" + id + ".jsonl"}}
	case 1:
		return []TraceRow{{Harness: "claude_code", SessionID: id, Messages: []string{}, Metadata: meta("main"),
			Trace: TraceJSON(nil), FilePath: "traces/claude-code/-work/" + id + ".jsonl"}}
	case 2:
		return []TraceRow{
			{Harness: "codex", SessionID: id, Prompt: s("go"), SentAt: s("2026-12-07T10:00:00.000Z"), Messages: []string{`{"role":"user","content":"go"}`}, Tools: []string{},
				Metadata: meta("main"), NumUserMessages: 1, Trace: TraceJSON([]byte(`{"type":"session_meta","payload":{"id":"x"}}` + "\n")), FilePath: "traces/codex/2026/12/07/rollout-a.jsonl"},
			{Harness: "codex", SessionID: id + "-sub", Prompt: s("help"), Messages: []string{`{"role":"user","content":"help"}`},
				Metadata: meta("t1"), NumUserMessages: 1, Trace: TraceJSON([]byte("{}\n{}\n")), FilePath: "traces/codex/2026/12/07/rollout-b.jsonl"},
		}
	case 3:
		return nil
	}
	return []TraceRow{{Harness: "gemini-cli", SessionID: id, Prompt: s("tab\there \"quoted\" ünïcode <&>"), Messages: []string{`{"role":"user","content":"tab\there \"quoted\" ünïcode <&>"}`},
		Metadata: meta("main"), NumUserMessages: 1, Trace: TraceJSON([]byte("{\"type\":\"session\"}\n{\"x\":\"<&>\"}\n")), FilePath: "traces/sts/t/main.jsonl"}}
}

// tracesFrom is a TracesFunc that gives each input its traceShapes, by its index in inputs.
func tracesFrom(t *testing.T, inputs []Input) (TracesFunc, []TraceRow) {
	index := map[string]int{}
	ids := map[string]string{}
	var all []TraceRow
	for i, in := range inputs {
		index[in.Path] = i
		ids[in.Path] = tapeOf(t, in).Meta.TapeID
		all = append(all, traceShapes(i, ids[in.Path])...)
	}
	return func(_ context.Context, path string, _ []byte) ([]TraceRow, error) {
		return traceShapes(index[path], ids[path]), nil
	}, all
}

var wantTraceFeatures = []Feature{
	{Name: "harness", Dtype: "string"}, {Name: "session_id", Dtype: "string"}, {Name: "prompt", Dtype: "string"},
	{Name: "messages", List: "json"}, {Name: "tools", List: "json"}, {Name: "metadata", Dtype: "json"},
	{Name: "sent_at", Dtype: "string"}, {Name: "num_user_messages", Dtype: "int64"}, {Name: "num_tool_calls", Dtype: "int64"},
	{Name: "trace", Dtype: "json"}, {Name: "file_path", Dtype: "string"},
}

// TestExportTraces: ExportOptions.Traces gives the split a traces config in the Hub's
// agent-traces schema (the card names it, with its json features and the
// format:agent-traces tag), which validates and which arrow-go reads back row for row in
// every shape; an export without Traces takes the config, its shards and the tag away.
func TestExportTraces(t *testing.T) {
	inputs := smallCorpus(t, 10, 32)
	fn, want := tracesFrom(t, inputs)
	for _, format := range []Format{Parquet, Both} {
		t.Run(format.String(), func(t *testing.T) {
			dir, res := export(t, inputs, ExportOptions{Format: format, Traces: fn, RowGroupBytes: 4 << 10})
			assert.Equal(t, int64(len(want)), res.Traces)
			requireValid(t, dir)
			card, err := LoadCard(dir)
			require.NoError(t, err)
			assert.Contains(t, card.Tags, TagAgentTraces)
			i := slices.IndexFunc(card.Configs, func(c CardConfig) bool { return c.ConfigName == configTraces })
			require.GreaterOrEqual(t, i, 0, "the card has a traces config: %+v", card.Configs)
			assert.Equal(t, []DataFiles{{Split: "train", Path: "data/traces/train-*.parquet"}}, card.Configs[i].DataFiles)
			j := slices.IndexFunc(card.DatasetInfo, func(c ConfigInfo) bool { return c.ConfigName == configTraces })
			require.GreaterOrEqual(t, j, 0)
			assert.Equal(t, wantTraceFeatures, card.DatasetInfo[j].Features)
			assert.Equal(t, int64(len(want)), card.DatasetInfo[j].Splits[0].NumExamples)
			raw, err := os.ReadFile(filepath.Join(dir, cardFile))
			require.NoError(t, err)
			assert.Contains(t, string(raw), "- name: messages\n        list: json\n")
			assert.Contains(t, string(raw), "config_name: traces\n")

			l, err := scanLayout(dir)
			require.NoError(t, err)
			got := readSplitWithArrowGo[TraceRow](t, l, configTraces, tracesTable)
			require.Len(t, got, len(want))
			for k := range want {
				assertRowEqual(t, tracesTable, k, &want[k], &got[k])
			}
			if format == Both {
				var arrowRows []TraceRow
				for _, f := range l[configTraces]["train"]["arrow"] {
					require.NoError(t, readArrow(f.path, tracesTable, func(_ int64, rows []TraceRow) error {
						arrowRows = append(arrowRows, rows...)
						return nil
					}))
				}
				require.Len(t, arrowRows, len(want))
				for k := range want {
					assertRowEqual(t, tracesTable, k, &want[k], &arrowRows[k])
				}
			}

			// Again without Traces: no traces config, no shard, no tag.
			_, err = Export(t.Context(), inputs, ExportOptions{Out: dir, Format: format})
			require.NoError(t, err)
			requireValid(t, dir)
			card, err = LoadCard(dir)
			require.NoError(t, err)
			assert.NotContains(t, card.Tags, TagAgentTraces)
			for _, c := range card.Configs {
				assert.NotEqual(t, configTraces, c.ConfigName)
			}
			left, _ := filepath.Glob(filepath.Join(dir, "data", configTraces, "*"))
			assert.Empty(t, left)
		})
	}
}

// TestValidateChecksTraces: validate finds a traces row whose json column is not JSON,
// whose metadata names no tape of the dataset or is no object, whose file_path leaves
// traces/, or whose count is negative.
func TestValidateChecksTraces(t *testing.T) {
	inputs := smallCorpus(t, 3, 34)
	fn, _ := tracesFrom(t, inputs)
	dir, _ := export(t, inputs, ExportOptions{Traces: fn})
	requireValid(t, dir)
	l, err := scanLayout(dir)
	require.NoError(t, err)
	_, files := l.primary(configTraces, "train")
	require.Len(t, files, 1)
	var rows []TraceRow
	require.NoError(t, readShard(files[0], tracesTable, 64, func(_ int64, rs []TraceRow) error {
		rows = append(rows, rs...)
		return nil
	}))
	require.GreaterOrEqual(t, len(rows), 3)
	rows[0].Messages = append(rows[0].Messages, `{"role":`)
	rows[1].Metadata = `{"tape_id":"no-such-tape"}`
	rows[2].FilePath = "traces/../../etc/passwd"
	rows[2].NumToolCalls = -1
	set := newShardSet[TraceRow](filepath.Join(dir, "data", configTraces), "train", tracesTable, Parquet, DefaultShardBytes, DefaultRowGroupBytes)
	for i := range rows {
		require.NoError(t, set.write(rows[i:i+1], []int64{tracesTable.rowBytes(reflect.ValueOf(&rows[i]).Elem())}))
	}
	require.NoError(t, set.closeCurrentOrEmpty())
	_, err = set.publish()
	require.NoError(t, err)
	rep, err := Validate(t.Context(), dir, ValidateOptions{})
	require.NoError(t, err)
	var got []string
	for _, p := range rep.Problems {
		got = append(got, fmt.Sprintf("row %d %s: %s", p.Row, p.Pointer, p.Message))
	}
	assert.Contains(t, got, "row 0 messages: value "+fmt.Sprint(len(rows[0].Messages)-1)+" is not JSON")
	assert.Contains(t, got, `row 1 metadata: tape_id "no-such-tape" is no tape of the dataset`)
	assert.Contains(t, got, `row 2 file_path: "traces/../../etc/passwd" is not a path under traces/`)
	assert.Contains(t, got, "row 2 num_tool_calls: a negative count")

	// A session file beside the table that is not what the row's trace holds.
	require.NotEqual(t, rows[1].FilePath, "")
	f := filepath.Join(dir, filepath.FromSlash(rows[1].FilePath))
	require.NoError(t, os.MkdirAll(filepath.Dir(f), 0o755))
	require.NoError(t, os.WriteFile(f, []byte("{\"other\":1}\n{\"tape\":2}\n"), 0o644))
	rep, err = Validate(t.Context(), dir, ValidateOptions{})
	require.NoError(t, err)
	got = got[:0]
	for _, p := range rep.Problems {
		got = append(got, fmt.Sprintf("row %d %s: %s", p.Row, p.Pointer, p.Message))
	}
	assert.Contains(t, got, "row 1 trace: not the content of "+rows[1].FilePath+" (did two tapes give a session file the same path?)")
	require.NoError(t, os.WriteFile(f, []byte(traceText(t, rows[1].Trace)), 0o644))
	rep, err = Validate(t.Context(), dir, ValidateOptions{})
	require.NoError(t, err)
	for _, p := range rep.Problems {
		assert.NotEqual(t, "trace", p.Pointer, "the file as the row has it: %s", p.Message)
	}
}

// traceText is the session file a trace value holds.
func traceText(t *testing.T, trace string) string {
	t.Helper()
	var s string
	if json.Unmarshal([]byte(trace), &s) == nil {
		return s
	}
	return trace
}

// TestExportTracesDuckDB reads the traces table with DuckDB: the columns and types, every
// row of every shape (nulls, empty lists), and every json value is valid JSON that holds
// what was written.
func TestExportTracesDuckDB(t *testing.T) {
	query := duckDB(t)
	inputs := smallCorpus(t, 10, 33)
	fn, want := tracesFrom(t, inputs)
	dir, _ := export(t, inputs, ExportOptions{Traces: fn})
	glob := filepath.Join(dir, "data", "traces", "train-*.parquet")

	cols := query(fmt.Sprintf("SELECT column_name, column_type FROM (DESCRIBE SELECT * FROM read_parquet('%s'))", glob))
	assert.Equal(t, []string{
		"harness\tVARCHAR", "session_id\tVARCHAR", "prompt\tVARCHAR", "messages\tVARCHAR[]", "tools\tVARCHAR[]",
		"metadata\tVARCHAR", "sent_at\tVARCHAR", "num_user_messages\tBIGINT", "num_tool_calls\tBIGINT", "trace\tVARCHAR", "file_path\tVARCHAR",
	}, cols)

	rows := query(fmt.Sprintf("SELECT to_json(t)::VARCHAR FROM read_parquet('%s') t", glob))
	require.Len(t, rows, len(want))
	for i, line := range rows {
		var got struct {
			Harness         string   `json:"harness"`
			SessionID       string   `json:"session_id"`
			Prompt          *string  `json:"prompt"`
			Messages        []string `json:"messages"`
			Tools           []string `json:"tools"`
			Metadata        string   `json:"metadata"`
			SentAt          *string  `json:"sent_at"`
			NumUserMessages int64    `json:"num_user_messages"`
			NumToolCalls    int64    `json:"num_tool_calls"`
			Trace           string   `json:"trace"`
			FilePath        string   `json:"file_path"`
		}
		require.NoError(t, json.Unmarshal([]byte(line), &got), "%s", line)
		w := want[i]
		assert.Equal(t, w.Harness, got.Harness)
		assert.Equal(t, w.SessionID, got.SessionID)
		assert.Equal(t, w.Prompt, got.Prompt, "row %d: prompt (null stays null)", i)
		assert.Equal(t, w.SentAt, got.SentAt, "row %d: sent_at", i)
		assert.Equal(t, len(w.Messages), len(got.Messages), "row %d: messages", i)
		assert.NotNil(t, got.Messages, "row %d: an empty list is a list, not null", i)
		assert.Equal(t, len(w.Tools), len(got.Tools), "row %d: tools", i)
		assert.Equal(t, w.Metadata, got.Metadata)
		assert.Equal(t, w.Trace, got.Trace)
		assert.Equal(t, w.FilePath, got.FilePath)
		assert.Equal(t, w.NumUserMessages, got.NumUserMessages)
		assert.Equal(t, w.NumToolCalls, got.NumToolCalls)
		for k, m := range got.Messages {
			assert.JSONEq(t, w.Messages[k], m)
		}
	}
	// DuckDB's own JSON parser takes every json value, and the trace decodes to the file.
	bad := query(fmt.Sprintf(`SELECT file_path FROM read_parquet('%s') WHERE NOT json_valid(metadata) OR NOT json_valid(trace)
		OR EXISTS (SELECT 1 FROM unnest(messages) AS m(v) WHERE NOT json_valid(v)) OR EXISTS (SELECT 1 FROM unnest(tools) AS m(v) WHERE NOT json_valid(v))`, glob))
	assert.Empty(t, bad, "values DuckDB does not parse as JSON")
	traces := query(fmt.Sprintf(`SELECT to_json(trace::JSON ->> '$')::VARCHAR FROM read_parquet('%s') WHERE harness = 'gemini-cli'`, glob))
	require.NotEmpty(t, traces)
	var text string
	require.NoError(t, json.Unmarshal([]byte(traces[0]), &text))
	assert.Equal(t, "{\"type\":\"session\"}\n{\"x\":\"<&>\"}\n", text, "the trace column holds the file's text")
	// The checker tells: a value that is not JSON is found.
	assert.Equal(t, []string{"false"}, query(`SELECT json_valid('{"role":')`))
}

// TestTraceJSON: a file of one JSON value is kept as it is, any other file becomes a JSON
// string that decodes to it, as the Hub's library stores the trace column.
func TestTraceJSON(t *testing.T) {
	for _, file := range []string{"", "{}\n", `{"a":1}`, "{\"a\":1}\n{\"b\":2}\n", "not json", "<&>\u2028"} {
		got := TraceJSON([]byte(file))
		require.True(t, json.Valid([]byte(got)), "%q gives %q", file, got)
		if json.Valid([]byte(file)) {
			assert.Equal(t, file, got)
			continue
		}
		var s string
		require.NoError(t, json.Unmarshal([]byte(got), &s))
		assert.Equal(t, file, s)
		assert.False(t, bytes.Contains([]byte(got), []byte(`\u003c`)), "no HTML escapes: %s", got)
	}
}
