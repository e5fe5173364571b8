package gemini_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/executor/harness/gemini"
	"github.com/tapebox/tapebox/internal/testutil/harnesstest"
	"github.com/tapebox/tapebox/tape"
)

// rgMatch is a line of ripgrep's --json output as the CLI keeps it.
type rgMatch struct {
	file      string
	abs       string
	n         int
	line      string
	isContext bool
}

// cliRipgrep runs ripgrep as Gemini CLI 0.61.0's RipGrepTool does (performRipgrepSearch)
// and reads its output as the CLI does (parseRipgrepJsonLine, exclude_pattern).
func cliRipgrep(t *testing.T, rg, cwd string, in map[string]any, paths []string, base string, context int) []rgMatch {
	t.Helper()
	args := []string{"--json"}
	if in["case_sensitive"] != true {
		args = append(args, "--ignore-case")
	}
	if in["fixed_strings"] == true {
		args = append(args, "--fixed-strings")
	}
	args = append(args, "--regexp", in["pattern"].(string))
	for _, o := range []struct{ key, flag string }{{"context", "--context"}, {"after", "--after-context"}, {"before", "--before-context"}} {
		v, _ := in[o.key].(int)
		if o.key == "context" && context > 0 {
			v = context
		}
		if v > 0 {
			args = append(args, o.flag, fmt.Sprint(v))
		}
	}
	if in["no_ignore"] == true {
		args = append(args, "--no-ignore")
	}
	if v, ok := in["max_matches_per_file"].(int); ok {
		args = append(args, "--max-count", fmt.Sprint(v))
	}
	if v, ok := in["include_pattern"].(string); ok {
		args = append(args, "--glob", v)
	}
	if in["no_ignore"] != true {
		for _, g := range []string{"**/node_modules/**", "**/.git/**", "**/bower_components/**", "**/.svn/**", "**/.hg/**",
			"**/.vscode/**", "**/.idea/**", "**/dist/**", "**/build/**", "**/coverage/**", "**/__pycache__/**", "*.log", "*.tmp"} {
			args = append(args, "--glob", "!"+g)
		}
	}
	args = append(append(args, "--threads", "4"), paths...)
	cmd := exec.Command(rg, args...)
	cmd.Dir = cwd
	out, err := cmd.Output()
	if ee, ok := err.(*exec.ExitError); err != nil && (!ok || ee.ExitCode() > 1) {
		t.Fatalf("rg %q: %v", args, err)
	}
	var exclude *regexp.Regexp
	if v, ok := in["exclude_pattern"].(string); ok {
		flags := "(?i)"
		if in["case_sensitive"] == true {
			flags = ""
		}
		exclude = regexp.MustCompile(flags + v)
	}
	var ms []rgMatch
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		var ev struct {
			Type string
			Data struct {
				Path       struct{ Text *string }
				Lines      struct{ Text *string }
				LineNumber int `json:"line_number"`
			}
		}
		require.NoError(t, json.Unmarshal(sc.Bytes(), &ev))
		if (ev.Type != "match" && ev.Type != "context") || ev.Data.Path.Text == nil || ev.Data.Lines.Text == nil {
			continue
		}
		abs := *ev.Data.Path.Text
		if !filepath.IsAbs(abs) {
			abs = filepath.Join(base, abs)
		}
		rel, _ := filepath.Rel(base, abs)
		if rel == "." {
			rel = filepath.Base(abs)
		}
		line := strings.TrimRightFunc(*ev.Data.Lines.Text, func(r rune) bool { return strings.ContainsRune(" \t\r\n\v\f\u00a0\ufeff", r) })
		if exclude != nil && exclude.MatchString(line) {
			continue
		}
		ms = append(ms, rgMatch{file: rel, abs: abs, n: ev.Data.LineNumber, line: line, isContext: ev.Type == "context"})
	}
	return ms
}

// cliFormat is formatGrepResults for the results of one ripgrep run (the files in the
// order given, which the module takes from the recording).
func cliFormat(in map[string]any, ms []rgMatch) string {
	pattern, dirParam := in["pattern"].(string), "."
	if d, ok := in["dir_path"].(string); ok && d != "" {
		dirParam = d
	}
	filter := ""
	if v, ok := in["include_pattern"].(string); ok {
		filter = ` (filter: "` + v + `")`
	}
	if len(ms) == 0 {
		return `No matches found for pattern "` + pattern + `" in path "` + dirParam + `"` + filter + "."
	}
	var files []string
	by := map[string][]rgMatch{}
	n := 0
	for _, m := range ms {
		if by[m.file] == nil {
			files = append(files, m.file)
		}
		by[m.file] = append(by[m.file], m)
		if !m.isContext {
			n++
		}
	}
	// A JavaScript object lists the keys that are array indices ("7", "10") first, by value.
	index := regexp.MustCompile(`^(0|[1-9][0-9]{0,8})$`)
	sort.SliceStable(files, func(i, j int) bool {
		a, b := index.MatchString(files[i]), index.MatchString(files[j])
		if a && b {
			return len(files[i]) < len(files[j]) || (len(files[i]) == len(files[j]) && files[i] < files[j])
		}
		return a && !b
	})
	if in["names_only"] == true {
		sort.Strings(files)
		return fmt.Sprintf("Found %d files with matches for pattern \"%s\" in path \"%s\"%s:\n%s", len(files), pattern, dirParam, filter, strings.Join(files, "\n"))
	}
	term := "matches"
	if n == 1 {
		term = "match"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Found %d %s for pattern \"%s\" in path \"%s\"%s:\n---\n", n, term, pattern, dirParam, filter)
	for _, f := range files {
		fm := by[f]
		sort.SliceStable(fm, func(i, j int) bool { return fm[i].n < fm[j].n })
		b.WriteString("File: " + f + "\n")
		for _, m := range fm {
			sep := ":"
			if m.isContext {
				sep = "-"
			}
			l := m.line
			if r := []rune(l); len(r) > 2000 {
				l = string(r[:2000]) + "... [truncated]"
			}
			fmt.Fprintf(&b, "L%d%s %s\n", m.n, sep, l)
		}
		b.WriteString("---\n")
	}
	return strings.TrimSpace(b.String())
}

