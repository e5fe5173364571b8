package gateway_test

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/compare"
	"github.com/tapebox/tapebox/gateway"
	"github.com/tapebox/tapebox/internal/testutil/realharness"
	"github.com/tapebox/tapebox/tape"
	"github.com/tapebox/tapebox/testkit/fakeprovider"
)

// dropAfterAnswer serves next, but drops the connection of the first streamed model call
// whose body holds trigger right after its whole answer, final event included, without
// ending the chunked body: the provider (or a proxy on the way) resetting the connection
// after the answer was sent. The gateway has the whole answer; the client has every event
// but sees the stream end in an error.
type dropAfterAnswer struct {
	next    http.Handler
	trigger []byte
	done    atomic.Bool
}

func (d *dropAfterAnswer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := readAll(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if !bytes.Contains(body, d.trigger) || !d.done.CompareAndSwap(false, true) {
		d.next.ServeHTTP(w, r)
		return
	}
	rec := httptest.NewRecorder()
	d.next.ServeHTTP(rec, r)
	for k, v := range rec.Header() {
		w.Header()[k] = v
	}
	w.Header().Del("Content-Length")
	w.WriteHeader(rec.Code)
	w.Write(rec.Body.Bytes())
	w.(http.Flusher).Flush()
	time.Sleep(50 * time.Millisecond) // the answer reaches the client before the reset
	panic(http.ErrAbortHandler)
}

// TestRealPiRetriesAnsweredStep: the real Pi against a gateway whose upstream resets the
// connection just after a complete answer. Pi's agent retries the turn (its auto-retry
// takes "terminated" for a transient error) with the same conversation: the gateway has
// already recorded that answer whole, and records the retry on the same thread (before,
// a second thread without a parent: issue 29's Pi seed 1098).
func TestRealPiRetriesAnsweredStep(t *testing.T) {
	if !realharness.Required() {
		t.Skipf("runs the real Pi (about 20 s): set %s=1", realharness.EnvRequire)
	}
	if _, err := realharness.PiPath(); err != nil {
		t.Fatalf("pi: %v", err)
	}
	const cmd = "echo made > out.txt && echo printed"
	fp := fakeprovider.New(fakeprovider.Script{Threads: []fakeprovider.Thread{{
		Name: "main",
		Turns: []fakeprovider.Turn{
			{Text: "Making it.", Calls: []tape.ToolCall{fakeprovider.Call("bash", map[string]any{"command": cmd})}},
			{Text: "All done."},
		},
	}}})
	up := httptest.NewServer(&dropAfterAnswer{next: fp, trigger: []byte("printed")})
	defer up.Close()
	out := filepath.Join(tapeDir(t), "run.json")
	g, err := gateway.New(gateway.Config{Output: out, Upstream: up.URL, Logf: t.Logf})
	require.NoError(t, err)
	gw := httptest.NewServer(g)
	defer gw.Close()
	defer g.Close(context.Background())

	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	dir := t.TempDir()
	res, err := realharness.RunPi(ctx, realharness.Options{BaseURL: gw.URL, Dir: dir, Prompt: "[pi-retry] make the file"})
	require.NoError(t, err)
	t.Logf("pi exit %d\nstderr (end): %s", res.ExitCode, tailOf(string(res.Stderr), 1500))
	require.NoError(t, g.Finish(tape.EndComplete, ""))
	rec, err := tape.LoadFile(out)
	require.NoError(t, err)
	for _, th := range rec.Threads {
		for i, s := range th.Steps {
			t.Logf("thread %s (parent %v) step %d: turns %d, status %d, %q, superseded %v", th.ID, th.Parent, i, s.Request.Turns(), s.Response.Status, s.Response.Text(), th.Superseded(i))
		}
	}
	got, err := os.ReadFile(filepath.Join(dir, "out.txt"))
	require.NoError(t, err)
	assert.Equal(t, "made\n", string(got))
	main := rec.Main()
	require.NotNil(t, main)
	var superseded int
	for i := range main.Steps {
		if main.Superseded(i) {
			superseded++
		}
	}
	require.Equal(t, 1, superseded, "Pi retried the answered turn")
	require.Len(t, rec.Threads, 1, "the retry is a step of the main thread, not a thread of its own")

	// Simulator mode serves the tape to the real Pi in a fresh directory: the answer the
	// thread went on from, no reset, no retry; the replay compares identical.
	sim, srv, repPath := serveSimulator(t, rec, gateway.SimulatorOptions{Logf: t.Logf})
	fresh := t.TempDir()
	res, err = realharness.RunPi(ctx, realharness.Options{BaseURL: srv.URL, Dir: fresh, Prompt: "[pi-retry] make the file"})
	require.NoError(t, err)
	require.Equal(t, 0, res.ExitCode, "pi against the simulator: %s", tailOf(string(res.Stderr), 1500))
	select {
	case <-sim.Finished():
	case <-ctx.Done():
		t.Fatal("the simulator run did not finish")
	}
	got, err = os.ReadFile(filepath.Join(fresh, "out.txt"))
	require.NoError(t, err)
	assert.Equal(t, "made\n", string(got))
	rep, err := tape.LoadFile(repPath)
	require.NoError(t, err)
	report := compare.Compare(rec, rep)
	assert.True(t, report.Identical, "%+v", report.Differences)
	assert.Equal(t, 2, report.StepsCompared)
}

func tailOf(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

func readAll(r *http.Request) ([]byte, error) {
	var b bytes.Buffer
	_, err := b.ReadFrom(r.Body)
	r.Body.Close()
	r.Body = nopCloser{bytes.NewReader(b.Bytes())}
	return b.Bytes(), err
}

type nopCloser struct{ *bytes.Reader }

func (nopCloser) Close() error { return nil }
