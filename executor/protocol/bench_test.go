package protocol

import (
	"bytes"
	"encoding/json"
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
	b.SetBytes(int64(len(call)))
	for b.Loop() {
		var c Call
		if !decodeCall(call, &c) {
			b.Fatal("slow path")
		}
	}
}

func BenchmarkDecodeResult(b *testing.B) {
	_, result := benchLines(b)
	b.SetBytes(int64(len(result)))
	for b.Loop() {
		var r Result
		if !decodeResult(result, &r) {
			b.Fatal("slow path")
		}
	}
}

// BenchmarkEncode is the hand-written encoder on benchLines' call and result.
func BenchmarkEncode(b *testing.B) {
	call, result := benchLines(b)
	var c Call
	var r Result
	if !decodeCall(call, &c) || !decodeResult(result, &r) {
		b.Fatal("slow path")
	}
	b.Run("call", func(b *testing.B) {
		b.SetBytes(int64(len(call)))
		var buf []byte
		for b.Loop() {
			var ok bool
			if buf, ok = appendCall(buf[:0], &c); !ok {
				b.Fatal("slow path")
			}
		}
	})
	b.Run("result", func(b *testing.B) {
		b.SetBytes(int64(len(result)))
		var buf []byte
		for b.Loop() {
			var ok bool
			if buf, ok = appendResult(buf[:0], &r); !ok {
				b.Fatal("slow path")
			}
		}
	})
}
