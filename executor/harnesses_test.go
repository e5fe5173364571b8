package executor_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/executor"
	"github.com/tapebox/tapebox/internal/testutil/harnesstest"
	"github.com/tapebox/tapebox/tape"
	"github.com/tapebox/tapebox/tape/harnesses"
)

// TestHarnessTableAgrees: every harness of the table has an executor module and every
// module an entry, the name and policy a module reports in its hello are the table's, and a
// call of a spawning tool that reaches a module is refused, not performed or replayed.
func TestHarnessTableAgrees(t *testing.T) {
	reg := executor.Harnesses()
	var table []string
	for _, h := range harnesses.All {
		table = append(table, h.Name)
		m, ok := reg.Lookup(h.Name)
		require.True(t, ok, "harness %s has no executor module", h.Name)
		p := m.Policy()
		assert.Equal(t, h.ParallelToolCalls, p.ParallelToolCalls, h.Name)
		assert.Equal(t, h.SpawningTools, p.SpawningTools, h.Name)
		assert.Equal(t, h.Name, m.Name())
		s := harnesstest.New(t, m, "call_1", nil)
		rec := &tape.ToolResult{ToolCallID: "old", Content: []tape.Block{{Type: tape.BlockText, Text: "the subagent's answer"}}}
		for _, tool := range h.SpawningTools {
			res := s.Run(tool, map[string]any{"prompt": "say hi"}, rec)
			assert.Equal(t, "tapebox-exec: "+tool+" spawns a subagent; the controller plays it, the executor does not", res.Text(), h.Name)
			assert.True(t, res.IsError, "%s %s", h.Name, tool)
		}
	}
	assert.ElementsMatch(t, table, reg.Names(), "executor modules without a table entry")
}
