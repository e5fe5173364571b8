package fork_test

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/fork"
	"github.com/tapebox/tapebox/gateway"
	"github.com/tapebox/tapebox/internal/testutil/dockertest"
	"github.com/tapebox/tapebox/schema"
	"github.com/tapebox/tapebox/tape"
	"github.com/tapebox/tapebox/testkit"
)

// TestForkInContainer forks with Sandbox: docker-image:IMAGE, IMAGE being the sandbox image
// with the mini agent built in as a static program (internal/testutil/tapebox-mini): the workspace is
// restored in a fresh container, the agent runs there against the fork on the Docker
// bridge, the end manifest comes from the container, and Verify runs there.
func TestForkInContainer(t *testing.T) {
	image := dockertest.BuildMini(t)

	first := testkit.NewProvider(t, original())
	recPath, rec := recordIn(t, first, gateway.Config{Workspace: startDir(t), Cwd: "/work/mini"})
	before := len(first.Requests())

	second := testkit.NewProvider(t, other())
	forkPath := filepath.Join(t.TempDir(), "fork.json")
	res, err := fork.Run(t.Context(), fork.Options{
		Config:   fork.Config{Recording: rec, At: 2, Upstream: second.URL(), Output: forkPath, Logf: t.Logf},
		TapePath: recPath, Sandbox: "docker-image:" + image,
		Command: []string{"tapebox-mini", marker + " write a.txt"}, Verify: "grep -qx OTHER a.txt && test -f README",
	})
	require.NoError(t, err)
	assert.Equal(t, tape.EndComplete, res.Ended, res.Detail)
	assert.Equal(t, 0, res.ExitCode)
	assert.True(t, res.Reached)
	assert.Equal(t, map[string]int{"main": 2}, res.Served)
	assert.Equal(t, 2, res.Live)
	assert.Equal(t, "/work/mini", res.Workdir, "the container works in meta.cwd")
	assert.Equal(t, "pass", res.Verify, res.VerifyOutput)
	assert.Equal(t, before, len(first.Requests()))
	assert.Len(t, modelCalls(second), 2)

	b, err := os.ReadFile(forkPath)
	require.NoError(t, err)
	require.NoError(t, schema.Validate(b))
	ft, err := tape.LoadFile(forkPath)
	require.NoError(t, err)
	w := ft.Meta.Workspace
	require.NotNil(t, w, "the fork tape's workspace")
	sum := sha256.Sum256([]byte("one\ntwo\nOTHER\n"))
	var found bool
	for _, e := range w.End {
		if e.Path == "a.txt" {
			found = true
			assert.Equal(t, hex.EncodeToString(sum[:]), e.SHA256, "the container's a.txt is the other continuation's")
		}
	}
	assert.True(t, found, "a.txt in the end manifest: %+v", w.End)
	assert.Equal(t, rec.Meta.Workspace.Digest, w.Digest, "the start snapshot, copied beside the fork tape")
	_, err = os.Stat(filepath.Join(filepath.Dir(forkPath), w.Snapshot))
	assert.NoError(t, err)

	// A failing verify says fail.
	res, err = fork.Run(t.Context(), fork.Options{
		Config:   fork.Config{Recording: rec, At: 2, Upstream: second.URL(), Output: filepath.Join(t.TempDir(), "f2.json")},
		TapePath: recPath, Sandbox: "docker-image:" + image,
		Command: []string{"tapebox-mini", marker + " write a.txt"}, Verify: "grep -qx three a.txt",
	})
	require.NoError(t, err)
	assert.Equal(t, "fail", res.Verify)
}

// TestForkInContainerMissingHarness: an image without the command (the sandbox image of
// make sandbox-image holds no harness) stops the fork with an error naming the command, the
// image and what to build; a command that is there but fails is not reported so.
func TestForkInContainerMissingHarness(t *testing.T) {
	_, image := dockertest.Image(t, dockertest.SandboxImage)
	first := testkit.NewProvider(t, original())
	recPath, rec := recordIn(t, first, gateway.Config{Workspace: startDir(t), Cwd: "/work/mini"})
	for _, c := range []struct {
		command []string
		missing bool
	}{{[]string{"opencode", "run", "hi"}, true}, {[]string{"/usr/local/bin/gemini", "-p", "hi"}, true}, {[]string{"sh", "-c", "exit 127"}, false}} {
		_, err := fork.Run(t.Context(), fork.Options{
			Config:   fork.Config{Recording: rec, At: 2, Upstream: "http://127.0.0.1:9", Output: filepath.Join(t.TempDir(), "f.json")},
			TapePath: recPath, Sandbox: "docker-image:" + image, Command: c.command,
		})
		require.Error(t, err, c.command)
		hint := fork.MissingHarness(c.command[0], image)
		if c.missing {
			assert.Contains(t, err.Error(), hint)
			assert.Contains(t, hint, c.command[0]+" is not on the PATH of the image "+image+": ")
			assert.Contains(t, hint, "make harness-image builds "+fork.HarnessImage)
		} else {
			assert.NotContains(t, err.Error(), "is not on the PATH", "exit 127 from the command itself is not a missing harness")
		}
	}
}
