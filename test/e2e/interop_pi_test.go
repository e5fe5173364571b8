package e2e

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/internal/testutil/dockertest"
	"github.com/tapebox/tapebox/internal/testutil/realharness"
	"github.com/tapebox/tapebox/tape"
	"github.com/tapebox/tapebox/testkit/fakeprovider"
)

// TestInteropPiSimulator: the real pi coding agent works a task against the fake provider
// and writes its session file; tapebox import --from pi --synthesize turns that file into a
// tape, which the simulator then serves to the real Pi in a fresh folder: Pi makes the same
// tool call and ends in the same files, so an imported Pi session replays in simulator
// mode with Pi as the reader.
func TestInteropPiSimulator(t *testing.T) {
	needHarness(t, realharness.Pi)
	r := newRig(t)
	const cmd = "echo made > out.txt && echo printed"
	srv := fakeprovider.New(fakeprovider.Script{Threads: []fakeprovider.Thread{{
		Name:  "main",
		Turns: []fakeprovider.Turn{{Text: "Making it.", Calls: []tape.ToolCall{fakeprovider.Call("bash", map[string]any{"command": cmd})}}, {Text: "All done."}},
	}}})
	require.NoError(t, srv.Start())
	t.Cleanup(func() { _ = srv.Close() })
	const prompt = "[pi-sim] make the file"
	dir, home := t.TempDir(), t.TempDir()
	res, err := realharness.RunPi(t.Context(), realharness.Options{BaseURL: srv.URL(), Dir: dir, Home: home, Prompt: prompt})
	require.NoError(t, err)
	require.Equal(t, 0, res.ExitCode, "pi against the fake provider\n%s", clipText(string(res.Stderr), 2000))
	require.NoError(t, srv.Err())

	tapePath, imp := importSynthesized(t, r, "pi", filepath.Join(home, "sessions"))
	require.Equal(t, []string{"main/0 bash"}, callsOf(imp))

	repPath := filepath.Join(t.TempDir(), "replay-sim.json")
	sim, root := r.simulator(t, tapePath, repPath)
	fresh := t.TempDir()
	res, err = realharness.RunPi(t.Context(), realharness.Options{BaseURL: root, Dir: fresh, Home: t.TempDir(), Prompt: prompt})
	require.NoError(t, err)
	simCode := sim.wait(t, time.Minute)
	if res.ExitCode != 0 || simCode != 0 {
		t.Fatalf("pi against the simulator serving the imported tape: exit %d; simulator: exit %d\nsimulator log:\n%s\npi output (end):\n%s",
			res.ExitCode, simCode, clipText(sim.stderr(), 6000), tail(string(res.Stdout)+string(res.Stderr), 1500))
	}
	got, err := os.ReadFile(filepath.Join(fresh, "out.txt"))
	require.NoError(t, err)
	assert.Equal(t, "made\n", string(got), "Pi, served the imported tape, ran its call again")
	rep, err := tape.LoadFile(repPath)
	require.NoError(t, err)
	assert.Equal(t, callsOf(imp), callsOf(rep), "Pi made the imported tape's tool calls")
}

// piFullOutput finds the file Pi keeps a truncated bash output in.
var piFullOutput = regexp.MustCompile(`/tmp/pi-bash-[0-9a-f]{16}\.log`)

