package harness_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/executor/harness"
)

func TestNewEnvState(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	cwd := t.TempDir()

	env, err := harness.NewEnv(cwd, nil, nil)
	require.NoError(t, err)
	assert.Equal(t, tmp, filepath.Dir(env.State.Path), "the default is in the temporary directory")
	assert.True(t, env.State.Shared)
	assert.Same(t, env.State, env.Tasks.State)
	again, err := harness.NewEnv(cwd, nil, nil)
	require.NoError(t, err)
	assert.Equal(t, env.State.Path, again.State.Path, "a restarted executor finds the same directory")
	other, err := harness.NewEnv(t.TempDir(), nil, nil)
	require.NoError(t, err)
	assert.NotEqual(t, env.State.Path, other.State.Path)
	entries, err := os.ReadDir(tmp)
	require.NoError(t, err)
	assert.Empty(t, entries, "NewEnv creates nothing")

	for _, tc := range []struct{ given, want string }{
		{"/abs/state", "/abs/state"},
		{"rel", filepath.Join(cwd, "rel")},
	} {
		env, err := harness.NewEnv(cwd, &tc.given, nil)
		require.NoError(t, err)
		assert.Equal(t, tc.want, env.State.Path)
		assert.False(t, env.State.Shared, "an explicit state_dir is the caller's")
	}
}
