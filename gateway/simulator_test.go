package gateway_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/compare"
	"github.com/tapebox/tapebox/gateway"
	"github.com/tapebox/tapebox/internal/testutil/minirec"
	"github.com/tapebox/tapebox/tape"
	"github.com/tapebox/tapebox/testkit/miniagent"
)

// serveSimulator serves rec's simulator (at speed 0) on a test server, writing the replay to
// out; the server closes when the test ends.
func serveSimulator(t *testing.T, rec *tape.Tape, opts gateway.SimulatorOptions) (sim *gateway.Simulator, srv *httptest.Server, out string) {
	t.Helper()
	opts.Output = filepath.Join(t.TempDir(), "replay.json")
	sim, err := gateway.NewSimulator(rec, opts)
	require.NoError(t, err)
	srv = httptest.NewServer(sim)
	t.Cleanup(srv.Close)
	return sim, srv, opts.Output
}

func TestSimulatorReplaysEveryFormat(t *testing.T) {
	for _, p := range []tape.Provider{tape.ProviderAnthropic, tape.ProviderOpenAIChat, tape.ProviderOpenAIResponses} {
		for _, stream := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/stream=%v", p, stream), func(t *testing.T) {
				rec, _ := minirec.Record(t, p, stream)
				sim, srv, out := serveSimulator(t, rec, gateway.SimulatorOptions{Logf: t.Logf})
				dir := t.TempDir()
				final, err := miniagent.Run(t.Context(), miniagent.Config{BaseURL: srv.URL, Provider: p, Stream: stream, Prompt: "do it", Dir: dir, APIKey: "sk-x"})
				require.NoError(t, err)
				require.Equal(t, "All done.", final)
				<-sim.Finished()
				rep, err := tape.LoadFile(out)
				require.NoError(t, err)
				require.Equal(t, tape.EndComplete, rep.Meta.Ended.Reason)
				report := compare.Compare(rec, rep)
				require.True(t, report.Identical, "%+v", report.Differences)
				two, err := os.ReadFile(filepath.Join(dir, "sub", "two.txt"))
				require.NoError(t, err)
				require.Equal(t, "two\n", string(two))
			})
		}
	}
}

func TestSimulatorConcurrentRuns(t *testing.T) {
	rec, _ := minirec.Record(t, tape.ProviderAnthropic, true)
	sim, srv, out := serveSimulator(t, rec, gateway.SimulatorOptions{})
	const n = 20
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			_, errs[i] = miniagent.Run(t.Context(), miniagent.Config{BaseURL: fmt.Sprintf("%s/r/run-%d", srv.URL, i),
				Provider: tape.ProviderAnthropic, Stream: true, Prompt: "do it", Dir: t.TempDir(), APIKey: "sk-x"})
		})
	}
	wg.Wait()
	for i, err := range errs {
		require.NoError(t, err, "run %d", i)
	}
	<-sim.Finished()
	for i := range n {
		rep, err := tape.LoadFile(gateway.OutputFor(out, fmt.Sprintf("run-%d", i)))
		require.NoError(t, err)
		require.True(t, compare.Compare(rec, rep).Identical, "run %d", i)
	}
}

func TestSimulatorDivergesClearly(t *testing.T) {
	rec, _ := minirec.Record(t, tape.ProviderAnthropic, false)
	_, srv, out := serveSimulator(t, rec, gateway.SimulatorOptions{})
	dir := t.TempDir()
	// sub/ already exists with a file: the harness's "cat" will still match, but make the
	// first command's output differ by making one.txt unwritable.
	require.NoError(t, os.Mkdir(filepath.Join(dir, "one.txt"), 0o755))
	_, err := miniagent.Run(t.Context(), miniagent.Config{BaseURL: srv.URL, Provider: tape.ProviderAnthropic, Prompt: "do it", Dir: dir, APIKey: "sk-x"})
	require.Error(t, err)
	require.Contains(t, err.Error(), "diverged")
	require.Contains(t, err.Error(), "thread main step 1")
	require.Contains(t, err.Error(), "tool result")
	rep, err := tape.LoadFile(out)
	require.NoError(t, err)
	require.Equal(t, tape.EndDiverged, rep.Meta.Ended.Reason)
	require.False(t, compare.Compare(rec, rep).Identical)

	// Bad input: a run id that is not a safe file name, a body that is not JSON, an unknown path.
	for _, tc := range []struct{ path, body string }{
		{"/r/..%2f..%2fetc/v1/messages", `{}`},
		{"/r/ok/v1/messages", `not json`},
		{"/v1/embeddings", `{}`},
	} {
		resp, err := http.Post(srv.URL+tc.path, "application/json", strings.NewReader(tc.body))
		require.NoError(t, err)
		resp.Body.Close()
		require.GreaterOrEqual(t, resp.StatusCode, 400, tc.path)
		require.Equal(t, "1", resp.Header.Get("X-Tapebox-Error"), tc.path)
	}
}

