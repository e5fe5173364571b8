package jsonlex

import (
	"os"
	"testing"
)

// BenchmarkCheckUnique measures the strict reader's pass over a tape (TAPEBOX_BENCH_TAPE
// names one; the golden tapes otherwise), against Skip's validating pass alone.
func BenchmarkCheckUnique(b *testing.B) {
	path := os.Getenv("TAPEBOX_BENCH_TAPE")
	if path == "" {
		path = "../../testdata/anthropic-stream.json"
	}
	data, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("CheckUnique", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			if err := CheckUnique(data); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Skip", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			if _, err := Skip(data, 0); err != nil {
				b.Fatal(err)
			}
		}
	})
}
