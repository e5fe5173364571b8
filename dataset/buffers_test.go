package dataset

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestBufferPoolMapsBigFiles: a big file comes back with its bytes (mapped where the
// system allows it) and goes back to the pool; a small one is read into a recycled buffer.
func TestBufferPoolMapsBigFiles(t *testing.T) {
	dir := t.TempDir()
	big := bytes.Repeat([]byte("0123456789abcdef"), mapMin/16+100)
	small := []byte(`{"small":true}`)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "big.json"), big, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "small.json"), small, 0o644))
	p := newBufferPool(1 << 20)
	for range 3 {
		b, err := p.readFile(filepath.Join(dir, "big.json"))
		require.NoError(t, err)
		require.Equal(t, big, b)
		p.put(b)
		s, err := p.readFile(filepath.Join(dir, "small.json"))
		require.NoError(t, err)
		require.Equal(t, small, s)
		p.put(s)
	}
	require.Empty(t, p.mapped, "every mapped file was unmapped")
}

// TestGuardShrunkFile: reading a mapped file that shrank under it is an error, not a
// crash.
func TestGuardShrunkFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tape.json")
	require.NoError(t, os.WriteFile(path, bytes.Repeat([]byte{'x'}, 4*mapMin), 0o644))
	p := newBufferPool(1 << 20)
	b, err := p.readFile(path)
	require.NoError(t, err)
	defer p.put(b)
	require.NotEmpty(t, p.mapped, "the file is mapped")
	require.NoError(t, os.Truncate(path, 0))
	var sum int
	err = guard(func() error {
		for i := 0; i < len(b); i += 4096 {
			sum += int(b[i])
		}
		return nil
	})
	require.ErrorIs(t, err, errFileChanged)
	require.NoError(t, guard(func() error { return nil }))
	require.Panics(t, func() { _ = guard(func() error { panic("other") }) }, "other panics go on")
}