// TestGrepAgainstRipgrep is the differential test of grep_search's file and line rules:
// workspaces and calls drawn at random (hidden files, excluded directories and
// extensions, CRLF, Latin-1 and NUL bytes, Unicode, trailing spaces, the tool's options),
// each searched by the module and by ripgrep run with the CLI's arguments, its output read
// as the CLI reads it. ripgrep's order of files (four threads) is handed to the module as
// the recording's, as a tape would.
func TestGrepAgainstRipgrep(t *testing.T) {
	rg, err := exec.LookPath("rg")
	if err != nil {
		if os.Getenv("TAPEBOX_REQUIRE_HARNESSES") != "" {
			t.Fatal("ripgrep (rg) is not installed")
		}
		t.Skip("ripgrep (rg) is not installed")
	}
	r := rand.New(rand.NewPCG(33, 61))
	pick := func(xs ...string) string { return xs[r.IntN(len(xs))] }
	words := []string{"alpha", "beta", "gamma", "x", "end", "line 1", "héllo", "🙂", "ß", "Ω", "e\u0301", "日本語", "a.c", "abc", "ALPHA", "  ",
		"éx", "xé", "endé", "(end)", "x_", "_x", "a\u00a0end", "c-ab"}
	names := []string{"a.txt", "b.md", ".hidden.txt", "sub/c.go", "sub/deep/d.txt", "dist/e.txt", "node_modules/f.txt", "x.log", "y.tmp",
		"build/g.txt", "my dir/h.txt", "é-notes.txt", ".cfg/i.txt", "7", "10.txt", "sub/.j.md"}
	performed, calls := 0, 400
	for i := range calls {
		s := harnesstest.New(t, gemini.New(), "call_1", nil)
		for range 3 + r.IntN(8) {
			var b strings.Builder
			for range r.IntN(12) {
				for k := range 1 + r.IntN(4) {
					if k > 0 {
						b.WriteString(" ")
					}
					b.WriteString(pick(words...))
				}
				switch r.IntN(12) {
				case 0:
					b.WriteString("\r\n")
				case 1:
					b.WriteString(" \n")
				case 2:
					b.WriteString("caf\xe9\n")
				case 3:
					b.WriteString("\n\n")
				default:
					b.WriteString("\n")
				}
			}
			if r.IntN(15) == 0 {
				b.WriteString("alpha\x00")
			}
			p := filepath.Join(s.Dir, pick(names...))
			require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
			require.NoError(t, os.WriteFile(p, []byte(b.String()), 0o644))
		}
		in := map[string]any{"pattern": pick("alpha", "alpha|beta", `\bx\b`, "héllo", "^$", "ALPHA", "é", "e", "ß", "Ω", "[0-9]",
			"^[a-z ]+$", "a.c", "🙂", "end$", " $", "日本", "gamma x", "total_max_matches_never", `\bend\b`, `\b(alpha|beta)\b`, `x\b`,
			`\bab`, `\bllo\b`, `\bc\b`, `\w+ end`)}
		opt := func(p float64, key string, v any) {
			if r.Float64() < p {
				in[key] = v
			}
		}
		opt(0.25, "names_only", true)
		opt(0.2, "include_pattern", pick("*.txt", "*.{md,go}", "sub/**", "*.log", "**/*.txt", ".*"))
		opt(0.1, "exclude_pattern", pick("beta", "^alpha"))
		opt(0.2, "case_sensitive", true)
		opt(0.1, "fixed_strings", true)
		opt(0.1, "context", r.IntN(3))
		opt(0.1, "after", r.IntN(3))
		opt(0.1, "before", r.IntN(3))
		opt(0.15, "no_ignore", true)
		opt(0.1, "max_matches_per_file", 1+r.IntN(2))
		opt(0.15, "dir_path", pick("sub", "a.txt", "my dir"))
		in["total_max_matches"] = 100000 // which files come before the limit is ripgrep's threads' choice
		dir := s.Dir
		if d, ok := in["dir_path"].(string); ok {
			dir = filepath.Join(s.Dir, d)
			if _, err := os.Stat(dir); err != nil {
				continue
			}
		}
		ms := cliRipgrep(t, rg, s.Dir, in, []string{dir}, dir, 0)
		n := 0
		for _, m := range ms {
			if !m.isContext {
				n++
			}
		}
		_, c := in["context"]
		_, a := in["after"]
		_, b := in["before"]
		if n >= 1 && n <= 3 && in["names_only"] != true && !c && !a && !b {
			ctx := 15
			if n == 1 {
				ctx = 50
			}
			var files []string
			for _, m := range ms {
				if len(files) == 0 || files[len(files)-1] != m.abs {
					files = append(files, m.abs)
				}
			}
			ms = cliRipgrep(t, rg, s.Dir, in, files, dir, ctx)
		}
		want := cliFormat(in, ms)
		res := s.Run("grep_search", in, &tape.ToolResult{Content: []tape.Block{{Type: tape.BlockText, Text: want}}})
		if res.CopiedFromTape {
			continue
		}
		performed++
		require.Equal(t, want, res.Text(), "call %d: %v", i, in)
	}
	t.Logf("%d of %d calls performed and identical to ripgrep's", performed, calls)
	require.Greater(t, performed, calls/2)
}
