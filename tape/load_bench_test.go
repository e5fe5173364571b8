package tape_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/tapebox/tapebox/internal/testutil/tapegen"
	"github.com/tapebox/tapebox/tape"
)

// BenchmarkLoad measures tape.Unmarshal (what Load and LoadFile run) on generated tapes
// (tapegen, 25 steps on average, the whole conversation in every request), in bytes per
// second of tape.
func BenchmarkLoad(b *testing.B) {
	dir := filepath.Join(b.TempDir(), "tapes")
	if _, err := tapegen.Generate(b.Context(), dir, tapegen.Options{Tapes: 4, Seed: 1}); err != nil {
		b.Fatal(err)
	}
	names, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil || len(names) == 0 {
		b.Fatalf("no tapes in %s: %v", dir, err)
	}
	var files [][]byte
	var size int64
	for _, n := range names {
		data, err := os.ReadFile(n)
		if err != nil {
			b.Fatal(err)
		}
		files = append(files, data)
		size += int64(len(data))
	}
	b.SetBytes(size)
	for b.Loop() {
		for _, data := range files {
			if _, err := tape.Unmarshal(data); err != nil {
				b.Fatal(err)
			}
		}
	}
}
