package e2e

// What the real-harness tests share: the tapebox binaries they drive, the environment a real
// harness runs in, processes in their own groups, end states, and reading the tool results a
// harness sent straight from its requests (independently of the gateway's parser).

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/compare"
	"github.com/tapebox/tapebox/controller"
	"github.com/tapebox/tapebox/executor/harness"
	"github.com/tapebox/tapebox/internal/testutil/dockertest"
	"github.com/tapebox/tapebox/internal/testutil/realharness"
	"github.com/tapebox/tapebox/match"
	"github.com/tapebox/tapebox/sandbox"
	"github.com/tapebox/tapebox/tape"
	"github.com/tapebox/tapebox/testkit/fakeprovider"
)

// rig builds the tapebox binary once per top-level test, with tapebox-exec-<arch> beside it
// so that replays find the executor the way a release does.
type rig struct {
	dir  string
	once sync.Once
	bin  string
	err  error
}

// newRig takes the machine-wide lock of the real-harness tests (their working directories
// are fixed absolute paths, so two go test processes must not run them at once) and returns
// a rig whose binaries are built on first use.
func newRig(t *testing.T) *rig {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(os.TempDir(), "tapebox-real-harnesses.lock"), os.O_CREATE|os.O_RDWR, 0o644)
	require.NoError(t, err)
	deadline := time.Now().Add(10 * time.Minute)
	for syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) != nil {
		if time.Now().After(deadline) {
			f.Close()
			t.Fatal("another go test process held the real-harness lock for 10 minutes")
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Cleanup(func() { f.Close() })
	return &rig{dir: t.TempDir()}
}

// tapebox returns the path of the built tapebox binary.
func (r *rig) tapebox(t *testing.T) string {
	t.Helper()
	r.once.Do(func() {
		bin := filepath.Join(r.dir, "tapebox")
		build := func(env []string, out, pkg string) error {
			cmd := exec.Command("go", "build", "-o", out, pkg)
			cmd.Env = append(os.Environ(), env...)
			if b, err := cmd.CombinedOutput(); err != nil {
				return fmt.Errorf("go build %s: %v\n%s", pkg, err, b)
			}
			return nil
		}
		if r.err = build(nil, bin, "github.com/tapebox/tapebox/cmd/tapebox"); r.err != nil {
			return
		}
		exe := filepath.Join(r.dir, sandbox.ExecutorName+"-"+runtime.GOARCH)
		if r.err = build([]string{"CGO_ENABLED=0", "GOOS=linux"}, exe, "github.com/tapebox/tapebox/cmd/tapebox-exec"); r.err != nil {
			return
		}
		r.bin = bin
	})
	if r.err != nil {
		t.Fatal(r.err)
	}
	return r.bin
}

// run runs tapebox with args in dir and returns its exit code, stdout and stderr. Unless env
// sets HOME, it gets an empty one, as the harnesses had: a local executor's login shell then
// reads no profile of this machine's user.
func (r *rig) run(t *testing.T, dir string, env []string, args ...string) (int, string, string) {
	t.Helper()
	if !slices.ContainsFunc(env, func(kv string) bool { return strings.HasPrefix(kv, "HOME=") }) {
		env = append(env, "HOME="+t.TempDir())
	}
	p := startProc(t, dir, env, r.tapebox(t), args...)
	code := p.wait(t, 5*time.Minute)
	return code, p.stdout(), p.stderr()
}

// needHarness and clipText are realharness's Need and Excerpt, under the names this
// package's tests use.
var (
	needHarness = realharness.Need
	clipText    = realharness.Excerpt
)

// cleanEnv is this process's environment without anything that would point a harness
// elsewhere or change its behaviour (credentials, base URLs, a parent Claude Code session),
// plus extra.
func cleanEnv(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		switch {
		case name == "HOME", name == "CLAUDECODE", name == "IS_SANDBOX", name == "TAPEBOX_GATEWAY_URL",
			strings.HasPrefix(name, "ANTHROPIC_"), strings.HasPrefix(name, "CLAUDE_"),
			strings.HasPrefix(name, "OPENAI_"), strings.HasPrefix(name, "CODEX_"),
			strings.HasSuffix(name, "_PROXY"), strings.HasSuffix(name, "_proxy"):
			continue
		}
		env = append(env, kv)
	}
	return append(env, extra...)
}

