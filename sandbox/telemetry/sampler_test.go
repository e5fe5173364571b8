package telemetry

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/internal/testutil/dockertest"
	"github.com/tapebox/tapebox/internal/testutil/sandboxtest"
	"github.com/tapebox/tapebox/sandbox"
)

const busyLoop = "while :; do :; done"

// runContainer starts a container of the tiny busybox image running sh -c script, with
// hc's limits, and removes it when the test ends.
func runContainer(t *testing.T, hc container.HostConfig, script string) string {
	t.Helper()
	cli, image := dockertest.Image(t, dockertest.TinyImage)
	hc.NetworkMode = "none"
	created, err := cli.ContainerCreate(t.Context(),
		&container.Config{Image: image, Cmd: []string{"sh", "-c", script}, Labels: map[string]string{dockertest.Label: t.Name()}},
		&hc, nil, nil, "")
	require.NoError(t, err)
	t.Cleanup(func() { dockertest.Remove(t, created.ID) })
	require.NoError(t, cli.ContainerStart(t.Context(), created.ID, container.StartOptions{}))
	return created.ID
}

func readSamples(t *testing.T, path string) []Sample {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	rows, err := ReadCSV(f)
	require.NoError(t, err)
	return rows
}

// median of the gaps between consecutive samples' times.
func medianGap(rows []Sample) time.Duration {
	var gaps []time.Duration
	for i := 1; i < len(rows); i++ {
		gaps = append(gaps, rows[i].At.Sub(rows[i-1].At))
	}
	slices.Sort(gaps)
	return gaps[len(gaps)/2]
}

// procCPU measures a container's init process's CPU time with /proc/PID/stat (utime and
// stime, in clock ticks of 10 ms), independently of the cgroup counters.
type procCPU struct {
	pid          int
	t0, t1       time.Time
	ticks0, tick int64
}

func startProcCPU(t *testing.T, id string) *procCPU {
	t.Helper()
	info, err := dockertest.Client(t).ContainerInspect(t.Context(), id)
	require.NoError(t, err)
	p := &procCPU{pid: info.State.Pid}
	p.t0, p.ticks0 = time.Now(), p.read()
	return p
}

func (p *procCPU) read() int64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.pid))
	if err != nil {
		return -1
	}
	// Fields after the command name, which is in parentheses: state is field 3, utime 14.
	f := strings.Fields(string(data[strings.LastIndexByte(string(data), ')')+1:]))
	if len(f) < 13 {
		return -1
	}
	u, err1 := strconv.ParseInt(f[11], 10, 64)
	s, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return -1
	}
	return u + s
}

func (p *procCPU) stop()    { p.t1, p.tick = time.Now(), p.read() }
func (p *procCPU) ok() bool { return p.ticks0 >= 0 && p.tick >= 0 }
func (p *procCPU) percent() float64 {
	return 100 * float64((p.tick-p.ticks0)*10) / float64(p.t1.Sub(p.t0).Milliseconds())
}

