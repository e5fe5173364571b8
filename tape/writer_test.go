package tape

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func testStep(i int, size int) *Step {
	return &Step{
		Request: Request{
			Path:     "/v1/messages",
			Messages: []Message{{Role: "user", Content: []Block{{Type: BlockText, Text: strings.Repeat("x", size)}}}},
			Raw:      json.RawMessage(fmt.Sprintf(`{"model":"m","n":%d}`, i)),
		},
		Response:  Response{Status: 200, StopReason: "tool_use"},
		ToolCalls: []ToolCall{{ID: fmt.Sprintf("toolu_%d", i), Name: "Bash", Input: json.RawMessage(`{"command":"ls"}`)}},
		Timing:    Timing{RequestAt: float64(i)},
	}
}

// TestWriterMatchesMarshal checks after every Sync that the file is exactly the canonical
// encoding of the tape as it is in memory, with small steps and with steps large enough to
// leave memory once published.
func TestWriterMatchesMarshal(t *testing.T) {
	for _, digests := range []bool{false, true} {
		for _, size := range []int{10, 100 << 10} {
			t.Run(fmt.Sprintf("size=%d/digests=%v", size, digests), func(t *testing.T) { testWriterMatchesMarshal(t, size, digests) })
		}
	}
}

func testWriterMatchesMarshal(t *testing.T, size int, digests bool) {
	dir := t.TempDir()
	path := filepath.Join(dir, "sub", "run.json")
	tp := New(ProviderAnthropic, time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC))
	var opts []Option
	if digests {
		opts = append(opts, WithDigests(testHashing))
	}
	w, err := Create(path, tp, opts...)
	require.NoError(t, err)
	syncs := 0
	check := func() {
		t.Helper()
		if syncs++; syncs%3 != 0 {
			w.PrepareSync() // the next Sync publishes through a link made ahead
		}
		got, err := os.ReadFile(path)
		require.NoError(t, err)
		want, err := Marshal(w.Tape())
		require.NoError(t, err)
		require.Equal(t, string(want), string(got))
		loaded, err := Unmarshal(got)
		require.NoError(t, err)
		again, err := Marshal(loaded)
		require.NoError(t, err)
		require.Equal(t, string(got), string(again))
		v, err := Verify(bytes.NewReader(got), VerifyOptions{Hashing: testHashing})
		require.NoError(t, err)
		if !digests {
			require.Equal(t, DigestsNone, v.State)
			return
		}
		require.NoError(t, v.Err())
		require.Equal(t, DigestsOK, v.State, "every published version verifies")
		// The Writer's digests, computed piece by piece, are Seal's, computed whole.
		require.NoError(t, Seal(loaded, testHashing))
		sealed, err := Marshal(loaded)
		require.NoError(t, err)
		require.Equal(t, string(got), string(sealed))
	}
	check()
	main, err := w.AddThread("main", nil)
	require.NoError(t, err)
	require.NoError(t, w.Sync())
	check()
	for i := range 6 {
		if i%2 == 0 {
			_, err = w.AppendStep(main, testStep(i, size))
		} else {
			var p *PreparedStep
			p, err = Prepare(testStep(i, size))
			require.NoError(t, err)
			p.Step().Response.Content = []Block{{Type: BlockText, Text: "answer \ufffd <&>"}}
			_, err = w.AppendPrepared(main, p)
		}
		require.NoError(t, err)
		require.NoError(t, w.Sync())
		check()
		if i == 2 {
			sub, err := w.AddThread("sub-1", &Parent{ThreadID: "main", ToolCallID: "toolu_2"})
			require.NoError(t, err)
			_, err = w.AppendStep(sub, testStep(100, size/2))
			require.NoError(t, err)
			require.NoError(t, w.Sync())
			check()
		}
		switch {
		case i == 0:
		case i%2 == 0:
			require.NoError(t, w.UpdateStep(main, i-1, func(s *Step) {
				s.ToolResults = []ToolResult{{ToolCallID: s.ToolCalls[0].ID, Content: []Block{{Type: BlockText, Text: "ok <&>"}}}}
				next := float64(i)
				s.Timing.NextRequestAt = &next
			}))
			require.NoError(t, w.Sync())
			check()
		default:
			require.NoError(t, w.UpdateStepAnswer(main, i-1, func(s *Step) {
				s.Response.Chunks = append(s.Response.Chunks, Chunk{AtMS: 1.5, Data: "data: [DONE]\n\n"})
				s.Timing.LastByteAt = 2
			}))
			require.NoError(t, w.Sync())
			check()
			require.NoError(t, w.UpdateStepEnd(main, i-1, func(results *[]ToolResult, timing *Timing) {
				*results = []ToolResult{{ToolCallID: "toolu_x", Content: []Block{{Type: BlockText, Text: "ok <&>"}}}}
				next := float64(i)
				timing.NextRequestAt = &next
			}))
			require.NoError(t, w.Sync())
			check()
		}
	}
	require.NoError(t, w.UpdateMeta(func(m *Meta) { m.Model = "claude-x"; m.Harness = "claude-code"; m.Cwd = "/work/app" }))
	require.NoError(t, w.Sync())
	check()
	require.NoError(t, w.Finish(EndComplete, time.Date(2026, 11, 29, 10, 1, 0, 0, time.UTC), ""))
	entries, err := os.ReadDir(filepath.Dir(path))
	require.NoError(t, err)
	require.Len(t, entries, 1, "slot files and temporary names are removed")
	loaded, err := LoadFile(path)
	require.NoError(t, err)
	require.Equal(t, EndComplete, loaded.Meta.Ended.Reason)
	require.Equal(t, "/work/app", loaded.Meta.Cwd)
	require.Len(t, loaded.Threads, 2)
	require.Len(t, loaded.Main().Steps, 6)
	ref, call, ok := loaded.ParentCall(loaded.Threads[1])
	require.True(t, ok)
	require.Equal(t, "toolu_2", call.ID)
	require.Equal(t, 2, ref.Index)
	require.Equal(t, "ok <&>", loaded.Main().Steps[0].ToolResults[0].Text())
	tot := loaded.Totals()
	require.Equal(t, 7, tot.Steps)
	require.Equal(t, 7, tot.ToolCalls)
}