// proc is a command in its own process group, its output going to files (a background
// command the harness leaves behind must not hold a pipe open).
type proc struct {
	cmd        *exec.Cmd
	out, errf  string
	waited     bool
	exitCode   int
	waitResult chan error
}

func startProc(t *testing.T, dir string, env []string, name string, args ...string) *proc {
	t.Helper()
	logs := t.TempDir()
	p := &proc{out: filepath.Join(logs, "stdout"), errf: filepath.Join(logs, "stderr"), waitResult: make(chan error, 1)}
	stdout, err := os.Create(p.out)
	require.NoError(t, err)
	stderr, err := os.Create(p.errf)
	require.NoError(t, err)
	p.cmd = exec.Command(name, args...)
	p.cmd.Dir, p.cmd.Env = dir, env
	if dir != "" {
		// A harness that trusts $PWD (opencode does) works in dir, not where the test runs.
		p.cmd.Env = append(slices.Clip(env), "PWD="+dir)
	}
	p.cmd.Stdout, p.cmd.Stderr = stdout, stderr
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	require.NoError(t, p.cmd.Start(), "start %s", name)
	stdout.Close()
	stderr.Close()
	go func() { p.waitResult <- p.cmd.Wait() }()
	t.Cleanup(func() { p.kill() })
	return p
}

// wait waits for the process (at most limit, then kills its group and fails) and returns
// its exit code. Whatever it left running in its group is killed.
func (p *proc) wait(t *testing.T, limit time.Duration) int {
	t.Helper()
	if p.waited {
		return p.exitCode
	}
	select {
	case <-p.waitResult:
	case <-t.Context().Done():
		p.kill()
		<-p.waitResult
		t.Fatalf("%s: test ended while it ran\nstderr:\n%s", p.cmd.Path, clipText(p.stderr(), 4000))
	case <-time.After(limit):
		p.kill()
		<-p.waitResult
		t.Fatalf("%s did not finish in %v\nstdout:\n%s\nstderr:\n%s", p.cmd.Path, limit, clipText(p.stdout(), 4000), clipText(p.stderr(), 4000))
	}
	p.waited, p.exitCode = true, p.cmd.ProcessState.ExitCode()
	p.kill()
	return p.exitCode
}

func (p *proc) kill() {
	if p.cmd.Process != nil {
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	}
}

func (p *proc) stdout() string { b, _ := os.ReadFile(p.out); return string(b) }
func (p *proc) stderr() string { b, _ := os.ReadFile(p.errf); return string(b) }

// waitLine waits until the process's stderr holds a line containing prefix and returns the
// rest of that line after prefix.
func (p *proc) waitLine(t *testing.T, prefix string, limit time.Duration) string {
	t.Helper()
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		sc := bufio.NewScanner(strings.NewReader(p.stderr()))
		for sc.Scan() {
			if _, rest, ok := strings.Cut(sc.Text(), prefix); ok {
				return rest
			}
		}
		select {
		case <-p.waitResult:
			p.waited, p.exitCode = true, p.cmd.ProcessState.ExitCode()
			t.Fatalf("%s exited (%d) before printing %q\nstderr:\n%s", p.cmd.Path, p.exitCode, prefix, clipText(p.stderr(), 4000))
		case <-time.After(20 * time.Millisecond):
		}
	}
	t.Fatalf("%s printed no %q in %v\nstderr:\n%s", p.cmd.Path, prefix, limit, clipText(p.stderr(), 4000))
	return ""
}

// simulator starts tapebox replay in simulator mode on a free loopback port and returns the
// process and its base URL.
func (r *rig) simulator(t *testing.T, tapePath, output string, extra ...string) (*proc, string) {
	t.Helper()
	args := append([]string{"replay", "--tape", tapePath, "--listen", "127.0.0.1:0", "--output", output, "--speed", "0"}, extra...)
	p := startProc(t, t.TempDir(), cleanEnv(), r.tapebox(t), args...)
	addr := strings.Fields(p.waitLine(t, ") on http://", 30*time.Second))[0]
	addr = strings.TrimSuffix(addr, ";")
	if _, _, err := net.SplitHostPort(addr); err != nil {
		t.Fatalf("simulator address %q: %v", addr, err)
	}
	return p, "http://" + addr
}

