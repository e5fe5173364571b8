package executor_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/executor"
	"github.com/tapebox/tapebox/executor/protocol"
	"github.com/tapebox/tapebox/tape"
)

// session is a Serve running over pipes.
type session struct {
	t    *testing.T
	in   *io.PipeWriter
	enc  *protocol.Encoder
	dec  *protocol.Decoder
	done chan error
}

func startSession(t *testing.T) *session {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	s := &session{t: t, in: inW, enc: protocol.NewEncoder(inW), dec: protocol.NewReplyDecoder(outR), done: make(chan error, 1)}
	go func() {
		err := executor.Serve(t.Context(), inR, outW, io.Discard)
		outW.Close()
		s.done <- err
	}()
	t.Cleanup(func() {
		inW.Close()
		go io.Copy(io.Discard, outR)
		<-s.done
	})
	return s
}

func (s *session) send(msg any) {
	s.t.Helper()
	require.NoError(s.t, s.enc.Encode(msg))
}

func (s *session) sendRaw(line string) {
	s.t.Helper()
	_, err := io.WriteString(s.in, line+"\n")
	require.NoError(s.t, err)
}

func (s *session) recv() *protocol.Envelope {
	s.t.Helper()
	env, err := s.dec.Decode()
	require.NoError(s.t, err)
	return env
}

func (s *session) hello(harnessName, cwd string) *protocol.HelloReply {
	removeState(s.t, cwd)
	s.send(protocol.Hello{Op: protocol.OpHello, Harness: harnessName, Cwd: cwd, Env: map[string]string{}})
	env := s.recv()
	require.NotNil(s.t, env.HelloReply, string(env.Raw))
	return env.HelloReply
}

func call(id, tool string, input any, recorded *tape.ToolResult) protocol.Call {
	b, _ := json.Marshal(input)
	return protocol.Call{Op: protocol.OpCall, ID: id, Call: tape.ToolCall{ID: "tc_" + id, Name: tool, Input: b}, Recorded: recorded}
}

func TestServeHello(t *testing.T) {
	s := startSession(t)
	dir := t.TempDir()
	r := s.hello("claude-code", dir)
	assert.True(t, r.OK)
	assert.Equal(t, executor.Version, r.Version)
	assert.Equal(t, protocol.Version, r.Protocol)
	assert.Equal(t, dir, r.Cwd)
	assert.Equal(t, []string{"Agent", "Task"}, r.Policy.SpawningTools)
	assert.Regexp(t, `^linux-\S+-(x86_64|aarch64)$`, r.Platform)
	s.send(protocol.Bye{Op: protocol.OpBye})
	env := s.recv()
	require.NotNil(t, env.Bye)
	assert.True(t, env.Bye.OK)
	require.NoError(t, <-s.done)
	s.done <- nil
}

func TestServeManyInFlight(t *testing.T) {
	s := startSession(t)
	dir := t.TempDir()
	s.hello("claude-code", dir)
	const n = 100
	go func() {
		for i := range n {
			id := fmt.Sprint(i)
			switch i % 3 {
			case 0:
				s.send(call(id, "Bash", map[string]any{"command": fmt.Sprintf("echo %d", i)}, nil))
			case 1:
				s.send(call(id, "Write", map[string]any{"file_path": filepath.Join(dir, id+".txt"), "content": id}, nil))
			default:
				rec := &tape.ToolResult{Content: []tape.Block{{Type: tape.BlockText, Text: "noop " + id}}}
				s.send(call(id, "TodoWrite", map[string]any{}, rec))
			}
		}
	}()
	seen := map[string]bool{}
	for range n {
		env := s.recv()
		require.NotNil(t, env.Result, string(env.Raw))
		id := env.Result.ID
		require.False(t, seen[id], "result %s twice", id)
		seen[id] = true
		i := 0
		fmt.Sscan(id, &i)
		res := env.Result.Result
		assert.Equal(t, "tc_"+id, res.ToolCallID)
		require.NotNil(t, res.DurationMS)
		switch i % 3 {
		case 0:
			assert.Equal(t, id, res.Text())
		case 1:
			assert.Contains(t, res.Text(), "File created successfully at: "+filepath.Join(dir, id+".txt"))
		default:
			assert.Equal(t, "noop "+id, res.Text())
		}
	}
	assert.Len(t, seen, n)
}

