package executor_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/executor"
	"github.com/tapebox/tapebox/tape/harnesses"
)

// TestHarnessTableAgrees: every harness of the table has an executor module and every
// module an entry, and the policy a module reports in its hello is the table's.
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
	}
	assert.ElementsMatch(t, table, reg.Names(), "executor modules without a table entry")
}
