package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/gateway"
	"github.com/tapebox/tapebox/internal/testutil/realharness"
	"github.com/tapebox/tapebox/tape"
	"github.com/tapebox/tapebox/tape/seal"
	"github.com/tapebox/tapebox/testkit/fakeprovider"
)

// concurrentRuns is how many harnesses replay one tape at once through /r/run-N/.
const concurrentRuns = 20

// codexConcurrentRuns records a small Codex tape and replays it with 20 real Codex CLI
// processes at once against one simulator, each through its own /r/run-N/ prefix and in
// its own directory: every run must compare identical and end in the recorded files. Codex
// is the lighter of the two harnesses (a native binary; Claude Code is a large JavaScript
// bundle), and 20 of it fit on 2 cores. The tape's results do not depend on the working
// directory, since the runs cannot share one; each run polls an exec session whose id the
// harness makes up, so identifiers are learned per run. The first command waits for a
// barrier file that the test creates once every run has started, so that all 20 are in
// flight at once (and the simulator, which exits when every started run has finished,
// cannot finish before a slow starter begins).
func codexConcurrentRuns(t *testing.T, r *rig) {
	needHarness(t, realharness.Codex)
	const root = "/tmp/tapebox-rh-codex-runs"
	barrier := root + "/go"
	call := fakeprovider.Call
	exec := func(cmd string) tape.ToolCall { return call("exec_command", map[string]any{"cmd": cmd}) }
	c := codexCase()
	c.cwd = root + "/recording"
	c.script = func() fakeprovider.Script {
		return fakeprovider.Script{Threads: []fakeprovider.Thread{{Name: "main", Marker: "[rh-codex]", Turns: []fakeprovider.Turn{
			{Calls: []tape.ToolCall{
				call("exec_command", map[string]any{"cmd": "while [ ! -e " + barrier + " ]; do sleep 0.05; done; printf 'one\\ntwo\\n' > data.txt && echo made", "yield_time_ms": 30000}),
				exec("echo hi"),
			}},
			{Calls: []tape.ToolCall{fakeprovider.Custom("apply_patch", "*** Begin Patch\n*** Update File: data.txt\n@@\n one\n-two\n+TWO\n*** Add File: notes.txt\n+noted\n*** End Patch\n")}},
			{Calls: []tape.ToolCall{call("exec_command", map[string]any{"cmd": "echo early; sleep 1; echo late >> data.txt; echo late", "yield_time_ms": 200})}},
			pollSession("call_fake_main_2_0"),
			{Text: "Done."},
		}}}}
	}
	c.check = func(t *testing.T, rec *tape.Tape, state map[string]string) {
		require.Len(t, rec.Main().Steps, 5)
		assert.Regexp(t, `Process running with session ID \d+`, rec.Main().Steps[2].ToolResults[0].Text())
		assert.Equal(t, map[string]string{"data.txt": "one\nTWO\nlate\n", "notes.txt": "noted\n"}, state)
	}
	require.NoError(t, os.MkdirAll(root, 0o755))
	require.NoError(t, os.WriteFile(barrier, nil, 0o644))
	t.Cleanup(func() { os.Remove(barrier) })
	recorded, state := recordReal(t, r, c)
	require.NoError(t, os.Remove(barrier))
	rec, err := tape.LoadFile(recorded)
	require.NoError(t, err)
	// The runs each work in a directory of their own, which a simulator's --workspace (one
	// directory) cannot name: their end states are checked one by one below (checkSameState),
	// and compare here looks at the tool calls and results only.
	require.NotNil(t, rec.Meta.Workspace, "tapebox record took the workspace")
	rec.Meta.Workspace = nil
	require.NoError(t, seal.Tape(rec, nil), "sealed again: replay refuses a tape changed after its digests")
	recPath := filepath.Join(t.TempDir(), "recording-no-workspace.json")
	require.NoError(t, tape.Save(recPath, rec))

	out := filepath.Join(t.TempDir(), "replay.json")
	sim, base := r.simulator(t, recPath, out)
	type run struct {
		name, dir string
		p         *proc
	}
	runs := make([]run, concurrentRuns)
	start := time.Now()
	for i := range runs {
		runs[i].name = fmt.Sprintf("run-%d", i+1)
		runs[i].dir = fmt.Sprintf("%s/%s", root, runs[i].name)
		freshDir(t, runs[i].dir)
	}
	for i := range runs {
		argv, env := c.command(t, t.TempDir())
		runs[i].p = startProc(t, runs[i].dir, cleanEnv(append(env, c.baseURL(base+"/r/"+runs[i].name))...), argv[0], argv[1:]...)
	}
	deadline := time.Now().Add(2 * time.Minute)
	for strings.Count(sim.stderr(), ": started\n") < len(runs) {
		if time.Now().After(deadline) {
			t.Fatalf("not every run started in 2 minutes:\n%s", clipText(sim.stderr(), 4000))
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("%d runs in flight after %v", len(runs), time.Since(start).Round(time.Millisecond))
	require.NoError(t, os.WriteFile(barrier, nil, 0o644))
	codes := make([]int, len(runs))
	for i := range runs {
		codes[i] = runs[i].p.wait(t, 3*time.Minute)
	}
	t.Logf("%d Codex runs against one simulator in %v", len(runs), time.Since(start).Round(time.Millisecond))
	simCode := sim.wait(t, time.Minute)
	for i, rn := range runs {
		repPath := gateway.OutputFor(out, rn.name)
		if codes[i] != 0 || simCode != 0 {
			t.Errorf("%s: codex exit %d, simulator exit %d\n%s\ncodex output (end):\n%s", rn.name, codes[i], simCode,
				r.compareText(t, recPath, repPath), tail(rn.p.stdout()+rn.p.stderr(), 1500))
			continue
		}
		t.Run(rn.name, func(t *testing.T) {
			checkSameState(t, state, localState(t, rn.dir), rn.name)
			rep, err := tape.LoadFile(repPath)
			require.NoError(t, err)
			checkServedIdentifiers(t, rec, rep)
			report := r.requireIdentical(t, recPath, repPath)
			t.Logf("identical; identifiers learned: %v", report.Identifiers)
		})
	}
	if t.Failed() {
		t.Logf("simulator log:\n%s", clipText(sim.stderr(), 8000))
	}
}
