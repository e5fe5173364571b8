package provider_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/tape"
	"github.com/tapebox/tapebox/tape/provider"
)

// geminiWire writes Gemini API bodies as Gemini CLI 0.61.0 sends them and the API answers:
// calls without ids in the answers, the ids the CLI made up (NAME_MILLISECONDS_INDEX) in the
// history it sends back. The model and the stream flag are in the path.
type geminiWire struct {
	model  string
	stream bool
}

func (geminiWire) provider() tape.Provider { return tape.ProviderGemini }

func (w geminiWire) path() string {
	if w.stream {
		return "/v1beta/models/" + w.model + ":streamGenerateContent?alt=sse"
	}
	return "/v1beta/models/" + w.model + ":generateContent"
}

func (w geminiWire) requestHeaders(*gThread, bool) tape.Headers {
	return tape.Headers{
		"content-type":      "application/json",
		"user-agent":        "GeminiCLI/0.61.0/" + w.model + " (linux; x64; terminal)",
		"x-goog-api-client": "google-genai-sdk/1.30.0 gl-node/v20.20.2",
		"x-goog-api-key":    "[redacted]",
	}
}

func (w geminiWire) responseHeaders(th *gThread, i int, stream bool) tape.Headers {
	ct := "application/json; charset=UTF-8"
	if stream {
		ct = "text/event-stream"
	}
	return tape.Headers{"content-type": ct, "server-timing": fmt.Sprintf("gfet4t7; dur=%d", 900+41*i), "x-gemini-service-tier": "standard"}
}

func geminiDecl(name, description string, props obj, required ...string) obj {
	return obj{{"name", name}, {"description", description}, {"parametersJsonSchema", obj{{"type", "object"}, {"properties", props}, {"required", required}}}}
}

var geminiTools = []any{obj{{"functionDeclarations", []any{
	geminiDecl("read_file", "Reads and returns the content of a specified file.", obj{{"file_path", obj{{"type", "string"}}}, {"start_line", obj{{"type", "integer"}}}, {"end_line", obj{{"type", "integer"}}}}, "file_path"),
	geminiDecl("write_file", "Writes content to a specified file.", obj{{"file_path", obj{{"type", "string"}}}, {"content", obj{{"type", "string"}}}}, "file_path", "content"),
	geminiDecl("replace", "Replaces text within a file.", obj{{"file_path", obj{{"type", "string"}}}, {"instruction", obj{{"type", "string"}}}, {"old_string", obj{{"type", "string"}}}, {"new_string", obj{{"type", "string"}}}}, "file_path", "instruction", "old_string", "new_string"),
	geminiDecl("run_shell_command", "This tool executes a given shell command as `bash -c <command>`.", obj{{"command", obj{{"type", "string"}}}, {"description", obj{{"type", "string"}}}}, "command"),
}}}}

const geminiSession = "<session_context>\nThis is the Gemini CLI. We are setting up the context for our chat.\nToday's date is Sunday, November 29, 2026 (formatted according to the user's locale).\nMy operating system is: linux\nThe project's temporary directory is: /root/.gemini/tmp/work\n- **Workspace Directories:**\n  - /work\n- **Directory Structure:**\n\nShowing up to 200 items (files + folders).\n\n/work/\n└───README.md\n\n\n</session_context>"

// modelParts are the parts of turn t as the API sends them (no call ids) or, with ids, as
// the CLI sends them back (its ids, the first call's thought signature).
func (w geminiWire) modelParts(t gTurn, withIDs bool) []any {
	var parts []any
	if t.thinking != "" {
		parts = append(parts, obj{{"text", t.thinking}, {"thought", true}})
	}
	if t.text != "" {
		parts = append(parts, obj{{"text", t.text}})
	}
	for k, c := range t.calls {
		fc := obj{{"name", c.name}, {"args", rawJSON(c.input)}}
		if withIDs {
			fc = append(obj{{"id", c.id}}, fc...)
		}
		p := obj{{"functionCall", fc}}
		if k == 0 {
			p = append(p, kv{"thoughtSignature", "c2tpcF90aG91Z2h0X3NpZ25hdHVyZV92YWxpZGF0b3I="})
		}
		parts = append(parts, p)
	}
	return parts
}

