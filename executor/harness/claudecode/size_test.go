package claudecode

import (
	"errors"
	"io/fs"
	"os"
	"testing"

	"github.com/tapebox/tapebox/tape"
)

// TestFileSize: Claude Code words 48 KiB as "48KB", not "48.0KB" (internal/fidelity found it
// in a persisted Bash output), and rounds a tie up as toFixed does.
func TestFileSize(t *testing.T) {
	for n, want := range map[int]string{
		0: "0 bytes", 1023: "1023 bytes", 1024: "1KB", 1280: "1.3KB", 1331: "1.3KB", 49152: "48KB",
		68403: "66.8KB", 1024*1024 - 1: "1024KB", 1024 * 1024: "1MB", 3 << 30: "3GB",
	} {
		if got := fileSize(n); got != want {
			t.Errorf("fileSize(%d) = %q, want %q", n, got, want)
		}
	}
	if n := utf16Len("aé✓😀"); n != 5 {
		t.Errorf("utf16Len = %d, want 5", n)
	}
}

// TestAsOwner: a change the sandbox refuses for a read-only mode (it has no
// CAP_DAC_OVERRIDE) is made when the recording shows it made, and the mode is put back; a
// recording that shows it refused keeps the refusal.
func TestAsOwner(t *testing.T) {
	p := t.TempDir() + "/ro.txt"
	if err := os.WriteFile(p, []byte("x"), 0o444); err != nil {
		t.Fatal(err)
	}
	calls := 0
	write := func() error { // as a sandbox without capabilities sees the mode
		calls++
		st, err := os.Stat(p)
		if err != nil {
			return err
		}
		if st.Mode().Perm()&0o200 == 0 {
			return &fs.PathError{Op: "open", Path: p, Err: fs.ErrPermission}
		}
		return nil
	}
	ok := &tape.ToolResult{Content: []tape.Block{{Type: tape.BlockText, Text: "updated"}}}
	if err := asOwner(p, ok, write); err != nil || calls != 2 {
		t.Fatalf("asOwner = %v after %d writes, want nil after 2", err, calls)
	}
	if st, _ := os.Stat(p); st.Mode().Perm() != 0o444 {
		t.Errorf("mode %v, want 0444 back", st.Mode().Perm())
	}
	calls = 0
	refused := &tape.ToolResult{IsError: true}
	if err := asOwner(p, refused, write); !errors.Is(err, fs.ErrPermission) || calls != 1 {
		t.Errorf("asOwner with a recorded refusal = %v after %d writes, want the refusal after 1", err, calls)
	}
}
