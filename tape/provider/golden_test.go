package provider_test

import (
	"bytes"
	"flag"
	"fmt"
	"hash/fnv"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/tape"
	"github.com/tapebox/tapebox/tape/provider"
)

var update = flag.Bool("update", false, "rewrite the golden tapes in testdata/ at the top of the module")

// goldenDir holds the project's golden tapes.
var goldenDir = filepath.Join("..", "..", "testdata")

// goldenStart is when every golden run starts.
var goldenStart = time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)

type golden struct {
	file    string
	tapeID  string
	harness string
	version string
	model   string
	w       wire
	stream  bool
	threads []*gThread
}

func goldens() []golden {
	var out []golden
	for _, stream := range []bool{true, false} {
		kind := "json"
		if stream {
			kind = "stream"
		}
		out = append(out,
			golden{file: "anthropic-" + kind + ".json", tapeID: "90a1d5c2e7f34b6a8c0d1e2f3a4b5c6" + map[bool]string{true: "1", false: "2"}[stream],
				harness: "claude-code", version: "2.1.332", model: "claude-opus-5-5", w: anthropicWire{model: "claude-opus-5-5"}, stream: stream, threads: claudeCodeRun()},
			golden{file: "openai-chat-" + kind + ".json", tapeID: "90a1d5c2e7f34b6a8c0d1e2f3a4b5c6" + map[bool]string{true: "3", false: "4"}[stream],
				harness: "codex", version: "0.171.0", model: "gpt-5.5", w: chatWire{codexWire{model: "gpt-5.5"}}, stream: stream, threads: codexRun(false)},
			golden{file: "openai-responses-" + kind + ".json", tapeID: "90a1d5c2e7f34b6a8c0d1e2f3a4b5c6" + map[bool]string{true: "5", false: "6"}[stream],
				harness: "codex", version: "0.171.0", model: "gpt-5.5", w: responsesWire{codexWire{model: "gpt-5.5"}}, stream: stream, threads: codexRun(true)},
		)
	}
	return out
}

const (
	helloTask   = "Add hello.sh that prints a greeting (\"Hello, NAME!\", default world) and a test for it, then run the test."
	helloScript = "#!/bin/sh\necho \"Hello, ${1:-world}!\"\n"
	helloTest   = "#!/bin/sh\nset -e\n[ \"$(sh /work/hello.sh)\" = \"Hello, world!\" ]\n[ \"$(sh /work/hello.sh Ada)\" = \"Hello, Ada!\" ]\necho ok\n"
	lsOutput    = "total 12\ndrwxr-xr-x 2 root root 4096 Nov 29 10:00 .\ndrwxr-xr-x 1 root root 4096 Nov 29 10:00 ..\n-rw-r--r-- 1 root root   31 Nov 29 10:00 README.md"
	readme      = "# Demo\nA place for small scripts.\n"
	subDone     = "Created /work/hello.sh and /work/test_hello.sh; both are executable and the test passes."
)

