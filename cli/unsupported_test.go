package cli

import (
	"cmp"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/internal/testutil/codexcapture"
	"github.com/tapebox/tapebox/internal/testutil/realharness"
	"github.com/tapebox/tapebox/tape"
	"github.com/tapebox/tapebox/tape/unsupported"
	"github.com/tapebox/tapebox/testkit"
	"github.com/tapebox/tapebox/testkit/fakeprovider"
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

// TestRecordRealCodexMultiAgentV2: the real Codex 0.171.0 with multi_agent_v2 on, recorded
// through tapebox record against the scripted provider: the run completes as without it,
// record says once on stderr that replay and fork will refuse the tape, the tape carries the
// label, and replay refuses it.
func TestRecordRealCodexMultiAgentV2(t *testing.T) {
	realharness.Need(t, realharness.Codex)
	codex, err := realharness.CodexPath()
	require.NoError(t, err)
	ns := map[string]string{"spawn_agent": "collaboration", "wait_agent": "collaboration"}
	child := fakeprovider.Turn{Text: "42"}
	fp := testkit.NewProvider(t, fakeprovider.Script{
		Threads: []fakeprovider.Thread{
			{Name: "main", Turns: []fakeprovider.Turn{
				{Calls: []tape.ToolCall{fakeprovider.Call("spawn_agent", map[string]any{"task_name": "helper", "message": "Compute 6*7 and reply with the number only."})}, Namespaces: ns},
				{Calls: []tape.ToolCall{fakeprovider.Call("wait_agent", map[string]any{"timeout_ms": 30000})}, Namespaces: ns},
				{Text: "done"}, {Text: "done"}, {Text: "done"},
			}},
			{Name: "child", Turns: []fakeprovider.Turn{child, child, child}},
		},
		Match: func(r *fakeprovider.Request) string {
			if r.Header.Get("X-Openai-Subagent") != "" {
				return "child"
			}
			return "main"
		},
	})
	for _, tc := range []struct {
		model, label, refusal string
	}{
		// A model Codex knows: the root's every request offers the collaboration namespace.
		{"gpt-5.5", `request /tools/5 is the tool namespace "collaboration" (thread main)`, `thread "main" step 0: Codex multi_agent_v2 sub-agents: request /tools/5`},
		// The provider's own model (fake-model), which Codex sends no tools for: the
		// child's agent_message NEW_TASK shows it, and the root's FINAL_ANSWER.
		// (Which thread the child's request lands in depends on whether it reaches the
		// gateway before the root's next one: the attribution the refusal guards against.)
		{"", `request /input/13 is an input item of type "agent_message" (thread `, `Codex multi_agent_v2 sub-agents: request /input/`},
	} {
		t.Run(cmp.Or(tc.model, "provider-model"), func(t *testing.T) {
			home := t.TempDir()
			t.Setenv("CODEX_HOME", home)
			t.Setenv("HOME", home)
			t.Setenv("OPENAI_API_KEY", "")
			t.Chdir(t.TempDir())
			out := filepath.Join(t.TempDir(), "codex-v2.json")
			argv := []string{codex, "-c", "features.multi_agent_v2=true"}
			if tc.model != "" {
				argv = append(argv, "-c", "model="+strconv.Quote(tc.model))
			}
			argv = append(argv, "exec", "--skip-git-repo-check", "Use a sub-agent to compute 6*7.")
			var stdout, stderr syncBuffer
			code := RunEnv(t.Context(), append([]string{"record", "--output", out, "--upstream", fp.URL(), "--no-workspace", "--"}, argv...),
				&Env{Stdin: strings.NewReader(""), Stdout: &stdout, Stderr: &stderr, Getenv: os.Getenv})
			require.Equal(t, 0, code, "stderr:\n%s", stderr.String())
			assert.Equal(t, 1, strings.Count(stderr.String(), "replay and fork will refuse this tape"), "stderr:\n%s", stderr.String())
			tp, err := tape.LoadFile(out)
			require.NoError(t, err)
			assert.Equal(t, tape.EndComplete, tp.Meta.Ended.Reason)
			for _, th := range tp.Threads {
				t.Logf("thread %s (parent %v): %d steps", th.ID, th.Parent, len(th.Steps))
			}
			assert.True(t, strings.HasPrefix(tp.Meta.Labels[unsupported.Label], unsupported.CodexMultiAgentV2+": "+tc.label), tp.Meta.Labels[unsupported.Label])

			dir := filepath.Join(t.TempDir(), "work")
			code, _, errOut := runVerbForTest(t, "replay", "--tape", out, "--sandbox", "local:"+dir, "--speed", "0")
			assert.Equal(t, ExitFailure, code)
			assert.Contains(t, errOut, tc.refusal)
			assert.NoDirExists(t, dir)
		})
	}
}
