package e2e

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/controller"
	"github.com/tapebox/tapebox/internal/dockertest"
	"github.com/tapebox/tapebox/sandbox"
	"github.com/tapebox/tapebox/tape"
)

// TestReplayContainerKilled kills the container while a tool call runs: the replay stops with
// an error naming the thread and step, and the replay tape written so far is valid and says
// the replay ended in error.
func TestReplayContainerKilled(t *testing.T) {
	cli, _ := dockertest.Image(t, "tapebox/sandbox:bookworm")
	rec := tape.New(tape.ProviderAnthropic, time.Unix(0, 0))
	rec.Meta.Harness = "claude-code"
	step := func(id, cmd, out string) *tape.Step {
		in, _ := json.Marshal(map[string]string{"command": cmd})
		return &tape.Step{Response: tape.Response{Status: 200},
			ToolCalls:   []tape.ToolCall{{ID: id, Name: "Bash", Input: in}},
			ToolResults: []tape.ToolResult{{ToolCallID: id, Content: []tape.Block{{Type: tape.BlockText, Text: out}}}}}
	}
	rec.Threads = []*tape.Thread{{ID: "main", Steps: []*tape.Step{
		step("toolu_a", "echo first", "first"),
		step("toolu_b", "sleep 20", "(Bash completed with no output)"),
		step("toolu_c", "echo never", "never"),
	}}}
	ctx := t.Context()
	sb, err := sandbox.Open(ctx, "docker-image:tapebox/sandbox:bookworm", sandbox.Options{Cwd: "/work", InstallExecutor: true})
	require.NoError(t, err)
	defer sb.Close(context.WithoutCancel(ctx))
	go func() {
		time.Sleep(1500 * time.Millisecond)
		cli.ContainerKill(context.Background(), sb.ContainerID(), "KILL")
	}()
	out := filepath.Join(t.TempDir(), "replay.json")
	done := make(chan error, 1)
	go func() {
		_, err := controller.Replay(ctx, rec, sb, controller.Options{Cwd: sb.Cwd(), Output: out, Logf: t.Logf})
		done <- err
	}()
	select {
	case err = <-done:
	case <-time.After(60 * time.Second):
		t.Fatal("replay did not stop after the container was killed")
	}
	require.Error(t, err)
	var ie *controller.IncompleteError
	require.ErrorAs(t, err, &ie)
	require.Equal(t, "main", ie.Thread)
	require.Equal(t, 1, ie.Step)
	rep, lerr := tape.LoadFile(out)
	require.NoError(t, lerr)
	require.Equal(t, tape.EndError, rep.Meta.Ended.Reason)
	require.Equal(t, "first", rep.Main().Steps[0].ToolResults[0].Text())
	// The engine may take a moment to report the killed container as stopped.
	require.Eventually(t, func() bool {
		info, ierr := cli.ContainerInspect(context.Background(), sb.ContainerID())
		return ierr != nil || !info.State.Running
	}, 20*time.Second, 100*time.Millisecond, "the container was killed")
	t.Logf("replay error: %v", err)
}