// claudeCodeRun is a Claude Code run: a main thread whose first answer makes two parallel
// calls and whose second spawns a subagent with the Agent tool, which blocks until the
// subagent is done.
func claudeCodeRun() []*gThread {
	const agentID = "toolu_01Gold5pAwnAgent0000003"
	sub := &gThread{
		id:     "subagent-1",
		parent: &tape.Parent{ThreadID: "main", ToolCallID: agentID},
		system: "You are an agent for Claude Code, Anthropic's official CLI for Claude. Given the user's message, use the tools available to complete the task.",
		prompt: "Create /work/hello.sh that prints \"Hello, NAME!\" (NAME defaults to world) and /work/test_hello.sh that checks both cases and prints ok. Make both executable and run the test.",
		turns: []gTurn{
			{
				thinking: "Two files, independent: write both at once.",
				calls: []gCall{
					{id: "toolu_01GoldWr1teHello0000101", name: "Write", input: string(enc(obj{{"file_path", "/work/hello.sh"}, {"content", helloScript}})),
						result: "File created successfully at: /work/hello.sh (file state is current in your context — no need to Read it back)"},
					{id: "toolu_01GoldWr1teTest00000102", name: "Write", input: string(enc(obj{{"file_path", "/work/test_hello.sh"}, {"content", helloTest}})),
						result: "File created successfully at: /work/test_hello.sh (file state is current in your context — no need to Read it back)"},
				},
				ttfb: 1432.118, toolMS: 21.406,
			},
			{
				calls: []gCall{{id: "toolu_01GoldChm0dTest0000201", name: "Bash", input: `{"command":"chmod +x /work/hello.sh /work/test_hello.sh && sh /work/test_hello.sh","description":"Make the scripts executable and run the test"}`,
					result: "ok"}},
				ttfb: 988.502, toolMS: 64.731,
			},
			{text: subDone, ttfb: 1104.07},
		},
	}
	main := &gThread{
		id:     "main",
		system: "\nYou are an agent working with the user toward their goals, using your own judgment along the way.\n\nIMPORTANT: Keep the user informed.",
		prompt: helloTask,
		turns: []gTurn{
			{
				thinking: "Look at the directory and the README first; both reads are independent.",
				text:     "I'll look at the project first.",
				calls: []gCall{
					{id: "toolu_01GoldLsLa000000000001", name: "Bash", input: `{"command":"ls -la /work","description":"List the project files"}`, result: lsOutput},
					{id: "toolu_01GoldReadMe00000000002", name: "Read", input: `{"file_path":"/work/README.md"}`, result: "1\t# Demo\n2\tA place for small scripts.\n3\t"},
				},
				ttfb: 1873.254, toolMS: 48.913,
			},
			{
				text: "I'll have a subagent write the script and its test.",
				calls: []gCall{{id: agentID, name: "Agent", listResult: true,
					input:  string(enc(obj{{"description", "Write hello.sh and its test"}, {"prompt", sub.prompt}, {"subagent_type", "general-purpose"}, {"run_in_background", false}})),
					result: subDone + "\nagentId: a3f9c2e1b7d4 (for resuming to continue this agent's work if needed)\n<usage>total_tokens: 4217\ntool_uses: 3\nduration_ms: 5120</usage>"}},
				ttfb: 1312.877, toolMS: 18.25,
			},
			{
				calls: []gCall{{id: "toolu_01GoldRunTest0000000004", name: "Bash", input: `{"command":"sh /work/test_hello.sh","description":"Run the test"}`, result: "ok"}},
				ttfb:  902.66, toolMS: 57.004, after: "subagent-1",
			},
			{text: "Done: /work/hello.sh prints the greeting and /work/test_hello.sh passes.", ttfb: 1240.3},
		},
	}
	return []*gThread{main, sub}
}

