package testkit_test

import (
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/internal/testutil/dockertest"
	"github.com/tapebox/tapebox/sandbox"
	"github.com/tapebox/tapebox/tape"
	"github.com/tapebox/tapebox/testkit"
	"github.com/tapebox/tapebox/testkit/miniagent"
)

func bash(cmd string) tape.ToolCall { return testkit.Call("Bash", map[string]string{"command": cmd}) }

// script is a small agent run: two calls in parallel, a subagent, a failing command.
var script = testkit.Script{Threads: []testkit.Thread{
	{Name: "main", Turns: []testkit.Turn{
		{Text: "Setting up.", Calls: []tape.ToolCall{
			bash("mkdir -p app && printf 'hello tapebox\\n' > app/greeting.txt && echo created"),
			bash("printf '#!/bin/sh\\necho run\\n' > run.sh && chmod 755 run.sh && ln -s app/greeting.txt link"),
		}},
		{Calls: []tape.ToolCall{testkit.Call("Agent", map[string]string{
			"description": "count words", "prompt": "SUBTASK: count the words in app/greeting.txt into app/count.txt",
		})}},
		{Calls: []tape.ToolCall{bash("test -f app/missing.txt || { echo 'app/missing.txt is not there'; exit 1; }")}},
		{Calls: []tape.ToolCall{bash("cat app/greeting.txt app/count.txt")}},
		{Text: "Done."},
	}},
	{Name: "sub", Marker: "SUBTASK:", Turns: []testkit.Turn{
		{Calls: []tape.ToolCall{bash("wc -w < app/greeting.txt | tr -d ' ' > app/count.txt && cat app/count.txt")}},
		{Text: "Wrote 2 to app/count.txt."},
	}},
}}

var wantFiles = map[string]string{
	"app/greeting.txt": "hello tapebox\n",
	"app/count.txt":    "2\n",
	"run.sh":           "#!/bin/sh\necho run\n",
}

// record records script with a real small agent through the gateway and returns the tape's
// path.
func record(tb testing.TB) string {
	tb.Helper()
	p := testkit.NewProvider(tb, script)
	g := testkit.NewGateway(tb, p.URL(), testkit.Harness("claude-code"), testkit.Task("id", "greeting"))
	work := tb.TempDir()
	final, err := miniagent.Run(tb.Context(), miniagent.Config{BaseURL: g.URL, Provider: tape.ProviderAnthropic, Stream: true,
		Prompt: "Set up app/ with a greeting and its word count.", Dir: work, APIKey: "sk-test-placeholder"})
	require.NoError(tb, err)
	require.Equal(tb, "Done.", final)
	rec, err := g.Finish()
	require.NoError(tb, err)
	require.Equal(tb, tape.EndComplete, rec.Meta.Ended.Reason)
	require.Equal(tb, "greeting", rec.Meta.Task["id"])
	require.Len(tb, rec.Threads, 2)
	require.Len(tb, p.Requests(), 7)
	again, err := g.Finish()
	require.NoError(tb, err)
	require.Same(tb, rec, again, "Finish is idempotent")
	return g.Path
}

func TestRecordAndReplay(t *testing.T) {
	path := record(t)
	tests := []struct {
		name, sandbox string
		opts          []testkit.Option
	}{
		{"local", "local", nil},
		{"unsafe-local", "unsafe-local", nil},
		{"docker", "docker-image:" + dockertest.SandboxImage, []testkit.Option{testkit.Cwd("/work")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.name == "docker" {
				dockertest.Image(t, dockertest.SandboxImage)
			}
			r := testkit.Replay(t, path, tt.sandbox, tt.opts...)
			require.NoError(t, r.Err)
			assert.NoError(t, testkit.CheckReachedEnd(r))
			assert.NoError(t, testkit.CheckIdentical(r))
			assert.NoError(t, testkit.CheckFiles(r, wantFiles))
			// The same golden file for both sandboxes: the end states match, modes included.
			assert.NoError(t, testkit.CheckSnapshot(r, "testdata/greeting.golden"))
			assert.Equal(t, 7, r.Controller.Steps)
			assert.Equal(t, 5, r.Controller.ToolCalls, "the Agent call is played by the controller, not the executor")
			assert.FileExists(t, r.TapePath)
			assert.Equal(t, r.Recording.Meta.TapeID, *r.Tape.Meta.ReplayOf)
			if tt.name == "docker" {
				assert.NotEmpty(t, r.Sandbox.ContainerID())
				assert.Equal(t, "/work", r.Sandbox.Cwd())
			}
		})
	}
}

