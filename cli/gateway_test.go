package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/internal/testutil/credscan"
	"github.com/tapebox/tapebox/tape"
	"github.com/tapebox/tapebox/tape/provider"
	"github.com/tapebox/tapebox/testkit"
	"github.com/tapebox/tapebox/testkit/fakeprovider"
)

// The credentials the gateway tests of this package send; none may reach a file beside a
// tape (credscan.Dir).
const (
	gwAPIKey   = "sk-ant-api03-CLITESTKEY-q8Zr4Lm"
	gwBearer   = "sk-proj-CLITESTBEARER-w2Nc7Vb"
	gwCookie   = "sid=CLITESTCOOKIE-5hGt0Yx"
	gwInjected = "sk-ant-api03-CLITESTINJECTED-3jKd9Pe"
)

var gwCredentials = []string{gwAPIKey, gwBearer, gwCookie, gwInjected}

// buildTapebox builds cmd/tapebox into a temporary directory.
func buildTapebox(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "tapebox")
	cmd := exec.CommandContext(t.Context(), "go", "build", "-o", bin, "./cmd/tapebox")
	cmd.Dir = ".."
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "go build ./cmd/tapebox:\n%s", out)
	return bin
}

// gatewayProc is a `tapebox gateway` process.
type gatewayProc struct {
	cmd    *exec.Cmd
	url    string
	stderr *syncBuffer
	done   chan error
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// startGatewayProc runs `tapebox gateway --output out --listen 127.0.0.1:0 --upstream
// upstream` and waits until it listens.
func startGatewayProc(t *testing.T, bin, out, upstream string, extra ...string) *gatewayProc {
	t.Helper()
	args := append([]string{"gateway", "--output", out, "--listen", "127.0.0.1:0", "--upstream", upstream}, extra...)
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "TAPEBOX_TEST_INJECT="+gwInjected)
	pipe, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	p := &gatewayProc{cmd: cmd, stderr: &syncBuffer{}, done: make(chan error, 1)}
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pipe)
		for sc.Scan() {
			line := sc.Text()
			fmt.Fprintln(p.stderr, line)
			if _, a, ok := strings.Cut(line, "listening on "); ok {
				a, _, _ = strings.Cut(a, " ")
				select {
				case addr <- strings.TrimPrefix(strings.TrimSuffix(a, ";"), "http://"):
				default:
				}
			}
		}
		p.done <- cmd.Wait()
	}()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			<-p.done
		}
	})
	select {
	case a := <-addr:
		p.url = a
	case err := <-p.done:
		t.Fatalf("tapebox gateway exited before listening: %v\n%s", err, p.stderr)
	case <-time.After(30 * time.Second):
		t.Fatalf("tapebox gateway did not listen within 30s\n%s", p.stderr)
	}
	return p
}

// wait waits for the process to exit and returns its exit error.
func (p *gatewayProc) wait(t *testing.T) error {
	t.Helper()
	select {
	case err := <-p.done:
		return err
	case <-time.After(30 * time.Second):
		t.Fatalf("tapebox gateway did not exit within 30s\n%s", p.stderr)
		return nil
	}
}

// killScript is a main thread of many streamed turns, each a few dozen events apart by a
// millisecond, each with one tool call, the last one without.
func killScript(turns int) fakeprovider.Script {
	s := fakeprovider.Script{PieceSize: 6, Threads: []fakeprovider.Thread{{Name: "main"}}}
	for i := range turns {
		turn := fakeprovider.Turn{
			Text:  fmt.Sprintf("Turn %d: a streamed answer that takes a few dozen events to arrive.", i),
			Fault: &fakeprovider.Fault{Times: -1, BetweenChunks: time.Millisecond},
		}
		if i < turns-1 {
			turn.Calls = []tape.ToolCall{fakeprovider.Call("Bash", map[string]string{"command": fmt.Sprintf("echo %d", i)})}
		}
		s.Threads[0].Turns = append(s.Threads[0].Turns, turn)
	}
	return s
}

// streamedCall is one streamed answer as the client got it.
type streamedCall struct {
	text     string
	calls    []tape.ToolCall
	complete bool // the final event arrived
}

