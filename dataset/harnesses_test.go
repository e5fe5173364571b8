package dataset

import (
	"encoding/json"
	"slices"
	"sort"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/tape"
)

// realHarnessTapes are tapes the real Gemini CLI 0.61.0 and OpenCode 1.18.33 recorded
// through tapebox record against the fake provider (test/e2e's cases), which the viewer's
// tests open too.
var realHarnessTapes = map[string]string{
	"gemini-cli": "../viewer/testdata/gemini-cli.json",
	"opencode":   "../viewer/testdata/opencode.json",
}

// TestExportMoreHarnesses: the Parquet rows of real Gemini CLI and OpenCode tapes say what
// they say of the others: the harness, its version, the provider and the agent's model;
// the tool names, calls, token usage and steps per tape; and per step its thread, the
// thread's parent call (OpenCode's task subagent), the step's model, usage, stop reason and
// calls, as the tape has them.
func TestExportMoreHarnesses(t *testing.T) {
	var inputs []Input
	names := []string{"gemini-cli", "opencode"}
	for _, n := range names {
		in, err := ExpandInputs([]string{realHarnessTapes[n]})
		require.NoError(t, err)
		inputs = append(inputs, in...)
	}
	dir, _ := export(t, inputs, ExportOptions{Format: Parquet})
	requireValid(t, dir)
	l, err := scanLayout(dir)
	require.NoError(t, err)
	tapes := map[string]TapeRow{}
	for r, err := range rowsOf[TapeRow](l[configTapes]["train"]["parquet"], tapesTable, 1) {
		require.NoError(t, err)
		tapes[r.v.Harness] = r.v
	}
	steps := map[string][]StepRow{}
	for r, err := range rowsOf[StepRow](l[configSteps]["train"]["parquet"], stepsTable, 1) {
		require.NoError(t, err)
		steps[r.v.TapeID] = append(steps[r.v.TapeID], r.v)
	}
	want := map[string]struct {
		version, provider, model string
		tools                    []string
		threads                  int
	}{
		"gemini-cli": {"0.61.0", "gemini", "gemini-2.5-pro", []string{"list_directory", "read_file", "replace", "run_shell_command", "write_file"}, 1},
		"opencode":   {"1.18.33", "anthropic", "claude-sonnet-4-5", []string{"bash", "edit", "glob", "grep", "read", "task", "todowrite", "write"}, 3},
	}
	for _, n := range names {
		t.Run(n, func(t *testing.T) {
			tp, err := tape.LoadFile(realHarnessTapes[n])
			require.NoError(t, err)
			row, ok := tapes[n]
			require.True(t, ok, "a row of harness %s", n)
			w := want[n]
			assert.Equal(t, tp.Meta.TapeID, row.TapeID)
			assert.Equal(t, w.version, row.HarnessVersion)
			assert.Equal(t, w.provider, row.Provider)
			assert.Equal(t, w.model, row.Model, "the agent's model")
			assert.Equal(t, w.tools, row.ToolNames)
			assert.Equal(t, int64(w.threads), row.NumThreads)

			var usage tape.Usage
			var calls, nsteps int
			for _, th := range tp.Threads {
				for _, s := range th.Steps {
					usage.InputTokens += s.Response.Usage.InputTokens
					usage.OutputTokens += s.Response.Usage.OutputTokens
					calls += len(s.ToolCalls)
					nsteps++
				}
			}
			assert.Positive(t, usage.InputTokens)
			assert.Positive(t, usage.OutputTokens)
			assert.Equal(t, usage.InputTokens, row.InputTokens)
			assert.Equal(t, usage.OutputTokens, row.OutputTokens)
			assert.Equal(t, int64(calls), row.NumToolCalls)
			assert.Equal(t, int64(nsteps), row.NumSteps)

			got := steps[tp.Meta.TapeID]
			require.Len(t, got, nsteps)
			sort.Slice(got, func(i, j int) bool {
				if got[i].ThreadIndex != got[j].ThreadIndex {
					return got[i].ThreadIndex < got[j].ThreadIndex
				}
				return got[i].StepIndex < got[j].StepIndex
			})
			k := 0
			parents := 0
			for ti, th := range tp.Threads {
				for si, s := range th.Steps {
					r := got[k]
					k++
					assert.Equal(t, th.ID, r.ThreadID)
					assert.Equal(t, int64(ti), r.ThreadIndex)
					assert.Equal(t, int64(si), r.StepIndex)
					if th.Parent != nil {
						require.NotNil(t, r.ParentThreadID, "thread %s", th.ID)
						assert.Equal(t, th.Parent.ThreadID, *r.ParentThreadID)
						assert.Equal(t, th.Parent.ToolCallID, *r.ParentToolCallID)
						parents++
					} else {
						assert.Nil(t, r.ParentThreadID, "thread %s", th.ID)
					}
					assert.Equal(t, tape.StepModel(&tp.Meta, s), r.Model, "thread %s step %d", th.ID, si)
					assert.Equal(t, s.Response.Usage.InputTokens, r.InputTokens, "thread %s step %d", th.ID, si)
					assert.Equal(t, s.Response.Usage.OutputTokens, r.OutputTokens, "thread %s step %d", th.ID, si)
					assert.Equal(t, s.Response.StopReason, r.StopReason, "thread %s step %d", th.ID, si)
					assert.Equal(t, int64(len(s.ToolCalls)), r.NumToolCalls)
					var rc []tape.ToolCall
					require.NoError(t, json.Unmarshal(r.ToolCalls, &rc))
					for i, c := range s.ToolCalls {
						assert.Equal(t, c.Name, rc[i].Name)
						assert.Equal(t, c.ID, rc[i].ID)
					}
				}
			}
			if n == "opencode" {
				assert.Positive(t, parents, "the task subagent's steps name the call that spawned it")
				models := map[string]bool{}
				for _, r := range got {
					models[r.Model] = true
				}
				assert.Len(t, models, 2, "the agent's model and the title request's small one, per step")
			}
			assert.True(t, slices.IsSorted(row.ToolNames))
		})
	}
}
