package schema

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"

	"github.com/tapebox/tapebox/tape"
)

// bigTape is a realistic recording of about 50 MB: 28 streamed steps whose requests carry
// the whole conversation, with 30 KB tool results.
var bigTape = sync.OnceValue(func() []byte {
	return mustMarshal(agentTape(tape.ProviderAnthropic, 28, 30000, true))
})

// chattyTape is a recording of many short steps (about 40 MB): many small values, the
// hard case for a validator that works per value.
var chattyTape = sync.OnceValue(func() []byte {
	return mustMarshal(agentTape(tape.ProviderOpenAIResponses, 160, 400, false))
})

// tinyValuesTape is the worst case (about 30 MB): no repeated history, nothing but small
// values, the validator's cost per value dominating.
var tinyValuesTape = sync.OnceValue(func() []byte {
	t := agentTape(tape.ProviderAnthropic, 2, 100, false)
	s := t.Threads[0].Steps[0]
	for i := range 300000 {
		s.Response.Content = append(s.Response.Content, tape.Block{Type: tape.BlockText, Text: "word " + strconv.Itoa(i)})
		s.ToolResults = append(s.ToolResults, tape.ToolResult{ToolCallID: "c" + strconv.Itoa(i), Content: []tape.Block{{Type: tape.BlockText, Text: "ok"}}})
	}
	return mustMarshal(t)
})

// BenchmarkValidate measures validation throughput on big tapes, side by side with
// encoding/json decoding alone (the floor of the straightforward approach) and with
// encoding/json decoding followed by jsonschema/v6.
func BenchmarkValidate(b *testing.B) {
	b.Run("tape=long-strings", func(b *testing.B) { benchmarkValidate(b, bigTape()) })
	b.Run("tape=many-values", func(b *testing.B) { benchmarkValidate(b, chattyTape()) })
	b.Run("tape=tiny-values", func(b *testing.B) { benchmarkValidate(b, tinyValuesTape()) })
}

func benchmarkValidate(b *testing.B, data []byte) {
	c, err := load()
	if err != nil {
		b.Fatal(err)
	}
	// decodeStd is encoding/json's decoding into any, numbers kept as written.
	decodeStd := func() (any, error) {
		var v any
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.UseNumber()
		err := dec.Decode(&v)
		return v, err
	}
	for _, r := range []struct {
		name string
		run  func() error
	}{
		{"encoding-json-decode", func() error { _, err := decodeStd(); return err }},
		{"encoding-json+jsonschema", func() error {
			v, err := decodeStd()
			if err != nil {
				return err
			}
			return c.full.Validate(v)
		}},
		{"decode-full", func() error { _, _, err := decode(data, nil); return err }},
		{"decode-shaped", func() error { _, _, err := decode(data, c.shape); return err }},
		{"Validate", func() error { return Validate(data) }},
	} {
		b.Run(r.name, func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				if err := r.run(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkValidateFiles measures ValidateFiles on four copies of each big tape, on every
// core; the bytes counted are those of every file.
func BenchmarkValidateFiles(b *testing.B) {
	for _, tt := range []struct {
		name string
		data []byte
	}{
		{"tape=long-strings", bigTape()},
		{"tape=many-values", chattyTape()},
		{"tape=tiny-values", tinyValuesTape()},
	} {
		b.Run(tt.name, func(b *testing.B) {
			dir := b.TempDir()
			var paths []string
			for i := range 4 {
				p := filepath.Join(dir, "tape"+strconv.Itoa(i)+".json")
				if err := os.WriteFile(p, tt.data, 0o644); err != nil {
					b.Fatal(err)
				}
				paths = append(paths, p)
			}
			b.SetBytes(int64(len(tt.data) * len(paths)))
			for b.Loop() {
				for _, r := range ValidateFiles(b.Context(), paths) {
					if r.Err != nil {
						b.Fatal(r.Err)
					}
				}
			}
		})
	}
}
