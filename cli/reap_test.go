package cli

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/client"
	"github.com/docker/docker/errdefs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/internal/testutil/dockertest"
	"github.com/tapebox/tapebox/sandbox"
	"github.com/tapebox/tapebox/tape"
)

// saveBashTape writes a claude-code tape whose one step runs command in Bash.
func saveBashTape(t *testing.T, path, command, output string) string {
	t.Helper()
	tp := tape.New(tape.ProviderAnthropic, time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	tp.Meta.Harness = "claude-code"
	in, err := json.Marshal(map[string]string{"command": command})
	require.NoError(t, err)
	tp.Threads = []*tape.Thread{{ID: "main", Steps: []*tape.Step{
		{Response: tape.Response{Status: 200, StopReason: "tool_use"},
			ToolCalls:   []tape.ToolCall{{ID: "toolu_01", Name: "Bash", Input: in}},
			ToolResults: []tape.ToolResult{{ToolCallID: "toolu_01", Content: []tape.Block{{Type: tape.BlockText, Text: output}}}}},
		{Response: tape.Response{Status: 200, StopReason: "end_turn", Content: []tape.Block{{Type: tape.BlockText, Text: "done"}}}},
	}}}
	require.NoError(t, tape.Save(path, tp))
	return path
}

// containerIn finds the container TapeBox created whose socket directory is under tmp.
func containerIn(t *testing.T, cli *client.Client, tmp string) string {
	t.Helper()
	list, err := cli.ContainerList(t.Context(), container.ListOptions{All: true, Filters: filters.NewArgs(filters.Arg("label", sandbox.Label))})
	require.NoError(t, err)
	for _, c := range list {
		for _, m := range c.Mounts {
			if strings.HasPrefix(m.Source, tmp+string(filepath.Separator)) {
				return c.ID
			}
		}
	}
	return ""
}

// TestReplayKilledLeftoversReaped: a tapebox replay killed with SIGKILL leaves its container
// and its socket directory behind; the next replay removes both.
func TestReplayKilledLeftoversReaped(t *testing.T) {
	cli, image := dockertest.Image(t, dockertest.SandboxImage)
	bin := buildTapebox(t)
	tmp, err := os.MkdirTemp("", "tbreap-") // $TMPDIR of both replays; short, for socket paths
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(tmp) })
	dir := t.TempDir()
	replay := func(tapePath string) *exec.Cmd {
		cmd := exec.Command(bin, "replay", "--tape", tapePath, "--sandbox", "docker-image:"+image, "--cwd", "/app", "--speed", "0")
		cmd.Dir = ".." // the checkout, whose dist/ has the executor
		cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
		return cmd
	}

	first := replay(saveBashTape(t, filepath.Join(dir, "long.json"), "sleep 300", "(Bash completed with no output)"))
	stderr, err := os.Create(filepath.Join(dir, "first.stderr"))
	require.NoError(t, err)
	defer stderr.Close()
	first.Stderr = stderr
	require.NoError(t, first.Start())
	var id string
	deadline := time.Now().Add(2 * time.Minute)
	for {
		log, _ := os.ReadFile(stderr.Name())
		if id == "" {
			id = containerIn(t, cli, tmp)
		}
		if id != "" && strings.Contains(string(log), "executor session over unix socket") {
			break
		}
		require.True(t, time.Now().Before(deadline), "the first replay did not get going:\n%s", log)
		time.Sleep(100 * time.Millisecond)
	}
	t.Cleanup(func() {
		cli.ContainerRemove(context.Background(), id, container.RemoveOptions{Force: true, RemoveVolumes: true})
	})
	time.Sleep(500 * time.Millisecond) // into the sleep
	require.NoError(t, first.Process.Kill())
	_ = first.Wait()

	ci, err := cli.ContainerInspect(t.Context(), id)
	require.NoError(t, err, "a killed replay leaves its container")
	assert.True(t, ci.State.Running)
	socks, err := filepath.Glob(filepath.Join(tmp, "tapebox-sock-*"))
	require.NoError(t, err)
	require.Len(t, socks, 1, "and its socket directory")

	out, err := replay(saveBashTape(t, filepath.Join(dir, "short.json"), "echo hi", "hi")).CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Contains(t, string(out), "left by a replay that is gone")
	_, err = cli.ContainerInspect(t.Context(), id)
	assert.True(t, errdefs.IsNotFound(err), "the next replay removed the container: %v", err)
	assert.NoDirExists(t, socks[0], "the next replay removed the socket directory")
	left, err := filepath.Glob(filepath.Join(tmp, "tapebox-sock-*"))
	require.NoError(t, err)
	assert.Empty(t, left)
}
