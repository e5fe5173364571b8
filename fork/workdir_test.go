package fork_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/fork"
	"github.com/tapebox/tapebox/tape"
	"github.com/tapebox/tapebox/testkit"
)

// TestCheckWorkdir: the one policy for where a harness works on this machine refuses
// system, home and hidden-in-home directories (as written and where links lead) and
// non-empty ones, and takes missing or empty ones elsewhere.
func TestCheckWorkdir(t *testing.T) {
	home, err := os.UserHomeDir()
	require.NoError(t, err)
	tmp := t.TempDir()
	full := filepath.Join(tmp, "full")
	require.NoError(t, os.MkdirAll(full, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(full, "x"), nil, 0o644))
	require.NoError(t, os.Symlink("/etc", filepath.Join(tmp, "etc-link")))
	require.NoError(t, os.Symlink(filepath.Join(home, ".ssh"), filepath.Join(tmp, "ssh-link")))
	// A link to a hidden directory of the home that does not exist (yet) is refused too.
	require.NoError(t, os.Symlink(filepath.Join(home, ".tapebox-never-made", "keys"), filepath.Join(tmp, "missing-link")))
	require.NoError(t, os.Symlink("missing-link", filepath.Join(tmp, "relative-link")))
	require.NoError(t, os.MkdirAll(filepath.Join(tmp, "empty"), 0o755))
	for dir, want := range map[string]string{
		filepath.Join(tmp, "missing", "deeper"):  "",
		filepath.Join(tmp, "empty"):              "",
		"/var/tmp/tapebox-test-missing":          "",
		filepath.Join(home, "tapebox-test-proj"): "",
		full:                                     "it is not empty (x",
		"/":                                      "a system directory",
		"/tmp":                                   "a system directory",
		"/opt":                                   "a system directory",
		"/var/lib/tapebox-test":                  "in the system directory /var",
		"/etc/cron.d":                            "in the system directory /etc",
		"/usr/local/bin/x":                       "in the system directory /usr",
		"/proc/self":                             "in the system directory /proc",
		home:                                     "a home directory",
		filepath.Join(home, ".ssh"):              "a hidden directory of the home directory",
		filepath.Join(home, ".config", "autostart"): "a hidden directory of the home directory",
		filepath.Join(tmp, "etc-link", "cron.d"):    "in the system directory /etc (where " + filepath.Join(tmp, "etc-link", "cron.d") + " leads)",
		filepath.Join(tmp, "ssh-link"):              "a hidden directory of the home directory",
		filepath.Join(tmp, "missing-link"):          "a hidden directory of the home directory",
		filepath.Join(tmp, "relative-link", "sub"):  "a hidden directory of the home directory",
	} {
		err := fork.CheckWorkdir(dir)
		if want == "" {
			assert.NoError(t, err, dir)
			continue
		}
		if assert.Error(t, err, dir) {
			assert.True(t, errors.Is(err, fork.ErrUnsafeWorkdir), "%s: %v", dir, err)
			assert.Contains(t, err.Error(), want, dir)
		}
	}
}

// TestHostWorkdir: no name and no --in-place is a fresh directory of $TMPDIR, whatever
// meta.cwd says; --in-place takes meta.cwd only when it is absolute and passes the check.
func TestHostWorkdir(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	rec := &tape.Tape{Meta: tape.Meta{Cwd: t.TempDir()}}
	dir, temp, err := fork.HostWorkdir("", false, rec)
	require.NoError(t, err)
	assert.True(t, temp)
	assert.True(t, strings.HasPrefix(dir, os.Getenv("TMPDIR")+"/tapebox-fork-"), dir)
	assert.NotEqual(t, rec.Meta.Cwd, dir)

	dir, temp, err = fork.HostWorkdir("", true, rec)
	require.NoError(t, err)
	assert.False(t, temp)
	assert.Equal(t, rec.Meta.Cwd, dir)

	for _, cwd := range []string{"", "relative/dir", "/root/.ssh", "/etc"} {
		rec.Meta.Cwd = cwd
		_, _, err = fork.HostWorkdir("", true, rec)
		assert.ErrorIs(t, err, fork.ErrUnsafeWorkdir, cwd)
	}
	named := filepath.Join(t.TempDir(), "w")
	dir, _, err = fork.HostWorkdir(named, true, rec) // a name wins
	require.NoError(t, err)
	assert.Equal(t, named, dir)
}

// TestRunRefusesUnsafeWorkdir: fork.Run itself (testkit's path) refuses a directory the
// policy refuses, before the command runs.
func TestRunRefusesUnsafeWorkdir(t *testing.T) {
	recPath, rec := record(t, testkit.NewProvider(t, original()))
	marker := filepath.Join(t.TempDir(), "ran")
	_, err := fork.Run(t.Context(), fork.Options{Config: fork.Config{Recording: rec, At: 1, Output: filepath.Join(t.TempDir(), "f.json")},
		TapePath: recPath, Workdir: "/etc/tapebox-fork-test", Command: []string{"touch", marker}})
	assert.ErrorIs(t, err, fork.ErrUnsafeWorkdir)
	assert.NoFileExists(t, marker)
	assert.NoDirExists(t, "/etc/tapebox-fork-test")
}
