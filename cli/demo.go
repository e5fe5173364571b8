package cli

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/tapebox/tapebox/gateway"
	"github.com/tapebox/tapebox/replay"
	"github.com/tapebox/tapebox/sandbox"
	"github.com/tapebox/tapebox/tape"
	"github.com/tapebox/tapebox/testkit/fakeprovider"
	"github.com/tapebox/tapebox/testkit/miniagent"
)

func init() {
	register(&command{name: "demo", summary: "record a scripted agent run and replay it (no model, no Docker needed)", run: runDemo})
}

// demoScript is the scripted model of the demo: parallel calls, a subagent, a failing command.
func demoScript() fakeprovider.Script {
	bash := func(cmd string) tape.ToolCall {
		return fakeprovider.Call("Bash", map[string]string{"command": cmd})
	}
	return fakeprovider.Script{Threads: []fakeprovider.Thread{
		{Name: "main", Turns: []fakeprovider.Turn{
			{Text: "I'll set up the project and look at the machine.", Calls: []tape.ToolCall{
				bash("mkdir -p app && printf 'hello tapebox\\n' > app/greeting.txt && echo created app/greeting.txt"),
				bash("uname -s"),
			}},
			{Text: "A helper will count the words.", Calls: []tape.ToolCall{fakeprovider.Call("Agent", map[string]string{
				"description": "count words", "prompt": "SUBTASK: count the words in app/greeting.txt and write the count to app/count.txt",
			})}},
			{Calls: []tape.ToolCall{bash("test -f app/missing.txt || { echo 'app/missing.txt is not there'; exit 1; }")}},
			{Calls: []tape.ToolCall{bash("cat app/greeting.txt app/count.txt && ls app")}},
			{Text: "Done: app/ holds greeting.txt and count.txt."},
		}},
		{Name: "sub", Marker: "SUBTASK:", Turns: []fakeprovider.Turn{
			{Calls: []tape.ToolCall{bash("wc -w < app/greeting.txt | tr -d ' ' > app/count.txt && cat app/count.txt")}},
			{Text: "Wrote the count (2) to app/count.txt."},
		}},
	}}
}