// rawJSON keeps a call's arguments as written.
type rawJSON string

func (r rawJSON) MarshalJSON() ([]byte, error) { return []byte(r), nil }

func (w geminiWire) request(th *gThread, i int, stream bool) []byte {
	contents := []any{obj{{"role", "user"}, {"parts", []any{obj{{"text", geminiSession}}, obj{{"text", th.prompt}}}}}}
	for k := range i {
		t := th.turns[k]
		contents = append(contents, obj{{"role", "model"}, {"parts", w.modelParts(t, true)}})
		var results []any
		for _, c := range t.calls {
			resp := obj{{"output", c.result}}
			if c.isError {
				resp = obj{{"error", c.result}}
			}
			results = append(results, obj{{"functionResponse", obj{{"id", c.id}, {"name", c.name}, {"response", resp}}}})
		}
		contents = append(contents, obj{{"role", "user"}, {"parts", results}})
	}
	return enc(obj{
		{"contents", contents},
		{"systemInstruction", obj{{"role", "user"}, {"parts", []any{obj{{"text", th.system}}}}}},
		{"tools", geminiTools},
		{"generationConfig", obj{{"temperature", 1}, {"topP", 0.95}, {"topK", 64}, {"thinkingConfig", obj{{"includeThoughts", true}, {"thinkingBudget", 8192}}}}},
	})
}

func (w geminiWire) usage(th *gThread, i int) obj {
	now, before := promptTokens(w, th, i, 7000)
	cached := before / 256 * 256
	thoughts := int64(0)
	if th.turns[i].thinking != "" {
		thoughts = 48
	}
	out := tokens(outputSize(th.turns[i])) + 9
	u := obj{{"promptTokenCount", now}, {"candidatesTokenCount", out}, {"totalTokenCount", now + out + thoughts}}
	if cached > 0 {
		u = append(u, kv{"cachedContentTokenCount", cached})
	}
	if thoughts > 0 {
		u = append(u, kv{"thoughtsTokenCount", thoughts})
	}
	return u
}

func (w geminiWire) chunk(th *gThread, i int, parts []any, last bool) obj {
	cand := obj{{"content", obj{{"parts", parts}, {"role", "model"}}}}
	if last {
		cand = append(cand, kv{"finishReason", "STOP"})
	}
	cand = append(cand, kv{"index", 0})
	out := obj{{"candidates", []any{cand}}}
	if last {
		out = append(out, kv{"usageMetadata", w.usage(th, i)})
	}
	return append(out, kv{"modelVersion", w.model}, kv{"responseId", fmt.Sprintf("Gold%sTurn%02dxYz", idCode(th), i)})
}

func (w geminiWire) body(th *gThread, i int) []byte {
	return enc(w.chunk(th, i, w.modelParts(th.turns[i], false), true))
}

func (w geminiWire) events(th *gThread, i int) []string {
	t := th.turns[i]
	var parts []any
	for _, p := range pieces(t.thinking, 20) {
		parts = append(parts, obj{{"text", p}, {"thought", true}})
	}
	for _, p := range pieces(t.text, 16) {
		parts = append(parts, obj{{"text", p}})
	}
	calls := w.modelParts(gTurn{calls: t.calls}, false)
	var evs []string
	for k, p := range parts {
		evs = append(evs, "data: "+string(enc(w.chunk(th, i, []any{p}, len(calls) == 0 && k == len(parts)-1)))+"\r\n\r\n")
	}
	if len(calls) > 0 {
		// The API sends an answer's calls whole, together, in the last chunk.
		evs = append(evs, "data: "+string(enc(w.chunk(th, i, calls, true)))+"\r\n\r\n")
	}
	return evs
}

