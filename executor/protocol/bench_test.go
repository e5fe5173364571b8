package protocol

import (
	"bytes"
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/tapebox/tapebox/tape"
)

// benchLines are a call and a result as the controller and the executor exchange them:
// a Bash call with a short command and a result of a few KiB with escapes.
func benchLines(b *testing.B) (call, result []byte) {
	input, _ := json.Marshal(map[string]any{"command": "ls -la /work && cat README.md", "description": "List files"})
	var buf bytes.Buffer
	enc := NewEncoder(&buf)
	if err := enc.Encode(&Call{Op: OpCall, ID: "42", Call: tape.ToolCall{ID: "toolu_01ABC", Name: "Bash", Input: input}}); err != nil {
		b.Fatal(err)
	}
	call = bytes.Clone(buf.Bytes())
	buf.Reset()
	text := strings.Repeat("drwxr-xr-x  2 root root 4096 Dec  1 12:00 \"dir\"\tété\n", 60)
	d := 12.5
	if err := enc.Encode(&Result{Op: OpResult, ID: "42", Result: tape.ToolResult{ToolCallID: "toolu_01ABC", Content: []tape.Block{{Type: "text", Text: text}}, DurationMS: &d}}); err != nil {
		b.Fatal(err)
	}
	return call, bytes.Clone(buf.Bytes())
}

func BenchmarkDecodeCall(b *testing.B) {
	call, _ := benchLines(b)
	benchDecode(b, call, decodeCall)
}

func BenchmarkDecodeResult(b *testing.B) {
	_, result := benchLines(b)
	benchDecode(b, result, decodeResult)
}

// BenchmarkEncode is the hand-written encoder on benchLines' call and result.
func BenchmarkEncode(b *testing.B) {
	call, result, c, r := benchMessages(b)
	b.Run("call", func(b *testing.B) { benchAppend(b, len(call), c, appendCall) })
	b.Run("result", func(b *testing.B) { benchAppend(b, len(result), r, appendResult) })
}

// benchMessages are benchLines and the call and result they hold.
func benchMessages(b *testing.B) (call, result []byte, c *Call, r *Result) {
	call, result = benchLines(b)
	c, r = &Call{}, &Result{}
	if !decodeCall(call, c) || !decodeResult(result, r) {
		b.Fatal("slow path")
	}
	return call, result, c, r
}

// benchDecode decodes line into a fresh T per round with the fast decoder decode, which
// must take it.
func benchDecode[T any](b *testing.B, line []byte, decode func([]byte, *T) bool) {
	b.SetBytes(int64(len(line)))
	var v, zero T // v outside the loop: decode is a func value, so v escapes once
	for b.Loop() {
		v = zero
		if !decode(line, &v) {
			b.Fatal("slow path")
		}
	}
}

// benchAppend encodes v, a line of n bytes, with the fast encoder appendLine, which must
// take it, into a reused buffer.
func benchAppend[T any](b *testing.B, n int, v *T, appendLine func([]byte, *T) ([]byte, bool)) {
	b.SetBytes(int64(n))
	var buf []byte
	for b.Loop() {
		var ok bool
		if buf, ok = appendLine(buf[:0], v); !ok {
			b.Fatal("slow path")
		}
	}
}

// BenchmarkEncoder is Encoder.Encode, the type switch and the write included, on
// benchLines' call and result and on the other messages the executor sends, to io.Discard.
func BenchmarkEncoder(b *testing.B) {
	_, _, c, r := benchMessages(b)
	id := "42"
	for _, bm := range []struct {
		name string
		msg  any
	}{
		{"call", c},
		{"result", *r},
		{"hello", HelloReply{Op: OpHello, OK: true, Version: "0.1.0", Protocol: Version, Harness: "claude-code", Cwd: "/app",
			Policy: Policy{ParallelToolCalls: true, SpawningTools: []string{"Agent", "Task"}}, Platform: "linux-6.8.0-x86_64"}},
		{"error", Error{Op: OpError, ID: &id, Message: `call "42" before hello`}},
	} {
		b.Run(bm.name, func(b *testing.B) {
			enc := NewEncoder(io.Discard)
			for b.Loop() {
				if err := enc.Encode(bm.msg); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
