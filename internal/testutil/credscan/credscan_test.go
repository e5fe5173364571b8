package credscan

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// recorder is a testing.TB that keeps the errors instead of failing.
type recorder struct {
	testing.TB
	errs []string
}

func (r *recorder) Helper() {}

func (r *recorder) Errorf(format string, args ...any) {
	r.errs = append(r.errs, strings.TrimSpace(fmt.Sprintf(format, args...)))
}

func TestDir(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "sub"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "clean.json"), []byte(`{"key":"[redacted]"}`), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "sub", "leak.json"), []byte(`{"key":"sk-SECRET-1"}`), 0o644))

	r := &recorder{TB: t}
	assert.Equal(t, 2, Dir(r, dir, "sk-SECRET-1", "sk-OTHER-2"))
	assert.Equal(t, []string{`credential "sk-SECRET-1" found in ` + filepath.Join(dir, "sub", "leak.json")}, r.errs)

	r = &recorder{TB: t}
	assert.Equal(t, 2, Dir(r, dir, "sk-OTHER-2"))
	assert.Empty(t, r.errs)

	r = &recorder{TB: t}
	assert.Equal(t, 0, Dir(r, filepath.Join(dir, "missing"), "x"))
	require.Len(t, r.errs, 1)
	assert.Contains(t, r.errs[0], "scan "+filepath.Join(dir, "missing")+" for credentials")
}
