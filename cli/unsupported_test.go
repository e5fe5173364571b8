package cli

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/internal/testutil/codexcapture"
	"github.com/tapebox/tapebox/tape"
	"github.com/tapebox/tapebox/tape/unsupported"
)

// TestReplayRefusesCodexMultiAgentV2: replay (executor and simulator mode) and fork refuse a
// Codex tape that records multi_agent_v2, naming the thread, the step and the request item,
// or the gateway's label; they run nothing. The same tape without it is not refused.
func TestReplayRefusesCodexMultiAgentV2(t *testing.T) {
	src := filepath.Join("..", "testdata", "replay", "codex.json")
	orig, err := tape.LoadFile(src)
	require.NoError(t, err)
	require.NoError(t, unsupported.Check(orig))
	require.Nil(t, orig.Digest, "a tape without digests: the planted step must not read as tampered")
	_, child, err := codexcapture.Load("v2-3-child-request.txt", "v2-1-root-request-initial.txt")
	require.NoError(t, err)

	write := func(name string, change func(*tape.Tape)) string {
		tp, err := tape.LoadFile(src)
		require.NoError(t, err)
		change(tp)
		b, err := tape.Marshal(tp)
		require.NoError(t, err)
		path := filepath.Join(t.TempDir(), name)
		require.NoError(t, os.WriteFile(path, b, 0o600))
		return path
	}
	planted := write("step.json", func(tp *tape.Tape) { tp.Main().Steps[3].Request.Raw = child })
	labelled := write("label.json", func(tp *tape.Tape) {
		tp.Meta.Labels[unsupported.Label] = unsupported.CodexMultiAgentV2 + ": request /input/11 is an input item of type \"agent_message\" (thread t1)"
	})
	for _, tc := range []struct{ name, path, want string }{
		{"step", planted, `thread "main" step 3: Codex multi_agent_v2 sub-agents: request /input/11 is an input item of type "agent_message"`},
		{"label", labelled, "meta.labels " + unsupported.Label + `: "Codex multi_agent_v2 sub-agents: request /input/11`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "work")
			marker := filepath.Join(t.TempDir(), "ran")
			for _, args := range [][]string{
				{"replay", "--tape", tc.path, "--sandbox", "local:" + dir, "--speed", "0"},
				{"replay", "--tape", tc.path, "--listen", "127.0.0.1:0", "--", "touch", marker},
				{"fork", "--tape", tc.path, "--at", "1", "--workdir", dir, "--", "touch", marker},
			} {
				code, _, stderr := runVerbForTest(t, args...)
				assert.Equal(t, ExitFailure, code, "%v: %s", args, stderr)
				assert.Contains(t, stderr, tc.path+": ", args)
				assert.Contains(t, stderr, tc.want, args)
				assert.Contains(t, stderr, "does not replay or fork", args)
				assert.Contains(t, stderr, "attributed to the parent's thread", args)
				assert.Contains(t, stderr, "docs/codex-subagents.md", args)
				assert.NoFileExists(t, marker, "%v ran nothing", args)
				assert.NoDirExists(t, dir, "%v opened no sandbox", args)
			}
		})
	}

	// The tape it was planted in goes past the check: fork fails later, on the step, and
	// replay plays it.
	code, _, stderr := runVerbForTest(t, "fork", "--tape", src, "--at", "99", "--workdir", filepath.Join(t.TempDir(), "w"), "--", "true")
	assert.Equal(t, ExitFailure, code)
	assert.Contains(t, stderr, "step 99: thread main has")
	assert.NotContains(t, stderr, "multi_agent_v2")
	code, _, stderr = runVerbForTest(t, "replay", "--tape", src, "--sandbox", "local:"+filepath.Join(t.TempDir(), "w"), "--speed", "0", "--output", filepath.Join(t.TempDir(), "r.json"))
	assert.Equal(t, ExitOK, code, stderr)
}