// freshDir removes dir and creates it empty; the test removes it at the end. A local
// replay's executor keeps its state outside dir, at a path that is the same in every run:
// that goes too.
func freshDir(t *testing.T, dir string) {
	t.Helper()
	state := harness.DefaultStateDir(dir)
	require.NoError(t, os.RemoveAll(dir))
	require.NoError(t, os.RemoveAll(state))
	require.NoError(t, os.MkdirAll(dir, 0o755))
	t.Cleanup(func() {
		os.RemoveAll(dir)
		os.RemoveAll(state)
	})
}

// private names the entries of a working directory that are not the task's: the harnesses'
// own state. The executor keeps its state outside the working directory, so a replay's
// directory must hold what the recording's does and nothing more.
var private = map[string]bool{".claude": true, ".codex": true}

// endState reads the files under a sandbox's cwd: path -> contents, directories as "path/"
// -> "", symbolic links as "path@" -> target; private entries are left out.
func endState(ctx context.Context, t *testing.T, sb *sandbox.Sandbox) map[string]string {
	t.Helper()
	snap, err := sb.Snapshot(ctx, sb.Cwd())
	require.NoError(t, err)
	out := map[string]string{}
	for p, f := range snap {
		if private[strings.Split(p, "/")[0]] {
			continue
		}
		switch {
		case f.Mode.IsDir():
			out[p+"/"] = ""
		case f.Mode&fs.ModeSymlink != 0:
			out[p+"@"] = f.Link
		default:
			out[p] = string(f.Data)
		}
	}
	return out
}

// localState is endState of a directory on this machine.
func localState(t *testing.T, dir string) map[string]string {
	t.Helper()
	sb, err := sandbox.Open(t.Context(), "local:"+dir, sandbox.Options{})
	require.NoError(t, err)
	defer sb.Close(context.WithoutCancel(t.Context()))
	return endState(t.Context(), t, sb)
}

// requireIdentical runs tapebox compare on the two tapes and fails with its report unless
// it says identical (exit 0); the report of compare.Compare must agree.
func (r *rig) requireIdentical(t *testing.T, recPath, repPath string) *compare.Report {
	t.Helper()
	code, out, errOut := r.run(t, t.TempDir(), cleanEnv(), "compare", recPath, repPath)
	rec, err := tape.LoadFile(recPath)
	require.NoError(t, err)
	rep, err := tape.LoadFile(repPath)
	require.NoError(t, err)
	report := compare.Compare(rec, rep)
	if code != 0 || !report.Identical {
		t.Fatalf("tapebox compare %s %s: exit %d (compare.Compare identical=%v)\n%s%s", filepath.Base(recPath), filepath.Base(repPath), code, report.Identical, out, errOut)
	}
	checkMutationsCaught(t, rec, rep)
	return report
}

// compareText is what tapebox compare says about two tapes, for a failure message.
func (r *rig) compareText(t *testing.T, recPath, repPath string) string {
	t.Helper()
	code, out, errOut := r.run(t, t.TempDir(), cleanEnv(), "compare", recPath, repPath)
	return fmt.Sprintf("tapebox compare %s %s: exit %d\n%s%s", filepath.Base(recPath), filepath.Base(repPath), code, out, errOut)
}

