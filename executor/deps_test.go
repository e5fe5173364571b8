package executor_test

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestDependencies enforces the executor's budget: the standard library, package tape, the
// JSON scanner and the harness table (both stdlib only), and the executor's own packages,
// nothing else.
func TestDependencies(t *testing.T) {
	out, err := exec.CommandContext(t.Context(), "go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}",
		"github.com/tapebox/tapebox/cmd/tapebox-exec").Output()
	require.NoError(t, err)
	for _, p := range strings.Fields(string(out)) {
		ok := p == "github.com/tapebox/tapebox/tape" ||
			p == "github.com/tapebox/tapebox/internal/jsonlex" ||
			p == "github.com/tapebox/tapebox/tape/harnesses" ||
			p == "github.com/tapebox/tapebox/cmd/tapebox-exec" ||
			p == "github.com/tapebox/tapebox/executor" ||
			strings.HasPrefix(p, "github.com/tapebox/tapebox/executor/")
		if !ok || strings.HasPrefix(p, "github.com/tapebox/tapebox/executor/conformance") {
			t.Errorf("tapebox-exec must not depend on %s", p)
		}
	}
}
