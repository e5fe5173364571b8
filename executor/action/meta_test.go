package action

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestMetaMatchesJSON: task.json is json.Marshal's encoding of the task, HTML escapes and
// omitempty included, and the fields json.Marshal leaves out stay out.
func TestMetaMatchesJSON(t *testing.T) {
	code := 3
	for _, st := range []TaskStatus{
		{},
		{ID: "b1x2", Command: "sleep 5 && echo '<done>' & wait", Cwd: "/app", PID: 4242, StartedMS: 1764633600123},
		{ID: "\"\\\x00\x1f\u2028", Command: "printf '\xff\xfe' \t\n", Cwd: "/é", PID: -1, StartedMS: -5, TTY: true, ExitLine: true,
			Running: true, ExitCode: &code, Killed: true},
		{ID: "x", TTY: true},
		{ID: "y", ExitLine: true},
	} {
		want, err := json.Marshal(st)
		require.NoError(t, err)
		assert.Equal(t, string(want), string(appendMeta([]byte{}, &st)))
		// readMeta gives back what json.Marshal keeps (invalid UTF-8 comes back as U+FFFD).
		dir := t.TempDir()
		require.NoError(t, os.WriteFile(filepath.Join(dir, "task.json"), appendMeta(nil, &st), 0o644))
		got, err := readMeta(st.ID, dir)
		require.NoError(t, err)
		var back TaskStatus
		require.NoError(t, json.Unmarshal(want, &back))
		assert.Equal(t, back, got)
	}
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "task.json"), []byte(`{"id":"b1","pid":"x"}`), 0o644))
	_, err := readMeta("b1", dir)
	assert.ErrorContains(t, err, "task b1: task.json: ")
	assert.ErrorContains(t, err, "pid")
}

// TestMetaFieldsKnown fails when a field is added to TaskStatus: appendMeta must learn it.
func TestMetaFieldsKnown(t *testing.T) {
	rt := reflect.TypeFor[TaskStatus]()
	var keys []string
	for i := range rt.NumField() {
		keys = append(keys, rt.Field(i).Tag.Get("json"))
	}
	assert.Equal(t, "id command cwd pid started_ms tty,omitempty exit_line,omitempty - - -", strings.Join(keys, " "),
		"TaskStatus changed: teach appendMeta in executor/action/tasks.go its fields")
}

// FuzzMeta holds appendMeta to json.Marshal on arbitrary strings and numbers.
func FuzzMeta(f *testing.F) {
	f.Add("b1x2", "echo <a> && b", "/app", 42, int64(1764633600123), true, false)
	f.Add("\xff\u2028", "\x00\"\\", "", -1, int64(-1), false, true)
	f.Fuzz(func(t *testing.T, id, command, cwd string, pid int, started int64, tty, exitLine bool) {
		st := TaskStatus{ID: id, Command: command, Cwd: cwd, PID: pid, StartedMS: started, TTY: tty, ExitLine: exitLine}
		want, err := json.Marshal(st)
		require.NoError(t, err)
		require.Equal(t, string(want), string(appendMeta(nil, &st)))
	})
}
