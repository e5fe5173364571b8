package interop

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzImport feeds arbitrary session files to both importers: they return tapes or an
// error, never panic.
func FuzzImport(f *testing.F) {
	for _, c := range []struct {
		tape   string
		format Format
	}{{"claude-code.json", ClaudeCode}, {"codex.json", Codex}} {
		tp := loadTestTape(f, c.tape)
		files, err := Export(tp, c.format, Options{})
		if err != nil {
			f.Fatal(err)
		}
		f.Add(files[0].Data, c.format == Codex)
	}
	f.Add([]byte(`{"type":"assistant","message":{"id":"m","content":[{"type":"tool_use"}]}}`), false)
	f.Add([]byte(`{"type":"session_meta","payload":{"id":"x"}}`+"\n"+`{"type":"response_item","payload":{"type":"function_call_output"}}`), true)
	f.Fuzz(func(t *testing.T, data []byte, codex bool) {
		dir := t.TempDir()
		name, format := "s.jsonl", ClaudeCode
		if codex {
			name, format = "rollout-x.jsonl", Codex
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
