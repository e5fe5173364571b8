package action

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// WalkOptions are the file-selection rules of ripgrep that the harnesses' Glob and Grep
// tools rely on.
type WalkOptions struct {
	// Hidden includes files and directories whose names start with "." (rg --hidden).
	Hidden bool
	// NoIgnore disregards .gitignore, .ignore and .rgignore files (rg --no-ignore).
	// Without it, .gitignore rules (and .git/info/exclude) apply inside a git repository
	// only, .ignore and .rgignore everywhere, as ripgrep does.
	NoIgnore bool
	// Globs are rg --glob filters, relative to the root, or to GlobBase when it is set.
	Globs []string
	// GlobBase, when set, is the directory Globs are relative to instead of the root: rg
	// matches its --glob filters against a file's path relative to its own working
	// directory, which is not the searched directory when a harness passes that one as an
	// argument (Claude Code 2.0's Glob and Grep: found by internal/fidelity, seed 21129).
	// A file outside GlobBase is matched by its absolute path, as rg does.
	GlobBase string
	// GlobFold matches Globs case-insensitively (rg --iglob).
	GlobFold bool
	// SkipDirs are directory names never entered (such as ".git").
	SkipDirs []string
	// SkipPaths are absolute paths never entered (the executor's own state directory).
	SkipPaths []string
}

// FileEntry is a file a walk selected.
type FileEntry struct {
	// Path is absolute; Rel is relative to the walk root, "/"-separated.
	Path    string
	Rel     string
	ModTime time.Time
	Size    int64
}

type walker struct {
	opt       WalkOptions
	over      *overrides
	skip      map[string]bool
	skipPaths map[string]bool
	inGit     bool
	ancestors []*ignoreFile
}

// Walk calls fn for every file under root that opt selects, in lexical order. A root that
// is a file is selected whatever the rules say.
func Walk(ctx context.Context, root string, opt WalkOptions, fn func(FileEntry) error) error {
	st, err := os.Stat(root)
	if err != nil {
		return err
	}
	if !st.IsDir() {
		return fn(FileEntry{Path: root, Rel: filepath.Base(root), ModTime: st.ModTime(), Size: st.Size()})
	}
	w := &walker{opt: opt, skip: map[string]bool{}, skipPaths: map[string]bool{}}
	for _, d := range opt.SkipDirs {
		w.skip[d] = true
	}
	for _, p := range opt.SkipPaths {
		w.skipPaths[filepath.Clean(p)] = true
	}
	w.over, err = compileOverrides(opt.Globs, opt.GlobFold)
	if err != nil {
		return err
	}
	if !opt.NoIgnore {
		if gr := gitRoot(root); gr != "" {
			w.inGit = true
			w.loadAncestors(root, gr)
		}
	}
	return w.dir(ctx, root, "", nil, fn)
}

func (w *walker) loadAncestors(root, gr string) {
	rel, err := filepath.Rel(gr, root)
	if err != nil || rel == "." {
		if ps := loadIgnoreFile(filepath.Join(gr, ".git", "info", "exclude")); ps != nil {
			w.ancestors = append(w.ancestors, &ignoreFile{patterns: ps})
		}
		return
	}
	// Nearest first.
	for d := filepath.Dir(root); ; d = filepath.Dir(d) {
		out, _ := filepath.Rel(d, root)
		out = filepath.ToSlash(out)
		for _, name := range []string{".rgignore", ".ignore", ".gitignore"} {
			if ps := loadIgnoreFile(filepath.Join(d, name)); ps != nil {
				w.ancestors = append(w.ancestors, &ignoreFile{outside: out, patterns: ps})
			}
		}
		if d == gr || filepath.Dir(d) == d {
			break
		}
	}
	if ps := loadIgnoreFile(filepath.Join(gr, ".git", "info", "exclude")); ps != nil {
		out, _ := filepath.Rel(gr, root)
		w.ancestors = append(w.ancestors, &ignoreFile{outside: filepath.ToSlash(out), patterns: ps})
	}
}

// ignored applies the ignore files, deepest first.
func (w *walker) ignored(stack []*ignoreFile, rel string, isDir bool) bool {
	for i := len(stack) - 1; i >= 0; i-- {
		switch stack[i].match(rel, isDir) {
		case 1:
			return true
		case -1:
			return false
		}
	}
	for _, f := range w.ancestors {
		switch f.match(rel, isDir) {
		case 1:
			return true
		case -1:
			return false
		}
	}
	return false
}

// globPath is the path of a file or directory that Globs match: rel (relative to the
// walk's root), or abs relative to GlobBase when that is set.
func (w *walker) globPath(rel, abs string) string {
	if w.opt.GlobBase == "" {
		return rel
	}
	r, err := filepath.Rel(w.opt.GlobBase, abs)
	if err != nil || r == ".." || strings.HasPrefix(r, "../") {
		return filepath.ToSlash(abs)
	}
	return filepath.ToSlash(r)
}

func (w *walker) dir(ctx context.Context, abs, rel string, stack []*ignoreFile, fn func(FileEntry) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	entries, err := os.ReadDir(abs)
	if err != nil {
		return nil // unreadable directories are skipped, as rg does (with a warning)
	}
	if !w.opt.NoIgnore {
		names := []string{".gitignore", ".ignore", ".rgignore"} // lowest precedence first
		if !w.inGit {
			names = names[1:]
		}
		for _, n := range names {
			if ps := loadIgnoreFile(filepath.Join(abs, n)); ps != nil {
				stack = append(stack[:len(stack):len(stack)], &ignoreFile{base: rel, patterns: ps})
			}
		}
	}
	for _, e := range entries {
		name := e.Name()
		childRel := name
		if rel != "" {
			childRel = rel + "/" + name
		}
		childAbs := filepath.Join(abs, name)
		isDir := e.IsDir()
		if e.Type()&fs.ModeSymlink != 0 {
			continue // rg does not follow links by default
		}
		if isDir && (w.skip[name] || w.skipPaths[childAbs]) {
			continue
		}
		// A glob that matches an entry decides alone, as in ripgrep's ignore crate: a
		// hidden file a glob names is listed ("**/.*") without --hidden.
		d := w.over.decide(w.globPath(childRel, childAbs), isDir)
		if d < 0 || (d == 0 && ((!w.opt.Hidden && strings.HasPrefix(name, ".")) || w.ignored(stack, childRel, isDir))) {
			continue
		}
		if isDir {
			if err := w.dir(ctx, childAbs, childRel, stack, fn); err != nil {
				return err
			}
			continue
		}
		if !e.Type().IsRegular() {
			continue
		}
		info, err := e.Info()
		if err != nil {
			continue
		}
		if err := fn(FileEntry{Path: childAbs, Rel: childRel, ModTime: info.ModTime(), Size: info.Size()}); err != nil {
			return err
		}
	}
	return nil
}