// driveConversation plays a conversation through the gateway at base: streamed Anthropic
// calls, each answering the tool calls of the one before. onEvent is called with the call's
// index and the event's index as each event arrives. It returns the calls made, the last one
// possibly incomplete, and stops at the first error or at the final answer.
func driveConversation(ctx context.Context, base string, onEvent func(call, event int)) []streamedCall {
	messages := []map[string]any{{"role": "user", "content": "Count for me."}}
	var done []streamedCall
	for i := 0; ; i++ {
		body, _ := json.Marshal(map[string]any{"model": "fake-model", "max_tokens": 1024, "stream": true, "messages": messages,
			"tools": []map[string]any{{"name": "Bash", "input_schema": map[string]any{"type": "object"}}}})
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+"/v1/messages?beta=true", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("User-Agent", "claude-cli/2.1.332 (external, sdk-cli)")
		req.Header.Set("X-Api-Key", gwAPIKey)
		req.Header.Set("Authorization", "Bearer "+gwBearer)
		req.Header.Set("Cookie", gwCookie)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return done
		}
		sc := streamedCall{}
		step := &tape.Step{Request: tape.Request{Raw: json.RawMessage(`{}`)}}
		var sp provider.EventSplitter
		buf := make([]byte, 4096)
		n := 0
		for {
			k, err := resp.Body.Read(buf)
			for _, ev := range sp.Write(buf[:k]) {
				step.Response.Chunks = append(step.Response.Chunks, tape.Chunk{Data: ev})
				if name, _ := provider.ParseEvent(ev); name == "message_stop" {
					sc.complete = true
				}
				onEvent(i, n)
				n++
			}
			if err != nil {
				break
			}
		}
		resp.Body.Close()
		if sc.complete {
			if err := provider.Normalize(tape.ProviderAnthropic, step); err != nil {
				sc.complete = false
			}
			sc.text, sc.calls = tape.BlocksText(step.Response.Content), step.ToolCalls
		}
		done = append(done, sc)
		if !sc.complete || len(sc.calls) == 0 {
			return done
		}
		var uses, results []map[string]any
		for _, c := range sc.calls {
			uses = append(uses, map[string]any{"type": "tool_use", "id": c.ID, "name": c.Name, "input": c.Input})
			results = append(results, map[string]any{"type": "tool_result", "tool_use_id": c.ID, "content": "ok"})
		}
		messages = append(messages,
			map[string]any{"role": "assistant", "content": append([]map[string]any{{"type": "text", "text": sc.text}}, uses...)},
			map[string]any{"role": "user", "content": results})
	}
}

