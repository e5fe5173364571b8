package tape

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// bigStep is a step whose raw request holds a large conversation (64 KiB), as real agent
// requests do.
func bigStep(i int) *Step {
	s := testStep(i, 1024)
	s.Request.Raw = json.RawMessage(fmt.Sprintf(`{"model":"m","n":%d,"messages":[{"role":"user","content":%q}]}`, i, strings.Repeat("lorem ipsum ", 64<<10/12)))
	return s
}

// BenchmarkWriterStep measures persisting one model call (the previous step learns its tool
// results, the new step is appended, Sync) when the tape already holds N steps. The cost at
// step 500 should be within 1.5x of step 1; "rewrite" is the naive whole-file Save at the
// same size, for comparison.
//
// digests=on is the same with the digest chain (WithDigests): the hashing a step costs,
// side by side with the Writer without it.
func BenchmarkWriterStep(b *testing.B) {
	for _, digests := range []bool{false, true} {
		for _, n := range []int{1, 500} {
			name := fmt.Sprintf("step=%d", n)
			var opts []Option
			if digests {
				name, opts = "digests=on/"+name, []Option{WithDigests(testHashing)}
			}
			b.Run(name, func(b *testing.B) {
				w, main := benchWriter(b, n, opts...)
				i := n
				for b.Loop() {
					persistStep(b, w, main, i)
					i++
				}
			})
		}
	}
	b.Run("rewrite/step=500", func(b *testing.B) {
		w, _ := benchWriter(b, 500)
		path := filepath.Join(b.TempDir(), "naive.json")
		for b.Loop() {
			if err := Save(path, w.Tape()); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func benchWriter(b *testing.B, n int, opts ...Option) (*Writer, int) {
	b.Helper()
	w, err := Create(filepath.Join(b.TempDir(), "run.json"), New(ProviderAnthropic, time.Unix(0, 0)), opts...)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { w.Close() })
	main, err := w.AddThread("main", nil)
	if err != nil {
		b.Fatal(err)
	}
	for i := range n - 1 {
		if _, err := w.AppendStep(main, bigStep(i)); err != nil {
			b.Fatal(err)
		}
	}
	if err := w.Sync(); err != nil {
		b.Fatal(err)
	}
	if err := w.Sync(); err != nil { // both slots hold the prefix
		b.Fatal(err)
	}
	return w, main
}

func persistStep(b *testing.B, w *Writer, main, i int) {
	if i > 1 {
		if err := w.UpdateStep(main, i-2, func(s *Step) {
			s.ToolResults = []ToolResult{{ToolCallID: s.ToolCalls[0].ID, Content: []Block{{Type: BlockText, Text: "done"}}}}
		}); err != nil {
			b.Fatal(err)
		}
	}
	if _, err := w.AppendStep(main, bigStep(i)); err != nil {
		b.Fatal(err)
	}
	if err := w.Sync(); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkVerify measures Verify on a sealed tape of 200 steps with 64 KiB requests, in
// bytes per second of tape.
func BenchmarkVerify(b *testing.B) {
	tp := New(ProviderAnthropic, time.Unix(0, 0))
	tp.Threads = []*Thread{{ID: "main"}}
	for i := range 200 {
		tp.Threads[0].Steps = append(tp.Threads[0].Steps, bigStep(i))
	}
	if err := Seal(tp, testHashing); err != nil {
		b.Fatal(err)
	}
	data, err := Marshal(tp)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		v, err := Verify(bytes.NewReader(data), VerifyOptions{Hashing: testHashing})
		if err != nil || v.State != DigestsOK {
			b.Fatalf("%v %+v", err, v)
		}
	}
}

// BenchmarkWriterStepDigests isolates the digests' cost per persisted step: the Writer
// without fsync (what the gateway runs on its answer's path; it fsyncs off it), at step
// 500 of a tape of 64 KiB requests, digests off and on.
func BenchmarkWriterStepDigests(b *testing.B) {
	for _, digests := range []bool{false, true} {
		var opts []Option
		if digests {
			opts = append(opts, WithDigests(testHashing))
		}
		b.Run(fmt.Sprintf("digests=%v", digests), func(b *testing.B) {
			w, main := benchWriter(b, 500, opts...)
			w.SetFsync(false)
			i := 500
			for b.Loop() {
				persistStep(b, w, main, i)
				i++
			}
		})
	}
}

// BenchmarkStepHash is the hashing alone of one step of a 64 KiB request: its request,
// answer and end pieces, and the link.
func BenchmarkStepHash(b *testing.B) {
	s := bigStep(1)
	req, err := marshalRequest(&s.Request)
	if err != nil {
		b.Fatal(err)
	}
	answer, err := marshalResponse(&s.Response)
	if err != nil {
		b.Fatal(err)
	}
	timing := []byte(`{"request_at":1,"first_byte_at":2,"last_byte_at":3,"next_request_at":null}`)
	b.SetBytes(int64(len(req) + len(answer) + len(timing)))
	var prev sum
	for b.Loop() {
		hs := testHashing
		st := hs.hashAnswer(hs.hashRequest(req), answer)
		canon := make([][]byte, len(stepTable().fields))
		canon[stepTiming], canon[stepToolCalls], canon[stepToolResults] = mustCanonical(timing), []byte("[]"), []byte("[]")
		prev = hs.chain(prev, hs.hashEnd(st, canon))
	}
}
