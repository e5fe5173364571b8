package e2e

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/internal/testutil/dockertest"
	"github.com/tapebox/tapebox/tape"
	"github.com/tapebox/tapebox/testkit/fakeprovider"
)

// harnessImage is what make harness-image (scripts/harness-image.sh) builds.
const harnessImage = "tapebox/harnesses:bookworm"

// TestRealHarnessForkSandboxed forks real Gemini CLI and OpenCode tapes at step 2 in fresh
// containers of the image make harness-image builds from make sandbox-image's, as
// docs/fork.md says: tapebox fork --sandbox docker-image:tapebox/harnesses:bookworm --env
// KEY=... -- gemini|opencode .... The image holds the harness and the set-up record makes
// on this machine; the key comes from --env. The fork ends complete, two steps served and
// the rest live from a second fake provider, the container's end manifest holds the other
// continuation's files, and the planted key reaches neither the fork tape nor the log. The
// plain sandbox image, which holds no harness, fails with an error naming what is missing.
func TestRealHarnessForkSandboxed(t *testing.T) {
	r := newRig(t)
	dockertest.Image(t, dockertest.SandboxImage)
	build := exec.Command("../../scripts/harness-image.sh")
	out, err := build.CombinedOutput()
	require.NoError(t, err, "make harness-image\n%s", out)
	dockertest.Image(t, harnessImage)
	for _, c := range []forkMoreCase{geminiForkCase(), openCodeForkCase()} {
		t.Run(c.name, func(t *testing.T) {
			needHarness(t, c.harness)
			recPath, _, _ := recordRealServer(t, r, c.realCase, t.TempDir())
			rec, err := tape.LoadFile(recPath)
			require.NoError(t, err)
			agent := agentThread(t, rec)
			second := fakeprovider.New(c.other())
			require.NoError(t, second.Start())
			t.Cleanup(func() { second.Close() })

			argv, _ := c.command(t, t.TempDir())
			argv = append([]string{c.harness}, argv[1:]...) // the image's, on its PATH
			if c.harness == "gemini-cli" {
				argv[0] = "gemini"
			}
			key := map[string]string{"gemini-cli": "GEMINI_API_KEY=AIzaSyPLANTEDforkSandboxKey0123456789ab", "opencode": "ANTHROPIC_API_KEY=sk-ant-api03-PLANTEDforkSandboxKey0123456789abcdefAA"}[c.harness]
			// Gemini's key is given as NAME=VALUE, OpenCode's as NAME: its value on this machine.
			flag, env := key, cleanEnv()
			if c.harness == "opencode" {
				name, _, _ := strings.Cut(key, "=")
				flag, env = name, cleanEnv(key)
			}
			forkPath := filepath.Join(t.TempDir(), "fork.json")
			args := append([]string{"fork", "--tape", recPath, "--thread", agent.ID, "--at", "2", "--upstream", second.URL(),
				"--sandbox", "docker-image:" + harnessImage, "--env", flag, "--output", forkPath, "--json", "--"}, argv...)
			code, stdout, stderr := r.run(t, t.TempDir(), env, args...)
			if code != 0 {
				dumpRequests(t, second)
				t.Fatalf("tapebox fork --sandbox: exit %d\nstdout:\n%s\nstderr:\n%s", code, clipText(stdout, 4000), clipText(stderr, 8000))
			}
			var sum forkSummary
			require.NoError(t, json.Unmarshal([]byte(stdout), &sum), stdout)
			assert.Equal(t, "complete", sum.Ended, sum.Detail)
			assert.Equal(t, 2, sum.Served[agent.ID])
			assert.Positive(t, sum.LiveSteps)
			require.NoError(t, second.Err())
			_, secret, _ := strings.Cut(key, "=")
			live := 0
			for _, q := range second.Requests() {
				if q.Endpoint == fakeprovider.EndpointMessages || q.Endpoint == fakeprovider.EndpointGemini {
					live++
					assert.Equal(t, secret, q.Header.Get(map[string]string{"gemini-cli": "X-Goog-Api-Key", "opencode": "X-Api-Key"}[c.harness]), "the key given with --env reaches the live provider")
				}
			}
			assert.Positive(t, live)

			ft, err := tape.LoadFile(forkPath)
			require.NoError(t, err)
			require.NotNil(t, ft.Meta.Workspace)
			digest := func(s string) string { h := sha256.Sum256([]byte(s)); return hex.EncodeToString(h[:]) }
			end := map[string]string{}
			for _, e := range ft.Meta.Workspace.End {
				end[e.Path] = e.SHA256
			}
			assert.Equal(t, digest("Hello, lin\n"), end["out.txt"], "the other continuation ran in the container, on the served prefix's edit")
			assert.Equal(t, digest("# Greeter\n\nRun ./greet.sh NAME: it prints Hello, NAME.\n"), end["README.md"], "the served edit (step 1) is in the container's workspace")
			fa := ft.Thread(agent.ID)
			require.NotNil(t, fa)
			require.Len(t, fa.Steps, 4)
			assert.Contains(t, string(fa.Steps[2].ToolCalls[0].Input), "tail -1 src/names.txt")

			data, err := os.ReadFile(forkPath)
			require.NoError(t, err)
			assert.NotContains(t, string(data), secret, "the key reaches the fork tape")
			assert.NotContains(t, stderr+stdout, secret, "the key reaches the log")
			t.Logf("sandboxed fork of %s: %d served, %d live, reached after %.0f ms", c.name, sum.ServedSteps, sum.LiveSteps, sum.ToForkMS)

			// The plain sandbox image holds no harness: the error says so.
			args = append([]string{"fork", "--tape", recPath, "--thread", agent.ID, "--at", "2", "--upstream", second.URL(),
				"--sandbox", "docker-image:" + dockertest.SandboxImage, "--output", filepath.Join(t.TempDir(), "f.json"), "--quiet", "--"}, argv...)
			code, _, stderr = r.run(t, t.TempDir(), cleanEnv(), args...)
			assert.Equal(t, 1, code)
			assert.Contains(t, stderr, argv[0]+" is not on the PATH of the image "+dockertest.SandboxImage+": a sandboxed fork runs CMD inside the image, which must hold the harness and its set-up (make harness-image builds "+harnessImage+" with Gemini CLI and OpenCode; docs/fork.md)")
		})
	}
}
