package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/compare"
	"github.com/tapebox/tapebox/controller"
	"github.com/tapebox/tapebox/internal/testutil/dockertest"
	"github.com/tapebox/tapebox/sandbox"
	"github.com/tapebox/tapebox/tape"
)

// transports are the executor transports of a created container, each test runs over both.
var transports = []sandbox.Transport{sandbox.TransportStream, sandbox.TransportSocket}

// TestReplayContainerKilled kills the container while a tool call runs: the replay stops with
// an error naming the thread and step, and the replay tape written so far is valid and says
// the replay ended in error.
func TestReplayContainerKilled(t *testing.T) {
	for _, tr := range transports {
		t.Run(string(tr), func(t *testing.T) { replayContainerKilled(t, tr) })
	}
}

func replayContainerKilled(t *testing.T, tr sandbox.Transport) {
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
	sb, err := sandbox.Open(ctx, "docker-image:tapebox/sandbox:bookworm", sandbox.Options{Cwd: "/work", InstallExecutor: true, Transport: tr})
	require.NoError(t, err)
	defer sb.Close(context.WithoutCancel(ctx))
	require.Equal(t, map[sandbox.Transport]string{sandbox.TransportStream: "exec-stream", sandbox.TransportSocket: "unix-socket"}[tr], sb.Transport())
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

// TestReplayRestartsDeadExecutorDocker kills the executor from inside a tool call in a
// created container: the controller restarts the session (a new exec, and on the socket
// transport a new socket to connect to), runs the call again and plays the tape to its end.
func TestReplayRestartsDeadExecutorDocker(t *testing.T) {
	dockertest.Image(t, "tapebox/sandbox:bookworm")
	for _, tr := range transports {
		t.Run(string(tr), func(t *testing.T) {
			rec := tape.New(tape.ProviderAnthropic, time.Unix(0, 0))
			rec.Meta.Harness = "claude-code"
			main := &tape.Thread{ID: "main"}
			for i, c := range []struct{ cmd, out string }{
				{"echo started > bg.txt", "(Bash completed with no output)"},
				// Kill the topmost tapebox-exec ancestor: the serving executor.
				{`if [ ! -f .killed ]; then touch .killed; p=$PPID; top=; while [ "$p" -gt 1 ]; do case "$(cat /proc/$p/comm)" in tapebox-exec*) top=$p;; esac; p=$(cut -d' ' -f4 /proc/$p/stat); done; kill -9 $top; fi; echo alive`, "alive"},
				{"cat bg.txt", "started"},
			} {
				id := fmt.Sprintf("toolu_%02d", i)
				in, _ := json.Marshal(map[string]string{"command": c.cmd})
				main.Steps = append(main.Steps, &tape.Step{Response: tape.Response{Status: 200, StopReason: "tool_use"},
					ToolCalls:   []tape.ToolCall{{ID: id, Name: "Bash", Input: in}},
					ToolResults: []tape.ToolResult{{ToolCallID: id, Content: []tape.Block{{Type: tape.BlockText, Text: c.out}}}}})
			}
			rec.Threads = []*tape.Thread{main}

			ctx := t.Context()
			sb, err := sandbox.Open(ctx, "docker-image:tapebox/sandbox:bookworm", sandbox.Options{Cwd: "/work", InstallExecutor: true, Transport: tr, Logf: t.Logf})
			require.NoError(t, err)
			defer sb.Close(context.WithoutCancel(ctx))
			out := filepath.Join(t.TempDir(), "replay.json")
			res, err := controller.Replay(ctx, rec, sb, controller.Options{Cwd: sb.Cwd(), Output: out, Logf: t.Logf})
			require.NoError(t, err)
			require.Equal(t, 1, res.Restarts)
			rep, err := tape.LoadFile(out)
			require.NoError(t, err)
			r := compare.Compare(rec, rep)
			require.True(t, r.Identical, "%+v", r.Differences)
		})
	}
}
