package tape_test

import (
	"testing"

	"github.com/tapebox/tapebox/internal/testutil/tapegen"
	"github.com/tapebox/tapebox/tape"
)

// BenchmarkMarshal encodes generated tapes (Claude Code and Codex, streamed, with long raw
// bodies) and reports MB/s of canonical JSON written.
func BenchmarkMarshal(b *testing.B) {
	var tapes []*tape.Tape
	var n int64
	for i := range 8 {
		tp := tapegen.Tape(tapegen.Options{Seed: 1}, i)
		data, err := tape.Marshal(tp)
		if err != nil {
			b.Fatal(err)
		}
		tapes = append(tapes, tp)
		n += int64(len(data))
	}
	b.SetBytes(n)
	b.ReportAllocs()
	for b.Loop() {
		for _, tp := range tapes {
			if _, err := tape.Marshal(tp); err != nil {
				b.Fatal(err)
			}
		}
	}
}