// codexRun is a Codex run: a main thread whose first answer makes two parallel
// exec_command calls, then spawns a subagent with spawn_agent (which returns at once) and
// waits for it with wait. The subagent edits with apply_patch: a freeform custom tool on
// the Responses API, a function taking {"input"} on Chat Completions.
func codexRun(freeformPatch bool) []*gThread {
	const (
		spawnID = "call_GoldSpawnAgent0003"
		agentID = "019a2b3c-4d5e-7f60-8a9b-0c1d2e3f4a5b"
	)
	exec := func(id, cmd, out string) gCall {
		return gCall{id: id, name: "exec_command", input: string(enc(obj{{"cmd", cmd}, {"workdir", "/work"}})),
			result: fmt.Sprintf("Chunk ID: %06x\nWall time: 0.0000 seconds\nProcess exited with code 0\nOriginal token count: %d\nOutput:\n%s", fnv24(id), len(out)/4, out)}
	}
	patch := "*** Begin Patch\n*** Add File: hello.sh\n+#!/bin/sh\n+echo \"Hello, ${1:-world}!\"\n*** Add File: test_hello.sh\n+#!/bin/sh\n+set -e\n+[ \"$(sh /work/hello.sh)\" = \"Hello, world!\" ]\n+[ \"$(sh /work/hello.sh Ada)\" = \"Hello, Ada!\" ]\n+echo ok\n*** End Patch\n"
	patchCall := gCall{id: "call_GoldApplyPatch0101", name: "apply_patch", custom: freeformPatch, input: patch,
		result: "Exit code: 0\nWall time: 0 seconds\nOutput:\nSuccess. Updated the following files:\nA hello.sh\nA test_hello.sh\n"}
	if !freeformPatch {
		patchCall.input = string(enc(obj{{"input", patch}}))
	}
	sub := &gThread{
		id:     "subagent-1",
		parent: &tape.Parent{ThreadID: "main", ToolCallID: spawnID},
		system: "You are Codex, a coding agent based on GPT-5, working as a sub-agent. Do the task you are given and report briefly.",
		prompt: "Create /work/hello.sh printing \"Hello, NAME!\" (NAME defaults to world) and /work/test_hello.sh checking both cases and printing ok; make both executable and run the test.",
		turns: []gTurn{
			{thinking: "**Writing both files in one patch**", calls: []gCall{patchCall}, ttfb: 1650.5, toolMS: 35.2},
			{calls: []gCall{exec("call_GoldChmodTest0201", "chmod +x hello.sh test_hello.sh && sh test_hello.sh", "ok\n")}, ttfb: 1022.75, toolMS: 71.9},
			{text: subDone, ttfb: 980.125},
		},
	}
	main := &gThread{
		id:     "main",
		system: "You are Codex, a coding agent based on GPT-5. You and the user share one workspace, and your job is to collaborate with them until their goal is genuinely handled.",
		prompt: helloTask,
		turns: []gTurn{
			{
				thinking: "**Looking around before writing**",
				calls: []gCall{
					exec("call_GoldListFiles0001", "ls -la", lsOutput+"\n"),
					exec("call_GoldReadReadme002", "cat README.md", readme),
				},
				ttfb: 2104.31, toolMS: 41.77,
			},
			{
				text:  "Delegating the script and its test to a sub-agent.",
				calls: []gCall{{id: spawnID, name: "spawn_agent", input: string(enc(obj{{"message", sub.prompt}, {"agent_type", "worker"}})), result: `{"agent_id":"` + agentID + `","nickname":"Galileo"}`}},
				ttfb:  1388.6, toolMS: 12.4,
			},
			{
				calls: []gCall{{id: "call_GoldWaitAgent00004", name: "wait", input: `{"ids":["` + agentID + `"],"timeout_ms":120000}`,
					result: `{"status":{"` + agentID + `":{"completed":"` + subDone + `"}},"timed_out":false}`}},
				ttfb: 860.05, toolMS: 40.0, // wait returns when the subagent is done
			},
			{
				calls: []gCall{exec("call_GoldRunTest000005", "sh test_hello.sh", "ok\n")},
				ttfb:  930.4, toolMS: 66.3, after: "subagent-1",
			},
			{text: "Done: hello.sh prints the greeting and test_hello.sh passes.", ttfb: 1190.8},
		},
	}
	return []*gThread{main, sub}
}

// fnv24 is a stable stand-in for Codex's random 6-hex-digit chunk ids.
func fnv24(s string) uint32 {
	h := fnv.New32a()
	h.Write([]byte(s))
	return h.Sum32() & 0xffffff
}

// ms rounds to microseconds, as tape.RoundMS does.
func ms(x float64) float64 { return math.Round(x*1000) / 1000 }

// chunkGaps spaces a stream's events the way a model's tokens arrive: uneven, tens of ms.
var chunkGaps = []float64{7.412, 18.903, 11.266, 24.081, 9.735, 15.52}