func runDemo(ctx context.Context, env *Env, args []string) int {
	fs := newFlagSet(env, "demo", "[--out DIR] [--docker-image IMAGE]", `
The main job end to end, with nothing but this binary: a scripted fake provider (a real HTTP
server) and a small real agent (tapebox-mini: runs its Bash calls for real, runs two calls in
parallel, delegates to a subagent) record a run through the gateway into DIR/run.json. The tape is
then replayed in executor mode without a model on the local sandbox (DIR/replay-local.json), and,
when a Docker engine answers and IMAGE exists, in a fresh container (DIR/replay-docker.json).
It prints the inspect summary and the compare verdicts, and checks that each sandbox ends in the
same files as the recording's working directory.`)
	out := fs.String("out", "demo-out", "directory for the tapes and working directories (replaced)")
	image := fs.String("docker-image", "tapebox/sandbox:bookworm", "image for the container replay; \"\" skips it")
	if code, done := parse(env, fs, args); done {
		return code
	}
	say := func(format string, args ...any) { fmt.Fprintf(env.Stdout, format+"\n", args...) }
	abs, err := filepath.Abs(*out)
	if err != nil {
		return failf(env, "demo", "%v", err)
	}
	if err := os.RemoveAll(abs); err != nil {
		return failf(env, "demo", "clean %s: %v", abs, err)
	}
	recordDir := filepath.Join(abs, "record-work")
	if err := os.MkdirAll(recordDir, 0o755); err != nil {
		return failf(env, "demo", "%v", err)
	}
	// The agent works on a directory that already holds a file: the tape carries it (a start
	// snapshot beside the tape) and its end state, which every replay restores and checks.
	if err := os.WriteFile(filepath.Join(recordDir, "README.md"), []byte("A demo workspace: the agent adds app/.\n"), 0o644); err != nil {
		return failf(env, "demo", "%v", err)
	}
	runPath := filepath.Join(abs, "run.json")

	// 1. Record.
	say("== 1. record: tapebox-mini -> gateway -> scripted provider")
	fp := fakeprovider.New(demoScript())
	if err := fp.Start(); err != nil {
		return failf(env, "demo", "%v", err)
	}
	defer fp.Close()
	// The tape names its working directory (meta.cwd), as tapebox record's do: a replay in a
	// container works there, never in the image's own working directory.
	g, err := gateway.New(gateway.Config{Output: runPath, Upstream: fp.URL(), Harness: "claude-code", Cwd: recordDir,
		Task: map[string]string{"id": "demo"}, Labels: map[string]string{"agent": "tapebox-mini"}, Workspace: recordDir})
	if err != nil {
		return failf(env, "demo", "%v", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return failf(env, "demo", "%v", err)
	}
	srv := &http.Server{Handler: g, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	final, err := miniagent.Run(ctx, miniagent.Config{BaseURL: "http://" + ln.Addr().String(), Provider: tape.ProviderAnthropic,
		Stream: true, Prompt: "Set up app/ with a greeting and its word count.", Dir: recordDir, APIKey: "sk-demo-placeholder"})
	srv.Close()
	if err != nil {
		g.Finish(tape.EndError, err.Error())
		return failf(env, "demo", "record: %v", err)
	}
	reason, detail := g.Outcome()
	if err := g.Finish(reason, detail); err != nil {
		return failf(env, "demo", "%v", err)
	}
	say("agent's final answer: %s", final)
	say("")
	if code := RunEnv(ctx, []string{"inspect", runPath}, env); code != ExitOK {
		return failf(env, "demo", "inspect %s failed", runPath)
	}
	rec, code := loadValidTape(env, "demo", runPath)
	if rec == nil {
		return code
	}
	want, err := snapshotDir(ctx, "local:"+recordDir)
	if err != nil {
		return failf(env, "demo", "%v", err)
	}

	// 2. Replay locally, 3. in Docker.
	ok := demoReplay(ctx, say, rec, runPath, "local:"+filepath.Join(abs, "replay-local"), filepath.Join(abs, "replay-local.json"), want)
	if *image != "" {
		sb, err := sandbox.Open(ctx, "docker-image:"+*image, sandbox.Options{InstallExecutor: true})
		if err != nil {
			say("\n== 3. replay in Docker: skipped (%v)", firstLine(err.Error()))
		} else {
			sb.Close(ctx)
			ok = demoReplay(ctx, say, rec, runPath, "docker-image:"+*image, filepath.Join(abs, "replay-docker.json"), want) && ok
		}
	}
	say("\ntapes: %s (recording), %s/replay-*.json (replays)", runPath, abs)
	if !ok {
		return ExitFailure
	}
	return ExitOK
}

// demoReplay replays rec in one sandbox (replay.Open, Play), prints compare's report and
// checks the sandbox's end state against the recording's working directory.
func demoReplay(ctx context.Context, say func(string, ...any), rec *tape.Tape, tapePath, spec, output string, want map[string]sandbox.File) bool {
	say("\n== replay in %s (executor mode, --speed 0)", spec)
	r, err := replay.Open(ctx, rec, spec, replay.Options{TapePath: tapePath, Output: output, Compare: true})
	if err != nil {
		say("FAILED: %v", err)
		return false
	}
	defer r.Close(context.WithoutCancel(ctx))
	res, err := r.Play(ctx)
	if err != nil {
		say("FAILED: %v", err)
		return false
	}
	say("%d steps, %d tool calls in %v", res.Steps, res.ToolCalls, res.Wall.Round(time.Millisecond))
	var buf bytes.Buffer
	res.Report.WriteText(&buf)
	say("%s", strings.TrimRight(buf.String(), "\n"))
	sb := r.Sandbox()
	got, err := sb.Snapshot(ctx, sb.Cwd())
	if err != nil {
		say("end state: FAILED to read: %v", err)
		return false
	}
	diffs := diffFiles(want, got)
	if len(diffs) == 0 {
		say("end state: the same %d files as the recording", countFiles(want))
	} else {
		say("end state DIFFERS:\n  %s", strings.Join(diffs, "\n  "))
	}
	return res.Identical() && len(diffs) == 0
}

func snapshotDir(ctx context.Context, spec string) (map[string]sandbox.File, error) {
	sb, err := sandbox.Open(ctx, spec, sandbox.Options{})
	if err != nil {
		return nil, err
	}
	defer sb.Close(ctx)
	return sb.Snapshot(ctx, sb.Cwd())
}

// diffFiles compares two snapshots.
func diffFiles(want, got map[string]sandbox.File) []string {
	var out []string
	for p, w := range want {
		g, ok := got[p]
		switch {
		case !ok:
			out = append(out, p+": missing")
		case w.Mode.Type() != g.Mode.Type():
			out = append(out, fmt.Sprintf("%s: type %v, want %v", p, g.Mode.Type(), w.Mode.Type()))
		case !bytes.Equal(w.Data, g.Data):
			out = append(out, fmt.Sprintf("%s: content %q, want %q", p, clipBytes(g.Data), clipBytes(w.Data)))
		}
	}
	for p := range got {
		if _, ok := want[p]; !ok {
			out = append(out, p+": unexpected")
		}
	}
	slices.Sort(out)
	return out
}

func countFiles(m map[string]sandbox.File) int {
	n := 0
	for _, f := range m {
		if f.Mode.IsRegular() {
			n++
		}
	}
	return n
}

func clipBytes(b []byte) string {
	if len(b) > 60 {
		return string(b[:60]) + "…"
	}
	return string(b)
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}
