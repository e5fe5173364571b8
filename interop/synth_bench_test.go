package interop

import (
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkSynthesize writes the raw streams of imported tapes (the Claude Code and Codex
// test tapes exported and imported again), per tape.
func BenchmarkSynthesize(b *testing.B) {
	for _, c := range []struct {
		tape   string
		format Format
	}{{"claude-code.json", ClaudeCode}, {"codex.json", Codex}} {
		b.Run(string(c.format), func(b *testing.B) {
			files, err := Export(loadTestTape(b, c.tape), c.format, Options{})
			if err != nil {
				b.Fatal(err)
			}
			dir := b.TempDir()
			for _, f := range files {
				p := filepath.Join(dir, filepath.FromSlash(f.Path))
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					b.Fatal(err)
				}
				if err := os.WriteFile(p, f.Data, 0o644); err != nil {
					b.Fatal(err)
				}
			}
			got, err := Import(c.format, dir)
			if err != nil {
				b.Fatal(err)
			}
			imp := got[0]
			for b.Loop() {
				imp.Meta.Labels[LabelForm] = FormNormalized
				if err := Synthesize(imp); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
