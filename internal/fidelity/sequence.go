package fidelity

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/tapebox/tapebox/tape"
)

// File is one entry of a sequence's starting workspace.
type File struct {
	// Path is relative to the working directory, slash-separated.
	Path string `json:"path"`
	// Data is the file's content (base64 in JSON, so any bytes survive).
	Data []byte `json:"data,omitempty"`
	// Mode is the permission bits; 0 means 0644 (0755 for a directory).
	Mode fs.FileMode `json:"mode,omitempty"`
	// Dir makes a directory instead of a file.
	Dir bool `json:"dir,omitempty"`
	// Link makes a symbolic link to Link instead of a file.
	Link string `json:"link,omitempty"`
}

// Call is one model turn of a sequence: one tool call.
type Call struct {
	// Tool is the tool's name.
	Tool string `json:"tool"`
	// Input is the call's JSON input.
	Input json.RawMessage `json:"input"`
	// Class names the input class the call exercises, for the scoreboard.
	Class string `json:"class"`
	// Kind is the tool call's kind on the wire: "" or "function" for a JSON-input tool,
	// "custom" for a freeform one (Codex's apply_patch), whose Input is {"input": text}
	// as the tape stores it.
	Kind string `json:"kind,omitempty"`
}

// ToolCall returns c as the fake provider's tool call.
func (c Call) ToolCall() tape.ToolCall {
	kind := c.Kind
	if kind == "" {
		kind = "function"
	}
	return tape.ToolCall{Name: c.Tool, Input: c.Input, Kind: kind}
}

// NewCall returns a Call of tool with input encoded as JSON (without HTML escaping, as a
// model writes it). It panics when input cannot be encoded.
func NewCall(class, tool string, input any) Call {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(input); err != nil {
		panic(fmt.Sprintf("fidelity.NewCall(%q): %v", tool, err))
	}
	return Call{Tool: tool, Input: json.RawMessage(strings.TrimSuffix(b.String(), "\n")), Class: class}
}

// Grammar draws sequences of tool calls for one harness: its extension point.
type Grammar struct {
	// Harness is the harness's name, as in meta.harness.
	Harness string
	// Generate draws the starting files and the calls from r. cwd is the absolute working
	// directory the harness will run in. It must depend on r and cwd alone.
	Generate func(r *rand.Rand, cwd string) ([]File, []Call)
	// Simplify returns simpler variants of a call (shorter content, a plainer name), tried
	// in order by Shrink. Nil means calls are only dropped, never simplified.
	Simplify func(c Call) []Call
	// Classes are the known divergence classes, matched in order (see Classify).
	Classes []Class
}

// Sequence is one generated run: the starting workspace and the model's tool calls.
type Sequence struct {
	Harness string `json:"harness"`
	// Version, in a saved regression case, is the harness version it runs against; empty
	// means every version the generator runs.
	Version string `json:"version,omitempty"`
	// Seed is what Generate drew the sequence from (0 for a sequence edited by hand or by
	// Shrink: see Origin).
	Seed uint64 `json:"seed"`
	// Origin is the seed a shrunk sequence came from.
	Origin uint64 `json:"origin,omitempty"`
	// Cwd is the absolute directory the harness runs in and the replay plays in.
	Cwd   string `json:"cwd"`
	Files []File `json:"files"`
	Calls []Call `json:"calls"`
	// Known, in a saved regression case, names the divergence class the case is known to
	// show (a difference that is not the executor's to fix); empty means it must replay
	// identical.
	Known string `json:"known,omitempty"`
	// Note says what the case shows, for a reader of testdata.
	Note string `json:"note,omitempty"`
}

// NewSequence draws the sequence of seed from g, for a harness running in cwd.
func NewSequence(g Grammar, seed uint64, cwd string) *Sequence {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	files, calls := g.Generate(r, cwd)
	if files == nil {
		files = []File{}
	}
	return &Sequence{Harness: g.Harness, Seed: seed, Cwd: cwd, Files: files, Calls: calls}
}

