package dataset

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestExpandInputs(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"a.json", "b.json", "notes.txt", ".hidden.json", "sub/c.json", "sub/.tmp/d.json", ".git/e.json"} {
		p := filepath.Join(dir, f)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte("{}"), 0o644))
	}
	j := func(names ...string) []string {
		out := make([]string, len(names))
		for i, n := range names {
			out[i] = filepath.Join(dir, n)
		}
		return out
	}
	tests := []struct {
		name string
		args []string
		want []string
		err  string
	}{
		{"directory", j(""), j("a.json", "b.json", "sub/c.json"), ""},
		{"file of any name", j("notes.txt"), j("notes.txt"), ""},
		{"glob", j("*.json"), j(".hidden.json", "a.json", "b.json"), ""},
		{"order kept, duplicates once", append(j("b.json"), j("", "b.json")...), j("b.json", "a.json", "sub/c.json"), ""},
		{"missing", j("nope.json"), nil, "no such file"},
		{"glob matching nothing", j("*.parquet"), nil, "matches no file"},
		{"bad glob", j("[.json"), nil, "pattern"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ExpandInputs(tt.args)
			if tt.err != "" {
				require.ErrorContains(t, err, tt.err)
				return
			}
			require.NoError(t, err)
			var paths []string
			for _, in := range got {
				paths = append(paths, filepath.Clean(in.Path))
				assert.Equal(t, int64(2), in.Size)
			}
			assert.Equal(t, tt.want, paths)
		})
	}
}