// lingering fronts upstream with a server that keeps each answer's connection open for a
// while after the upstream ended it, as a provider slow to close its streams does: a
// gateway that recorded an answer only when its stream closed would lose, to a kill, answers
// its client already had whole.
func lingering(t *testing.T, upstream string, linger time.Duration) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		req, err := http.NewRequestWithContext(r.Context(), r.Method, upstream+r.URL.RequestURI(), r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		req.Header = r.Header.Clone()
		resp, err := http.DefaultTransport.RoundTrip(req)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		maps.Copy(w.Header(), resp.Header)
		w.WriteHeader(resp.StatusCode)
		buf := make([]byte, 4096)
		for {
			n, err := resp.Body.Read(buf)
			w.Write(buf[:n])
			w.(http.Flusher).Flush()
			if err != nil {
				break
			}
		}
		select {
		case <-time.After(linger):
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestGatewaySIGKILL kills a real `tapebox gateway` process with SIGKILL at random moments
// of its streams, again and again on the same output: after every kill the tape loads and
// holds every answer the client had received whole, and the next gateway on the same
// output starts clean, whatever the killed one left beside the tape.
func TestGatewaySIGKILL(t *testing.T) {
	bin := buildTapebox(t)
	const turns = 8
	fp := testkit.NewProvider(t, killScript(turns))
	upstream := lingering(t, fp.URL(), 50*time.Millisecond)
	dir := t.TempDir()
	out := filepath.Join(dir, "run.json")
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rnd := rand.New(rand.NewPCG(seed, 1))

	const iterations = 20
	for it := range iterations {
		if it == iterations-1 {
			// Whatever a kill can leave beside the tape, at its worst: stale slots holding
			// garbage and a half-published file.
			for _, name := range []string{".run.json.slot-a", ".run.json.slot-b", ".run.json.publish-0badf00d"} {
				require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(`{"version":1,"garbage`), 0o644))
			}
		}
		p := startGatewayProc(t, bin, out, upstream, "--quiet")
		killCall, killEvent := rnd.IntN(turns), rnd.IntN(40)
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		killed := false
		calls := driveConversation(ctx, "http://"+p.url, func(call, event int) {
			if !killed && (call > killCall || call == killCall && event >= killEvent) {
				killed = true
				require.NoError(t, p.cmd.Process.Signal(syscall.SIGKILL))
			}
		})
		cancel()
		if !killed {
			require.NoError(t, p.cmd.Process.Signal(syscall.SIGKILL))
		}
		err := p.wait(t)
		var ee *exec.ExitError
		require.ErrorAs(t, err, &ee)
		require.Equal(t, "signal: killed", ee.Error())

		tp, err := tape.LoadFile(out)
		require.NoError(t, err, "iteration %d: the tape must load after SIGKILL", it)
		require.Nil(t, tp.Meta.Ended, "a killed gateway cannot say how the run ended")
		complete := 0
		for _, c := range calls {
			if c.complete {
				complete++
			}
		}
		var steps []*tape.Step
		if len(tp.Threads) > 0 {
			require.Len(t, tp.Threads, 1)
			steps = tp.Threads[0].Steps
		}
		t.Logf("iteration %d: killed at call %d event %d; the client had %d whole answers, the tape holds %d steps", it, killCall, killEvent, complete, len(steps))
		require.GreaterOrEqual(t, len(steps), complete, "iteration %d: every answer the client had whole is in the tape", it)
		require.LessOrEqual(t, len(steps), complete+1, "iteration %d: at most the answer in flight besides", it)
		for i := range complete {
			assert.Equal(t, calls[i].text, tape.BlocksText(steps[i].Response.Content), "iteration %d step %d", it, i)
			if len(calls[i].calls)+len(steps[i].ToolCalls) > 0 {
				assert.Equal(t, calls[i].calls, steps[i].ToolCalls, "iteration %d step %d", it, i)
			}
			if i+1 < complete {
				require.Len(t, steps[i].ToolResults, 1, "iteration %d step %d: its results came with the next call", it, i)
			}
		}
		credscan.Dir(t, dir, gwCredentials...)
	}

	// A last gateway on the same output finishes cleanly and leaves nothing beside the tape.
	p := startGatewayProc(t, bin, out, fp.URL(), "--quiet")
	calls := driveConversation(t.Context(), "http://"+p.url, func(int, int) {})
	require.Len(t, calls, turns)
	resp, err := http.Post("http://"+p.url+"/tapebox/end", "application/json", nil)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.NoError(t, p.wait(t), "%s", p.stderr)
	tp, err := tape.LoadFile(out)
	require.NoError(t, err)
	require.Equal(t, tape.EndComplete, tp.Meta.Ended.Reason)
	require.Len(t, tp.Threads[0].Steps, turns)
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	require.Equal(t, []string{"run.json"}, names, "no slot or publish file is left beside the tape")
	credscan.Dir(t, dir, gwCredentials...)
}

// TestGatewaySignals: SIGTERM and SIGINT finish the tape with how the run looked, and the
// process exits 0.
func TestGatewaySignals(t *testing.T) {
	bin := buildTapebox(t)
	fp := testkit.NewProvider(t, killScript(3))
	cases := []struct {
		sig        syscall.Signal
		calls      int // calls to make before the signal: all (3) or only the first
		wantReason tape.EndReason
	}{
		{syscall.SIGTERM, 1, tape.EndCut},
		{syscall.SIGINT, 3, tape.EndComplete},
	}
	for _, tc := range cases {
		t.Run(tc.sig.String(), func(t *testing.T) {
			dir := t.TempDir()
			out := filepath.Join(dir, "run.json")
			p := startGatewayProc(t, bin, out, fp.URL())
			ctx, cancel := context.WithCancel(t.Context())
			calls := driveConversation(ctx, "http://"+p.url, func(call, _ int) {
				if call >= tc.calls {
					cancel()
				}
			})
			cancel()
			require.GreaterOrEqual(t, len(calls), tc.calls)
			require.NoError(t, p.cmd.Process.Signal(tc.sig))
			require.NoError(t, p.wait(t), "%s", p.stderr)
			tp, err := tape.LoadFile(out)
			require.NoError(t, err)
			require.NotNil(t, tp.Meta.Ended)
			assert.Equal(t, tc.wantReason, tp.Meta.Ended.Reason, tp.Meta.Ended.Detail)
			assert.Equal(t, "claude-code", tp.Meta.Harness)
			assert.Equal(t, "2.1.332", tp.Meta.HarnessVersion)
			assert.Contains(t, p.stderr.String(), "model calls recorded into")
			credscan.Dir(t, dir, gwCredentials...)
		})
	}
}

