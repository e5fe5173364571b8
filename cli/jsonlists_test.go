package cli

import (
	"encoding/json"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/compare"
	"github.com/tapebox/tapebox/fork"
	"github.com/tapebox/tapebox/tape"
)

// listWalk walks a decoded JSON value beside the Go type it was encoded from and notes every
// list or map the type declares: where it is null (never wanted), and which fields were seen
// holding something (by type path, indices left out).
type listWalk struct {
	nulls []string
	full  map[string]bool
	// fields are every list or map field met in the types walked, by type path.
	fields map[string]bool
}

var marshalerType = reflect.TypeFor[json.Marshaler]()

func (w *listWalk) walk(t reflect.Type, v any, ptr, typePath string) {
	if t.Implements(marshalerType) || reflect.PointerTo(t).Implements(marshalerType) {
		return // its own JSON (json.RawMessage, time.Time, ...)
	}
	switch t.Kind() {
	case reflect.Pointer:
		if v != nil {
			w.walk(t.Elem(), v, ptr, typePath)
		}
	case reflect.Struct:
		obj, ok := v.(map[string]any)
		if !ok {
			return
		}
		w.walkFields(t, obj, ptr, typePath)
	case reflect.Slice, reflect.Array, reflect.Map:
		if t.Kind() != reflect.Array {
			w.fields[typePath] = true
		}
		if v == nil {
			w.nulls = append(w.nulls, ptr)
			return
		}
		switch x := v.(type) {
		case []any:
			if len(x) > 0 {
				w.full[typePath] = true
			}
			for i, e := range x {
				w.walk(t.Elem(), e, ptr+"/"+strconv.Itoa(i), typePath+"[]")
			}
		case map[string]any:
			if len(x) > 0 {
				w.full[typePath] = true
			}
			for k, e := range x {
				w.walk(t.Elem(), e, ptr+"/"+k, typePath+"{}")
			}
		}
	}
}

func (w *listWalk) walkFields(t reflect.Type, obj map[string]any, ptr, typePath string) {
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		if f.Anonymous && name == "" {
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				w.walkFields(ft, obj, ptr, typePath)
				continue
			}
		}
		if name == "" {
			name = f.Name
		}
		v, present := obj[name]
		fieldPath := t.String() + "." + name
		if !present {
			if k := f.Type.Kind(); (k == reflect.Slice || k == reflect.Map) && !f.Type.Implements(marshalerType) {
				w.fields[fieldPath] = true
				if !strings.Contains(opts, "omitempty") {
					w.nulls = append(w.nulls, ptr+"/"+name+" (absent)")
				}
			}
			continue
		}
		w.walk(f.Type, v, ptr+"/"+name, fieldPath)
	}
}

// checkLists decodes out and walks it as a value of type T; it fails on every null list.
func checkLists[T any](t *testing.T, w *listWalk, out string) {
	t.Helper()
	var v any
	require.NoError(t, json.Unmarshal([]byte(out), &v), out)
	w.walk(reflect.TypeFor[T](), v, "", "")
}

func newListWalk() *listWalk {
	return &listWalk{full: map[string]bool{}, fields: map[string]bool{}}
}

// ownLists are the list and map fields the CLI's reports declare (tape.Meta's are the tape
// format's own, absent when empty).
func ownLists(w *listWalk) []string { return own(w.fields) }

// ownFull are those of ownLists seen holding something.
func ownFull(w *listWalk) []string { return own(w.full) }

func own(fields map[string]bool) []string {
	var out []string
	for f := range fields {
		if strings.Contains(f, "tape.") {
			continue
		}
		out = append(out, f)
	}
	sort.Strings(out)
	return out
}

