package telemetry

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tapebox/tapebox/internal/testutil/sandboxtest"
)

const testID = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

// tree writes files (slash paths relative to root) and returns root.
func tree(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for name, data := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(data), 0o644))
	}
	return root
}

func v1Files(rel string) map[string]string {
	return map[string]string{
		"cpuacct/" + rel + "/cpuacct.usage":        "2500000000\n",
		"memory/" + rel + "/memory.usage_in_bytes": "1000000\n",
		"memory/" + rel + "/memory.stat":           "cache 400000\ninactive_file 1\ntotal_inactive_file 300000\n",
		"memory/" + rel + "/memory.limit_in_bytes": "9223372036854771712\n",
		"pids/" + rel + "/pids.current":            "3\n",
	}
}

func TestCgroupRead(t *testing.T) {
	const machine = 8 << 30
	tests := []struct {
		name  string
		files map[string]string
		proc  map[string]string
		pid   int
		want  counters
		logs  []string
	}{
		{
			name:  "v1 cgroupfs",
			files: v1Files("docker/" + testID),
			// usage minus total_inactive_file; an unlimited container shows the host's memory.
			want: counters{cpuNs: 2_500_000_000, mem: 700_000, limit: machine, pids: 3},
		},
		{
			name: "v1 limit and systemd driver",
			files: func() map[string]string {
				f := v1Files("system.slice/docker-" + testID + ".scope")
				f["memory/system.slice/docker-"+testID+".scope/memory.limit_in_bytes"] = "67108864\n"
				return f
			}(),
			want: counters{cpuNs: 2_500_000_000, mem: 700_000, limit: 64 << 20, pids: 3},
		},
		{
			name:  "v1 from /proc/PID/cgroup (nested)",
			files: v1Files("outer/docker/" + testID),
			proc: map[string]string{"42/cgroup": "4:memory:/outer/docker/" + testID + "\n3:pids:/outer/docker/" + testID +
				"\n2:cpu,cpuacct:/outer/docker/" + testID + "\n1:name=systemd:/elsewhere\n"},
			pid:  42,
			want: counters{cpuNs: 2_500_000_000, mem: 700_000, limit: machine, pids: 3},
		},
		{
			name: "v1 missing memory and pids",
			files: map[string]string{
				"cpuacct/docker/" + testID + "/cpuacct.usage": "1000\n",
			},
			want: counters{cpuNs: 1000, mem: -1, limit: -1, pids: -1},
			logs: []string{"no cgroup v1 memory directory", "no cgroup v1 pids directory"},
		},
		{
			name: "v1 missing memory.stat: usage as is",
			files: func() map[string]string {
				f := v1Files("docker/" + testID)
				delete(f, "memory/docker/"+testID+"/memory.stat")
				return f
			}(),
			want: counters{cpuNs: 2_500_000_000, mem: 1_000_000, limit: machine, pids: 3},
			logs: []string{"memory.stat: no such file"},
		},
		{
			name: "v2",
			files: map[string]string{
				"cgroup.controllers": "cpu memory pids\n",
				"system.slice/docker-" + testID + ".scope/cpu.stat":       "usage_usec 1500\nuser_usec 1000\n",
				"system.slice/docker-" + testID + ".scope/memory.current": "5000\n",
				"system.slice/docker-" + testID + ".scope/memory.stat":    "anon 100\ninactive_file 1000\n",
				"system.slice/docker-" + testID + ".scope/memory.max":     "max\n",
				"system.slice/docker-" + testID + ".scope/pids.current":   "2\n",
			},
			want: counters{cpuNs: 1_500_000, mem: 4000, limit: machine, pids: 2},
		},
		{
			name: "v2 cgroupfs driver, limited, no pids file",
			files: map[string]string{
				"cgroup.controllers":                    "cpu memory\n",
				"docker/" + testID + "/cpu.stat":        "usage_usec 7\n",
				"docker/" + testID + "/memory.current":  "5000\n",
				"docker/" + testID + "/memory.stat":     "inactive_file 9000\n", // larger than usage: ignored
				"docker/" + testID + "/memory.max":      "1048576\n",
				"docker/" + testID + "/memory.pressure": "",
			},
			want: counters{cpuNs: 7000, mem: 5000, limit: 1 << 20, pids: -1},
			logs: []string{"pids.current: no such file"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := tree(t, tt.files)
			proc := tree(t, tt.proc)
			var l sandboxtest.LogLines
			cg, err := findCgroup(root, proc, tt.pid, testID, machine, l.Logf)
			require.NoError(t, err)
			got, err := cg.read()
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
			_, err = cg.read()
			require.NoError(t, err)
			for _, want := range tt.logs {
				assert.Contains(t, l.String(), want)
			}
			assert.Len(t, l.Lines(), len(tt.logs), "each problem is logged once:\n%s", l.String())
		})
	}
}