// TestCheckEndState: a recording made with its workspace replays from the restored start
// (the agent's files sit beside one the recording found there) and CheckEndState holds; an
// end manifest without one of the files makes it name that file.
func TestCheckEndState(t *testing.T) {
	p := testkit.NewProvider(t, script)
	work := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(work, "seed.txt"), []byte("was here first\n"), 0o644))
	g := testkit.NewGateway(t, p.URL(), testkit.Harness("claude-code"), testkit.Workspace(work))
	_, err := miniagent.Run(t.Context(), miniagent.Config{BaseURL: g.URL, Provider: tape.ProviderAnthropic, Stream: true,
		Prompt: "Set up app/ with a greeting and its word count.", Dir: work, APIKey: "sk-test-placeholder"})
	require.NoError(t, err)
	rec, err := g.Finish()
	require.NoError(t, err)
	require.NotNil(t, rec.Meta.Workspace)
	require.Equal(t, 1, rec.Meta.Workspace.Files)

	r := testkit.Replay(t, g.Path, "local")
	require.NoError(t, r.Err)
	require.NoError(t, testkit.CheckEndState(r))
	require.NoError(t, testkit.CheckIdentical(r))
	require.NoError(t, testkit.CheckFiles(r, map[string]string{"seed.txt": "was here first\n"}))

	var kept []tape.FileEntry
	for _, e := range r.Tape.Meta.Workspace.End {
		if e.Path != "seed.txt" {
			kept = append(kept, e)
		}
	}
	r.Tape.Meta.Workspace.End = kept
	checkProblems(t, testkit.CheckEndState(r), "CheckEndState", "end state: seed.txt: missing: recorded file 0644, 15 bytes")
	assert.ErrorContains(t, testkit.CheckIdentical(r), "seed.txt: missing")

	noEnd := testkit.Replay(t, record(t), "local")
	checkProblems(t, testkit.CheckEndState(noEnd), "CheckEndState", "the recording has no end manifest (recorded without a workspace)")
}

// TestReplayDefaultsToMetaCwd: the hand-built Claude Code tape writes to absolute paths under
// the directory it was recorded in; a Docker replay runs there unless Cwd says otherwise.
func TestReplayDefaultsToMetaCwd(t *testing.T) {
	dockertest.Image(t, dockertest.SandboxImage)
	path := filepath.Join("..", "testdata", "replay", "claude-code.json")
	for _, tt := range []struct {
		name      string
		opts      []testkit.Option
		want      string
		identical bool
	}{
		{"meta.cwd", nil, "/tmp/tapebox-e2e-claude", true},
		{"Cwd wins", []testkit.Option{testkit.Cwd("/app")}, "/app", false},
		{"SandboxOptions.Cwd wins", []testkit.Option{testkit.SandboxOptions(sandbox.Options{Cwd: "/srv"})}, "/srv", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := testkit.Replay(t, path, "docker-image:"+dockertest.SandboxImage, tt.opts...)
			require.NoError(t, r.Err)
			assert.Equal(t, tt.want, r.Sandbox.Cwd())
			assert.Equal(t, tt.want, r.Tape.Meta.Cwd, "the replay tape says where it ran")
			assert.Equal(t, tt.identical, testkit.CheckIdentical(r) == nil)
		})
	}
}

