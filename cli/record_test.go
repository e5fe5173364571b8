package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/internal/testutil/credscan"
	"github.com/tapebox/tapebox/tape"
	"github.com/tapebox/tapebox/testkit"
	"github.com/tapebox/tapebox/testkit/fakeprovider"
	"github.com/tapebox/tapebox/testkit/miniagent"
)

// The agent `tapebox record` runs in these tests (and the breaker's) is this test binary
// again, running TestRecordHelperAgent: a mini harness that talks to $ANTHROPIC_BASE_URL
// (asking for miniagent's fake-model), holding a placeholder key, then exits with
// $TAPEBOX_TEST_AGENT_EXIT.
const recordAgentEnv = "TAPEBOX_TEST_AGENT"

func TestRecordHelperAgent(t *testing.T) {
	if os.Getenv(recordAgentEnv) == "" {
		t.Skip("run by TestRecord as the agent")
	}
	dir, err := os.Getwd()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(100)
	}
	final, err := miniagent.Run(t.Context(), miniagent.Config{BaseURL: os.Getenv("ANTHROPIC_BASE_URL"),
		Provider: tape.ProviderAnthropic, Stream: true, Prompt: "RECORD-TASK: make a file", Dir: dir, APIKey: gwAPIKey})
	if err != nil {
		fmt.Fprintln(os.Stderr, "agent:", err)
		os.Exit(101)
	}
	fmt.Println(final)
	code, _ := strconv.Atoi(os.Getenv("TAPEBOX_TEST_AGENT_EXIT"))
	os.Exit(code)
}

// TestRecord runs `tapebox record -- AGENT` in process with a real agent process: the
// tape is finished when the agent exits, record exits with the agent's code, the agent's
// placeholder key is replaced upstream by the injected one, and no key reaches the tape.
func TestRecord(t *testing.T) {
	script := fakeprovider.Script{Threads: []fakeprovider.Thread{{Name: "main", Turns: []fakeprovider.Turn{
		{Calls: []tape.ToolCall{fakeprovider.Call("Bash", map[string]string{"command": "echo made > made.txt && echo ok"})}},
		{Text: "Made it."},
	}}}}
	cases := []struct {
		name       string
		exit       int
		wantReason tape.EndReason
	}{
		{"agent succeeds", 0, tape.EndComplete},
		{"agent fails after its answer", 3, tape.EndCut},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fp := testkit.NewProvider(t, script)
			work := t.TempDir()
			t.Chdir(work)
			t.Setenv(recordAgentEnv, "1")
			t.Setenv("TAPEBOX_TEST_AGENT_EXIT", strconv.Itoa(tc.exit))
			dir := t.TempDir()
			out := filepath.Join(dir, "run.json")
			var stdout, stderr syncBuffer // the gateway logs from its handlers
			env := &Env{Stdout: &stdout, Stderr: &stderr, Getenv: func(k string) string {
				if k == "REAL_KEY" {
					return gwInjected
				}
				return ""
			}}
			code := RunEnv(t.Context(), []string{"record", "--output", out, "--upstream", fp.URL(), "--task", "id=make-file",
				"--inject-header", "127.0.0.1:x-api-key=$REAL_KEY",
				"--", os.Args[0], "-test.run=^TestRecordHelperAgent$"}, env)
			require.Equal(t, tc.exit, code, "stderr:\n%s", &stderr)
			assert.Contains(t, stdout.String(), "Made it.")
			made, err := os.ReadFile(filepath.Join(work, "made.txt"))
			require.NoError(t, err)
			assert.Equal(t, "made\n", string(made))

			reqs := fp.Requests()
			require.Len(t, reqs, 2)
			for _, r := range reqs {
				assert.Equal(t, gwInjected, r.Header.Get("X-Api-Key"), "the upstream gets the injected key")
			}
			tp, err := tape.LoadFile(out)
			require.NoError(t, err)
			require.NotNil(t, tp.Meta.Ended)
			assert.Equal(t, tc.wantReason, tp.Meta.Ended.Reason, tp.Meta.Ended.Detail)
			assert.Equal(t, "make-file", tp.Meta.Task["id"])
			assert.Equal(t, work, tp.Meta.Cwd, "meta.cwd is the directory the agent ran in")
			require.Len(t, tp.Threads, 1)
			steps := tp.Threads[0].Steps
			require.Len(t, steps, 2)
			require.Len(t, steps[0].ToolResults, 1)
			assert.Equal(t, "ok", steps[0].ToolResults[0].Text())
			credscan.Dir(t, dir, gwCredentials...)
		})
	}
}
