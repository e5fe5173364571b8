package executor_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/executor/protocol"
	"github.com/tapebox/tapebox/tape"
)

// TestBinary builds tapebox-exec and drives it as the controller and the conformance
// tests do.
func TestBinary(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "tapebox-exec")
	build := exec.CommandContext(t.Context(), "go", "build", "-o", bin, "github.com/tapebox/tapebox/cmd/tapebox-exec")
	out, err := build.CombinedOutput()
	require.NoError(t, err, string(out))

	t.Run("serve", func(t *testing.T) {
		dir := t.TempDir()
		in := strings.Join([]string{
			`{"op":"hello","harness":"claude-code","cwd":` + quote(dir) + `,"env":{},"state_dir":null}`,
			`{"op":"call","id":"1","call":{"id":"t1","name":"Bash","input":{"command":"echo captured"}},"recorded":null}`,
			// Written straight to the executor's own fd 1 (the command's parent is the task
			// wrapper, whose parent is the executor): it must land in the log.
			`{"op":"call","id":"2","call":{"id":"t2","name":"Bash","input":{"command":"echo direct-write > /proc/$(cut -d' ' -f4 /proc/$PPID/stat)/fd/1"}},"recorded":null}`,
			`not json`,
			`{"op":"bye"}`,
		}, "\n") + "\n"
		cmd := exec.CommandContext(t.Context(), bin, "serve")
		cmd.Stdin = strings.NewReader(in)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		require.NoError(t, cmd.Run(), stderr.String())

		lines := readLines(&stdout)
		require.Len(t, lines, 5, stdout.String())
		results := map[string]string{}
		var ops []string
		for _, l := range lines {
			var msg struct {
				Op     string `json:"op"`
				ID     string `json:"id"`
				Result struct {
					Content []struct{ Text string } `json:"content"`
				} `json:"result"`
			}
			require.NoError(t, json.Unmarshal([]byte(l), &msg), "stdout carries protocol lines only: %q", l)
			ops = append(ops, msg.Op)
			if msg.Op == "result" {
				results[msg.ID] = msg.Result.Content[0].Text
			}
		}
		assert.Equal(t, "hello", ops[0])
		assert.Equal(t, "bye", ops[len(ops)-1])
		assert.Contains(t, ops, "error")
		assert.Equal(t, "captured", results["1"])
		assert.Equal(t, "(Bash completed with no output)", results["2"])
		assert.NotContains(t, stdout.String(), "direct-write")
		assert.Contains(t, stderr.String(), "direct-write")
	})

	t.Run("call", func(t *testing.T) {
		dir := t.TempDir()
		cmd := exec.CommandContext(t.Context(), bin, "call", "--harness", "codex", "--cwd", dir)
		cmd.Stdin = strings.NewReader(`{"op":"call","id":"9","call":{"id":"c9","name":"apply_patch","kind":"custom","input":{"input":"*** Begin Patch\n*** Add File: a.txt\n+x\n*** End Patch"}},"recorded":null}` + "\n")
		out, err := cmd.Output()
		require.NoError(t, err)
		var res protocol.Result
		require.NoError(t, json.Unmarshal(out, &res))
		assert.Equal(t, protocol.OpResult, res.Op)
		assert.Equal(t, "9", res.ID)
		assert.Equal(t, "c9", res.Result.ToolCallID)
		assert.Equal(t, "Exit code: 0\nWall time: 0 seconds\nOutput:\nSuccess. Updated the following files:\nA a.txt\n", res.Result.Text())
		assert.FileExists(t, filepath.Join(dir, "a.txt"))

		cmd = exec.CommandContext(t.Context(), bin, "call", "--harness=claude-code", "--cwd="+dir)
		cmd.Stdin = strings.NewReader("{broken\n")
		out, err = cmd.Output()
		var ee *exec.ExitError
		require.ErrorAs(t, err, &ee)
		assert.Equal(t, 1, ee.ExitCode())
		var perr protocol.Error
		require.NoError(t, json.Unmarshal(out, &perr))
		assert.Equal(t, protocol.OpError, perr.Op)
		assert.Contains(t, perr.Message, "malformed JSON")
	})

	t.Run("serve-dial", func(t *testing.T) {
		dir := t.TempDir()
		sock := filepath.Join(dir, "ctl.sock")
		ln, err := net.Listen("unix", sock)
		require.NoError(t, err)
		defer ln.Close()

		cmd := exec.CommandContext(t.Context(), bin, "serve", "--dial", "unix:"+sock)
		stdin, err := cmd.StdinPipe()
		require.NoError(t, err)
		// Files, not buffers: os/exec then copies nothing in a goroutine of its own.
		stdout, err := os.Create(filepath.Join(t.TempDir(), "stdout"))
		require.NoError(t, err)
		defer stdout.Close()
		stderr, err := os.Create(filepath.Join(t.TempDir(), "stderr"))
		require.NoError(t, err)
		defer stderr.Close()
		cmd.Stdout, cmd.Stderr = stdout, stderr
		require.NoError(t, cmd.Start())

		conn, err := ln.Accept()
		require.NoError(t, err, logOf(stderr))
		defer conn.Close()
		enc, dec := protocol.NewEncoder(conn), protocol.NewReplyDecoder(conn)
		require.NoError(t, enc.Encode(protocol.Hello{Op: protocol.OpHello, Harness: "claude-code", Cwd: dir, Env: map[string]string{}}))
		env, err := dec.Decode()
		require.NoError(t, err, logOf(stderr))
		require.NotNil(t, env.HelloReply, string(env.Raw))
		require.NoError(t, enc.Encode(protocol.Call{Op: protocol.OpCall, ID: "1",
			Call: tape.ToolCall{ID: "t1", Name: "Bash", Input: []byte(`{"command":"echo over-the-socket"}`)}}))
		env, err = dec.Decode()
		require.NoError(t, err, logOf(stderr))
		require.NotNil(t, env.Result, string(env.Raw))
		assert.Equal(t, "over-the-socket", env.Result.Result.Text())

		// The end of stdin (the exec stream closed) ends the session.
		require.NoError(t, stdin.Close())
		_, err = dec.Decode()
		assert.ErrorIs(t, err, io.EOF)
		require.NoError(t, cmd.Wait(), logOf(stderr))
		assert.Empty(t, logOf(stdout), "the protocol travels over the connection only")
	})

	t.Run("usage", func(t *testing.T) {
		for _, tt := range []struct {
			args []string
			code int
			out  string
		}{
			{[]string{"version"}, 0, "tapebox-exec 0.1.0 (protocol 1, linux-"},
			{[]string{"--help"}, 0, "usage: tapebox-exec <command>"},
			{[]string{"call", "--help"}, 0, "usage: tapebox-exec call --harness NAME"},
			{[]string{"call", "--cwd", "/"}, 2, "--harness is required"},
			{[]string{"serve", "extra"}, 2, "unexpected argument"},
			{[]string{"serve", "--dial", "tcp:1"}, 2, "want unix:PATH"},
			{[]string{"serve", "--dial", "unix:/" + strings.Repeat("x", 120)}, 1, "over the 107 a unix socket address holds"},
			{[]string{"serve", "--dial", "unix:/nonexistent-dir/ctl.sock"}, 1, "dial unix:/nonexistent-dir/ctl.sock: connect: no such file or directory"},
			{[]string{"frobnicate"}, 2, `unknown command "frobnicate"`},
			{nil, 2, "usage:"},
		} {
			cmd := exec.CommandContext(t.Context(), bin, tt.args...)
			out, _ := cmd.CombinedOutput()
			assert.Equal(t, tt.code, cmd.ProcessState.ExitCode(), "%v", tt.args)
			assert.Contains(t, string(out), tt.out, "%v", tt.args)
		}
	})
}

func logOf(f *os.File) string {
	b, _ := os.ReadFile(f.Name())
	return string(b)
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
