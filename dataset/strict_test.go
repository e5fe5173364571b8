package dataset

import (
	"bytes"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tapebox/tapebox/internal/jsonlex"
	"github.com/tapebox/tapebox/schema"
	"github.com/tapebox/tapebox/tape"
	"github.com/tapebox/tapebox/tape/seal"
)

// loaders are every reader of a tape's bytes: each returns nil when it accepts them.
var loaders = map[string]func([]byte) error{
	"tape.Unmarshal": func(b []byte) error { _, err := tape.Unmarshal(b); return err },
	"tape.LoadSummary": func(b []byte) error {
		_, err := tape.LoadSummary(bytes.NewReader(b))
		return err
	},
	"tape.Decode": func(b []byte) error {
		_, _, err := tape.Decode(b, tape.DecodeOptions{NoChunkData: true})
		return err
	},
	"schema.Validate": schema.Validate,
	"verify": func(b []byte) error {
		v, err := seal.Verify(bytes.NewReader(b), nil)
		if err != nil {
			return err
		}
		return v.Err()
	},
}

// memberStarts returns the offset of every object member's key in the JSON document b.
func memberStarts(b []byte) []int {
	var out []int
	var walk func(i int) int
	walk = func(i int) int {
		i = jsonlex.Space(b, i)
		switch b[i] {
		case '{':
			i = jsonlex.Space(b, i+1)
			for b[i] != '}' {
				out = append(out, i)
				end, _, _ := jsonlex.String(b, i)
				i = walk(jsonlex.Space(b, end) + 1)
				if i = jsonlex.Space(b, i); b[i] == ',' {
					i = jsonlex.Space(b, i+1)
				}
			}
			return i + 1
		case '[':
			i = jsonlex.Space(b, i+1)
			for b[i] != ']' {
				i = jsonlex.Space(b, walk(i))
				if b[i] == ',' {
					i = jsonlex.Space(b, i+1)
				}
			}
			return i + 1
		}
		end, _ := jsonlex.Skip(b, i)
		return end
	}
	walk(0)
	return out
}

// strictSeeds are sealed golden tapes, canonical and re-indented.
func strictSeeds(t testing.TB) [][]byte {
	files, err := filepath.Glob(filepath.Join("..", "testdata", "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("golden tapes: %v", err)
	}
	var out [][]byte
	for _, f := range files {
		tp, err := tape.LoadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := seal.Tape(tp, nil); err != nil {
			t.Fatal(err)
		}
		b, err := tape.Marshal(tp)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b)
	}
	return out
}

// FuzzDuplicateKeys: a key repeated anywhere in a sealed tape (the same key, or one that
// differs only in case, with any value before or after the original) makes every loader
// refuse the tape, and each that says why names the repeated member; the tape as it was
// passes every loader.
func FuzzDuplicateKeys(f *testing.F) {
	seeds := strictSeeds(f)
	for i := range seeds {
		f.Add(uint8(i), uint32(0), false, false, "null")
		f.Add(uint8(i), uint32(1), false, true, `{"x":1}`)
		f.Add(uint8(i), uint32(7000), true, false, `"renamed"`)
		f.Add(uint8(i), uint32(123456), true, true, `[]`)
	}
	for _, doc := range seeds {
		for name, load := range loaders {
			if err := load(doc); err != nil {
				f.Fatalf("%s refuses a sealed golden tape: %v", name, err)
			}
		}
	}
	f.Fuzz(func(t *testing.T, which uint8, at uint32, upper, after bool, value string) {
		doc := seeds[int(which)%len(seeds)]
		if !jsonlex.Valid([]byte(value)) {
			value = "null"
		}
		starts := memberStarts(doc)
		start := starts[int(at)%len(starts)]
		end, _, _ := jsonlex.String(doc, start)
		key := string(doc[start:end])
		if upper {
			key = strings.ToUpper(key)
		}
		member := key + ":" + value
		var mutated []byte
		if after {
			// after the original member's value
			vend, _ := jsonlex.Skip(doc, jsonlex.Space(doc, jsonlex.Space(doc, end)+1))
			mutated = append(append(append(bytes.Clone(doc[:vend]), ','), member...), doc[vend:]...)
		} else {
			mutated = append(append(append(bytes.Clone(doc[:start]), member...), ','), doc[start:]...)
		}
		var de *jsonlex.DuplicateKeyError
		if err := jsonlex.CheckUnique(mutated); !errors.As(err, &de) {
			if upper && strings.ToUpper(key) == strings.ToLower(key) {
				t.Fatalf("a repeated key %s not found: %v", key, err)
			}
			if !upper {
				t.Fatalf("a repeated key %s not found: %v", key, err)
			}
			return // a key without letters, upper-cased, is itself: caught above
		}
		for name, load := range loaders {
			err := load(mutated)
			if err == nil {
				t.Fatalf("%s accepts a tape with the key %s repeated at %s", name, key, de.Pointer)
			}
			if msg := err.Error(); strings.Contains(msg, "duplicate object key") || strings.Contains(msg, "repeats an earlier") {
				if !strings.Contains(msg, de.Pointer) && !strings.Contains(msg, strings.TrimPrefix(de.Pointer, "/")) {
					t.Fatalf("%s names another place than %s: %v", name, de.Pointer, err)
				}
			}
		}
	})
}

// TestDuplicateKeysEveryMember runs FuzzDuplicateKeys' check on every member of one
// sealed golden tape, both orders, both cases.
func TestDuplicateKeysEveryMember(t *testing.T) {
	doc := strictSeeds(t)[0]
	n := len(memberStarts(doc))
	stride := 1
	if testing.Short() || n > 400 {
		stride = n/400 + 1
	}
	checked := 0
	for at := 0; at < n; at += stride {
		start := memberStarts(doc)[at]
		end, _, _ := jsonlex.String(doc, start)
		vend, _ := jsonlex.Skip(doc, jsonlex.Space(doc, jsonlex.Space(doc, end)+1))
		mutated := append(append(append(bytes.Clone(doc[:vend]), ','), doc[start:vend]...), doc[vend:]...)
		for name, load := range loaders {
			if load(mutated) == nil {
				t.Fatalf("%s accepts the member at byte %d (%s) given twice", name, start, doc[start:end])
			}
		}
		checked++
	}
	if checked < 100 {
		t.Fatalf("only %d members checked", checked)
	}
}
