package testkit

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/tapebox/tapebox/compare"
	"github.com/tapebox/tapebox/sandbox"
)

// Updating reports whether golden files are to be rewritten (CheckSnapshot) instead of
// compared with: when the test package defines the usual -update flag and it is set, or when
// the environment has TAPEBOX_UPDATE=1. testkit defines no flag of its own, so that it never
// collides with a test package's flag.Bool("update", ...); it looks the flag up when asked.
func Updating() bool {
	if f := flag.Lookup("update"); f != nil {
		if v, err := strconv.ParseBool(f.Value.String()); err == nil && v {
			return true
		}
	}
	v, _ := strconv.ParseBool(os.Getenv("TAPEBOX_UPDATE"))
	return v
}

// CheckError lists every problem one check found.
type CheckError struct {
	// Check is the checker's name, such as "CheckFiles".
	Check    string
	Problems []string
}

func (e *CheckError) Error() string {
	s := "s"
	if len(e.Problems) == 1 {
		s = ""
	}
	return fmt.Sprintf("testkit.%s: %d problem%s:\n\t%s", e.Check, len(e.Problems), s, strings.Join(e.Problems, "\n\t"))
}

// problems collects a check's findings; err is nil when there are none.
type problems struct {
	check string
	list  []string
}

func (p *problems) addf(format string, args ...any) {
	p.list = append(p.list, fmt.Sprintf(format, args...))
}

func (p *problems) err() error {
	if len(p.list) == 0 {
		return nil
	}
	return &CheckError{Check: p.check, Problems: p.list}
}

// usable reports a result that cannot be checked.
func (p *problems) usable(r *Result) bool {
	if r == nil || r.Recording == nil || r.Tape == nil {
		p.addf("no replay to check (a nil or empty Result)")
		return false
	}
	return true
}

// CheckReachedEnd checks that the replay played every step of every thread of the recording
// to its end.
func CheckReachedEnd(r *Result) error {
	p := &problems{check: "CheckReachedEnd"}
	if !p.usable(r) {
		return p.err()
	}
	if r.Err != nil {
		p.addf("the replay stopped: %v", r.Err)
	}
	rep := compare.Compare(r.Recording, r.Tape)
	if !rep.ReachedEnd {
		p.addf("the replay did not reach the end: %d of %d steps played, ended %s", rep.StepsReplayed, rep.StepsRecorded, rep.Ended)
	}
	return p.err()
}

// CheckIdentical checks that the replay reached the end and that compare finds nothing
// different from the recording: the same tool calls, tool results (volatile fields and
// learned identifiers aside) and stop reasons, step by step, and the same end state when the
// recording carries one (see CheckEndState).
func CheckIdentical(r *Result) error {
	p := &problems{check: "CheckIdentical"}
	if !p.usable(r) {
		return p.err()
	}
	rep := compare.Compare(r.Recording, r.Tape)
	if !rep.ReachedEnd {
		p.addf("the replay did not reach the end: %d of %d steps played, ended %s", rep.StepsReplayed, rep.StepsRecorded, rep.Ended)
	}
	for _, d := range rep.Differences {
		where := fmt.Sprintf("thread %s step %d", d.Thread, d.Step)
		if d.CallID != "" {
			where += " call " + d.CallID
			if d.Tool != "" {
				where += " (" + d.Tool + ")"
			}
		}
		p.addf("%s: %s differs: recorded %q, replayed %q", where, d.Field, clip(d.Recorded, 200), clip(d.Replayed, 200))
	}
	addEndState(p, rep.EndState)
	return p.err()
}

// CheckEndState checks the workspace the replay left against the one the recording left
// (meta.workspace.end of both tapes): every file, directory and symlink with its type, mode,
// size, content digest and link target; nothing missing, nothing extra. A recording without
// an end manifest is a problem here (record it with tapebox record, or gateway --workspace).
func CheckEndState(r *Result) error {
	p := &problems{check: "CheckEndState"}
	if !p.usable(r) {
		return p.err()
	}
	es := compare.Compare(r.Recording, r.Tape).EndState
	if !es.Compared && es.Identical {
		p.addf("%s", es.Note)
	}
	addEndState(p, es)
	return p.err()
}

func addEndState(p *problems, es compare.EndState) {
	if !es.Compared && !es.Identical {
		p.addf("end state: %s", es.Note)
	}
	for _, c := range es.Changes {
		p.addf("end state: %s", c)
	}
}

