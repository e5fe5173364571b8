package replay_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/internal/testutil/dockertest"
	"github.com/tapebox/tapebox/replay"
	"github.com/tapebox/tapebox/sandbox"
	_ "github.com/tapebox/tapebox/sandbox/all"
	"github.com/tapebox/tapebox/tape"
	"github.com/tapebox/tapebox/testkit"
	"github.com/tapebox/tapebox/testkit/miniagent"
)

// TestCwd is the one rule for the working directory of a replay, every caller's.
func TestCwd(t *testing.T) {
	tests := []struct {
		name    string
		spec    string
		flag    *string // Options.Cwd when CwdSet
		metaCwd string
		want    string
		says    string // in the line it logs; "" when it logs none
	}{
		{"docker-image: meta.cwd", "docker-image:img", nil, "/tmp/tapebox-e2e-claude", "/tmp/tapebox-e2e-claude", "where the tape was recorded"},
		{"docker: meta.cwd", "docker:box", nil, "/work", "/work", "where the tape was recorded"},
		{"k8s: meta.cwd", "k8s:ns?image=img", nil, "/work", "/work", "where the tape was recorded"},
		{"--cwd wins", "docker-image:img", ptr("/app"), "/work", "/app", ""},
		{"--cwd empty keeps the container's", "docker-image:img", ptr(""), "/work", "", ""},
		{"no meta.cwd: a fresh /workspace", "docker-image:img", nil, "", replay.DefaultCwd, "no meta.cwd"},
		{"no meta.cwd in a pod", "k8s:ns?image=img", nil, "", replay.DefaultCwd, "no meta.cwd"},
		{"no meta.cwd in an existing container", "docker:box", nil, "", replay.DefaultCwd, "no meta.cwd"},
		{"meta.cwd not absolute", "docker-image:img", nil, `C:\Users\dev\app`, replay.DefaultCwd, "not an absolute path"},
		{"meta.cwd relative", "docker-image:img", nil, "app", replay.DefaultCwd, "not an absolute path"},
		{"local: meta.cwd does not apply", "local:/tmp/x", nil, "/work", "", ""},
		{"unsafe-local: meta.cwd does not apply", "unsafe-local:/tmp/x", nil, "", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec, err := sandbox.ParseSpec(tt.spec)
			require.NoError(t, err)
			var logged []string
			o := replay.Options{Logf: func(format string, args ...any) { logged = append(logged, fmt.Sprintf(format, args...)) }}
			if tt.flag != nil {
				o.Cwd, o.CwdSet = *tt.flag, true
			}
			got := replay.Cwd(spec, &tape.Tape{Meta: tape.Meta{Cwd: tt.metaCwd}}, o)
			assert.Equal(t, tt.want, got)
			if tt.says == "" {
				assert.Empty(t, logged)
				return
			}
			require.Len(t, logged, 1, "a replay says which directory it picked and why")
			assert.Contains(t, logged[0], tt.says)
			assert.Contains(t, logged[0], got)
		})
	}
}

func ptr[T any](v T) *T { return &v }

// TestSandboxOptions: the executor is installed into every sandbox TapeBox creates, into an
// existing container only when asked, and never when the image names its own executor.
func TestSandboxOptions(t *testing.T) {
	tests := []struct {
		spec   string
		given  sandbox.Options
		wantIn bool
	}{
		{"docker-image:img", sandbox.Options{}, true},
		{"k8s:ns?image=img", sandbox.Options{}, true},
		{"docker:box", sandbox.Options{}, false},
		{"docker:box", sandbox.Options{InstallExecutor: true}, true},
		{"local:/tmp/x", sandbox.Options{}, false},
		{"unsafe-local:/tmp/x", sandbox.Options{}, false},
		{"docker-image:img", sandbox.Options{SandboxExecutor: "/opt/bin/tapebox-exec"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.spec+fmt.Sprint(tt.given.InstallExecutor, tt.given.SandboxExecutor), func(t *testing.T) {
			spec, err := sandbox.ParseSpec(tt.spec)
			require.NoError(t, err)
			env := map[string]string{"A": "1"}
			so := replay.SandboxOptions(spec, &tape.Tape{Meta: tape.Meta{Cwd: "/w"}}, replay.Options{Sandbox: tt.given, Env: env})
			assert.Equal(t, tt.wantIn, so.InstallExecutor)
			assert.Equal(t, env, so.Env, "the executor's environment reaches the sandbox")
			if spec.Scheme != sandbox.SchemeLocal {
				assert.Equal(t, "/w", so.Cwd)
			}
		})
	}
}

// recordWithWorkspace records a small agent run through the gateway in a directory that
// holds a README.md, so that the tape carries a start snapshot, and returns the tape's path.
// The tape does not name its working directory (the mini agent's requests do not say it).
func recordWithWorkspace(t *testing.T) string {
	t.Helper()
	script := testkit.Script{Threads: []testkit.Thread{{Name: "main", Turns: []testkit.Turn{
		{Calls: []tape.ToolCall{testkit.Call("Bash", map[string]string{"command": "cat README.md && mkdir -p app && echo made > app/made.txt && ls"})}},
		{Text: "Made it."},
	}}}}
	p := testkit.NewProvider(t, script)
	work := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(work, "README.md"), []byte("read me\n"), 0o644))
	g := testkit.NewGateway(t, p.URL(), testkit.Harness("claude-code"), testkit.Workspace(work))
	_, err := miniagent.Run(t.Context(), miniagent.Config{BaseURL: g.URL, Provider: tape.ProviderAnthropic, Stream: true,
		Prompt: "make it", Dir: work, APIKey: "sk-test-placeholder"})
	require.NoError(t, err)
	rec, err := g.Finish()
	require.NoError(t, err)
	require.NotNil(t, rec.Meta.Workspace)
	require.NotEmpty(t, rec.Meta.Workspace.Snapshot)
	return g.Path
}

