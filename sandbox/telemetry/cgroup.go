package telemetry

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// errGone says the container's cgroup vanished: the container stopped (or was removed).
var errGone = errors.New("the container's cgroup is gone")

// cgroup reads one container's counters from its cgroup files on this host.
type cgroup struct {
	version int
	// Files; "" when the controller's directory was not found.
	cpu, memUsage, memStat, memLimit, pids string
	// machineMem caps the limit: an unlimited container reports the host's memory, as docker
	// stats does.
	machineMem int64
	// missing holds the files already reported missing, so each is logged once.
	missing map[string]bool
	logf    func(string, ...any)
}

// counters is one reading; -1 means unknown.
type counters struct {
	cpuNs, mem, limit, pids int64
}

// findCgroup locates the cgroup of the container with full ID id whose init process is pid
// (0 when unknown), under the cgroup mount root (/sys/fs/cgroup) with procfs at proc. It takes
// the paths /proc/<pid>/cgroup names when they mention the ID (this handles cgroup namespaces
// and nesting), else Docker's usual places: cgroupfs driver docker/<id>, systemd driver
// system.slice/docker-<id>.scope. The CPU counter must exist; memory and pids files may be
// missing (their columns stay empty).
func findCgroup(root, proc string, pid int, id string, machineMem int64, logf func(string, ...any)) (*cgroup, error) {
	fallbacks := []string{"docker/" + id, "system.slice/docker-" + id + ".scope"}
	fromProc := map[string]string{} // controller ("" for v2) -> path
	if pid > 0 {
		if data, err := os.ReadFile(filepath.Join(proc, strconv.Itoa(pid), "cgroup")); err == nil {
			for line := range strings.Lines(string(data)) {
				parts := strings.SplitN(strings.TrimSpace(line), ":", 3)
				if len(parts) != 3 || !strings.Contains(parts[2], id) {
					continue
				}
				if parts[1] == "" {
					fromProc[""] = parts[2]
				}
				for ctrl := range strings.SplitSeq(parts[1], ",") {
					fromProc[ctrl] = parts[2]
				}
			}
		}
	}
	c := &cgroup{machineMem: machineMem, missing: map[string]bool{}, logf: logf}
	// dir returns the first existing directory among the controller's candidates.
	dir := func(mounts []string, ctrl string) string {
		rels := fallbacks
		if p, ok := fromProc[ctrl]; ok {
			rels = append([]string{p}, fallbacks...)
		}
		for _, m := range mounts {
			for _, rel := range rels {
				d := filepath.Join(root, m, rel)
				if st, err := os.Stat(d); err == nil && st.IsDir() {
					return d
				}
			}
		}
		return ""
	}
	if isFile(filepath.Join(root, "cgroup.controllers")) {
		c.version = 2
		d := dir([]string{""}, "")
		if d == "" || !isFile(filepath.Join(d, "cpu.stat")) {
			return nil, fmt.Errorf("no cgroup v2 directory with cpu.stat for container %.12s under %s", id, root)
		}
		c.cpu = filepath.Join(d, "cpu.stat")
		c.memUsage = filepath.Join(d, "memory.current")
		c.memStat = filepath.Join(d, "memory.stat")
		c.memLimit = filepath.Join(d, "memory.max")
		c.pids = filepath.Join(d, "pids.current")
		return c, nil
	}
	c.version = 1
	cpu := dir([]string{"cpuacct", "cpu,cpuacct", "cpuacct,cpu"}, "cpuacct")
	if cpu == "" || !isFile(filepath.Join(cpu, "cpuacct.usage")) {
		return nil, fmt.Errorf("no cgroup v1 cpuacct directory for container %.12s under %s", id, root)
	}
	c.cpu = filepath.Join(cpu, "cpuacct.usage")
	if mem := dir([]string{"memory"}, "memory"); mem != "" {
		c.memUsage = filepath.Join(mem, "memory.usage_in_bytes")
		c.memStat = filepath.Join(mem, "memory.stat")
		c.memLimit = filepath.Join(mem, "memory.limit_in_bytes")
	} else {
		logf("no cgroup v1 memory directory for container %.12s: memory_bytes and memory_limit_bytes stay empty", id)
	}
	if p := dir([]string{"pids"}, "pids"); p != "" {
		c.pids = filepath.Join(p, "pids.current")
	} else {
		logf("no cgroup v1 pids directory for container %.12s: pids stays empty", id)
	}
	return c, nil
}