// TestSimulatorRedactsQuery: a credential in the query string of a request the simulator
// serves does not reach its replay tape.
func TestSimulatorRedactsQuery(t *testing.T) {
	rec, _ := minirec.Record(t, tape.ProviderAnthropic, false)
	sim, srv, out := serveSimulator(t, rec, gateway.SimulatorOptions{})
	const planted = "sk-planted-query-secret-4242"
	resp, err := http.Post(srv.URL+rec.Main().Steps[0].Request.Path+"?key="+planted, "application/json", bytes.NewReader(rec.Main().Steps[0].Request.Raw))
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.NoError(t, sim.Close())
	data, err := os.ReadFile(out)
	require.NoError(t, err)
	require.NotContains(t, string(data), planted)
	require.Contains(t, string(data), "key="+tape.Redacted)
}

// TestSimulatorServesNormalizedSteps: a tape whose steps keep only their normalized fields
// (no raw body, no chunks) is served in each wire format by tape/provider's emitters, as a
// stream or a JSON body as the harness asks, and replays identically; a step with neither a
// raw response nor content is a clear error.
func TestSimulatorServesNormalizedSteps(t *testing.T) {
	for _, p := range []tape.Provider{tape.ProviderAnthropic, tape.ProviderOpenAIChat, tape.ProviderOpenAIResponses} {
		for _, stream := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/stream=%v", p, stream), func(t *testing.T) {
				rec, _ := minirec.Record(t, p, !stream) // recorded the other way: what is served is emitted
				for ref := range rec.Steps() {
					ref.Step.Response.Raw, ref.Step.Response.Chunks = json.RawMessage("null"), nil
					ref.Step.Response.Headers = nil
				}
				sim, srv, out := serveSimulator(t, rec, gateway.SimulatorOptions{Logf: t.Logf})
				dir := t.TempDir()
				final, err := miniagent.Run(t.Context(), miniagent.Config{BaseURL: srv.URL, Provider: p, Stream: stream, Prompt: "do it", Dir: dir, APIKey: "sk-x"})
				require.NoError(t, err)
				require.Equal(t, "All done.", final)
				<-sim.Finished()
				rep, err := tape.LoadFile(out)
				require.NoError(t, err)
				require.Equal(t, tape.EndComplete, rep.Meta.Ended.Reason)
				report := compare.Compare(rec, rep)
				require.True(t, report.Identical, "%+v", report.Differences)
				for ref := range rep.Steps() {
					require.Equal(t, stream, len(ref.Step.Response.Chunks) > 0, "thread %s step %d: served as the harness asked", ref.Thread.ID, ref.Index)
				}
			})
		}
	}
	rec, _ := minirec.Record(t, tape.ProviderAnthropic, false)
	first := rec.Main().Steps[0]
	first.Response.Raw, first.Response.Content, first.ToolCalls = json.RawMessage("null"), nil, nil
	_, srv, _ := serveSimulator(t, rec, gateway.SimulatorOptions{})
	resp, err := http.Post(srv.URL+first.Request.Path, "application/json", bytes.NewReader(first.Request.Raw))
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusInternalServerError, resp.StatusCode)
	require.Contains(t, string(body), "neither a raw response nor content")
}