// TestSampler samples a busy loop from the cgroup files (4 Hz) and from the API stream (its
// own rate), and checks the rows: real times on the given clock, one core busy, memory in use.
func TestSampler(t *testing.T) {
	tests := []struct {
		name      string
		forceAPI  bool
		run       time.Duration
		minRows   int
		gap       [2]time.Duration // bounds of the median gap between rows
		source    Source
		logSource string
	}{
		{"cgroup", false, 2600 * time.Millisecond, 9, [2]time.Duration{200 * time.Millisecond, 300 * time.Millisecond}, SourceCgroupV1, "every 250ms"},
		{"api", true, 4500 * time.Millisecond, 3, [2]time.Duration{500 * time.Millisecond, 2 * time.Second}, SourceAPI, "stats API"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id := runContainer(t, container.HostConfig{}, busyLoop)
			path := filepath.Join(t.TempDir(), "sub", "run.telemetry.csv")
			start := time.Now().Add(-time.Second) // the tape started a second ago
			proc := startProcCPU(t, id)
			var l sandboxtest.LogLines
			s, err := Start(t.Context(), Options{Container: id[:12], Start: start, Path: path, ForceAPI: tt.forceAPI, Logf: l.Logf})
			require.NoError(t, err)
			if !tt.forceAPI && s.Source() == SourceCgroupV2 {
				tt.source = SourceCgroupV2
			}
			assert.Equal(t, tt.source, s.Source())
			assert.Equal(t, id, s.ContainerID())
			time.Sleep(tt.run)
			require.NoError(t, s.Close())
			proc.stop()
			require.NoError(t, s.Close(), "Close is idempotent")
			assert.Contains(t, l.String(), tt.logSource)

			rows := readSamples(t, path)
			require.GreaterOrEqual(t, len(rows), tt.minRows, "logs:\n%s", l.String())
			assert.Equal(t, s.Rows(), len(rows))
			assert.True(t, math.IsNaN(rows[0].CPUPercent), "cpu_percent is empty on the first row")
			gap := medianGap(rows)
			assert.True(t, gap >= tt.gap[0] && gap <= tt.gap[1], "median gap %v, want within %v", gap, tt.gap)
			for i, r := range rows {
				assert.Equal(t, tt.source, r.Source)
				assert.InDelta(t, float64(r.At.Sub(start).Microseconds())/1000, r.TMS, 0.002, "row %d: t_ms on the tape's clock", i)
				assert.Greater(t, r.TMS, 900.0, "row %d", i)
				assert.WithinDuration(t, time.Now(), r.At, 30*time.Second, "row %d: a real time", i)
				assert.Greater(t, r.MemoryBytes, int64(0), "row %d", i)
				assert.Greater(t, r.MemoryLimitBytes, r.MemoryBytes, "row %d", i)
				assert.GreaterOrEqual(t, r.Pids, int64(1), "row %d", i)
				assert.False(t, math.IsNaN(r.CPUms), "row %d", i)
				if i > 0 {
					assert.True(t, r.At.After(rows[i-1].At), "row %d: times increase", i)
					assert.GreaterOrEqual(t, r.CPUms, rows[i-1].CPUms, "row %d: cpu_ms is cumulative", i)
				}
			}
			// One shell spinning keeps one core busy when the machine is idle; on a shared machine
			// it gets less. Check the sampler's CPU share against the kernel's per-process
			// accounting of the same spinning process over the same window.
			first, last := rows[0], rows[len(rows)-1]
			got := 100 * (last.CPUms - first.CPUms) / float64(last.At.Sub(first.At).Milliseconds())
			for i, r := range rows[1:] {
				assert.True(t, r.CPUPercent >= 0 && r.CPUPercent < 150, "row %d: cpu_percent %.1f: one thread uses at most one core", i+1, r.CPUPercent)
			}
			if proc.ok() {
				want := proc.percent()
				t.Logf("cpu_percent over the run: sampler %.1f, kernel's process accounting %.1f", got, want)
				assert.InDelta(t, want, got, max(10, want/4), "sampler and process accounting disagree")
			} else {
				t.Logf("cpu_percent over the run: %.1f (the process is not visible in /proc here)", got)
				assert.Greater(t, got, 5.0)
			}
		})
	}
}

func TestSamplerMemoryLimit(t *testing.T) {
	const limit = 64 << 20
	id := runContainer(t, container.HostConfig{Resources: container.Resources{Memory: limit}}, "sleep 60")
	path := filepath.Join(t.TempDir(), "t.csv")
	s, err := Start(t.Context(), Options{Container: id, Path: path, Interval: 50 * time.Millisecond})
	require.NoError(t, err)
	time.Sleep(300 * time.Millisecond)
	require.NoError(t, s.Close())
	rows := readSamples(t, path)
	require.NotEmpty(t, rows)
	for _, r := range rows {
		assert.Equal(t, int64(limit), r.MemoryLimitBytes)
		assert.Greater(t, r.MemoryBytes, int64(0))
		assert.Less(t, r.MemoryBytes, int64(limit))
	}
	if len(rows) > 1 {
		assert.Less(t, rows[len(rows)-1].CPUPercent, 20.0, "sleep is idle")
	}
}

