package fakeprovider_test

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/tape"
	"github.com/tapebox/tapebox/testkit/fakeprovider"
)

var updateWire = flag.Bool("update-wire", false, "rewrite testdata/wire.golden")

// TestWireGolden pins the bytes the fake provider answers with, in every wire format,
// streamed and not, for turns with text, function calls, custom calls, a namespaced call,
// further Responses items and no content at all: the wire formats are written by
// tape/provider's emitters, and a change to them shows here byte for byte.
func TestWireGolden(t *testing.T) {
	turns := []fakeprovider.Turn{
		{Text: "Hello, wörld 🌍 with a long enough text to be cut in pieces"},
		{Calls: []tape.ToolCall{fakeprovider.Call("Bash", map[string]any{"command": "ls -la", "n": 1.5}), fakeprovider.Call("Read", nil)}},
		{Text: "patching", Calls: []tape.ToolCall{fakeprovider.Custom("apply_patch", "*** Begin Patch\n*** End Patch\n")}},
		{Calls: []tape.ToolCall{fakeprovider.Call("spawn_agent", map[string]any{"message": "go"})}, Namespaces: map[string]string{"spawn_agent": "multi_agent_v1"},
			Items: []map[string]any{{"type": "reasoning", "id": "rs_1", "summary": []any{}}}},
		{},
	}
	var out bytes.Buffer
	for _, ep := range []struct{ path, body string }{
		{"/v1/messages", `{"model":"m1","messages":[{"role":"user","content":"go"}]%s}`},
		{"/v1/chat/completions", `{"model":"m2","messages":[{"role":"user","content":"go"}]%s}`},
		{"/v1/chat/completions", `{"model":"m2","stream_options":{"include_usage":true},"messages":[{"role":"user","content":"go"}]%s}`},
		{"/v1/responses", `{"model":"m3","input":"go"%s}`},
	} {
		for _, stream := range []bool{false, true} {
			extra := ""
			if stream {
				extra = `,"stream":true`
			}
			for i, turn := range turns {
				srv := fakeprovider.New(fakeprovider.Script{PieceSize: 7, Threads: []fakeprovider.Thread{{Name: "main", Turns: []fakeprovider.Turn{turn}}}})
				require.NoError(t, srv.Start())
				resp, err := http.Post(srv.URL()+ep.path, "application/json", strings.NewReader(fmt.Sprintf(ep.body, extra)))
				require.NoError(t, err)
				b, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				require.NoError(t, err)
				fmt.Fprintf(&out, "== %s %s stream=%v turn %d: %d %s %s\n%s\n", ep.path, ep.body, stream, i, resp.StatusCode, resp.Header.Get("Content-Type"), resp.Header.Get("X-Request-Id")+resp.Header.Get("Request-Id"), b)
				require.NoError(t, srv.Err())
				require.NoError(t, srv.Close())
			}
		}
	}
	golden := filepath.Join("testdata", "wire.golden")
	if *updateWire {
		require.NoError(t, os.WriteFile(golden, out.Bytes(), 0o644))
		return
	}
	want, err := os.ReadFile(golden)
	require.NoError(t, err)
	require.Equal(t, string(want), out.String(), "go test -run TestWireGolden -update-wire rewrites it")
}
