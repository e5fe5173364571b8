package e2e

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/internal/testutil/realharness"
	"github.com/tapebox/tapebox/tape"
	"github.com/tapebox/tapebox/testkit/fakeprovider"
)

// sdkShapes are the call shapes of testdata/harness/sdk-loop.cjs: each SDK, streaming and not.
var sdkShapes = []struct {
	shape    string
	provider tape.Provider
}{
	{"anthropic-json", tape.ProviderAnthropic},
	{"anthropic-stream", tape.ProviderAnthropic},
	{"chat-json", tape.ProviderOpenAIChat},
	{"chat-stream", tape.ProviderOpenAIChat},
	{"responses-json", tape.ProviderOpenAIResponses},
	{"responses-stream", tape.ProviderOpenAIResponses},
}

// sdkSecret is the API key the SDKs send; no tape may hold it.
const sdkSecret = "sk-e2e-sdk-secret-4f2a"

// officialSDKs records one small tape per SDK call shape (a node agent loop through tapebox
// record against the scripted provider), then runs the same script against the simulator:
// what the SDK parsed must be the same byte for byte, and compare identical.
func officialSDKs(t *testing.T, r *rig) {
	harnesses, node := needSDKs(t)
	script, err := filepath.Abs(filepath.Join("testdata", "harness", "sdk-loop.cjs"))
	require.NoError(t, err)
	lookup := func(key string) tape.ToolCall { return fakeprovider.Call("lookup", map[string]string{"key": key}) }
	var threads []fakeprovider.Thread
	for _, s := range sdkShapes {
		first := fakeprovider.Turn{Text: "Looking it up.", Calls: []tape.ToolCall{lookup("alpha"), lookup("beta")}}
		if s.provider == tape.ProviderOpenAIResponses {
			first.Calls = append(first.Calls, fakeprovider.Custom("apply_patch", "*** Begin Patch\n*** Add File: a.txt\n+x\n*** End Patch\n"))
		}
		threads = append(threads, fakeprovider.Thread{Name: s.shape, Marker: "[sdk-" + s.shape + "]", Turns: []fakeprovider.Turn{
			first,
			{Text: "alpha and beta are known (" + s.shape + ")."},
		}})
	}
	srv := fakeprovider.New(fakeprovider.Script{Threads: threads, PieceSize: 7})
	require.NoError(t, srv.Start())
	t.Cleanup(func() { srv.Close() })
	keys := []string{"ANTHROPIC_API_KEY=" + sdkSecret, "OPENAI_API_KEY=" + sdkSecret}

	for _, s := range sdkShapes {
		t.Run(s.shape, func(t *testing.T) {
			t.Parallel()
			recPath := filepath.Join(t.TempDir(), "recording.json")
			code, recorded, errOut := r.run(t, t.TempDir(), cleanEnv(keys...), "record", "--output", recPath, "--upstream", srv.URL(),
				"--task", "id=sdk-"+s.shape, "--", node, script, harnesses, s.shape)
			require.Equal(t, 0, code, "tapebox record -- node sdk-loop.cjs %s\n%s", s.shape, errOut)
			calls := strings.Split(strings.TrimSpace(recorded), "\n")
			require.Len(t, calls, 2, "two model calls: tools, then the answer\n%s", recorded)
			assert.Contains(t, calls[0], `"lookup"`)
			assert.Contains(t, calls[1], "alpha and beta are known ("+s.shape+").")

			code, vout, verr := r.run(t, t.TempDir(), cleanEnv(), "validate", recPath)
			require.Equal(t, 0, code, "tapebox validate\n%s%s", vout, verr)
			raw, err := os.ReadFile(recPath)
			require.NoError(t, err)
			assert.NotContains(t, string(raw), sdkSecret, "the API key reached the tape")
			rec, err := tape.LoadFile(recPath)
			require.NoError(t, err)
			assert.Equal(t, s.provider, rec.Meta.Provider)
			require.Len(t, rec.Threads, 1)
			main := rec.Main()
			require.Len(t, main.Steps, 2)
			assert.Equal(t, strings.HasSuffix(s.shape, "-stream"), main.Steps[0].Request.Stream)
			n := requireResultsAsSentSDK(t, rec)
			assert.Equal(t, len(main.Steps[0].ToolCalls), n)
			keep(t, recPath, "sdk-"+s.shape+".json")

			repPath := filepath.Join(t.TempDir(), "replay.json")
			// The script ran in an empty directory and left it empty: the recording's end
			// manifest is empty, and the replay's is read from where the script runs again.
			work := t.TempDir()
			sim, root := r.simulator(t, recPath, repPath, "--workspace", work)
			p := startProc(t, work, cleanEnv(append(keys, "ANTHROPIC_BASE_URL="+root, "OPENAI_BASE_URL="+root+"/v1")...),
				node, script, harnesses, s.shape)
			code = p.wait(t, time.Minute)
			simCode := sim.wait(t, time.Minute)
			if code != 0 || simCode != 0 {
				t.Fatalf("node sdk-loop.cjs %s against the simulator: exit %d; simulator: exit %d\n%s\n%s\nsimulator log:\n%s", s.shape, code, simCode,
					clipText(p.stderr(), 3000), r.compareText(t, recPath, repPath), clipText(sim.stderr(), 4000))
			}
			assert.Equal(t, recorded, p.stdout(), "what the SDK parsed from the simulator, against what it parsed through the gateway")
			keep(t, repPath, "sdk-"+s.shape+".sim.json")
			r.requireIdentical(t, recPath, repPath)
		})
	}
}