// TestSamplerContainerStops: a container that exits mid-sampling ends sampling cleanly.
func TestSamplerContainerStops(t *testing.T) {
	for _, forceAPI := range []bool{false, true} {
		t.Run(fmt.Sprintf("api=%v", forceAPI), func(t *testing.T) {
			id := runContainer(t, container.HostConfig{}, "sleep 2")
			path := filepath.Join(t.TempDir(), "t.csv")
			var l sandboxtest.LogLines
			s, err := Start(t.Context(), Options{Container: id, Path: path, ForceAPI: forceAPI, Logf: l.Logf})
			require.NoError(t, err)
			select {
			case <-s.Done():
			case <-time.After(20 * time.Second):
				t.Fatalf("sampling did not end after the container stopped; logs:\n%s", l.String())
			}
			require.NoError(t, s.Close())
			assert.Contains(t, l.String(), "stopped (exited with code 0); sampling ended")
			rows := readSamples(t, path)
			assert.NotEmpty(t, rows)
			assert.Equal(t, s.Rows(), len(rows))
		})
	}
}

func TestStartErrors(t *testing.T) {
	dockertest.Client(t)
	stopped := runContainer(t, container.HostConfig{}, "true")
	cli := dockertest.Client(t)
	waitC, errC := cli.ContainerWait(t.Context(), stopped, container.WaitConditionNotRunning)
	select {
	case <-waitC:
	case err := <-errC:
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		opts    Options
		is      error
		message string
	}{
		{"missing container", Options{Container: "tapebox-no-such-container"}, sandbox.ErrNotFound, `container "tapebox-no-such-container": not found`},
		{"stopped container", Options{Container: stopped}, sandbox.ErrNotRunning, "exited with code 0"},
		{"no container", Options{}, nil, "a container name or ID is required"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.opts.Path = filepath.Join(t.TempDir(), "t.csv")
			s, err := Start(t.Context(), tt.opts)
			require.Error(t, err)
			assert.Nil(t, s)
			if tt.is != nil {
				assert.ErrorIs(t, err, tt.is)
			}
			assert.Contains(t, err.Error(), tt.message)
			assert.NoFileExists(t, tt.opts.Path, "no file for a sampler that did not start")
		})
	}
	t.Run("no path", func(t *testing.T) {
		_, err := Start(t.Context(), Options{Container: "x"})
		assert.ErrorContains(t, err, "output path is required")
	})
	t.Run("no engine", func(t *testing.T) {
		env := map[string]string{"DOCKER_HOST": "unix://" + filepath.Join(t.TempDir(), "none.sock")}
		ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
		defer cancel()
		_, err := Start(ctx, Options{Container: "x", Path: filepath.Join(t.TempDir(), "t.csv"), Getenv: func(k string) string { return env[k] }})
		assert.ErrorIs(t, err, sandbox.ErrNoEngine)
		assert.ErrorContains(t, err, "(DOCKER_HOST)")
	})
}

// TestSamplerContextEnds: the end of Start's context ends sampling.
func TestSamplerContextEnds(t *testing.T) {
	id := runContainer(t, container.HostConfig{}, "sleep 60")
	ctx, cancel := context.WithCancel(t.Context())
	s, err := Start(ctx, Options{Container: id, Path: filepath.Join(t.TempDir(), "t.csv")})
	require.NoError(t, err)
	cancel()
	select {
	case <-s.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("sampling went on after its context ended")
	}
	assert.NoError(t, s.Close())
	assert.GreaterOrEqual(t, s.Rows(), 1, "the first sample is taken at once")
}