// TestGatewayInjectHeaderFlag: --inject-header takes its value from the environment; the
// upstream gets it instead of the agent's placeholder, and the tape has neither.
func TestGatewayInjectHeaderFlag(t *testing.T) {
	bin := buildTapebox(t)
	fp := testkit.NewProvider(t, killScript(2))
	dir := t.TempDir()
	out := filepath.Join(dir, "run.json")
	p := startGatewayProc(t, bin, out, fp.URL(), "--inject-header", "127.0.0.1:x-api-key=$TAPEBOX_TEST_INJECT")
	calls := driveConversation(t.Context(), "http://"+p.url, func(int, int) {})
	require.Len(t, calls, 2)
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
	require.NoError(t, p.wait(t), "%s", p.stderr)
	reqs := fp.Requests()
	require.Len(t, reqs, 2)
	for _, r := range reqs {
		assert.Equal(t, gwInjected, r.Header.Get("X-Api-Key"))
		assert.Empty(t, r.Header.Get("Authorization"), "the agent's credentials for the host are dropped")
		assert.Empty(t, r.Header.Get("Cookie"))
	}
	_, err := tape.LoadFile(out)
	require.NoError(t, err)
	credscan.Dir(t, dir, gwCredentials...)
}

// TestGatewayCwdFlag: meta.cwd is what the first request names, unless --cwd gives it.
func TestGatewayCwdFlag(t *testing.T) {
	fp := testkit.NewProvider(t, fakeprovider.Script{Threads: []fakeprovider.Thread{{Name: "main", Turns: []fakeprovider.Turn{{Text: "Hi."}}}}})
	body, err := json.Marshal(map[string]any{"model": "fake-model", "max_tokens": 1024, "stream": true, "messages": []map[string]any{
		{"role": "user", "content": "say hi"},
		{"role": "system", "content": "# Environment\nYou have been invoked in the following environment: \n - Primary working directory: /tmp/learned\n - Platform: linux"},
	}})
	require.NoError(t, err)
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"learned from the request", nil, "/tmp/learned"},
		{"given", []string{"--cwd", "/srv/given"}, "/srv/given"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "run.json")
			var stderr syncBuffer
			env := &Env{Stdout: &syncBuffer{}, Stderr: &stderr, Getenv: func(string) string { return "" }}
			args := append([]string{"gateway", "--output", out, "--listen", "127.0.0.1:0", "--upstream", fp.URL(), "--quiet"}, tc.args...)
			done := make(chan int, 1)
			go func() { done <- RunEnv(t.Context(), args, env) }()
			var addr string
			require.Eventually(t, func() bool {
				_, a, ok := strings.Cut(stderr.String(), "listening on http://")
				addr, _, _ = strings.Cut(a, " ")
				return ok && addr != ""
			}, 30*time.Second, 10*time.Millisecond, "the gateway listens")
			resp, err := http.Post("http://"+addr+"/v1/messages", "application/json", bytes.NewReader(body))
			require.NoError(t, err)
			_, err = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			require.NoError(t, err)
			require.Equal(t, http.StatusOK, resp.StatusCode)
			resp, err = http.Post("http://"+addr+"/tapebox/end", "", nil)
			require.NoError(t, err)
			resp.Body.Close()
			require.Equal(t, ExitOK, <-done, "%s", &stderr)
			tp, err := tape.LoadFile(out)
			require.NoError(t, err)
			assert.Equal(t, tc.want, tp.Meta.Cwd)
		})
	}
}

