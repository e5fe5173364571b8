package controller_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/controller"
	"github.com/tapebox/tapebox/executor/harness"
	"github.com/tapebox/tapebox/sandbox"
	"github.com/tapebox/tapebox/tape"
)

// TestReplayToolNotOffered: which tools exist comes from the recorded request. A Bash call
// the request did not offer gets Claude Code's "No such tool available" and runs nothing;
// the same tape with Bash offered runs it. A tape of a version the executor was not checked
// against replays with one warning naming the nearest version checked.
func TestReplayToolNotOffered(t *testing.T) {
	for _, tt := range []struct {
		name    string
		tools   []string
		version string
		want    string // the first Bash call's result, "" for the one the recording has
		warn    string
	}{
		{"offered", []string{"Agent", "Bash"}, "2.1.332", "", ""},
		{"not offered", []string{"Agent", "Read"}, "2.1.332", "<tool_use_error>Error: No such tool available: Bash</tool_use_error>", ""},
		{"no tool list", nil, "2.1.332", "", ""},
		{"unknown version", []string{"Agent", "Bash"}, "2.1.999", "", "claude-code 2.1.999, which the executor was not checked against; it replays it as the nearest version checked, 2.1.332"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rec, _ := record(t, tape.ProviderAnthropic, false)
			rec.Meta.HarnessVersion = tt.version
			var write *tape.ToolCall
			var recorded tape.ToolResult
			for _, th := range rec.Threads {
				for i := range th.Steps {
					st := th.Steps[i]
					st.Request.Tools = nil
					for _, name := range tt.tools {
						st.Request.Tools = append(st.Request.Tools, tape.Tool{Name: name})
					}
					for _, c := range st.ToolCalls {
						if c.Name == "Bash" && write == nil {
							write = &c
							recorded, _ = st.ToolResult(c.ID)
						}
					}
				}
			}
			require.NotNil(t, write, "the mini harness's run has a Bash call")
			dir := t.TempDir()
			sb, err := sandbox.Open(t.Context(), "local:"+dir, sandbox.Options{})
			require.NoError(t, err)
			defer os.RemoveAll(harness.DefaultStateDir(sb.Cwd()))
			defer sb.Close(t.Context())
			var mu sync.Mutex
			var warnings []string
			logf := func(format string, args ...any) {
				mu.Lock()
				defer mu.Unlock()
				if line := fmt.Sprintf(format, args...); strings.HasPrefix(line, "warning:") {
					warnings = append(warnings, line)
				}
			}
			out := filepath.Join(t.TempDir(), "replay.json")
			res, err := controller.Replay(t.Context(), rec, sb, controller.Options{Cwd: sb.Cwd(), Output: out, Logf: logf})
			require.NoError(t, err)
			var got *tape.ToolResult
			for _, th := range res.Tape.Threads {
				for _, st := range th.Steps {
					if r, ok := st.ToolResult(write.ID); ok {
						got = &r
					}
				}
			}
			require.NotNil(t, got, "the replay has the Bash call's result")
			want := tt.want
			if want == "" {
				want = recorded.Text()
			}
			assert.Equal(t, want, got.Text())
			if tt.want != "" {
				assert.True(t, got.IsError)
				entries, err := os.ReadDir(dir)
				require.NoError(t, err)
				for _, e := range entries {
					assert.NotEqual(t, "one.txt", e.Name(), "the Bash call not offered ran nothing")
				}
			}
			if tt.warn == "" {
				assert.Empty(t, warnings)
			} else if assert.Len(t, warnings, 1, "one warning") {
				assert.Contains(t, warnings[0], tt.warn)
			}
		})
	}
}