// TestChecksListEveryProblem spoils a replay's end state and tape and checks that each
// checker names every problem.
func TestChecksListEveryProblem(t *testing.T) {
	r := testkit.Replay(t, record(t), "local")
	require.NoError(t, testkit.CheckIdentical(r))
	golden := filepath.Join(t.TempDir(), "sub", "state.golden")
	t.Run("update", func(t *testing.T) {
		setUpdate(t, true)
		require.NoError(t, testkit.CheckSnapshot(r, golden))
		assert.FileExists(t, golden)
	})
	require.NoError(t, testkit.CheckSnapshot(r, golden))

	// Spoil the sandbox: change a file, remove one, add one, make a file a directory, chmod.
	dir := r.Sandbox.Cwd()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "app/greeting.txt"), []byte("hello world\n"), 0o644))
	require.NoError(t, os.Remove(filepath.Join(dir, "app/count.txt")))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "extra.txt"), []byte("x"), 0o644))
	require.NoError(t, os.Chmod(filepath.Join(dir, "run.sh"), 0o600))
	require.NoError(t, os.Remove(filepath.Join(dir, "link")))
	require.NoError(t, os.Symlink("elsewhere", filepath.Join(dir, "link")))

	checkProblems(t, testkit.CheckFiles(r, map[string]string{
		"app/greeting.txt": "hello tapebox\n",
		"app/count.txt":    "2\n",
		"app":              "",
		"../escape":        "",
		"run.sh":           wantFiles["run.sh"],
	}), "CheckFiles",
		`../escape: not a slash-separated path relative to the working directory`,
		`app: a directory, want a regular file`,
		`app/count.txt: missing`,
		`app/greeting.txt: content "hello world\n", want "hello tapebox\n"`,
	)
	checkProblems(t, testkit.CheckSnapshot(r, golden), "CheckSnapshot",
		`app/count.txt: missing (golden: -rw-r--r--)`,
		`app/greeting.txt: content "hello world\n", want "hello tapebox\n"`,
		`extra.txt: unexpected -rw-r--r--`,
		`link: links to "elsewhere", want "app/greeting.txt"`,
		`run.sh: mode -rw-------, want -rwxr-xr-x`,
		`(golden file `+golden+`; if the new state is right, regenerate it with go test -update (or TAPEBOX_UPDATE=1 go test))`,
	)

	// Spoil the replay tape: a different tool result, and a replay cut before its last step.
	var spoiled testkit.Result = *r
	spoiled.Tape = cloneTape(t, r.Tape)
	main := spoiled.Tape.Main()
	main.Steps[3].ToolResults[0].Content[0].Text = "something else"
	main.Steps = main.Steps[:len(main.Steps)-1]
	spoiled.Err = errors.New("executor session ended")
	checkProblems(t, testkit.CheckReachedEnd(&spoiled), "CheckReachedEnd",
		"the replay stopped: executor session ended",
		"the replay did not reach the end: 6 of 7 steps played, ended complete",
	)
	err := testkit.CheckIdentical(&spoiled)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "the replay did not reach the end")
	assert.Contains(t, err.Error(), `thread main step 3 call`)
	assert.Contains(t, err.Error(), `replayed "something else"`)

	for name, check := range map[string]func(*testkit.Result) error{
		"CheckReachedEnd": testkit.CheckReachedEnd, "CheckIdentical": testkit.CheckIdentical,
		"CheckFiles":    func(r *testkit.Result) error { return testkit.CheckFiles(r, wantFiles) },
		"CheckSnapshot": func(r *testkit.Result) error { return testkit.CheckSnapshot(r, golden) },
	} {
		assert.ErrorContains(t, check(nil), "testkit."+name+": 1 problem:", "a nil result is a problem, not a panic")
	}
	var missing testkit.Result = *r
	assert.ErrorContains(t, testkit.CheckSnapshot(&missing, filepath.Join(t.TempDir(), "none.golden")), "create it with go test -update")
}

func checkProblems(t *testing.T, err error, check string, want ...string) {
	t.Helper()
	var ce *testkit.CheckError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, check, ce.Check)
	assert.Equal(t, want, ce.Problems)
	assert.True(t, strings.HasPrefix(err.Error(), "testkit."+check+": "), err.Error())
}

func cloneTape(t *testing.T, tp *tape.Tape) *tape.Tape {
	t.Helper()
	data, err := json.Marshal(tp)
	require.NoError(t, err)
	out, err := tape.Unmarshal(data)
	require.NoError(t, err)
	return out
}

// update is this test package's own -update flag, defined the usual way: testkit defines
// none, so the two do not collide (a second definition would panic at init), and
// testkit.Updating reads this one.
var update = flag.Bool("update", false, "rewrite golden files")

// setUpdate sets -update for the test.
func setUpdate(t *testing.T, on bool) {
	old := testkit.Updating()
	require.NoError(t, flagSet("update", on))
	t.Cleanup(func() { flagSet("update", old) })
}

func TestRunErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.json")
	require.NoError(t, os.WriteFile(bad, []byte(`{"version": 1, "meta": {}}`), 0o644))
	path := record(t)
	rec, err := tape.LoadFile(path)
	require.NoError(t, err)
	rec.Meta.Harness = "no-such-harness"
	unknown := filepath.Join(dir, "unknown-harness.json")
	require.NoError(t, tape.Save(unknown, rec))

	tests := []struct {
		name, tape, sandbox string
		want                string
		is                  error
	}{
		{"missing tape", filepath.Join(dir, "none.json"), "local", "no such file", nil},
		{"invalid tape", bad, "local", "is not a valid tape", nil},
		{"bad sandbox", path, "local:", "bad sandbox spec", sandbox.ErrBadSpec},
		{"unknown harness", unknown, "local", "no-such-harness", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := testkit.Run(t.Context(), tt.tape, tt.sandbox)
			require.Error(t, err)
			assert.Nil(t, r)
			assert.Contains(t, err.Error(), tt.want)
			if tt.is != nil {
				assert.ErrorIs(t, err, tt.is)
			}
		})
	}
}

func flagSet(name string, on bool) error { return flag.Set(name, strconv.FormatBool(on)) }

// TestUpdatingFromEnvironment: without the flag set, TAPEBOX_UPDATE=1 asks for rewriting.
func TestUpdatingFromEnvironment(t *testing.T) {
	require.False(t, *update)
	t.Setenv("TAPEBOX_UPDATE", "")
	require.False(t, testkit.Updating())
	t.Setenv("TAPEBOX_UPDATE", "1")
	require.True(t, testkit.Updating())
}

// TestFileChecksNeedASandbox: the checks that read the sandbox's files fail, naming
// themselves, on a Result without one.
func TestFileChecksNeedASandbox(t *testing.T) {
	err := testkit.CheckFiles(nil, map[string]string{"a": "b"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "CheckFiles")
	assert.Contains(t, err.Error(), "no sandbox to check (a nil Result)")
	err = testkit.CheckSnapshot(&testkit.Result{}, filepath.Join(t.TempDir(), "golden.json"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "CheckSnapshot")
	assert.Contains(t, err.Error(), "no sandbox to check (a nil Result)")
}

// CheckSnapshot leaves .git out by default (an agent's commit changes it on every run) and
// what Exclude names; NoDefaultExclude keeps .git. A change in an excluded path is not a
// problem, a change anywhere else still is.
func TestSnapshotExclude(t *testing.T) {
	r := testkit.Replay(t, record(t), "local")
	require.NoError(t, testkit.CheckIdentical(r))
	dir := r.Sandbox.Cwd()
	for name, data := range map[string]string{".git/HEAD": "ref: refs/heads/main\n", "build/out.o": "obj", "notes.log": "x"} {
		require.NoError(t, os.MkdirAll(filepath.Join(dir, filepath.Dir(name)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644))
	}
	golden := filepath.Join(t.TempDir(), "state.golden")
	excl := []testkit.SnapshotOption{testkit.Exclude("build", "*.log")}
	t.Run("update", func(t *testing.T) {
		setUpdate(t, true)
		require.NoError(t, testkit.CheckSnapshot(r, golden, excl...))
	})
	b, err := os.ReadFile(golden)
	require.NoError(t, err)
	var g struct {
		Files map[string]any `json:"files"`
	}
	require.NoError(t, json.Unmarshal(b, &g))
	assert.Contains(t, g.Files, "app/greeting.txt")
	for name := range g.Files {
		assert.False(t, strings.HasPrefix(name, ".git") || strings.HasPrefix(name, "build") || strings.HasSuffix(name, ".log"), "%s is in the golden file", name)
	}

	require.NoError(t, os.WriteFile(filepath.Join(dir, ".git/HEAD"), []byte("ref: refs/heads/other\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "build/out.o"), []byte("other"), 0o644))
	require.NoError(t, testkit.CheckSnapshot(r, golden, excl...), "changes in excluded paths")
	checkProblems(t, testkit.CheckSnapshot(r, golden), "CheckSnapshot",
		`build: unexpected drwxr-xr-x`, `build/out.o: unexpected -rw-r--r--`, `notes.log: unexpected -rw-r--r--`,
		`(golden file `+golden+`; if the new state is right, regenerate it with go test -update (or TAPEBOX_UPDATE=1 go test))`)
	err = testkit.CheckSnapshot(r, golden, append(excl, testkit.NoDefaultExclude())...)
	require.Error(t, err)
	assert.Contains(t, err.Error(), ".git/HEAD: unexpected -rw-r--r--")
}
