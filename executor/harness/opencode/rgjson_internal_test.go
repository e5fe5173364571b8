package opencode

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// rgRecordLen against ripgrep itself, where it is installed.
func TestRecordLenAgainstRipgrep(t *testing.T) {
	rg, err := exec.LookPath("rg")
	if err != nil {
		t.Skip("no rg")
	}
	dir := t.TempDir()
	for _, tc := range []struct{ line, pattern string }{
		{"abc", "b"},
		{strings.Repeat("ab", 5000) + " x\"\t\\ é", "ab"},
		{strings.Repeat("é", 300) + "\x01", "é"},
	} {
		if err := os.WriteFile(filepath.Join(dir, "f.txt"), []byte("zz\n"+tc.line+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(rg, "--no-config", "--json", "--", tc.pattern, ".")
		cmd.Dir = dir
		out, _ := cmd.Output()
		var got int
		for _, l := range strings.Split(string(out), "\n") {
			if strings.HasPrefix(l, `{"type":"match"`) {
				got = len(l)
			}
		}
		if want := rgRecordLen("f.txt", tc.line+"\n", 2, 3, regexp.MustCompile(tc.pattern)); got != want {
			t.Errorf("%q: rg's record is %d bytes, rgRecordLen says %d", tc.pattern, got, want)
		}
	}
}