// TestMetaCwd: meta.cwd is left out of the encoding when unknown (tapes written before it
// existed stay canonical) and follows model when known.
func TestMetaCwd(t *testing.T) {
	tp := New(ProviderAnthropic, time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC))
	tp.Meta.Model = "m"
	for _, tt := range []struct{ cwd, want string }{
		{"", `"model":"m","started_at":`},
		{"/tmp/run", `"model":"m","cwd":"/tmp/run","started_at":`},
	} {
		tp.Meta.Cwd = tt.cwd
		data, err := Marshal(tp)
		require.NoError(t, err)
		require.Contains(t, string(data), tt.want)
		loaded, err := Unmarshal(data)
		require.NoError(t, err)
		require.Equal(t, tt.cwd, loaded.Meta.Cwd)
	}
}

func TestUnmarshalErrors(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"not json", "hello", "not valid JSON at line 1, column 1"},
		{"truncated", `{"version":1,"meta":{`, "truncated"},
		{"version 2", `{"version":2,"meta":{"x":1}}`, "unsupported tape version"},
		{"no version", `{"meta":{}}`, `missing field "version"`},
		{"wrong type", `{"version":1,"meta":{"tape_id":5}}`, `field "meta.tape_id"`},
		{"unknown field", `{"version":1,"bogus":true}`, `unknown field "bogus" at /bogus (line 1, column 14)`},
		{"unknown nested field", "{\"version\":1,\"meta\":{},\n\"threads\":[{\"id\":\"a\",\"steps\":[{},{\"timing\":{\"at\":1}}]}]}",
			`unknown field "at" at /threads/0/steps/1/timing/at (line 2, column 45)`},
		{"unknown field, wrong type before", `{"version":1,"meta":{"tape_id":5,"bogus":1}}`, `field "meta.tape_id"`},
		{"repeated key", "{\"version\":1,\n\"meta\":{\"model\":\"a\",\"Model\":\"b\"}}", `duplicate object key "Model" at /meta/Model (it differs from the key "model" before it only in case) (line 2, column 21)`},
		{"repeated key in a body", `{"version":1,"threads":[{"steps":[{"request":{"raw":{"a":[{"x":1,"x":2}]}}}]}]}`, `duplicate object key "x" at /threads/0/steps/0/request/raw/a/0/x`},
		{"case-folded key", `{"version":1,"META":{"bogus":1}}`, `unknown field "bogus"`},
		{"trailing", `{"version":1,"meta":{},"threads":[]} {}`, "unexpected data"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Unmarshal([]byte(tc.in))
			require.Error(t, err)
			require.Contains(t, err.Error(), tc.want)
		})
	}
	_, err := Unmarshal([]byte(`{"version":7}`))
	require.ErrorIs(t, err, ErrUnsupportedVersion)
}

