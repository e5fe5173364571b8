package realharness

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

// MarkEnv is the variable every process of a run carries, with a value of the run's own:
// the harness gets it in its environment and the commands it runs inherit it. It is how a
// run finds what the harness left running outside its process group: Pi starts each
// command in a session of its own (detached), so a background job of a command outlives
// Pi out of the reach of a kill of Pi's group, and would go on writing into the directory
// the next run (a replay of the same recording) works in.
const MarkEnv = "TAPEBOX_REALHARNESS_RUN"

// newRunMark returns a new MarkEnv=value entry.
func newRunMark() (string, error) {
	b := make([]byte, 12)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("realharness: run mark: %w", err)
	}
	return MarkEnv + "=" + hex.EncodeToString(b), nil
}

// Leftovers returns the processes still running (zombies aside) whose environment holds
// mark (a MarkEnv=value entry). It reads /proc: a process whose environment it may not read
// (another user's, without privileges) is not found.
func Leftovers(mark string) []int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	needle := []byte("\x00" + mark + "\x00")
	self := os.Getpid()
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err != nil || !bytes.Contains(append([]byte{0}, env...), needle) {
			continue
		}
		if zombie(pid) {
			continue
		}
		out = append(out, pid)
	}
	return out
}

// zombie says whether pid has exited and waits to be reaped (or is gone).
func zombie(pid int) bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	// pid (comm) S ...: the state follows the last parenthesis.
	i := bytes.LastIndexByte(stat, ')')
	return i < 0 || i+2 >= len(stat) || stat[i+2] == 'Z' || stat[i+2] == 'X'
}

// endLeftovers ends what a harness of process group pgid left running when it exited: it
// lets the group and every process carrying mark go on for up to linger, then kills them
// and waits (a few seconds at most) until none runs, so that nothing of the run writes
// into its directory after run returns. It returns how long the leftovers went on.
func endLeftovers(pgid int, mark string, linger time.Duration) time.Duration {
	alive := func() bool { return syscall.Kill(-pgid, 0) == nil || len(Leftovers(mark)) > 0 }
	start := time.Now()
	for end := start.Add(linger); time.Now().Before(end) && alive(); {
		time.Sleep(50 * time.Millisecond)
	}
	lingered := time.Since(start)
	if linger <= 0 {
		lingered = 0
	}
	for end := time.Now().Add(5 * time.Second); ; {
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		left := Leftovers(mark)
		for _, pid := range left {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		if len(left) == 0 || time.Now().After(end) {
			return lingered
		}
		time.Sleep(20 * time.Millisecond)
	}
}
