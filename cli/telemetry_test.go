package cli

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/internal/testutil/dockertest"
	"github.com/tapebox/tapebox/sandbox"
	"github.com/tapebox/tapebox/sandbox/telemetry"
)

func TestTelemetryPath(t *testing.T) {
	for in, want := range map[string]string{
		"run.json":               "run.telemetry.csv",
		"out/replay.tape.json":   "out/replay.tape.telemetry.csv",
		"/abs/replay":            "/abs/replay.telemetry.csv",
		"dir.d/run":              "dir.d/run.telemetry.csv",
		"./demo-out/replay.json": "./demo-out/replay.telemetry.csv",
	} {
		assert.Equal(t, want, telemetryPath(in), in)
	}
}

func TestStartTelemetry(t *testing.T) {
	_, name := dockertest.Run(t, dockertest.TinyImage)
	output := filepath.Join(t.TempDir(), "replay.json")
	var stderr bytes.Buffer
	env := &Env{Stdout: &bytes.Buffer{}, Stderr: &stderr, Getenv: os.Getenv}
	start := time.Now()
	stop, err := startTelemetry(t.Context(), env, name, start, output)
	require.NoError(t, err)
	time.Sleep(600 * time.Millisecond)
	stop()
	stop() // stopping twice is harmless

	f, err := os.Open(filepath.Join(filepath.Dir(output), "replay.telemetry.csv"))
	require.NoError(t, err)
	defer f.Close()
	rows, err := telemetry.ReadCSV(f)
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(rows), 2)
	assert.Less(t, rows[0].TMS, 200.0, "t_ms counts from the tape's start")
	assert.Contains(t, stderr.String(), "tapebox telemetry: sampling container "+name)
	assert.Contains(t, stderr.String(), "samples (cgroup-v")
	assert.Contains(t, stderr.String(), "replay.telemetry.csv")

	tests := []struct {
		name, container, output, want string
		is                            error
	}{
		{"no output", name, "", "--telemetry needs --output", nil},
		{"no container", "", output, "--telemetry needs a container", nil},
		{"missing container", "tapebox-no-such-container", output, "not found", sandbox.ErrNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stop, err := startTelemetry(t.Context(), env, tt.container, start, tt.output)
			assert.Nil(t, stop)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
			if tt.is != nil {
				assert.ErrorIs(t, err, tt.is)
			}
		})
	}
}

func TestTelemetryFlags(t *testing.T) {
	_, name := dockertest.Run(t, dockertest.TinyImage)
	env := &Env{Stdout: &bytes.Buffer{}, Stderr: &bytes.Buffer{}, Getenv: os.Getenv}
	tests := []struct {
		name          string
		args          []string
		withContainer bool
		sandbox       string // the container the verb knows of
		wantFile      bool
		wantErr       string
	}{
		{"off", nil, true, "", false, ""},
		{"off ignores a bad container", []string{"--container", "tapebox-no-such-container"}, true, "", false, ""},
		{"sandbox's container", []string{"--telemetry"}, false, name, true, ""},
		{"--container wins", []string{"--telemetry", "--container", name}, true, "tapebox-no-such-container", true, ""},
		{"local sandbox", []string{"--telemetry"}, false, "", false, "--telemetry needs a container"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := flag.NewFlagSet("x", flag.ContinueOnError)
			tf := addTelemetryFlags(fs, tt.withContainer)
			require.NoError(t, fs.Parse(tt.args))
			output := filepath.Join(t.TempDir(), "run.json")
			stop, err := tf.start(t.Context(), env, tt.sandbox, time.Now(), output)
			if tt.wantErr != "" {
				assert.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			stop()
			if tt.wantFile {
				assert.FileExists(t, telemetryPath(output))
			} else {
				assert.NoFileExists(t, telemetryPath(output))
			}
		})
	}
}
