package e2e

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/tape"
	"github.com/tapebox/tapebox/testkit/fakeprovider"
)

// TestRealHarnessesBreaker: real Claude Code and real Codex CLI against a model stuck in a
// loop (the same tool call every turn) are stopped by tapebox record --max-repeat 3: the
// harness gets the gateway's error in its provider's shape and stops, record exits 3 naming
// the limit, and the tape validates, verifies, holds the four answered steps (the last with
// its tool results) and ends budget.
func TestRealHarnessesBreaker(t *testing.T) {
	r := newRig(t)
	loop := func(marker string, call tape.ToolCall) func() fakeprovider.Script {
		return func() fakeprovider.Script {
			turns := make([]fakeprovider.Turn, 40)
			for i := range turns {
				turns[i] = fakeprovider.Turn{Text: "Checking once more.", Calls: []tape.ToolCall{call}}
			}
			return fakeprovider.Script{Threads: []fakeprovider.Thread{{Name: "main", Marker: marker, Turns: turns}}}
		}
	}
	claude, codex := claudeCase(), codexCase()
	claude.script = loop("[rh-claude]", fakeprovider.Call("Bash", map[string]any{"command": "echo still-not-done", "description": "check"}))
	codex.script = loop("[rh-codex]", fakeprovider.Call("exec_command", map[string]any{"cmd": "echo still-not-done"}))
	for _, c := range []realCase{claude, codex} {
		t.Run(c.harness, func(t *testing.T) {
			needHarness(t, c.harness)
			c.fresh(t)
			srv := fakeprovider.New(c.script())
			require.NoError(t, srv.Start())
			t.Cleanup(func() { srv.Close() })
			argv, env := c.command(t, t.TempDir())
			recPath := filepath.Join(t.TempDir(), "loop.json")
			args := append([]string{"record", "--output", recPath, "--upstream", srv.URL(), "--max-repeat", "3", "--"}, argv...)
			code, out, errOut := r.run(t, c.cwd, cleanEnv(env...), args...)
			if code != 3 {
				dumpRequests(t, srv)
			}
			require.Equal(t, 3, code, "tapebox record exits 3 when the breaker stops the run\nstdout:\n%s\nstderr:\n%s", clipText(out, 4000), clipText(errOut, 6000))
			require.Contains(t, errOut, "stopped by the breaker: max_repeat: thread main repeated an earlier step's tool calls")
			harnessSaw := out + errOut
			assert.Contains(t, harnessSaw, "budget exceeded", "the harness reports the gateway's message")
			require.NoError(t, srv.Err())
			requests := len(srv.ThreadRequests("main"))
			t.Logf("%s: %d requests reached the provider", c.harness, requests)

			code, vout, verr := r.run(t, t.TempDir(), cleanEnv(), "validate", recPath)
			require.Equal(t, 0, code, "tapebox validate\n%s%s", vout, verr)
			code, vout, verr = r.run(t, t.TempDir(), cleanEnv(), "verify", recPath)
			require.Equal(t, 0, code, "tapebox verify\n%s%s", vout, verr)
			require.Contains(t, vout, ": ok (4 steps, root sha256:")

			rec, err := tape.LoadFile(recPath)
			require.NoError(t, err)
			require.NotNil(t, rec.Meta.Ended)
			assert.Equal(t, tape.EndBudget, rec.Meta.Ended.Reason)
			assert.Equal(t, "max_repeat", rec.Meta.Ended.Limit)
			assert.Equal(t, &tape.Limits{MaxRepeat: 3}, rec.Meta.Limits)
			assert.Equal(t, c.harness, rec.Meta.Harness)
			main := rec.Main()
			require.NotNil(t, main)
			require.Len(t, main.Steps, 4, "step 0 and three repeats; the fifth call was refused")
			assert.Equal(t, 4, requests, "the refused call never reached the provider")
			for i, s := range main.Steps {
				require.Len(t, s.ToolCalls, 1, "step %d", i)
				require.Len(t, s.ToolResults, 1, "step %d has the result the next request brought", i)
				assert.Contains(t, s.ToolResults[0].Text(), "still-not-done", "step %d", i)
			}

			code, iout, ierr := r.run(t, t.TempDir(), cleanEnv(), "inspect", recPath)
			require.Equal(t, 0, code, ierr)
			for _, want := range []string{"budget at", ", limit max_repeat: thread main", "max repeat 3", "ok: 4 steps chained"} {
				assert.Contains(t, iout, want)
			}
		})
	}
}
