package action

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestStateDirMakeAndPrune(t *testing.T) {
	for _, shared := range []bool{false, true} {
		t.Run(map[bool]string{false: "explicit", true: "shared"}[shared], func(t *testing.T) {
			d := &StateDir{Path: filepath.Join(t.TempDir(), "state"), Shared: shared}
			_, err := os.Lstat(d.Path)
			require.ErrorIs(t, err, fs.ErrNotExist, "nothing is made before Make")

			p, err := d.Make("tasks", "a")
			require.NoError(t, err)
			assert.Equal(t, filepath.Join(d.Path, "tasks", "a"), p)
			fi, err := os.Stat(d.Path)
			require.NoError(t, err)
			assert.Equal(t, fs.ModeDir|0o700, fi.Mode())
			_, err = d.Make("tasks", "a")
			require.NoError(t, err, "making an existing directory")

			d.Prune("tasks")
			assert.DirExists(t, p, "a tasks directory with a task in it stays")
			require.NoError(t, os.Remove(p))
			d.Prune("tasks")
			assert.NoDirExists(t, filepath.Join(d.Path, "tasks"))
			if shared {
				assert.NoDirExists(t, d.Path, "the shared default goes once empty")
			} else {
				assert.DirExists(t, d.Path, "an explicit state directory stays")
			}
		})
	}
}

// A shared state directory is at a name anyone can predict in a directory anyone can
// write: what is already there is used only when it is a directory of this user.
func TestStateDirSharedRefusesPlanted(t *testing.T) {
	tmp := t.TempDir()
	target := filepath.Join(tmp, "victim")
	require.NoError(t, os.Mkdir(target, 0o755))
	tests := []struct {
		name  string
		plant func(path string) error
		why   string
	}{
		{"symbolic link to a directory", func(p string) error { return os.Symlink(target, p) }, "it is a symbolic link"},
		{"dangling symbolic link", func(p string) error { return os.Symlink(filepath.Join(tmp, "nowhere"), p) }, "it is a symbolic link"},
		{"regular file", func(p string) error { return os.WriteFile(p, nil, 0o600) }, "it is not a directory"},
		{"directory of another user", func(p string) error {
			if os.Getuid() != 0 {
				t.Skip("needs root to give a directory away")
			}
			if err := os.Mkdir(p, 0o777); err != nil {
				return err
			}
			return os.Chown(p, 65534, 65534)
		}, "it belongs to uid 65534, not 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := &StateDir{Path: filepath.Join(t.TempDir(), "state"), Shared: true}
			require.NoError(t, tt.plant(d.Path))
			_, err := d.Make("tasks", "x")
			require.ErrorIs(t, err, ErrUnsafeStateDir)
			assert.Contains(t, err.Error(), d.Path+": "+tt.why)
			entries, err := os.ReadDir(target)
			require.NoError(t, err)
			assert.Empty(t, entries, "nothing is made through the planted entry")
			_, err = os.Lstat(filepath.Join(tmp, "nowhere"))
			assert.ErrorIs(t, err, fs.ErrNotExist)
		})
	}

	// An explicit state directory is the caller's choice: a link to a directory is followed.
	d := &StateDir{Path: filepath.Join(tmp, "explicit")}
	require.NoError(t, os.Symlink(target, d.Path))
	_, err := d.Make("tasks")
	require.NoError(t, err)
	assert.DirExists(t, filepath.Join(target, "tasks"))
}

// Tasks that all end and are removed, or fail to start, leave no state directory behind.
func TestTasksLeaveNoSharedState(t *testing.T) {
	tasks := &Tasks{State: &StateDir{Path: filepath.Join(t.TempDir(), "state"), Shared: true}}
	_, err := tasks.Start(t.Context(), TaskRequest{ID: "gone", Command: "true", Dir: filepath.Join(t.TempDir(), "missing")})
	require.Error(t, err)
	assert.NoDirExists(t, tasks.State.Path)
	for _, id := range []string{"a", "b"} {
		_, err := tasks.Start(t.Context(), TaskRequest{ID: id, Command: "echo " + id})
		require.NoError(t, err)
	}
	for _, id := range []string{"a", "b"} {
		_, err := tasks.Wait(t.Context(), id, time.Minute)
		require.NoError(t, err)
		require.NoError(t, tasks.Remove(id))
		if id == "a" {
			assert.DirExists(t, tasks.State.Path, "b is still there")
		}
	}
	assert.NoDirExists(t, tasks.State.Path)
}
