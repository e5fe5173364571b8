package interop

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// FuzzImport feeds arbitrary session files to the importers (Claude Code, Codex, STS, Pi,
// Gemini CLI, OpenCode, and the one that detects the format): they return tapes or an error, never
// panic.
func FuzzImport(f *testing.F) {
	formats := []Format{ClaudeCode, Codex, STS, Auto, Pi, GeminiCLI, OpenCode}
	for _, c := range []struct {
		tape   string
		format Format
	}{{"claude-code.json", ClaudeCode}, {"codex.json", Codex}, {"codex.json", STS}} {
		tp := loadTestTape(f, c.tape)
		files, err := Export(tp, c.format, Options{})
		if err != nil {
			f.Fatal(err)
		}
		f.Add(files[0].Data, uint8(slices.Index(formats, c.format)))
		f.Add(files[0].Data, uint8(3))
	}
	f.Add([]byte(`{"type":"assistant","message":{"id":"m","content":[{"type":"tool_use"}]}}`), uint8(0))
	f.Add([]byte(`{"type":"session_meta","payload":{"id":"x"}}`+"\n"+`{"type":"response_item","payload":{"type":"function_call_output"}}`), uint8(1))
	f.Add([]byte(`{"type":"session","harness":"h","id":"s","parent":["main","c"]}`+"\n"+`{"type":"message","message":{"role":"assistant","toolCalls":[{"id":"c","function":{"name":"f","arguments":"x"}}]}}`), uint8(2))
	pi, err := os.ReadFile(piFixture)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(pi, uint8(4))
	f.Add(pi, uint8(3))
	f.Add([]byte(piHeader+"\n"+piUser+"\n"+piAssistant("a1", "u1", "openai-completions", "toolUse", piCall)+"\n"+piResult("r1", "a1", "call_1")), uint8(4))
	f.Add([]byte(piHeader+"\n"+`{"type":"compaction","id":"c","parentId":"c","firstKeptEntryId":"c"}`), uint8(4))
	f.Add([]byte(piHeader+"\n"+`{"type":"message","message":{"role":"bashExecution","command":"ls","exitCode":2}}`+"\n"+`{"type":"message","message":{"role":"assistant","content":[{"type":"thinking","redacted":true}]}}`), uint8(4))
	gemini, err := os.ReadFile(geminiFixture)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(gemini, uint8(5))
	f.Add(gemini, uint8(3))
	f.Add([]byte(geminiLines(`{"$rewindTo":"x"}`, `{"id":"g","type":"gemini","content":[{"functionCall":{"name":"n"}}],"toolCalls":[{"id":"c","name":"n","result":{"functionResponse":{}}}]}`)), uint8(5))
	qwen, err := os.ReadFile(qwenSample)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(qwen, uint8(0))
	f.Add(qwen, uint8(3))
	oc, err := os.ReadFile(filepath.Join(openCodeFixtures, "session.json"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(oc, uint8(6))
	f.Add([]byte(`{"info":{"id":"s"},"messages":[{"info":{"role":"assistant"},"parts":[{"type":"tool","tool":"task","callID":"c","state":{"status":"completed","metadata":{"sessionId":"s"}}}]}]}`), uint8(6))
	f.Fuzz(func(t *testing.T, data []byte, which uint8) {
		dir := t.TempDir()
		format := formats[int(which)%len(formats)]
		name := "s.jsonl"
		if format == Codex {
			name = "rollout-x.jsonl"
		}
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		tapes, err := Import(format, p)
		if err == nil && len(tapes) == 0 {
			t.Fatal("no error and no tape")
		}
		for _, tp := range tapes {
			for _, th := range tp.Threads {
				if th.Steps == nil {
					t.Fatal("nil steps")
				}
			}
		}
	})
}