// requireResultsAsSentSDK checks the tape's tool results against the fixed results the
// script sends ("NAME result for INPUT") and returns how many there are.
func requireResultsAsSentSDK(t *testing.T, rec *tape.Tape) int {
	t.Helper()
	n := 0
	for _, st := range rec.Main().Steps {
		byID := map[string]tape.ToolResult{}
		for _, res := range st.ToolResults {
			byID[res.ToolCallID] = res
		}
		for _, c := range st.ToolCalls {
			res, ok := byID[c.ID]
			require.True(t, ok, "no result for %s %s", c.Name, c.ID)
			var input any
			if c.Kind == "custom" {
				var v struct{ Input string }
				require.NoError(t, json.Unmarshal(c.Input, &v))
				input = v.Input
			} else {
				require.NoError(t, json.Unmarshal(c.Input, &input))
			}
			// As JSON.stringify writes it: no spaces, no HTML escaping.
			var b bytes.Buffer
			enc := json.NewEncoder(&b)
			enc.SetEscapeHTML(false)
			require.NoError(t, enc.Encode(input))
			assert.Equal(t, c.Name+" result for "+strings.TrimSpace(b.String()), res.Text(), "result of %s %s", c.Name, c.ID)
			n++
		}
	}
	return n
}

// needSDKs returns harnesses/ and node, or skips (fails with TAPEBOX_REQUIRE_HARNESSES=1)
// when node or the SDKs are missing.
func needSDKs(t *testing.T) (string, string) {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("..", "..", "harnesses"))
	require.NoError(t, err)
	node, nodeErr := exec.LookPath("node")
	var missing []string
	if nodeErr != nil {
		missing = append(missing, nodeErr.Error())
	}
	for _, pkg := range []string{"@anthropic-ai/sdk", "openai"} {
		if _, err := os.Stat(filepath.Join(dir, "node_modules", pkg, "package.json")); err != nil {
			missing = append(missing, pkg+" not installed")
		}
	}
	if len(missing) > 0 {
		if realharness.Required() {
			t.Fatalf("the official SDKs are required (%s=1): %s", realharness.EnvRequire, strings.Join(missing, "; "))
		}
		t.Skipf("node or the official SDKs are missing (cd harnesses && npm ci): %s", strings.Join(missing, "; "))
	}
	return dir, node
}