func TestCgroupGone(t *testing.T) {
	root := tree(t, v1Files("docker/"+testID))
	cg, err := findCgroup(root, t.TempDir(), 0, testID, 0, t.Logf)
	require.NoError(t, err)
	require.NoError(t, os.RemoveAll(filepath.Join(root, "cpuacct", "docker", testID)))
	_, err = cg.read()
	assert.ErrorIs(t, err, errGone)
}

func TestFindCgroupNone(t *testing.T) {
	_, err := findCgroup(tree(t, v1Files("docker/other")), t.TempDir(), 0, testID, 0, t.Logf)
	assert.ErrorContains(t, err, "no cgroup v1 cpuacct directory for container 0123456789ab")
	_, err = findCgroup(tree(t, map[string]string{"cgroup.controllers": ""}), t.TempDir(), 0, testID, 0, t.Logf)
	assert.ErrorContains(t, err, "no cgroup v2 directory")
}

func TestHostMemTotal(t *testing.T) {
	proc := tree(t, map[string]string{"meminfo": "MemTotal:       16384 kB\nMemFree: 1 kB\n"})
	assert.Equal(t, int64(16384*1024), hostMemTotal(proc))
	assert.Equal(t, int64(0), hostMemTotal(t.TempDir()))
}

func TestCSVRoundTrip(t *testing.T) {
	at := time.Date(2026, 3, 1, 12, 0, 0, 123456789, time.UTC)
	in := []Sample{
		{TMS: 1.2345678, At: at, CPUPercent: math.NaN(), CPUms: 10.5, MemoryBytes: 100, MemoryLimitBytes: 200, Pids: 1, Source: SourceCgroupV1},
		{TMS: 251, At: at.Add(250 * time.Millisecond), CPUPercent: 99.987, CPUms: 260.5, MemoryBytes: -1, MemoryLimitBytes: -1, Pids: -1, Source: SourceAPI},
	}
	var buf bytes.Buffer
	for _, rec := range [][]string{Columns, in[0].record(), in[1].record()} {
		buf.WriteString(joinCSV(rec) + "\n")
	}
	assert.Equal(t, "t_ms,time,cpu_percent,cpu_ms,memory_bytes,memory_limit_bytes,pids,source\n"+
		"1.235,2026-03-01T12:00:00.123456789Z,,10.5,100,200,1,cgroup-v1\n"+
		"251,2026-03-01T12:00:00.373456789Z,99.99,260.5,,,,api\n", buf.String())
	out, err := ReadCSV(&buf)
	require.NoError(t, err)
	require.Len(t, out, 2)
	assert.Equal(t, 1.235, out[0].TMS)
	assert.True(t, out[0].At.Equal(at))
	assert.True(t, math.IsNaN(out[0].CPUPercent))
	assert.Equal(t, int64(-1), out[1].MemoryBytes)
	assert.Equal(t, 99.99, out[1].CPUPercent)
	assert.Equal(t, SourceAPI, out[1].Source)

	_, err = ReadCSV(bytes.NewBufferString("a,b\n"))
	assert.ErrorContains(t, err, "header")
	_, err = ReadCSV(bytes.NewBufferString(joinCSV(Columns) + "\nx,2026-03-01T12:00:00Z,,,,,\n"))
	assert.ErrorContains(t, err, "line 2")
}

func joinCSV(rec []string) string {
	s := ""
	for i, f := range rec {
		if i > 0 {
			s += ","
		}
		s += f
	}
	return s
}
