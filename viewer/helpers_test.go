package viewer_test

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/compare"
	"github.com/tapebox/tapebox/sandbox/telemetry"
	"github.com/tapebox/tapebox/schema"
	"github.com/tapebox/tapebox/tape"
	"github.com/tapebox/tapebox/viewer"
)

// The real-harness tapes: Claude Code 2.1.332 recorded by tapebox record against the scripted
// provider (test/e2e TestRealHarnesses/claude-code, kept with TAPEBOX_E2E_KEEP), and its
// replay on a local: sandbox, which compares identical.
const (
	realRecording = "testdata/claude-code.json"
	realReplay    = "testdata/claude-code.replay.json"
)

func readFile(t testing.TB, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	return b
}

// compareBytes runs compare.Compare on two tapes' bytes, as tapebox view does.
func compareBytes(t testing.TB, rec, rep []byte) *compare.Report {
	t.Helper()
	load := func(b []byte) *tape.Tape {
		s, err := tape.StripBodies(bytes.NewReader(b))
		require.NoError(t, err)
		tp, err := tape.Unmarshal(s)
		require.NoError(t, err)
		return tp
	}
	return compare.Compare(load(rec), load(rep))
}

// writePage writes the page for a tape (and a replay, when rep is not nil) into dir.
func writePage(t testing.TB, dir, name string, rec, rep []byte, samples ...telemetry.Sample) string {
	t.Helper()
	require.NoError(t, schema.Validate(rec), "the recording must be a valid tape")
	o := viewer.Options{Recording: viewer.Source{Path: name + ".json", Data: rec}, Telemetry: samples, TelemetryPath: name + ".telemetry.csv"}
	if rep != nil {
		require.NoError(t, schema.Validate(rep), "the replay must be a valid tape")
		o.Replay = &viewer.Source{Path: name + ".replay.json", Data: rep}
		o.Report = compareBytes(t, rec, rep)
	}
	p := filepath.Join(dir, name+".html")
	f, err := os.Create(p)
	require.NoError(t, err)
	require.NoError(t, viewer.Write(t.Context(), f, o))
	require.NoError(t, f.Close())
	return p
}

// edit decodes a tape, lets change alter it and encodes it again.
func edit(t testing.TB, b []byte, change func(*tape.Tape)) []byte {
	t.Helper()
	tp, err := tape.Unmarshal(b)
	require.NoError(t, err)
	change(tp)
	out, err := tape.Marshal(tp)
	require.NoError(t, err)
	return out
}

// browserEnv is what the browser tests need: node, chromium and playwright-core installed
// under browsertest/ (npm ci there). It skips the test when one is missing, unless
// TAPEBOX_REQUIRE_HARNESSES=1, where that is a failure.
func browserEnv(t testing.TB) (node, chromium string) {
	t.Helper()
	chromium = os.Getenv("TAPEBOX_CHROMIUM")
	if chromium == "" {
		chromium = "/usr/bin/chromium"
	}
	var missing string
	node, err := exec.LookPath("node")
	switch {
	case err != nil:
		missing = "node is not on the PATH (apt-get install nodejs)"
	case !isFile(chromium):
		missing = chromium + " is missing (apt-get install chromium)"
	case !isFile(filepath.Join("browsertest", "node_modules", "playwright-core", "package.json")):
		missing = "playwright-core is not installed (cd viewer/browsertest && npm ci)"
	}
	if missing != "" {
		if os.Getenv("TAPEBOX_REQUIRE_HARNESSES") == "1" {
			t.Fatalf("the browser tests are required (TAPEBOX_REQUIRE_HARNESSES=1): %s", missing)
		}
		t.Skipf("no browser: %s", missing)
	}
	return node, chromium
}

func isFile(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular()
}

// drive runs one scenario of browsertest/drive.mjs and decodes what it reports into out.
func drive(t testing.TB, scenario string, args map[string]any, out any) {
	t.Helper()
	node, chromium := browserEnv(t)
	a, err := json.Marshal(args)
	require.NoError(t, err)
	cmd := exec.CommandContext(t.Context(), node, "drive.mjs", scenario, string(a))
	cmd.Dir = "browsertest"
	cmd.Env = append(os.Environ(), "TAPEBOX_CHROMIUM="+chromium)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.Output()
	require.NoError(t, err, "node drive.mjs %s: %s", scenario, stderr.String())
	var common struct {
		Error      string   `json:"error"`
		PageErrors []string `json:"pageErrors"`
		Requests   []string `json:"requests"`
		Fatal      string   `json:"fatal"`
		Console    []string `json:"console"`
	}
	require.NoError(t, json.Unmarshal(stdout, &common), "%s", stdout)
	require.Empty(t, common.Error, "scenario %s failed in the browser; console: %q", scenario, common.Console)
	require.Empty(t, common.PageErrors, "errors thrown in the page")
	require.Empty(t, common.Fatal, "the page could not show the tape")
	require.Empty(t, common.Requests, "the page must load nothing from the network")
	require.NoError(t, json.Unmarshal(stdout, out))
}
