package cli

import (
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/tapebox/tapebox/tape"
)

// TestForkBadInput: a fork point that does not exist is an error naming the thread or the
// step before anything runs (the command would leave a file behind if it ran).
func TestForkBadInput(t *testing.T) {
	rec := filepath.Join("..", "testdata", "replay", "claude-code.json")
	tp, err := tape.LoadFile(rec)
	if err != nil {
		t.Fatal(err)
	}
	steps := len(tp.Main().Steps)
	marker := filepath.Join(t.TempDir(), "ran")
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"step beyond the thread", []string{"--at", "99"}, ExitFailure, "step 99: thread main has " + strconv.Itoa(steps) + " steps"},
		{"the step after the last", []string{"--at", strconv.Itoa(steps)}, ExitFailure, "step " + strconv.Itoa(steps) + ": thread main has"},
		{"unknown thread", []string{"--at", "1", "--thread", "nope"}, ExitFailure, `thread "nope": no such thread`},
		{"no --at", nil, ExitUsage, "--at N is required"},
		{"--model and --models", []string{"--at", "1", "--model", "a", "--models", "b"}, ExitUsage, "exclude each other"},
		{"--verify without --models", []string{"--at", "1", "--verify", "true"}, ExitUsage, "--verify goes with --models"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append(append([]string{"fork", "--tape", rec, "--workdir", filepath.Join(t.TempDir(), "w")}, tc.args...), "--", "touch", marker)
			code, _, stderr := runVerbForTest(t, args...)
			assert.Equal(t, tc.code, code, stderr)
			assert.Contains(t, stderr, tc.want)
			_, err := os.Stat(marker)
			assert.True(t, os.IsNotExist(err), "the command did not run")
		})
	}
	code, _, stderr := runVerbForTest(t, "fork", "--tape", filepath.Join(t.TempDir(), "missing.json"), "--at", "1", "--", "true")
	assert.Equal(t, ExitFailure, code)
	assert.Contains(t, stderr, "missing.json")
}

// TestInspectFork: inspect names the recording a fork came from, its fork point, what was
// served and the overrides.
func TestInspectFork(t *testing.T) {
	tp := inspectTestTape()
	tp.Meta.ForkedFrom = &tape.ForkedFrom{TapeID: "rec-1", Thread: "main", Step: 2, Served: map[string]int{"main": 2, "t1": 1},
		Overrides: map[string]string{"model": "cheap"}}
	p := filepath.Join(t.TempDir(), "fork.json")
	if err := tape.Save(p, tp); err != nil {
		t.Fatal(err)
	}
	code, out, stderr := runVerbForTest(t, "inspect", p)
	assert.Equal(t, ExitOK, code, stderr)
	assert.Contains(t, out, `forked     fork of rec-1 at thread main step 2; steps served from it: main 2, t1 1; overrides: model="cheap"`)
	code, out, _ = runVerbForTest(t, "inspect", p, "--json")
	assert.Equal(t, ExitOK, code)
	assert.Contains(t, out, `"forked_from"`)
	tp.Meta.ForkedFrom = nil
	tape.Save(p, tp)
	_, out, _ = runVerbForTest(t, "inspect", p)
	assert.NotContains(t, out, "forked")
}

// TestCompareFork: compare recognises a fork of the recording, either way round, reports
// where the timelines part and exits 0; the same tapes without forked_from are a replay
// that differs (exit 1).
func TestCompareFork(t *testing.T) {
	recPath := filepath.Join("..", "testdata", "replay", "claude-code.json")
	rec, err := tape.LoadFile(recPath)
	if err != nil {
		t.Fatal(err)
	}
	f, err := tape.LoadFile(recPath)
	if err != nil {
		t.Fatal(err)
	}
	f.Meta.TapeID = "fork-of-claude"
	f.Meta.ForkedFrom = &tape.ForkedFrom{TapeID: rec.Meta.TapeID, Thread: "main", Step: 1, Served: map[string]int{"main": 1}, Overrides: map[string]string{"model": "cheap"}}
	main := f.Main()
	if len(main.Steps) < 3 || len(main.Steps[2].ToolCalls) == 0 {
		t.Fatalf("the test tape needs a tool call at main step 2")
	}
	main.Steps[2].ToolCalls[0].Input = []byte(`{"command":"echo another way"}`)
	forkPath := filepath.Join(t.TempDir(), "fork.json")
	if err := tape.Save(forkPath, f); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{recPath, forkPath}, {forkPath, recPath}} {
		code, out, stderr := runVerbForTest(t, append([]string{"compare"}, args...)...)
		assert.Equal(t, ExitOK, code, stderr)
		assert.Contains(t, out, "FORK at thread main step 1")
		assert.Contains(t, out, "common prefix: 2 steps of thread main")
		assert.Contains(t, out, "timelines part at thread main step 2: tool_call.input")
		assert.Contains(t, out, "echo another way")
	}
	code, out, _ := runVerbForTest(t, "compare", recPath, forkPath, "--json")
	assert.Equal(t, ExitOK, code)
	assert.Contains(t, out, `"parts_at": {`)
	assert.Contains(t, out, `"common_prefix": 2`)

	f.Meta.ForkedFrom = nil
	if err := tape.Save(forkPath, f); err != nil {
		t.Fatal(err)
	}
	code, out, _ = runVerbForTest(t, "compare", recPath, forkPath)
	assert.Equal(t, ExitFailure, code, "not a fork: a replay that differs\n%s", out)
	assert.NotContains(t, out, "FORK")
}

// fork --listen puts the fork server on the address given, which CMD is told; it does not go
// with --sandbox or --jobs above 1.
func TestForkListen(t *testing.T) {
	rec := filepath.Join("..", "testdata", "replay", "codex.json")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	seen := filepath.Join(t.TempDir(), "seen")
	code, _, stderr := runVerbForTest(t, "fork", "--tape", rec, "--at", "1", "--listen", addr, "--no-workspace", "--quiet",
		"--workdir", filepath.Join(t.TempDir(), "w"), "--output", filepath.Join(t.TempDir(), "fork.json"),
		"--", "sh", "-c", `echo "$TAPEBOX_GATEWAY_URL $OPENAI_BASE_URL" > `+seen)
	assert.Equal(t, ExitFailure, code, "the command makes no model call: the fork point is not reached")
	assert.Contains(t, stderr, "was not reached")
	b, err := os.ReadFile(seen)
	if err != nil {
		t.Fatal(err)
	}
	assert.Equal(t, "http://"+addr+" http://"+addr+"/v1\n", string(b))
	for _, extra := range [][]string{{"--jobs", "2", "--models", "a,b"}, {"--sandbox", "docker-image:x"}} {
		code, _, stderr = runVerbForTest(t, append(append([]string{"fork", "--tape", rec, "--at", "1", "--listen", addr}, extra...), "--", "true")...)
		assert.Equal(t, ExitUsage, code)
		assert.Contains(t, stderr, "--listen goes with a fork on this machine")
	}
}
