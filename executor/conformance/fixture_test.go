package conformance

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/tapebox/tapebox/executor/harness"
	"github.com/tapebox/tapebox/tape"
)

var update = flag.Bool("update", false, "run the real harnesses and rewrite testdata/<harness>.json")

// Fixture is testdata/<harness>.json: what one harness version did with every case.
type Fixture struct {
	Harness string `json:"harness"`
	Version string `json:"version"`
	// Root is the directory under which each case ran in <Root>/<case name>; results hold
	// these absolute paths, so the executor runs at the same paths.
	Root  string        `json:"root"`
	Cases []FixtureCase `json:"cases"`
}

// FixtureCase is one case as the harness ran it.
type FixtureCase struct {
	Name string `json:"name"`
	// Cwd is the absolute working directory the harness ran in.
	Cwd string `json:"cwd"`
	// Home is the harness's home directory (HOME), also at a fixed path; the executor gets
	// the same HOME. Empty in a fixture captured before it was kept.
	Home string `json:"home,omitempty"`
	// Before and After are the directory's files before the first call and after the run.
	Before []File `json:"before"`
	After  []File `json:"after"`
	Steps  []Step `json:"steps"`
	// Tools are the names of the tools the harness offered in its first request (the
	// executor's hello "tools"); nil in a fixture captured before they were kept.
	Tools []string `json:"tools,omitempty"`
}

// Step is one tool call and the harness's result for it.
type Step struct {
	Call tape.ToolCall `json:"call"`
	// Result is the harness's result in the tape's form.
	Result tape.ToolResult `json:"result"`
	// Raw is the result as it appeared in the harness's next request (an Anthropic
	// tool_result block, a Responses function_call_output or custom_tool_call_output item).
	Raw json.RawMessage `json:"raw"`
	// Template is the call's input with "<<name:step>>" placeholders for ids the harness
	// made up in earlier results (see identifiers); Call holds it filled in with the
	// harness's ids. Empty when the call refers to none.
	Template json.RawMessage `json:"template,omitempty"`
	// Spawn marks a call whose tool starts a subagent: the controller plays those, they
	// never reach the executor.
	Spawn bool `json:"spawn,omitempty"`
}

// File is one regular file (or directory, with Dir set) of a case's directory.
type File struct {
	Path string `json:"path"`
	Mode string `json:"mode"`
	Dir  bool   `json:"dir,omitempty"`
	// Link is a symbolic link's target; the link's Mode is not compared.
	Link    string `json:"link,omitempty"`
	Content string `json:"content,omitempty"`
}

// fileJSON is File as the fixture stores it: content that is not UTF-8 (which JSON would
// turn into U+FFFD) goes in content_base64.
type fileJSON struct {
	Path          string `json:"path"`
	Mode          string `json:"mode"`
	Dir           bool   `json:"dir,omitempty"`
	Link          string `json:"link,omitempty"`
	Content       string `json:"content,omitempty"`
	ContentBase64 string `json:"content_base64,omitempty"`
}

// MarshalJSON writes content that is not UTF-8 as content_base64.
func (f File) MarshalJSON() ([]byte, error) {
	j := fileJSON{Path: f.Path, Mode: f.Mode, Dir: f.Dir, Link: f.Link, Content: f.Content}
	if !utf8.ValidString(f.Content) {
		j.Content, j.ContentBase64 = "", base64.StdEncoding.EncodeToString([]byte(f.Content))
	}
	return json.Marshal(j)
}

// UnmarshalJSON reads what MarshalJSON writes.
func (f *File) UnmarshalJSON(b []byte) error {
	var j fileJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*f = File{Path: j.Path, Mode: j.Mode, Dir: j.Dir, Link: j.Link, Content: j.Content}
	if j.ContentBase64 != "" {
		raw, err := base64.StdEncoding.DecodeString(j.ContentBase64)
		if err != nil {
			return fmt.Errorf("file %s: content_base64: %w", j.Path, err)
		}
		f.Content = string(raw)
	}
	return nil
}

func fixturePath(harness string) string { return filepath.Join("testdata", harness+".json") }

func loadFixture(t *testing.T, harness string) *Fixture {
	t.Helper()
	b, err := os.ReadFile(fixturePath(harness))
	if err != nil {
		t.Fatalf("load fixture: %v (run go test ./executor/conformance -run TestCapture -update with the harnesses installed)", err)
	}
	var f Fixture
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatalf("decode %s: %v", fixturePath(harness), err)
	}
	return &f
}