// logLines collects log lines from several goroutines.
type logLines struct {
	mu    sync.Mutex
	lines []string
}

func (l *logLines) logf(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, fmt.Sprintf(format, args...))
}

func (l *logLines) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}

// TestRunLocal: the bare "local" spec is a fresh directory, removed at the end; the start
// snapshot is restored, the end state compared, the first result timed.
func TestRunLocal(t *testing.T) {
	path := recordWithWorkspace(t)
	rec, err := testkit.LoadTape(path)
	require.NoError(t, err)
	var log logLines
	res, err := replay.Run(t.Context(), rec, replay.LocalTemp, replay.Options{TapePath: path, Compare: true, Logf: log.logf})
	require.NoError(t, err, log.String())
	require.NotNil(t, res.Report)
	assert.True(t, res.Identical(), "%+v", res.Report)
	assert.True(t, res.Report.EndState.Compared, "the end state was compared")
	assert.Equal(t, 2, res.Steps)
	assert.Positive(t, res.Setup)
	assert.Positive(t, res.FirstResult)
	assert.Less(t, res.FirstResult, res.Wall+res.RestoreTime+1, "the first result comes within the replay")
	assert.NoDirExists(t, res.Cwd, "the fresh directory is removed at the end")
	assert.Equal(t, "read me", strings.SplitN(res.Tape.Threads[0].Steps[0].ToolResults[0].Text(), "\n", 2)[0])

	// A planted change in the snapshot's end state is named.
	rec.Meta.Workspace.End = slices.DeleteFunc(slices.Clone(rec.Meta.Workspace.End), func(e tape.FileEntry) bool { return e.Path == "app/made.txt" })
	res, err = replay.Run(t.Context(), rec, replay.LocalTemp, replay.Options{TapePath: path, Compare: true})
	require.NoError(t, err)
	assert.False(t, res.Identical(), "an end state that lacks app/made.txt differs")

	// Without the snapshot beside it, nothing opens.
	lone := filepath.Join(t.TempDir(), "lone.json")
	require.NoError(t, tape.Save(lone, rec))
	_, err = replay.Run(t.Context(), rec, replay.LocalTemp, replay.Options{TapePath: lone})
	assert.ErrorContains(t, err, "missing")
}

// TestRunDockerNoCwd: a tape that does not name its working directory replays in a fresh
// /workspace of a created container, with its snapshot there, identical to the recording;
// nothing of the image's root is restored into or compared. Asked to keep the image's own
// working directory (/), a replay of a tape with a workspace refuses.
func TestRunDockerNoCwd(t *testing.T) {
	_, image := dockertest.Image(t, dockertest.SandboxImage)
	path := recordWithWorkspace(t)
	rec, err := testkit.LoadTape(path)
	require.NoError(t, err)
	require.Empty(t, rec.Meta.Cwd, "the tape names no working directory")
	var log logLines
	res, err := replay.Run(t.Context(), rec, "docker-image:"+image, replay.Options{TapePath: path, Compare: true, Logf: log.logf})
	require.NoError(t, err, log.String())
	assert.Equal(t, replay.DefaultCwd, res.Cwd)
	assert.Contains(t, log.String(), "no meta.cwd): the tool calls run in a fresh /workspace")
	assert.True(t, res.Identical(), "%+v", res.Report)
	assert.True(t, res.Report.EndState.Compared)
	var ends []string
	for _, e := range res.Tape.Meta.Workspace.End {
		ends = append(ends, e.Path)
	}
	assert.Equal(t, []string{"README.md", "app", "app/made.txt"}, ends, "the end state is the workspace's, not the image's /")

	_, err = replay.Run(t.Context(), rec, "docker-image:"+image, replay.Options{TapePath: path, CwdSet: true, Cwd: ""})
	assert.ErrorContains(t, err, "root /")
	res, err = replay.Run(t.Context(), rec, "docker-image:"+image, replay.Options{TapePath: path, CwdSet: true, Cwd: "", NoWorkspace: true})
	require.NoError(t, err, "without the workspace the image's own directory is fine")
	assert.Equal(t, "/", res.Cwd)
}
