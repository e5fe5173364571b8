package viewer_test

import (
	"io"
	"testing"

	"github.com/tapebox/tapebox/viewer"
)

// FuzzWrite: whatever the bytes (Write's callers validate them first, but a reader must not
// trust that), Write returns an error or a page, and never panics.
func FuzzWrite(f *testing.F) {
	f.Add([]byte(`{"version":1,"meta":{},"threads":[{"id":"main","parent":null,"steps":[{"tool_results":null}]}]}`))
	f.Add([]byte(`{"threads":[{"steps":[{"timing":"soon"}]}]}`))
	f.Add([]byte(`{"threads":[{"parent":["main","x"],"steps":[]}]}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		_ = viewer.Write(t.Context(), io.Discard, viewer.Options{Recording: viewer.Source{Path: "f.json", Data: data}})
	})
}