// read takes one reading. It returns errGone when the CPU counter vanished with its
// directory; any other missing file leaves its value unknown (-1) and is logged once.
func (c *cgroup) read() (counters, error) {
	r := counters{cpuNs: -1, mem: -1, limit: -1, pids: -1}
	data, err := os.ReadFile(c.cpu)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			if _, derr := os.Stat(filepath.Dir(c.cpu)); errors.Is(derr, fs.ErrNotExist) {
				return r, errGone
			}
			c.report(c.cpu, err)
			return r, nil
		}
		return r, fmt.Errorf("read %s: %w", c.cpu, err)
	}
	if c.version == 2 {
		if v, ok := statField(data, "usage_usec"); ok {
			r.cpuNs = v * 1000
		}
	} else if v, err := strconv.ParseInt(string(bytes.TrimSpace(data)), 10, 64); err == nil {
		r.cpuNs = v
	}
	usage := c.int(c.memUsage)
	if usage >= 0 {
		r.mem = usage
		if stat := c.file(c.memStat); stat != nil {
			key := "total_inactive_file"
			if c.version == 2 {
				key = "inactive_file"
			}
			// As docker stats: usage minus the inactive file cache, when that is smaller.
			if v, ok := statField(stat, key); ok && v < usage {
				r.mem = usage - v
			}
		}
	}
	if c.memLimit != "" {
		if raw := c.file(c.memLimit); raw != nil {
			s := string(bytes.TrimSpace(raw))
			if s == "max" {
				r.limit = c.machineMem
			} else if v, err := strconv.ParseInt(s, 10, 64); err == nil {
				r.limit = v
			}
			if c.machineMem > 0 && r.limit > c.machineMem {
				r.limit = c.machineMem
			}
		}
	}
	r.pids = c.int(c.pids)
	return r, nil
}

// file reads a file; nil when it cannot (logged once).
func (c *cgroup) file(p string) []byte {
	if p == "" {
		return nil
	}
	data, err := os.ReadFile(p)
	if err != nil {
		c.report(p, err)
		return nil
	}
	return data
}

// int reads a file holding one integer; -1 when it cannot.
func (c *cgroup) int(p string) int64 {
	data := c.file(p)
	if data == nil {
		return -1
	}
	v, err := strconv.ParseInt(string(bytes.TrimSpace(data)), 10, 64)
	if err != nil {
		c.report(p, err)
		return -1
	}
	return v
}

func (c *cgroup) report(p string, err error) {
	if c.missing[p] {
		return
	}
	c.missing[p] = true
	c.logf("cgroup file unreadable, its column stays empty: %v", err)
}

// statField finds "key value" in a flat-keyed cgroup file (memory.stat, cpu.stat).
func statField(data []byte, key string) (int64, bool) {
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), " ")
		if ok && k == key {
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return n, err == nil
		}
	}
	return 0, false
}

// hostMemTotal reads MemTotal from /proc/meminfo, in bytes; 0 when unknown.
func hostMemTotal(proc string) int64 {
	data, err := os.ReadFile(filepath.Join(proc, "meminfo"))
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(data)) {
		if rest, ok := strings.CutPrefix(line, "MemTotal:"); ok {
			f := strings.Fields(rest)
			if len(f) >= 1 {
				kb, err := strconv.ParseInt(f[0], 10, 64)
				if err == nil {
					return kb * 1024
				}
			}
		}
	}
	return 0
}