// Name is how reports name the sequence: its seed, or the seed it was shrunk from.
func (s *Sequence) Name() string {
	if s.Origin != 0 {
		return fmt.Sprintf("%s seed %d (shrunk)", s.Harness, s.Origin)
	}
	return fmt.Sprintf("%s seed %d", s.Harness, s.Seed)
}

// clone returns a deep enough copy of s for Shrink to edit.
func (s *Sequence) clone() *Sequence {
	c := *s
	c.Files = append([]File{}, s.Files...)
	c.Calls = append([]Call{}, s.Calls...)
	return &c
}

// Layout empties dir (creating it) and writes the sequence's files into it.
func (s *Sequence) Layout(dir string) error {
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("fidelity: empty %s: %w", dir, err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("fidelity: make %s: %w", dir, err)
	}
	var chmods []File
	for _, f := range s.Files {
		if !fs.ValidPath(f.Path) || f.Path == "." {
			return fmt.Errorf("fidelity: layout %s: bad path %q", s.Name(), f.Path)
		}
		p := filepath.Join(dir, filepath.FromSlash(f.Path))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return fmt.Errorf("fidelity: layout %s: %w", f.Path, err)
		}
		var err error
		switch {
		case f.Link != "":
			err = os.Symlink(f.Link, p)
		case f.Dir:
			err = os.MkdirAll(p, 0o755)
		default:
			err = os.WriteFile(p, f.Data, 0o644)
		}
		if err != nil {
			return fmt.Errorf("fidelity: layout %s: %w", f.Path, err)
		}
		if f.Mode != 0 && f.Link == "" {
			chmods = append(chmods, f)
		}
	}
	// Modes last, deepest first, so that a read-only directory does not stop its own
	// files being written.
	for i := len(chmods) - 1; i >= 0; i-- {
		f := chmods[i]
		if err := os.Chmod(filepath.Join(dir, filepath.FromSlash(f.Path)), f.Mode.Perm()); err != nil {
			return fmt.Errorf("fidelity: layout %s: %w", f.Path, err)
		}
	}
	return nil
}

// Save writes s as indented JSON to file, creating its directory.
func (s *Sequence) Save(file string) error {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return fmt.Errorf("fidelity: save %s: %w", file, err)
	}
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		return fmt.Errorf("fidelity: save %s: %w", file, err)
	}
	if err := os.WriteFile(file, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("fidelity: save %s: %w", file, err)
	}
	return nil
}

// Load reads a sequence saved with Save and checks it: a harness, an absolute cwd,
// relative file paths, calls with a tool and a JSON input.
func Load(file string) (*Sequence, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("fidelity: load %s: %w", file, err)
	}
	var s Sequence
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("fidelity: load %s: %w", file, err)
	}
	var errs []error
	if s.Harness == "" {
		errs = append(errs, errors.New("/harness is empty"))
	}
	if !path.IsAbs(s.Cwd) {
		errs = append(errs, fmt.Errorf("/cwd %q is not an absolute path", s.Cwd))
	}
	for i, f := range s.Files {
		if !fs.ValidPath(f.Path) || f.Path == "." {
			errs = append(errs, fmt.Errorf("/files/%d/path %q is not a relative slash path", i, f.Path))
		}
	}
	for i, c := range s.Calls {
		if c.Tool == "" {
			errs = append(errs, fmt.Errorf("/calls/%d/tool is empty", i))
		}
		if !json.Valid(c.Input) {
			errs = append(errs, fmt.Errorf("/calls/%d/input is not JSON", i))
		}
		if c.Kind != "" && c.Kind != "function" && c.Kind != "custom" {
			errs = append(errs, fmt.Errorf("/calls/%d/kind %q is neither function nor custom", i, c.Kind))
		}
		for _, ref := range Refs(c.Input) {
			if ref.Step >= i {
				errs = append(errs, fmt.Errorf("/calls/%d/input refers to step %d, which is not an earlier call", i, ref.Step))
			}
		}
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("fidelity: load %s: %w", file, errors.Join(errs...))
	}
	return &s, nil
}
