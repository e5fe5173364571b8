package cli

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/internal/testutil/bigbody"
	"github.com/tapebox/tapebox/schema"
	"github.com/tapebox/tapebox/tape"
)

// callSized makes one call through the gateway at base, asking for answer, reads every
// byte, and checks it got what the upstream sent.
func callSized(t *testing.T, base string, up *bigbody.Upstream, answer string) int64 {
	t.Helper()
	stream := strings.HasPrefix(answer, "sse")
	body := fmt.Sprintf(`{"model":"m","max_tokens":64,"stream":%v,"messages":[{"role":"user","content":"hi"}]}`, stream)
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, base+"/v1/messages", strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Answer", answer)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	h := sha256.New()
	n, err := io.Copy(h, resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	sent, _ := up.Hashes()
	require.Equal(t, sent, hex.EncodeToString(h.Sum(nil)), "the client got every byte of %s", answer)
	return n
}

// procKB reads a field of /proc/PID/status in KiB.
func procKB(t *testing.T, pid int, field string) int64 {
	t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	require.NoError(t, err)
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			require.NoError(t, err)
			return kb
		}
	}
	t.Fatalf("/proc/%d/status has no %s", pid, field)
	return 0
}

// measuredGateway is a `tapebox gateway` process recording to out, in front of a bigbody
// upstream, after one small call: idle is its resident set then (KB), and its peak (VmHWM)
// is reset, so that VmHWM - idle is what the calls after it grew it by.
type measuredGateway struct {
	proc      *gatewayProc
	up        *bigbody.Upstream
	out, base string
	pid       int
	idle      int64
}

// startMeasuredGateway starts one; it skips where /proc cannot measure or reset memory.
func startMeasuredGateway(t *testing.T) measuredGateway {
	t.Helper()
	if _, err := os.Stat("/proc/self/clear_refs"); err != nil {
		t.Skipf("no /proc to measure memory with: %v", err)
	}
	bin := buildTapebox(t)
	g := measuredGateway{up: &bigbody.Upstream{}, out: filepath.Join(t.TempDir(), "run.json")}
	srv := httptest.NewServer(g.up)
	t.Cleanup(srv.Close)
	g.proc = startGatewayProc(t, bin, g.out, srv.URL, "--quiet")
	g.base = "http://" + g.proc.url
	g.pid = g.proc.cmd.Process.Pid
	callSized(t, g.base, g.up, "small")
	g.idle = procKB(t, g.pid, "VmRSS")
	if err := os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", g.pid), []byte("5"), 0); err != nil {
		t.Skipf("cannot reset the gateway's peak RSS: %v", err)
	}
	return g
}

// TestGatewayLargeAnswersMemory sends a 100 MB JSON answer and a 100 MB stream through a
// `tapebox gateway` process and measures how far its resident set grows over idle (VmHWM,
// reset before the calls). The bound is loose: the target is 64 MB, BenchmarkMemory/gateway
// reports the figure, and the gateway of main grew by over 1.2 GB. The tape is valid and
// records both answers as truncation markers.
func TestGatewayLargeAnswersMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("sends 200 MB through a gateway process")
	}
	g := startMeasuredGateway(t)
	p, up, out, base, pid, idle := g.proc, g.up, g.out, g.base, g.pid, g.idle
	sizes := map[string]int64{}
	for _, answer := range []string{"json 104857600", "sse 104857600"} {
		sizes[answer] = callSized(t, base, up, answer)
	}
	growth := procKB(t, pid, "VmHWM") - idle
	t.Logf("tapebox gateway: idle %d MB, grew by %d MB for a 100 MB JSON answer and a 100 MB stream (target: 64 MB)", idle>>10, growth>>10)
	assert.Less(t, growth, int64(256<<10), "the gateway grew by %d MB", growth>>10)

	resp, err := http.Post(base+"/tapebox/end", "", nil)
	require.NoError(t, err)
	resp.Body.Close()
	require.NoError(t, p.wait(t), "%s", p.stderr)
	data, err := os.ReadFile(out)
	require.NoError(t, err)
	require.NoError(t, schema.Validate(data))
	tp, err := tape.Unmarshal(data)
	require.NoError(t, err)
	var steps []*tape.Step
	for ref := range tp.Steps() {
		steps = append(steps, ref.Step)
	}
	require.Len(t, steps, 3)
	for i, answer := range []string{"json 104857600", "sse 104857600"} {
		cut, ok := tape.TruncationOf(steps[i+1].Response.Raw)
		require.True(t, ok, "step %d: %.200s", i+1, steps[i+1].Response.Raw)
		assert.Equal(t, tape.Truncation{Bytes: sizes[answer], Limit: 32 << 20}, cut)
	}
}