// buildGolden records a scripted run into a tape, with the project's own code: requests
// and responses are raw bodies in the real shapes; everything normalized comes from
// provider.Normalize and provider.ToolResults.
func buildGolden(t testing.TB, g golden) *tape.Tape {
	p := g.w.provider()
	tp := tape.New(p, goldenStart)
	tp.Meta.TapeID = g.tapeID
	tp.Meta.Harness = g.harness
	tp.Meta.HarnessVersion = g.version
	tp.Meta.Model = g.model
	tp.Meta.Task = map[string]string{"id": "hello-greeting", "bench": "golden", "prompt": helloTask}
	tp.Meta.Labels = map[string]string{"format": g.file[:len(g.file)-len(".json")], "source": "tape/provider golden test"}

	byID := map[string]*gThread{}
	for _, th := range g.threads {
		byID[th.id] = th
	}
	steps := map[string][]*tape.Step{}
	var record func(th *gThread, start float64) float64
	// record plays a thread from its first request time and returns when its last
	// response ended.
	record = func(th *gThread, start float64) float64 {
		at := start
		for i, turn := range th.turns {
			if turn.after != "" {
				at = max(at, ms(threadEnd(steps[turn.after])+turn.toolMS))
			}
			if i > 0 && steps[th.id] != nil {
				prev := steps[th.id][i-1]
				next := at
				prev.Timing.NextRequestAt = &next
			}
			raw := g.w.request(th, i, g.stream)
			require.Equal(t, g.w.provider(), mustDetect(t, g.w.path()))
			s := &tape.Step{
				Request:  tape.Request{Path: g.w.path(), Headers: g.w.requestHeaders(th, g.stream), Raw: raw},
				Response: tape.Response{Status: 200, Headers: g.w.responseHeaders(th, i, g.stream)},
				Timing:   tape.Timing{RequestAt: at},
			}
			if g.stream {
				for k, ev := range g.w.events(th, i) {
					off := turn.ttfb
					for j := range k {
						off += chunkGaps[j%len(chunkGaps)]
					}
					s.Response.Chunks = append(s.Response.Chunks, tape.Chunk{AtMS: ms(off), Data: ev})
				}
				s.Timing.FirstByteAt = ms(at + s.Response.Chunks[0].AtMS)
				s.Timing.LastByteAt = ms(at + s.Response.Chunks[len(s.Response.Chunks)-1].AtMS)
			} else {
				s.Response.Raw = g.w.body(th, i)
				s.Timing.FirstByteAt = ms(at + turn.ttfb)
				s.Timing.LastByteAt = ms(at + turn.ttfb + 1.208)
			}
			require.NoError(t, provider.Normalize(p, s), "%s %s step %d", g.file, th.id, i)
			steps[th.id] = append(steps[th.id], s)
			// A subagent starts when the call that spawns it has arrived.
			for _, c := range s.ToolCalls {
				for _, child := range g.threads {
					if child.parent != nil && child.parent.ThreadID == th.id && child.parent.ToolCallID == c.ID {
						record(child, ms(s.Timing.LastByteAt+31.517))
					}
				}
			}
			at = ms(s.Timing.LastByteAt + turn.toolMS)
		}
		// Tool results come from the thread's next request, as the gateway takes them.
		ss := steps[th.id]
		for i := 0; i+1 < len(ss); i++ {
			rs, err := provider.ToolResults(p, ss[i+1].Request.Raw, ss[i].ToolCalls)
			require.NoError(t, err)
			require.Len(t, rs, len(ss[i].ToolCalls), "%s %s step %d: every call is answered in the next request", g.file, th.id, i)
			ss[i].ToolResults = rs
		}
		return threadEnd(ss)
	}
	end := record(byID["main"], 14.862)
	for _, th := range g.threads {
		tp.Threads = append(tp.Threads, &tape.Thread{ID: th.id, Parent: th.parent, Steps: steps[th.id]})
	}
	tp.Meta.Ended = &tape.Ended{Reason: tape.EndComplete, At: goldenStart.Add(time.Duration(ms(end+37.5) * float64(time.Millisecond)))}
	return tp
}

func threadEnd(ss []*tape.Step) float64 {
	if len(ss) == 0 {
		return 0
	}
	return ss[len(ss)-1].Timing.LastByteAt
}

func mustDetect(t testing.TB, path string) tape.Provider {
	p, ok := provider.Detect(path)
	require.True(t, ok, path)
	return p
}

// TestGoldenTapes builds the golden tapes and checks that the files in testdata/ are
// exactly what the code produces. Regenerate them with
//
//	go test ./tape/provider -run TestGoldenTapes -update
func TestGoldenTapes(t *testing.T) {
	for _, g := range goldens() {
		t.Run(g.file, func(t *testing.T) {
			tp := buildGolden(t, g)
			checkGoldenShape(t, tp, g)
			path := filepath.Join(goldenDir, g.file)
			if *update {
				require.NoError(t, tape.Save(path, tp))
			}
			want, err := tape.Marshal(tp)
			require.NoError(t, err)
			got, err := os.ReadFile(path)
			require.NoError(t, err, "run with -update to create it")
			if !bytes.Equal(want, got) {
				t.Fatalf("%s differs from what the code produces; run go test ./tape/provider -run TestGoldenTapes -update and review the diff", path)
			}
		})
	}
}

