package executor

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
)

// reservedThreads is how many OS threads a session starts with (see reserveThreads): the
// threads a session's blocking system calls use at once (a process wait per running command
// and background task, file reads and writes, the protocol streams), with room to spare.
// Each counts against the sandbox's process limit (512 by default): under a lower limit a
// session reserves less (see threadsToReserve).
const reservedThreads = 24

// pidsDirs are where the executor's cgroup keeps its process limit (pids.max) and count
// (pids.current): v2, then v1.
var pidsDirs = []string{"/sys/fs/cgroup", "/sys/fs/cgroup/pids"}

// threadsToReserve returns how many threads to reserve under the process limit of the first
// of dirs that has one: reservedThreads, or an eighth of a lower limit (at least 4), and never
// more than half of the processes still free, so that a session opened while something else
// holds nearly all of them (a restart beside a fork bomb) does not abort for want of the
// threads it meant to keep.
func threadsToReserve(dirs []string) int {
	for _, d := range dirs {
		limit, err := readCount(filepath.Join(d, "pids.max"))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			break // "max": no limit
		}
		n := min(reservedThreads, max(4, limit/8))
		if used, err := readCount(filepath.Join(d, "pids.current")); err == nil {
			n = min(n, max(0, limit-used)/2)
		}
		return n
	}
	return reservedThreads
}

func readCount(path string) (int, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(strings.TrimSpace(string(b)))
}

// reserveThreads has the Go runtime start n OS threads now and keep them idle. A command in
// the sandbox may take every process the sandbox allows (a fork bomb); when the executor
// then needs a thread it does not have, the runtime cannot create it and aborts the whole
// executor, ending the session and every call in it. Idle threads are reused before any new
// one is made, and the runtime never ends an idle thread.
//
// Each of n goroutines locks itself to a thread of its own until all n are running, then
// unlocks and returns, leaving its thread idle.
func reserveThreads(n int) {
	if n <= 0 {
		return
	}
	var running, release sync.WaitGroup
	running.Add(n)
	release.Add(1)
	for range n {
		go func() {
			runtime.LockOSThread()
			running.Done()
			release.Wait()
			runtime.UnlockOSThread()
		}()
	}
	running.Wait()
	release.Done()
}