func TestServeBadInput(t *testing.T) {
	s := startSession(t)
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "bin.dat"), []byte{0, 1, 2}, 0o644))

	expectError := func(id *string, contains string) {
		t.Helper()
		env := s.recv()
		require.NotNil(t, env.Error, string(env.Raw))
		assert.Equal(t, id, env.Error.ID)
		assert.Contains(t, env.Error.Message, contains)
	}
	idp := func(s string) *string { return &s }

	s.send(call("early", "Bash", map[string]any{"command": "true"}, nil))
	expectError(idp("early"), `call "early" before hello`)
	s.send(protocol.Hello{Op: protocol.OpHello, Harness: "nope", Cwd: dir})
	expectError(nil, `unknown harness "nope"`)
	s.send(protocol.Hello{Op: protocol.OpHello, Harness: "claude-code", Cwd: filepath.Join(dir, "missing")})
	expectError(nil, "hello: session cwd")
	s.hello("claude-code", dir)
	s.send(protocol.Hello{Op: protocol.OpHello, Harness: "codex", Cwd: dir})
	expectError(nil, "already open")

	s.sendRaw(`{"op":"call","id":"x1",`)
	expectError(nil, "malformed JSON")
	s.sendRaw(`{"op":"launch","id":"x2"}`)
	expectError(idp("x2"), `unknown op "launch"`)
	s.sendRaw(`{"op":"call","id":"x3","call":{"id":"t","name":""}}`)
	expectError(idp("x3"), "call.name")

	// A 64 MB line is skipped with an error; the session goes on.
	big := strings.Repeat("x", 64<<20)
	go func() { io.WriteString(s.in, `{"op":"call","id":"big","pad":"`+big+`"}`+"\n") }()
	expectError(nil, "line longer than")

	// A duplicate id while the first call is in flight.
	s.send(call("dup", "Bash", map[string]any{"command": "sleep 0.3; echo first"}, nil))
	s.send(call("dup", "Bash", map[string]any{"command": "echo second"}, nil))
	expectError(idp("dup"), `call id "dup" is already in flight`)
	env := s.recv()
	require.NotNil(t, env.Result)
	assert.Equal(t, "first", env.Result.Result.Text())

	// Tool-level problems are error results.
	for _, c := range []struct {
		c    protocol.Call
		want string
	}{
		{call("types", "Read", map[string]any{"file_path": 7}, nil), "The parameter `file_path` type is expected as `string` but provided as `number`"},
		{call("missing", "Read", map[string]any{"file_path": filepath.Join(dir, "none")}, nil), "File does not exist."},
		{call("binary", "Read", map[string]any{"file_path": filepath.Join(dir, "bin.dat")}, nil), "cannot read binary files"},
		{call("norecord", "WebFetch", map[string]any{"url": "x"}, nil), `"WebFetch"`},
	} {
		s.send(c.c)
		env := s.recv()
		require.NotNil(t, env.Result, string(env.Raw))
		assert.Equal(t, c.c.ID, env.Result.ID)
		assert.True(t, env.Result.Result.IsError)
		assert.Contains(t, env.Result.Result.Text(), c.want)
	}

	// A result copied from the recording says so on the wire; one the executor made does not.
	fetched := &tape.ToolResult{ToolCallID: "tc_old", Content: []tape.Block{{Type: tape.BlockText, Text: "<html>"}}}
	s.send(call("copied", "WebFetch", map[string]any{"url": "x"}, fetched))
	env = s.recv()
	require.NotNil(t, env.Result, string(env.Raw))
	assert.Equal(t, "<html>", env.Result.Result.Text())
	assert.True(t, env.Result.Result.CopiedFromTape)
	assert.Contains(t, string(env.Raw), `"copied_from_tape":true`)
	s.send(call("run", "Bash", map[string]any{"command": "echo ran"}, fetched))
	env = s.recv()
	require.NotNil(t, env.Result, string(env.Raw))
	assert.False(t, env.Result.Result.CopiedFromTape)
	assert.NotContains(t, string(env.Raw), "copied_from_tape")
	s.send(protocol.Bye{Op: protocol.OpBye})
	require.NotNil(t, s.recv().Bye)
}

func TestServePatchThatDoesNotApply(t *testing.T) {
	s := startSession(t)
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "a.txt"), []byte("one\n"), 0o644))
	s.hello("codex", dir)
	s.send(call("p", "apply_patch", map[string]any{"input": "*** Begin Patch\n*** Update File: a.txt\n@@\n-two\n+three\n*** End Patch"}, nil))
	env := s.recv()
	require.NotNil(t, env.Result)
	assert.Equal(t, "apply_patch verification failed: Failed to find expected lines in "+filepath.Join(dir, "a.txt")+":\ntwo", env.Result.Result.Text())
	s.send(call("q", "exec_command", map[string]any{"cmd": "cat a.txt", "login": false}, nil))
	env = s.recv()
	require.NotNil(t, env.Result)
	assert.Contains(t, env.Result.Result.Text(), "Output:\none\n")
}

func TestCall(t *testing.T) {
	dir := t.TempDir()
	res, err := executor.Call(t.Context(), "claude-code", dir, nil, call("1", "Bash", map[string]any{"command": "echo hi"}, nil))
	require.NoError(t, err)
	assert.Equal(t, protocol.OpResult, res.Op)
	assert.Equal(t, "1", res.ID)
	assert.Equal(t, "hi", res.Result.Text())
	_, err = executor.Call(t.Context(), "vim", dir, nil, call("1", "Bash", nil, nil))
	require.ErrorContains(t, err, `unknown harness "vim"`)
}

// readLines collects the lines of r.
func readLines(r io.Reader) []string {
	var out []string
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		out = append(out, sc.Text())
	}
	return out
}
