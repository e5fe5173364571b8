package provider_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/tapebox/tapebox/tape"
	"github.com/tapebox/tapebox/tape/provider"
)

// claudeCodeRequest is a Claude Code-shaped request (the testdata request: system blocks,
// tools with schemas, images, thinking) followed by 40 turns of thinking, text, a tool call
// and its result, pretty-printed as Claude Code sends it.
func claudeCodeRequest(tb testing.TB) []byte {
	return longRequest(tb, "anthropic/claude_code_request.json", "messages", true, func(i int) []any {
		id := fmt.Sprintf("toolu_01Bench%08d", i)
		return []any{
			map[string]any{"role": "assistant", "content": []any{
				map[string]any{"type": "thinking", "thinking": fmt.Sprintf("Step %d: the next file holds the helpers; read it before editing.", i), "signature": strings.Repeat("EqQBCkgIARABGAIiQHh5ejEyMw", 8)},
				map[string]any{"type": "text", "text": fmt.Sprintf("Reading file %d.", i)},
				map[string]any{"type": "tool_use", "id": id, "name": "Read", "input": map[string]any{"file_path": fmt.Sprintf("/work/src/file%03d.go", i), "limit": 200}},
			}},
			map[string]any{"role": "user", "content": []any{
				map[string]any{"tool_use_id": id, "type": "tool_result", "content": strings.Repeat(fmt.Sprintf("%d\tfunc f%d() string { return \"v%d\" }\n", i, i, i), 12)},
			}},
		}
	})
}

// codexRequest is a Codex-shaped Responses request (the testdata request) followed by 40
// turns of reasoning, a function call, its output and an assistant message.
func codexRequest(tb testing.TB) []byte {
	return longRequest(tb, "responses/codex_request.json", "input", false, func(i int) []any {
		id := fmt.Sprintf("call_bench%08d", i)
		return []any{
			map[string]any{"type": "reasoning", "id": fmt.Sprintf("rs_%d", i), "summary": []any{map[string]any{"type": "summary_text", "text": fmt.Sprintf("**Step %d**\n\nRead the next file.", i)}}, "content": nil, "encrypted_content": strings.Repeat("gAAAAABo0ZxQv3M", 20)},
			map[string]any{"type": "function_call", "id": fmt.Sprintf("fc_%d", i), "name": "exec_command", "arguments": fmt.Sprintf(`{"cmd":"sed -n 1,200p src/file%03d.go","workdir":"/work"}`, i), "call_id": id},
			map[string]any{"type": "function_call_output", "call_id": id, "output": "Chunk ID: 8e7254\nWall time: 0.0010 seconds\nProcess exited with code 0\nOutput:\n" + strings.Repeat(fmt.Sprintf("func f%d() string { return \"v%d\" }\n", i, i), 12)},
			map[string]any{"type": "message", "role": "assistant", "content": []any{map[string]any{"type": "output_text", "text": fmt.Sprintf("File %d read.", i), "annotations": []any{}}}},
		}
	})
}

// longRequest is the testdata request file with 40 turns appended to its list under key,
// turn(i) making the entries of turn i; indent pretty-prints it.
func longRequest(tb testing.TB, file, key string, indent bool, turn func(i int) []any) []byte {
	var req map[string]any
	if err := json.Unmarshal(readFile(tb, file), &req); err != nil {
		tb.Fatal(err)
	}
	list := req[key].([]any)
	for i := range 40 {
		list = append(list, turn(i)...)
	}
	req[key] = list
	var b []byte
	var err error
	if indent {
		b, err = json.MarshalIndent(req, "", " ")
	} else {
		b, err = json.Marshal(req)
	}
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// BenchmarkNormalizeRequest normalizes realistic requests alone (no response), as the
// gateway does for every call it forwards.
func BenchmarkNormalizeRequest(b *testing.B) {
	for _, c := range []struct {
		name string
		p    tape.Provider
		raw  []byte
	}{
		{"claude-code-40-turns", tape.ProviderAnthropic, claudeCodeRequest(b)},
		{"codex-responses-40-turns", tape.ProviderOpenAIResponses, codexRequest(b)},
	} {
		b.Run(c.name, func(b *testing.B) {
			s := &tape.Step{Request: tape.Request{Raw: c.raw}}
			b.SetBytes(int64(len(c.raw)))
			b.ReportAllocs()
			for b.Loop() {
				if err := provider.Normalize(c.p, s); err != nil {
					b.Fatal(err)
				}
			}
			if len(s.Request.Messages) < 80 {
				b.Fatalf("%d messages", len(s.Request.Messages))
			}
		})
	}
}