// dockerReplay replays a tape in executor mode in a fresh container of the sandbox image,
// with the same code path as tapebox replay --sandbox docker-image:IMAGE --cwd CWD [--user
// USER], and returns the replay tape's path and the container's end state.
func dockerReplay(t *testing.T, recPath string, rec *tape.Tape, cwd, user string) (string, map[string]string) {
	t.Helper()
	dockertest.Image(t, "tapebox/sandbox:bookworm")
	snapshot, err := controller.SnapshotFor(recPath, rec)
	require.NoError(t, err)
	ctx := t.Context()
	sb, err := sandbox.Open(ctx, "docker-image:tapebox/sandbox:bookworm", sandbox.Options{Cwd: cwd, InstallExecutor: true, User: user})
	require.NoError(t, err)
	defer sb.Close(context.WithoutCancel(ctx))
	out := filepath.Join(t.TempDir(), "replay-docker.json")
	res, err := controller.Replay(ctx, rec, sb, controller.Options{Cwd: sb.Cwd(), Speed: 0, Output: out, Logf: t.Logf, Snapshot: snapshot})
	if err != nil {
		rep, lerr := tape.LoadFile(out)
		if lerr == nil {
			var b strings.Builder
			compare.Compare(rec, rep).WriteText(&b)
			t.Fatalf("replay in docker: %v\n%s", err, b.String())
		}
		t.Fatalf("replay in docker: %v", err)
	}
	t.Logf("docker replay: %d steps, %d tool calls, %d identifiers learned, %v", res.Steps, res.ToolCalls, len(res.Identifiers), res.Wall.Round(time.Millisecond))
	return out, endState(ctx, t, sb)
}

// checkSameState marks the test failed, listing the differences, unless two end states are
// the same. It does not stop the test, so that a compare report can follow.
func checkSameState(t *testing.T, want, got map[string]string, what string) {
	t.Helper()
	var diffs []string
	for _, p := range sortedKeys(want, got) {
		w, wok := want[p]
		g, gok := got[p]
		switch {
		case !gok:
			diffs = append(diffs, fmt.Sprintf("%s: missing (want %q)", p, clipText(w, 200)))
		case !wok:
			diffs = append(diffs, fmt.Sprintf("%s: unexpected (%q)", p, clipText(g, 200)))
		case w != g:
			diffs = append(diffs, fmt.Sprintf("%s: %q, want %q", p, clipText(g, 200), clipText(w, 200)))
		}
	}
	if len(diffs) > 0 {
		t.Errorf("%s: end state differs from the recording's:\n\t%s", what, strings.Join(diffs, "\n\t"))
	}
}

func sortedKeys(ms ...map[string]string) []string {
	seen := map[string]bool{}
	var keys []string
	for _, m := range ms {
		for k := range m {
			if !seen[k] {
				seen[k] = true
				keys = append(keys, k)
			}
		}
	}
	sort.Strings(keys)
	return keys
}

// sentResults reads the tool results of a request body, by call id, straight from the wire
// format (realharness.SentResults).
func sentResults(t *testing.T, p tape.Provider, body []byte) map[string]realharness.Sent {
	t.Helper()
	out, err := realharness.SentResults(p, body)
	require.NoError(t, err)
	return out
}

// afterResult is a turn the fake model makes from what the harness sent: next gets the text
// of call id's result in the request (of provider p); an error becomes the answer's text.
func afterResult(p tape.Provider, id string, next func(text string) (fakeprovider.Turn, error)) fakeprovider.Turn {
	return fakeprovider.Turn{Dynamic: func(q *fakeprovider.Request) fakeprovider.Turn {
		sent, err := realharness.SentResults(p, q.Body)
		if err == nil {
			var turn fakeprovider.Turn
			if turn, err = next(sent[id].Result.Text()); err == nil {
				return turn
			}
		}
		return fakeprovider.Turn{Text: "e2e: " + err.Error()}
	}}
}

// pollSession is Codex's turn after call id's command outlived its yield time: write_stdin
// to the session the harness named in the call's output, waiting up to 5 s.
func pollSession(id string) fakeprovider.Turn {
	return afterResult(tape.ProviderOpenAIResponses, id, func(text string) (fakeprovider.Turn, error) {
		m := codexSession.FindStringSubmatch(text)
		if m == nil {
			return fakeprovider.Turn{}, fmt.Errorf("no session id in %s", text)
		}
		return fakeprovider.Turn{Calls: []tape.ToolCall{fakeprovider.Call("write_stdin", map[string]any{"session_id": jsonNumber(m[1]), "chars": "", "yield_time_ms": 5000})}}, nil
	})
}

