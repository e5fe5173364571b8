package harnesstest

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/executor/harness"
	"github.com/tapebox/tapebox/tape"
)

// Session is a harness module's session on a fresh temporary directory. It and its state
// directory go when the test ends.
type Session struct {
	t testing.TB
	// Dir is the working directory, absolute.
	Dir string
	// Env is the session's environment; a test may add to Env.Environ between calls.
	Env *harness.Env
	// callID is the id Run gives every call.
	callID string
	sess   harness.Session
}

// New starts a session of h whose calls carry the id callID, with env added to the
// executor's environment.
func New(t testing.TB, h harness.Harness, callID string, env map[string]string) *Session {
	t.Helper()
	env2, err := harness.NewEnv(t.TempDir(), nil, env)
	require.NoError(t, err)
	// The default state directory is outside the test's; it goes after the session.
	t.Cleanup(func() { os.RemoveAll(env2.State.Path) })
	sess := h.NewSession(env2)
	t.Cleanup(func() { sess.Close() })
	return &Session{t: t, Dir: env2.Cwd, Env: env2, callID: callID, sess: sess}
}

// Run performs a call of the tool name with input (encoded as JSON) and rec as its
// recorded result, and checks that the result answers the call.
func (s *Session) Run(name string, input any, rec *tape.ToolResult) tape.ToolResult {
	s.t.Helper()
	b, err := json.Marshal(input)
	require.NoError(s.t, err)
	res := s.sess.Run(s.t.Context(), tape.ToolCall{ID: s.callID, Name: name, Input: b}, rec)
	require.Equal(s.t, s.callID, res.ToolCallID)
	return res
}

// Text is Run returning the result's text.
func (s *Session) Text(name string, input any, rec *tape.ToolResult) string {
	s.t.Helper()
	return s.Run(name, input, rec).Text()
}

// NotOffered performs a call of the tool name as one the recorded request did not offer
// (protocol.Call.NotOffered), as the executor does, and returns the result's text. The test
// fails when the module does not answer such calls (harness.Unoffered).
func (s *Session) NotOffered(name string, input any) string {
	s.t.Helper()
	u, ok := s.sess.(harness.Unoffered)
	require.True(s.t, ok, "the session does not answer calls of tools not offered (harness.Unoffered)")
	b, err := json.Marshal(input)
	require.NoError(s.t, err)
	res := u.NotOffered(s.t.Context(), tape.ToolCall{ID: s.callID, Name: name, Input: b}, nil)
	require.Equal(s.t, s.callID, res.ToolCallID)
	return res.Text()
}

// Write writes a file of the working directory (name is relative to it), making its
// directories, and returns its path.
func (s *Session) Write(name, content string) string {
	s.t.Helper()
	p := filepath.Join(s.Dir, name)
	require.NoError(s.t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(s.t, os.WriteFile(p, []byte(content), 0o644))
	return p
}