// geminiRun is a Gemini CLI run: two calls at once, a write, an edit, a read of a missing
// file (an error), then the answer.
func geminiRun() []*gThread {
	return []*gThread{{
		id:     "main",
		system: "You are Gemini CLI, an interactive CLI agent specializing in software engineering tasks.",
		prompt: helloTask,
		turns: []gTurn{
			{
				thinking: "Look at the directory and the README first; both are independent.",
				text:     "I'll look at the project first.",
				calls: []gCall{
					{id: "run_shell_command_1795944365102_0", name: "run_shell_command", input: `{"command":"ls -la /work","description":"List the project files"}`,
						result: "<untrusted_context>\nOutput: " + lsOutput + "\nProcess Group PGID: 4127\n</untrusted_context>"},
					{id: "read_file_1795944365118_1", name: "read_file", input: `{"file_path":"README.md"}`, result: readme},
				},
				ttfb: 1512.33, toolMS: 61.27,
			},
			{
				calls: []gCall{{id: "write_file_1795944367230_0", name: "write_file", input: string(enc(obj{{"file_path", "/work/hello.sh"}, {"content", helloScript}})),
					result: "Successfully created and wrote to new file: /work/hello.sh. Here is the updated code:\n" + helloScript}},
				ttfb: 1188.4, toolMS: 22.9,
			},
			{
				calls: []gCall{{id: "replace_1795944369011_0", name: "replace", input: `{"file_path":"/work/README.md","instruction":"Document hello.sh","old_string":"small scripts.","new_string":"small scripts: hello.sh greets."}`,
					result: "Successfully modified file: /work/README.md (1 replacements). Here is the updated code:\n# Demo\nA place for small scripts: hello.sh greets.\n"}},
				ttfb: 1033.02, toolMS: 18.61,
			},
			{
				calls: []gCall{{id: "read_file_1795944370542_0", name: "read_file", input: `{"file_path":"test_hello.sh"}`, isError: true,
					result: "File not found: /work/test_hello.sh"}},
				ttfb: 942.17, toolMS: 9.84,
			},
			{text: "Added hello.sh and documented it in the README.", ttfb: 1101.5},
		},
	}}
}

// TestGeminiGoldenTapes builds the Gemini golden tapes (testdata/gemini-json.json and
// gemini-stream.json at the top of the module) and checks them against the files, as
// TestGoldenTapes does for the other formats; regenerate with -update.
func TestGeminiGoldenTapes(t *testing.T) {
	for i, stream := range []bool{true, false} {
		kind := map[bool]string{true: "stream", false: "json"}[stream]
		g := golden{file: "gemini-" + kind + ".json", tapeID: fmt.Sprintf("90a1d5c2e7f34b6a8c0d1e2f3a4b5c7%d", i),
			harness: "gemini-cli", version: "0.61.0", model: "gemini-2.5-pro", w: geminiWire{model: "gemini-2.5-pro", stream: stream}, stream: stream, threads: geminiRun()}
		t.Run(g.file, func(t *testing.T) {
			tp := buildGolden(t, g)
			main := tp.Threads[0]
			require.Len(t, main.Steps, 5)
			assert.Len(t, main.Steps[0].ToolCalls, 2, "parallel calls")
			for k, s := range main.Steps {
				assert.Equal(t, stream, s.Request.Stream)
				assert.Equal(t, `"gemini-2.5-pro"`, string(s.Request.Params["model"]))
				assert.Equal(t, "STOP", s.Response.StopReason)
				assert.Equal(t, "/work", provider.Cwd(&s.Request))
				for _, c := range s.ToolCalls {
					assert.Regexp(t, `^gemini-[0-9a-f]{16}-\d$`, c.ID, "step %d: the tape names calls the API sent without ids", k)
				}
			}
			assert.True(t, main.Steps[3].ToolResults[0].IsError, "a functionResponse error is an error")
			assert.Equal(t, "File not found: /work/test_hello.sh", main.Steps[3].ToolResults[0].Text())
			assert.Positive(t, main.Steps[1].Response.Usage.CacheReadInputTokens)
			assert.Equal(t, int64(48), main.Steps[0].Response.Usage.ReasoningTokens)
			path := filepath.Join(goldenDir, g.file)
			if *update {
				require.NoError(t, tape.Save(path, tp))
			}
			want, err := tape.Marshal(tp)
			require.NoError(t, err)
			got, err := os.ReadFile(path)
			require.NoError(t, err, "run with -update to create it")
			if !bytes.Equal(want, got) {
				t.Fatalf("%s differs from what the code produces; run go test ./tape/provider -run TestGeminiGoldenTapes -update and review the diff", path)
			}
		})
	}
}
