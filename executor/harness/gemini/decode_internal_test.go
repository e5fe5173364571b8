package gemini

import (
	"encoding/hex"
	"math/rand/v2"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestDecodeAgainstNode decodes random bytes as Node does (Buffer.toString("utf8")) and
// compares with decode, when node is installed.
func TestDecodeAgainstNode(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		if os.Getenv("TAPEBOX_REQUIRE_HARNESSES") == "1" {
			t.Fatal("node is required")
		}
		t.Skip("node not installed")
	}
	r := rand.New(rand.NewPCG(3, 4))
	var inputs []string
	for range 300 {
		b := make([]byte, r.IntN(40))
		for i := range b {
			switch r.IntN(4) {
			case 0:
				b[i] = byte('a' + r.IntN(26))
			default:
				b[i] = byte(0x80 + r.IntN(0x80))
			}
		}
		inputs = append(inputs, hex.EncodeToString(b))
	}
	script := `const ins = process.argv.slice(1); for (const h of ins) { process.stdout.write(Buffer.from(Buffer.from(h, "hex").toString("utf8"), "utf8").toString("hex") + "\n"); }`
	out, err := exec.Command(node, append([]string{"-e", script}, inputs...)...).Output()
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	if len(lines) != len(inputs) {
		t.Fatalf("node gave %d lines for %d inputs", len(lines), len(inputs))
	}
	for i, h := range inputs {
		b, _ := hex.DecodeString(h)
		if got := hex.EncodeToString([]byte(decode(b))); got != lines[i] {
			t.Errorf("decode(%s) = %s, node %s", h, got, lines[i])
		}
	}
}

// TestLocaleLess pins the order of list_directory's names: punctuation, digits, Latin
// letters case-insensitively with accented letters beside their base letter, other
// scripts last; lower case before upper case when otherwise equal.
func TestLocaleLess(t *testing.T) {
	want := []string{"_x", "1.txt", "a.txt", "B.txt", "delta.go", "é-notes.go", "end.txt", "Zed", "Ω-data.go", "שלום"}
	for i := range want {
		for j := range want {
			if got := localeLess(want[i], want[j]); got != (i < j) {
				t.Errorf("localeLess(%q, %q) = %v", want[i], want[j], got)
			}
		}
	}
	if !localeLess("readme", "README") {
		t.Error("lower case first")
	}
}
