package gemini

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tapebox/tapebox/executor/harness"
	"github.com/tapebox/tapebox/internal/jsonlex"
	"github.com/tapebox/tapebox/tape"
)

// globModule is node-glob in harnesses/ (another package's copy of the library the CLI
// bundles).
const globModule = "../../../harnesses/node_modules/glob/dist/esm/index.js"

// TestGlobAgainstNodeGlob is the differential test of glob: random workspaces (dot files,
// nested and excluded directories, Unicode and spaced names, links, distinct modification
// times) and patterns, listed by the module and by node-glob with the CLI's options, its
// links dropped and its files ordered by the CLI's own sortFileEntries (cut out of the
// bundle).
func TestGlobAgainstNodeGlob(t *testing.T) {
	node, err := exec.LookPath("node")
	_, err2 := os.Stat(globModule)
	if err != nil || err2 != nil {
		if os.Getenv("TAPEBOX_REQUIRE_HARNESSES") != "" {
			t.Fatalf("node or %s missing: %v %v", globModule, err, err2)
		}
		t.Skip("node or harnesses/node_modules/glob missing")
	}
	src, err := os.ReadFile(filepath.Join(bundleDir, "chunk-JDPZ4CE3.js"))
	if err != nil {
		t.Fatal(err)
	}
	abs, _ := filepath.Abs(globModule)
	script := `import { glob, escape } from "` + abs + `";
import fs from "node:fs"; import path from "node:path";
` + jsFunction(t, string(src), "sortFileEntries") + `
const cases = JSON.parse(fs.readFileSync(0, "utf8"));
const out = [];
for (const c of cases) {
  let pattern = c.pattern;
  if (fs.existsSync(path.join(c.dir, pattern))) pattern = escape(pattern);
  const entries = await glob(pattern, { cwd: c.dir, withFileTypes: true, nodir: true, stat: true, nocase: !c.caseSensitive, dot: true,
    ignore: ["**/node_modules/**", "**/.git/**", "**/bower_components/**", "**/.svn/**", "**/.hg/**"], follow: false });
  const kept = entries.filter((e) => { try { return fs.realpathSync(e.fullpath()) === e.fullpath(); } catch { return false; } });
  out.push(sortFileEntries(kept, Date.now(), 86400000).map((e) => e.fullpath()));
}
console.log(JSON.stringify(out));
`
	r := rand.New(rand.NewPCG(33, 62))
	pick := func(xs ...string) string { return xs[r.IntN(len(xs))] }
	names := []string{"a.txt", "B.TXT", "b.md", ".hidden.txt", "sub/c.go", "sub/deep/d.txt", "dist/e.txt", "node_modules/f.txt", "x.log",
		"my dir/h.txt", "é-notes.txt", ".cfg/i.txt", "7", "sub/.j.md", "src/k.go", "src/a/b/l.txt", "docs/m.md", "data.json", "[x].txt", "a,b.txt"}
	patterns := []string{"*.txt", "**/*", "**/*.go", "*", "src/**", "no-match-*.zzz", "*.TXT", "**/*.{txt,md}", "*/*", "**/.*", "sub/*",
		"my dir/*", "**/*é*", "[a-m]*", "**/*.log", "dist/**", "**/*.md", "docs/*", "**/my*", "*.json", "**/*.MD", "[x].txt", "?.txt",
		"**/deep/*", "sub/**/*.txt", "*.{go,json}", "./*.md", "**", "src", "a,b.txt"}
	type glCase struct {
		Dir           string `json:"dir"`
		Pattern       string `json:"pattern"`
		CaseSensitive bool   `json:"caseSensitive"`
	}
	var cases []glCase
	var sessions []*session
	var inputs []map[string]any
	for range 200 {
		dir := t.TempDir()
		at := time.Now()
		for range 3 + r.IntN(9) {
			p := filepath.Join(dir, pick(names...))
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte("x\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			at = at.Add(-time.Duration(1+r.IntN(5000)) * time.Millisecond)
			if r.IntN(8) == 0 {
				at = at.Add(-48 * time.Hour) // older than a day: ordered by path
			}
			os.Chtimes(p, at, at)
		}
		if r.IntN(3) == 0 {
			os.Symlink("a.txt", filepath.Join(dir, "link.txt"))
		}
		if r.IntN(4) == 0 {
			os.Symlink("no/such", filepath.Join(dir, "dangling.txt"))
		}
		if r.IntN(5) == 0 {
			os.Symlink("sub", filepath.Join(dir, "linkdir"))
		}
		env, err := harness.NewEnv(dir, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		c := glCase{Dir: dir, Pattern: pick(patterns...), CaseSensitive: r.IntN(4) == 0}
		in := map[string]any{"pattern": c.Pattern}
		if c.CaseSensitive {
			in["case_sensitive"] = true
		}
		cases, sessions, inputs = append(cases, c), append(sessions, &session{env}), append(inputs, in)
	}
	stdin, _ := json.Marshal(cases)
	cmd := exec.Command(node, "--input-type=module", "-e", script)
	cmd.Stdin = strings.NewReader(string(stdin))
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node: %v", err)
	}
	var want [][]string
	if err := json.Unmarshal(out, &want); err != nil {
		t.Fatal(err)
	}
	performed := 0
	for i, c := range cases {
		input, _ := jsonlex.Marshal(inputs[i])
		res := sessions[i].glob(context.Background(), tape.ToolCall{ID: "1", Name: "glob", Input: input}, nil)
		text := res.Text()
		if res.CopiedFromTape {
			continue
		}
		performed++
		w := "No files found matching pattern \"" + c.Pattern + "\" within " + c.Dir
		if len(want[i]) > 0 {
			w = "Found " + itoa(len(want[i])) + " file(s) matching \"" + c.Pattern + "\" within " + c.Dir + ", sorted by modification time (newest first):\n" + strings.Join(want[i], "\n")
		}
		if text != w {
			t.Errorf("case %d %+v:\nnode-glob: %q\nmodule:    %q", i, c, w, text)
		}
	}
	t.Logf("%d of %d calls performed", performed, len(cases))
}

func itoa(n int) string {
	b, _ := jsonlex.Marshal(n)
	return string(b)
}
