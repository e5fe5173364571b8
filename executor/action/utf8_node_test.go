package action_test

import (
	"encoding/hex"
	"math/rand/v2"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/tapebox/tapebox/executor/action"
)

// TestLossyUTF8AgainstNode decodes random bytes as Node does (Buffer.toString("utf8")) and
// compares with LossyUTF8, when node is installed: the WHATWG decoder the JavaScript
// harnesses read files and output with.
func TestLossyUTF8AgainstNode(t *testing.T) {
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
		if got := hex.EncodeToString([]byte(action.LossyUTF8(b))); got != lines[i] {
			t.Errorf("LossyUTF8(%s) = %s, node %s", h, got, lines[i])
		}
	}
}