// checkGoldenShape checks what the golden tapes are for: several steps in the main thread,
// one answer with two parallel calls, a subagent thread pointing at the call that spawned
// it, every call but the last answered, consistent timing.
func checkGoldenShape(t *testing.T, tp *tape.Tape, g golden) {
	require.Len(t, tp.Threads, 2)
	main, sub := tp.Threads[0], tp.Threads[1]
	assert.Nil(t, main.Parent)
	assert.GreaterOrEqual(t, len(main.Steps), 4)
	assert.Len(t, main.Steps[0].ToolCalls, 2, "parallel calls")
	ref, call, ok := tp.ParentCall(sub)
	require.True(t, ok, "the subagent's parent call is in the tape")
	assert.Equal(t, "main", ref.Thread.ID)
	assert.Contains(t, []string{"Agent", "spawn_agent"}, call.Name)
	for _, th := range tp.Threads {
		last := th.Steps[len(th.Steps)-1]
		assert.Empty(t, last.ToolCalls, "%s ends with an answer", th.ID)
		assert.Nil(t, last.Timing.NextRequestAt)
		for i, s := range th.Steps {
			assert.Equal(t, g.stream, s.Request.Stream)
			assert.Equal(t, g.stream, len(s.Response.Chunks) > 0)
			assert.NotEmpty(t, s.Response.StopReason)
			assert.Positive(t, s.Response.Usage.OutputTokens)
			assert.Len(t, s.ToolResults, len(s.ToolCalls))
			assert.Less(t, s.Timing.RequestAt, s.Timing.FirstByteAt)
			assert.LessOrEqual(t, s.Timing.FirstByteAt, s.Timing.LastByteAt)
			if s.Timing.NextRequestAt != nil {
				assert.Less(t, s.Timing.LastByteAt, *s.Timing.NextRequestAt, "%s step %d", th.ID, i)
				assert.Equal(t, *s.Timing.NextRequestAt, th.Steps[i+1].Timing.RequestAt)
			}
			for k, v := range s.Request.Headers {
				if k == "authorization" || k == "x-api-key" {
					assert.Equal(t, "[redacted]", v)
				}
			}
		}
	}
	assert.Greater(t, sub.Steps[0].Timing.RequestAt, ref.Step.Timing.LastByteAt, "the subagent starts after its spawning call")
}

// TestTestdataRenormalizes loads every tape in testdata/ and checks that normalizing every
// step again from its raw bodies gives back the same bytes, and, for recordings, that each
// step's tool results are what ToolResults takes from the thread's next request.
func TestTestdataRenormalizes(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(goldenDir, "*.json"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			orig, err := os.ReadFile(file)
			require.NoError(t, err)
			tp, err := tape.Unmarshal(orig)
			require.NoError(t, err)
			p := tp.Meta.Provider
			for _, th := range tp.Threads {
				for i, s := range th.Steps {
					if got, ok := provider.Detect(s.Request.Path); ok {
						assert.Equal(t, p, got, "%s step %d path %s", th.ID, i, s.Request.Path)
					}
					require.NoError(t, provider.Normalize(p, s), "%s step %d", th.ID, i)
					if tp.Meta.ReplayOf == nil && i+1 < len(th.Steps) {
						rs, err := provider.ToolResults(p, th.Steps[i+1].Request.Raw, s.ToolCalls)
						require.NoError(t, err)
						if rs == nil {
							rs = []tape.ToolResult{}
						}
						assert.Equal(t, s.ToolResults, rs, "%s step %d tool results", th.ID, i)
					}
				}
			}
			again, err := tape.Marshal(tp)
			require.NoError(t, err)
			if !bytes.Equal(orig, again) {
				t.Fatalf("re-normalizing %s from raw changed it", file)
			}
		})
	}
}