// TestMarshalInvalidUTF8 checks that a tape holding invalid UTF-8 (a provider can send it)
// encodes the same before and after a load, and that a literal "\ufffd" text is kept.
func TestMarshalInvalidUTF8(t *testing.T) {
	tp := New(ProviderAnthropic, time.Unix(0, 0))
	s := testStep(0, 1)
	s.Response.Chunks = []Chunk{{Data: "bad \xff\xfe byte, a real \uFFFD, and a literal \\ufffd and \\\\ufffd"}}
	tp.Threads = []*Thread{{ID: "main", Steps: []*Step{s}}}
	first, err := Marshal(tp)
	require.NoError(t, err)
	loaded, err := Unmarshal(first)
	require.NoError(t, err)
	again, err := Marshal(loaded)
	require.NoError(t, err)
	require.Equal(t, string(first), string(again))
	require.Equal(t, "bad \uFFFD\uFFFD byte, a real \uFFFD, and a literal \\ufffd and \\\\ufffd", loaded.Threads[0].Steps[0].Response.Chunks[0].Data)
}

// TestCreateAfterKill: a Writer killed after publishing leaves its slot files, and the tape is
// a hard link to one of them. A new Writer on the same path must not truncate the old tape
// through that link before its own first publish, and must leave only the tape behind.
func TestCreateAfterKill(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "run.json")
	w, err := Create(path, New(ProviderAnthropic, time.Unix(0, 0)))
	require.NoError(t, err)
	main, err := w.AddThread("main", nil)
	require.NoError(t, err)
	_, err = w.AppendStep(main, testStep(0, 10))
	require.NoError(t, err)
	require.NoError(t, w.Sync())
	// "Kill" it: no Close, the slot files stay.
	os.WriteFile(filepath.Join(dir, ".run.json.publish-deadbeef"), []byte("x"), 0o644)

	w2, err := Create(path, New(ProviderOpenAIChat, time.Unix(0, 0)))
	require.NoError(t, err)
	require.NoError(t, w2.Finish(EndComplete, time.Unix(1, 0), ""))
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	require.Equal(t, []string{"run.json"}, names)
	got, err := LoadFile(path)
	require.NoError(t, err)
	require.Equal(t, ProviderOpenAIChat, got.Meta.Provider)
}

// TestWriterRandomOps checks the file against the canonical encoding after every Sync of a
// random mix of the Writer's changes over several threads (steps appended to a thread in
// the middle move every piece after it).
func TestWriterRandomOps(t *testing.T) {
	for _, noLinks := range []bool{false, true} {
		t.Run(fmt.Sprintf("noLinks=%v", noLinks), func(t *testing.T) { testWriterRandomOps(t, noLinks, false) })
	}
	// Pieces from 64 bytes on leave memory once published: every Sync copies most of what
	// it writes from the slot published last. Half-way, hard links stop working, and the
	// whole-file rewrites read the dropped pieces back from that slot.
	defer func(size int) { dropSize = size }(dropSize)
	dropSize = 64
	for _, linksFail := range []bool{false, true} {
		t.Run(fmt.Sprintf("dropped/linksFail=%v", linksFail), func(t *testing.T) { testWriterRandomOps(t, false, linksFail) })
	}
}

// heldBytes counts the bytes of large pieces still in memory.
func (w *Writer) heldBytes() int {
	n := 0
	for _, p := range w.layout() {
		if p.big != nil {
			n += len(p.big.data)
		}
	}
	return n
}

