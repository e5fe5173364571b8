package viewer_test

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/json"
	"io"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/tape"
	"github.com/tapebox/tapebox/viewer"
)

func TestInlineDiff(t *testing.T) {
	cases := []struct {
		name string
		a, b string
		want []viewer.Edit
	}{
		{"same", "x\ny\n", "x\ny\n", []viewer.Edit{{"=", "x\ny\n"}}},
		{"word", "bg-done", "bg-failed", []viewer.Edit{{"=", "bg-"}, {"-", "done"}, {"+", "failed"}}},
		{"line added", "a\nb\n", "a\nb\nc\n", []viewer.Edit{{"=", "a\nb\n"}, {"+", "c\n"}}},
		{"line removed", "a\nb\nc\n", "a\nc\n", []viewer.Edit{{"=", "a\n"}, {"-", "b\n"}, {"=", "c\n"}}},
		{"in a line", "exit code 0\nok\n", "exit code 1\nok\n", []viewer.Edit{{"=", "exit code "}, {"-", "0"}, {"+", "1"}, {"=", "\nok\n"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, viewer.InlineDiff(tc.a, tc.b))
		})
	}
	t.Run("long equal runs fold", func(t *testing.T) {
		var a, b strings.Builder
		for i := range 40 {
			line := strings.Repeat("x", i) + "\n"
			a.WriteString(line)
			b.WriteString(line)
		}
		a.WriteString("old\n")
		b.WriteString("new\n")
		got := viewer.InlineDiff(a.String(), b.String())
		require.NotEmpty(t, got)
		assert.Equal(t, viewer.Edit{Op: "~", Text: "37"}, got[0], "the 37 first equal lines are folded, 3 kept before the change")
		assert.Contains(t, got, viewer.Edit{Op: "-", Text: "old"})
		assert.Contains(t, got, viewer.Edit{Op: "+", Text: "new"})
		// both sides rebuild from the edits after the fold
		var ra, rb string
		for _, e := range got[1:] {
			if e.Op != "+" {
				ra += e.Text
			}
			if e.Op != "-" {
				rb += e.Text
			}
		}
		assert.True(t, strings.HasSuffix(a.String(), ra))
		assert.True(t, strings.HasSuffix(b.String(), rb))
		assert.Equal(t, 3, strings.Count(ra, "\n")-1, "three lines of context")
	})
	t.Run("huge texts are replaced whole", func(t *testing.T) {
		a, b := strings.Repeat("a\n", 200000), strings.Repeat("b\n", 200000)
		assert.Equal(t, []viewer.Edit{{"-", a}, {"+", b}}, viewer.InlineDiff(a, b))
	})
	js, err := json.Marshal(viewer.Edit{Op: "+", Text: "x"})
	require.NoError(t, err)
	assert.JSONEq(t, `["+","x"]`, string(js))
}

// pageData decodes what a page carries: its index, and each step's detail.
func pageData(t *testing.T, page []byte) (map[string]any, func(off, n int64) map[string]any) {
	t.Helper()
	grab := func(id string) string {
		m := regexp.MustCompile(`<script type="application/x-tapebox-[a-z]+" id="` + id + `">([A-Za-z0-9+/=]*)</script>`).FindSubmatch(page)
		require.NotNil(t, m, "no %s in the page", id)
		return string(m[1])
	}
	inflate := func(b64 string) map[string]any {
		raw, err := base64.StdEncoding.DecodeString(b64)
		require.NoError(t, err)
		zr, err := gzip.NewReader(bytes.NewReader(raw))
		require.NoError(t, err)
		js, err := io.ReadAll(zr)
		require.NoError(t, err)
		var v map[string]any
		require.NoError(t, json.Unmarshal(js, &v))
		return v
	}
	blobs := grab("tb-blobs")
	return inflate(grab("tb-index")), func(off, n int64) map[string]any { return inflate(blobs[off : off+n]) }
}