// Files returns the sandbox's file tree under its working directory, keyed by
// slash-separated relative paths. It is all the replay's doing: the executor keeps its own
// state outside the working directory.
func (r *Result) Files(ctx context.Context) (map[string]sandbox.File, error) {
	if r == nil || r.Sandbox == nil {
		return nil, errors.New("testkit: no sandbox to read")
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	files, err := r.Sandbox.Snapshot(ctx, r.Sandbox.Cwd())
	if err != nil {
		return nil, fmt.Errorf("testkit: %w", err)
	}
	return files, nil
}

// sandboxFiles starts check's problems and reads the files of r's sandbox; when it cannot,
// ok is false and the problems say why.
func sandboxFiles(r *Result, check string) (p *problems, files map[string]sandbox.File, ok bool) {
	p = &problems{check: check}
	if r == nil || r.Sandbox == nil {
		p.addf("no sandbox to check (a nil Result)")
		return p, nil, false
	}
	files, err := r.Files(context.Background())
	if err != nil {
		p.addf("%v", err)
		return p, nil, false
	}
	return p, files, true
}

// CheckFiles checks that each file of want exists in the sandbox's working directory as a
// regular file with exactly the given contents. Paths are slash-separated and relative to the
// working directory; other files may exist.
func CheckFiles(r *Result, want map[string]string) error {
	p, got, ok := sandboxFiles(r, "CheckFiles")
	if !ok {
		return p.err()
	}
	for _, name := range slices.Sorted(maps.Keys(want)) {
		if !fs.ValidPath(name) || name == "." {
			p.addf("%s: not a slash-separated path relative to the working directory", name)
			continue
		}
		f, ok := got[name]
		switch {
		case !ok:
			p.addf("%s: missing", name)
		case !f.Mode.IsRegular():
			p.addf("%s: a %s, want a regular file", name, kind(f.Mode))
		case string(f.Data) != want[name]:
			p.addf("%s: %s", name, contentDiff(string(f.Data), want[name]))
		}
	}
	return p.err()
}

// snapshotVersion is the golden file format's version.
const snapshotVersion = 1

// golden is a golden snapshot file: JSON with sorted keys, readable in a diff.
type golden struct {
	Version int                    `json:"tapebox_snapshot"`
	Files   map[string]goldenEntry `json:"files"`
}

// goldenEntry is one file, directory or symbolic link. Text files keep their contents as a
// string, other files in base64.
type goldenEntry struct {
	Mode    string  `json:"mode"`
	Content *string `json:"content,omitempty"`
	Base64  string  `json:"base64,omitempty"`
	Target  string  `json:"target,omitempty"`
}

func entryOf(f sandbox.File) goldenEntry {
	e := goldenEntry{Mode: f.Mode.String()}
	switch {
	case f.Mode.Type() == fs.ModeSymlink:
		e.Target = f.Link
	case f.Mode.IsRegular():
		if utf8.Valid(f.Data) && !bytes.ContainsRune(f.Data, 0) {
			s := string(f.Data)
			e.Content = &s
		} else {
			e.Base64 = base64.StdEncoding.EncodeToString(f.Data)
		}
	}
	return e
}

func (e goldenEntry) data() string {
	if e.Content != nil {
		return *e.Content
	}
	b, err := base64.StdEncoding.DecodeString(e.Base64)
	if err != nil {
		return "(bad base64: " + err.Error() + ")"
	}
	return string(b)
}

// DefaultSnapshotExclude are the paths CheckSnapshot leaves out unless NoDefaultExclude is
// given: a repository's .git changes on every commit the agent makes (object names, index
// timestamps), which is not the end state a test means.
var DefaultSnapshotExclude = []string{".git"}

// SnapshotOption changes what CheckSnapshot compares.
type SnapshotOption func(*snapshotOptions)

type snapshotOptions struct {
	exclude   []string
	noDefault bool
}

// Exclude leaves out of the snapshot every path that matches one of patterns, or lies under
// a directory that does (path.Match on the slash-separated path relative to the working
// directory: "build", "*.log", "app/cache"), besides DefaultSnapshotExclude.
func Exclude(patterns ...string) SnapshotOption {
	return func(o *snapshotOptions) { o.exclude = append(o.exclude, patterns...) }
}

// NoDefaultExclude keeps DefaultSnapshotExclude (.git) in the snapshot.
func NoDefaultExclude() SnapshotOption {
	return func(o *snapshotOptions) { o.noDefault = true }
}

// excluded says whether name, or a directory above it, matches a pattern.
func excluded(patterns []string, name string) bool {
	for _, pat := range patterns {
		for p := name; p != "." && p != ""; p = path.Dir(p) {
			if ok, _ := path.Match(pat, p); ok {
				return true
			}
		}
	}
	return false
}

// updateHint says how to rewrite golden files in the running test binary: -update works
// only where the test package defines that flag (testkit defines none); TAPEBOX_UPDATE=1
// always does.
func updateHint(lookup func(string) *flag.Flag) string {
	if lookup("update") != nil {
		return "go test -update (or TAPEBOX_UPDATE=1 go test)"
	}
	return "TAPEBOX_UPDATE=1 go test (this test package defines no -update flag)"
}

// CheckSnapshot checks the sandbox's end state against a golden file (by convention under
// testdata/): every file, directory and symbolic link of the working directory with its
// mode, contents and link target; nothing missing, nothing more. Paths matching
// DefaultSnapshotExclude (.git) and the patterns of Exclude options are left out. When
// Updating, it writes the golden file instead (creating its directory) and returns nil.
func CheckSnapshot(r *Result, goldenPath string, opts ...SnapshotOption) error {
	var o snapshotOptions
	for _, opt := range opts {
		opt(&o)
	}
	exclude := o.exclude
	if !o.noDefault {
		exclude = append(slices.Clone(DefaultSnapshotExclude), exclude...)
	}
	hint := updateHint(flag.Lookup)
	p, files, ok := sandboxFiles(r, "CheckSnapshot")
	if !ok {
		return p.err()
	}
	got := golden{Version: snapshotVersion, Files: map[string]goldenEntry{}}
	for name, f := range files {
		if excluded(exclude, name) {
			continue
		}
		got.Files[name] = entryOf(f)
	}
	if Updating() {
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", "  ")
		if err := enc.Encode(got); err != nil {
			p.addf("encode the snapshot: %v", err)
			return p.err()
		}
		if err := os.MkdirAll(filepath.Dir(goldenPath), 0o755); err != nil {
			p.addf("%v", err)
			return p.err()
		}
		if err := os.WriteFile(goldenPath, buf.Bytes(), 0o644); err != nil {
			p.addf("%v", err)
		}
		return p.err()
	}
	data, err := os.ReadFile(goldenPath)
	if errors.Is(err, fs.ErrNotExist) {
		p.addf("golden file %s does not exist; create it with %s", goldenPath, hint)
		return p.err()
	}
	if err != nil {
		p.addf("%v", err)
		return p.err()
	}
	var want golden
	if err := json.Unmarshal(data, &want); err != nil {
		p.addf("golden file %s: %v; regenerate it with %s", goldenPath, err, hint)
		return p.err()
	}
	if want.Version != snapshotVersion {
		p.addf("golden file %s: format version %d, want %d; regenerate it with %s", goldenPath, want.Version, snapshotVersion, hint)
		return p.err()
	}
	for name := range want.Files {
		if excluded(exclude, name) {
			delete(want.Files, name) // a golden file written before the pattern was given
		}
	}
	names := slices.Sorted(maps.Keys(want.Files))
	for name := range got.Files {
		if _, ok := want.Files[name]; !ok {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	for _, name := range names {
		w, inGolden := want.Files[name]
		g, inSandbox := got.Files[name]
		switch {
		case !inSandbox:
			p.addf("%s: missing (golden: %s)", name, w.Mode)
		case !inGolden:
			p.addf("%s: unexpected %s", name, g.Mode)
		default:
			if g.Mode != w.Mode {
				p.addf("%s: mode %s, want %s", name, g.Mode, w.Mode)
			}
			if g.Target != w.Target {
				p.addf("%s: links to %q, want %q", name, g.Target, w.Target)
			}
			if gd, wd := g.data(), w.data(); gd != wd {
				p.addf("%s: %s", name, contentDiff(gd, wd))
			}
		}
	}
	if len(p.list) > 0 {
		p.addf("(golden file %s; if the new state is right, regenerate it with %s)", goldenPath, hint)
	}
	return p.err()
}

// contentDiff describes how got differs from want: both in full when short, else the first
// line that differs.
func contentDiff(got, want string) string {
	if len(got) <= 120 && len(want) <= 120 {
		return fmt.Sprintf("content %q, want %q", got, want)
	}
	gl, wl := strings.SplitAfter(got, "\n"), strings.SplitAfter(want, "\n")
	for i := 0; i < max(len(gl), len(wl)); i++ {
		var g, w string
		if i < len(gl) {
			g = gl[i]
		}
		if i < len(wl) {
			w = wl[i]
		}
		if g != w {
			return fmt.Sprintf("content differs (%d bytes, want %d) from line %d: %q, want %q", len(got), len(want), i+1, clip(g, 120), clip(w, 120))
		}
	}
	return fmt.Sprintf("content differs (%d bytes, want %d)", len(got), len(want))
}

func kind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "directory"
	case m.Type() == fs.ModeSymlink:
		return "symbolic link"
	case m.IsRegular():
		return "regular file"
	}
	return "special file (" + m.String() + ")"
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