// TestJSONListsNeverNull: every list and map of compare, inspect, fork and replay --json is a
// JSON array or object, never null, whether empty or full; the full cases fill every one of
// them, so the check has seen each field both ways. The walk is over the output structs by
// reflection, so a field added later is covered too.
func TestJSONListsNeverNull(t *testing.T) {
	dir := t.TempDir()
	recPath := filepath.Join("..", "viewer", "testdata", "claude-code.json")
	repPath := filepath.Join("..", "viewer", "testdata", "claude-code.replay.json")
	rec, err := tape.LoadFile(recPath)
	require.NoError(t, err)

	// a tape with nothing in it, and one compared with itself: nothing learned
	empty := tape.New(tape.ProviderAnthropic, rec.Meta.StartedAt)
	empty.Meta.TapeID = "empty"
	empty.Threads = []*tape.Thread{}
	emptyPath := writeTape(t, dir, "empty.json", empty)
	noWS := loadTape(t, recPath)
	noWS.Meta.Workspace = nil
	noWSPath := writeTape(t, dir, "nows.json", noWS)

	// a replay with a planted difference in a result and in the end state
	planted, err := tape.LoadFile(repPath)
	require.NoError(t, err)
	planted.Meta.TapeID = "planted"
	for _, th := range planted.Threads {
		for _, s := range th.Steps {
			for i := range s.ToolResults {
				if len(s.ToolResults[i].Content) > 0 && s.ToolResults[i].Content[0].Text == "bg-done" {
					s.ToolResults[i].Content[0].Text = "bg-failed"
					s.ToolResults[i].CopiedFromTape = true
				}
			}
		}
	}
	planted.Meta.Workspace.End[1].Size++
	planted.Meta.Workspace.Exclude = []string{"*.log"}
	rec.Meta.Workspace.Exclude = []string{"*.log"}
	recPlanted := writeTape(t, dir, "rec.json", rec)
	plantedPath := writeTape(t, dir, "planted.json", planted)

	// a fork of the recording
	f := loadTape(t, recPath)
	f.Meta.TapeID = "fork"
	f.Meta.ForkedFrom = &tape.ForkedFrom{TapeID: rec.Meta.TapeID, Thread: "main", Step: 1, Served: map[string]int{}, Overrides: map[string]string{}}
	forkEmpty := writeTape(t, dir, "fork-empty.json", f)
	f.Meta.ForkedFrom.Served = map[string]int{"main": 1}
	f.Meta.ForkedFrom.Overrides = map[string]string{"model": "cheap"}
	f.Main().Steps[2].ToolCalls[0].Input = []byte(`{"command":"echo another way"}`)
	forkFull := writeTape(t, dir, "fork-full.json", f)

	t.Run("compare", func(t *testing.T) {
		w := newListWalk()
		for _, pair := range [][2]string{{emptyPath, emptyPath}, {noWSPath, noWSPath}, {recPlanted, plantedPath}} {
			_, out, stderr := runVerbForTest(t, "compare", "--json", pair[0], pair[1])
			require.NotEmpty(t, out, stderr)
			checkLists[compare.Report](t, w, out)
		}
		assert.Empty(t, w.nulls, "null lists")
		assert.ElementsMatch(t, ownLists(w), ownFull(w), "the full case fills every list")
	})
	t.Run("compare fork", func(t *testing.T) {
		w := newListWalk()
		for _, p := range []string{forkEmpty, forkFull} {
			code, out, stderr := runVerbForTest(t, "compare", "--json", recPath, p)
			require.Equal(t, ExitOK, code, stderr)
			checkLists[fork.Comparison](t, w, out)
		}
		assert.Empty(t, w.nulls, "null lists")
		assert.Contains(t, keys(w.full), "fork.Comparison.served")
		assert.Contains(t, keys(w.full), "fork.Comparison.overrides")
	})
	t.Run("inspect", func(t *testing.T) {
		w := newListWalk()
		for _, p := range []string{emptyPath, recPath} {
			code, out, stderr := runVerbForTest(t, "inspect", "--json", p)
			require.Equal(t, ExitOK, code, stderr)
			checkLists[inspectSummary](t, w, out)
		}
		// a step without tool calls and a tape without a model's price
		tp := inspectTestTape()
		tp.Threads[1].Steps[0].Request.Raw = []byte(`{"model":"no-such-model"}`)
		_, out, stderr := runVerbForTest(t, "inspect", "--json", writeTape(t, dir, "small.json", tp))
		require.NotEmpty(t, out, stderr)
		checkLists[inspectSummary](t, w, out)
		assert.Empty(t, w.nulls, "null lists")
		assert.ElementsMatch(t, ownLists(w), ownFull(w), "the full case fills every list")
	})
	t.Run("fork", func(t *testing.T) {
		w := newListWalk()
		for _, r := range []*fork.Result{{}, {Served: map[string]int{"main": 3}}} {
			b, err := json.Marshal(summarize(r))
			require.NoError(t, err)
			checkLists[forkSummary](t, w, string(b))
		}
		assert.Empty(t, w.nulls, "null lists")
		assert.ElementsMatch(t, ownLists(w), ownFull(w), "the full case fills every list")
	})
	t.Run("replay", func(t *testing.T) {
		w := newListWalk()
		codex := filepath.Join("..", "testdata", "replay", "codex.json")
		// (a tape without a main thread is refused before any JSON: replay's empty lists are
		// those of compare, checked above)
		for _, p := range []string{codex} {
			out := filepath.Join(t.TempDir(), "replay.json")
			_, stdout, stderr := runVerbForTest(t, "replay", "--json", "--check", "--tape", p, "--sandbox", "local:"+t.TempDir(), "--speed", "0", "--output", out)
			require.NotEmpty(t, stdout, stderr)
			checkLists[replaySummary](t, w, stdout)
		}
		assert.Empty(t, w.nulls, "null lists")
	})
}

func keys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func loadTape(t *testing.T, path string) *tape.Tape {
	t.Helper()
	tp, err := tape.LoadFile(path)
	require.NoError(t, err)
	return tp
}
