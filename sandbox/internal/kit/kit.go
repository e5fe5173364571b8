package kit

import (
	"crypto/rand"
	"encoding/hex"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/tapebox/tapebox/workspace"
)

// EnvList is env as KEY=VALUE entries, sorted.
func EnvList(env map[string]string) []string {
	list := make([]string, 0, len(env))
	for k, v := range env {
		list = append(list, k+"="+v)
	}
	slices.Sort(list)
	return list
}

// RandomHex is n random bytes in hex: a name no other sandbox has.
func RandomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// Logf is logf, or a function that drops its lines when logf is nil.
func Logf(logf func(string, ...any)) func(string, ...any) {
	if logf == nil {
		return func(string, ...any) {}
	}
	return logf
}

// Warnf is where Open's warnings go: warnf, else logf, else nowhere.
func Warnf(warnf, logf func(string, ...any)) func(string, ...any) {
	if warnf != nil {
		return warnf
	}
	return Logf(logf)
}

// Limit is a limit as an engine takes it: v, or def for 0, or 0 (none) for a negative v.
func Limit[T int64 | float64](v, def T) T {
	switch {
	case v == 0:
		return def
	case v < 0:
		return 0
	}
	return v
}

// IsRoot reports whether a container user names root (or no one, which is root).
func IsRoot(user string) bool {
	u, _, _ := strings.Cut(user, ":")
	return u == "" || u == "root" || u == "0"
}

// OwnerOf reads a container's user ("", "root", "UID", "UID:GID", "NAME[:GROUP]"): the owner
// for numeric ones (group 0 when none is given, as the runtime does for a user missing from
// passwd), or byName for the engine to resolve.
func OwnerOf(user string) (owner workspace.Owner, byName bool) {
	u, g, _ := strings.Cut(user, ":")
	if u == "" || u == "root" {
		u = "0"
	}
	uid, err := strconv.Atoi(u)
	if err != nil || uid < 0 {
		return workspace.Owner{}, true
	}
	gid := 0
	if g != "" {
		if gid, err = strconv.Atoi(g); err != nil || gid < 0 {
			return workspace.Owner{}, true
		}
	}
	return workspace.Owner{UID: uid, GID: gid}, false
}

// WorkspaceTar opens a workspace snapshot as the tar stream a container's or pod's user
// gets (workspace.Tar verifies it first): the entries are owned by user when it is numeric,
// else byName says that the engine must resolve the name (see OwnerOf).
func WorkspaceTar(snapshot *os.File, info workspace.Info, user string) (rc io.ReadCloser, byName bool, err error) {
	owner, byName := OwnerOf(user)
	rc, err = workspace.Tar(snapshot, info, owner)
	return rc, byName, err
}

// IsOCIExecFailure recognizes the runtime's message for a command it could not start (not
// found, not executable), as opposed to a command that ran and exited 126 or 127 itself.
func IsOCIExecFailure(out string) bool {
	out = strings.ToLower(out)
	return strings.Contains(out, "oci runtime exec failed") || strings.Contains(out, "exec failed:")
}

// TailSize is how much of a command's stderr a Tail keeps for error messages.
const TailSize = 64 << 10

// Tail keeps the last Max bytes written to it. It is safe for concurrent use.
type Tail struct {
	mu  sync.Mutex
	max int
	buf []byte
}

// NewTail keeps the last max bytes.
func NewTail(max int) *Tail { return &Tail{max: max} }

func (t *Tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := len(p)
	if len(p) >= t.max {
		t.buf = append(t.buf[:0], p[len(p)-t.max:]...)
		return n, nil
	}
	if over := len(t.buf) + len(p) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	t.buf = append(t.buf, p...)
	return n, nil
}

func (t *Tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}

// Head keeps the first Max bytes written to it. It is safe for concurrent use.
type Head struct {
	Max  int
	mu   sync.Mutex
	buf  []byte
	full atomic.Bool
}

func (h *Head) Write(p []byte) (int, error) {
	if h.full.Load() {
		return len(p), nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if room := h.Max - len(h.buf); room > 0 {
		h.buf = append(h.buf, p[:min(room, len(p))]...)
	}
	if len(h.buf) >= h.Max {
		h.full.Store(true)
	}
	return len(p), nil
}

func (h *Head) String() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return string(h.buf)
}