// requireResultsAsSent checks every tool result of the tape against what the harness sent
// the fake provider for that call (the first request carrying it), and that every tool
// call but those of a thread's last step has a result. It returns how many results it
// checked.
func requireResultsAsSent(t *testing.T, rec *tape.Tape, srv *fakeprovider.Server) int {
	t.Helper()
	sent := map[string]realharness.Sent{}
	for _, r := range srv.Requests() {
		if r.Endpoint != fakeprovider.EndpointMessages && r.Endpoint != fakeprovider.EndpointResponses {
			continue
		}
		for id, res := range sentResults(t, rec.Meta.Provider, r.Body) {
			if _, ok := sent[id]; !ok {
				sent[id] = res
			}
		}
	}
	n := 0
	for _, th := range rec.Threads {
		for i, st := range th.Steps {
			byID := map[string]tape.ToolResult{}
			for _, res := range st.ToolResults {
				byID[res.ToolCallID] = res
			}
			for _, c := range st.ToolCalls {
				want, ok := sent[c.ID]
				got, have := byID[c.ID]
				if !ok {
					require.False(t, have, "thread %s step %d: the tape has a result for %s %s the harness never sent", th.ID, i, c.Name, c.ID)
					require.Equal(t, len(th.Steps)-1, i, "thread %s step %d: the harness sent no result for %s %s", th.ID, i, c.Name, c.ID)
					continue
				}
				require.True(t, have, "thread %s step %d: the tape lacks the result of %s %s: %q", th.ID, i, c.Name, c.ID, clipText(want.Result.Text(), 300))
				require.Equal(t, want.Result.Text(), got.Text(), "thread %s step %d: result of %s %s", th.ID, i, c.Name, c.ID)
				if rec.Meta.Provider == tape.ProviderAnthropic {
					require.Equal(t, want.Result.IsError, got.IsError, "thread %s step %d: is_error of %s %s", th.ID, i, c.Name, c.ID)
				}
				n++
			}
		}
	}
	return n
}

// checkServedIdentifiers marks the test failed for every tool call a simulator served that
// still carries a recorded identifier the run replaced with its own (a task id, a session
// id, a path the harness made up): once the simulator has learned that the run's id stands
// for the recorded one, the harness must get its own id back. It does not stop the test.
func checkServedIdentifiers(t *testing.T, rec, rep *tape.Tape) {
	t.Helper()
	ids := compare.Compare(rec, rep).Identifiers
	for _, th := range rep.Threads {
		for i, st := range th.Steps {
			for _, c := range st.ToolCalls {
				for _, l := range ids {
					recorded, own := l.Recorded, l.Replayed
					if recorded != own && match.ContainsID(string(c.Input), recorded) {
						t.Errorf("thread %s step %d: the simulator served %s %s with the recorded identifier %q; this run's is %q (input %s)",
							th.ID, i, c.Name, c.ID, recorded, own, clipText(string(c.Input), 300))
					}
				}
			}
		}
	}
}

// callsOf lists a tape's tool calls as "thread/step name", thread by thread.
func callsOf(rec *tape.Tape) []string {
	var out []string
	for _, th := range rec.Threads {
		for i, st := range th.Steps {
			for _, c := range st.ToolCalls {
				out = append(out, fmt.Sprintf("%s/%d %s", th.ID, i, c.Name))
			}
		}
	}
	return out
}

// copyFile copies a file (a tape kept beside the test's logs).
func copyFile(t *testing.T, from, to string) {
	t.Helper()
	in, err := os.Open(from)
	require.NoError(t, err)
	defer in.Close()
	out, err := os.Create(to)
	require.NoError(t, err)
	_, err = io.Copy(out, in)
	require.NoError(t, err)
	require.NoError(t, out.Close())
}

// tail is the last n bytes of s.
func tail(s string, n int) string {
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}

// replayUser is the user a replay of c runs as in a container: "" (the default, nobody) but
// for a repository case. A repository's files belong to the user who recorded (this test's
// user), and the tools show owners (ls -l), so its replay runs as that user, as anyone
// replaying such a tape gives --user.
func (c realCase) replayUser() string {
	if c.repo == nil {
		return ""
	}
	return fmt.Sprintf("%d:%d", os.Getuid(), os.Getgid())
}