// TestInteropPiExecutor: the real pi coding agent works a task against the fake provider
// with each of the tools the executor performs for it (write, then edit and bash in one
// answer, which Pi runs together, then read, ls and grep, a bash whose output Pi truncates and a
// read of the file Pi kept it in, and a failing bash), and writes its session
// file; tapebox import --from pi turns that file into a tape, which replays in executor mode
// in a fresh Docker container: the container ends in Pi's files and compare says
// identical. The same tape with one tool result edited replays to DIFFERS, naming it.
func TestInteropPiExecutor(t *testing.T) {
	needHarness(t, realharness.Pi)
	dockertest.Image(t, "tapebox/sandbox:bookworm")
	r := newRig(t)
	call := fakeprovider.Call
	srv := fakeprovider.New(fakeprovider.Script{Threads: []fakeprovider.Thread{{
		Name: "main",
		Turns: []fakeprovider.Turn{
			{Text: "Writing the notes.", Calls: []tape.ToolCall{call("write", map[string]any{"path": "notes.txt", "content": "alpha\nbeta\n"})}},
			{Calls: []tape.ToolCall{
				call("edit", map[string]any{"path": "notes.txt", "edits": []any{map[string]any{"oldText": "beta", "newText": "BETA"}}}),
				call("bash", map[string]any{"command": "mkdir -p sub && echo made > sub/out.txt && echo printed"}),
			}},
			{Calls: []tape.ToolCall{call("read", map[string]any{"path": "notes.txt"}), call("ls", map[string]any{}), call("grep", map[string]any{"pattern": "BETA|made"})}},
			{Calls: []tape.ToolCall{call("bash", map[string]any{"command": "seq 1 3000"})}},
			// The model reads the file Pi kept the whole output in, at the path Pi made up.
			{Dynamic: func(r *fakeprovider.Request) fakeprovider.Turn {
				path := piFullOutput.Find(r.Body)
				if path == nil {
					return fakeprovider.Turn{Text: "no full output file in the request"}
				}
				return fakeprovider.Turn{Calls: []tape.ToolCall{call("read", map[string]any{"path": string(path), "offset": 999, "limit": 2})}}
			}},
			{Calls: []tape.ToolCall{call("bash", map[string]any{"command": "cat notes.txt; exit 3"})}},
			{Text: "All done."},
		},
	}}})
	require.NoError(t, srv.Start())
	t.Cleanup(func() { _ = srv.Close() })
	dir, home := t.TempDir(), t.TempDir()
	res, err := realharness.RunPi(t.Context(), realharness.Options{BaseURL: srv.URL(), Dir: dir, Home: home,
		Prompt: "[pi-exec] write the notes", Args: []string{"--tools", "read,bash,edit,write,ls,grep"}})
	require.NoError(t, err)
	require.Equal(t, 0, res.ExitCode, "pi against the fake provider\n%s", clipText(string(res.Stderr), 2000))
	require.NoError(t, srv.Err())
	state := localState(t, dir)
	require.Equal(t, map[string]string{"notes.txt": "alpha\nBETA\n", "sub/": "", "sub/out.txt": "made\n"}, state, "what Pi left")

	imported := t.TempDir()
	code, out, errOut := r.run(t, t.TempDir(), cleanEnv(), "import", "--from", "pi", "--out", imported, filepath.Join(home, "sessions"))
	require.Equal(t, 0, code, "tapebox import --from pi\n%s%s", out, errOut)
	tapes, err := filepath.Glob(filepath.Join(imported, "*.json"))
	require.NoError(t, err)
	require.Len(t, tapes, 1)
	imp, err := tape.LoadFile(tapes[0])
	require.NoError(t, err)
	require.Equal(t, "pi", imp.Meta.Harness)
	require.Equal(t, []string{"main/0 write", "main/1 edit", "main/1 bash", "main/2 read", "main/2 ls", "main/2 grep", "main/3 bash", "main/4 read", "main/5 bash"}, callsOf(imp))
	require.Equal(t, "999\n1000\n\n[2001 more lines in file. Use offset=1001 to continue.]", imp.Main().Steps[4].ToolResults[0].Text(), "Pi read its own full output file")
	grep := imp.Main().Steps[2].ToolResults[2].Text()
	require.NotContains(t, grep, "not available", "Pi's grep runs ripgrep: install it (scripts/ci-setup.sh does)")
	require.ElementsMatch(t, []string{"notes.txt:2: BETA", "sub/out.txt:1: made"}, strings.Split(grep, "\n"), "Pi's grep, in ripgrep's order")
	last := imp.Main().Steps[5].ToolResults[0]
	require.True(t, last.IsError)
	require.Equal(t, "alpha\nBETA\n\n\nCommand exited with code 3", last.Text())

	// Executor mode in a fresh container, at the recording's path.
	repPath, got := dockerReplay(t, tapes[0], imp, dir, "")
	checkSameState(t, state, got, "executor-mode replay of the imported Pi session in docker")
	report := r.requireIdentical(t, tapes[0], repPath)
	assert.Equal(t, 7, report.StepsCompared, "every step compared")
	// The replay kept the output in a file of its own and read that one: the path is an
	// identifier, learned from the harness table's field.
	require.Len(t, report.Identifiers, 1)
	assert.Equal(t, "named by the harness: pi bash full output file", report.Identifiers[0].Evidence)
	assert.Regexp(t, `^/tmp/pi-bash-[0-9a-f]{16}\.log$`, report.Identifiers[0].Recorded)

	// A planted difference: the tape's bash result says something the sandbox will not.
	spoiled := filepath.Join(t.TempDir(), "spoiled.json")
	bad, err := tape.LoadFile(tapes[0])
	require.NoError(t, err)
	step := bad.Main().Steps[1]
	i := slices.IndexFunc(step.ToolCalls, func(c tape.ToolCall) bool { return c.Name == "bash" })
	j := slices.IndexFunc(step.ToolResults, func(r tape.ToolResult) bool { return r.ToolCallID == step.ToolCalls[i].ID })
	require.GreaterOrEqual(t, j, 0)
	step.ToolResults[j] = tape.ToolResult{ToolCallID: step.ToolCalls[i].ID, Content: []tape.Block{{Type: tape.BlockText, Text: "printed twice\n"}}}
	require.NoError(t, tape.Save(spoiled, bad))
	spoiledRep, _ := dockerReplay(t, spoiled, bad, dir, "")
	code, out, _ = r.run(t, t.TempDir(), cleanEnv(), "compare", spoiled, spoiledRep)
	assert.Equal(t, 1, code, "compare must say DIFFERS\n%s", out)
	assert.Contains(t, out, ": DIFFERS")
	assert.Contains(t, out, "printed twice")
}