// inProcessGateway runs `tapebox gateway` in this process with args after --output and
// --upstream, and returns the port it listens on, its stderr and its exit code's channel.
func inProcessGateway(t *testing.T, upstream string, args ...string) (port string, stderr *syncBuffer, done <-chan int) {
	t.Helper()
	stderr = &syncBuffer{}
	env := &Env{Stdout: &syncBuffer{}, Stderr: stderr, Getenv: func(string) string { return "" }}
	argv := append([]string{"gateway", "--output", filepath.Join(t.TempDir(), "run.json"), "--upstream", upstream, "--quiet"}, args...)
	exit := make(chan int, 1)
	go func() { exit <- RunEnv(t.Context(), argv, env) }()
	require.Eventually(t, func() bool {
		_, a, ok := strings.Cut(stderr.String(), "listening on http://")
		a, _, _ = strings.Cut(a, " ")
		if i := strings.LastIndex(a, ":"); ok && i >= 0 {
			port = a[i+1:]
		}
		return port != ""
	}, 30*time.Second, 10*time.Millisecond, "the gateway listens")
	return port, stderr, exit
}

// endGateway posts /tapebox/end from loopback and waits for the gateway to exit.
func endGateway(t *testing.T, port string, done <-chan int, stderr *syncBuffer) {
	t.Helper()
	resp, err := http.Post("http://127.0.0.1:"+port+"/tapebox/end", "", nil)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, ExitOK, <-done, "%s", stderr)
}

// TestGatewayListen: the gateway listens on loopback by default; an address beyond loopback
// is taken when given, with one warning line that the gateway has no authentication.
func TestGatewayListen(t *testing.T) {
	var help syncBuffer
	require.Equal(t, ExitOK, RunEnv(t.Context(), []string{"gateway", "--help"}, &Env{Stdout: &help, Stderr: &help}))
	assert.Contains(t, help.String(), `(default "127.0.0.1:8080")`)
	assert.NotContains(t, help.String(), `(default ":8080")`)

	fp := testkit.NewProvider(t, fakeprovider.Script{})
	for _, tc := range []struct {
		listen string
		warn   bool
	}{
		{"127.0.0.1:0", false},
		{"localhost:0", false},
		{":0", true},
		{"0.0.0.0:0", true},
	} {
		t.Run(tc.listen, func(t *testing.T) {
			port, stderr, done := inProcessGateway(t, fp.URL(), "--listen", tc.listen)
			endGateway(t, port, done, stderr)
			warnings := strings.Count(stderr.String(), "warning:")
			if !tc.warn {
				assert.Zero(t, warnings, "%s", stderr)
				return
			}
			assert.Equal(t, 1, warnings, "%s", stderr)
			assert.Contains(t, stderr.String(), "beyond loopback, and the gateway has no authentication")
		})
	}
}

// TestGatewayEndToken: the gateway prints a fresh end token at start; listening on a
// non-loopback address of this machine, it refuses POST /tapebox/end from there without the
// token and ends with it.
func TestGatewayEndToken(t *testing.T) {
	var ip string
	if addrs, err := net.InterfaceAddrs(); err == nil {
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && !n.IP.IsLoopback() && !n.IP.IsLinkLocalUnicast() {
				ip = n.IP.String()
				break
			}
		}
	}
	if ip == "" {
		t.Skip("no non-loopback IPv4 address on this machine")
	}
	fp := testkit.NewProvider(t, fakeprovider.Script{})
	client := &http.Client{Transport: &http.Transport{Proxy: nil}, Timeout: time.Minute}
	var tokens []string
	for range 2 {
		port, stderr, done := inProcessGateway(t, fp.URL(), "--listen", ip+":0")
		_, after, ok := strings.Cut(stderr.String(), "end token ")
		require.True(t, ok, "%s", stderr)
		token, _, _ := strings.Cut(after, " ")
		require.GreaterOrEqual(t, len(token), 20, "%s", stderr)
		tokens = append(tokens, token)
		end := "http://" + net.JoinHostPort(ip, port) + "/tapebox/end"

		resp, err := client.Post(end, "", nil)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusForbidden, resp.StatusCode)
		select {
		case code := <-done:
			t.Fatalf("the gateway exited (%d) on a refused end\n%s", code, stderr)
		default:
		}
		resp, err = client.Post(end+"?token="+token, "", nil)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode)
		require.Equal(t, ExitOK, <-done, "%s", stderr)
	}
	assert.NotEqual(t, tokens[0], tokens[1], "a new token each run")
}