func testWriterRandomOps(t *testing.T, noLinks, linksFail bool) {
	rng := rand.New(rand.NewPCG(1, 2))
	path := filepath.Join(t.TempDir(), "run.json")
	w, err := Create(path, New(ProviderAnthropic, time.Unix(0, 0)))
	require.NoError(t, err)
	defer w.Close()
	w.SetFsync(false)
	w.noLinks = noLinks // the fallback for file systems without hard links
	var threads []int
	steps := map[int]int{}
	for op := range 2000 {
		switch k := rng.IntN(10); {
		case len(threads) == 0 || k == 0 && len(threads) < 4:
			ti, err := w.AddThread(fmt.Sprintf("t%d", len(threads)), nil)
			require.NoError(t, err)
			threads = append(threads, ti)
		case k <= 3:
			ti := threads[rng.IntN(len(threads))]
			s := testStep(op, rng.IntN(50))
			if k == 3 {
				p, err := Prepare(s)
				require.NoError(t, err)
				_, err = w.AppendPrepared(ti, p)
				require.NoError(t, err)
			} else {
				_, err := w.AppendStep(ti, s)
				require.NoError(t, err)
			}
			steps[ti]++
		case k <= 6:
			ti := threads[rng.IntN(len(threads))]
			if steps[ti] == 0 {
				continue
			}
			si := rng.IntN(steps[ti])
			text := strings.Repeat("r", rng.IntN(30))
			switch k {
			case 4:
				require.NoError(t, w.UpdateStepEnd(ti, si, func(rs *[]ToolResult, tm *Timing) {
					*rs = []ToolResult{{ToolCallID: "c", Content: []Block{{Type: BlockText, Text: text}}}}
				}))
			case 5:
				require.NoError(t, w.UpdateStepAnswer(ti, si, func(s *Step) { s.Response.StopReason = text }))
			default:
				require.NoError(t, w.UpdateStep(ti, si, func(s *Step) { s.Request.Path = "/" + text }))
			}
		case k == 7:
			require.NoError(t, w.UpdateMeta(func(m *Meta) { m.Model = strings.Repeat("m", rng.IntN(5)) }))
		case k == 8:
			w.PrepareSync()
		default:
			if linksFail && op >= 1000 {
				w.noLinks = true
			}
			require.NoError(t, w.Sync())
			got, err := os.ReadFile(path)
			require.NoError(t, err)
			want, err := Marshal(w.Tape())
			require.NoError(t, err)
			require.Equal(t, string(want), string(got), "after op %d", op)
			if !w.noLinks {
				require.Zero(t, w.heldBytes(), "every large piece is on disk only, after op %d", op)
			}
		}
	}
}

// TestWriterRelease: a released step leaves memory, not the tape. The file stays the whole
// tape through later changes (tool results, a stream's end, the meta, more steps), and
// the step can no longer be encoded again whole.
func TestWriterRelease(t *testing.T) {
	path := filepath.Join(t.TempDir(), "run.json")
	start := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	w, err := Create(path, New(ProviderAnthropic, start))
	require.NoError(t, err)
	w.SetFsync(false)
	want := New(ProviderAnthropic, start) // the same tape, nothing released
	want.Meta.TapeID = w.Tape().Meta.TapeID
	clone := func(s *Step) *Step {
		b, err := MarshalStep(s)
		require.NoError(t, err)
		var c Step
		require.NoError(t, json.Unmarshal(b, &c))
		return &c
	}
	for _, id := range []string{"main", "sub"} {
		_, err := w.AddThread(id, nil)
		require.NoError(t, err)
		want.Threads = append(want.Threads, &Thread{ID: id, Steps: []*Step{}})
	}
	check := func() {
		t.Helper()
		require.NoError(t, w.Sync())
		got, err := os.ReadFile(path)
		require.NoError(t, err)
		data, err := Marshal(want)
		require.NoError(t, err)
		require.Equal(t, string(data), string(got))
	}
	for i := range 6 {
		ti := i % 2
		s := testStep(i, 80<<10)
		s.Response.Chunks = []Chunk{{AtMS: 1, Data: "data: " + strings.Repeat("c", 70<<10) + "\n\n"}}
		want.Threads[ti].Steps = append(want.Threads[ti].Steps, clone(s))
		si, err := w.AppendStep(ti, s)
		require.NoError(t, err)
		check()
		require.NoError(t, w.Release(ti, si))
		require.Empty(t, w.Tape().Threads[ti].Steps[si].Request.Messages)
		require.Empty(t, w.Tape().Threads[ti].Steps[si].Response.Chunks)
		check()
		if si > 0 {
			results := []ToolResult{{ToolCallID: fmt.Sprintf("toolu_%d", i-2), Content: []Block{{Type: BlockText, Text: "ok"}}}}
			require.NoError(t, w.UpdateStepEnd(ti, si-1, func(rs *[]ToolResult, tm *Timing) { *rs = results }))
			want.Threads[ti].Steps[si-1].ToolResults = results
			check()
		}
		chunks := append(want.Threads[ti].Steps[si].Response.Chunks, Chunk{AtMS: 2, Data: "data: [DONE]\n\n"})
		require.NoError(t, w.UpdateStepAnswer(ti, si, func(s *Step) { s.Response.Chunks = chunks }))
		want.Threads[ti].Steps[si].Response.Chunks = chunks
		check()
	}
	require.ErrorContains(t, w.UpdateStep(0, 0, func(s *Step) { s.Request.Path = "/x" }), "it was released")
	require.NoError(t, w.UpdateMeta(func(m *Meta) { m.Model = "m" }))
	want.Meta.Model = "m"
	check()
	require.Zero(t, w.heldBytes())
	require.NoError(t, w.Close())
	loaded, err := LoadFile(path)
	require.NoError(t, err)
	require.Len(t, loaded.Threads[0].Steps[2].Request.Messages[0].Content[0].Text, 80<<10)
}
