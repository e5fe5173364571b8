package e2e

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/internal/realharness"
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
