package cli

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestReadmeCommands checks every tapebox command that README.md and the pages under docs/
// show, in their code blocks and in their verb tables: the verb exists, and every flag it
// names is one of that verb's flags (so a renamed or removed flag fails here, not for a
// reader). Each verb the docs name must also be run by some test of this package or the
// end-to-end suite (listed in covered), and every verb must be shown somewhere.
func TestReadmeCommands(t *testing.T) {
	files, err := filepath.Glob("../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	files = append([]string{"../README.md", "../SECURITY.md"}, files...)
	var cmds []string
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, docCommands(string(data))...)
	}
	if len(cmds) < 15 {
		t.Fatalf("found only %d commands in README.md and docs/", len(cmds))
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
			t.Errorf("docs: %q: no verb %q", c, verb)
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
				t.Errorf("docs: %q: tapebox %s has no flag %s", c, verb, f)
			}
		}
	}
	// Verbs some test runs: found in the tests of this package and of the end-to-end suite,
	// so that a verb the docs show whose last test goes fails here.
	covered := verbsRunByTests(t, ".", "../test/e2e")
	for v := range seen {
		if !covered[v] {
			t.Errorf("the docs show tapebox %s, which no test of cli or test/e2e runs", v)
		}
	}
	for v := range commands {
		if !seen[v] {
			t.Errorf("neither README.md nor docs/ shows tapebox %s", v)
		}
	}
	t.Logf("%d commands checked in %d files, verbs %d", len(cmds), len(files), len(seen))
}

// verbRun finds a verb run by a test: the first argument, a quoted verb, of a call of
// runVerbForTest, RunEnv or Run (this package's Run, or cli.Run from the end-to-end suite),
// its arguments given one by one or as a []string; runDatasetCLI runs dataset.
var verbRun = regexp.MustCompile(`\b(runVerbForTest|RunEnv|Run|runDatasetCLI)\((?:t|t\.Context\(\)|ctx)[^"\n]{0,40}?"(-{0,2}[a-z][a-z-]*)"`)

// verbsRunByTests returns the verbs the Go tests in dirs run (verbRun); --version counts as
// version.
func verbsRunByTests(t *testing.T, dirs ...string) map[string]bool {
	ran := map[string]bool{}
	for _, dir := range dirs {
		files, err := filepath.Glob(filepath.Join(dir, "*_test.go"))
		if err != nil || len(files) == 0 {
			t.Fatalf("tests in %s: %v (found %d files)", dir, err, len(files))
		}
		for _, f := range files {
			src, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range verbRun.FindAllStringSubmatch(string(src), -1) {
				verb := strings.TrimPrefix(m[2], "--")
				if m[1] == "runDatasetCLI" {
					verb = "dataset"
				}
				ran[verb] = true
			}
		}
	}
	return ran
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

// commandStart finds where a tapebox command starts on a shell line.
var commandStart = regexp.MustCompile(`(^\s*|&&\s*|;\s*|\|\s*|\$\()tapebox `)

// docCommands returns the tapebox command lines of a Markdown page: those in its shell code
// blocks (a line continued with a backslash is joined to the next) and those quoted in table
// rows that start with one.
func docCommands(page string) []string {
	var cmds []string
	inBlock := false
	lines := strings.Split(page, "\n")
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		if fence, ok := strings.CutPrefix(strings.TrimSpace(line), "```"); ok {
			// Only shell blocks hold commands; a diagram's "tapebox -> cli" is not one.
			inBlock = !inBlock && (fence == "sh" || fence == "bash" || fence == "shell")
			continue
		}
		if inBlock {
			for strings.HasSuffix(line, "\\") && i+1 < len(lines) {
				i++
				line = strings.TrimSuffix(line, "\\") + " " + strings.TrimSpace(lines[i])
			}
			// A command starts a line or follows &&, ;, | or $( : "tapebox" inside a quoted
			// argument of another program is not one.
			if m := commandStart.FindStringIndex(line); m != nil && !strings.Contains(line[:m[0]], "#") {
				cmds = append(cmds, strings.TrimLeft(line[m[0]:], "&;|$( \t"))
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
	return cmds
}
