package cli

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestReadmeCommands checks every tapebox command the README shows, in its code blocks and in
// its verb table: the verb exists, and every flag it names is one of that verb's flags (so a
// renamed or removed flag fails here, not for a reader). Each verb the README names must also
// be run by some test of this package or the end-to-end suite (listed in covered).
func TestReadmeCommands(t *testing.T) {
	data, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	var cmds []string
	inBlock := false
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(line, "```") {
			inBlock = !inBlock
			continue
		}
		if inBlock {
			if i := strings.Index(line, "tapebox "); i >= 0 && !strings.Contains(line[:i], "#") {
				cmds = append(cmds, line[i:])
			}
			continue
		}
		if strings.HasPrefix(line, "| `tapebox ") {
			cell := strings.SplitN(strings.ReplaceAll(line, `\|`, "\x00"), "|", 3)[1]
			cell = strings.ReplaceAll(cell, "\x00", "|")
			for _, m := range regexp.MustCompile("`(tapebox [^`]+)`").FindAllStringSubmatch(cell, -1) {
				cmds = append(cmds, m[1])
			}
		}
	}
	if len(cmds) < 15 {
		t.Fatalf("found only %d commands in README.md", len(cmds))
	}
	flags := verbFlags(t.Context())
	flagRE := regexp.MustCompile(`(^|[\s\[(])(--?[a-z][a-z0-9-]*)`)
	seen := map[string]bool{}
	for _, c := range cmds {
		c, _, _ = strings.Cut(c, " #")
		c, _, _ = strings.Cut(c, " -- ") // what follows -- is the agent's command line
		c = strings.TrimSuffix(strings.TrimSpace(c), " &")
		fields := strings.Fields(c)
		if len(fields) < 2 {
			continue
		}
		verb := fields[1]
		if verb == "--version" {
			continue
		}
		if _, ok := commands[verb]; !ok {
			t.Errorf("README: %q: no verb %q", c, verb)
			continue
		}
		seen[verb] = true
		known := flags[verb]
		if verb == "dataset" && len(fields) > 2 {
			known = subverbFlags(t, "dataset", strings.Split(fields[2], "/")...)
		}
		for _, m := range flagRE.FindAllStringSubmatch(c, -1) {
			f := "--" + strings.TrimLeft(m[2], "-")
			if f == "--help" {
				continue
			}
			if !slices.Contains(known, f) {
				t.Errorf("README: %q: tapebox %s has no flag %s", c, verb, f)
			}
		}
	}
	// Verbs whose README commands some test runs (cli, internal/e2e).
	covered := []string{"bench", "compare", "completion", "dataset", "demo", "exec-binary", "export", "fork", "gateway",
		"import", "inspect", "record", "redact", "replay", "scan", "validate", "verify", "version", "view"}
	for v := range seen {
		if !slices.Contains(covered, v) {
			t.Errorf("README shows tapebox %s, which no test is listed as running", v)
		}
	}
	for v := range commands {
		if !seen[v] {
			t.Errorf("README never shows tapebox %s", v)
		}
	}
	t.Logf("%d README commands checked, verbs %d", len(cmds), len(seen))
}

// subverbFlags lists the flags of "tapebox VERB SUB --help" for each SUB.
func subverbFlags(t *testing.T, verb string, subs ...string) []string {
	var out []string
	for _, sub := range subs {
		var b strings.Builder
		commands[verb].run(t.Context(), &Env{Stdout: &b, Stderr: &b, Getenv: func(string) string { return "" }}, []string{sub, "--help"})
		out = append(out, flagsInHelp(b.String())...)
	}
	return out
}