// The page's index and blobs hold the tape: every thread and step, the spawn link, each
// step's detail with only its new messages, its results as the tape has them.
func TestWriteIndexAndDetail(t *testing.T) {
	rec := readFile(t, realRecording)
	tp, err := tape.Unmarshal(rec)
	require.NoError(t, err)
	var buf bytes.Buffer
	require.NoError(t, viewer.Write(t.Context(), &buf, viewer.Options{Recording: viewer.Source{Path: "rec.json", Data: rec}}))
	ix, blob := pageData(t, buf.Bytes())
	r := ix["recording"].(map[string]any)
	threads := r["threads"].([]any)
	steps := r["steps"].([]any)
	require.Len(t, threads, len(tp.Threads))
	require.Len(t, steps, tp.Totals().Steps)
	sub := threads[1].(map[string]any)
	assert.Equal(t, "t1", sub["id"])
	ps := steps[int(sub["parent_step"].(float64))].(map[string]any)
	assert.EqualValues(t, 4, ps["i"], "the Agent call of main's step 4 spawned t1")
	var child float64 = -1
	for _, c := range ps["calls"].([]any) {
		if c.(map[string]any)["name"] == "Agent" {
			child = c.(map[string]any)["child"].(float64)
		}
	}
	assert.EqualValues(t, 1, child, "the call links to the child's lane")
	cost := r["cost"].(map[string]any)
	assert.NotEmpty(t, cost["prices_date"])

	for k, s := range steps {
		s := s.(map[string]any)
		th := tp.Threads[int(s["th"].(float64))]
		ts := th.Steps[int(s["i"].(float64))]
		b := s["b"].([]any)
		d := blob(int64(b[0].(float64)), int64(b[1].(float64)))
		results := d["results"].([]any)
		require.Len(t, results, len(ts.ToolResults), "step %d", k)
		for i, res := range results {
			content := res.(map[string]any)["content"].([]any)
			var text string
			for _, c := range content {
				if c.(map[string]any)["type"] == "text" {
					text += c.(map[string]any)["text"].(string)
				}
			}
			assert.Equal(t, ts.ToolResults[i].Text(), text)
		}
		assert.Len(t, d["chunks"].([]any), len(ts.Response.Chunks))
		msgs := d["messages"].([]any)
		carried := int(d["carried"].(float64))
		if s["i"].(float64) == 0 {
			assert.Zero(t, carried)
			assert.Len(t, msgs, len(ts.Request.Messages), "a thread's first step shows its whole request")
			assert.Contains(t, d, "system")
		} else {
			prev := th.Steps[int(s["i"].(float64))-1]
			assert.Equal(t, len(prev.Request.Messages), carried, "step %d carries the previous request", k)
			assert.Less(t, len(msgs), len(ts.Request.Messages)-carried+1)
			for _, m := range msgs {
				for _, blk := range m.(map[string]any)["content"].([]any) {
					assert.NotEqual(t, "tool_result", blk.(map[string]any)["type"], "the previous step's results are shown there, not again")
				}
			}
		}
	}
}

// A tape whose members come in another order (other tools write them so) gives the same
// page data.
func TestWriteMemberOrder(t *testing.T) {
	rec := readFile(t, realRecording)
	var doc map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(rec, &doc))
	var threads []map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(doc["threads"], &threads))
	// threads first, meta last; steps before id and parent
	var b strings.Builder
	b.WriteString(`{"threads":[`)
	for i, th := range threads {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(`{"steps":` + string(th["steps"]) + `,"parent":` + string(th["parent"]) + `,"extra":{"x":[1,{"y":2}]},"id":` + string(th["id"]) + `}`)
	}
	b.WriteString(`],"version":1,"meta":` + string(doc["meta"]) + "}")
	var want, got bytes.Buffer
	require.NoError(t, viewer.Write(t.Context(), &want, viewer.Options{Recording: viewer.Source{Path: "rec.json", Data: rec}}))
	require.NoError(t, viewer.Write(t.Context(), &got, viewer.Options{Recording: viewer.Source{Path: "rec.json", Data: []byte(b.String())}}))
	wi, _ := pageData(t, want.Bytes())
	gi, _ := pageData(t, got.Bytes())
	assert.Equal(t, wi, gi)
}

// Tape text cannot end the data's script element: it is base64 inside, and the page has
// exactly its three script elements whatever the tape holds.
func TestWriteNoBreakout(t *testing.T) {
	rec := edit(t, readFile(t, realRecording), func(tp *tape.Tape) {
		tp.Main().Steps[0].ToolResults[0].Content[0].Text = `</script><script>alert(1)</script><!--`
		tp.Meta.TapeID = `</title><script>alert(2)</script>`
	})
	var buf bytes.Buffer
	require.NoError(t, viewer.Write(t.Context(), &buf, viewer.Options{Recording: viewer.Source{Path: `<b>x.json`, Data: rec}}))
	page := buf.String()
	assert.Equal(t, 3, strings.Count(page, "<script"), "the blobs, the index and the page's code")
	assert.False(t, strings.Contains(page, "alert("), "the planted script is not in the page as text")
	assert.True(t, strings.Contains(page, "<title>tapebox view: &lt;b&gt;x.json</title>"), "the title is escaped")
	assert.Regexp(t, `script-src 'sha256-[A-Za-z0-9+/=]+'`, page, "only the page's own script may run")
}

// A tape that is not what it claims (the caller validates first; Write still stops cleanly)
// gives an error naming the file.
func TestWriteBadTape(t *testing.T) {
	err := viewer.Write(t.Context(), io.Discard, viewer.Options{Recording: viewer.Source{Path: "bad.json", Data: []byte(`{"threads":[{"steps":[{"timing":"soon"}]}]}`)}})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "read tape bad.json: threads/0: steps/0:")
}
