package claudecode

import "testing"

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