// TestGatewayConcurrentBodiesMemory sends ten 30 MB request bodies at once (under the
// recording limit: each is recorded whole) through a `tapebox gateway` process and measures
// how far its resident set grows over idle. The target is 1.5x the 300 MB in flight, and
// BenchmarkMemory/gateway/requests=10x30MB-concurrent measures it (1.12-1.28x); this test
// bounds it at 1.8x, which catches each regression below (2.0x and more) without failing
// on a loaded machine, where a collection comes late (1.57x seen once at load 35).
//
// It measured 2.0-2.2x before, and the benchmark 0.96-1.03x only because the benchmark
// was last run before the digests over canonical JSON (sha256-jcs-chain-2) were merged; run
// again, it measured 2.13x too. The cause, from GODEBUG=gctrace=1 of the gateway: the large
// bodies are encoded one at a time (Gateway.heavy), and while one is, about 290 MB is live
// (the body, its normalized messages, the encoded request and its canonical form for the
// digest); the collection that sees it sets the next heap goal at about 580 MB, and the
// next bodies grew the heap to that goal ("290->290->289 MB, 290 MB goal", then "593->593->35
// MB, 593 MB goal"). With --no-digests it was 1.10x. A collection after each large body
// (heavyDone) brings the goal back down. The gateway that buffered whole bodies grew by 1.5 GB
// (5x). Every call is recorded.
func TestGatewayConcurrentBodiesMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("sends 300 MB through a gateway process")
	}
	g := startMeasuredGateway(t)
	p, out, base, pid, idle := g.proc, g.out, g.base, g.pid, g.idle
	const calls, size = 10, 30 << 20
	n, _ := io.Copy(io.Discard, bigbody.Request(size, false))
	errs := make(chan error, calls)
	for range calls {
		go func() {
			req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, base+"/v1/messages", bigbody.Request(size, false))
			if err != nil {
				errs <- err
				return
			}
			req.ContentLength = n
			req.Header.Set("Content-Type", "application/json")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				errs <- err
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				err = fmt.Errorf("status %d", resp.StatusCode)
			}
			errs <- err
		}()
	}
	for range calls {
		require.NoError(t, <-errs)
	}
	growth := procKB(t, pid, "VmHWM") - idle
	inFlight := calls * n >> 10
	t.Logf("tapebox gateway: idle %d MB, grew by %d MB for %d MB in flight (%.2fx; target 1.5x)", idle>>10, growth>>10, inFlight>>10, float64(growth)/float64(inFlight))
	assert.Less(t, growth, 9*inFlight/5, "the gateway grew by %d MB", growth>>10)

	resp, err := http.Post(base+"/tapebox/end", "", nil)
	require.NoError(t, err)
	resp.Body.Close()
	require.NoError(t, p.wait(t), "%s", p.stderr)
	tp, err := tape.LoadFile(out)
	require.NoError(t, err)
	steps := 0
	for ref := range tp.Steps() {
		steps++
		if steps > 1 {
			assert.Len(t, ref.Step.Request.Raw, int(n), "a whole request")
		}
	}
	require.Equal(t, calls+1, steps)
}

// TestMaxRecordBodyFlag: --max-record-body sets the limit; 0 lifts it; a bad size is a
// usage error.
func TestMaxRecordBodyFlag(t *testing.T) {
	bin := buildTapebox(t)
	up := &bigbody.Upstream{}
	srv := httptest.NewServer(up)
	defer srv.Close()
	for _, c := range []struct {
		flag string
		cut  *tape.Truncation
	}{
		{"1m", &tape.Truncation{Limit: 1 << 20}},
		{"0", nil},
	} {
		t.Run(c.flag, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "run.json")
			p := startGatewayProc(t, bin, out, srv.URL, "--max-record-body", c.flag)
			n := callSized(t, "http://"+p.url, up, "sse 2097152")
			resp, err := http.Post("http://"+p.url+"/tapebox/end", "", nil)
			require.NoError(t, err)
			resp.Body.Close()
			require.NoError(t, p.wait(t), "%s", p.stderr)
			tp, err := tape.LoadFile(out)
			require.NoError(t, err)
			s := tp.Threads[0].Steps[0]
			cut, ok := tape.TruncationOf(s.Response.Raw)
			if c.cut == nil {
				require.False(t, ok)
				assert.Greater(t, len(s.Response.Chunks), 1000)
				return
			}
			require.True(t, ok, "%.200s", s.Response.Raw)
			c.cut.Bytes = n
			assert.Equal(t, *c.cut, cut)
			assert.Contains(t, p.stderr.String(), "over the recording limit of 1048576")
		})
	}
	code, _, stderr := runVerbForTest(t, "gateway", "--output", filepath.Join(t.TempDir(), "run.json"), "--max-record-body", "lots")
	assert.Equal(t, ExitUsage, code)
	assert.Contains(t, stderr, `--max-record-body: bad size "lots"`)
}