func saveFixture(t *testing.T, f *Fixture) {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(f); err != nil {
		t.Fatalf("encode fixture: %v", err)
	}
	if err := tape.WriteFileAtomic(fixturePath(f.Harness), buf.Bytes()); err != nil {
		t.Fatalf("write fixture: %v", err)
	}
}

// caseRoot is where cases run: a fixed absolute path, since harness results hold absolute
// paths and the executor must see the same ones.
func caseRoot(harness string) string {
	return filepath.Join(conformanceRoot(), harness)
}

// EnvRoot names another directory for the cases than /tmp/tapebox-conformance, for a run
// that should not wait for another checkout's tests; the
// fixtures' cases keep the paths they were captured at.
const EnvRoot = "TAPEBOX_CONFORMANCE_ROOT"

func conformanceRoot() string {
	if r := os.Getenv(EnvRoot); r != "" {
		return r
	}
	return filepath.Join("/tmp", "tapebox-conformance")
}

// caseHome is the home directory of a case's harness run.
func caseHome(harness, name string) string {
	return filepath.Join(conformanceRoot(), "home", harness, name)
}

// layout makes dir fresh and holds exactly files; it is removed after the test unless it
// failed. The executor's default state directory for dir (outside it) starts empty too:
// the path is the same in every run.
func layout(t *testing.T, dir string, files []File) {
	t.Helper()
	state := harness.DefaultStateDir(dir)
	for _, d := range []string{dir, state} {
		if err := os.RemoveAll(d); err != nil {
			t.Fatalf("clear %s: %v", d, err)
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatalf("make %s: %v", dir, err)
	}
	// A failed case leaves its directories for a look.
	t.Cleanup(func() {
		if !t.Failed() {
			_ = os.RemoveAll(dir)
			_ = os.RemoveAll(state)
		}
	})
	for _, f := range files {
		p := filepath.Join(dir, filepath.FromSlash(f.Path))
		var mode uint32
		if _, err := fmt.Sscanf(f.Mode, "%o", &mode); err != nil {
			t.Fatalf("file %s: mode %q: %v", f.Path, f.Mode, err)
		}
		if f.Link != "" {
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatalf("make %s: %v", filepath.Dir(p), err)
			}
			if err := os.Symlink(f.Link, p); err != nil {
				t.Fatalf("link %s: %v", p, err)
			}
			continue
		}
		if f.Dir {
			if err := os.MkdirAll(p, fs.FileMode(mode)); err != nil {
				t.Fatalf("make %s: %v", p, err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatalf("make %s: %v", filepath.Dir(p), err)
		}
		if err := os.WriteFile(p, []byte(f.Content), fs.FileMode(mode)); err != nil {
			t.Fatalf("write %s: %v", p, err)
		}
		if err := os.Chmod(p, fs.FileMode(mode)); err != nil {
			t.Fatalf("chmod %s: %v", p, err)
		}
	}
}

// snapshot lists dir's files and directories, sorted: all of them, as the executor keeps
// its own state elsewhere.
func snapshot(t *testing.T, dir string) []File {
	t.Helper()
	var files []File
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if rel == "." {
			return nil
		}
		rel = filepath.ToSlash(rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		f := File{Path: rel, Mode: fmt.Sprintf("%04o", info.Mode().Perm())}
		switch {
		case d.IsDir():
			f.Dir = true
		case info.Mode().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			f.Content = string(b)
		case info.Mode()&fs.ModeSymlink != 0:
			if f.Link, err = os.Readlink(p); err != nil {
				return err
			}
			f.Mode = ""
		default:
			f.Content = "<" + info.Mode().Type().String() + ">"
		}
		files = append(files, f)
		return nil
	})
	if err != nil {
		t.Fatalf("snapshot %s: %v", dir, err)
	}
	sort.Slice(files, func(i, j int) bool { return files[i].Path < files[j].Path })
	return files
}

// text returns a result's text blocks joined, for messages.
func text(r tape.ToolResult) string {
	var b strings.Builder
	for _, c := range r.Content {
		b.WriteString(c.Text)
	}
	return b.String()
}
