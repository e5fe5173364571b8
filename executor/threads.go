package executor

import (
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
)

// reservedThreads is how many OS threads a session starts with (see reserveThreads): the
// threads a session's blocking system calls use at once (a process wait per running command
// and background task, file reads and writes, the protocol streams), with room to spare.
// Each counts against the sandbox's process limit (512 by default): under a lower limit a
// session reserves an eighth of it (see threadsToReserve).
const reservedThreads = 24

// pidsMax are the files that hold the process limit of the executor's cgroup, v2 then v1.
var pidsMax = []string{"/sys/fs/cgroup/pids.max", "/sys/fs/cgroup/pids/pids.max"}

// threadsToReserve returns reservedThreads, or an eighth of the process limit in the first
// of files that exists when that is less, and at least 4.
func threadsToReserve(files []string) int {
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		if limit, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
			return min(reservedThreads, max(4, limit/8))
		}
		break // "max": no limit
	}
	return reservedThreads
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
