package interop

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// BenchmarkDetectClaudeCode measures Detect on a Claude Code session file of 2,000 entries
// (~1 MB), which it now reads whole (checkClaudeCode) where it read the first line.
func BenchmarkDetectClaudeCode(b *testing.B) {
	p := claudeSessionFile(b)
	for b.Loop() {
		if f, err := Detect(p); err != nil || f != ClaudeCode {
			b.Fatal(f, err)
		}
	}
}

// BenchmarkImportClaudeCode is the import of the same file, to set Detect's cost against.
func BenchmarkImportClaudeCode(b *testing.B) {
	p := claudeSessionFile(b)
	for b.Loop() {
		if _, err := Import(ClaudeCode, p); err != nil {
			b.Fatal(err)
		}
	}
}

// claudeSessionFile writes a Claude Code session of 2,000 entries (~1 MB) for the two
// benchmarks above and sets the bytes each op reads.
func claudeSessionFile(b *testing.B) string {
	var sb strings.Builder
	for i := range 1000 {
		sb.WriteString(`{"type":"user","uuid":"u","sessionId":"s","cwd":"/w","version":"2.1.0","message":{"role":"user","content":"` + strings.Repeat("x", 200) + `"}}` + "\n")
		sb.WriteString(`{"type":"assistant","uuid":"a","sessionId":"s","message":{"id":"m` + string(rune('a'+i%26)) + `","role":"assistant","model":"claude-x","content":[{"type":"text","text":"` + strings.Repeat("y", 200) + `"}]}}` + "\n")
	}
	p := filepath.Join(b.TempDir(), "s.jsonl")
	if err := os.WriteFile(p, []byte(sb.String()), 0o644); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(sb.Len()))
	return p
}
